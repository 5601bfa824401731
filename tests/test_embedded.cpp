// Tests of kernels/formulations/embedded.hpp: Wang & Gao's embedded constraints
// ("Hamilton's principle with constraints embedded in the Lagrangian") on
// their sleigh (models/sleigh.hpp) and on the skate (models/skate.hpp),
// against values derived independently of the code under test
// (docs/formulations.md, "Embedded constraints"):
//
//  1. The right-hand side equals the sleigh's equations derived by hand in
//     intrinsic variables (speed v, heading rate w, mu = m a w - ell / v):
//       v' = g s cos th + mu w / m,   w' = -(v mu + m g s c sin th) / (m J),
//       mu' = -m g s sin th - m v w,  (s = sin alpha, c = (1 - paper_potential) a)
//     and whole paths agree with an integration of that form to 1e-10.
//  2. Embedded = vakonomic knife edge with lambda = -ell / v (the same
//     constrained variational problem), to 1e-10 (the embedded chart alone).
//  3. The Euler–Poisson residual (eq 26) along embedded paths is below 1e-8
//     relative to its largest term; along nonholonomic paths it is O(1).
//  4. ell0 = 0 gives the nonholonomic initial acceleration (the knife edge
//     exerts no torque); the distance then grows like t^3 (derived: the two
//     mu' differ at t = 0) and is O(1) within seconds on the slope; along the
//     fall line without rotation both motions coincide to rounding.
//  5. With the paper's potential the motion does not depend on a (fixed
//     heading acceleration, i.e. fixed mu0); with the physical one it does.
//  6. Through rest: the motion follows the intrinsic form (regular at v = 0)
//     through every rest to 1e-10, onto the backward branch and back, the
//     rest chart carrying it where v is small; uphill along the fall line it
//     slides back as the closed form says; a start at rest ends singular.
//  7. The skate goes through the same code path and gives the sleigh's
//     motion; two sleighs joined by a spring (a test model with two embedded
//     constraints, dependent coordinates interleaved) match the vakonomic
//     knife edges; an ensemble run (OpenMP) writes the residual and `stats`
//     shows it; bad input is refused with a clear message.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "host/io/h5.hpp"
#include "kernels/formulations/embedded.hpp"
#include "kernels/integrate.hpp"
#include "models/registry.hpp"
#include "tests/integrator_options.hpp"
#include "tests/nholo_cli.hpp"

using namespace nholo;
using namespace nholo::models;

namespace {

using V3 = Vec<double, 3>;
using Emb = EmbeddedSystem<Sleigh>;
constexpr int NE = Emb::N;  // 9: (q, qd, ell or lambda, chart, r)

Sleigh::Params sleigh(double a, double slope, double w = 0.0, double J = 0.6, double m = 1.3) {
  const double v[6] = {m, J, a, 9.81, slope, w};
  return Sleigh::make_params(v);
}

IntegratorOptions tight() {
  return nholo_test::tolerance_options(Method::dop853, 1e-12);
}

// a consistent embedded state: heading th along the motion, speed v > 0
Vec<double, NE> embedded_state(const Emb& sys, double th, double v, double w, double ell) {
  V3 q{{0.3, -0.2, th}}, qd{{v * std::cos(th), v * std::sin(th), w}};
  Vec<double, 1> l{{ell}};
  Vec<double, NE> y;
  sys.pack(q, qd, l, y);
  return y;
}

// ---- the hand-derived intrinsic form (docs/formulations.md): z = (x, y, th, v, w, mu)
struct Intrinsic {
  using scalar = double;
  static constexpr int N = 6;
  Sleigh::Params p;
  Status operator()(double, const Vec<double, 6>& z, Vec<double, 6>& dz) const {
    const double m = p.mass, gs = p.g * std::sin(p.slope), c = (1.0 - p.paper_potential) * p.a;
    const double th = z[2], v = z[3], w = z[4], mu = z[5];
    dz[0] = v * std::cos(th);
    dz[1] = v * std::sin(th);
    dz[2] = w;
    dz[3] = gs * std::cos(th) + mu * w / m;
    dz[4] = -(v * mu + m * gs * c * std::sin(th)) / (m * p.J);
    dz[5] = -m * gs * std::sin(th) - m * v * w;
    return Status::ok;
  }
  bool post_step(double, Vec<double, 6>&) const { return false; }
};

// embedded state -> intrinsic state, mu = m a w + lambda with lambda =
// -ell / v (the rest chart carries lambda itself)
Vec<double, 6> to_intrinsic(const Sleigh::Params& p, const Vec<double, NE>& y) {
  const double th = y[2], v = y[3] * std::cos(th) + y[4] * std::sin(th), w = y[5];
  const double lambda = Emb::in_rest_chart(y) ? y[6] : -y[6] / v;
  return Vec<double, 6>{{y[0], y[1], th, v, w, p.mass * p.a * w + lambda}};
}

template <class Sys, int N>
TrajectoryState<double, N> run_to(const Sys& sys, const Vec<double, N>& y0, double t_end,
                                  const IntegratorOptions& opt = tight()) {
  auto ts = start_trajectory(0.0, y0, opt);
  advance_to(sys, ts, t_end, opt);
  return ts;
}

double uni(std::mt19937_64& r, double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(r);
}

// ---------------------------------------------------------------------- 1

TEST(EmbeddedSleigh, RightHandSideIsTheHandDerivedIntrinsicForm) {
  std::mt19937_64 rng(16);
  double worst = 0;
  for (int k = 0; k < 300; ++k) {
    const double a = uni(rng, 0.0, 0.8);
    const auto p = sleigh(a, uni(rng, -0.6, 0.6), k % 3 == 0 ? 1.0 : uni(rng, 0.0, 1.0),
                          a * a + uni(rng, 0.1, 1.0), uni(rng, 0.5, 2.0));
    Emb sys;
    sys.params = p;
    const auto y = embedded_state(sys, uni(rng, -3.1, 3.1), uni(rng, 0.2, 3.0), uni(rng, -2.0, 2.0),
                                  uni(rng, -3.0, 3.0));
    Vec<double, NE> f;
    ASSERT_EQ(sys(0.7, y, f), Status::ok);
    // the same derivatives from the intrinsic form
    const auto z = to_intrinsic(p, y);
    Vec<double, 6> dz;
    Intrinsic{p}(0.7, z, dz);
    const double th = z[2], v = z[3], w = z[4], mu = z[5];
    const double xdd = dz[3] * std::cos(th) - v * w * std::sin(th);
    const double ydd = dz[3] * std::sin(th) + v * w * std::cos(th);
    // ell = v (m a w - mu)
    const double elld = dz[3] * (p.mass * p.a * w - mu) + v * (p.mass * p.a * dz[4] - dz[5]);
    const double want[4] = {xdd, ydd, dz[4], elld};
    const double got[4] = {f[3], f[4], f[5], f[6]};
    for (int i = 0; i < 4; ++i)
      worst = std::max(worst, std::fabs(got[i] - want[i]) / (1.0 + std::fabs(want[i])));
    EXPECT_EQ(f[7], 0.0);  // the chart and residual slots do not evolve
    EXPECT_EQ(f[8], 0.0);
  }
  std::printf("embedded sleigh RHS vs hand-derived intrinsic form: max rel. difference %.2e\n",
              worst);
  EXPECT_LT(worst, 1e-12);
}

TEST(EmbeddedSleigh, PathsAgreeWithIntrinsicIntegrationTo1e10) {
  struct Case {
    double a, slope, w, th, v, om, ell, t_end;
  };
  // t_end before the sleigh comes to rest (v stays > 0.3, checked)
  const Case cases[] = {{0.5, 0.3, 0.0, 0.4, 1.5, 0.7, 0.0, 0.8},
                        {0.0, 0.3, 0.0, -1.0, 2.0, 0.4, 0.5, 0.9},
                        {0.5, 0.0, 0.0, 0.7, 1.0, 1.2, -0.4, 3.0},
                        {0.3, -0.4, 1.0, 2.5, 2.5, -0.5, 1.0, 0.7}};
  double worst = 0;
  for (const Case& c : cases) {
    Emb sys;
    sys.params = sleigh(c.a, c.slope, c.w);
    const auto y0 = embedded_state(sys, c.th, c.v, c.om, c.ell);
    const Intrinsic in{sys.params};
    auto te = start_trajectory(0.0, y0, tight());
    auto ti = start_trajectory(0.0, to_intrinsic(sys.params, y0), tight());
    for (int k = 1; k <= 10; ++k) {
      const double t = c.t_end * k / 10.0;
      advance_to(sys, te, t, tight());
      advance_to(in, ti, t, tight());
      ASSERT_EQ(te.status, Status::ok);
      ASSERT_GT(ti.y[3], 0.3) << "the case must stay away from rest";
      for (int i = 0; i < 3; ++i) worst = std::max(worst, std::fabs(te.y[i] - ti.y[i]));
      worst = std::max(worst, std::fabs(to_intrinsic(sys.params, te.y)[5] - ti.y[5]) /
                                  (1.0 + std::fabs(ti.y[5])));
    }
  }
  std::printf("embedded vs hand-derived intrinsic integration: max |difference| %.2e\n", worst);
  EXPECT_LT(worst, 1e-10);
}

// ---------------------------------------------------------------------- 2

// L + ell (th - atan2(yd, xd)) and L + lambda (yd cos th - xd sin th) pose the
// same variational problem: near the constraint yd cos th - xd sin th =
// -v sin(th - atan2(yd, xd)) = -v (th - atan2) + O(2), so the extremals
// coincide with lambda = -ell / v, wherever v > 0.
TEST(EmbeddedSleigh, CoincidesWithVakonomicKnifeEdge) {
  double worst = 0, worst_mult = 0;
  for (double slope : {0.0, 0.3})
    for (double ell0 : {0.0, 0.8, -1.5}) {
      Emb es;
      es.params = sleigh(0.5, slope);
      es.rest_chart_enter = 0.0;  // the embedded chart's own equations throughout
      VakonomicSystem<Sleigh> vs;
      vs.params = es.params;
      const double th = 0.3, v = 1.8, om = -0.6;
      const auto y0 = embedded_state(es, th, v, om, ell0);
      Vec<double, 7> z0;
      vs.pack(V3{{y0[0], y0[1], y0[2]}}, V3{{y0[3], y0[4], y0[5]}}, Vec<double, 1>{{-ell0 / v}},
              z0);
      auto te = start_trajectory(0.0, y0, tight());
      auto tv = start_trajectory(0.0, z0, tight());
      for (int k = 1; k <= 8; ++k) {
        const double t = 0.1 * k;
        advance_to(es, te, t, tight());
        advance_to(vs, tv, t, tight());
        ASSERT_EQ(te.status, Status::ok);
        ASSERT_EQ(tv.status, Status::ok);
        for (int i = 0; i < 6; ++i) worst = std::max(worst, std::fabs(te.y[i] - tv.y[i]));
        const double ve = te.y[3] * std::cos(te.y[2]) + te.y[4] * std::sin(te.y[2]);
        worst_mult = std::max(worst_mult, std::fabs(tv.y[6] + te.y[6] / ve));
      }
    }
  std::printf(
      "embedded vs vakonomic knife edge (lambda0 = -ell0/v0): max |q, qd difference| "
      "%.2e, max |lambda + ell/v| %.2e\n",
      worst, worst_mult);
  EXPECT_LT(worst, 1e-10);
  EXPECT_LT(worst_mult, 1e-9);
}

// ---------------------------------------------------------------------- 3

TEST(EmbeddedSleigh, EulerPoissonResidualSmallOnEmbeddedPathsOrderOneOnNonholonomic) {
  double worst_emb = 0, least_nh = 1e300;
  int cases = 0;
  for (double slope : {0.0, 0.3})
    for (double a : {0.0, 0.5})
      for (double w : {0.0, 1.0})
        for (int s = 0; s < 2; ++s) {
          if (slope == 0.0 && w == 1.0) continue;  // the potential weight needs a slope
          Emb es;
          es.params = sleigh(a, slope, w);
          const double th = s ? -0.8 : 0.4, v = s ? 2.2 : 1.5, om = s ? 0.5 : 0.9;
          const double ell0 = s ? 0.7 : 0.0;
          const auto ts = run_to(es, embedded_state(es, th, v, om, ell0), 0.6);
          ASSERT_EQ(ts.status, Status::ok);
          ASSERT_GT(std::hypot(ts.y[3], ts.y[4]), 0.3);
          const double r = ts.y[Emb::path_residual_index];  // max over accepted steps
          worst_emb = std::max(worst_emb, r);
          // the nonholonomic path from the same (q, qd): residual of eq (26) at
          // its saves, from its own flow
          LagrangeMultiplierSystem<Sleigh> ns;
          ns.params = es.params;
          Vec<double, 6> z0;
          ns.pack(V3{{0.3, -0.2, th}}, V3{{v * std::cos(th), v * std::sin(th), om}},
                  Vec<double, 1>::zero(), z0);
          auto tn = start_trajectory(0.0, z0, tight());
          double rn = 0;
          for (int k = 1; k <= 6; ++k) {
            advance_to(ns, tn, 0.1 * k, tight());
            ASSERT_EQ(tn.status, Status::ok);
            rn = std::max(rn, path_euler_poisson_residual<LagrangeMultiplierSystem, Sleigh>(
                                  ns.params, ns.eval, tn.t, tn.y));
          }
          least_nh = std::min(least_nh, rn);
          std::printf(
              "  slope %.1f a %.1f w %.0f state %d: eq (26) residual embedded %.2e, "
              "nonholonomic %.2e\n",
              slope, a, w, s, r, rn);
          ++cases;
        }
  std::printf("eq (26) residual over %d cases: embedded max %.2e, nonholonomic min %.2e\n", cases,
              worst_emb, least_nh);
  EXPECT_LT(worst_emb, 1e-8);
  EXPECT_GT(least_nh, 1e-2);
}

// The residual function on paths where eq (26) is evaluated by hand. Level
// plane, a = 0: Theta = m/2 (xd^2 + yd^2 + J thd^2), thd = (xd ydd - yd xdd) / v^2.
// A straight line at constant speed: every term vanishes. The circle
// x = R sin(wt), y = R (1 - cos(wt)) (the nonholonomic motion) at t = 0:
// thd = w, dthd/dxd = -cos(wt) / R, dthd/dyd = -sin(wt) / R, so
//   dTheta/dyd = m R w sin(wt) - m J w sin(wt) / R,   d/dt: m R w^2 - m J w^2 / R,
//   dTheta/dydd = m J w xd / v^2,                     d2/dt2: -m J w^2 / R,
// the x row vanishes and E_y = -m R w^2: relative residual
// m R w^2 / max(|m R w^2 - m J w^2 / R|, m J w^2 / R).
TEST(EmbeddedSleigh, EulerPoissonResidualOfClosedFormPaths) {
  const auto p = sleigh(0.0, 0.0);
  // straight line x = 1 + 2 t, y = -t
  V3 jet[5] = {V3{{1.0, 0.0, 0.0}}, V3{{2.0, -1.0, 0.0}}, V3::zero(), V3::zero(), V3::zero()};
  EXPECT_LT(euler_poisson_residual<Sleigh>(p, 0.0, jet), 1e-15);
  // circle of radius R at speed v: x = R sin(wt), y = R (1 - cos(wt)), w = v / R
  const double R = 2.0, w = 0.75;
  V3 circ[5] = {V3{{0.0, 0.0, 0.0}}, V3{{R * w, 0.0, 0.0}}, V3{{0.0, R * w * w, 0.0}},
                V3{{-R * w * w * w, 0.0, 0.0}}, V3{{0.0, -R * w * w * w * w, 0.0}}};
  const double m = p.mass, J = p.J;
  const double want =
      m * R * w * w / std::max(std::fabs(m * R * w * w - m * J * w * w / R), m * J * w * w / R);
  const double got = euler_poisson_residual<Sleigh>(p, 0.0, circ);
  std::printf("eq (26) on the circle: relative residual %.15f (hand: %.15f)\n", got, want);
  EXPECT_NEAR(got, want, 1e-13);
  EXPECT_GT(got, 1.0);
}

// ---------------------------------------------------------------------- 4

TEST(EmbeddedSleigh, NonholonomicInitialAccelerationAndCubicDivergence) {
  Emb es;
  es.params = sleigh(0.5, 0.3);
  LagrangeMultiplierSystem<Sleigh> ns;
  ns.params = es.params;
  const double th = 0.4, v = 1.5, om = 0.7;
  const V3 q{{0.3, -0.2, th}}, qd{{v * std::cos(th), v * std::sin(th), om}};
  // the value of ell0 that matches: the knife-edge force on theta, 0
  const auto ell_nh = embedded_ell_nonholonomic<Sleigh>(es.params, q, qd, 0.0, es.eval);
  EXPECT_LT(std::fabs(ell_nh[0]), 1e-14);
  const auto y0 = embedded_state(es, th, v, om, 0.0);
  Vec<double, NE> fe;
  Vec<double, 6> z0, fn;
  ns.pack(q, qd, Vec<double, 1>::zero(), z0);
  ASSERT_EQ(es(0.0, y0, fe), Status::ok);
  ASSERT_EQ(ns(0.0, z0, fn), Status::ok);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(fe[3 + i], fn[3 + i], 1e-13) << i;
  // distance |q_emb - q_nh| at t = h, 2h, 4h: order log2 of the ratios
  auto te = start_trajectory(0.0, y0, tight());
  auto tn = start_trajectory(0.0, z0, tight());
  std::vector<double> d;
  for (double t : {0.01, 0.02, 0.04}) {
    advance_to(es, te, t, tight());
    advance_to(ns, tn, t, tight());
    double s = 0;
    for (int i = 0; i < 3; ++i) s += (te.y[i] - tn.y[i]) * (te.y[i] - tn.y[i]);
    d.push_back(std::sqrt(s));
  }
  const double p1 = std::log2(d[1] / d[0]), p2 = std::log2(d[2] / d[1]);
  std::printf(
      "embedded vs nonholonomic (ell0 = 0): distance %.3e %.3e %.3e at t = 0.01 0.02 "
      "0.04, orders %.3f %.3f\n",
      d[0], d[1], d[2], p1, p2);
  EXPECT_NEAR(p1, 3.0, 0.1);
  EXPECT_NEAR(p2, 3.0, 0.1);
  // O(1) within a second of sliding on the slope
  advance_to(es, te, 1.0, tight());
  advance_to(ns, tn, 1.0, tight());
  ASSERT_EQ(te.status, Status::ok);
  const double d1 = std::hypot(te.y[0] - tn.y[0], te.y[1] - tn.y[1]);
  std::printf("embedded vs nonholonomic at t = 1: |dx, dy| = %.3f, heading %.3f vs %.3f\n", d1,
              te.y[2], tn.y[2]);
  EXPECT_GT(d1, 0.5);
}

TEST(EmbeddedSleigh, FallLineWithoutRotationCoincidesWithNonholonomic) {
  for (double a : {0.0, 0.5}) {
    Emb es;
    es.params = sleigh(a, 0.3);
    LagrangeMultiplierSystem<Sleigh> ns;
    ns.params = es.params;
    const double v0 = 1.2;
    const auto y0 = embedded_state(es, 0.0, v0, 0.0, 0.0);
    Vec<double, 6> z0;
    ns.pack(V3{{y0[0], y0[1], 0.0}}, V3{{v0, 0.0, 0.0}}, Vec<double, 1>::zero(), z0);
    const auto te = run_to(es, y0, 3.0);
    const auto tn = run_to(ns, z0, 3.0);
    ASSERT_EQ(te.status, Status::ok);
    double d = 0;
    for (int i = 0; i < 6; ++i) d = std::max(d, std::fabs(te.y[i] - tn.y[i]));
    // and both are x = x0 + v0 t + g sin(alpha) t^2 / 2
    const double x = 0.3 + v0 * 3.0 + 0.5 * 9.81 * std::sin(0.3) * 9.0;
    std::printf("fall line (a = %.1f): embedded vs nonholonomic %.2e, vs closed form %.2e\n", a, d,
                std::fabs(te.y[0] - x));
    EXPECT_LT(d, 1e-12);
    EXPECT_LT(std::fabs(te.y[0] - x) / x, 1e-13);
    EXPECT_EQ(te.y[2], 0.0);
    EXPECT_EQ(te.y[1], -0.2);
  }
}

// ---------------------------------------------------------------------- 5

// Theta of the paper's potential has no a: for fixed (q, qd) and fixed heading
// acceleration (mu0 = m a w0 - ell0 / v0 fixed), the motion is the same for
// every a; the physical potential adds m g a sin(alpha) cos(theta).
TEST(EmbeddedSleigh, PaperPotentialMakesTheMotionIndependentOfA) {
  const double th = 0.4, v = 1.5, om = 0.7, mu0 = 0.3, J = 0.9, m = 1.3;
  auto final_q = [&](double a, double w) {
    Emb es;
    es.params = sleigh(a, 0.3, w, J, m);
    const double ell0 = v * (m * a * om - mu0);
    const auto ts = run_to(es, embedded_state(es, th, v, om, ell0), 0.8);
    EXPECT_EQ(ts.status, Status::ok);
    return V3{{ts.y[0], ts.y[1], ts.y[2]}};
  };
  double paper = 0, physical = 0;
  const V3 p0 = final_q(0.0, 1.0), f0 = final_q(0.0, 0.0);
  for (double a : {0.3, 0.6, 0.9}) {
    const V3 p1 = final_q(a, 1.0), f1 = final_q(a, 0.0);
    for (int i = 0; i < 3; ++i) {
      paper = std::max(paper, std::fabs(p1[i] - p0[i]));
      physical = std::max(physical, std::fabs(f1[i] - f0[i]));
    }
  }
  std::printf("a from 0 to 0.9 at fixed mu0: paper potential moves q by %.2e, physical by %.2e\n",
              paper, physical);
  EXPECT_LT(paper, 1e-11);
  EXPECT_GT(physical, 1e-2);
}

// ---------------------------------------------------------------------- 6

TEST(EmbeddedSleigh, AStartAtRestIsSingularNeverOk) {
  Emb es;
  es.params = sleigh(0.5, 0.3);
  Vec<double, NE> f;
  // at rest: atan2(0, 0) has no derivative, and ell0 = -v lambda0 = 0 says
  // nothing about lambda0
  const auto y = embedded_state(es, 0.2, 0.0, 0.4, 0.0);
  EXPECT_EQ(es(0.0, y, f), Status::singular);
  const auto ts = run_to(es, y, 1.0);
  EXPECT_EQ(ts.status, Status::singular);
  EXPECT_EQ(ts.fail_time, 0.0);
}

// Through rest (docs/formulations.md, "Through rest"): the intrinsic form is
// regular at v = 0 and v changes sign there; the embedded motion follows it
// through every rest onto the backward branch theta = atan2(yd, xd) + pi and
// back, the rest chart carrying it where v is small.
TEST(EmbeddedSleigh, PassesRestAsTheIntrinsicFormDoes) {
  struct Case {
    double a, slope, w, th, v, om, ell;
    int rests;  // sign changes of the intrinsic v on [0, 3] (at least)
  };
  const Case cases[] = {{0.5, 0.3, 0.0, 0.4, 1.5, 0.7, 0.0, 6},
                        {0.0, 0.3, 0.0, -1.0, 2.0, 0.4, 0.5, 5},
                        {0.3, -0.4, 1.0, 2.5, 2.5, -0.5, 1.0, 8},
                        // sliding backwards from the start
                        {0.5, 0.3, 0.0, 1.0, -1.2, 0.3, 0.2, 1}};
  double worst_q = 0, worst_mu = 0, worst_r = 0, worst_mult = 0;
  int rests = 0, switches = 0;
  for (const Case& c : cases) {
    Emb sys;
    sys.params = sleigh(c.a, c.slope, c.w);
    auto y0 = embedded_state(sys, c.th, std::fabs(c.v), c.om, c.ell);
    if (c.v < 0) {
      y0[3] = -y0[3];
      y0[4] = -y0[4];
    }
    const Intrinsic in{sys.params};
    auto te = start_trajectory(0.0, y0, tight());
    auto ti = start_trajectory(0.0, to_intrinsic(sys.params, y0), tight());
    int case_rests = 0;
    bool chart = false;
    for (int k = 1; k <= 300; ++k) {
      const double t = 0.01 * k, v_before = ti.y[3];
      advance_to(sys, te, t, tight());
      advance_to(in, ti, t, tight());
      ASSERT_EQ(te.status, Status::ok) << "t = " << te.fail_time;
      case_rests += (ti.y[3] > 0) != (v_before > 0);
      switches += Emb::in_rest_chart(te.y) != chart;
      chart = Emb::in_rest_chart(te.y);
      for (int i = 0; i < 3; ++i) worst_q = std::max(worst_q, std::fabs(te.y[i] - ti.y[i]));
      worst_mu = std::max(worst_mu, std::fabs(to_intrinsic(sys.params, te.y)[5] - ti.y[5]) /
                                        (1.0 + std::fabs(ti.y[5])));
      // the written multiplier is ell in either chart: ell = -v lambda
      Observation<double, 3, 1> obs;
      sys.observe(t, te.y, obs);
      const double v = ti.y[3], lambda = ti.y[5] - sys.params.mass * sys.params.a * ti.y[4];
      worst_mult = std::max(worst_mult, std::fabs(obs.multiplier[0] + v * lambda) /
                                            ((1.0 + std::fabs(v)) * (1.0 + std::fabs(lambda))));
    }
    EXPECT_GE(case_rests, c.rests);
    rests += case_rests;
    worst_r = std::max(worst_r, te.y[Emb::path_residual_index]);
  }
  std::printf(
      "through %d rests (%d chart switches seen at the saves): embedded vs intrinsic max |q "
      "difference| %.2e, mu %.2e, written ell vs -v lambda %.2e; eq (26) residual %.2e\n",
      rests, switches, worst_q, worst_mu, worst_mult, worst_r);
  EXPECT_GE(switches, rests);  // the rest chart carried the motion through each rest
  EXPECT_LT(worst_q, 1e-10);
  EXPECT_LT(worst_mu, 1e-10);
  EXPECT_LT(worst_mult, 1e-9);  // a product of two integrated quantities
  EXPECT_LT(worst_r, 1e-10);
}

// uphill along the fall line: x' = -v0 + g sin(alpha) t comes to rest at
// v0 / (g sin alpha) and slides back, heading pi throughout
TEST(EmbeddedSleigh, UphillSlidesBackDownTheFallLine) {
  Emb es;
  es.params = sleigh(0.5, 0.3);
  const double v0 = 1.0, gs = 9.81 * std::sin(0.3), t_stop = v0 / gs, t = 2.5 * t_stop;
  const auto ts = run_to(es, embedded_state(es, M_PI, v0, 0.0, 0.0), t);
  ASSERT_EQ(ts.status, Status::ok);
  const double x = 0.3 - v0 * t + 0.5 * gs * t * t;
  std::printf("uphill: rest at %.6f, at %.6f x %.15f (closed form %.15f), theta - pi %.1e\n",
              t_stop, t, ts.y[0], x, ts.y[2] - M_PI);
  EXPECT_NEAR(ts.y[0], x, 1e-12);
  EXPECT_NEAR(ts.y[1], -0.2, 1e-12);
  EXPECT_NEAR(ts.y[2], M_PI, 1e-12);
  EXPECT_NEAR(ts.y[3], -v0 + gs * t, 1e-12);
}

// ---------------------------------------------------------------------- 7

// The skate (models/skate.hpp) with the same embedded constraint through the
// same code: mass, offset s = a, I_B = m J give the sleigh's motion.
TEST(EmbeddedSkate, SameCodePathGivesTheSleighMotion) {
  const double m = 1.3, a = 0.5, J = 0.6, slope = 0.3;
  EmbeddedSystem<Skate> sk;
  const double pv[5] = {m, a, m * J, 9.81, slope};
  sk.params = Skate::make_params(pv);
  Emb es;
  es.params = sleigh(a, slope, 0.0, J, m);
  const auto y0 = embedded_state(es, -0.6, 1.7, 0.5, 0.4);
  const auto te = run_to(es, y0, 0.7);
  const auto tk = run_to(sk, y0, 0.7);
  ASSERT_EQ(tk.status, Status::ok);
  double d = 0;
  for (int i = 0; i < NE - 1; ++i) d = std::max(d, std::fabs(te.y[i] - tk.y[i]));
  std::printf("skate vs sleigh, embedded: %.2e; skate eq (26) residual %.2e\n", d,
              tk.y[EmbeddedSystem<Skate>::path_residual_index]);
  EXPECT_LT(d, 1e-12);
  EXPECT_LT(tk.y[EmbeddedSystem<Skate>::path_residual_index], 1e-8);
}

// Two embedded constraints, with the dependent coordinates interleaved
// (q = (x1, y1, th1, x2, y2, th2), dependent 2 and 5): two sleighs on the
// slope whose contact points are joined by a spring of stiffness kappa. A
// model local to this test, through the same code. Reference: the vakonomic
// formulation of the two knife edges with lambda_i = -ell_i / v_i (the
// argument of CoincidesWithVakonomicKnifeEdge, row by row).
struct TwoSleighs {
  static constexpr const char* name = "two_sleighs";
  static constexpr const char* description = "two sleighs joined by a spring (test model)";
  static constexpr int n = 6;
  static constexpr int m_position = 0;
  static constexpr int m_velocity = 2;
  static constexpr int m_acceleration = 0;
  static constexpr int n_params = 0;
  static constexpr const char* coordinates[n] = {"x1", "y1", "theta1", "x2", "y2", "theta2"};
  static constexpr const char* constraint_names[2] = {"knife_edge_1", "knife_edge_2"};
  static constexpr ParamInfo param_info[1] = {{nullptr, 0, nullptr, nullptr}};
  struct Params {};
  static Params make_params(const double*) { return {}; }
  static constexpr double m = 1.3, J = 0.6, a = 0.4, g = 9.81, slope = 0.3, kappa = 2.0;

  template <class S>
  static S one(const S& x, const S& th, const S& xd, const S& yd, const S& thd) {
    return 0.5 * m *
               (xd * xd + yd * yd + J * thd * thd + 2.0 * a * thd * (yd * cos(th) - xd * sin(th))) +
           m * g * std::sin(slope) * (x + a * cos(th));
  }
  template <class S>
  static S lagrangian(const Params&, const Vec<S, n>& q, const Vec<S, n>& qd, const S&) {
    const S dx = q[0] - q[3], dy = q[1] - q[4];
    return one(q[0], q[2], qd[0], qd[1], qd[2]) + one(q[3], q[5], qd[3], qd[4], qd[5]) -
           0.5 * kappa * (dx * dx + dy * dy);
  }
  template <class S>
  static Vec<S, 2> velocity_constraints(const Params&, const Vec<S, n>& q, const Vec<S, n>& qd,
                                        const S&) {
    Vec<S, 2> g2;
    g2[0] = qd[1] * cos(q[2]) - qd[0] * sin(q[2]);
    g2[1] = qd[4] * cos(q[5]) - qd[3] * sin(q[5]);
    return g2;
  }
  static constexpr int m_embedded = 2;
  static constexpr int embedded_coordinate(int l) { return l == 0 ? 2 : 5; }
  static constexpr double embedded_period(int) { return 3.141592653589793; }
  template <class S>
  static Vec<S, 2> embedded_constraints(const Params&, const Vec<S, n>&, const Vec<S, n>& qd,
                                        const S&) {
    Vec<S, 2> phi;
    phi[0] = nholo::atan2(qd[1], qd[0]);
    phi[1] = nholo::atan2(qd[4], qd[3]);
    return phi;
  }
};

TEST(EmbeddedTwoConstraints, CoupledSleighsMatchVakonomicAndSatisfyEq26) {
  EmbeddedSystem<TwoSleighs> es;
  VakonomicSystem<TwoSleighs> vs;
  const double th1 = 0.3, v1 = 1.6, w1 = -0.4, th2 = -0.5, v2 = 2.1, w2 = 0.6;
  const double ell1 = 0.5, ell2 = -0.3;
  const Vec<double, 6> q{{0.0, 0.0, th1, 0.5, 1.0, th2}};
  const Vec<double, 6> qd{
      {v1 * std::cos(th1), v1 * std::sin(th1), w1, v2 * std::cos(th2), v2 * std::sin(th2), w2}};
  Vec<double, EmbeddedSystem<TwoSleighs>::N> y0;
  Vec<double, VakonomicSystem<TwoSleighs>::N> z0;
  es.pack(q, qd, Vec<double, 2>{{ell1, ell2}}, y0);
  vs.pack(q, qd, Vec<double, 2>{{-ell1 / v1, -ell2 / v2}}, z0);
  auto te = start_trajectory(0.0, y0, tight());
  auto tv = start_trajectory(0.0, z0, tight());
  double d = 0;
  for (int k = 1; k <= 6; ++k) {
    advance_to(es, te, 0.1 * k, tight());
    advance_to(vs, tv, 0.1 * k, tight());
    ASSERT_EQ(te.status, Status::ok);
    ASSERT_EQ(tv.status, Status::ok);
    for (int i = 0; i < 12; ++i) d = std::max(d, std::fabs(te.y[i] - tv.y[i]));
  }
  const double r = te.y[EmbeddedSystem<TwoSleighs>::path_residual_index];
  std::printf("two coupled sleighs (k = 2): embedded vs vakonomic %.2e, eq (26) residual %.2e\n", d,
              r);
  EXPECT_LT(d, 1e-10);
  EXPECT_LT(r, 1e-8);
  EXPECT_GT(r, 0.0);  // it was evaluated
}

// An ensemble through the nholo command (OpenMP backend): the per-trajectory
// residual lands in the file, `stats` prints it, `compare` compares.
TEST(EmbeddedEnsemble, RunWritesEulerPoissonResidualAndStatsShowsIt) {
  namespace fs = std::filesystem;
  const fs::path dir = nholo_test::temp_dir("nholo_embedded", "ensemble");
  nholo_test::write_file(dir / "sleigh.toml", R"(
model = "sleigh"
formulations = ["lagrange_multiplier", "vakonomic", "embedded"]
[params]
slope = 0.3
[time]
t_end = 0.6
save_every = 0.05
[integrator]
method = "dop853"
rtol = 1e-12
atol = 1e-12
[ensemble]
size = 40
seed = 16
on_violation = "project"
[ensemble.q0]
x = 0.0
y = 0.0
theta = { uniform = [-1.0, 1.0] }
[ensemble.qd0]
x = { uniform = [1.5, 2.5] }
y = { uniform = [-0.5, 0.5] }
theta = { uniform = [-0.5, 0.5] }
[output]
path = "sleigh.h5"
fields = ["q", "qdot", "multiplier", "constraint_residual"]
)");
  const auto r = nholo_test::run_nholo("run -q sleigh.toml", dir);
  ASSERT_EQ(r.code, 0) << r.output;
  {
    h5::File f = h5::File::open_ro((dir / "sleigh.h5").string());
    const auto st = f.root().open_dataset("embedded/status").read<int32_t>();
    const auto ep = f.root().open_dataset("embedded/euler_poisson_residual").read<double>();
    ASSERT_EQ(ep.size(), 40u);
    double worst = 0;
    for (size_t i = 0; i < ep.size(); ++i) {
      EXPECT_EQ(st[i], 0) << i;
      worst = std::max(worst, ep[i]);
    }
    std::printf("ensemble of 40 embedded sleighs: max eq (26) residual %.2e\n", worst);
    EXPECT_LT(worst, 1e-8);
    EXPECT_FALSE(f.root().exists("lagrange_multiplier/euler_poisson_residual"));
  }
  const auto s = nholo_test::run_nholo("stats sleigh.h5", dir);
  ASSERT_EQ(s.code, 0) << s.output;
  EXPECT_NE(s.output.find("Euler-Poisson (eq 26) residual"), std::string::npos) << s.output;
  const auto c = nholo_test::run_nholo("compare sleigh.h5", dir);
  ASSERT_EQ(c.code, 0) << c.output;
  EXPECT_NE(c.output.find("lagrange_multiplier vs embedded"), std::string::npos) << c.output;
}

// Bad input names what is wrong and what is accepted.
TEST(EmbeddedEnsemble, BadInputGivesClearErrors) {
  namespace fs = std::filesystem;
  const fs::path dir = nholo_test::temp_dir("nholo_embedded", "errors");
  struct Refused {
    const char* file;
    const char* config;
    std::vector<std::string> says;  // in the message, each
  };
  const Refused cases[] = {
      {"coin.toml",
       "model = \"rolling_coin\"\nformulations = [\"embedded\"]\n",
       {"model 'rolling_coin' does not support 'embedded' (accepted for it: "
        "udwadia_kalaba, lagrange_multiplier, null_space, vakonomic)"}},
      {"sleigh.toml",
       "model = \"sleigh\"\nformulations = [\"embedded\"]\n[params]\na = 0.8\nJ = 0.5\n",
       {"J (squared radius of gyration about the contact point) must exceed a^2"}},
      {"w.toml",
       "model = \"sleigh\"\nformulations = [\"embedded\"]\n[params]\npaper_potential = 2.0\n",
       {"paper_potential", "[0, 1]"}},
  };
  for (const Refused& c : cases) {
    SCOPED_TRACE(c.file);
    nholo_test::write_file(dir / c.file, c.config);
    const auto r = nholo_test::run_nholo(std::string("run -q ") + c.file, dir);
    EXPECT_EQ(r.code, 2) << r.output;
    for (const std::string& part : c.says)
      EXPECT_NE(r.output.find(part), std::string::npos) << r.output;
  }
}

}  // namespace
