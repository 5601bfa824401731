// Model files through the nholo command (docs/models.md): every built-in model
// written as a model file (tests/model_files/) gives the built-in's
// trajectories; the three example systems of examples/models/ against
// independent results (a closed form, Newton–Euler equations); the plugin
// cache (no recompilation, rebuild on edit, damaged plugins refused,
// concurrent builds); a parameter left out of a model file's range refused.
//
// The plugins of the fixed model files are cached in NHOLO_TEST_PLUGIN_CACHE
// (under the build folders, shared by the test stages of one checkout); the
// cache tests use a fresh folder of their own.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "host/backends/simd_choice.hpp"
#include "host/config/model_info.hpp"
#include "host/io/h5.hpp"
#include "host/model_files/plugin_abi.h"
#include "nholo_cli.hpp"

namespace {

using nholo_test::read_text;
using nholo_test::Result;
using nholo_test::write_file;
namespace fs = std::filesystem;

fs::path temp_dir(const std::string& name) { return nholo_test::temp_dir("nholo_model_files", name); }

std::string shared_cache_env() { return "NHOLO_CACHE_DIR='" + std::string(NHOLO_TEST_PLUGIN_CACHE) + "'"; }

Result nholo(const std::string& args, const fs::path& dir, const std::string& env = shared_cache_env()) {
  return nholo_test::run_nholo(args, dir, env);
}

std::vector<double> read(const fs::path& file, const std::string& dataset) {
  auto f = nholo::h5::File::open_ro(file.string());
  return f.root().open_dataset(dataset).read<double>();
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

// max |a - b| / max(1, max |a|)
double rel_diff(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return 1e300;
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d / std::max(1.0, max_abs(a));
}

const fs::path kSource = NHOLO_SOURCE_DIR;

// a plugin's SIMD lane add-on in the cache (plugin.cpp lane_plugin)
bool is_lane_addon(const fs::path& p) {
  return p.filename().string().find("-lanes-") != std::string::npos;
}

int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The example config of a built-in model (the redundant ones borrow their
// base model's).
fs::path example_of(const std::string& model) {
  if (model == "rolling_coin_redundant") return kSource / "examples" / "rolling_coin.toml";
  if (model == "skate_redundant") return kSource / "examples" / "skate.toml";
  return kSource / "examples" / (model + ".toml");
}

std::string list(const std::vector<std::string>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + ("\"" + v[i] + "\"");
  return s + "]";
}

// One test per built-in model (each compiles its own plugin, so that ctest
// runs them side by side): the model written as a model file
// (tests/model_files/NAME.toml) gives the built-in model's trajectories.
class BuiltInModelAsAModelFile : public ::testing::TestWithParam<std::string> {};

TEST_P(BuiltInModelAsAModelFile, GivesTheSameTrajectories) {
  const std::string name = GetParam();
#if defined(__SANITIZE_ADDRESS__)
  // what nholo does with a plugin is the same code for every model; the
  // plugins themselves (compiled by the plugin compiler, not instrumented)
  // and the numbers are checked by the product build's run of every model
  if (name != "rolling_coin" && name != "skate") {
    std::printf("SKIPPED in the sanitizer build: the rolling_coin and skate instances check "
                "nholo's side of a model file's run; every model's numbers are checked by the "
                "product build\n");
    GTEST_SKIP() << "sanitizer build: rolling_coin and skate only";
  }
#endif
  const fs::path file = kSource / "tests" / "model_files" / (name + ".toml");
  ASSERT_TRUE(fs::exists(file)) << "no model file for the built-in model " << name;
  // every formulation both offer (a model file has no embedded form)
  std::vector<std::string> forms;
  for (const auto& f : nholo::find_model(name)->formulations)
    if (f != "embedded") forms.push_back(f);
  const fs::path dir = temp_dir("builtin_" + name);
  fs::copy_file(example_of(name), dir / "run.toml");
  std::ifstream ex(example_of(name));
  const std::string ex_text((std::istreambuf_iterator<char>(ex)), std::istreambuf_iterator<char>());
  // a grid's size is its number of points
  const bool grid = ex_text.find("sampler = \"grid\"") != std::string::npos;
  // Appell's conflated motion turns stiff after t ~ 0.2 (millions of steps
  // per trajectory by t = 1, 8 of the test's 9 s): compared up to 0.2, where
  // the vakonomic trajectories still end both ways (ok and singular)
  const std::string times = name == "appell" ? " --set time.t_end=0.2 --set time.save_every=0.02"
                                             : " --set time.t_end=1.0 --set time.save_every=0.1";
  const std::string common = " --set 'formulations=" + list(forms) + "'" +
                             (grid ? "" : " --set ensemble.size=16") + times +
                             " --set 'output.fields=[\"q\",\"qdot\"]' --backend omp";
  const Result a = nholo("run -q run.toml --set 'model=\"" + name + "\"' --set 'output.path=\"a.h5\"'" +
                             common, dir);
  ASSERT_EQ(a.code, 0) << name << "\n" << a.output;
  // the plugins of rolling_coin and skate as nholo builds them (-O3; the
  // sanitizer stage finds them in the shared cache); the others at -O1: the
  // same bits (no FMA contraction, no fast math), 3x quicker to build
  const bool o3 = name == "rolling_coin" || name == "skate";
  const Result b = nholo("run -q run.toml --set 'model=\"" + file.string() +
                             "\"' --set 'output.path=\"b.h5\"'" + common,
                         dir, shared_cache_env() + (o3 ? "" : " NHOLO_PLUGIN_CXXFLAGS=-O1"));
  ASSERT_EQ(b.code, 0) << name << "\n" << b.output;
  double worst = 0;
  for (const auto& f : forms) {
    for (const char* field : {"q", "qdot"}) {
      const auto qa = read(dir / "a.h5", f + "/" + field), qb = read(dir / "b.h5", f + "/" + field);
      ASSERT_FALSE(qa.empty());
      const double d = rel_diff(qa, qb);
      worst = std::max(worst, d);
      EXPECT_LT(d, 1e-13) << name << " " << f << " " << field;
    }
    auto fa = nholo::h5::File::open_ro((dir / "a.h5").string());
    auto fb = nholo::h5::File::open_ro((dir / "b.h5").string());
    EXPECT_EQ(fa.root().open_dataset(f + "/status").read<int32_t>(),
              fb.root().open_dataset(f + "/status").read<int32_t>())
        << name << " " << f;
  }
  std::printf("%-24s as a model file: formulations %s, max relative difference %.2e\n", name.c_str(),
              list(forms).c_str(), worst);
}

INSTANTIATE_TEST_SUITE_P(EveryBuiltInModel, BuiltInModelAsAModelFile,
                         ::testing::ValuesIn(nholo::model_names()),
                         [](const ::testing::TestParamInfo<std::string>& model) { return model.param; });

// Runs examples/models/NAME.toml with its model file in `dir`: the result
// file it writes (NAME.h5), empty (after a failure) when the run failed.
fs::path run_example_model(const std::string& name, const fs::path& dir) {
  for (const std::string& f : {name + ".toml", name + ".model.toml"})
    fs::copy_file(kSource / "examples" / "models" / f, dir / f);
  const Result r = nholo("run -q " + name + ".toml", dir);
  EXPECT_EQ(r.code, 0) << r.output;
  return r.code == 0 ? dir / (name + ".h5") : fs::path();
}

// examples/models/chaplygin_sleigh: the body-frame Newton–Euler equations of
// the sleigh (docs/models.md), integrated here by classical RK4 from each
// trajectory's initial state, against the forward speed u and the turning
// rate omega of the run.
TEST(ModelFiles, ChaplyginSleighOffTheBladeLineFollowsNewtonEuler) {
#if defined(__SANITIZE_ADDRESS__)
  std::printf(
      "SKIPPED in the sanitizer build: the sleigh's motion is its plugin's (not instrumented), "
      "checked by the product build; nholo's side of an example's run is checked here by the other "
      "model-file tests\n");
  GTEST_SKIP() << "sanitizer build: the motion is checked by the product build";
#endif
  const fs::path h5 = run_example_model("chaplygin_sleigh", temp_dir("chaplygin"));
  ASSERT_FALSE(h5.empty());
  const double m = 1.0, Ic = 0.2, a = 0.4, b = 0.15;
  const auto time = read(h5, "udwadia_kalaba/time");
  const size_t T = time.size();
  double worst = 0, worst_formulations = 0, worst_energy = 0;
  for (const char* form : {"udwadia_kalaba", "null_space"}) {
    const auto q = read(h5, std::string(form) + "/q"), qd = read(h5, std::string(form) + "/qdot");
    const auto energy = read(h5, std::string(form) + "/energy");
    const size_t N = q.size() / (T * 3);
    ASSERT_EQ(N, 64u);
    for (size_t i = 0; i < N; ++i) {
      auto u_of = [&](size_t k) {
        const double th = q[(i * T + k) * 3 + 2];
        return qd[(i * T + k) * 3 + 0] * std::cos(th) + qd[(i * T + k) * 3 + 1] * std::sin(th);
      };
      // RK4 of (Ic + m a^2) w' = -m a w (u - b w), u' = b w' + a w^2 from the first save
      double u = u_of(0), w = qd[(i * T) * 3 + 2];
      auto rhs = [&](double uu, double ww, double& du, double& dw) {
        dw = -m * a * ww * (uu - b * ww) / (Ic + m * a * a);
        du = b * dw + a * ww * ww;
      };
      for (size_t k = 1; k < T; ++k) {
        const int steps = 400;
        const double h = (time[k] - time[k - 1]) / steps;
        for (int s = 0; s < steps; ++s) {
          double k1u, k1w, k2u, k2w, k3u, k3w, k4u, k4w;
          rhs(u, w, k1u, k1w);
          rhs(u + 0.5 * h * k1u, w + 0.5 * h * k1w, k2u, k2w);
          rhs(u + 0.5 * h * k2u, w + 0.5 * h * k2w, k3u, k3w);
          rhs(u + h * k3u, w + h * k3w, k4u, k4w);
          u += h / 6 * (k1u + 2 * k2u + 2 * k3u + k4u);
          w += h / 6 * (k1w + 2 * k2w + 2 * k3w + k4w);
        }
        worst = std::max(worst, std::abs(u - u_of(k)));
        worst = std::max(worst, std::abs(w - qd[(i * T + k) * 3 + 2]));
        worst_energy = std::max(worst_energy, std::abs(energy[i * T + k] - energy[i * T]) /
                                                  std::abs(energy[i * T]));
      }
    }
  }
  const auto q1 = read(h5, "udwadia_kalaba/q"), q2 = read(h5, "null_space/q");
  worst_formulations = rel_diff(q1, q2);
  std::printf("chaplygin sleigh (b = %.2f): |(u, omega) - Newton-Euler| %.2e, energy drift %.2e, "
              "Udwadia-Kalaba vs null space %.2e\n", b, worst, worst_energy, worst_formulations);
  EXPECT_LT(worst, 1e-9);
  EXPECT_LT(worst_energy, 1e-10);
  EXPECT_LT(worst_formulations, 1e-10);
}

// examples/models/rolling_disk: phi_dot constant, theta'' = tau / (I + m R^2),
// x, y in closed form (docs/models.md).
TEST(ModelFiles, DrivenRollingDiskMatchesItsClosedForm) {
  const fs::path h5 = run_example_model("rolling_disk", temp_dir("disk"));
  ASSERT_FALSE(h5.empty());
  const double m = 1.0, R = 0.3, I = m * R * R / 2, tau = 0.05, alpha = tau / (I + m * R * R);
  const auto time = read(h5, "udwadia_kalaba/time");
  const auto q0 = read(h5, "initial/q0"), qd0 = read(h5, "initial/qdot0");
  const size_t T = time.size();
  double worst = 0;
  for (const char* form : {"udwadia_kalaba", "lagrange_multiplier"}) {
    const auto q = read(h5, std::string(form) + "/q");
    const size_t N = q.size() / (T * 4);
    ASSERT_EQ(N, 64u);
    for (size_t i = 0; i < N; ++i) {
      const double x0 = q0[i * 4], y0 = q0[i * 4 + 1], p0 = q0[i * 4 + 2], th0 = q0[i * 4 + 3];
      const double w = qd0[i * 4 + 2], s0 = qd0[i * 4 + 3];
      // integral of (s0 + alpha t) (cos, sin)(p0 + w t)
      auto X = [&](double t) {
        return (s0 + alpha * t) * std::sin(p0 + w * t) / w + alpha * std::cos(p0 + w * t) / (w * w);
      };
      auto Y = [&](double t) {
        return -(s0 + alpha * t) * std::cos(p0 + w * t) / w + alpha * std::sin(p0 + w * t) / (w * w);
      };
      for (size_t k = 0; k < T; ++k) {
        const double t = time[k];
        const double exact[4] = {x0 + R * (X(t) - X(0)), y0 + R * (Y(t) - Y(0)), p0 + w * t,
                                 th0 + s0 * t + 0.5 * alpha * t * t};
        for (int c = 0; c < 4; ++c) worst = std::max(worst, std::abs(q[(i * T + k) * 4 + c] - exact[c]));
      }
    }
  }
  std::printf("driven rolling disk: |q - closed form| %.2e\n", worst);
  EXPECT_LT(worst, 1e-10);
}

// examples/models/constant_speed: psi' = -(g/v) cos psi in closed form through
// the Gudermannian (docs/models.md).
TEST(ModelFiles, ConstantSpeedParticleMatchesItsClosedForm) {
#if defined(__SANITIZE_ADDRESS__)
  std::printf(
      "SKIPPED in the sanitizer build: the particle's motion is its plugin's (not instrumented), "
      "checked by the product build; nholo's side of an example's run is checked here by the other "
      "model-file tests\n");
  GTEST_SKIP() << "sanitizer build: the motion is checked by the product build";
#endif
  const fs::path h5 = run_example_model("constant_speed", temp_dir("speed"));
  ASSERT_FALSE(h5.empty());
  const double g = 9.81, v = 2.0;
  const auto time = read(h5, "udwadia_kalaba/time");
  const auto q0 = read(h5, "initial/q0"), qd0 = read(h5, "initial/qdot0");
  const size_t T = time.size();
  double worst = 0, worst_speed = 0;
  for (const char* form : {"udwadia_kalaba", "lagrange_multiplier", "null_space"}) {
    const auto q = read(h5, std::string(form) + "/q");
    const size_t N = q.size() / (T * 2);
    ASSERT_EQ(N, 64u);
    for (size_t i = 0; i < N; ++i) {
      worst_speed = std::max(worst_speed, std::abs(std::hypot(qd0[i * 2], qd0[i * 2 + 1]) - v));
      const double psi0 = std::atan2(qd0[i * 2 + 1], qd0[i * 2]);
      const double u0 = std::asinh(std::tan(psi0));  // gd^-1
      for (size_t k = 0; k < T; ++k) {
        const double u = u0 - g * time[k] / v, psi = std::atan(std::sinh(u));
        const double x = q0[i * 2] + v * v / g * (psi0 - psi);
        const double y = q0[i * 2 + 1] - v * v / g * (std::log(std::cosh(u)) - std::log(std::cosh(u0)));
        worst = std::max(worst, std::max(std::abs(q[(i * T + k) * 2] - x), std::abs(q[(i * T + k) * 2 + 1] - y)));
      }
    }
  }
  std::printf("constant-speed particle: |q - closed form| %.2e (initial speeds within %.1e of v)\n", worst,
              worst_speed);
  EXPECT_LT(worst_speed, 1e-12);
  EXPECT_LT(worst, 1e-10);
}

// -- the plugin cache ---------------------------------------------------------

const char* kTinyModel = R"(name = "tiny_oscillator"
description = "a particle on a line in a spring; one coordinate held by a second"
coordinates = [ { name = "x", unit = "m" }, { name = "y", unit = "m" } ]
parameters = [ { name = "k", default = 1.0, unit = "N/m", positive = true } ]
lagrangian = "(x_dot^2 + y_dot^2)/2 - k*x^2/2"
constraints = [ { name = "tie", kind = "velocity", expr = "y_dot - x_dot" } ]
)";

const char* kTinyRun = R"(model = "tiny.model.toml"
[time]
t_end = 1.0
save_every = 0.5
[ensemble]
size = 4
[ensemble.q0]
x = 1.0
y = 0.0
[output]
path = "tiny.h5"
fields = ["q"]
)";

double seconds_of(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// `nholo model check` says where M and F come from: symbolic, or AD for a
// Lagrangian too large for the symbolic form (docs/models.md)
TEST(ModelFiles, CheckSaysWhereMassMatrixAndForcesComeFrom) {
  const fs::path dir = temp_dir("check_dynamics");
  const Result a =
      nholo("model check " + (kSource / "tests" / "model_files" / "skate.toml").string(), dir);
  ASSERT_EQ(a.code, 0) << a.output;
  EXPECT_NE(a.output.find("M, F: differentiated symbolically from the Lagrangian ("),
            std::string::npos)
      << a.output;
  // Refused before issue 52 (more than 20,000 distinct nodes, more than 1000
  // levels), symbolic since (at most 400,000 nodes and 10,000 levels; the
  // refusal above 400,000 costs about 1 GB to reach, so it is not run here):
  // 140 coordinates, (x0_dot + ... + x139_dot)^2 (2 + cos(x0) ... cos(x139)),
  // 702 graph nodes; one chain of 1100 sums
  std::string rates = "x0_dot", cosines = "cos(x0)",
              coordinates = "{ name = \"x0\", unit = \"m\" }";
  for (int k = 1; k < 140; ++k) {
    const std::string x = "x" + std::to_string(k);
    rates += " + " + x + "_dot";
    cosines += "*cos(" + x + ")";
    coordinates += ", { name = \"" + x + "\", unit = \"m\" }";
  }
  std::string chain = "x0_dot^2/2";
  for (int k = 1; k <= 1100; ++k) chain += " + " + std::to_string(k) + "e-6*x0";
  const std::string one = "{ name = \"x0\", unit = \"m\" }";
  const std::vector<std::array<std::string, 2>> cases = {
      {coordinates, "(" + rates + ")^2*(2 + " + cosines + ")"}, {one, chain}};
  for (const auto& [coords, lagrangian] : cases) {
    write_file(dir / "big.model.toml",
               "name = \"big\"\ndescription = \"many terms\"\ncoordinates = [ " + coords +
                   " ]\nlagrangian = \"" + lagrangian + "\"\n");
    const Result b = nholo("model check big.model.toml", dir);
    ASSERT_EQ(b.code, 0) << b.output.substr(0, 2000);
    EXPECT_NE(b.output.find("M, F: differentiated symbolically from the Lagrangian ("),
              std::string::npos)
        << b.output.substr(0, 2000);
  }
}

// `nholo model check` prints the model's size after sharing, part by part,
// against the limit (docs/models.md, "Limits"). Counted by hand:
//   lagrangian m/2*(x_dot^2 + y_dot^2): m, 2, /, x_dot, ^, y_dot, ^, +, *: 9
//   constraints: roll y_dot - x_dot*cos(x): y_dot, x_dot, x, cos, *, -: 6
//     stop y_dot*cos(x) - x_dot: y_dot, x, cos, *, x_dot, -: 6; both: 8
//   energy m/2*(x_dot^2 + y_dot^2): the Lagrangian's 9 nodes
//   events x: 1
//   all: 9 + x, cos, the two products, the two differences: 15
TEST(ModelFiles, CheckPrintsTheSizeOfEachPart) {
  const fs::path dir = temp_dir("check_size");
  write_file(
      dir / "sizes.model.toml",
      "name = \"sizes\"\ndescription = \"a test of sizes\"\n"
      "coordinates = [ { name = \"x\", unit = \"m\" }, { name = \"y\", unit = \"m\" },"
      " { name = \"z\", unit = \"m\" } ]\n"
      "parameters = [ { name = \"m\", default = 2.0, unit = \"kg\" } ]\n"
      "lagrangian = \"m/2*(x_dot^2 + y_dot^2)\"\n"
      "constraints = [ { name = \"roll\", kind = \"velocity\", expr = \"y_dot - x_dot*cos(x)\" },"
      " { name = \"stop\", kind = \"velocity\", expr = \"y_dot*cos(x) - x_dot\" } ]\n"
      "energy = \"m/2*(x_dot^2 + y_dot^2)\"\n"
      "[[events]]\nname = \"e\"\nexpr = \"x\"\n");
  const Result r = nholo("model check sizes.model.toml", dir);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("  size: 15 of 100,000 graph nodes (distinct after sharing common "
                          "subexpressions)\n    lagrangian 9, constraints 8 (roll 6, stop 6), "
                          "energy 9, events 1\n"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("  M, F: differentiated symbolically from the Lagrangian ("),
            std::string::npos)
      << r.output;
}

TEST(ModelFiles, PluginCacheBuildsOnceRebuildsOnEditAndRefusesDamagedPlugins) {
  const fs::path dir = temp_dir("cache");
  const fs::path cache = dir / "cache";
  // the cache's logic, not the plugin's code: plugins unoptimized (3x faster)
  const std::string env = "NHOLO_CACHE_DIR='" + cache.string() + "' NHOLO_PLUGIN_CXXFLAGS=-O0";
  write_file(dir / "tiny.model.toml", kTinyModel);
  write_file(dir / "run.toml", kTinyRun);
  // `nholo model build` compiles and says how long it took
  Result b;
  const double cold = seconds_of([&] { b = nholo("model build tiny.model.toml", dir, env); });
  ASSERT_EQ(b.code, 0) << b.output;
  EXPECT_NE(b.output.find("compiled in"), std::string::npos) << b.output;
  // a run finds it in the cache: nothing compiled
  Result r1;
  const double warm = seconds_of([&] { r1 = nholo("run run.toml", dir, env); });
  ASSERT_EQ(r1.code, 0) << r1.output;
  EXPECT_NE(r1.output.find("(cached)"), std::string::npos) << r1.output;
  EXPECT_EQ(r1.output.find("compiling"), std::string::npos) << r1.output;
  std::printf("tiny model: `nholo model build` (cold) %.2f s, a run with the cached plugin %.2f s\n", cold,
              warm);
  // `nholo models` lists it as loadable
  const Result ls = nholo("models", dir, env);
  ASSERT_EQ(ls.code, 0) << ls.output;
  EXPECT_NE(ls.output.find("tiny_oscillator"), std::string::npos) << ls.output;
  EXPECT_NE(ls.output.find("loadable"), std::string::npos) << ls.output;
  // the model read back from the [model] table a result file stores (nholo
  // merge of shards, an MPI run's merge) is the same plugin: not compiled again
  ASSERT_EQ(nholo("run -q run.toml --range 0:4 --set output.path=s.h5", dir, env).code, 0);
  const Result mg = nholo("merge m.h5 s.shard-0-4.h5", dir, env);
  ASSERT_EQ(mg.code, 0) << mg.output;
  EXPECT_EQ(mg.output.find("compiling"), std::string::npos) << mg.output;
  int plugins = 0, lane_addons = 0;
  for (const auto& e : fs::directory_iterator(cache)) {
    plugins += e.path().extension() == ".so" && !is_lane_addon(e.path());
    lane_addons += e.path().extension() == ".so" && is_lane_addon(e.path());
    // the compile's log (kept beside the plugin) holds no warning: the
    // generated unit is a main file (it said "#pragma once in main file")
    if (e.path().extension() == ".log") {
      EXPECT_EQ(read_text(e.path()).find("warning"), std::string::npos) << read_text(e.path());
    }
    // its record names the model file by its absolute path (the cache
    // serves every folder; it kept the path as typed, "tiny.model.toml")
    if (e.path().extension() == ".info") {
      const std::string source = "source = " + fs::canonical(dir / "tiny.model.toml").string();
      EXPECT_NE(read_text(e.path()).find(source + "\n"), std::string::npos) << read_text(e.path());
    }
  }
  EXPECT_EQ(plugins, 1);
  // `nholo model build` built the SIMD lane add-on for this CPU too
  EXPECT_EQ(lane_addons, nholo::cpu_simd_isa() == nholo::SimdIsa::off ? 0 : 1);
  // a damaged plugin is refused (its bytes no longer match its record) and rebuilt
  fs::path so;
  for (const auto& e : fs::directory_iterator(cache))
    if (e.path().extension() == ".so" && !is_lane_addon(e.path())) so = e.path();
  ASSERT_FALSE(so.empty());
  {
    std::fstream f(so, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096);
    const char junk[16] = "not a plugin...";
    f.write(junk, sizeof junk);
  }
  const Result damaged = nholo("models", dir, env);
  EXPECT_NE(damaged.output.find("does not match its record"), std::string::npos) << damaged.output;
  const Result r2 = nholo("run run.toml --overwrite", dir, env);
  ASSERT_EQ(r2.code, 0) << r2.output;
  EXPECT_NE(r2.output.find("refused, rebuilding"), std::string::npos) << r2.output;
  // a plugin built for another plugin interface (its record says which; a
  // tree changed since its commit keeps the identity) is refused and rebuilt
  {
    fs::path info = so;
    info.replace_extension(".info");
    std::ifstream in(info);
    std::string rec((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    in.close();
    const std::string abi = "\nabi = " + std::to_string(NHOLO_PLUGIN_ABI_VERSION) + "\n";
    ASSERT_NE(rec.find(abi), std::string::npos) << rec;
    rec.replace(rec.find(abi), abi.size(), "\nabi = 1\n");
    write_file(info, rec);
  }
  const Result old_abi = nholo("run run.toml --overwrite", dir, env);
  ASSERT_EQ(old_abi.code, 0) << old_abi.output;
  EXPECT_NE(old_abi.output.find("was built for plugin ABI 1, this nholo has ABI"), std::string::npos)
      << old_abi.output;
  EXPECT_NE(old_abi.output.find("refused, rebuilding"), std::string::npos) << old_abi.output;
  // a plugin its record vouches for (bytes and checksum match) but that does
  // not load (as one copied from another machine may not) is rebuilt, once
  {
    const std::string junk = "not a shared object, but the record says it is";
    nholo_test::replace_vouched_plugin(so, junk);
  }
  const Result unloadable = nholo("run run.toml --overwrite", dir, env);
  ASSERT_EQ(unloadable.code, 0) << unloadable.output;
  EXPECT_NE(unloadable.output.find("(cached)"), std::string::npos) << unloadable.output;
  EXPECT_NE(unloadable.output.find("cannot be used (cannot load the model plugin"), std::string::npos)
      << unloadable.output;
  EXPECT_NE(unloadable.output.find("refused, rebuilding"), std::string::npos) << unloadable.output;
  // editing the model file compiles a new plugin (a new key), and changes the result
  std::string text = kTinyModel;
  text.replace(text.find("k*x^2/2"), 7, "k*x^2/4");
  write_file(dir / "tiny.model.toml", text);
  const Result r3 = nholo("run run.toml --overwrite", dir, env);
  ASSERT_EQ(r3.code, 0) << r3.output;
  EXPECT_NE(r3.output.find("compiling"), std::string::npos) << r3.output;
  // a foreign file posing as a plugin (model = "x.so") is refused with the reason
  write_file(dir / "foreign.so", "this is not a shared library");
  const Result f = nholo("check run.toml --set 'model=\"foreign.so\"'", dir, env);
  EXPECT_EQ(f.code, 2) << f.output;
  EXPECT_NE(f.output.find("cannot load the model plugin"), std::string::npos) << f.output;
  EXPECT_FALSE(fs::exists(dir / "tiny.h5.partial"));
}

TEST(ModelFiles, TwoProcessesBuildingOneModelAtOnceBothSucceed) {
  const fs::path dir = temp_dir("concurrent");
  // the cache's logic, not the plugin's code: plugins unoptimized (3x faster)
  const std::string env =
      "NHOLO_CACHE_DIR='" + (dir / "cache").string() + "' NHOLO_PLUGIN_CXXFLAGS=-O0";
  std::string text = kTinyModel;
  text.replace(text.find("tiny_oscillator"), 15, "tiny_concurrent");
  write_file(dir / "tiny.model.toml", text);
  Result a, b;
  std::thread ta([&] { a = nholo("model build tiny.model.toml", dir, env); });
  std::thread tb([&] {
    const fs::path d2 = dir / "second";
    fs::create_directories(d2);
    write_file(d2 / "tiny.model.toml", text);
    b = nholo("model build tiny.model.toml", d2, env);
  });
  ta.join();
  tb.join();
  EXPECT_EQ(a.code, 0) << a.output;
  EXPECT_EQ(b.code, 0) << b.output;
  // each file (the plugin, its lane add-on) compiled once: the other process
  // waited for it and took it from the cache
  int plugins = 0, temporaries = 0;
  for (const auto& e : fs::directory_iterator(dir / "cache")) {
    if (e.path().extension() == ".so") ++plugins;
    if (e.path().string().find(".tmp.") != std::string::npos) ++temporaries;
  }
  EXPECT_EQ(plugins, nholo::cpu_simd_isa() == nholo::SimdIsa::off ? 1 : 2);
  EXPECT_EQ(count_of(a.output, "compiling its") + count_of(b.output, "compiling its"), plugins)
      << a.output << "\n---\n"
      << b.output;
  EXPECT_EQ(temporaries, 0);
}

// A bad model file is refused by `check` and `run` before anything is compiled
// or written, naming the file, the expression and the position.
TEST(ModelFiles, BadModelFileIsRefusedBeforeAnythingIsCompiledOrWritten) {
  const fs::path dir = temp_dir("bad");
  const std::string env = "NHOLO_CACHE_DIR='" + (dir / "cache").string() + "'";
  std::string text = kTinyModel;
  text.replace(text.find("k*x^2/2"), 7, "k*xx^2/2");
  write_file(dir / "tiny.model.toml", text);
  write_file(dir / "run.toml", kTinyRun);
  for (const char* cmd : {"check run.toml", "run run.toml", "model build tiny.model.toml"}) {
    const Result r = nholo(cmd, dir, env);
    EXPECT_EQ(r.code, 2) << cmd << "\n" << r.output;
    EXPECT_NE(r.output.find("tiny.model.toml"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("xx"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("position"), std::string::npos) << r.output;
  }
  EXPECT_FALSE(fs::exists(dir / "cache"));
  EXPECT_FALSE(fs::exists(dir / "tiny.h5"));
  EXPECT_FALSE(fs::exists(dir / "tiny.h5.partial"));
  // a parameter outside the range the model file declares
  write_file(dir / "tiny.model.toml", kTinyModel);
  const Result p = nholo("check run.toml --set params.k=-1", dir, env);
  EXPECT_EQ(p.code, 2) << p.output;
  EXPECT_NE(p.output.find("params.k"), std::string::npos) << p.output;
  // no GPU here (or no CUDA in this nholo): --backend cuda is refused with
  // the reason and what is accepted
  const Result g = nholo("check run.toml --backend cuda", dir, env);
  EXPECT_EQ(g.code, 2) << g.output;
  EXPECT_NE(g.output.find("auto, omp, cpp"), std::string::npos) << g.output;
}

// ---------------------------------------------------------------------------
// GPU modules (host/model_files/plugin.hpp): a model file's integration kernels compiled
// by NVRTC. Compiling needs NVRTC only (no GPU): these tests run wherever the
// CUDA toolkit's libnvrtc is found, and say why they skip otherwise. Running
// a module needs a GPU: GpuModuleRunMatchesTheCpu runs only on a machine
// with one.

// The reason NVRTC cannot be used here (empty: it can), from the command's
// own report.
std::string nvrtc_missing(const Result& r) {
  if (r.code != 0 && r.output.find("cannot be loaded") != std::string::npos) return r.output;
  return "";
}

TEST(ModelFiles, GpuModulesCompileWithNvrtcAreCachedAndDamagedOnesRefused) {
  const fs::path dir = temp_dir("gpu_cache");
  const fs::path cache = dir / "cache";
  // the cache's logic, not the plugin's code: plugins unoptimized (3x faster)
  const std::string env = "NHOLO_CACHE_DIR='" + cache.string() + "' NHOLO_PLUGIN_CXXFLAGS=-O0";
  write_file(dir / "tiny.model.toml", kTinyModel);
  const Result b = nholo(
      "model build tiny.model.toml --gpu-arch sm_80,sm_90 --formulations udwadia_kalaba", dir, env);
  if (const std::string why = nvrtc_missing(b); !why.empty()) {
    std::printf("SKIPPED: NVRTC is not available here: %s\n", why.c_str());
    GTEST_SKIP() << why;
  }
  ASSERT_EQ(b.code, 0) << b.output;
  // one module per architecture, each compiled and reported with its time
  for (const char* arch : {"sm_80", "sm_90"})
    EXPECT_NE(b.output.find("GPU module udwadia_kalaba dopri5 " + std::string(arch) + ": "),
              std::string::npos)
        << b.output;
  // with ptxas' report on the kernel (registers, stack frame, spills)
  EXPECT_NE(b.output.find(" registers, "), std::string::npos) << b.output;
  std::vector<fs::path> cubins;
  for (const auto& e : fs::directory_iterator(cache))
    if (e.path().extension() == ".cubin") cubins.push_back(e.path());
  ASSERT_EQ(cubins.size(), 2u) << b.output;
  for (const auto& c : cubins) {
    // an ELF image (a cubin), and the source NVRTC compiled checks the window
    // layout against the plugin's compiler
    std::ifstream f(c, std::ios::binary);
    char magic[4] = {};
    f.read(magic, 4);
    EXPECT_TRUE(magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' && magic[3] == 'F') << c;
    fs::path src = c;
    src.replace_extension(".cu");
    std::ifstream s(src);
    const std::string text((std::istreambuf_iterator<char>(s)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("static_assert(sizeof(NholoWindow) == "), std::string::npos) << src;
    EXPECT_NE(text.find("nholo_integrate"), std::string::npos) << src;
  }
  // the second build finds both in the cache
  const Result again = nholo(
      "model build tiny.model.toml --gpu-arch sm_80,sm_90 --formulations udwadia_kalaba", dir, env);
  ASSERT_EQ(again.code, 0) << again.output;
  EXPECT_EQ(again.output.find("compiling"), std::string::npos) << again.output;
  EXPECT_NE(again.output.find("GPU module udwadia_kalaba dopri5 sm_90: "), std::string::npos);
  // `nholo models` lists them
  const Result ls = nholo("models", dir, env);
  EXPECT_NE(ls.output.find("[GPU: udwadia_kalaba dopri5 sm_90]"), std::string::npos) << ls.output;
  // a damaged module is refused and rebuilt
  {
    std::fstream f(cubins[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(64);
    const char junk[16] = "not a module...";
    f.write(junk, sizeof junk);
  }
  const Result damaged = nholo("models", dir, env);
  EXPECT_NE(damaged.output.find("does not match its record"), std::string::npos) << damaged.output;
  const Result rebuilt = nholo(
      "model build tiny.model.toml --gpu-arch sm_80,sm_90 --formulations udwadia_kalaba", dir, env);
  ASSERT_EQ(rebuilt.code, 0) << rebuilt.output;
  EXPECT_NE(rebuilt.output.find("refused, rebuilding"), std::string::npos) << rebuilt.output;
  // bad requests name what is accepted
  const Result arch = nholo("model build tiny.model.toml --gpu-arch 90", dir, env);
  EXPECT_NE(arch.code, 0);
  EXPECT_NE(arch.output.find("expected sm_XY"), std::string::npos) << arch.output;
  const Result form =
      nholo("model build tiny.model.toml --gpu-arch sm_90 --formulations conflated", dir, env);
  EXPECT_NE(form.code, 0);
  EXPECT_NE(form.output.find("'conflated' is not a formulation of model tiny_oscillator"),
            std::string::npos)
      << form.output;
}

// Every formulation's kernel of a model file with all five a model file can
// have (the skate's twin: conflated included; embedded constraints are not
// part of the model-file grammar) compiles through NVRTC for sm_90, and each
// method's for one of them.
TEST(ModelFiles, GpuModulesOfEveryFormulationAndMethodCompile) {
#if defined(__SANITIZE_ADDRESS__)
  std::printf("SKIPPED in the sanitizer build: NVRTC compiles the kernel source here and is not "
              "instrumented; the product build's run of this test checks it\n");
  GTEST_SKIP() << "sanitizer build: NVRTC's compile is checked by the product build";
#endif
  const fs::path dir = temp_dir("gpu_all");
  const std::string file = (kSource / "tests" / "model_files" / "skate.toml").string();
  const Result b = nholo("model build '" + file + "' --gpu-arch sm_90", dir);
  if (const std::string why = nvrtc_missing(b); !why.empty()) {
    std::printf("SKIPPED: NVRTC is not available here: %s\n", why.c_str());
    GTEST_SKIP() << why;
  }
  ASSERT_EQ(b.code, 0) << b.output;
  for (const char* f :
       {"udwadia_kalaba", "lagrange_multiplier", "null_space", "vakonomic", "conflated"})
    EXPECT_NE(b.output.find("GPU module " + std::string(f) + " dopri5 sm_90: "), std::string::npos)
        << f << "\n"
        << b.output;
  for (const char* m : {"rk4", "dop853"}) {
    const Result r =
        nholo("model build '" + file +
                  "' --gpu-arch sm_90 --formulations udwadia_kalaba --method " + std::string(m),
              dir);
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_NE(r.output.find("GPU module udwadia_kalaba " + std::string(m) + " sm_90: "),
              std::string::npos)
        << r.output;
  }
}

// On a GPU: a model file run on the CUDA backend through its GPU modules
// gives the trajectories of the CPU backend (the same kernel source; the GPU
// contracts multiply-adds, hence agreement to rounding, not bits).
TEST(ModelFiles, GpuModuleRunMatchesTheCpu) {
  const fs::path dir = temp_dir("gpu_run");
  const Result d = nholo("devices", dir);
  if (d.output.find("GPU 0:") == std::string::npos) {
    std::printf("SKIPPED: no CUDA device here (`nholo devices`: %s)\n", d.output.c_str());
    GTEST_SKIP() << "no CUDA device";
  }
  // the example's config names its model file (examples/models/)
  const std::string cfg = (kSource / "examples" / "models" / "chaplygin_sleigh.toml").string();
  const std::string common = " --set ensemble.size=64";
  const Result gpu =
      nholo("run '" + cfg + "'" + common + " --backend cuda --set 'output.path=\"gpu.h5\"'", dir);
  ASSERT_EQ(gpu.code, 0) << gpu.output;
  EXPECT_NE(gpu.output.find("GPU module"), std::string::npos) << gpu.output;
  const Result cpu =
      nholo("run '" + cfg + "'" + common + " --backend omp --set 'output.path=\"cpu.h5\"'", dir);
  ASSERT_EQ(cpu.code, 0) << cpu.output;
  for (const char* f : {"udwadia_kalaba", "null_space"}) {
    const std::vector<double> a = read(dir / "cpu.h5", std::string("/") + f + "/q");
    const std::vector<double> g = read(dir / "gpu.h5", std::string("/") + f + "/q");
    EXPECT_LT(rel_diff(a, g), 1e-9) << f;
  }
}

}  // namespace
