// Integration tests through the nholo command: what it refuses, with clear
// errors and nothing written. `nholo check` refuses what a run refuses; bad
// inputs; usage errors exit 2; wrong commands and damaged or mismatched
// files; concurrent runs on one output path and an overwrite during a run
// are refused; an existing file is kept without --overwrite. The runs and
// their results: test_cli.cpp.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <hdf5.h>

#include "host/io/h5.hpp"
#include "tests/nholo_cli.hpp"
#include "tests/coin_config.hpp"
#include "tests/cli_coin_run.hpp"

namespace fs = std::filesystem;

namespace {

using namespace nholo_test::cli;
using nholo_test::cli::nholo;  // the function, hiding the namespace nholo

// `nholo check` refuses what `nholo run` refuses before writing anything: a
// state file's bad column or value, events whose records cannot fit the
// memory budget; and no run or check takes one of its inputs (the config
// file) for its output, even with --overwrite.
TEST(Cli, CheckRefusesWhatARunRefusesAndTheOutputIsNoInput) {
  const fs::path dir = temp_dir("check_parity");
  write_file(dir / "coin.toml", kCoinConfig);
  write_file(dir / "bad_column.txt", "q0.thetaa qd0.theta\n0.1 1\n");
  write_file(dir / "bad_value.txt", "q0.theta qd0.theta\n0.1 1\n0.2 abc\n");
  const std::string file =
      " --set ensemble.sampler=file --set 'ensemble.q0={}' "
      "--set 'ensemble.qd0={}' --set ensemble.file=";
  for (const std::string cmd : {"check", "run -q"}) {
    SCOPED_TRACE(cmd);
    Result r = nholo(cmd + " coin.toml --set ensemble.size=1" + file + "bad_column.txt", dir);
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.output.find("unknown column 'q0.thetaa'"), std::string::npos) << r.output;
    r = nholo(cmd + " coin.toml --set ensemble.size=2" + file + "bad_value.txt", dir);
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.output.find("bad_value.txt"), std::string::npos) << r.output;
    r = nholo(cmd +
                  " coin.toml --set ensemble.size=2000 --set 'events=[{name=\"a\", "
                  "expr=\"sin(theta)\", max_records=1000000}]'",
              dir);
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.output.find("MB for the smallest slice"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(dir / "coin.h5"));
    r = nholo(cmd + " coin.toml --overwrite --set output.path=coin.toml", dir);
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.output.find("'coin.toml' is an input of the run"), std::string::npos) << r.output;
    EXPECT_EQ(read_text(dir / "coin.toml"), kCoinConfig);
  }
}

struct BadInput {
  const char* what;
  std::string args;       // after "run" (config file is bad.toml)
  std::string config;     // written to bad.toml (empty: use kCoinConfig)
  std::vector<std::string> expect;  // substrings of the message
};

TEST(Cli, BadInputsGiveClearErrorsAndWriteNothing) {
  const std::string coin = kCoinConfig;
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = coin;
    const auto p = s.find(from);
    EXPECT_NE(p, std::string::npos) << from;
    return s.replace(p, from.size(), to);
  };
  const std::vector<BadInput> cases = {
      {"unknown top-level key", "", "modle = 1\n" + coin, {"modle", "unknown key", "model"}},
      {"unknown table key",
       "--set integrator.rtl=1e-9",
       "",
       {"integrator.rtl", "accepted", "rtol"}},
      {"wrong type", "--set integrator.rtol='\"small\"'", "", {"integrator.rtol", "number"}},
      {"unknown model", "--set model=coin", "", {"model", "coin", "rolling_coin"}},
      {"unknown formulation",
       "--set 'formulations=[\"gauss\"]'",
       "",
       {"formulations", "gauss", "udwadia_kalaba"}},
      {"formulation the model lacks",
       "--set 'formulations=[\"conflated\"]'",
       "",
       {"formulations", "conflated", "accepted for it"}},
      {"unknown parameter", "--set params.radious=1", "", {"params.radious", "radius"}},
      {"negative size", "--set ensemble.size=-5", "", {"ensemble.size", ">= 1"}},
      {"size beyond what a file holds",
       "--set ensemble.size=1000000000000",
       "",
       {"ensemble.size", "1000000000000 trajectories", "at most 2^34"}},
      {"t_end <= 0", "--set time.t_end=0", "", {"time.t_end", "greater than"}},
      {"bad distribution",
       "",
       with("{ uniform = [1.0, 3.0] }", "{ gaussian = [1.0, 3.0] }"),
       {"ensemble.qd0.theta", "gaussian", "uniform"}},
      {"unknown coordinate",
       "",
       with("x = 0.0\n", "z = 0.0\n"),
       {"ensemble.q0.z", "x, y, phi, theta"}},
      {"unreadable file",
       "--set ensemble.sampler=file --set ensemble.file=missing.csv",
       "",
       {"ensemble.file", "missing.csv"}},
      {"output folder missing",
       "--set output.path=nowhere/coin.h5",
       "",
       {"output.path", "nowhere", "does not exist"}},
      {"unknown method",
       "--set integrator.method=euler",
       "",
       {"integrator.method", "euler", "dopri5"}},
      {"unknown drift", "--set integrator.drift=fix", "", {"integrator.drift", "project"}},
      {"unknown field",
       "--set 'output.fields=[\"q\", \"speed\"]'",
       "",
       {"output.fields", "speed", "energy"}},
      {"unknown sampler", "--set ensemble.sampler=latin", "", {"ensemble.sampler", "sobol"}},
      {"lambda0 without vakonomic",
       "--set ensemble.lambda0.roll_x=1",
       "",
       {"ensemble.lambda0", "vakonomic"}},
      {"both save_every and saveat",
       "",
       with("save_every = 0.25", "save_every = 0.25\nsaveat = [1.0]"),
       {"time", "save_every or saveat"}},
      {"invalid TOML", "", "model = \n", {"not valid TOML", "line 1"}},
      {"cuda backend on a CPU build", "--backend cuda", "", {"backend.device", "cuda", "omp"}},
      {"negative threads", "--threads 5000", "", {"backend.threads"}},
      {"compression out of range",
       "--set output.compression=12",
       "",
       {"output.compression", "[0, 9]"}},
      // regressions (found by an adversarial review): each was accepted before
      {"empty saveat", "", with("save_every = 0.25", "saveat = []"), {"time.saveat", "empty"}},
      {"t_end so large that the save count overflows",
       "--set time.t_end=1e18",
       "",
       {"time.save_every", "would make", "saves", "at most 10^6"}},
      {"pinv_rtol that drops constraints",
       "--set integrator.pinv_rtol=1",
       "",
       {"integrator.pinv_rtol", "[1e-16, 1e-6]"}},
      {"file sampler, size larger than the file",
       "--set ensemble.sampler=file --set ensemble.file=states.csv --set ensemble.size=5",
       "",
       {"ensemble.size", "is 5", "3 rows"}},
  };
  for (const auto& c : cases) {
    const fs::path dir = temp_dir("bad");
    write_file(dir / "bad.toml", c.config.empty() ? coin : c.config);
    write_file(dir / "states.csv", "q0.theta qd0.theta qd0.phi\n0.1 1.0 0.5\n0.2 2.0 0.5\n0.3 3.0 0.5\n");
    const Result r = nholo("run -q bad.toml " + c.args, dir);
    EXPECT_EQ(r.code, 2) << c.what << "\n" << r.output;
    for (const auto& s : c.expect)
      EXPECT_NE(r.output.find(s), std::string::npos) << c.what << ": expected '" << s << "' in\n" << r.output;
    EXPECT_FALSE(fs::exists(dir / "coin.h5")) << c.what;
    EXPECT_FALSE(fs::exists(dir / "coin.h5.partial")) << c.what;
    // `check` reports the same problem, also without writing
    const Result k = nholo("check bad.toml " + c.args, dir);
    EXPECT_NE(k.code, 0) << c.what;
  }
  std::printf("%zu bad inputs rejected with messages naming the key\n", cases.size());
}

// Every usage error exits 2 (CLI11's own codes are 100+); --help exits 0;
// stats on a file nholo did not write says so.
TEST(Cli, UsageErrorsExit2) {
  const fs::path dir = temp_dir("usage");
  for (const char* args : {"run", "run --bogus x.toml", "frobnicate", "run a.toml --threads many"}) {
    const Result r = nholo(args, dir);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.output;
  }
  // a mistyped option: the one meant is named (CLI11 said only "not expected")
  const Result typo = nholo("run a.toml --thread 1", dir);
  EXPECT_EQ(typo.code, 2) << typo.output;
  EXPECT_NE(typo.output.find("--thread: did you mean --threads?"), std::string::npos)
      << typo.output;
  EXPECT_EQ(nholo("run --bogus x.toml", dir).output.find("did you mean"), std::string::npos);
  // the GPU modules' choices need --gpu-arch (without it they chose nothing)
  for (const char* opt : {"--formulations conflated", "--method rk4", "--events"}) {
    const Result r = nholo(std::string("model build m.model.toml ") + opt, dir);
    EXPECT_EQ(r.code, 2) << opt << "\n" << r.output;
    EXPECT_NE(r.output.find("requires --gpu-arch"), std::string::npos) << opt << "\n" << r.output;
  }
  // negative thread counts and device indices, tolerances that are not
  // finite non-negative numbers: refused as the option's value
  for (const std::string args :
       {"run a.toml --threads -1", "check a.toml --threads -5", "run a.toml --device -2",
        "diff a.h5 a.h5 --rtol -1", "diff a.h5 a.h5 --rtol nan", "diff a.h5 a.h5 --rtol inf",
        "run a.toml --chunk-blocks 0", "run a.toml --chunk-blocks -1"}) {
    const Result r = nholo(args, dir);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.output;
    const std::string option = args.substr(args.rfind("--"), args.rfind(' ') - args.rfind("--"));
    EXPECT_NE(r.output.find(option), std::string::npos) << args << "\n" << r.output;
  }
  // what is accepted, in words (not CLI11's bounds as 300-digit numbers)
  const Result threads = nholo("run a.toml --threads -1", dir);
  EXPECT_NE(threads.output.find("got '-1'; accepted: a whole number of threads >= 1, or 0 for all "
                                "cores"),
            std::string::npos)
      << threads.output;
  EXPECT_EQ(threads.output.find("179769"), std::string::npos) << threads.output;
  // the usage names nholo, not the path that started it (a bundle starts
  // lib/nholo.bin; this test an absolute path)
  const Result help = nholo("--help", dir);
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.output.find("Usage: nholo [OPTIONS] SUBCOMMAND"), std::string::npos)
      << help.output;
  // non-regular config files and output paths (regressions: `run /dev/zero`)
  for (const char* cfg : {"/dev/zero", "/dev/null", "."}) {
    const Result r = nholo(std::string("check ") + cfg, dir);
    EXPECT_EQ(r.code, 2) << cfg << "\n" << r.output;
    EXPECT_NE(r.output.find("not a regular file"), std::string::npos) << r.output;
  }
  write_file(dir / "coin.toml", kCoinConfig);
  for (const char* out : {"/dev/null", "'\"a\\u0000b.h5\"'"}) {
    const Result r = nholo(std::string("check coin.toml --overwrite --set output.path=") + out, dir);
    EXPECT_EQ(r.code, 2) << out << "\n" << r.output;
    EXPECT_NE(r.output.find("output.path"), std::string::npos) << r.output;
  }
  write_file(dir / "text.h5", "not hdf5");
  const Result st = nholo("stats text.h5", dir);
  EXPECT_EQ(st.code, 2);
  EXPECT_NE(st.output.find("not an nholo result file"), std::string::npos) << st.output;
  // crafted files with nholo's attributes: shapes that do not match the
  // ensemble are refused, and a huge declared (unallocated) shape is never
  // read into memory
  auto crafted = [&](const std::string& name, hsize_t time_len, hsize_t status_len, int64_t size) {
    auto f = nholo::h5::File::create((dir / name).string());
    auto root = f.root();
    root.set_attr("nholo_version", "0");
    root.set_attr("model", "rolling_coin");
    root.set_attr("formulations", std::vector<std::string>{"udwadia_kalaba"});
    root.set_attr("coordinates", std::vector<std::string>{"x", "y", "phi", "theta"});
    root.set_attr("ensemble_size", size);
    root.set_attr("complete", int64_t(0));
    auto sg = root.create_group("statistics/udwadia_kalaba");
    sg.create_dataset<double>("time", {time_len}, {1024});
    sg.create_dataset<double>("block_moments_q", {5, 1, time_len, 4}, {1, 1, 1, 4});
    root.create_dataset<int32_t>("udwadia_kalaba/status", {status_len}, {1024});
    f.close();
  };
  crafted("huge_time.h5", hsize_t(1) << 40, 10, 10);
  crafted("bad_status.h5", 3, 1000, 10);
  crafted("huge_size.h5", 3, 10, int64_t(1) << 50);
  for (const char* what : {"stats huge_time.h5", "stats bad_status.h5", "stats huge_size.h5",
                           "compare huge_size.h5"}) {
    const Result c = nholo(what, dir);
    EXPECT_EQ(c.code, 2) << what << "\n" << c.output;
    EXPECT_NE(c.output.find("not an nholo result file"), std::string::npos) << what << "\n" << c.output;
  }
}

// A command that is not one, empty --shard/--range, a comparison of one
// formulation, a diff of files of other sizes or formulations, symlink
// loops, result files with a group missing or with declared values stored
// nowhere: each a clear error naming what is wrong (exit 2), or a DIFFER
// (exit 1) naming the formulation only in one file. Before: "A subcommand
// is required", the whole ensemble run, "a single formulation", "0
// trajectories differ", "agree", raw filesystem and HDF5 call chains, and
// minutes spent reading fill values.
TEST(Cli, WrongCommandsAndDamagedOrMismatchedFilesGiveClearErrors) {
  const fs::path dir = temp_dir("wrong_files");
  auto expect = [&](const std::string& args, int code, const std::vector<std::string>& words) {
    const Result r = nholo(args, dir);
    EXPECT_EQ(r.code, code) << args << "\n" << r.output;
    for (const auto& w : words) EXPECT_NE(r.output.find(w), std::string::npos) << args << "\n" << r.output;
    return r;
  };
  expect("frobnicate", 2, {"'frobnicate' is not a command of nholo; the commands are: run, check"});
  expect("model frob x", 2, {"'frob' is not a command of nholo model; the commands are: build, check"});
  write_file(dir / "coin.toml", kCoinConfig);
  const std::string quick = " --set time.t_end=0.5 --set ensemble.size=";
  expect("run coin.toml --shard ''", 2, {"--shard: an empty value; give r/R"});
  expect("run coin.toml --range ''", 2, {"--range: an empty value; give BEGIN:END"});
  ASSERT_EQ(nholo("run -q coin.toml --set output.path=a.h5" + quick + "64", dir).code, 0);
  ASSERT_EQ(nholo("run -q coin.toml --set output.path=b.h5" + quick + "128", dir).code, 0);
  ASSERT_EQ(nholo("run -q coin.toml --set output.path=two.h5" + quick +
                      "64 --set formulations='[\"udwadia_kalaba\", \"lagrange_multiplier\"]'",
                  dir)
                .code,
            0);
  expect("compare two.h5 --formulations udwadia_kalaba", 2,
         {"--formulations", "a comparison needs two of two.h5's formulations"});
  expect("diff a.h5 b.h5", 2, {"a.h5 holds 64 trajectories", "b.h5 128"});
  expect("merge m.h5 a.h5", 2, {"'a.h5' is not a shard file: it has no block moments"});
  expect("diff a.h5 two.h5", 1, {"lagrange_multiplier: only in two.h5", "DIFFER"});
  // symlink loops: the system's reason, not "no such file" or a raw exception
  fs::create_symlink("loop_b.h5", dir / "loop_a.h5");
  fs::create_symlink("loop_a.h5", dir / "loop_b.h5");
  expect("stats loop_a.h5", 2, {"cannot open 'loop_a.h5': Too many levels of symbolic links"});
  fs::create_symlink("loop_d", dir / "loop_c");
  fs::create_symlink("loop_c", dir / "loop_d");
  expect("check coin.toml --set output.path=loop_c/x/out.h5", 2,
         {"output.path", "Too many levels of symbolic links"});
  // a model file that is a FIFO or a loop, named by a run config: refused
  // at once (a FIFO blocked the read)
  ASSERT_EQ(::mkfifo((dir / "fifo.model.toml").c_str(), 0600), 0);
  expect("check coin.toml --set model='\"fifo.model.toml\"'", 2,
         {"fifo.model.toml: not a regular file (a FIFO)"});
  fs::create_symlink("loop_n.toml", dir / "loop_m.toml");
  fs::create_symlink("loop_m.toml", dir / "loop_n.toml");
  expect("check coin.toml --set model='\"loop_m.toml\"'", 2,
         {"loop_m.toml: cannot open the model file: Too many levels of symbolic links"});
  // a group gone: what failed and HDF5's reason, not its call chain
  fs::copy_file(dir / "a.h5", dir / "no_stats.h5");
  fs::copy_file(dir / "a.h5", dir / "hollow.h5");
  {
    nholo::h5::File f = nholo::h5::File::open_rw((dir / "no_stats.h5").string());
    ASSERT_GE(H5Ldelete(f.root().id(), "statistics", H5P_DEFAULT), 0);
  }
  const Result gone = expect("stats no_stats.h5", 2,
                             {"statistics/udwadia_kalaba", "(HDF5: ", "the file is damaged, incomplete"});
  EXPECT_EQ(gone.output.find("H5G"), std::string::npos) << gone.output;
  // --resume finds such a file, or a text file, where its result should be
  fs::copy_file(dir / "no_stats.h5", dir / "coin.h5");
  expect("run coin.toml --resume" + quick + "64", 2,
         {"--resume: 'coin.h5' exists but is not a complete result ('statistics/udwadia_kalaba' "
          "is missing); move it away, or pass --overwrite"});
  write_file(dir / "coin.h5", "not hdf5");
  expect("run coin.toml --resume" + quick + "64", 2,
         {"'coin.h5' exists but is not a readable result", "[Not an HDF5 file]"});
  // values declared but stored nowhere (2^34 of them took minutes to read)
  {
    nholo::h5::File f = nholo::h5::File::open_rw((dir / "hollow.h5").string());
    nholo::h5::Group root = f.root();
    ASSERT_GE(H5Ldelete(root.id(), "statistics/udwadia_kalaba/drift_ratio", H5P_DEFAULT), 0);
    root.create_dataset<double>("statistics/udwadia_kalaba/drift_ratio", {64}, {16});
  }
  expect("stats hollow.h5", 2,
         {"hollow.h5' is damaged", "drift_ratio declares 64 values but stores none of them"});
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// Two or three runs started together on one output path, 40 trials (12 in the
// sanitizer build): exactly one writes the file; the others are refused at
// once (exit 2) because the path is locked by the other run or already
// written; nothing is lost and no .partial or lock file is left behind.
TEST(Cli, ConcurrentRunsOnOnePathOneWinsTheOthersAreRefused) {
  const fs::path dir = temp_dir("concurrent");
  write_file(dir / "coin.toml", kCoinConfig);
  int locked = 0, existed = 0;
#if defined(__SANITIZE_ADDRESS__)
  // the ASan/UBSan build (CI stage 2) runs nholo several times slower: 12
  // trials there check the lock's paths for memory errors; the product build
  // runs all 40
  const int kTrials = 12;
  std::printf("sanitizer build: %d trials, not 40\n", kTrials);
#else
  const int kTrials = 40;
#endif
  for (int trial = 0; trial < kTrials; ++trial) {
    fs::remove(dir / "coin.h5");
    const int runs = 2 + trial % 2;
    std::vector<pid_t> pids;
    for (int r = 0; r < runs; ++r)
      pids.push_back(spawn_nholo(dir, {"run", "coin.toml", "--set", "ensemble.size=400", "--threads", "1"},
                                 "run" + std::to_string(r) + ".log"));
    int winners = 0;
    for (int r = 0; r < runs; ++r) {
      int st = 0;
      waitpid(pids[r], &st, 0);
      ASSERT_TRUE(WIFEXITED(st));
      const std::string out = read_text(dir / ("run" + std::to_string(r) + ".log"));
      if (WEXITSTATUS(st) == 0) {
        ++winners;
        continue;
      }
      EXPECT_EQ(WEXITSTATUS(st), 2) << out;
      const bool is_locked = out.find("is being written by another nholo run (") != std::string::npos;
      const bool is_there = out.find("exists; pass --overwrite") != std::string::npos;
      EXPECT_TRUE(is_locked || is_there) << out;
      locked += is_locked;
      existed += is_there;
    }
    EXPECT_EQ(winners, 1) << "trial " << trial;
    ASSERT_TRUE(fs::exists(dir / "coin.h5"));
    EXPECT_EQ(nholo::h5::File::open_ro((dir / "coin.h5").string()).root().attr_int64("complete"), 1);
    EXPECT_FALSE(fs::exists(dir / "coin.h5.partial"));
    EXPECT_FALSE(fs::exists(dir / "coin.h5.lock"));
  }
  std::printf("%d trials of 2-3 concurrent runs: one winner each; losers refused %d times as locked, "
              "%d times as already written\n", kTrials, locked, existed);
  EXPECT_GT(locked, 0);  // the runs did overlap
}

// --overwrite started while another run writes the path is refused and
// removes nothing; the first run goes on and its result is kept.
TEST(Cli, OverwriteDuringARunIsRefused) {
  const fs::path dir = temp_dir("overwrite_during");
  write_file(dir / "coin.toml", kCoinConfig);
  const pid_t pid = spawn_nholo(
      dir, {"run", "coin.toml", "--set", "ensemble.size=50000", "--set", "output.memory_budget_mb=1",
            "--set", "time.t_end=20", "--set", "integrator.rtol=1e-8", "--threads", "1"},
      "first.log");
  for (int i = 0; i < 6000 && read_text(dir / "first.log").find(") finished") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_NE(read_text(dir / "first.log").find(") finished"), std::string::npos);
  const Result r = nholo("run -q coin.toml --overwrite --set ensemble.size=10", dir);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("is being written by another nholo run (pid " + std::to_string(pid)),
            std::string::npos)
      << r.output;
  const Result c = nholo("check coin.toml --overwrite", dir);
  EXPECT_EQ(c.code, 2) << c.output;
  EXPECT_TRUE(fs::exists(dir / "coin.h5.partial"));  // the first run's file is untouched
  kill(pid, SIGINT);
  int st = 0;
  waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 130);
  const auto status = nholo::h5::File::open_ro((dir / "coin.h5.partial").string())
                          .root()
                          .open_dataset("udwadia_kalaba/status")
                          .read<int32_t>();
  EXPECT_EQ(status.size(), 50000u);
  EXPECT_EQ(status[0], 0);  // the first slice finished and is kept
  // the stale .partial is named as what it is
  const Result again = nholo("run -q coin.toml", dir);
  EXPECT_EQ(again.code, 2);
  EXPECT_NE(again.output.find("incomplete result of an earlier run"), std::string::npos) << again.output;
  EXPECT_FALSE(fs::exists(dir / "coin.h5.lock"));
}

TEST(Cli, ExistingFileIsKeptWithoutOverwrite) {
  const fs::path dir = temp_dir("overwrite");
  write_file(dir / "coin.toml", kCoinConfig);
  write_file(dir / "coin.h5", "precious results");
  Result r = nholo("run -q coin.toml", dir);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.output.find("--overwrite"), std::string::npos) << r.output;
  std::ifstream f(dir / "coin.h5");
  std::string content((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "precious results");
  r = nholo("run -q coin.toml --overwrite --set ensemble.size=10", dir);
  EXPECT_EQ(r.code, 0) << r.output;
  auto file = nholo::h5::File::open_ro((dir / "coin.h5").string());
  EXPECT_EQ(file.root().attr_int64("complete"), 1);
}


}  // namespace
