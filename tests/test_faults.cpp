// The fault suite (issue: nothing lost, nothing wrong marked ok): runs killed
// or interrupted at random moments in every phase leave a file h5py opens in
// which every trajectory is either finished (bitwise equal to an
// uninterrupted run) or not_run, and `run --resume` then gives a file
// identical in every dataset to the uninterrupted run; a full disk (a small
// tmpfs where one can be mounted, and a file-size limit, which works
// everywhere) ends the run with a clear error, exit 2, no crash, the previous
// result intact and the finished slices resumable.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <hdf5.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "host/io/h5.hpp"
#include "host/io/in_place_file.hpp"
#include "host/io/pieces.hpp"
#include "tests/chunk_damage.hpp"
#include "tests/coin_config.hpp"
#include "tests/nholo_cli.hpp"

namespace fs = std::filesystem;

namespace {

using nholo_test::spawn;
using nholo_test::wait_for;

using nholo_test::fault_check;
using nholo_test::read_text;
using nholo_test::Result;
using nholo_test::write_file;

// Three slices of 1024 (the memory budget), three windows each, two
// formulations (the comparison datasets too), every field of the coin.
const std::string kConfig = [] {
  nholo_test::CoinConfig c = nholo_test::spinning_coins();
  c.formulations = {"udwadia_kalaba", "lagrange_multiplier"};
  c.params = {{"slope", 0.3}};
  c.t_end = 2.0;
  c.save_every = 0.25;
  c.use_integrator("dopri5", 1e-9, 1e-9);
  c.size = 2600;
  c.seed = 11;
  c.qd0[1].second = nholo_test::uniform(0.5, 1.5);  // phi_dot
  c.memory_budget_mb = 1;
  c.window = 4;
  return c.text();
}();

struct Reference {
  fs::path dir, file;
  double seconds = 0;
};

// One uninterrupted run: the reference every trial is compared with.
const Reference& reference() {
  static Reference ref = [] {
    Reference r;
    r.dir = nholo_test::temp_dir("nholo_faults", "reference");
    write_file(r.dir / "c.toml", kConfig);
    const auto t0 = std::chrono::steady_clock::now();
    const Result res = nholo_test::run_nholo("run -q c.toml --threads 1", r.dir);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(res.code, 0) << res.output;
    r.file = r.dir / "out.h5";
    return r;
  }();
  return ref;
}

// dir/out.h5 holds the reference's results, bit for bit (fault_check.py same)
void expect_the_reference_in(const fs::path& dir) {
  const Result same = fault_check("same", reference().file, dir / "out.h5");
  EXPECT_EQ(same.code, 0) << same.output;
}

// `run --resume` in dir completes kConfig's run: the reference's bytes, and
// nothing left beside out.h5.
void expect_resume_gives_the_reference(const fs::path& dir, const Reference& ref) {
  const Result r = nholo_test::run_nholo("run -q c.toml --threads 1 --resume", dir);
  EXPECT_EQ(r.code, 0) << r.output;
  const Result same = fault_check("same", ref.file, dir / "out.h5");
  EXPECT_EQ(same.code, 0) << same.output;
  EXPECT_FALSE(fs::exists(dir / "out.h5.partial"));
  EXPECT_FALSE(fs::exists(dir / "out.h5.partial.d"));
}

}  // namespace

// 52 trials (16 in the sanitizer build): SIGKILL, SIGTERM, SIGHUP and SIGINT, each at a random
// moment in [0, 1.15 x the uninterrupted run's time] (setup, the slices, the
// assembly of the result, after the end), then --resume.
TEST(Faults, SignalsAtRandomMomentsLeaveValidResumableFiles) {
  const Reference& ref = reference();
  ASSERT_TRUE(fs::exists(ref.file));
  std::printf("reference run: %.2f s\n", ref.seconds);
  const int sigs[] = {SIGKILL, SIGTERM, SIGHUP, SIGINT};
  const char* names[] = {"SIGKILL", "SIGTERM", "SIGHUP", "SIGINT"};
  std::mt19937_64 rng(20261124);
  std::uniform_real_distribution<double> when(0.0, 1.15 * ref.seconds);
  std::map<std::string, int> outcome;  // "SIGKILL: partial" -> count
  int trials = 0;
#if defined(__SANITIZE_ADDRESS__)
  // the ASan/UBSan build (CI stage 2) runs nholo several times slower: 16
  // trials there (4 per signal) check the signal paths for memory errors; the
  // product build runs all 52
  const int kTrials = 16;
  std::printf("sanitizer build: %d trials, not 52\n", kTrials);
#else
  const int kTrials = 52;
#endif
  for (int trial = 0; trial < kTrials; ++trial) {
    const int k = trial % 4;
    const double at = when(rng);
    SCOPED_TRACE(std::string(names[k]) + " after " + std::to_string(at) + " s (trial " +
                 std::to_string(trial) + ")");
    const fs::path dir = nholo_test::temp_dir("nholo_faults", "trial");
    write_file(dir / "c.toml", kConfig);
    const pid_t pid = spawn(dir, {"run", "c.toml", "--threads", "1"}, [] {});
    std::this_thread::sleep_for(std::chrono::duration<double>(at));
    kill(pid, sigs[k]);
    bool signaled = false;
    int sig = 0;
    const int code = wait_for(pid, &signaled, &sig);
    const std::string log = read_text(dir / "run.log");
    // how it ended: killed, stopped cleanly (128 + signal), or finished first
    const bool before_main = sigs[k] != SIGKILL && signaled && sig == sigs[k] &&
                             !fs::exists(dir / "out.h5.partial") && !fs::exists(dir / "out.h5");
    if (sigs[k] == SIGKILL || before_main) {
      // SIGKILL, or a signal before nholo's main installed its handler (the
      // first milliseconds of the process: the default action, nothing written)
      EXPECT_TRUE((signaled && sig == sigs[k]) || code == 0) << log;
    } else {
      EXPECT_FALSE(signaled) << "crashed with signal " << sig << "\n" << log;
      EXPECT_TRUE(code == 128 + sigs[k] || code == 0) << "exit " << code << "\n" << log;
    }
    std::string what;
    if (fs::exists(dir / "out.h5")) {
      what = "finished first";
      const Result c = fault_check("same", ref.file, dir / "out.h5");
      EXPECT_EQ(c.code, 0) << c.output;
    } else if (fs::exists(dir / "out.h5.partial")) {
      const Result c = fault_check("partial", ref.file, dir / "out.h5.partial");
      EXPECT_EQ(c.code, 0) << c.output;
      what = c.output.find("finished 0 ") != std::string::npos ? ".partial, nothing finished"
                                                               : ".partial, slices finished";
      // stats reads it (the statistics merged by the run, or by stats itself)
      const Result st = nholo_test::run_nholo("stats out.h5.partial", dir);
      EXPECT_EQ(st.code, 0) << st.output;
      EXPECT_NE(st.output.find("INCOMPLETE"), std::string::npos) << st.output;
    } else if (fs::exists(dir / "out.h5.partial.d" / "master.h5")) {
      // killed in the last step: no .partial to read (its fields would not
      // be readable through the half-rewritten result file); readers say so
      what = "killed in the last step";
      EXPECT_EQ(sigs[k], SIGKILL) << "a clean stop leaves the .partial\n" << log;
      const Result st = nholo_test::run_nholo("stats out.h5.partial", dir);
      EXPECT_EQ(st.code, 2) << st.output;
      EXPECT_NE(st.output.find("--resume` completes it"), std::string::npos) << st.output;
    } else if (before_main) {
      what = "stopped before main (default action)";
    } else if (log.find("interrupted while setting up") != std::string::npos) {
      what = "stopped in the set-up (nothing written)";
      EXPECT_EQ(code, 128 + sigs[k]) << log;
    } else {
      what = "killed before the output existed";
      EXPECT_EQ(sigs[k], SIGKILL) << "a clean stop always leaves a file\n" << log;
    }
    ++outcome[std::string(names[k]) + ": " + what];
    // --resume gives the uninterrupted run's file, whatever the state
    expect_resume_gives_the_reference(dir, ref);
    ++trials;
    if (::testing::Test::HasFailure()) break;  // one failing trial says enough
  }
  std::printf("%d trials, each followed by --resume (identical to the uninterrupted run):\n",
              trials);
  for (const auto& [k, v] : outcome) std::printf("  %-48s %d\n", k.c_str(), v);
  EXPECT_EQ(trials, kTrials);
}

// A run killed in its last step, while HDF5 completes the result file in
// place (io/in_place_file.hpp), leaves no .partial whose fields would read
// through a half-rewritten file: readers say what happened, the next run
// restores the file and the master, --resume completes it bit for bit.
TEST(Faults, ARunKilledInItsLastStepIsRestoredAndResumed) {
  const Reference& ref = reference();
  ASSERT_TRUE(fs::exists(ref.file));
  const fs::path dir = nholo_test::temp_dir("nholo_faults", "last_step");
  write_file(dir / "c.toml", kConfig);
  const pid_t pid = spawn(dir, {"run", "c.toml", "--threads", "1"},
                          [] { setenv("NHOLO_FAILPOINT_KILL_IN_LAST_STEP", "1", 1); });
  bool signaled = false;
  int sig = 0;
  wait_for(pid, &signaled, &sig);
  ASSERT_TRUE(signaled && sig == SIGKILL) << read_text(dir / "run.log");
  EXPECT_FALSE(fs::exists(dir / "out.h5"));
  EXPECT_FALSE(fs::exists(dir / "out.h5.partial"));
  EXPECT_TRUE(fs::exists(dir / "out.h5.partial.d" / "result.h5.undo"));
  for (const char* name : {"out.h5", "out.h5.partial"}) {
    const Result st = nholo_test::run_nholo(std::string("stats ") + name, dir);
    EXPECT_EQ(st.code, 2) << st.output;
    EXPECT_NE(st.output.find("is in its last step, or was stopped there"), std::string::npos)
        << st.output;
  }
  // a run without --resume restores the master and refuses to overwrite it
  const Result again = nholo_test::run_nholo("run c.toml --threads 1", dir);
  EXPECT_EQ(again.code, 2) << again.output;
  EXPECT_NE(again.output.find("was stopped in its last step"), std::string::npos) << again.output;
  EXPECT_NE(again.output.find("Pass --resume"), std::string::npos) << again.output;
  const Result partial = fault_check("partial", ref.file, dir / "out.h5.partial");
  EXPECT_EQ(partial.code, 0) << partial.output;
  EXPECT_NE(partial.output.find("finished 2600 not_run 0"), std::string::npos) << partial.output;
  expect_resume_gives_the_reference(dir, ref);
}

namespace {

// kConfig's run (with `extra` arguments) started in dir, once its log says a
// slice finished (or after a minute): the process, still running.
pid_t start_until_a_slice_finished(const fs::path& dir, std::vector<std::string> extra = {}) {
  write_file(dir / "c.toml", kConfig);
  std::vector<std::string> args = {"run", "c.toml", "--threads", "1"};
  args.insert(args.end(), extra.begin(), extra.end());
  const pid_t pid = spawn(dir, args, [] {});
  for (int i = 0; i < 6000 && read_text(dir / "run.log").find(") finished") == std::string::npos;
       ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return pid;
}

}  // namespace

// --resume checks that it continues the same configuration.
TEST(Faults, ResumeRefusesAnotherConfiguration) {
  const fs::path dir = nholo_test::temp_dir("nholo_faults", "resume_config");
  const pid_t pid = start_until_a_slice_finished(dir);
  // readers open the .partial while the run goes on
  const Result live = nholo_test::run_nholo("stats out.h5.partial", dir);
  EXPECT_EQ(live.code, 0) << live.output;
  EXPECT_NE(live.output.find("INCOMPLETE"), std::string::npos) << live.output;
  // the drift prediction's formula is in the master from the start
  EXPECT_NE(live.output.find("eqs. 31-40)): "), std::string::npos) << live.output;
  kill(pid, SIGKILL);
  wait_for(pid);
  ASSERT_TRUE(fs::exists(dir / "out.h5.partial"));
  const Result other = nholo_test::run_nholo("run -q c.toml --resume --set params.slope=0.2", dir);
  EXPECT_EQ(other.code, 2) << other.output;
  EXPECT_NE(other.output.find("another configuration"), std::string::npos) << other.output;
  // --resume --overwrite may replace PATH, never another configuration's .partial
  const Result both =
      nholo_test::run_nholo("run -q c.toml --resume --overwrite --set params.slope=0.2", dir);
  EXPECT_EQ(both.code, 2) << both.output;
  EXPECT_NE(both.output.find("another configuration"), std::string::npos) << both.output;
  EXPECT_NE(both.output.find("--overwrite (without --resume)"), std::string::npos) << both.output;
  // a plain run names the leftover and offers --resume
  const Result plain = nholo_test::run_nholo("run -q c.toml", dir);
  EXPECT_EQ(plain.code, 2) << plain.output;
  EXPECT_NE(plain.output.find("--resume"), std::string::npos) << plain.output;
  // the backend and the thread count may change
  const Result ok = nholo_test::run_nholo("run -q c.toml --resume --threads 2 --backend omp", dir);
  EXPECT_EQ(ok.code, 0) << ok.output;
  expect_the_reference_in(dir);
  // resuming a finished result does nothing and says so
  const Result again = nholo_test::run_nholo("run c.toml --resume", dir);
  EXPECT_EQ(again.code, 0) << again.output;
  EXPECT_NE(again.output.find("nothing to resume"), std::string::npos) << again.output;
}

// A run with --overwrite over another configuration's result, stopped:
// --resume alone neither replaces that result nor loses the stopped run
// (it names --resume --overwrite), a --resume of the other configuration
// keeps the stopped run's .partial, and --resume --overwrite finishes it
// into PATH, the uninterrupted run's bits; likewise when it is killed in its
// last step.
TEST(Faults, AStoppedOverwriteRunIsKeptAndResumedWithResumeOverwrite) {
  const fs::path dir = nholo_test::temp_dir("nholo_faults", "resume_overwrite");
  write_file(dir / "c.toml", kConfig);
  const std::string other = " --set params.slope=0.2";
  for (int killed_in_last_step = 0; killed_in_last_step < 2; ++killed_in_last_step) {
    SCOPED_TRACE(killed_in_last_step ? "killed in its last step" : "killed after a slice");
    const Result first = nholo_test::run_nholo("run -q c.toml --overwrite" + other, dir);
    ASSERT_EQ(first.code, 0) << first.output;
    const std::string other_bytes = read_text(dir / "out.h5");
    pid_t pid = 0;
    if (killed_in_last_step) {
      pid = spawn(dir, {"run", "c.toml", "--threads", "1", "--overwrite"},
                  [] { setenv("NHOLO_FAILPOINT_KILL_IN_LAST_STEP", "1", 1); });
    } else {
      pid = start_until_a_slice_finished(dir, {"--overwrite"});
      kill(pid, SIGKILL);
    }
    wait_for(pid);
    EXPECT_EQ(read_text(dir / "out.h5"), other_bytes);  // the other result, untouched
    const Result alone = nholo_test::run_nholo("run -q c.toml --resume", dir);
    EXPECT_EQ(alone.code, 2) << alone.output;
    EXPECT_NE(alone.output.find("is this configuration's unfinished run"), std::string::npos)
        << alone.output;
    EXPECT_NE(alone.output.find("--resume --overwrite continues it"), std::string::npos)
        << alone.output;
    ASSERT_TRUE(fs::exists(dir / "out.h5.partial"));
    const Result theirs = nholo_test::run_nholo("run c.toml --resume" + other, dir);
    EXPECT_EQ(theirs.code, 0) << theirs.output;
    EXPECT_NE(theirs.output.find("nothing to resume"), std::string::npos) << theirs.output;
    EXPECT_NE(theirs.output.find("the unfinished run of another configuration and is kept"),
              std::string::npos)
        << theirs.output;
    ASSERT_TRUE(fs::exists(dir / "out.h5.partial"));
    EXPECT_EQ(read_text(dir / "out.h5"), other_bytes);
    const Result r = nholo_test::run_nholo("run -q c.toml --threads 2 --resume --overwrite", dir);
    EXPECT_EQ(r.code, 0) << r.output;
    expect_the_reference_in(dir);
    EXPECT_FALSE(fs::exists(dir / "out.h5.partial"));
    EXPECT_FALSE(fs::exists(dir / "out.h5.partial.d"));
  }
}

// The last step of a run whose fields are written in place changes the
// result file's metadata (host/io/in_place_file.hpp): a run stopped there
// leaves the undo file, and --resume puts the file back and finishes it.
TEST(Faults, AStopInTheLastStepIsUndoneByResume) {
  const fs::path dir = nholo_test::temp_dir("nholo_faults", "last_step");
  const pid_t pid = start_until_a_slice_finished(dir);
  kill(pid, SIGKILL);
  wait_for(pid);
  const nholo::InPlaceFile file(nholo::PieceDir((dir / "out.h5").string()));
  ASSERT_TRUE(fs::exists(file.path())) << read_text(dir / "run.log");
  std::vector<std::string> fields;
  {
    const nholo::h5::File f = nholo::h5::File::open_ro(file.path());
    for (const char* form : {"udwadia_kalaba", "lagrange_multiplier"})
      for (const char* field : {"q", "qdot"})
        if (f.root().exists(std::string(form) + "/" + field))
          fields.push_back(std::string(form) + "/" + field);
  }
  ASSERT_FALSE(fields.empty());
  // the last step, stopped half-way: metadata changed, its start overwritten
  file.save_undo(fields);
  {
    nholo::h5::File f = nholo::h5::File::open_rw(file.path(), false);
    nholo::h5::Group r = f.root();
    r.set_attr("complete", int64_t(1));
    r.create_dataset<double>("statistics/udwadia_kalaba/mean", {10})
        .write(std::vector<double>(10, 0.0));
  }
  {
    std::fstream f(file.path(), std::ios::binary | std::ios::in | std::ios::out);
    f.write(std::string(64, '\xff').data(), 64);
  }
  const Result r = nholo_test::run_nholo("run -q c.toml --threads 1 --resume", dir);
  EXPECT_EQ(r.code, 0) << r.output;
  expect_the_reference_in(dir);
  EXPECT_FALSE(fs::exists(dir / "out.h5.partial.d"));
}

// Each window piece records the checksum of its blocks in result.h5; the
// writer must take it before it hands the window's host slot back to the
// integrating thread, which overwrites it with the next window at once
// (before, under load, a checksum was now and then taken of the next
// window's values, and --resume integrated an intact slice again). The
// failpoint fills a released slot with NaN, as that overwrite would: the
// two finished slices of a faulted run are kept by --resume, every block's
// checksum matching, and the result is the reference's.
TEST(Faults, ResumeKeepsIntactSlicesWhoseSlotsWereOverwrittenAtOnce) {
  const fs::path dir = nholo_test::temp_dir("nholo_faults", "poisoned_slots");
  write_file(dir / "c.toml", kConfig);
  const Result fault = nholo_test::run_nholo(
      "run -q c.toml --threads 1", dir,
      "NHOLO_FAILPOINT_DEVICE_FAULT=6 NHOLO_FAILPOINT_POISON_RELEASED_SLOTS=1");
  ASSERT_EQ(fault.code, 3) << fault.output;
  const nholo::PieceDir pieces((dir / "out.h5").string());
  ASSERT_TRUE(pieces.has(nholo::PieceDir::slice_name(1)));
  ASSERT_TRUE(fs::exists(pieces.path("result.h5")));  // fields in place (compression 0)
  const Result r = nholo_test::run_nholo("run -q c.toml --threads 1 --resume", dir);
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output.find("is integrated again"), std::string::npos) << r.output;
  expect_the_reference_in(dir);
}

// --resume reads back every piece of the slices it keeps (HDF5's Fletcher-32
// checksum on every piece dataset) and, fields in place, each window's block
// in the result file against the checksum its piece recorded: a changed
// bit, a piece of another slice or another configuration (each piece is
// stamped), a truncated or a missing piece makes that slice run again (said
// on stderr), and the result is the reference's, bit for bit. Before, such
// damage passed silently into the result, or made every --resume fail.
TEST(Faults, DamagedPiecesAndFieldBlocksAreFoundByResumeAndRunAgain) {
  for (const int compression : {0, 4}) {
    SCOPED_TRACE("output.compression = " + std::to_string(compression));
    const fs::path dir = nholo_test::temp_dir("nholo_faults", "damaged_" + std::to_string(compression));
    write_file(dir / "c.toml", kConfig);
    const std::string set = " --set output.compression=" + std::to_string(compression);
    // three slices of three windows, two formulations: window 6 of the first
    // formulation is the third slice's first (pipeline test of faults)
    const Result fault = nholo_test::run_nholo(
        "run -q c.toml --threads 1" + set, dir,
        "NHOLO_FAILPOINT_DEVICE_FAULT=6 NHOLO_FAILPOINT_POISON_RELEASED_SLOTS=1");
    ASSERT_EQ(fault.code, 3) << fault.output;
    const nholo::PieceDir pieces((dir / "out.h5").string());
    const nholo::PieceDir named("out.h5");  // as the messages name them
    ASSERT_TRUE(pieces.has(nholo::PieceDir::slice_name(0)));
    ASSERT_TRUE(pieces.has(nholo::PieceDir::slice_name(1)));
    ASSERT_FALSE(pieces.has(nholo::PieceDir::slice_name(2)));
    std::string expect0;
    if (compression == 0) {
      // slice 0: a bit of its second window's qdot in the result file
      nholo_test::flip_a_bit(pieces.path("result.h5"), "lagrange_multiplier/qdot", {0, 4, 0});
      expect0 = "its block of 'lagrange_multiplier/qdot' (window 1) in '" + named.path("result.h5") +
                "' has changed since it was written (checksum mismatch)";
    } else {
      // slice 0: a bit of its second window's piece (compressed q)
      nholo_test::flip_a_bit(pieces.path(nholo::PieceDir::window_name(0, 1)), "udwadia_kalaba/q",
                             {0, 0, 0});
      expect0 = "its piece '" + named.path(nholo::PieceDir::window_name(0, 1)) +
                "' is damaged ('udwadia_kalaba/q' cannot be read: data error detected by "
                "Fletcher32 checksum";
    }
    // slice 1: a window piece of slice 0 copied over its own, or one of a
    // run of another configuration (the same names, another slope)
    if (compression == 0) {
      fs::copy_file(pieces.path(nholo::PieceDir::window_name(0, 2)),
                    pieces.path(nholo::PieceDir::window_name(1, 2)),
                    fs::copy_options::overwrite_existing);
    } else {
      const fs::path other = dir / "other";
      fs::create_directories(other);
      write_file(other / "c.toml", kConfig);
      const Result o = nholo_test::run_nholo("run -q c.toml --threads 1 --set params.slope=0.2" + set,
                                             other, "NHOLO_FAILPOINT_DEVICE_FAULT=6");
      ASSERT_EQ(o.code, 3) << o.output;
      fs::copy_file(other / "out.h5.partial.d" / nholo::PieceDir::window_name(1, 0),
                    pieces.path(nholo::PieceDir::window_name(1, 0)),
                    fs::copy_options::overwrite_existing);
    }
    const Result r = nholo_test::run_nholo("run -q c.toml --threads 1 --resume" + set, dir);
    EXPECT_EQ(r.code, 0) << r.output;
    EXPECT_NE(r.output.find("nholo: resuming: slice 0 (trajectories [0, 1024)) is integrated again: " +
                            expect0),
              std::string::npos)
        << r.output;
    const std::string expect1 =
        compression == 0 ? "its piece '" + named.path(nholo::PieceDir::window_name(1, 2)) +
                               "' is foreign: it was written for slice 0, window 2, not for slice "
                               "1, window 2"
                         : "its piece '" + named.path(nholo::PieceDir::window_name(1, 0)) +
                               "' is foreign: a piece of another configuration (config hash ";
    EXPECT_NE(r.output.find("slice 1 (trajectories [1024, 2048)) is integrated again: " + expect1),
              std::string::npos)
        << r.output;
    expect_the_reference_in(dir);
    EXPECT_FALSE(fs::exists(dir / "out.h5.partial.d"));
  }
}

// The per-trajectory datasets that are not fields (initial states,
// statuses, steps, ...) are written in place too, each chunk with the
// Fletcher-32 HDF5 checks, each slice's block with its checksum in the
// piece that links to it: --resume finds a flipped bit in a slice's steps
// (HDF5 refuses the chunk) and a block of initial states rewritten with
// valid chunks but other values (the piece's checksum differs), integrates
// both slices again, and the result is the reference's, bit for bit.
TEST(Faults, DamagedPerTrajectoryBlocksInTheResultFileAreFoundByResume) {
  const fs::path dir = nholo_test::temp_dir("nholo_faults", "damaged_rows");
  write_file(dir / "c.toml", kConfig);
  const Result fault =
      nholo_test::run_nholo("run -q c.toml --threads 1", dir, "NHOLO_FAILPOINT_DEVICE_FAULT=6");
  ASSERT_EQ(fault.code, 3) << fault.output;
  const nholo::PieceDir pieces((dir / "out.h5").string());
  const nholo::PieceDir named("out.h5");  // as the messages name them
  ASSERT_TRUE(pieces.has(nholo::PieceDir::slice_name(0)));
  ASSERT_TRUE(pieces.has(nholo::PieceDir::slice_name(1)));
  // slice 0: a bit of its steps; slice 1: its initial states rewritten
  nholo_test::flip_a_bit(pieces.path("result.h5"), "udwadia_kalaba/steps", {0});
  {
    nholo::h5::File f = nholo::h5::File::open_rw(pieces.path("result.h5"), false);
    nholo::h5::Dataset q0 = f.root().open_dataset("initial/q0");
    std::vector<double> v = q0.read_block<double>({1024, 0}, {1024, 4});
    v[7] += 1.0;
    q0.write_block<double>({1024, 0}, {1024, 4}, v);
  }
  const Result r = nholo_test::run_nholo("run -q c.toml --threads 1 --resume", dir);
  EXPECT_EQ(r.code, 0) << r.output;
  const std::string block0 =
      "slice 0 (trajectories [0, 1024)) is integrated again: its block of "
      "'udwadia_kalaba/steps' (slice) in '" +
      named.path("result.h5") + "' cannot be read (";
  const std::string block1 =
      "slice 1 (trajectories [1024, 2048)) is integrated again: its block "
      "of 'initial/q0' (initial states) in '" +
      named.path("result.h5") + "' has changed since it was written (checksum mismatch)";
  EXPECT_NE(r.output.find(block0), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Fletcher32"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(block1), std::string::npos) << r.output;
  expect_the_reference_in(dir);
  EXPECT_FALSE(fs::exists(dir / "out.h5.partial.d"));
}

namespace {

// A run over an existing result (--overwrite) that cannot write all it needs:
// exit 2 with a message naming the write error, no crash, the previous result
// intact; then --resume with room to write gives the full result.
void full_disk_case(const fs::path& dir, const std::string& how, const std::string& expect,
                    rlim_t fsize_limit, const std::string& config = kConfig) {
  SCOPED_TRACE(how);
  write_file(dir / "c.toml", config);
  write_file(dir / "out.h5", "the previous result");
  const std::string before = read_text(dir / "out.h5");
  // HDF5 1.10 frees nothing of a file whose close failed (a write error): in
  // the sanitizer build, LeakSanitizer would report that memory, which is
  // the library's, at exit; it is suppressed for this child only
  const fs::path supp = dir / "lsan.supp";
  write_file(supp, "leak:libhdf5\n");
  const std::string lsan = "suppressions=" + supp.string();
  const pid_t pid =
      spawn(dir, {"run", "c.toml", "--threads", "1", "--overwrite"}, [fsize_limit, lsan] {
        setenv("LSAN_OPTIONS", lsan.c_str(), 1);
        if (fsize_limit > 0) {
          signal(SIGXFSZ, SIG_IGN);  // a write past the limit fails with EFBIG instead
          rlimit rl{fsize_limit, fsize_limit};
          setrlimit(RLIMIT_FSIZE, &rl);
        }
      });
  bool signaled = false;
  const int code = wait_for(pid, &signaled);
  const std::string log = read_text(dir / "run.log");
  std::printf(
      "%s: exit %d, %s\n", how.c_str(), code,
      log.substr(log.find("error:") == std::string::npos ? 0 : log.find("error:"), 300).c_str());
  EXPECT_FALSE(signaled) << log;
  EXPECT_EQ(code, 2) << log;
  EXPECT_NE(log.find(expect), std::string::npos) << log;
  EXPECT_EQ(read_text(dir / "out.h5"), before) << "the previous result was changed";
}

}  // namespace

TEST(Faults, AFullDiskIsAClearErrorAndLosesNothing) {
  // a file-size limit: a write past 2 MB fails (EFBIG), as on a full disk.
  // Uncompressed fields are written in place into a result file whose size
  // (about 6 MB here) is claimed at the start: the run stops before any
  // window, and leaves nothing
  const fs::path dir = nholo_test::temp_dir("nholo_faults", "fsize");
  full_disk_case(dir, "file-size limit 2 MB, fields in place", "File too large", 2 * 1000 * 1000);
  EXPECT_FALSE(fs::exists(dir / "out.h5.partial")) << read_text(dir / "run.log");
  EXPECT_FALSE(fs::exists(dir / "out.h5.partial.d")) << read_text(dir / "run.log");
  // compressed fields are written as pieces (each smaller than the limit) and
  // assembled at the end, which fails: every slice finished before is kept,
  // and resumable
  ASSERT_EQ(kConfig.rfind('['), kConfig.find("[output]")) << "[output] must be the last table";
  const std::string compressed = kConfig + "compression = 1\n";
  full_disk_case(dir, "file-size limit 2 MB, compressed", "File too large", 2 * 1000 * 1000,
                 compressed);
  EXPECT_NE(read_text(dir / "run.log").find("the 3 finished slices are kept"), std::string::npos)
      << read_text(dir / "run.log");
  ASSERT_TRUE(fs::exists(dir / "out.h5.partial"));
  fs::remove(dir / "out.h5");
  const Result r = nholo_test::run_nholo("run -q c.toml --threads 1 --resume", dir);
  EXPECT_EQ(r.code, 0) << r.output;
  expect_the_reference_in(dir);
  // a real full file system: a 6 MiB tmpfs (room for the first slice), where
  // this process may mount one
  const fs::path mnt = nholo_test::temp_dir("nholo_faults", "tmpfs");
  if (mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=6m") != 0) {
    std::printf(
        "tmpfs case not run: mounting a tmpfs is not permitted here (%s); the file-size "
        "limit above stands for it\n",
        std::strerror(errno));
    return;
  }
  full_disk_case(mnt, "6 MiB tmpfs", "No space left on device", 0);
  umount(mnt.c_str());
}
