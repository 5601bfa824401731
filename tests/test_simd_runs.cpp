// Runs of the nholo command with the CPU backend's SIMD lanes
// (backend.simd, docs/usage.md "SIMD lanes"): a trajectory's result does not
// depend on threads, slices, launches, lane width or a resume (every dataset
// bit for bit); lanes and `off` agree to rounding, and bit for bit on a model
// without sin, cos, ... of the state; what the CPU lacks is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "host/backends/simd_choice.hpp"
#include "host/io/h5.hpp"
#include "tests/coin_config.hpp"
#include "tests/nholo_cli.hpp"

namespace fs = std::filesystem;
using nholo_test::run_nholo;
using nholo_test::write_file;

namespace {

// the coin's ensemble as the lanes run it: DOPRI5, no projection, more
// trajectories than one block of lanes
std::string lane_coin_config() {
  nholo_test::CoinConfig c = nholo_test::spinning_coins();
  c.formulations = {"udwadia_kalaba"};
  c.params = {{"mass", 1.0}, {"radius", 0.5}, {"g", 9.81}, {"slope", 0.3}};
  c.t_end = 4.0;
  c.save_every = 0.05;  // 80 saves: 5 windows (a fault in the third leaves two)
  c.use_integrator("dopri5", 1e-10, 1e-12);
  c.drift = "none";
  c.size = 700;
  c.seed = 11;
  c.path = "a.h5";
  c.fields = std::vector<std::string>{"q", "qdot", "energy"};
  return c.text();
}

nholo_test::Result run(const fs::path& dir, const std::string& out, const std::string& extra,
                       const std::string& env = "") {
  return run_nholo("run -q c.toml --set output.path=" + out + " " + extra, dir, env);
}

// exit code of `nholo diff a b --rtol r`: 0 when every dataset agrees
int diff(const fs::path& dir, const std::string& a, const std::string& b, const char* rtol) {
  return run_nholo("diff " + a + " " + b + " --rtol " + rtol, dir).code;
}

std::string root_attr(const fs::path& file, const char* name) {
  return nholo::h5::File::open_ro(file.string()).root().attr_string(name);
}

std::vector<double> dataset(const fs::path& file, const char* name) {
  return nholo::h5::File::open_ro(file.string()).root().open_dataset(name).read<double>();
}

std::vector<int32_t> int_dataset(const fs::path& file, const char* name) {
  return nholo::h5::File::open_ro(file.string()).root().open_dataset(name).read<int32_t>();
}

// `nholo <command>` in dir with the lanes into lanes.h5 and one trajectory at
// a time into off.h5: whether both succeeded
bool run_lanes_and_off(const fs::path& dir, const std::string& command) {
  return run_nholo(command + " --set output.path=lanes.h5", dir).code == 0 &&
         run_nholo(command + " --set output.path=off.h5 --set backend.simd=off", dir).code == 0;
}

TEST(SimdRuns, LanesGiveTheSameBitsWhateverTheThreadsSlicesLaunchesWidthAndResume) {
  const nholo::SimdIsa best = nholo::cpu_simd_isa();
  if (best == nholo::SimdIsa::off) {
    std::printf("SKIPPED: this CPU has no AVX2 + FMA (%s): no SIMD lanes to test\n",
                nholo::cpu_vector_units().c_str());
    return;
  }
  const fs::path dir = nholo_test::temp_dir("nholo_simd", "bits");
  write_file(dir / "c.toml", lane_coin_config());
  ASSERT_EQ(run(dir, "a.h5", "--threads 1").code, 0);
  EXPECT_EQ(root_attr(dir / "a.h5", "simd"), nholo::simd_isa_name(best));
  // two threads, slices of 1024 -> a memory budget that cuts 700 into several
  // slices, launches of 37 steps (lanes leave and are refilled mid-window)
  auto r = run(dir, "b.h5",
               "--threads 2 --set output.memory_budget_mb=1 --set backend.steps_per_launch=37");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(diff(dir, "a.h5", "b.h5", "0"), 0);
  // the other width: 4 lanes where the CPU has AVX-512 too
  if (best == nholo::SimdIsa::avx512) {
    ASSERT_EQ(run(dir, "c.h5", "--set backend.simd=avx2").code, 0);
    EXPECT_EQ(root_attr(dir / "c.h5", "simd"), "avx2");
    EXPECT_EQ(diff(dir, "a.h5", "c.h5", "0"), 0);
  } else {
    std::printf("[ note ] no AVX-512 here: 8 lanes against 4 not compared\n");
  }
  // a device fault in the third window, then --resume
  r = run(dir, "d.h5", "--set output.memory_budget_mb=1", "NHOLO_FAILPOINT_DEVICE_FAULT=2");
  ASSERT_EQ(r.code, 3) << r.output;
  r = run(dir, "d.h5", "--set output.memory_budget_mb=1 --resume");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(diff(dir, "a.h5", "d.h5", "0"), 0);
  // one trajectory at a time: the same motion to rounding (SLEEF's sin and
  // cos on the lanes, glibc's here), not the same bits
  ASSERT_EQ(run(dir, "off.h5", "--set backend.simd=off").code, 0);
  EXPECT_EQ(root_attr(dir / "off.h5", "simd"), "off");
  EXPECT_EQ(diff(dir, "a.h5", "off.h5", "0"), 1);
  EXPECT_EQ(diff(dir, "a.h5", "off.h5", "1e-11"), 0);
  fs::remove_all(dir);
}

TEST(SimdRuns, AModelWithoutTranscendentalFunctionsOfTheStateGivesTheScalarBits) {
  if (nholo::cpu_simd_isa() == nholo::SimdIsa::off) {
    std::printf("SKIPPED: this CPU has no AVX2 + FMA: no SIMD lanes to test\n");
    return;
  }
  // Udwadia & Wanichanon's example 3: arithmetic only, its constraint loses
  // rank where yd = zd = 0 (those lanes take the scalar code); without and
  // with its example's drift projection. The block on the inclined plane
  // (a position constraint and Coulomb friction) with its example's projection.
  const fs::path dir = nholo_test::temp_dir("nholo_simd", "example3");
  const fs::path examples = fs::path(NHOLO_SOURCE_DIR) / "examples";
  write_file(dir / "c.toml", nholo_test::read_text(examples / "udwadia_example3.toml"));
  write_file(dir / "block.toml", nholo_test::read_text(examples / "incline_block.toml"));
  for (const char* drift : {"none", "project"}) {
    const std::string common =
        std::string("--set integrator.drift=") + drift + " --set ensemble.size=300 ";
    ASSERT_EQ(run(dir, "lanes.h5", common).code, 0);
    ASSERT_EQ(run(dir, "off.h5", common + "--set backend.simd=off").code, 0);
    EXPECT_NE(root_attr(dir / "lanes.h5", "simd"), "off");
    EXPECT_EQ(diff(dir, "lanes.h5", "off.h5", "0"), 0) << drift;
    fs::remove(dir / "lanes.h5");
    fs::remove(dir / "off.h5");
  }
  ASSERT_TRUE(run_lanes_and_off(dir, "run -q block.toml --set ensemble.size=64"));
  EXPECT_NE(root_attr(dir / "lanes.h5", "simd"), "off");
  EXPECT_EQ(diff(dir, "lanes.h5", "off.h5", "0"), 0);
  fs::remove_all(dir);
}

// Events in the lanes (the event functions' values at each step's end on
// the lanes, the rest of each accepted step's events lane by lane, as one
// trajectory at a time runs them): the block on the inclined plane, which
// slides up and comes to rest (arithmetic only, events included: the scalar
// bits), with a `record` event at heights 0.5 and 1, a `stop` event that ends
// most trajectories at a height and a step limit per save interval that
// ends those that come to rest before t = 0.7 (max_steps: the friction's
// sign switches there), so that lanes are refilled around trajectories that
// stopped, failed or ended early; DOPRI5 (f at the step's end is its
// last stage), DOP853 (f there evaluated for the events) and RK4 (fixed
// steps, the interpolant's end slope its last stage); then the coin's
// events (SLEEF's sin and cos, in its motion and its event function: the
// motion and crossings of `off` to rounding).
TEST(SimdRuns, EventsInLanesGiveTheScalarBits) {
  if (nholo::cpu_simd_isa() == nholo::SimdIsa::off) {
    std::printf("SKIPPED: this CPU has no AVX2 + FMA: no SIMD lanes to test\n");
    return;
  }
  const fs::path dir = nholo_test::temp_dir("nholo_simd", "events");
  const fs::path examples = fs::path(NHOLO_SOURCE_DIR) / "examples";
  std::string block = nholo_test::read_text(examples / "incline_block.toml");
  block += R"toml(
[[events]]
name = "height"
expr = "(y - 0.5) * (y - 1)"
direction = "both"
action = "record"
max_records = 6

[[events]]
name = "top"
expr = "y - 1.2"
direction = "up"
action = "stop"
max_records = 1
)toml";
  write_file(dir / "block.toml", block);
  const std::string common =
      "run -q block.toml --set ensemble.size=97 --set time.t_end=0.7 --set time.save_every=0.1 "
      "--set integrator.max_steps=60 --set 'formulations=[\"udwadia_kalaba\"]' ";
  for (const char* method : {"dopri5", "dop853", "rk4"}) {
    const bool fixed = std::string(method) == "rk4";  // 25 steps per save interval
    const std::string run_block =
        common + "--set integrator.method=" + method + (fixed ? " --set integrator.dt=0.004" : "");
    ASSERT_TRUE(run_lanes_and_off(dir, run_block)) << method;
    EXPECT_EQ(diff(dir, "lanes.h5", "off.h5", "0"), 0) << method;
    // the ensemble is heterogeneous: stopped, failed and whole trajectories
    const auto status = int_dataset(dir / "lanes.h5", "udwadia_kalaba/status");
    const auto count = int_dataset(dir / "lanes.h5", "udwadia_kalaba/events/height/count");
    int by_status[8] = {};
    for (int32_t st : status) ++by_status[std::min<int32_t>(st, 7)];
    EXPECT_GT(by_status[0], 0) << method;  // ok
    // max_steps (fixed steps: as many in every interval, none reach it)
    if (!fixed) {
      EXPECT_GT(by_status[1], 0) << method;
    }
    EXPECT_GT(by_status[7], 0) << method;  // stopped by "top"
    EXPECT_GT(*std::max_element(count.begin(), count.end()), 1) << method;
    fs::remove(dir / "lanes.h5");
    fs::remove(dir / "off.h5");
  }
  // a sweep of the friction ([ensemble.params]: one lane per thread) with an
  // event that reads it (the trajectory's value, evaluated on the lane)
  std::string sweep = nholo_test::read_text(examples / "incline_block.toml");
  sweep.erase(sweep.find("friction = 0.3\n"), 15);  // (varied below)
  sweep += R"toml(
[ensemble.params]
friction = { uniform = [0.1, 0.5] }

[[events]]
name = "level"
expr = "y - 2 * friction"
direction = "both"
action = "record"
max_records = 2
)toml";
  write_file(dir / "sweep.toml", sweep);
  ASSERT_TRUE(run_lanes_and_off(
      dir, "run -q sweep.toml --set ensemble.size=40 --set 'formulations=[\"udwadia_kalaba\"]'"));
  EXPECT_NE(root_attr(dir / "lanes.h5", "simd"), "off");
  EXPECT_EQ(diff(dir, "lanes.h5", "off.h5", "0"), 0);
  const auto level = int_dataset(dir / "lanes.h5", "udwadia_kalaba/events/level/count");
  EXPECT_GT(std::count(level.begin(), level.end(), 1), 0);  // crossed once, at its own level
  EXPECT_GT(std::count(level.begin(), level.end(), 0), 0);  // never got that high
  fs::remove(dir / "lanes.h5");
  fs::remove(dir / "off.h5");
  write_file(dir / "coin.toml", nholo_test::read_text(examples / "rolling_coin_events.toml"));
  ASSERT_TRUE(run_lanes_and_off(dir, "run -q coin.toml --set ensemble.size=40 --set time.t_end=8"));
  EXPECT_EQ(diff(dir, "lanes.h5", "off.h5", "0"), 1);  // the lanes did integrate lanes.h5
  EXPECT_EQ(diff(dir, "lanes.h5", "off.h5", "1e-9"), 0);
  fs::remove_all(dir);
}

// A model file's Udwadia–Kalaba ensemble in the lanes of its plugin's lane
// add-on (host/model_files/plugin_lanes_define.hpp): compiled once, then
// cached; the same bits whatever the threads, launches and lane width; the
// motion of `off` to rounding; nothing compiled for a run the lanes do not
// integrate (another formulation).
TEST(SimdRuns, AModelFileIntegratesInTheLanesOfItsAddOn) {
  const nholo::SimdIsa best = nholo::cpu_simd_isa();
  if (best == nholo::SimdIsa::off) {
    std::printf("SKIPPED: this CPU has no AVX2 + FMA: no SIMD lanes to test\n");
    return;
  }
  const fs::path dir = nholo_test::temp_dir("nholo_simd", "model_file");
  const std::string file = std::string(NHOLO_SOURCE_DIR) + "/tests/model_files/rolling_coin.toml";
  // with an event (its end values evaluated in the add-on's lanes)
  const std::string events = R"toml(
[[events]]
name = "half_turn"
expr = "sin(theta)"
direction = "both"
action = "record"
max_records = 8
)toml";
  std::string text = lane_coin_config() + events;
  text.replace(text.find("model = \"rolling_coin\""), 22, "model = \"" + file + "\"");
  write_file(dir / "c.toml", text);
  // the add-on's logic, not the optimizer's: plugins at -O1 (the same bits
  // as -O3: no FMA contraction, no fast math; 3x quicker to build)
  const std::string env =
      "NHOLO_CACHE_DIR='" + (dir / "cache").string() + "' NHOLO_PLUGIN_CXXFLAGS=-O1";
  auto r = run_nholo("run c.toml --threads 1 --set output.path=a.h5", dir, env);
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string isa = nholo::simd_isa_name(best);
  EXPECT_NE(r.output.find("compiling its SIMD lane add-on (" + isa), std::string::npos) << r.output;
  EXPECT_EQ(root_attr(dir / "a.h5", "simd"), isa);
  // cached: nothing compiled; two threads, launches of 37 steps: the same bits
  r = run_nholo("run c.toml --threads 2 --set backend.steps_per_launch=37 --set output.path=b.h5",
                dir, env);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output.find("compiling"), std::string::npos) << r.output;
  EXPECT_EQ(diff(dir, "a.h5", "b.h5", "0"), 0);
  if (best == nholo::SimdIsa::avx512) {
    ASSERT_EQ(run(dir, "c.h5", "--set backend.simd=avx2", env).code, 0);
    EXPECT_EQ(diff(dir, "a.h5", "c.h5", "0"), 0);
  } else {
    std::printf("[ note ] no AVX-512 here: 8 lanes against 4 not compared\n");
  }
  // one trajectory at a time: the same motion to rounding, other bits (so
  // the lanes did integrate a.h5)
  ASSERT_EQ(run(dir, "off.h5", "--set backend.simd=off", env).code, 0);
  EXPECT_EQ(diff(dir, "a.h5", "off.h5", "0"), 1);
  EXPECT_EQ(diff(dir, "a.h5", "off.h5", "1e-11"), 0);
  // the built-in twin in its lanes: the same motion and crossings
  write_file(dir / "builtin.toml", lane_coin_config() + events);
  ASSERT_EQ(run_nholo("run -q builtin.toml --set output.path=twin.h5", dir, env).code, 0);
  const char* count = "udwadia_kalaba/events/half_turn/count";
  const auto crossings = int_dataset(dir / "a.h5", count);
  EXPECT_EQ(crossings, int_dataset(dir / "twin.h5", count));
  EXPECT_GT(*std::max_element(crossings.begin(), crossings.end()), 1);
  for (const char* field :
       {"udwadia_kalaba/q", "udwadia_kalaba/qdot", "udwadia_kalaba/events/half_turn/time"}) {
    const auto a = dataset(dir / "a.h5", field), twin = dataset(dir / "twin.h5", field);
    ASSERT_EQ(a.size(), twin.size());
    double worst = 0, scale = 1;
    for (size_t i = 0; i < a.size(); ++i) {
      worst = std::max(worst, std::abs(a[i] - twin[i]));
      scale = std::max(scale, std::abs(a[i]));
    }
    EXPECT_LT(worst / scale, 1e-11) << field;
  }
  // a run the lanes do not integrate (no Udwadia–Kalaba formulation)
  // compiles no add-on
  fs::remove_all(dir / "cache");
  r = run_nholo("run c.toml --set 'formulations=[\"lagrange_multiplier\"]' --set output.path=p.h5",
                dir, env);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output.find("lane add-on"), std::string::npos) << r.output;
  fs::remove_all(dir);
}

// [lyapunov] runs integrate the tangent system in lanes (the state and its
// tangent vectors on dual numbers over the lanes: kernels/lane_tangent.hpp),
// through the lane add-on of the plugin with the tangent systems: the block
// on the inclined plane with its example's projection (arithmetic only),
// two exponents (one: tests/test_lane_tangent.cpp and the Lyapunov runs'
// tests, which run in the lanes where the CPU has them), gives `off`'s bits,
// the running estimates and the per-trajectory exponents included.
TEST(SimdRuns, LyapunovRunsIntegrateTheTangentSystemInLanes) {
  const nholo::SimdIsa best = nholo::cpu_simd_isa();
  if (best == nholo::SimdIsa::off) {
    std::printf("SKIPPED: this CPU has no AVX2 + FMA: no SIMD lanes to test\n");
    return;
  }
  const fs::path dir = nholo_test::temp_dir("nholo_simd", "lyapunov");
  const fs::path examples = fs::path(NHOLO_SOURCE_DIR) / "examples";
  write_file(dir / "block.toml", nholo_test::read_text(examples / "incline_block.toml") +
                                     "\n[lyapunov]\nenabled = true\nrenormalize_every = 0.05\n");
  // the add-on's logic, not the optimizer's (plugins at -O1: the same bits)
  const std::string env =
      "NHOLO_CACHE_DIR='" + (dir / "cache").string() + "' NHOLO_PLUGIN_CXXFLAGS=-O1";
  const std::string isa = nholo::simd_isa_name(best);
  const std::string run_block =
      "run block.toml --set 'formulations=[\"udwadia_kalaba\"]' --set ensemble.size=64 "
      "--set 'output.fields=[\"q\", \"lyapunov_estimate\"]' --set lyapunov.exponents=2";
  const auto r = run_nholo(run_block + " --set output.path=lanes.h5", dir, env);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("SIMD lane add-on (" + isa), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("tangent system)"), std::string::npos) << r.output;
  EXPECT_EQ(root_attr(dir / "lanes.h5", "simd"), isa);
  ASSERT_EQ(
      run_nholo(run_block + " -q --set output.path=off.h5 --set backend.simd=off", dir, env).code,
      0);
  EXPECT_EQ(diff(dir, "lanes.h5", "off.h5", "0"), 0);
  const auto lambda = dataset(dir / "lanes.h5", "udwadia_kalaba/lyapunov_estimate");
  ASSERT_EQ(lambda.size(), static_cast<size_t>(64 * 81 * 2));  // (saves at t = 0 .. 0.4)
  EXPECT_TRUE(std::isfinite(lambda.back()));
  fs::remove_all(dir);
}

// A lane add-on that cannot be built (here: a compiler that refuses the
// instruction set's flags) leaves the run one trajectory at a time, said,
// with the bits of `off`.
TEST(SimdRuns, AModelFileWhoseLaneAddOnCannotBeBuiltRunsWithoutLanes) {
  if (nholo::cpu_simd_isa() == nholo::SimdIsa::off) {
    std::printf("SKIPPED: this CPU has no AVX2 + FMA: no lane add-on is built\n");
    return;
  }
  const fs::path dir = nholo_test::temp_dir("nholo_simd", "no_addon");
  const std::string file = std::string(NHOLO_SOURCE_DIR) + "/tests/model_files/rolling_coin.toml";
  std::string text = lane_coin_config();
  text.replace(text.find("model = \"rolling_coin\""), 22, "model = \"" + file + "\"");
  write_file(dir / "c.toml", text);
  write_file(dir / "cxx.sh",
             "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = -mavx2 ] && { echo 'no AVX2 here' >&2; "
             "exit 1; }; done\nexec c++ \"$@\"\n");
  fs::permissions(dir / "cxx.sh", fs::perms::owner_exec, fs::perm_options::add);
  const std::string env = "NHOLO_CACHE_DIR='" + (dir / "cache").string() + "' NHOLO_CXX='" +
                          (dir / "cxx.sh").string() + "' NHOLO_PLUGIN_CXXFLAGS=-O1";
  const auto r = run_nholo("run c.toml --set output.path=a.h5", dir, env);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("could not be built, so its runs integrate one trajectory at a time"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("no AVX2 here"), std::string::npos) << r.output;
  ASSERT_EQ(run(dir, "off.h5", "--set backend.simd=off", env).code, 0);
  EXPECT_EQ(diff(dir, "a.h5", "off.h5", "0"), 0);
  fs::remove_all(dir);
}

TEST(SimdRuns, WhatTheCpuLacksOrTheKeyDoesNotKnowIsRefused) {
  const fs::path dir = nholo_test::temp_dir("nholo_simd", "refused");
  write_file(dir / "c.toml", lane_coin_config());
  auto r = run(dir, "x.h5", "--set backend.simd=sse4");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("backend.simd"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("avx512"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "x.h5"));
  if (nholo::cpu_simd_isa() != nholo::SimdIsa::avx512) {
    r = run(dir, "y.h5", "--set backend.simd=avx512");
    EXPECT_NE(r.code, 0) << r.output;
    EXPECT_NE(r.output.find("no AVX-512F"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(dir / "y.h5"));
  } else {
    std::printf("[ note ] this CPU has AVX-512: its refusal is not exercised here\n");
  }
  fs::remove_all(dir);
}

}  // namespace
