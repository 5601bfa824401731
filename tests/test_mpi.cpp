// `mpirun -n N nholo run CONFIG` (host/cli/mpi_run.hpp, docs/cluster.md): the
// ensemble run over 2 and 3 ranks (oversubscribed on a small machine), with
// the dynamic work queue, the static partition and other parcel sizes, gives
// every dataset and statistic bitwise equal to one process; SIGINT to mpirun
// stops every rank cleanly and a rank killed outright leaves the finished
// shard files complete and the rest valid; `--resume` with another number
// of ranks finishes the run, again bitwise equal to one process.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "host/io/h5.hpp"
#include "tests/nholo_cli.hpp"
#include "tests/coin_config.hpp"

namespace fs = std::filesystem;
using nholo_test::Result;
using nholo_test::run_nholo;
using nholo_test::write_file;

namespace {

// 7300 trajectories in 8 blocks, two formulations (as tests/test_shards.cpp).
std::string config(double t_end, double save_every, int size = 7300) {
  return nholo_test::shard_coins(t_end, save_every, size).text();
}

const std::string kMpiexec = NHOLO_TEST_MPIEXEC;

// `mpiexec -n N nholo ARGS` as a shell command (Open MPI: as root too, more
// ranks than cores allowed).
std::string mpi_command(int n, const std::string& args) {
  return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 "
         "OMPI_MCA_btl_vader_single_copy_mechanism=none '" +
         kMpiexec + "' -n " + std::to_string(n) + " '" + NHOLO_BINARY + "' " + args;
}

Result run_shell(const std::string& script, const fs::path& dir) {
  const fs::path log = dir / "shell.log";
  const std::string cmd = "cd '" + dir.string() + "' && { " + script + " ; } > '" + log.string() + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream f(log);
  std::stringstream ss;
  ss << f.rdbuf();
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, ss.str()};
}

Result run_mpi(int n, const std::string& args, const fs::path& dir) {
  return run_shell(mpi_command(n, args), dir);
}

#define REQUIRE_MPI()                                                                       \
  if (kMpiexec.empty()) {                                                                   \
    std::printf("skipped: this nholo is built without MPI (NHOLO_WITH_MPI=OFF: the sanitizer " \
                "build, or no MPI library was found)\n");                                   \
    GTEST_SKIP() << "nholo built without MPI";                                              \
  }

}  // namespace

TEST(Mpi, RanksGiveTheSameFileAsOneProcessBitwise) {
  REQUIRE_MPI();
  const fs::path dir = nholo_test::temp_dir("nholo_mpi", "same");
  write_file(dir / "c.toml", config(1.0, 0.125));
  ASSERT_EQ(run_nholo("run -q c.toml --set output.path=single.h5", dir).code, 0);
  struct Case {
    int n;
    std::string args, what;
  };
  for (const Case& c : {Case{2, "", "dynamic work queue"}, Case{3, "", "dynamic work queue"},
                        Case{3, "--static", "static partition"},
                        Case{2, "--chunk-blocks 3 --set output.memory_budget_mb=1", "dynamic work queue"}}) {
    SCOPED_TRACE("-n " + std::to_string(c.n) + " " + c.args);
    const Result r = run_mpi(c.n, "run c.toml --overwrite " + c.args, dir);
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_NE(r.output.find(std::to_string(c.n) + " ranks, " + c.what), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("wrote out.h5 (7300 trajectories by " + std::to_string(c.n) + " ranks"),
              std::string::npos)
        << r.output;
    const Result same = nholo_test::fault_check("same", dir / "single.h5", dir / "out.h5");
    EXPECT_EQ(same.code, 0) << same.output;
    const auto root = nholo::h5::File::open_ro((dir / "out.h5").string()).root();
    EXPECT_EQ(root.attr_int64("complete"), 1);
    std::printf("mpirun -n %d %s: every dataset bitwise equal to one process\n", c.n, c.args.c_str());
  }
  fs::remove_all(dir);
}

TEST(Mpi, InterruptedAndKilledRanksLeaveAResumableResult) {
  REQUIRE_MPI();
  const fs::path dir = nholo_test::temp_dir("nholo_mpi", "kill");
  // 12 parcels of 1024, each long enough (about 1.5 s on 3 ranks sharing 2
  // cores) to be stopped mid-run: Open MPI forwards a signal to the ranks
  // after about a second
  write_file(dir / "c.toml", config(30.0, 0.5, 12288));
  ASSERT_EQ(run_nholo("run -q c.toml --set output.path=single.h5", dir).code, 0);
  // starts mpirun in the background, waits for the first complete shard
  // file, then sends SIGNAL to mpirun (mpirun) or to its last rank (rank)
  auto start_and_stop = [&](const std::string& to, const std::string& signal) {
    return run_shell(
        mpi_command(3, "run -q c.toml" + std::string(to == "rank" ? " --resume" : "")) +
            " > mpi.log 2>&1 & MP=$!; K=$(ls out.shard-*.h5 2>/dev/null | wc -l); for i in $(seq 600); "
            "do [ $(ls out.shard-*.h5 2>/dev/null | wc -l) -gt $K ] && break; sleep 0.05; done; " +
            (to == "mpirun" ? "kill -" + signal + " $MP"
                            : "kill -" + signal + " $(pgrep -P $MP | tail -1)") +
            "; wait $MP; echo \"mpirun exit $?\"; cat mpi.log; sleep 0.5; "
            "for p in $(pgrep -x nholo); do [ \"$(readlink /proc/$p/cwd)\" = \"$PWD\" ] && "
            "echo \"LEFTOVER $p\"; done; true",
        dir);
  };
  auto shards = [&](const std::string& suffix) {
    int k = 0;
    for (const auto& e : fs::directory_iterator(dir)) {
      const std::string name = e.path().filename().string();
      k += name.rfind("out.shard-", 0) == 0 && name.size() > suffix.size() &&
           name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    }
    return k;
  };

  // 1. SIGINT to mpirun: every rank stops at its next safe point
  const Result a = start_and_stop("mpirun", "INT");
  EXPECT_EQ(a.output.find("mpirun exit 0"), std::string::npos) << a.output;
  EXPECT_EQ(a.output.find("LEFTOVER"), std::string::npos) << a.output;
  EXPECT_FALSE(fs::exists(dir / "out.h5"));
  const int complete_a = shards(".h5"), partial_a = shards(".h5.partial");
  EXPECT_GE(complete_a, 1);
  EXPECT_LT(complete_a, 12) << a.output;
  // finished shard files are complete results; the others valid partial files
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("out.shard-", 0) != 0 || e.path().extension() == ".d" ||
        e.path().extension() == ".lock")
      continue;
    const Result s = run_nholo("stats " + name, dir);
    EXPECT_EQ(s.code, 0) << name << "\n" << s.output;
  }
  std::printf("SIGINT to mpirun: %d complete shard files, %d partial ones, all readable\n", complete_a,
              partial_a);

  // 2. resumed on 3 ranks, one of them killed outright (SIGKILL) mid-run
  const Result b = start_and_stop("rank", "KILL");
  EXPECT_EQ(b.output.find("mpirun exit 0"), std::string::npos) << b.output;
  EXPECT_EQ(b.output.find("LEFTOVER"), std::string::npos) << b.output;
  EXPECT_FALSE(fs::exists(dir / "out.h5"));
  const int complete_b = shards(".h5");
  EXPECT_GE(complete_b, complete_a);
  // what the ranks finished is a valid result: merge names exactly what is missing
  std::string list;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("out.shard-", 0) == 0 && e.path().extension() == ".h5") list += " " + name;
  }
  if (complete_b < 12) {
    const Result m = run_nholo("merge m.h5" + list, dir);
    EXPECT_EQ(m.code, 2) << m.output;
    EXPECT_NE(m.output.find("missing trajectories ["), std::string::npos) << m.output;
  }
  std::printf("a rank killed (SIGKILL): %d complete shard files, the rest partial or not run\n",
              complete_b);

  // 3. --resume on 2 ranks finishes it: bitwise the single process's result
  const Result c = run_mpi(2, "run c.toml --resume", dir);
  ASSERT_EQ(c.code, 0) << c.output;
  EXPECT_NE(c.output.find(std::to_string(complete_b) + " complete and"), std::string::npos) << c.output;
  const Result same = nholo_test::fault_check("same", dir / "single.h5", dir / "out.h5");
  EXPECT_EQ(same.code, 0) << same.output;
  EXPECT_EQ(shards(".h5.partial"), 0);
  // and once more: nothing to do
  const Result d = run_mpi(2, "run c.toml --resume", dir);
  EXPECT_EQ(d.code, 0) << d.output;
  EXPECT_NE(d.output.find("is complete (same config); nothing to resume"), std::string::npos) << d.output;
  fs::remove_all(dir);
}

// The shard files an interrupted MPI run left are continued by one process
// (`nholo run CONFIG --resume`, as under `mpirun -n 1`): the finished shards
// adopted, the others resumed, OUT merged bitwise as one process writes it,
// and nothing left beside it but the shard files it reads.
TEST(Mpi, OneProcessResumesTheShardFilesOfAnMpiRun) {
  REQUIRE_MPI();
  const fs::path dir = nholo_test::temp_dir("nholo_mpi", "resume_alone");
  write_file(dir / "c.toml", config(10.0, 0.5, 8192));
  ASSERT_EQ(run_nholo("run -q c.toml --set output.path=single.h5", dir).code, 0);
  // SIGINT to mpirun once the first shard file is complete
  const Result a = run_shell(
      mpi_command(2, "run -q c.toml") +
          " > mpi.log 2>&1 & MP=$!; for i in $(seq 600); do "
          "[ $(ls out.shard-*.h5 2>/dev/null | wc -l) -gt 0 ] && break; sleep 0.05; done; "
          "kill -INT $MP; wait $MP; echo \"mpirun exit $?\"; cat mpi.log",
      dir);
  EXPECT_EQ(a.output.find("mpirun exit 0"), std::string::npos) << a.output;
  ASSERT_FALSE(fs::exists(dir / "out.h5")) << a.output;
  int complete = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    complete += name.rfind("out.shard-", 0) == 0 && e.path().extension() == ".h5";
  }
  EXPECT_GE(complete, 1) << a.output;
  const Result r = run_nholo("run c.toml --resume", dir);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("resuming the shard files of out.h5 in one process"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("nothing to resume"), std::string::npos) << r.output;
  const Result same = nholo_test::fault_check("same", dir / "single.h5", dir / "out.h5");
  EXPECT_EQ(same.code, 0) << same.output;
  // beside OUT only its shard files (its virtual datasets read them)
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("out.", 0) != 0) continue;
    EXPECT_TRUE(name == "out.h5" || (name.rfind("out.shard-", 0) == 0 && e.path().extension() == ".h5"))
        << "left beside the result: " << name;
  }
  const Result again = run_nholo("run c.toml --resume", dir);
  EXPECT_EQ(again.code, 0) << again.output;
  EXPECT_NE(again.output.find("is complete (same config); nothing to resume"), std::string::npos)
      << again.output;
  std::printf("%d complete shard files after SIGINT; resumed in one process: bitwise one process's result\n",
              complete);
  fs::remove_all(dir);
}

TEST(Mpi, LeftoversAndWrongOptionsAreRefusedBeforeAnythingRuns) {
  REQUIRE_MPI();
  const fs::path dir = nholo_test::temp_dir("nholo_mpi", "refuse");
  write_file(dir / "c.toml", config(0.25, 0.125));
  // shard files of an earlier run: refused without --resume / --overwrite
  ASSERT_EQ(run_nholo("run -q c.toml --range 0:2048", dir).code, 0);
  const Result r = run_mpi(2, "run -q c.toml", dir);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("shard files of 'out.h5' exist ('out.shard-0-2048.h5'"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("pass --resume to continue them, or --overwrite"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "out.h5"));
  // a shard of another configuration is named on --resume
  ASSERT_EQ(run_nholo("run -q c.toml --range 2048:4096 --set params.slope=0.1", dir).code, 0);
  const Result other = run_mpi(2, "run -q c.toml --resume", dir);
  EXPECT_EQ(other.code, 2) << other.output;
  EXPECT_NE(other.output.find("out.shard-2048-4096.h5' is the result of another configuration"),
            std::string::npos)
      << other.output;
  // --overwrite discards them; the shard that was there is not reused
  const Result w = run_mpi(2, "run -q c.toml --overwrite", dir);
  EXPECT_EQ(w.code, 0) << w.output;
  EXPECT_TRUE(fs::exists(dir / "out.h5"));
  const Result shard = run_mpi(2, "run -q c.toml --shard 0/2 --set output.path=x.h5", dir);
  EXPECT_EQ(shard.code, 2) << shard.output;
  EXPECT_NE(shard.output.find("a run over several MPI ranks covers the whole ensemble"), std::string::npos)
      << shard.output;
  fs::remove_all(dir);
}

// OUT of another configuration beside this configuration's shard files (an
// MPI run with --overwrite, stopped): --resume alone refuses and names the
// way on; --resume --overwrite continues the shard files and replaces OUT
// when they are merged.
TEST(Mpi, ResumeOverwriteContinuesTheShardFilesAndReplacesOut) {
  REQUIRE_MPI();
  const fs::path dir = nholo_test::temp_dir("nholo_mpi", "resume_overwrite");
  write_file(dir / "c.toml", config(0.25, 0.125));
  ASSERT_EQ(run_nholo("run -q c.toml --set params.slope=0.1", dir).code, 0);
  ASSERT_EQ(run_nholo("run -q c.toml --range 0:2048", dir).code, 0);  // what the ranks finished
  const auto hash = [&](const char* file) {
    return nholo::h5::File::open_ro((dir / file).string()).root().attr_string("config_hash");
  };
  const std::string other = hash("out.h5");
  const Result alone = run_mpi(2, "run -q c.toml --resume", dir);
  EXPECT_EQ(alone.code, 2) << alone.output;
  EXPECT_NE(alone.output.find("pass --resume --overwrite to continue this configuration's shard "
                              "files"),
            std::string::npos)
      << alone.output;
  EXPECT_EQ(hash("out.h5"), other);
  const Result both = run_mpi(2, "run -q c.toml --resume --overwrite", dir);
  ASSERT_EQ(both.code, 0) << both.output;
  EXPECT_EQ(hash("out.h5"), hash("out.shard-0-2048.h5"));
  EXPECT_NE(hash("out.h5"), other);
  fs::remove_all(dir);
}

TEST(Mpi, OptionsOfMpiRunsNeedSeveralRanks) {
  // in every build: --static / --chunk-blocks without mpirun are refused
  const fs::path dir = nholo_test::temp_dir("nholo_mpi", "alone");
  write_file(dir / "c.toml", config(0.25, 0.125));
  for (const char* opt : {"--static", "--chunk-blocks 2"}) {
    const Result r = run_nholo(std::string("run -q c.toml ") + opt, dir);
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.output.find("apply to a run over several MPI ranks"), std::string::npos) << r.output;
  }
  EXPECT_FALSE(fs::exists(dir / "out.h5"));
  // srun tasks without MPI would each run the whole ensemble: refused with the two ways that work
  const std::string tasks = "SLURM_NTASKS=4 SLURM_STEP_NUM_TASKS=4 SLURM_PROCID=1";
  const Result srun = run_nholo("run -q c.toml", dir, tasks);
  EXPECT_EQ(srun.code, 2) << srun.output;
  EXPECT_NE(srun.output.find("task 1 of 4 started by srun without MPI"), std::string::npos) << srun.output;
  EXPECT_NE(srun.output.find("--shard $SLURM_PROCID/$SLURM_NTASKS"), std::string::npos) << srun.output;
  EXPECT_FALSE(fs::exists(dir / "out.h5"));
  // ... and the way it names works: one shard per task
  const Result shard = run_nholo("run -q c.toml --shard 1/4", dir, tasks);
  EXPECT_EQ(shard.code, 0) << shard.output;
  // a batch script's own process (its allocation's SLURM_NTASKS, no srun
  // step) is one process: it runs
  const Result batch =
      run_nholo("run -q c.toml --set output.path=batch.h5", dir, "SLURM_NTASKS=8 SLURM_PROCID=0");
  EXPECT_EQ(batch.code, 0) << batch.output;
  // a job-array task (one task) runs as usual
  const Result one = run_nholo("run -q c.toml --shard 0/2", dir, "SLURM_NTASKS=1 SLURM_PROCID=0");
  EXPECT_EQ(one.code, 0) << one.output;
  if (kMpiexec.empty()) {
    // an nholo without MPI started as one of several ranks says so instead of
    // running the whole ensemble in every process
    const Result r = run_nholo("run -q c.toml", dir, "OMPI_COMM_WORLD_SIZE=3");
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.output.find("built without MPI"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(dir / "out.h5"));
  }
  fs::remove_all(dir);
}
