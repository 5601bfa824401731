// Lyapunov exponents from a run ([lyapunov], kernels/lyapunov.hpp through a
// model's plugin compiled with its tangent systems), against closed forms:
// a particle at a saddle point held on a plane (a model file), whose largest
// exponent over a time T is sqrt(k) + log(|a| sqrt(1 + k)) / T
// (tests/test_lyapunov.cpp derives it), and the integrable rolling coin
// (built in), whose exponent decays like log(t)/t. Then what must not change
// the result (threads, launches, slices, renormalisation) and the inputs
// that are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "host/backends/simd_choice.hpp"
#include "host/io/h5.hpp"
#include "kernels/lyapunov.hpp"
#include "tests/coin_config.hpp"
#include "tests/nholo_cli.hpp"

namespace fs = std::filesystem;

namespace {

using nholo_test::run_nholo;
using nholo_test::write_file;

fs::path temp_dir(const std::string& name) {
  return nholo_test::temp_dir("nholo_lyapunov", name);
}

std::string shared_cache_env() {
  return "NHOLO_CACHE_DIR='" + std::string(NHOLO_TEST_PLUGIN_CACHE) + "'";
}

const char* kSaddleModel = R"(
name = "saddle_on_plane"
description = "a particle at a saddle point of its potential, held on the plane z = 0"
coordinates = [
  { name = "x", unit = "m" }, { name = "y", unit = "m" }, { name = "z", unit = "m" },
]
parameters = [
  { name = "k", default = 1.0, unit = "1/s^2", description = "curvature of the unstable direction", positive = true },
  { name = "w", default = 2.0, unit = "1/s", description = "frequency of the stable direction", positive = true },
]
lagrangian = "(x_dot^2 + y_dot^2 + z_dot^2)/2 + k*x^2/2 - w^2*y^2/2"
constraints = [ { name = "plane", kind = "position", expr = "z" } ]
)";

// The particle at rest at the saddle (every trajectory the same state).
std::string saddle_config(double k, double t_end, double renormalize_every,
                          const std::string& extra = "") {
  return "model = \"saddle.model.toml\"\n"
         "formulations = [\"udwadia_kalaba\", \"null_space\", \"lagrange_multiplier\"]\n"
         "[params]\nk = " +
         nholo_test::toml_number(k) + "\n[time]\nt_end = " + nholo_test::toml_number(t_end) +
         "\nsave_every = " + nholo_test::toml_number(t_end / 4) +
         "\n[integrator]\nmethod = \"dopri5\"\nrtol = 1e-10\natol = 1e-12\n"
         "[ensemble]\nsize = 4\n[ensemble.q0]\nx = 0.0\ny = 0.0\nz = 0.0\n"
         "[ensemble.qd0]\nx = 0.0\ny = 0.0\nz = 0.0\n"
         "[output]\nfields = []\n"
         "[lyapunov]\nenabled = true\nrenormalize_every = " +
         nholo_test::toml_number(renormalize_every) + "\n" + extra;
}

// The closed form at time T (tests/test_lyapunov.cpp): the tangent's x part
// grows like a e^(sqrt(k) T), a = (dx0 + dxdot0 / sqrt(k)) / 2 of the unit
// initial direction (kernels/lyapunov.hpp initial_tangent; the state is
// (x, y, z, x_dot, y_dot, z_dot)), and |delta| -> |a| sqrt(1 + k) e^(sqrt(k) T).
double saddle_exponent(double k, double T) {
  double norm2 = 0;
  for (int c = 0; c < 6; ++c) norm2 += nholo::initial_tangent(c) * nholo::initial_tangent(c);
  const double a = 0.5 * (nholo::initial_tangent(0) + nholo::initial_tangent(3) / std::sqrt(k)) /
                   std::sqrt(norm2);
  return std::sqrt(k) + std::log(std::fabs(a) * std::sqrt(1 + k)) / T;
}

std::vector<double> read_lyapunov(const fs::path& file, const std::string& form) {
  const auto f = nholo::h5::File::open_ro(file.string());
  return f.root().open_dataset(form + "/lyapunov").read<double>();
}

std::vector<int32_t> read_status(const fs::path& file, const std::string& form) {
  const auto f = nholo::h5::File::open_ro(file.string());
  return f.root().open_dataset(form + "/status").read<int32_t>();
}

TEST(LyapunovRuns, ASaddlesExponentFromAModelFileIsItsClosedForm) {
  const fs::path dir = temp_dir("saddle");
  write_file(dir / "saddle.model.toml", kSaddleModel);
  const double T = 400;
  for (const double k : {1.0, 2.25}) {
    write_file(dir / "s.toml", saddle_config(k, T, 1.0));
    const auto r =
        run_nholo("run s.toml -q --set output.path=s.h5 --overwrite", dir, shared_cache_env());
    ASSERT_EQ(r.code, 0) << r.output;
    const double want = saddle_exponent(k, T);
    for (const std::string form : {"udwadia_kalaba", "null_space", "lagrange_multiplier"}) {
      const auto st = read_status(dir / "s.h5", form);
      const auto ly = read_lyapunov(dir / "s.h5", form);
      ASSERT_EQ(ly.size(), 4u);
      for (size_t i = 0; i < ly.size(); ++i) {
        EXPECT_EQ(st[i], 0) << form;
        EXPECT_NEAR(ly[i], want, 1e-7) << form << " k " << k;
      }
      std::printf("saddle k %g, %s: lambda(%g) = %.10f, closed form %.10f\n", k, form.c_str(), T,
                  ly[0], want);
    }
  }
  // nholo stats reports them
  const auto s = run_nholo("stats s.h5", dir);
  ASSERT_EQ(s.code, 0) << s.output;
  EXPECT_NE(s.output.find("largest Lyapunov exponent: mean 1.49"), std::string::npos) << s.output;
  fs::remove_all(dir);
}

// The variational equation is linear: where the tangent is renormalised does
// not change the exponent (up to rounding); threads, launches and slices do
// not change a bit of it.
TEST(LyapunovRuns, NeitherRenormalisationNorSchedulingChangesTheExponent) {
  const fs::path dir = temp_dir("schedule");
  write_file(dir / "saddle.model.toml", kSaddleModel);
  const double T = 300;
  struct Variant {
    const char* name;
    double every;
    std::string set;
  };
  const Variant variants[] = {
      {"reference", 1.0, ""},
      {"every_0.25", 0.25, ""},
      {"every_20", 20.0, ""},
      {"one_thread", 1.0, " --set backend.threads=1 --set backend.steps_per_launch=7"},
      {"window_1", 1.0, " --set output.window=1 --set backend.steps_per_launch=0"},
  };
  std::vector<std::vector<double>> got;
  for (const Variant& v : variants) {
    write_file(dir / (std::string(v.name) + ".toml"), saddle_config(1.0, T, v.every));
    const auto r = run_nholo(
        "run " + std::string(v.name) + ".toml -q --set output.path=" + v.name + ".h5" + v.set, dir,
        shared_cache_env());
    ASSERT_EQ(r.code, 0) << v.name << ": " << r.output;
    got.push_back(read_lyapunov(dir / (std::string(v.name) + ".h5"), "udwadia_kalaba"));
  }
  for (size_t j = 1; j < got.size(); ++j) {
    ASSERT_EQ(got[j].size(), got[0].size());
    for (size_t i = 0; i < got[0].size(); ++i) {
      if (variants[j].every == variants[0].every)
        EXPECT_EQ(std::memcmp(&got[j][i], &got[0][i], sizeof(double)), 0)
            << variants[j].name << ": " << got[j][i] << " vs " << got[0][i];
      else
        EXPECT_NEAR(got[j][i], got[0][i], 1e-9) << variants[j].name;
    }
  }
  fs::remove_all(dir);
}

// The rolling coin is integrable: its largest exponent decays like log(t)/t
// (0.012 at t = 500 for these coins, tests/test_lyapunov.cpp). Built in, so
// the run compiles the coin's plugin with its tangent systems.
TEST(LyapunovRuns, TheIntegrableCoinsExponentDecays) {
  const fs::path dir = temp_dir("coin");
  nholo_test::CoinConfig c = nholo_test::spinning_coins();
  c.formulations = {"udwadia_kalaba"};
  c.t_end = 500.0;
  c.save_every = 250.0;
  c.use_integrator("dopri5", 1e-10, 1e-12);
  c.size = 8;
  c.seed = 11;
  c.fields = std::vector<std::string>{};
  c.extra = "[lyapunov]\nenabled = true\n";
  write_file(dir / "c.toml", c.text());
  const auto check = run_nholo("check c.toml", dir);  // compiles nothing
  ASSERT_EQ(check.code, 0) << check.output;
  EXPECT_NE(check.output.find("Lyapunov exponents (the largest, its tangent renormalised every 1)"),
            std::string::npos)
      << check.output;
  const auto r = run_nholo("run c.toml", dir, shared_cache_env());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("plugin (with the tangent systems)"), std::string::npos) << r.output;
  const auto ly = read_lyapunov(dir / "out.h5", "udwadia_kalaba");
  ASSERT_EQ(ly.size(), 8u);
  for (double l : ly) {
    EXPECT_GT(l, 0.0);
    EXPECT_LT(l, 0.05);  // log(t)/t at t = 500: 0.0124
  }
  std::printf("coin: lambda(500) in [%.4f, %.4f]\n", *std::min_element(ly.begin(), ly.end()),
              *std::max_element(ly.begin(), ly.end()));
  // the run's log ends with the exponents' summary, its mean that of the file's
  double mean = 0;
  for (double l : ly) mean += l / 8;
  const std::string line = "nholo: udwadia_kalaba: largest Lyapunov exponent: mean ";
  const auto at = r.output.find(line);
  ASSERT_NE(at, std::string::npos) << r.output;
  EXPECT_NEAR(std::stod(r.output.substr(at + line.size())), mean, 1e-5 * mean) << r.output;
  EXPECT_NE(r.output.find("over 8 trajectories", at), std::string::npos) << r.output;
  fs::remove_all(dir);
}

// The chaotic example's model file against its reduced equations (the
// model file's header; Bizyaev, Borisov, Mamaev and Bizyaev, Borisov,
// Kuznetsov): with u = x_dot cos(theta) + y_dot sin(theta), omega = theta_dot,
// eta = b + A sin(Omega t),
//    M u' - m eta omega'             = c omega^2 + 2 m eta' omega - k_u u
//   -m eta u' + (J + m eta^2) omega' = -c u omega - 2 m eta eta' omega - m xi eta'' - k_w omega
// M = m0 + m, c = m0 a + m xi, J = I0 + m0 a^2 + m xi^2, integrated here by
// classical RK4 with a small fixed step; nholo integrates the Lagrangian of
// the whole sleigh (x, y, theta) with the knife edge and the friction forces.
struct ReducedSleigh {
  double m0 = 1.0, I0 = 0.3, a = 1.0, m = 2.0, xi = 0.5, b = 0.25, A = 1.5, Omega = 2.0, k_u = 0.1,
         k_w = 0.1;
  void rhs(double t, const double s[2], double d[2]) const {
    const double u = s[0], w = s[1];
    const double eta = b + A * std::sin(Omega * t), eta1 = A * Omega * std::cos(Omega * t),
                 eta2 = -A * Omega * Omega * std::sin(Omega * t);
    const double M = m0 + m, c = m0 * a + m * xi, J = I0 + m0 * a * a + m * xi * xi;
    const double r1 = c * w * w + 2 * m * eta1 * w - k_u * u;
    const double r2 = -c * u * w - 2 * m * eta * eta1 * w - m * xi * eta2 - k_w * w;
    // [M, -m eta; -m eta, J + m eta^2] (u', w')^T = (r1, r2)^T
    const double a11 = M, a12 = -m * eta, a22 = J + m * eta * eta;
    const double det = a11 * a22 - a12 * a12;
    d[0] = (a22 * r1 - a12 * r2) / det;
    d[1] = (a11 * r2 - a12 * r1) / det;
  }
  // (u, omega) at each of the times, from (u0, w0) at t = 0
  std::vector<std::array<double, 2>> solve(double u0, double w0,
                                           const std::vector<double>& times) const {
    std::vector<std::array<double, 2>> out;
    double s[2] = {u0, w0}, t = 0;
    const double h = 1e-4;
    for (const double T : times) {
      while (t < T - 1e-12) {
        const double step = std::min(h, T - t);
        double k1[2], k2[2], k3[2], k4[2], y[2];
        rhs(t, s, k1);
        for (int i = 0; i < 2; ++i) y[i] = s[i] + 0.5 * step * k1[i];
        rhs(t + 0.5 * step, y, k2);
        for (int i = 0; i < 2; ++i) y[i] = s[i] + 0.5 * step * k2[i];
        rhs(t + 0.5 * step, y, k3);
        for (int i = 0; i < 2; ++i) y[i] = s[i] + step * k3[i];
        rhs(t + step, y, k4);
        for (int i = 0; i < 2; ++i) s[i] += step / 6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
        t += step;
      }
      out.push_back({s[0], s[1]});
    }
    return out;
  }
};

TEST(LyapunovRuns, TheChaoticSleighsModelFileFollowsItsReducedEquations) {
#if defined(__SANITIZE_ADDRESS__)
  std::printf(
      "SKIPPED in the sanitizer build: the sleigh's motion is its plugin's (not instrumented), "
      "checked by the product build; nholo's side of a model file's Lyapunov run is checked here "
      "by the other LyapunovRuns tests\n");
  GTEST_SKIP() << "sanitizer build: the motion is checked by the product build";
#endif
  const fs::path dir = temp_dir("sleigh_reduced");
  const fs::path src = fs::path(NHOLO_SOURCE_DIR) / "examples" / "models";
  fs::copy_file(src / "oscillating_sleigh.model.toml", dir / "oscillating_sleigh.model.toml");
  write_file(dir / "r.toml",
             "model = \"oscillating_sleigh.model.toml\"\n"
             "formulations = [\"udwadia_kalaba\", \"null_space\"]\n"
             "[time]\nt_end = 10.0\nsave_every = 0.5\n"
             "[integrator]\nmethod = \"dop853\"\nrtol = 1e-12\natol = 1e-13\n"
             "[ensemble]\nsize = 8\nseed = 5\n"
             "[ensemble.q0]\ntheta = { uniform = [-3.0, 3.0] }\n"
             "[ensemble.qd0]\nx = { uniform = [-2.0, 2.0] }\ntheta = { uniform = [-2.0, 2.0] }\n"
             "[output]\npath = \"r.h5\"\nfields = [\"q\", \"qdot\"]\n"
             // the tangent plugin the next test runs (one plugin to compile, not two): the
             // state is integrated as without it, the tangent only joins the error control
             "[lyapunov]\nenabled = true\n");
  const auto r = run_nholo("run r.toml -q", dir, shared_cache_env());
  ASSERT_EQ(r.code, 0) << r.output;
  const auto f = nholo::h5::File::open_ro((dir / "r.h5").string());
  const auto q0 = f.root().open_dataset("initial/q0").read<double>();
  const auto qd0 = f.root().open_dataset("initial/qdot0").read<double>();
  const auto times = f.root().open_dataset("udwadia_kalaba/time").read<double>();
  const ReducedSleigh red;
  double worst = 0;
  for (const std::string form : {"udwadia_kalaba", "null_space"}) {
    const auto q = f.root().open_dataset(form + "/q").read<double>();
    const auto qd = f.root().open_dataset(form + "/qdot").read<double>();
    const size_t ns = times.size();
    for (size_t i = 0; i < 8; ++i) {
      const double th0 = q0[3 * i + 2];
      const double u0 = qd0[3 * i] * std::cos(th0) + qd0[3 * i + 1] * std::sin(th0);
      const auto want = red.solve(u0, qd0[3 * i + 2], times);
      for (size_t k = 0; k < ns; ++k) {
        const size_t o = (i * ns + k) * 3;
        const double th = q[o + 2];
        const double u = qd[o] * std::cos(th) + qd[o + 1] * std::sin(th);
        const double w = qd[o + 2];
        worst = std::max({worst, std::fabs(u - want[k][0]), std::fabs(w - want[k][1])});
        ASSERT_NEAR(u, want[k][0], 1e-8) << form << " trajectory " << i << " t " << times[k];
        ASSERT_NEAR(w, want[k][1], 1e-8) << form << " trajectory " << i << " t " << times[k];
      }
    }
  }
  std::printf("oscillating sleigh, t <= 10: largest difference from the reduced equations %.2e\n",
              worst);
  fs::remove_all(dir);
}

// The reduced (u, omega) flow's Jacobian d(u', omega')/d(u, omega) of
// ReducedSleigh at t (by hand from its equations, A (u', omega')^T = r with A
// independent of (u, omega): A^-1 dr/d(u, omega)), row-major.
void reduced_sleigh_jacobian(const ReducedSleigh& s, double t, double u, double w, double J[4]) {
  const double eta = s.b + s.A * std::sin(s.Omega * t),
               eta1 = s.A * s.Omega * std::cos(s.Omega * t);
  const double M = s.m0 + s.m, c = s.m0 * s.a + s.m * s.xi,
               Jz = s.I0 + s.m0 * s.a * s.a + s.m * s.xi * s.xi;
  const double a11 = M, a12 = -s.m * eta, a22 = Jz + s.m * eta * eta;
  const double det = a11 * a22 - a12 * a12;
  const double g11 = -s.k_u, g12 = 2 * c * w + 2 * s.m * eta1;
  const double g21 = -c * w, g22 = -c * u - 2 * s.m * eta * eta1 - s.k_w;
  J[0] = (a22 * g11 - a12 * g21) / det;
  J[1] = (a22 * g12 - a12 * g22) / det;
  J[2] = (a11 * g21 - a12 * g11) / det;
  J[3] = (a11 * g22 - a12 * g12) / det;
}

// The two exponents of the reduced (u, omega) motion measured on the tangent
// vectors B e_1, B e_2 (B: 2 x 2, the columns the reduced parts of the whole
// state's initial deltas), independently of nholo: the reduced equations and
// their variational equation integrated together by RK4 (step 1e-3),
// Gram-Schmidt every unit of time; the estimates (log sums + log r_j(t)) / t
// at each of the times.
std::vector<std::array<double, 2>> reduced_sleigh_exponents(const ReducedSleigh& red, double u0,
                                                            double w0, const double B[4],
                                                            const std::vector<double>& times) {
  // s = (u, w, d1u, d1w, d2u, d2w)
  const auto rhs = [&](double t, const double* s, double* d) {
    red.rhs(t, s, d);
    double J[4];
    reduced_sleigh_jacobian(red, t, s[0], s[1], J);
    for (int j = 0; j < 2; ++j) {
      d[2 + 2 * j] = J[0] * s[2 + 2 * j] + J[1] * s[3 + 2 * j];
      d[3 + 2 * j] = J[2] * s[2 + 2 * j] + J[3] * s[3 + 2 * j];
    }
  };
  // the QR of the pair (columns a, b): lengths r1, r2 of the orthogonalised columns
  const auto gram_schmidt = [](double* a, double* b, double& r1, double& r2) {
    r1 = std::hypot(a[0], a[1]);
    a[0] /= r1;
    a[1] /= r1;
    const double p = a[0] * b[0] + a[1] * b[1];
    b[0] -= p * a[0];
    b[1] -= p * a[1];
    r2 = std::hypot(b[0], b[1]);
    b[0] /= r2;
    b[1] /= r2;
  };
  double s[6] = {u0, w0, B[0], B[2], B[1], B[3]}, sum[2] = {0, 0}, t = 0;
  std::vector<std::array<double, 2>> out;
  const double h = 1e-3;
  for (const double T : times) {
    while (t < T - 1e-12) {
      const double until = std::min(T, std::floor(t + 1e-9) + 1.0);
      while (t < until - 1e-12) {
        const double step = std::min(h, until - t);
        double k1[6], k2[6], k3[6], k4[6], y[6];
        rhs(t, s, k1);
        for (int i = 0; i < 6; ++i) y[i] = s[i] + 0.5 * step * k1[i];
        rhs(t + 0.5 * step, y, k2);
        for (int i = 0; i < 6; ++i) y[i] = s[i] + 0.5 * step * k2[i];
        rhs(t + 0.5 * step, y, k3);
        for (int i = 0; i < 6; ++i) y[i] = s[i] + step * k3[i];
        rhs(t + step, y, k4);
        for (int i = 0; i < 6; ++i) s[i] += step / 6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
        t += step;
      }
      double r1, r2;
      gram_schmidt(s + 2, s + 4, r1, r2);
      sum[0] += std::log(r1);
      sum[1] += std::log(r2);
    }
    out.push_back({sum[0] / T, sum[1] / T});
  }
  return out;
}

// [lyapunov] observables: the oscillating sleigh in a regular regime (A =
// 0.5, k_u = k_w = 0.3: every start falls onto a periodic motion of (u,
// omega)) measured in the norm of the reduced quantities u = x_dot cos(theta)
// + y_dot sin(theta) and omega = theta_dot. Their exponents are those of the
// reduced equations alone on the same tangent vectors: the whole state's
// initial deltas (kernels/lyapunov.hpp initial_tangent, with observables
// made tangent to the constraint manifold: a perturbation across the knife
// edge would stay, a constant of the Udwadia-Kalaba flow, and drive (u,
// omega) forever) mapped by the observables' gradient at the start. Both are
// negative, where the whole state's largest exponent is not (the headings'
// and positions' directions grow linearly: about log T / T). The last save's
// running estimates are the per-trajectory result bit for bit.
TEST(LyapunovRuns, TheRegularSleighsObservedExponentsAreItsReducedMotions) {
  const fs::path dir = temp_dir("sleigh_observed");
  const fs::path src = fs::path(NHOLO_SOURCE_DIR) / "examples" / "models";
  fs::copy_file(src / "oscillating_sleigh.model.toml", dir / "oscillating_sleigh.model.toml");
  write_file(dir / "r.toml",
             "model = \"oscillating_sleigh.model.toml\"\n"
             "[params]\nA = 0.5\nk_u = 0.3\nk_w = 0.3\n"
             "[time]\nt_end = 200.0\nsave_every = 20.0\n"
             "[integrator]\nmethod = \"dop853\"\nrtol = 1e-11\natol = 1e-13\n"
             "[ensemble]\nsize = 4\nseed = 11\n"
             "[ensemble.q0]\ntheta = { uniform = [-3.0, 3.0] }\n"
             "[ensemble.qd0]\nx = { uniform = [-1.0, 1.0] }\ntheta = { uniform = [-1.0, 1.0] }\n"
             "[output]\npath = \"r.h5\"\n"
             "fields = [\"lyapunov_estimate\", \"lyapunov_observed_estimate\"]\n"
             "[lyapunov]\nenabled = true\n"
             "observables = [\"x_dot*cos(theta) + y_dot*sin(theta)\", \"theta_dot\"]\n");
  const auto r = run_nholo("run r.toml -q", dir, shared_cache_env());
  ASSERT_EQ(r.code, 0) << r.output;
  const auto f = nholo::h5::File::open_ro((dir / "r.h5").string());
  const auto q0 = f.root().open_dataset("initial/q0").read<double>();
  const auto qd0 = f.root().open_dataset("initial/qdot0").read<double>();
  const auto times = f.root().open_dataset("udwadia_kalaba/time").read<double>();
  const auto observed = f.root().open_dataset("udwadia_kalaba/lyapunov_observed").read<double>();
  const auto whole = f.root().open_dataset("udwadia_kalaba/lyapunov").read<double>();
  const auto running =
      f.root().open_dataset("udwadia_kalaba/lyapunov_observed_estimate").read<double>();
  const size_t ns = times.size();
  ASSERT_EQ(ns, 11u);
  ASSERT_EQ(observed.size(), 4u);
  ASSERT_EQ(running.size(), 4 * ns);
  const auto dot = [](const double* a, const double* b) {
    double s = 0;
    for (int c = 0; c < 6; ++c) s += a[c] * b[c];
    return s;
  };
  ReducedSleigh red;
  red.A = 0.5;
  red.k_u = red.k_w = 0.3;
  double worst = 0;
  for (size_t i = 0; i < 4; ++i) {
    const double th = q0[3 * i + 2], xd = qd0[3 * i], yd = qd0[3 * i + 1];
    // the initial delta: 1 + 0.5 sin(1.7 c + 0.3) less its part along the
    // knife edge's gradient (y_dot cos(theta) - x_dot sin(theta) = 0 along
    // (x, y, theta, x_dot, y_dot, theta_dot)), then normalised
    // (docs/physics.md 4a)
    const double gk[6] = {0, 0, -yd * std::sin(th) - xd * std::cos(th), -std::sin(th),
                          std::cos(th), 0};
    double d[6];
    for (int c = 0; c < 6; ++c) d[c] = 1.0 + 0.5 * std::sin(1.7 * c + 0.3);
    const double across = dot(gk, d) / dot(gk, gk);
    for (int c = 0; c < 6; ++c) d[c] -= across * gk[c];
    const double norm = std::sqrt(dot(d, d));
    for (double& x : d) x /= norm;
    // gradients of u and omega along (x, y, theta, x_dot, y_dot, theta_dot)
    const double gu[6] = {0, 0, -xd * std::sin(th) + yd * std::cos(th), std::cos(th),
                          std::sin(th), 0};
    const double gw[6] = {0, 0, 0, 0, 0, 1};
    // (the second column, any other direction, does not change the first's exponent)
    const double B[4] = {dot(gu, d), -dot(gw, d), dot(gw, d), dot(gu, d)};
    const auto want = reduced_sleigh_exponents(
        red, xd * std::cos(th) + yd * std::sin(th), qd0[3 * i + 2], B,
        std::vector<double>(times.begin() + 1, times.end()));
    for (size_t k = 1; k < ns; ++k) {
      const double got = running[i * ns + k];
      worst = std::max(worst, std::fabs(got - want[k - 1][0]));
      ASSERT_NEAR(got, want[k - 1][0], 1e-6) << "trajectory " << i << " t " << times[k];
    }
    EXPECT_TRUE(std::isnan(running[i * ns])) << "no estimate at t = 0";
    // bit for bit: the last save's estimate is the per-trajectory result
    EXPECT_EQ(std::memcmp(&running[i * ns + ns - 1], &observed[i], 8), 0);
    // a periodic attractor of the reduced motion, and the whole state's
    // largest exponent above zero (the linear growth along the symmetries)
    EXPECT_LT(observed[i], -0.03) << "trajectory " << i;
    EXPECT_GT(whole[i], 0.0) << "trajectory " << i;
    std::printf("regular sleigh %zu: observed exponent %.6f, whole state's %.6f\n", i, observed[i],
                whole[i]);
  }
  std::printf("observed exponents against the reduced equations: largest difference %.2e\n",
              worst);
  const auto s = run_nholo("stats r.h5", dir);
  ASSERT_EQ(s.code, 0) << s.output;
  EXPECT_NE(s.output.find("Lyapunov exponent of the observables: mean"), std::string::npos)
      << s.output;
  fs::remove_all(dir);
}

// The divergence of the reduced (u, omega) flow of ReducedSleigh: the trace
// of d(u', omega')/d(u, omega), by hand from its equations, A (u', omega')^T =
// r(u, omega, t) with A independent of (u, omega): tr(A^-1 dr/d(u, omega)).
double reduced_sleigh_divergence(const ReducedSleigh& s, double t, double u, double w) {
  const double eta = s.b + s.A * std::sin(s.Omega * t),
               eta1 = s.A * s.Omega * std::cos(s.Omega * t);
  const double M = s.m0 + s.m, c = s.m0 * s.a + s.m * s.xi,
               J = s.I0 + s.m0 * s.a * s.a + s.m * s.xi * s.xi;
  const double a11 = M, a12 = -s.m * eta, a22 = J + s.m * eta * eta;
  const double det = a11 * a22 - a12 * a12;
  const double g11 = -s.k_u, g12 = 2 * c * w + 2 * s.m * eta1;  // dr1/du, dr1/domega
  const double g21 = -c * w, g22 = -c * u - 2 * s.m * eta * eta1 - s.k_w;
  return (a22 * g11 - a12 * g21 - a12 * g12 + a11 * g22) / det;
}

// The whole spectrum of the chaotic sleigh (six exponents of the state (x,
// y, theta, x_dot, y_dot, theta_dot)): their sum is (1 / T) log det of the
// tangent flow's map (Liouville), the time average of the flow's divergence.
// x, y, theta do not enter the accelerations, the knife edge's residual is a
// constant of the Udwadia-Kalaba flow and the map (x_dot, y_dot) -> (u, its
// residual) is a rotation, so that divergence is the reduced flow's, computed
// here from its equations at the saved (u, omega) and integrated by
// Simpson's rule. The largest exponent is the spectrum's first; the Kaplan-
// Yorke dimension follows from the spectrum; `nholo stats` and the run's log
// show the spectrum's means.
TEST(LyapunovRuns, TheSleighsSpectrumSumsToItsPhaseSpaceContraction) {
  const fs::path dir = temp_dir("sleigh_spectrum");
  const fs::path src = fs::path(NHOLO_SOURCE_DIR) / "examples" / "models";
  fs::copy_file(src / "oscillating_sleigh.model.toml", dir / "oscillating_sleigh.model.toml");
  const double T = 40.0, h = 0.01;
  write_file(dir / "s.toml",
             "model = \"oscillating_sleigh.model.toml\"\n"
             "formulations = [\"udwadia_kalaba\"]\n"
             "[time]\nt_end = 40.0\nsave_every = 0.01\n"
             "[integrator]\nmethod = \"dop853\"\nrtol = 1e-11\natol = 1e-13\n"
             "[ensemble]\nsize = 4\nseed = 3\n"
             "[ensemble.q0]\ntheta = { uniform = [-3.0, 3.0] }\n"
             "[ensemble.qd0]\nx = { uniform = [-2.0, 2.0] }\ntheta = { uniform = [-2.0, 2.0] }\n"
             "[output]\npath = \"s.h5\"\nfields = [\"q\", \"qdot\", \"lyapunov_estimate\"]\n"
             "[lyapunov]\nenabled = true\nexponents = 6\n");
  const auto r = run_nholo("run s.toml", dir, shared_cache_env());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("nholo: udwadia_kalaba: Lyapunov spectrum: means "), std::string::npos)
      << r.output;
  const auto f = nholo::h5::File::open_ro((dir / "s.h5").string());
  const auto g = f.root().open_group("udwadia_kalaba");
  EXPECT_EQ(g.open_dataset("exponent").read<int64_t>(),
            (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));  // the axis' scale
  const auto spec_d = g.open_dataset("lyapunov_spectrum");
  ASSERT_EQ(spec_d.dims(), (std::vector<hsize_t>{4, 6}));
  const auto spec = spec_d.read<double>();
  const auto largest = g.open_dataset("lyapunov").read<double>();
  const auto sum = g.open_dataset("lyapunov_sum").read<double>();
  const auto ky = g.open_dataset("kaplan_yorke").read<double>();
  const auto q = g.open_dataset("q").read<double>();
  const auto qd = g.open_dataset("qdot").read<double>();
  const ReducedSleigh red;
  const size_t ns = static_cast<size_t>(std::lround(T / h)) + 1;
  ASSERT_EQ(q.size(), 4 * ns * 3);
  for (size_t i = 0; i < 4; ++i) {
    // Simpson's rule over the saves (an even number of intervals)
    double integral = 0;
    for (size_t k = 0; k < ns; ++k) {
      const size_t o = (i * ns + k) * 3;
      const double th = q[o + 2];
      const double u = qd[o] * std::cos(th) + qd[o + 1] * std::sin(th);
      const double wgt = (k == 0 || k == ns - 1) ? 1.0 : (k % 2 ? 4.0 : 2.0);
      integral += wgt * reduced_sleigh_divergence(red, static_cast<double>(k) * h, u, qd[o + 2]);
    }
    const double contraction = integral * h / 3 / T;
    double s = 0;
    for (int j = 0; j < 6; ++j) s += spec[i * 6 + j];
    EXPECT_NEAR(s, contraction, 1e-7 * std::fabs(contraction)) << "trajectory " << i;
    EXPECT_NEAR(sum[i], s, 1e-14) << "trajectory " << i;
    EXPECT_EQ(largest[i], spec[i * 6]) << "trajectory " << i;
    // (finite-time exponents need not come in order: four tend to 0 like log(T)/T)
    EXPECT_GT(spec[i * 6], 0.1) << "trajectory " << i;
    EXPECT_LT(spec[i * 6 + 5], -0.1) << "trajectory " << i;
    EXPECT_GT(ky[i], 1.0);
    EXPECT_LT(ky[i], 6.0);
    std::printf(
        "sleigh %zu: spectrum(40) %+.4f %+.4f %+.4f %+.4f %+.4f %+.4f, sum %+.8f, contraction "
        "%+.8f, Kaplan-Yorke %.4f\n",
        i, spec[i * 6], spec[i * 6 + 1], spec[i * 6 + 2], spec[i * 6 + 3], spec[i * 6 + 4],
        spec[i * 6 + 5], s, contraction, ky[i]);
  }
  // the running estimates at the saves: at t_end the result's bits, and at
  // t = 20 those of a run that ends there (its steps are the same up to 20)
  const auto est_d = g.open_dataset("lyapunov_estimate");
  ASSERT_EQ(est_d.dims(), (std::vector<hsize_t>{4, ns, 6}));
  const auto est = est_d.read<double>();
  ASSERT_EQ(
      run_nholo("run -q s.toml --set output.path=h.h5 --set time.t_end=20", dir, shared_cache_env())
          .code,
      0);
  const auto half = nholo::h5::File::open_ro((dir / "h.h5").string())
                        .root()
                        .open_dataset("udwadia_kalaba/lyapunov_spectrum")
                        .read<double>();
  const size_t k20 = static_cast<size_t>(std::lround(20.0 / h));
  for (size_t i = 0; i < 4; ++i)
    for (size_t j = 0; j < 6; ++j) {
      EXPECT_EQ(est[(i * ns + ns - 1) * 6 + j], spec[i * 6 + j]) << i << " " << j;
      EXPECT_EQ(est[(i * ns + k20) * 6 + j], half[i * 6 + j]) << i << " " << j;
      EXPECT_TRUE(std::isnan(est[(i * ns) * 6 + j]));  // no time has passed at t = 0
    }
  const auto st = run_nholo("stats s.h5", dir);
  ASSERT_EQ(st.code, 0) << st.output;
  EXPECT_NE(st.output.find("Lyapunov spectrum: means "), std::string::npos) << st.output;
  EXPECT_NE(st.output.find("Kaplan-Yorke dimension: mean "), std::string::npos) << st.output;
  // two shards (of at least 1024 trajectories each) merged, linked and
  // copied, hold the same spectra as one run, bit for bit
  const std::string env = shared_cache_env(),
                    many =
                        " --set ensemble.size=2048 --set time.t_end=0.25 --set "
                        "time.save_every=0.125 --set output.fields=[]";
  ASSERT_EQ(run_nholo("run -q s.toml --set output.path=w.h5" + many, dir, env).code, 0);
  for (int part = 0; part < 2; ++part)
    ASSERT_EQ(run_nholo("run -q s.toml --set output.path=p.h5 --shard " + std::to_string(part) +
                            "/2" + many,
                        dir, env)
                  .code,
              0);
  const std::string shards = nholo_test::shard_files(dir, "p");
  for (const char* how : {"", "--copy "}) {
    fs::remove(dir / "merged.h5");
    const auto m = run_nholo(std::string("merge ") + how + "merged.h5" + shards, dir, env);
    ASSERT_EQ(m.code, 0) << m.output;
    const auto same = nholo_test::fault_check("same", dir / "w.h5", dir / "merged.h5");
    EXPECT_EQ(same.code, 0) << how << same.output;
  }
  fs::remove_all(dir);
}

// The chaotic example (examples/models/oscillating_sleigh.model.toml: a
// Chaplygin sleigh driven by an internal mass oscillating across the blade,
// with friction; every start falls onto one strange attractor). No exponent
// is published for its parameters, so the reference is computed from the
// reduced (u, omega) equations alone, independently of nholo, by scipy
// (scripts/benettin_sleigh.py, DOP853 rtol 1e-11): Benettin's two nearby
// trajectories and the variational equation on one reference trajectory
// (they agree to 1e-7), T = 20000, from nine starts: mean 0.2295, standard
// error 0.0007 (e.g. 0.2287 from (0.5, 0.3), 0.2308 from (-1, 1), 0.2300
// from (2, -1.5)). A chaotic trajectory's finite-time exponent scatters
// (std about 0.014 at T = 1000), so the test compares the mean over 64
// starts (standard error about 0.8 %) within 2 %, and asks every one to be
// clearly positive.
constexpr double kBenettinMean = 0.2295;
constexpr double kBenettinSpread = 0.0007;

TEST(LyapunovRuns, TheChaoticSleighsExponentAgreesWithBenettinsEstimate) {
#if defined(__SANITIZE_ADDRESS__)
  std::printf(
      "SKIPPED in the sanitizer build: 64 trajectories to t = 1000 for a statistic; the "
      "run's code (the tangent plugin, its output) is the saddle's and the coin's, which "
      "run here; the product build's run of this test checks the exponent\n");
  GTEST_SKIP() << "sanitizer build: the statistic is checked by the product build";
#endif
  const fs::path dir = temp_dir("chaotic_sleigh");
  const fs::path src = fs::path(NHOLO_SOURCE_DIR) / "examples" / "models";
  fs::copy_file(src / "oscillating_sleigh.model.toml", dir / "oscillating_sleigh.model.toml");
  fs::copy_file(src / "oscillating_sleigh.toml", dir / "oscillating_sleigh.toml");
  const auto r = run_nholo(
      "run oscillating_sleigh.toml -q --set output.path=o.h5 --set time.t_end=1000 --set "
      "'formulations=[\"udwadia_kalaba\"]' --set output.fields=[]",
      dir, shared_cache_env());
  ASSERT_EQ(r.code, 0) << r.output;
  const auto st = read_status(dir / "o.h5", "udwadia_kalaba");
  const auto ly = read_lyapunov(dir / "o.h5", "udwadia_kalaba");
  ASSERT_EQ(ly.size(), 64u);
  double sum = 0, lo = 1e300, hi = -1e300;
  for (size_t i = 0; i < ly.size(); ++i) {
    EXPECT_EQ(st[i], 0);
    EXPECT_GT(ly[i], 0.5 * kBenettinMean) << "trajectory " << i;
    sum += ly[i];
    lo = std::min(lo, ly[i]);
    hi = std::max(hi, ly[i]);
  }
  const double mean = sum / static_cast<double>(ly.size());
  std::printf(
      "oscillating sleigh: lambda(1000) mean %.5f over 64 starts (min %.4f, max %.4f); "
      "Benettin (reduced equations, T = 20000) %.4f +- %.4f\n",
      mean, lo, hi, kBenettinMean, kBenettinSpread);
  EXPECT_NEAR(mean, kBenettinMean, 0.02 * kBenettinMean);
  fs::remove_all(dir);
}

// What a run with [lyapunov] on the CUDA backend compiles for a built-in
// model: its tangent plugin and the GPU module of TangentSystem<...> (NVRTC
// compiles it, no GPU needed), under their own names.
TEST(LyapunovRuns, ABuiltInModelsTangentGpuModuleCompiles) {
#if defined(__SANITIZE_ADDRESS__)
  std::printf(
      "SKIPPED in the sanitizer build: NVRTC compiles the kernel source here and is not "
      "instrumented; the product build's run of this test checks it\n");
  GTEST_SKIP() << "sanitizer build: NVRTC's compile is checked by the product build";
#endif
  const fs::path dir = temp_dir("gpu_module");
  // the module is what is checked: the plugin (its layout) unoptimized, 3x faster to build
  const std::string env =
      "NHOLO_CACHE_DIR='" + (dir / "cache").string() + "' NHOLO_PLUGIN_CXXFLAGS=-O0";
  // run from a folder holding another copy of nholo's headers (a checkout):
  // the module's includes are the headers of nholo's include path, not the
  // working directory's (which NVRTC once also read, defining every function
  // twice, when the module's program had a relative name)
  const fs::path checkout = dir / "checkout";
  fs::create_directories(checkout);
  for (const char* room : {"models", "kernels"})
    fs::copy(fs::path(NHOLO_SOURCE_DIR) / room, checkout / room, fs::copy_options::recursive);
  // three exponents: TangentSystem<..., 3> in a module (and a plugin) of its
  // own. One build: the module of one exponent is the same source with 1 for
  // 3 (an NVRTC compile of ~40 s each; scripts/gpu_check.sh runs that one)
  const auto r = run_nholo(
      "model build rolling_coin --lyapunov --exponents 3 --gpu-arch sm_90 --formulations "
      "udwadia_kalaba",
      checkout, env);
  if (r.code != 0 && r.output.find("cannot be loaded") != std::string::npos) {
    std::printf("SKIPPED: NVRTC is not available here: %s\n", r.output.c_str());
    GTEST_SKIP() << r.output;
  }
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("plugin (with the tangent systems): "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("GPU module udwadia_kalaba (tangent system) dopri5 sm_90: "),
            std::string::npos)
      << r.output;
  int modules = 0;
  for (const auto& e : fs::directory_iterator(dir / "cache"))
    if (e.path().extension() == ".cubin" &&
        e.path().filename().string().find(
            "rolling_coin-gpu-udwadia_kalaba-tangent-dopri5-sm_90-") != std::string::npos)
      ++modules;
  EXPECT_EQ(modules, 1) << r.output;
  std::printf("%s", r.output.substr(r.output.find("GPU module")).c_str());
  int sources_of_three = 0;
  for (const auto& e : fs::directory_iterator(dir / "cache"))
    if (e.path().extension() == ".cu") {
      const std::string text = nholo_test::read_text(e.path());
      const auto at = text.find("using NholoSystem = nholo::TangentSystem<");
      if (at != std::string::npos && text.find(", 3>;\n", at) == text.find(";\n", at) - 4)
        ++sources_of_three;
    }
  EXPECT_EQ(sources_of_three, 1) << r.output;
  // more exponents than the state has components, or without --lyapunov: refused
  const auto nine = run_nholo("model build rolling_coin --lyapunov --exponents 9", dir, env);
  EXPECT_EQ(nine.code, 2) << nine.output;
  EXPECT_NE(nine.output.find("--exponents: 9 exponents: the state of formulation"),
            std::string::npos)
      << nine.output;
  const auto alone = run_nholo("model build rolling_coin --exponents 2", dir, env);
  EXPECT_EQ(alone.code, 2) << alone.output;
  EXPECT_NE(alone.output.find("--exponents requires --lyapunov"), std::string::npos)
      << alone.output;
  // without --lyapunov a built-in model has nothing to build
  const auto plain = run_nholo("model build rolling_coin", dir, env);
  EXPECT_EQ(plain.code, 2) << plain.output;
  EXPECT_NE(plain.output.find("is a built-in model"), std::string::npos) << plain.output;
  fs::remove_all(dir);
}

// `model build FILE --lyapunov` builds both plugins of a model file: the
// one with the tangent systems ([lyapunov] runs) and the plain one, so the
// next run without [lyapunov] does not compile again, and on a CPU with SIMD
// lanes the lane add-on of each (unoptimised here: it is the building that
// is tested)
TEST(LyapunovRuns, ModelBuildWithLyapunovBuildsBothPluginsOfAModelFile) {
  const fs::path dir = temp_dir("build_both");
  fs::copy_file(
      fs::path(NHOLO_SOURCE_DIR) / "examples" / "models" / "oscillating_sleigh.model.toml",
      dir / "s.model.toml");
  const std::string env =
      "NHOLO_CACHE_DIR='" + (dir / "cache").string() + "' NHOLO_PLUGIN_CXXFLAGS=-O0";
  const auto both = run_nholo("model build s.model.toml --lyapunov", dir, env);
  ASSERT_EQ(both.code, 0) << both.output;
  EXPECT_NE(both.output.find("\nplugin: "), std::string::npos) << both.output;
  EXPECT_NE(both.output.find("\nplugin (with the tangent systems): "), std::string::npos)
      << both.output;
  const nholo::SimdIsa isa = nholo::cpu_simd_isa();
  if (isa != nholo::SimdIsa::off) {
    const std::string name = nholo::simd_isa_name(isa);
    EXPECT_NE(both.output.find("\nlane add-on (" + name + "): "), std::string::npos) << both.output;
    EXPECT_NE(both.output.find("\nlane add-on (" + name + ", tangent system): "), std::string::npos)
        << both.output;
  } else {
    std::printf("[ note ] no AVX2 + FMA here: no lane add-on to build\n");
  }
  const auto plain = run_nholo("model build s.model.toml", dir, env);
  ASSERT_EQ(plain.code, 0) << plain.output;
  EXPECT_NE(plain.output.find("cached (compiled earlier in"), std::string::npos) << plain.output;
  fs::remove_all(dir);
}

// Exponents in shards merged (virtually and copied) and in a run resumed
// after a device fault are the same bits as in one uninterrupted run (every
// dataset compared by tests/python/fault_check.py): the tangent state lives
// in the slice like the state, and the exponent is read from a slice's final
// states, so cutting the ensemble or the run changes nothing.
TEST(LyapunovRuns, ShardsMergedAndAResumedRunHoldTheSameExponents) {
  const fs::path dir = temp_dir("shards");
  write_file(dir / "saddle.model.toml", kSaddleModel);
  // 2500 particles near the saddle; slices of 1024 in a budget of 1 MB, three
  // windows of 4 saves each
  write_file(
      dir / "c.toml",
      "model = \"saddle.model.toml\"\n"
      "formulations = [\"udwadia_kalaba\", \"null_space\"]\n"
      "[time]\nt_end = 6.0\nsave_every = 0.5\n"
      "[integrator]\nmethod = \"dopri5\"\nrtol = 1e-10\natol = 1e-12\n"
      "[ensemble]\nsize = 2500\nseed = 3\n"
      "[ensemble.q0]\nx = { uniform = [-0.1, 0.1] }\ny = { uniform = [-0.1, 0.1] }\nz = 0.0\n"
      "[ensemble.qd0]\nx = { uniform = [-0.1, 0.1] }\ny = { uniform = [-0.1, 0.1] }\n"
      "z = 0.0\n"
      "[output]\nfields = [\"q\"]\nwindow = 4\n"
      "[lyapunov]\nenabled = true\nrenormalize_every = 0.5\n");
  const std::string env = shared_cache_env();
  ASSERT_EQ(run_nholo("run -q c.toml --set output.path=single.h5", dir, env).code, 0);
  for (int r = 0; r < 2; ++r) {
    const auto res = run_nholo("run -q c.toml --set output.path=s.h5 --shard " + std::to_string(r) +
                                   "/2 --set output.memory_budget_mb=" + std::to_string(1 + 3 * r),
                               dir, env);
    ASSERT_EQ(res.code, 0) << res.output;
  }
  const std::string shards = nholo_test::shard_files(dir, "s");
  for (const char* how : {"", "--copy "}) {
    fs::remove(dir / "merged.h5");
    const auto m = run_nholo(std::string("merge ") + how + "merged.h5" + shards, dir, env);
    ASSERT_EQ(m.code, 0) << m.output;
    const auto same = nholo_test::fault_check("same", dir / "single.h5", dir / "merged.h5");
    EXPECT_EQ(same.code, 0) << how << same.output;
  }
  // a fault in the second slice's third window (slices of 1024), then --resume
  const auto f = run_nholo("run -q c.toml --set output.path=r.h5 --set output.memory_budget_mb=1",
                           dir, env + " NHOLO_FAILPOINT_DEVICE_FAULT=6");
  ASSERT_EQ(f.code, 3) << f.output;
  ASSERT_TRUE(fs::exists(dir / "r.h5.partial"));
  const auto res = run_nholo(
      "run -q c.toml --set output.path=r.h5 --set output.memory_budget_mb=1 --resume", dir, env);
  ASSERT_EQ(res.code, 0) << res.output;
  const auto same = nholo_test::fault_check("same", dir / "single.h5", dir / "r.h5");
  EXPECT_EQ(same.code, 0) << same.output;
  // the exponents are there, finite, near sqrt(k) = 1 for these starts
  const auto ly = read_lyapunov(dir / "single.h5", "null_space");
  ASSERT_EQ(ly.size(), 2500u);
  for (double v : ly) EXPECT_TRUE(std::isfinite(v) && v > 0.5 && v < 1.5) << v;
  fs::remove_all(dir);
}

TEST(LyapunovRuns, BadInputIsRefusedNamingTheKey) {
  const fs::path dir = temp_dir("refused");
  struct Case {
    std::string model, lyapunov, key, says;
  };
  const Case cases[] = {
      {"sleigh", "enabled = true", "lyapunov.enabled",
       "formulation embedded has no tangent system"},
      {"rolling_coin", "enabled = \"yes\"", "lyapunov.enabled", "must be true or false"},
      {"rolling_coin", "enabled = true\nrenormalize_every = 0.0", "lyapunov.renormalize_every",
       "must be a time > 0"},
      {"rolling_coin", "enabled = true\ncount = 2", "lyapunov.count", "renormalize_every"},
      {"rolling_coin", "enabled = true\nexponents = 0", "lyapunov.exponents",
       "must be an integer from 1 to 64"},
      {"rolling_coin", "enabled = true\nexponents = 65", "lyapunov.exponents",
       "must be an integer from 1 to 64"},
      // the coin's state: 4 coordinates and their rates
      {"rolling_coin", "enabled = true\nexponents = 9", "lyapunov.exponents",
       "9 exponents of formulation udwadia_kalaba, whose state has 8 components: accepted 1 to 8"},
      // the table without `enabled` (it computed nothing and said nothing)
      {"rolling_coin", "renormalize_every = 0.5", "lyapunov.enabled",
       "a [lyapunov] table computes the exponents with enabled = true"},
      // observables: expressions of the state, 1 to 8, the largest exponent only
      {"rolling_coin", "enabled = true\nobservables = []", "lyapunov.observables",
       "0 expressions; accepted: 1 to 8"},
      {"rolling_coin", "enabled = true\nobservables = [1.0]", "lyapunov.observables",
       "expected a string, got a number"},
      {"rolling_coin", "enabled = true\nobservables = [\"x_dot\", \"t^2\"]",
       "lyapunov.observables[1]", "reads none of the coordinates and their rates"},
      {"rolling_coin", "enabled = true\nobservables = [\"x_dot +\"]", "lyapunov.observables[0]",
       "position"},
      {"rolling_coin", "enabled = true\nobservables = [\"psi_dot\"]", "lyapunov.observables[0]",
       "psi_dot"},
      {"rolling_coin", "enabled = true\nexponents = 2\nobservables = [\"x_dot\", \"y_dot\"]",
       "lyapunov.observables", "the observables' exponent is the largest one only"},
  };
  for (const Case& c : cases) {
    const std::string forms =
        c.model == "sleigh" ? "formulations = [\"udwadia_kalaba\", \"embedded\"]\n" : "";
    write_file(dir / "bad.toml", "model = \"" + c.model + "\"\n" + forms +
                                     "[time]\nt_end = 1.0\n[output]\npath = \"bad.h5\"\n"
                                     "[lyapunov]\n" +
                                     c.lyapunov + "\n");
    const auto r = run_nholo("run bad.toml -q", dir);
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.output.find(c.key), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(dir / "bad.h5"));
    EXPECT_FALSE(fs::exists(dir / "bad.h5.partial"));
  }
  fs::remove_all(dir);
}

}  // namespace
