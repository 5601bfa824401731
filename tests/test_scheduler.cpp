// Tests of the window scheduler (backend.steps_per_launch, kernels/ensemble.hpp
// and the CPU backend's launches in host/backends/cpu_ensemble.hpp, the path the
// CUDA backend takes too): a window integrated in launches of at most k steps
// per trajectory, finished trajectories dropping out, gives the same file bit
// for bit as a window in one launch, whatever k, for adaptive and fixed-step
// methods, formulations with extended states, and trajectories stopped by
// integrator.max_steps inside a window (whose count must carry across
// launches).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "host/backends/launch_pacer.hpp"
#include "host/io/h5.hpp"
#include "kernels/status.hpp"
#include "tests/coin_config.hpp"
#include "tests/nholo_cli.hpp"

namespace fs = std::filesystem;
using nholo::h5::File;

namespace {

using nholo_test::Result;
using nholo_test::write_file;

// Appell's particle: the trajectories that pass near rest need many more
// steps than the others, and max_steps = 20 per output interval stops a few
// of them inside a window.
const std::string kAppell = std::string(R"(model = "appell"
formulations = ["udwadia_kalaba", "lagrange_multiplier"]
)") + nholo_test::kAppellParams +
                            R"([time]
t_end = 1.2
save_every = 0.05
[integrator]
method = "dopri5"
rtol = 1e-11
atol = 1e-12
drift = "project"
max_steps = 20
[ensemble]
size = 96
seed = 5
on_violation = "project"
[ensemble.q0]
x = 0.0
y = 0.0
z = 10.0
[ensemble.qd0]
x = { uniform = [-1.0, 1.0] }
y = { uniform = [-1.0, 1.0] }
z = { uniform = [0.5, 2.0] }
[output]
path = "a0.h5"
window = 4
fields = ["q", "qdot", "energy"]
)";

// Hamel's skate with fixed steps (RK4) under five formulations, the
// vakonomic and embedded ones integrating extended states.
const char* kSkate = R"(model = "skate"
formulations = ["udwadia_kalaba", "conflated", "lagrange_multiplier", "vakonomic", "null_space"]
[params]
mass = 1.0
offset = 0.5
inertia = 0.8
g = 9.81
slope = 0.0
[time]
t_end = 1.0
save_every = 0.1
[integrator]
method = "rk4"
dt = 0.01
drift = "project"
[ensemble]
size = 40
seed = 1
[ensemble.q0]
x = 0.0
y = 0.0
theta = { uniform = [-1.2, 1.2] }
[ensemble.qd0]
x = { uniform = [0.5, 1.5] }
theta = { uniform = [-2.0, 2.0] }
[output]
path = "s0.h5"
window = 3
fields = ["q", "qdot", "multiplier"]
)";

Result run(const std::string& args, const fs::path& dir) {
  return nholo_test::run_nholo(args, dir);
}

int64_t launches(const fs::path& file) {
  return File::open_ro(file.string()).root().attr_int64("integration_launches");
}

std::vector<int32_t> status(const fs::path& file, const std::string& form) {
  return File::open_ro(file.string()).root().open_dataset(form + "/status").read<int32_t>();
}

// Runs cfg (output prefix p) with steps_per_launch 0 (one launch per window),
// 1, 7 and the default; every file equals the first bit for bit.
void expect_independent_of_steps_per_launch(const fs::path& dir, const std::string& cfg,
                                            const std::string& p) {
  write_file(dir / "c.toml", cfg);
  ASSERT_EQ(run("run -q c.toml --set backend.steps_per_launch=0 --set output.path=" + p + "0.h5",
                dir)
                .code,
            0);
  for (const char* k : {"1", "7", ""}) {
    const std::string out = p + (*k ? k : "default") + ".h5";
    const std::string set = *k ? std::string(" --set backend.steps_per_launch=") + k : "";
    const Result r = run("run -q c.toml" + set + " --set output.path=" + out, dir);
    ASSERT_EQ(r.code, 0) << r.output;
    const Result same = nholo_test::fault_check("same", dir / (p + "0.h5"), dir / out);
    EXPECT_EQ(same.code, 0) << "steps_per_launch " << (*k ? k : "default") << ": " << same.output;
  }
  // the budget was in force: one step per launch takes many more launches
  EXPECT_GT(launches(dir / (p + "1.h5")), 10 * launches(dir / (p + "0.h5")));
}

}  // namespace

TEST(Scheduler, AdaptiveStepsAndMaxStepsBitwiseIndependentOfStepsPerLaunch) {
  const fs::path dir = nholo_test::temp_dir("nholo_scheduler", "appell");
  expect_independent_of_steps_per_launch(dir, kAppell, "a");
  // the case is what it claims: some trajectories stopped at max_steps,
  // most did not
  const std::vector<int32_t> st = status(dir / "a0.h5", "udwadia_kalaba");
  int64_t ok = 0, max_steps = 0;
  for (int32_t s : st) {
    ok += s == static_cast<int32_t>(nholo::Status::ok);
    max_steps += s == static_cast<int32_t>(nholo::Status::max_steps);
  }
  EXPECT_GT(max_steps, 0);
  EXPECT_GT(ok, max_steps);
}

TEST(Scheduler, FixedStepsAndExtendedStatesBitwiseIndependentOfStepsPerLaunch) {
  const fs::path dir = nholo_test::temp_dir("nholo_scheduler", "skate");
  expect_independent_of_steps_per_launch(dir, kSkate, "s");
}

// The GPU's launches are paced (host/backends/launch_pacer.hpp): each gets
// about a quarter second of work from the times of those before it, never
// fewer than one step or more than steps_per_launch per trajectory. The
// launch times here come from a device model: `rate` trajectory-steps a
// second, each active trajectory making at most what it still needs.
TEST(Scheduler, LaunchPacerGivesALaunchAQuarterSecondOfWork) {
  using nholo::LaunchPacer;
  const double target = LaunchPacer::kTargetSeconds;
  {
    LaunchPacer p(1000);
    EXPECT_EQ(p.steps(10000000), 6);          // untimed: 2^26 trajectory-steps
    EXPECT_EQ(p.steps(1000), 1000);           // at most steps_per_launch
    EXPECT_EQ(p.steps(int64_t{1} << 40), 1);  // at least one step
    EXPECT_EQ(p.steps(0), 1000);
    // times in powers of two, so that the expected counts are exact
    const int64_t n = int64_t{1} << 22;
    p.record(n, 8, std::ldexp(1.0, -5));  // 2^-30 s a trajectory-step
    EXPECT_EQ(p.step_seconds(), std::ldexp(1.0, -30));
    EXPECT_EQ(p.steps(n), 64);  // 2^28 trajectory-steps: a quarter second
    EXPECT_EQ(p.steps(n / 64), 1000);
    p.record(100, 1000, 0.001);  // too short to say anything: kept
    p.record(100, 1000, NAN);
    EXPECT_EQ(p.step_seconds(), std::ldexp(1.0, -30));
    p.record(n, 64, 0.5);  // slower: at once
    EXPECT_EQ(p.step_seconds(), std::ldexp(1.0, -29));
    EXPECT_EQ(p.steps(n), 32);
    p.record(n, 32, std::ldexp(1.0, -6));  // 16x faster: by half at most
    EXPECT_EQ(p.step_seconds(), std::ldexp(1.0, -30));
    EXPECT_EQ(LaunchPacer(0).steps(10), 1);  // a budget below one step is one step
  }
  // windows of 10^7 coins needing 54 steps each at 1e9 trajectory-steps a
  // second (an H200's coin kernel), then at 1e8 (a costlier model): every
  // launch after the first of the run takes at most twice the target, the
  // ones in the bulk of a window about the target, and every window ends
  for (const double rate : {1e9, 1e8}) {
    LaunchPacer p(1000);
    const int64_t n = 10000000, need = 54;
    double longest = 0, first = -1;
    for (int window = 0; window < 4; ++window) {
      int64_t done = 0, launches = 0;
      while (done < need) {
        const int64_t L = p.steps(n);
        ASSERT_GE(L, 1);
        ASSERT_LE(L, 1000);
        const int64_t made = std::min(L, need - done);
        const double seconds = static_cast<double>(n) * static_cast<double>(made) / rate;
        if (first < 0)
          first = seconds;
        else
          longest = std::max(longest, seconds);
        p.record(n, L, seconds);
        done += made;
        ASSERT_LT(++launches, 1000) << "a window that does not end";
      }
    }
    EXPECT_DOUBLE_EQ(first, 6e7 / rate);  // floor(2^26 / 10^7) = 6 steps each
    EXPECT_LE(longest, 2 * target + 1e-9) << rate;
    EXPECT_GE(longest, 0.5 * target) << rate;
    EXPECT_NEAR(p.step_seconds(), 1 / rate, 0.5 / rate) << rate;
  }
}

TEST(Scheduler, StepsPerLaunchOutsideItsRangeIsRefused) {
  const fs::path dir = nholo_test::temp_dir("nholo_scheduler", "range");
  write_file(dir / "c.toml", kSkate);
  for (const char* bad : {"-1", "1.5", "2000000000", "'\"many\"'"}) {
    const Result r = run(std::string("run -q c.toml --set backend.steps_per_launch=") + bad, dir);
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_NE(r.output.find("backend.steps_per_launch"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(dir / "s0.h5")) << bad;
  }
}

// backend.cpu_tail (the CUDA backend's CPU tail; on the CPU backends it
// changes nothing): a count of trajectories, 0 for never; anything else is
// refused before a file is made, naming the key and what it accepts.
TEST(Scheduler, CpuTailOutsideItsRangeIsRefused) {
  const fs::path dir = nholo_test::temp_dir("nholo_scheduler", "cpu_tail");
  write_file(dir / "c.toml", kSkate);
  const std::pair<const char*, const char*> cases[] = {
      {"-1", "backend.cpu_tail: must be an integer in [0, 1000000000]"},
      {"2000000000", "backend.cpu_tail: must be an integer in [0, 1000000000]"},
      {"0.5", "backend.cpu_tail: expected an integer, got a number"},
      {"'\"auto\"'", "backend.cpu_tail: expected an integer, got a string"}};
  for (const auto& [bad, message] : cases) {
    const Result r = run(std::string("run -q c.toml --set backend.cpu_tail=") + bad, dir);
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(dir / "s0.h5")) << bad;
  }
  const Result ok = run("run -q c.toml --set backend.cpu_tail=0", dir);
  EXPECT_EQ(ok.code, 0) << ok.output;
}
