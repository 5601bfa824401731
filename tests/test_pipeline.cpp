// Tests of the run pipeline (host/run/runner.cpp,
// host/backends/device_ensemble.hpp): the device reducers' statistics against an
// independent two-pass computation, bitwise independence of slicing, threads
// and output mode, the statistics-only mode, and the backend choice
// (auto / omp / cpp / cuda) through the nholo command. (The writer thread:
// tests/test_output_sink.cpp.)
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "host/config/config.hpp"
#include "host/io/h5.hpp"
#include "host/io/slice_plan.hpp"
#include "host/io/statistics.hpp"
#include "tests/coin_config.hpp"
#include "tests/nholo_cli.hpp"

namespace fs = std::filesystem;
using nholo::h5::File;

namespace {

using nholo_test::Result;
using nholo_test::write_file;

Result nholo_cmd(const std::string& args, const fs::path& dir, const std::string& env = "") {
  return nholo_test::run_nholo(args, dir, env);
}

fs::path temp_dir(const std::string& name) { return nholo_test::temp_dir("nholo_pipeline", name); }

// A coin ensemble under two formulations (so that the pairwise comparison
// runs too), 3 slices of 1024 at a 1 MB budget.
const std::string kConfig = nholo_test::compared_coins().text();

std::vector<double> read(const File& f, const std::string& ds) {
  return f.root().open_dataset(ds).read<double>();
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

// The statistics of the device reducer path (block moments on the device,
// merged in block order) equal a plain two-pass computation over the
// trajectories written to the file, to 1e-14 relative; min and max exactly.
TEST(Pipeline, DeviceReducedStatisticsEqualTwoPassReference) {
  const fs::path dir = temp_dir("twopass");
  write_file(dir / "c.toml", kConfig);
  ASSERT_EQ(nholo_cmd("run -q c.toml --set output.memory_budget_mb=1", dir).code, 0);
  const File f = File::open_ro((dir / "a.h5").string());
  EXPECT_GE(f.root().attr_int64("slice_size"), 1024);
  EXPECT_LT(f.root().attr_int64("slice_size"), 2500);  // really sliced
  for (const char* form : {"udwadia_kalaba", "lagrange_multiplier"}) {
    for (const char* field : {"q", "qdot"}) {
      const auto v = read(f, std::string(form) + "/" + field);  // [i][k][c]
      const std::string pre = std::string("statistics/") + form + "/" + (field[1] ? "qdot_" : "");
      const auto mean = read(f, pre + "mean"), var = read(f, pre + "variance");
      const auto mn = read(f, pre + "min"), mx = read(f, pre + "max");
      const size_t nk = 13, nc = 4, N = 2500;  // saves 0, 0.25, ..., 3
      ASSERT_EQ(v.size(), N * nk * nc);
      for (size_t k = 0; k < nk; ++k)
        for (size_t c = 0; c < nc; ++c) {
          double s = 0, cnt = 0, lo = HUGE_VAL, hi = -HUGE_VAL, scale = 0;
          for (size_t i = 0; i < N; ++i) {
            const double x = v[(i * nk + k) * nc + c];
            if (!std::isfinite(x)) continue;
            s += x;
            cnt += 1;
            lo = std::min(lo, x);
            hi = std::max(hi, x);
            scale = std::max(scale, std::abs(x));
          }
          const double m = s / cnt;
          double ss = 0;
          for (size_t i = 0; i < N; ++i) {
            const double x = v[(i * nk + k) * nc + c];
            if (std::isfinite(x)) ss += (x - m) * (x - m);
          }
          const double var_ref = ss / (cnt - 1);
          const size_t j = k * nc + c;
          EXPECT_NEAR(mean[j], m, 1e-14 * std::max(scale, 1e-300)) << form << field << k << c;
          EXPECT_NEAR(var[j], var_ref, 1e-14 * std::max(var_ref, scale * scale * 1e-2))
              << form << field << k << c;
          EXPECT_EQ(mn[j], lo);
          EXPECT_EQ(mx[j], hi);
        }
    }
  }
}

// Slicing, thread count, backend (OpenMP / serial), window length and the
// statistics-only mode give the same statistics and comparisons, bit for bit.
TEST(Pipeline, StatisticsBitwiseAcrossSlicingThreadsBackendsAndModes) {
  const fs::path dir = temp_dir("bitwise");
  write_file(dir / "c.toml", kConfig);
  ASSERT_EQ(nholo_cmd("run -q c.toml --threads 2 --set output.memory_budget_mb=256", dir).code, 0);
  ASSERT_EQ(
      nholo_cmd("run -q c.toml --threads 1 --set output.memory_budget_mb=1 --set output.path=b.h5",
                dir)
          .code,
      0);
  ASSERT_EQ(
      nholo_cmd("run -q c.toml --backend cpp --set output.window=5 --set output.path=c.h5", dir)
          .code,
      0);
  // statistics only: no time series written, fields = [] and mode = "statistics" alike
  ASSERT_EQ(nholo_cmd("run -q c.toml --set output.fields=[] --set output.path=d.h5 --set "
                      "output.memory_budget_mb=1",
                      dir)
                .code,
            0);
  ASSERT_EQ(nholo_cmd("run -q c.toml --set output.mode='\"statistics\"' --set output.fields=[] "
                      "--set output.path=e.h5",
                      dir)
                .code,
            0);
  const File a = File::open_ro((dir / "a.h5").string());
  for (const char* other : {"b.h5", "c.h5", "d.h5", "e.h5"}) {
    const File b = File::open_ro((dir / other).string());
    for (const char* form : {"udwadia_kalaba", "lagrange_multiplier"})
      for (const char* st : {"mean", "variance", "min", "max", "qdot_mean", "qdot_variance",
                             "count", "drift_velocity", "band", "drift_ratio"}) {
        const std::string ds = std::string("statistics/") + form + "/" + st;
        EXPECT_TRUE(same_bits(read(a, ds), read(b, ds))) << ds << " vs " << other;
      }
    for (const char* ds : {"compare/udwadia_kalaba__lagrange_multiplier/max_distance",
                           "compare/udwadia_kalaba__lagrange_multiplier/first_exceed_time",
                           "initial/q0", "initial/qdot0", "udwadia_kalaba/fail_time"})
      EXPECT_TRUE(same_bits(read(a, ds), read(b, ds))) << ds << " vs " << other;
    EXPECT_EQ(a.root().open_dataset("udwadia_kalaba/steps").read<int64_t>(),
              b.root().open_dataset("udwadia_kalaba/steps").read<int64_t>());
  }
  for (const char* stats_only : {"d.h5", "e.h5"}) {
    const File d = File::open_ro((dir / stats_only).string());
    EXPECT_EQ(d.root().attr_string("output_mode"), "statistics");
    EXPECT_FALSE(d.root().exists("udwadia_kalaba/q"));
    EXPECT_FALSE(d.root().exists("udwadia_kalaba/energy"));
    EXPECT_TRUE(d.root().exists("udwadia_kalaba/status"));
    EXPECT_EQ(d.root().attr_int64("output_bytes"), 0);
  }
  EXPECT_EQ(a.root().attr_string("output_mode"), "full");
  // the drift statistic is the model's (rolling coin): the device's streamed
  // least-squares slope of x(t) and band of y(t) equal a direct fit of the
  // trajectories in the file, and the ratio uses g sin(slope) / (3 theta_dot(0))
  const auto vel = read(a, "statistics/udwadia_kalaba/drift_velocity");
  const auto band = read(a, "statistics/udwadia_kalaba/band");
  const auto ratio = read(a, "statistics/udwadia_kalaba/drift_ratio");
  const auto q = read(a, "udwadia_kalaba/q"), qd0 = read(a, "initial/qdot0");
  const auto t = read(a, "udwadia_kalaba/time");
  const size_t N = 2500, nk = t.size(), nc = 4;
  ASSERT_EQ(vel.size(), N);
  ASSERT_EQ(q.size(), N * nk * nc);
  const double slope_angle = a.root().attr_double("param_slope"),
               g = a.root().attr_double("param_g");
  for (size_t i = 0; i < N; i += 7) {
    double st = 0, sx = 0, stt = 0, stx = 0, lo = HUGE_VAL, hi = -HUGE_VAL;
    for (size_t k = 0; k < nk; ++k) {
      const double x = q[(i * nk + k) * nc + 0], y = q[(i * nk + k) * nc + 1];
      st += t[k];
      sx += x;
      stt += t[k] * t[k];
      stx += t[k] * x;
      lo = std::min(lo, y);
      hi = std::max(hi, y);
    }
    const double K = static_cast<double>(nk);
    const double v_ref = (K * stx - st * sx) / (K * stt - st * st);
    EXPECT_NEAR(vel[i], v_ref, 1e-10 * std::max(1.0, std::abs(v_ref))) << i;
    EXPECT_EQ(band[i], hi - lo) << i;
    const double pred = g * std::sin(slope_angle) / (3.0 * qd0[i * nc + 3]);
    EXPECT_NEAR(ratio[i], vel[i] / pred, 1e-14 * std::abs(vel[i] / pred)) << i;
  }
}

TEST(Pipeline, ModeAndFieldsContradictionsAreRefused) {
  const fs::path dir = temp_dir("modes");
  write_file(dir / "c.toml", kConfig);
  Result r = nholo_cmd("check c.toml --set output.mode='\"statistics\"'", dir);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("output.mode"), std::string::npos) << r.output;
  r = nholo_cmd("check c.toml --set output.mode='\"full\"' --set output.fields=[]", dir);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("output.mode"), std::string::npos) << r.output;
  r = nholo_cmd("check c.toml --set output.mode='\"fast\"'", dir);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("statistics"), std::string::npos) << r.output;
  r = nholo_cmd("check c.toml --set 'output.fields=[\"q\", \"q\"]'", dir);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("twice"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "a.h5"));
}

// Without a GPU (this machine, CI): auto runs on OpenMP and says so; cuda is
// a clear error naming what was found, and nothing is written.
TEST(Backend, AutoUsesOpenMPWithoutAGpuAndRecordsIt) {
  const fs::path dir = temp_dir("auto");
  write_file(dir / "c.toml", kConfig);
  const Result r =
      nholo_cmd("run c.toml --set backend.device='\"auto\"' --set ensemble.size=64", dir);
  ASSERT_EQ(r.code, 0) << r.output;
  const File f = File::open_ro((dir / "a.h5").string());
  const std::string backend = f.root().attr_string("backend");
  EXPECT_EQ(f.root().attr_string("backend_requested"), "auto");
  if (backend == "cuda") {
    GTEST_SKIP() << "a CUDA device is visible here (" << f.root().attr_string("device_name")
                 << "): auto chose it; scripts/gpu_check.sh checks that backend";
  }
  EXPECT_EQ(backend, "omp");
  EXPECT_NE(f.root().attr_string("device_name").find("OpenMP"), std::string::npos);
  EXPECT_NE(r.output.find("backend omp"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("auto:"), std::string::npos) << r.output;  // why not the GPU
}

// A build that only checks its GPU code (-DNHOLO_CUDA_CHECK_ONLY=ON,
// scripts/test.sh without a GPU) says so, and auto runs on OpenMP there even
// where a GPU is visible; any other build says nothing of it.
TEST(Backend, DevicesSaysWhetherTheGpuCodeIsForCheckingOnly) {
  const fs::path dir = temp_dir("devices");
  const Result r = nholo_cmd("devices", dir);
  ASSERT_EQ(r.code, 0) << r.output;
  const bool said = r.output.find("-DNHOLO_CUDA_CHECK_ONLY=ON") != std::string::npos;
  EXPECT_EQ(said, NHOLO_TEST_CUDA_CHECK_ONLY != 0) << r.output;
  if (NHOLO_TEST_CUDA_CHECK_ONLY) {
    EXPECT_NE(r.output.find("runs on no GPU"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("backend.device = \"auto\" runs on OpenMP"), std::string::npos)
        << r.output;
  }
}

TEST(Backend, CudaWithoutAUsableGpuIsAClearErrorAndWritesNothing) {
  const fs::path dir = temp_dir("cuda");
  write_file(dir / "c.toml", kConfig);
  const Result r = nholo_cmd("run c.toml --backend cuda --set ensemble.size=64", dir);
  if (r.code == 0) GTEST_SKIP() << "a CUDA device is visible here: scripts/gpu_check.sh tests it";
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("backend.device"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("cuda"), std::string::npos) << r.output;
  // what was found: no device / no driver, or a build without CUDA
  EXPECT_TRUE(r.output.find("CUDA device") != std::string::npos ||
              r.output.find("without CUDA") != std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("accepted"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "a.h5"));
  EXPECT_FALSE(fs::exists(dir / "a.h5.partial"));
  const Result c = nholo_cmd("check c.toml --backend gpu", dir);
  EXPECT_EQ(c.code, 2) << c.output;
  EXPECT_NE(c.output.find("auto, omp, cpp, cuda"), std::string::npos) << c.output;
}

// A device that fails mid-run (a CUDA error or kernel fault; injected here on
// the CPU backend through the NHOLO_FAILPOINT_DEVICE_FAULT testing aid) ends
// the run with exit code 3 and a clear message, and leaves a valid .partial
// marked with the fault, holding every slice finished before it.
TEST(Pipeline, DeviceFaultLeavesAValidMarkedPartialFile) {
  const fs::path dir = temp_dir("fault");
  write_file(dir / "c.toml", kConfig);
  // 1 MB budget: slices of 1024; window 4: 4 windows per slice (13 saves);
  // window 6 (counted per formulation) is the third window of the second slice
  const Result r = nholo_cmd(
      "run c.toml --set output.memory_budget_mb=1 --set output.window=4 "
      "--set 'formulations=[\"udwadia_kalaba\"]'",
      dir, "NHOLO_FAILPOINT_DEVICE_FAULT=6");
  EXPECT_EQ(r.code, 3) << r.output;
  EXPECT_NE(r.output.find("the device failed"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("injected fault at window 6"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "a.h5"));
  ASSERT_TRUE(fs::exists(dir / "a.h5.partial"));
  const File f = File::open_ro((dir / "a.h5.partial").string());
  EXPECT_EQ(f.root().attr_int64("complete"), 0);
  EXPECT_NE(f.root().attr_string("fault").find("injected fault"), std::string::npos);
  EXPECT_EQ(f.root().attr_int64("completed_trajectories"), 1024);
  const auto st = f.root().open_dataset("udwadia_kalaba/status").read<int32_t>();
  const auto traj = f.root().open_dataset("udwadia_kalaba/trajectory").read<int64_t>();
  ASSERT_EQ(st.size(), 2500u);
  for (size_t i = 0; i < st.size(); ++i) {
    EXPECT_EQ(st[i], i < 1024 ? 0 : 5) << i;  // ok, then not_run
    EXPECT_EQ(traj[i], static_cast<int64_t>(i));
  }
  // the finished slice's data are there, the rest NaN-free fill is not claimed
  const auto q = read(f, "udwadia_kalaba/q");
  for (size_t i = 0; i < 1024; ++i) EXPECT_TRUE(std::isfinite(q[(i * 13 + 12) * 4 + 0])) << i;
  const auto sg = f.root().open_group("statistics/udwadia_kalaba");
  EXPECT_EQ(sg.attr_int64("status_ok"), 1024);
  EXPECT_EQ(sg.attr_int64("status_not_run"), 2500 - 1024);
  const Result st_out = nholo_cmd("stats a.h5.partial", dir);
  EXPECT_EQ(st_out.code, 0) << st_out.output;
  EXPECT_NE(st_out.output.find("INCOMPLETE (the device failed"), std::string::npos)
      << st_out.output;
}

}  // namespace

// Initial states are completed (and projected, rejected, or refused) on the
// run's threads: any number of threads gives the same file, bit for bit, the
// same counts, and with on_violation = "error" the error of the first
// trajectory that violates the constraints. 5000 Appell particles from a
// state file, two of them (3000 and 4000) off the constraint zd^2 = xd^2 + yd^2.
TEST(InitialStates, CompletedTheSameOnAnyNumberOfThreads) {
  const fs::path dir = temp_dir("initial_threads");
  std::ostringstream rows;
  rows << "q0.x q0.y q0.z qd0.x qd0.y qd0.z\n";
  for (int i = 0; i < 5000; ++i) {
    const double s = 0.5 + 0.1 * (i % 7);
    if (i == 3000 || i == 4000)
      rows << "0 0 10 " << s << " " << s << " " << s << "\n";
    else
      rows << "0 0 10 " << 0.6 * s << " " << 0.8 * s << " " << s << "\n";
  }
  write_file(dir / "states.txt", rows.str());
  write_file(dir / "c.toml", std::string(R"(model = "appell"
formulations = ["udwadia_kalaba"]
)") + nholo_test::kAppellParams + R"([time]
t_end = 0.02
save_every = 0.01
[ensemble]
sampler = "file"
file = "states.txt"
on_violation = "project"
[output]
path = "t1.h5"
)");
  for (const char* t : {"1", "2", "3"}) {
    const Result r = nholo_cmd(
        std::string("run -q c.toml --threads ") + t + " --set output.path=t" + t + ".h5", dir);
    ASSERT_EQ(r.code, 0) << r.output;
    const File f = File::open_ro((dir / ("t" + std::string(t) + ".h5")).string());
    EXPECT_EQ(f.root().attr_int64("initial_states_projected"), 2) << t << " threads";
    EXPECT_EQ(f.root().attr_int64("initial_states_rejected"), 0) << t << " threads";
    if (std::string(t) != "1") {
      const Result same =
          nholo_test::fault_check("same", dir / "t1.h5", dir / ("t" + std::string(t) + ".h5"));
      EXPECT_EQ(same.code, 0) << t << " threads: " << same.output;
    }
  }
  for (const char* t : {"1", "2", "3"}) {
    const Result r =
        nholo_cmd(std::string("run -q c.toml --threads ") + t +
                      " --set ensemble.on_violation='\"error\"' --set output.path=e.h5",
                  dir);
    EXPECT_EQ(r.code, 2) << t << " threads: " << r.output;
    EXPECT_NE(r.output.find("trajectory 3000: initial state violates the constraints"),
              std::string::npos)
        << t << " threads: " << r.output;
    EXPECT_FALSE(fs::exists(dir / "e.h5")) << t << " threads";
  }
  // rejected: counted, and the run says by what rule
  const Result rej = nholo_cmd(
      "run c.toml --threads 1 --set ensemble.on_violation='\"reject\"' --set output.path=r.h5",
      dir);
  ASSERT_EQ(rej.code, 0) << rej.output;
  EXPECT_NE(rej.output.find("0 projected, 2 rejected"), std::string::npos) << rej.output;
  EXPECT_NE(rej.output.find("the 2 rejected initial states violate the constraints by more than "
                            "1e-13 x (1 + |q| + |qd|)"),
            std::string::npos)
      << rej.output;
}

// Slices of at least 64 blocks are whole multiples of 64 blocks (of 1024
// trajectories), so that the result's per-trajectory datasets that are not
// fields can be chunked by up to 65,536 trajectories, dividing every slice:
// HDF5 1.10 walks a dataset's chunks from its first to find one's place,
// which the writer does for each chunk it writes in place and the run's last
// step for each it leaves alone, so the count of chunks matters (10^7 coins
// in chunks of 1024: 6.8 s for the last step). Chunks hold at most 1 MiB.
TEST(Pipeline, LargeSlicesAreAlignedAndPerTrajectoryChunksLarge) {
  nholo_test::CoinConfig c = nholo_test::spinning_coins();
  c.formulations = {"udwadia_kalaba"};
  c.size = 10000000;
  for (double budget : {1.0, 40.0, 512.0, 4096.0}) {
    const nholo::RunConfig cfg =
        nholo::parse_config(c.text(), {"output.memory_budget_mb=" + std::to_string(budget)});
    const nholo::detail::SlicePlan p = nholo::detail::plan_slices(cfg, 0, 4, 2, 10);
    EXPECT_EQ(p.slice % 1024, 0) << budget;
    if (p.slice >= nholo::detail::kSliceAlign) {
      EXPECT_EQ(p.slice % nholo::detail::kSliceAlign, 0) << budget;
    }
  }
  // one slice of 150,000 coins: as many rows per chunk as fit 1 MiB, at most 65,536
  const fs::path dir = temp_dir("row_chunks");
  c.size = 150000;
  c.t_end = 0.01;
  c.save_every = 0.01;
  c.fields = std::vector<std::string>{};
  write_file(dir / "c.toml", c.text());
  ASSERT_EQ(nholo_cmd("run -q c.toml --threads 2", dir).code, 0);
  const File f = File::open_ro((dir / "out.h5").string());
  const auto rows = [&](const std::string& ds) {
    return f.root().open_dataset(ds).chunk_dims().at(0);
  };
  EXPECT_EQ(rows("udwadia_kalaba/status"), 65536u);  // 4 bytes a row
  EXPECT_EQ(rows("udwadia_kalaba/steps"), 65536u);   // 8 bytes
  EXPECT_EQ(rows("initial/q0"), 32768u);             // 4 coordinates: 32 bytes
  EXPECT_EQ(rows("statistics/udwadia_kalaba/band"), 65536u);
  const std::vector<int32_t> st = f.root().open_dataset("udwadia_kalaba/status").read<int32_t>();
  EXPECT_EQ(std::count(st.begin(), st.end(), 0),
            150000);  // every one ok, read through the checksums
}
