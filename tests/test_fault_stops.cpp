// The fault suite's stops (issue: every phase answers a signal within a
// second): SIGTERM in the assembly, the windows' set-up, a large index, a
// copy merge (its copy and its final write-back), the set-up and sampling of
// a large ensemble (also under I/O contention: pieces of gigabytes removed
// in the background) and a run of a million saves each stop it within a
// second and leave nothing, or a .partial that --resume continues.
// (Split from tests/test_faults.cpp, which keeps the random-moment and
// resume cases.)
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

using nholo_test::fault_check;
using nholo_test::read_text;
using nholo_test::Result;
using nholo_test::spawn;
using nholo_test::wait_for;
using nholo_test::write_file;

// Many saves of cheap trajectories, compressed: a result of about 45 MB of
// fields, assembled (or merged with --copy) chunk by chunk as the pieces
// stored them. RK4 with the save step as its step. The copy takes a fraction of a second
// here, so slow_copy (in the child) makes each chunk wait 10 ms first (about 1.8 s in
// all): a signal sent 0.2-0.3 s into it lands inside it.
void slow_copy() {
  setenv("NHOLO_FAILPOINT_COPY_PAUSE_MS", "10", 1);
}
const std::string kLongAssembly = [] {
  nholo_test::CoinConfig c = nholo_test::spinning_coins();
  c.formulations = {"udwadia_kalaba"};
  c.t_end = 6.0;
  c.save_every = 0.05;
  c.size = 6000;
  c.seed = 5;
  c.fields = std::vector<std::string>{"q", "qdot"};
  c.extra = "compression = 4\n[integrator]\nmethod = \"rk4\"\ndt = 0.05\n";
  return c.text();
}();

// Waits (at most 10 minutes) until `log` in dir holds `text`; true if it does.
bool wait_for_text(const fs::path& dir, const std::string& log, const std::string& text) {
  for (int i = 0; i < 60000; ++i) {
    if (read_text(dir / log).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// How long a stopped nholo may take to exit: the product's promise is one
// second. The sanitizer build's nholo is instrumented and runs 2-3x slower
// (a run stopped in the sampling took 1.3 s there in CI, with another test
// beside it on two cores): its bound is three seconds, said in the output.
#ifdef NHOLO_TEST_SANITIZED
constexpr double kStopSeconds = 3.0;
#else
constexpr double kStopSeconds = 1.0;
#endif

// SIGTERM to pid; its exit code and the seconds it took to exit.
std::pair<int, double> terminate_and_time(pid_t pid) {
  const auto t0 = std::chrono::steady_clock::now();
  kill(pid, SIGTERM);
  const int code = wait_for(pid);
  if (kStopSeconds != 1.0)
    std::printf("(sanitizer build: the stop's bound is %.0f s, not the product's 1 s)\n",
                kStopSeconds);
  return {code, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
}

// SIGTERM to pid, a run or merge in dir logging to log_name: it exits with
// 143 within kStopSeconds, its log holds `said` (unless empty) and none of
// `left` is in dir. Returns the log.
std::string expect_stopped_cleanly(const fs::path& dir, pid_t pid, const std::string& when,
                                   const std::string& log_name, const std::string& said,
                                   std::initializer_list<const char*> left) {
  const auto [code, seconds] = terminate_and_time(pid);
  std::printf("SIGTERM %s: exit %d after %.3f s\n", when.c_str(), code, seconds);
  const std::string log = read_text(dir / log_name);
  EXPECT_EQ(code, 143) << log;
  EXPECT_LT(seconds, kStopSeconds);
  if (!said.empty()) {
    EXPECT_NE(log.find(said), std::string::npos) << log;
  }
  for (const char* f : left) EXPECT_FALSE(fs::exists(dir / f)) << f;
  return log;
}

// Whether the pieces that a stopped run handed to a background `rm -rf`
// (PieceDir::remove_all_without_waiting: .out.h5.partial.d.removing-PID in
// dir) are gone within a minute.
bool background_removal_done(const fs::path& dir) {
  for (int i = 0; i < 600; ++i) {
    bool any = false;
    for (const auto& e : fs::directory_iterator(dir))
      any = any || e.path().filename().string().rfind(".out.h5.partial.d.removing-", 0) == 0;
    if (!any) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

}  // namespace

// SIGTERM while the result file is assembled from the pieces (every
// trajectory finished) stops within a second: no half-assembled file, the
// .partial with every trajectory, and --resume writes the file, equal to an
// uninterrupted run's. Before, the signal waited for the assembly's end.
TEST(Faults, SigtermStopsTheAssemblyWithinASecondAndResumeWritesTheFile) {
  const fs::path dir = nholo_test::temp_dir("nholo_faults", "stop_assembly");
  write_file(dir / "c.toml", kLongAssembly);
  const pid_t pid = spawn(dir, {"run", "c.toml", "--threads", "1"}, slow_copy);
  ASSERT_TRUE(wait_for_text(dir, "run.log", "every trajectory is finished; writing out.h5"))
      << read_text(dir / "run.log");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // into the copy
  expect_stopped_cleanly(dir, pid, "during the assembly", "run.log",
                         "interrupted while writing out.h5: all 6000 trajectories are finished",
                         {"out.h5", "out.h5.assembling"});
  ASSERT_FALSE(::testing::Test::HasFailure());
  ASSERT_TRUE(fs::exists(dir / "out.h5.partial"));
  {
    const nholo::h5::File f = nholo::h5::File::open_ro((dir / "out.h5.partial").string());
    EXPECT_EQ(f.root().attr_int64("complete"), 0);
    EXPECT_EQ(f.root().attr_int64("completed_trajectories"), 6000);
  }
  const Result r = nholo_test::run_nholo("run -q c.toml --threads 1 --resume", dir);
  EXPECT_EQ(r.code, 0) << r.output;
  const fs::path ref = dir / "reference";
  fs::create_directories(ref);
  write_file(ref / "c.toml", kLongAssembly);
  ASSERT_EQ(nholo_test::run_nholo("run -q c.toml --threads 1", ref).code, 0);
  const Result same = fault_check("same", ref / "out.h5", dir / "out.h5");
  EXPECT_EQ(same.code, 0) << same.output;
  EXPECT_FALSE(fs::exists(dir / "out.h5.partial.d"));
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);  // kept to look at when it failed
}

// SIGTERM while the windows' memory is set up stops within a second and
// writes nothing. The set-up of a window of 10^5 trajectories and many saves
// zero-fills gigabytes (15 GB: half a minute) and did not look at the stop
// flag; it now fills 8 MiB at a time between looks. A small window here
// (about 20 parts) made slow by a failpoint (150 ms per part: 3 s) stands
// for it.
TEST(Faults, SigtermStopsTheWindowsSetUpWithinASecondAndWritesNothing) {
  const fs::path dir = nholo_test::temp_dir("nholo_faults", "stop_setup");
  nholo_test::CoinConfig c = nholo_test::spinning_coins();
  c.formulations = {"udwadia_kalaba"};
  c.t_end = 10.0;
  c.save_every = 0.05;
  c.size = 4000;
  c.fields = std::vector<std::string>{"q", "qdot"};
  c.window = 201;
  c.memory_budget_mb = 4000;
  write_file(dir / "c.toml", c.text());
  const pid_t pid = spawn(dir, {"run", "c.toml", "--threads", "1"},
                          [] { setenv("NHOLO_FAILPOINT_SETUP_PAUSE_MS", "150", 1); });
  ASSERT_TRUE(wait_for_text(dir, "run.log", "nholo: backend")) << read_text(dir / "run.log");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // into the set-up
  expect_stopped_cleanly(dir, pid, "during the windows' set-up", "run.log",
                         "interrupted while setting up the output of 4000 trajectories in out.h5; "
                         "nothing was written",
                         {"out.h5", "out.h5.partial"});
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// An ensemble whose trajectory index is large (8 bytes a trajectory, written
// before the first slice: 5e9 trajectories are 40 GB) says so before it
// starts writing it, and a signal then stops it within a second, leaving
// nothing. (A probe found 15 GB written within the first minute with no word.)
TEST(Faults, ALargeTrajectoryIndexIsSaidAndStoppedBySigterm) {
  const fs::path dir = nholo_test::temp_dir("nholo_faults", "large_index");
  nholo_test::CoinConfig c = nholo_test::spinning_coins();
  c.formulations = {"udwadia_kalaba"};
  c.size = 200000000;
  c.fields = std::vector<std::string>{};  // statistics only
  write_file(dir / "c.toml", c.text());
  const pid_t pid = spawn(dir, {"run", "c.toml", "--threads", "1"}, [] {});
  const bool said = wait_for_text(
      dir, "run.log",
      "writing the trajectory index of 200000000 trajectories (1.6 GB, before the first slice");
  const std::string log =
      expect_stopped_cleanly(dir, pid, "after the index was said", "run.log", "",
                             {"out.h5", "out.h5.partial", "out.h5.partial.d", "out.h5.lock"});
  EXPECT_TRUE(said) << log;
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// SIGTERM during `nholo merge --copy` stops it within a second and leaves
// nothing: no merged file, no temporary; the shards are untouched. Before,
// merge had no handler: the signal killed it and left OUT.merging.
TEST(Faults, SigtermStopsACopyMergeWithinASecondAndLeavesNothing) {
  const fs::path dir = nholo_test::temp_dir("nholo_faults", "stop_merge");
  write_file(dir / "c.toml", kLongAssembly);
  for (const char* shard : {"0/2", "1/2"})
    ASSERT_EQ(nholo_test::run_nholo(std::string("run -q c.toml --shard ") + shard, dir).code, 0);
  std::vector<std::string> shards;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find("out.shard-") == 0) shards.push_back(e.path().filename());
  ASSERT_EQ(shards.size(), 2u);
  std::sort(shards.begin(), shards.end());
  const uintmax_t bytes0 = fs::file_size(dir / shards[0]);
  std::vector<std::string> args = {"merge", "--copy", "m.h5"};
  args.insert(args.end(), shards.begin(), shards.end());
  const pid_t pid = spawn(dir, args, slow_copy, "merge.log");
  // into the copy: the merge first reads the shards' statistics (a fraction
  // of a second), then copies their chunks (slow_copy)
  for (int i = 0; i < 1000 && !fs::exists(dir / "m.h5.merging"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(fs::exists(dir / "m.h5.merging")) << read_text(dir / "merge.log");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  expect_stopped_cleanly(dir, pid, "during merge --copy", "merge.log",
                         "interrupted while merging into 'm.h5'; nothing was written",
                         {"m.h5", "m.h5.merging", "m.h5.lock"});
  EXPECT_EQ(fs::file_size(dir / shards[0]), bytes0);
  // the same in the last step, the merged file's write-back to the disk (a
  // slow disk: each 8 MiB waits 300 ms), which under I/O contention took
  // tens of seconds and did not look at the signal
  const pid_t pid2 = spawn(
      dir, args, [] { setenv("NHOLO_FAILPOINT_SYNC_PAUSE_MS", "300", 1); }, "merge.log");
  ASSERT_TRUE(wait_for_text(dir, "merge.log", "writing 'm.h5.merging' back slowly"))
      << read_text(dir / "merge.log");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  expect_stopped_cleanly(dir, pid2, "while merge --copy syncs its file", "merge.log",
                         "interrupted while merging into 'm.h5'; nothing was written",
                         {"m.h5", "m.h5.merging", "m.h5.lock"});
  EXPECT_EQ(fs::file_size(dir / shards[0]), bytes0);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// SIGTERM while a run sets up the output of a large ensemble (the
// trajectory index piece, then the result file's skeleton: what grows with
// the ensemble) stops it within a second and leaves nothing: no master, no
// pieces, no lock; in the sampling of the first slice, within a second too. Before, the set-up
// wrote every group's index in full, about 10 GB for 2e8 trajectories, and exited 85-130 s after
// the signal.
TEST(Faults, SigtermStopsTheSetUpAndTheSamplingWithinASecond) {
  const fs::path dir = nholo_test::temp_dir("nholo_faults", "stop_set_up");
  nholo_test::CoinConfig c = nholo_test::spinning_coins();
  c.formulations = {"udwadia_kalaba"};
  c.size = 20000000;
  c.fields = std::vector<std::string>{};  // statistics only
  write_file(dir / "c.toml", c.text());
  for (const char* phase : {"index.h5.tmp", "result.h5.tmp"}) {
    const pid_t pid = spawn(dir, {"run", "c.toml", "--threads", "1"}, [] {});
    const fs::path wait = dir / "out.h5.partial.d" / phase;
    for (int i = 0; i < 12000 && !fs::exists(wait); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const bool reached = fs::exists(wait);
    const std::string log = expect_stopped_cleanly(
        dir, pid, std::string("while writing ") + phase, "run.log",
        "interrupted while setting up the output of 20000000 trajectories in out.h5; nothing was "
        "written",
        {"out.h5", "out.h5.partial", "out.h5.partial.d", "out.h5.lock"});
    ASSERT_TRUE(reached) << phase << "\n" << log;
    ASSERT_TRUE(background_removal_done(dir)) << phase;
  }
  // the next phase: the result file's skeleton committed (made on a thread
  // of its own while the state of a slice is allocated: 729,088
  // trajectories, the memory budget), then slice 0's initial states sampled
  // and completed from the constraints (about 0.3 s, the flag looked at
  // every 4096): stopped before the sampling, the run leaves nothing as
  // above; inside it, it stops as between two windows, its master with no
  // trajectory finished (--resume continues it)
  const pid_t pid = spawn(dir, {"run", "c.toml", "--threads", "1"}, [] {});
  const fs::path pieces = dir / "out.h5.partial.d";
  for (int i = 0; i < 12000 && !fs::exists(pieces / "result.h5"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto [code, seconds] = terminate_and_time(pid);
  const std::string log = read_text(dir / "run.log");
  const bool in_set_up = log.find("interrupted while setting up") != std::string::npos;
  std::printf("SIGTERM after the skeleton (%s): exit %d after %.3f s\n",
              in_set_up ? "before the sampling" : "in the sampling", code, seconds);
  EXPECT_EQ(code, 143) << log;
  EXPECT_LT(seconds, kStopSeconds);
  EXPECT_FALSE(fs::exists(pieces / "init_0.h5")) << "the signal came after the sampling\n" << log;
  EXPECT_FALSE(fs::exists(dir / "out.h5.lock"));
  if (in_set_up) {
    EXPECT_FALSE(fs::exists(dir / "out.h5.partial"));
  } else {
    EXPECT_NE(log.find("interrupted: 0 of 20000000 trajectories finished"), std::string::npos)
        << log;
    EXPECT_TRUE(fs::exists(dir / "out.h5.partial"));
  }
  // the pieces of gigabytes (a result file of 2.8 GB) go in the background
  EXPECT_TRUE(background_removal_done(dir)) << "a folder .out.h5.partial.d.removing-PID is left";
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// SIGTERM while the result file's skeleton is in its commit's system calls
// stops within a second and leaves nothing. Under I/O contention the fsync
// of that file took 4 s and the folder's 0.5 s (strace, a 1 GB dd loop
// beside the test above), and the set-up waited for them: the 1.008 s this
// test's neighbour once measured on a loaded machine. Now the waiter leaves
// the thread to its system calls (pieces.hpp, CommitHandoff). A failpoint
// holds that fsync for 3 s.
TEST(Faults, SigtermDuringTheResultFilesFsyncStopsWithinASecond) {
  const fs::path dir = nholo_test::temp_dir("nholo_faults", "stop_in_fsync");
  nholo_test::CoinConfig c = nholo_test::spinning_coins();
  c.formulations = {"udwadia_kalaba"};
  c.size = 2000;
  c.fields = std::vector<std::string>{};  // statistics only: written in place
  write_file(dir / "c.toml", c.text());
  const pid_t pid = spawn(dir, {"run", "c.toml", "--threads", "1"},
                          [] { setenv("NHOLO_FAILPOINT_SLOW_FSYNC", "result.h5.tmp", 1); });
  ASSERT_TRUE(wait_for_text(dir, "run.log", "nholo: failpoint: a slow fsync of"))
      << read_text(dir / "run.log");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  expect_stopped_cleanly(dir, pid, "in the result file's fsync", "run.log",
                         "interrupted while setting up the output of 2000 trajectories in out.h5; "
                         "nothing was written",
                         {"out.h5", "out.h5.partial", "out.h5.partial.d", "out.h5.lock"});
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// SIGTERM to a run of one trajectory and 10^6 saves (one window of the
// automatic 1024 at a time) stops it within a second: the stopped master
// leaves the per-save statistics (32 MB each) to `nholo stats`, which
// merges the block moments. Before, the stop folded and wrote them: 1.1 to
// 3.9 s.
TEST(Faults, SigtermInARunOfAMillionSavesStopsWithinASecond) {
  const fs::path dir = nholo_test::temp_dir("nholo_faults", "million_saves");
  nholo_test::CoinConfig c = nholo_test::spinning_coins();
  c.formulations = {"udwadia_kalaba"};
  c.size = 1;
  c.t_end = 20.0;
  c.save_every = 2e-5;
  write_file(dir / "c.toml", c.text());
  const pid_t pid = spawn(dir, {"run", "c.toml", "--threads", "1"}, [] {});
  for (int i = 0; i < 60000 && !fs::exists(dir / "out.h5.partial.d" / "window_0_3.h5"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const auto [code, seconds] = terminate_and_time(pid);
  std::printf("SIGTERM after 4 of 1024 windows of 10^6 saves: exit %d after %.3f s\n", code,
              seconds);
  const std::string log = read_text(dir / "run.log");
  ASSERT_EQ(code, 143) << log;
  EXPECT_LT(seconds, kStopSeconds);
  {
    const nholo::h5::File f = nholo::h5::File::open_ro((dir / "out.h5.partial").string());
    const nholo::h5::Group sg = f.root().open_group("statistics/udwadia_kalaba");
    EXPECT_TRUE(sg.has_attr("statistics_omitted"));
    EXPECT_FALSE(sg.exists("mean"));
    EXPECT_EQ(sg.attr_int64("status_not_run"), 1);
    // the stopped master maps the windows written, not all 1024: its q reads
    // their saves and, past them, the fill
    int64_t windows = 0;
    for (const auto& e : fs::directory_iterator(dir / "out.h5.partial.d"))
      windows += e.path().filename().string().rfind("window_0_", 0) == 0;
    const nholo::h5::Dataset q = f.root().open_dataset("udwadia_kalaba/q");
    const nholo::h5::detail::Handle dcpl(H5Dget_create_plist(q.id()), H5Pclose);
    size_t sources = 0;
    ASSERT_GE(H5Pget_virtual_count(dcpl.get(), &sources), 0);
    EXPECT_EQ(static_cast<int64_t>(sources), windows);
    EXPECT_GE(windows, 4);
    EXPECT_LT(windows, 1024);
    const hsize_t per_window = (1000001 + 1023) / 1024;  // 10^6 + 1 saves in 1024 windows
    const hsize_t written = static_cast<hsize_t>(windows) * per_window;
    const std::vector<double> x = q.read_block<double>({0, written - 2, 0}, {1, 4, 1});
    EXPECT_TRUE(std::isfinite(x[0]) && std::isfinite(x[1])) << x[0] << " " << x[1];
    EXPECT_TRUE(std::isnan(x[2]) && std::isnan(x[3])) << x[2] << " " << x[3];
  }
  const Result st = nholo_test::run_nholo("stats out.h5.partial", dir);
  EXPECT_EQ(st.code, 0) << st.output;
  EXPECT_NE(st.output.find("merged here from the windows written so far"), std::string::npos)
      << st.output;
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}
