// Long-run physics of whole trajectories: conserved energy of ideal,
// scleronomic, conservative systems; the energy a friction constraint takes
// out; the invariant of the integrable constraint; the sleigh's closed form.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "kernels/formulations/udwadia_kalaba.hpp"
#include "kernels/integrate.hpp"
#include "models/registry.hpp"
#include "tests/integrator_options.hpp"

using namespace nholo;
using namespace nholo::models;

namespace {

IntegratorOptions reference_options() {
  return nholo_test::tolerance_options(Method::dop853, 1e-13);
}

// Integrate to t_end in unit windows; the largest |E(t) - E(0)| relative to the
// energy scale of the motion, max(|E(0)|, T(t)) with T the kinetic energy
// (on a slope E(0) can be near zero while T and V grow large and opposite).
template <class Model>
double energy_drift(const typename Model::Params& p, const Vec<double, 2 * Model::n>& y0,
                    double t_end, const IntegratorOptions& opt,
                    DriftControl drift = DriftControl::none) {
  EvalOptions eo;
  eo.drift = drift;
  UdwadiaKalabaSystem<Model> sys{p, eo};
  constexpr int n = Model::n;
  auto energy = [&](const Vec<double, 2 * n>& y, double t) {
    Vec<double, n> q, qd;
    UdwadiaKalabaSystem<Model>::split(y, q, qd);
    return Model::energy(p, q, qd, t);
  };
  auto kinetic = [&](const Vec<double, 2 * n>& y, double t) {
    Vec<double, n> q, qd, zero = Vec<double, n>::zero();
    UdwadiaKalabaSystem<Model>::split(y, q, qd);
    return Model::energy(p, q, qd, t) - Model::energy(p, q, zero, t);
  };
  const double e0 = energy(y0, 0.0);
  auto ts = start_trajectory<double, 2 * n>(0.0, y0, opt);
  double worst = 0;
  for (int k = 1; k <= static_cast<int>(t_end); ++k) {
    advance_to(sys, ts, double(k), opt);
    EXPECT_EQ(ts.status, Status::ok) << Model::name << " at t = " << ts.t;
    if (ts.status != Status::ok) return INFINITY;
    const double scale = std::max(std::abs(e0), kinetic(ts.y, ts.t));
    worst = std::max(worst, std::abs(energy(ts.y, ts.t) - e0) / scale);
  }
  std::printf("%-14s relative energy drift over %g time units: %.3e (%lld steps, E0 %.3g, T_end %.3g)\n",
              Model::name, t_end, worst, static_cast<long long>(ts.steps), e0, kinetic(ts.y, ts.t));
  return worst;
}

TEST(Conservation, SkateEnergyOver1000TimeUnits) {
  // level ice (Hamel) and on a slope
  for (double slope : {0.0, 0.3}) {
    const Skate::Params p{1.0, 0.4, 0.9, 9.81, slope};
    const double th = 0.3, v = 1.2;  // velocity along the blade
    Vec<double, 6> y0{{0.0, 0.0, th, v * std::cos(th), v * std::sin(th), 1.1}};
    EXPECT_LT(energy_drift<Skate>(p, y0, 1000.0, reference_options()), 1e-9) << "slope " << slope;
  }
}

TEST(Conservation, RollingCoinEnergyOver1000TimeUnits) {
  const RollingCoin::Params p{1.0, 0.5, 9.81, 0.3};
  const double th = 0.4, phid = 2.0;
  Vec<double, 8> y0{{0.0, 1.0, 0.0, th, p.radius * phid * std::sin(th),
                     p.radius * phid * std::cos(th), phid, 1.7}};
  // Off the constraint manifold (g = A qd != 0) the constraint force has the
  // power lambda . g, so the energy follows the constraint drift: without
  // projection it stays near 1e-9 over 1000 time units, with the projection
  // (which changes T only at second order in g) far below.
  const double free_drift = energy_drift<RollingCoin>(p, y0, 1000.0, reference_options());
  EXPECT_LT(free_drift, 1e-8);
  EXPECT_LT(energy_drift<RollingCoin>(p, y0, 1000.0, reference_options(), DriftControl::project),
            1e-9);
}

TEST(Conservation, AppellEnergyOver1000TimeUnits) {
  // alpha = 0, no force: the speed is constant; with a constant force the
  // ideal constraint still does no work (A qd = xd^2 + yd^2 - zd^2 = 0).
  for (double fz : {0.0, -1.0}) {
    const Appell::Params p{0.0, 0.0, 0.0, 0.0, fz, 1.0, 1.0};
    const double xd = 0.6, yd = 0.8;
    Vec<double, 6> y0{{0.0, 0.0, 1.0, xd, yd, std::sqrt(xd * xd + yd * yd)}};
    const double t_end = fz == 0.0 ? 1000.0 : 20.0;  // with gravity the particle speeds up
    EXPECT_LT(energy_drift<Appell>(p, y0, t_end, reference_options()), 1e-9) << "force_z " << fz;
  }
}

// Block on an incline with Coulomb friction (docs/physics.md, item 7), sliding up:
//   s'' = -g sin(theta) - mu g cos(theta)   while s' > 0,
// and the energy falls at the rate mu m g cos(theta) |v|: E(t) - E(0) =
// -mu m g cos(theta) (s(t) - s(0)).
TEST(Conservation, FrictionBlockLosesEnergyAtCoulombRate) {
  const InclineBlock::Params p{2.0, 9.81, 0.5, 0.3};
  const double c = std::cos(p.angle), s = std::sin(p.angle), v0 = 6.0;
  Vec<double, 4> y0{{1.0 * c, 1.0 * s, v0 * c, v0 * s}};
  UdwadiaKalabaSystem<InclineBlock> sys{p, EvalOptions()};
  const IntegratorOptions opt = reference_options();
  auto ts = start_trajectory<double, 4>(0.0, y0, opt);
  const double decel = p.g * s + p.friction * p.g * c;
  const double t_stop = v0 / decel;
  auto energy = [&](const Vec<double, 4>& y) {
    return 0.5 * p.mass * (y[2] * y[2] + y[3] * y[3]) + p.mass * p.g * y[1];
  };
  const double e0 = energy(y0);
  for (int k = 1; k <= 20; ++k) {
    const double t = 0.95 * t_stop * k / 20;
    advance_to(sys, ts, t, opt);
    ASSERT_EQ(ts.status, Status::ok);
    const double dist = v0 * t - 0.5 * decel * t * t;  // s(t) - s(0)
    const double along = (ts.y[0] * c + ts.y[1] * s) - 1.0;
    EXPECT_NEAR(along, dist, 1e-10 * (1 + dist));
    const double loss_expected = p.friction * p.mass * p.g * c * dist;
    EXPECT_NEAR(e0 - energy(ts.y), loss_expected, 1e-10 * e0);
  }
}

// q1^4 + q1^3 q2^2 is conserved by the integrable constraint (docs/physics.md, item 9).
TEST(Conservation, IntegrableConstraintInvariant) {
  const IntegrableConstraint::Params p{};
  const double q1 = 1.2, q2 = 0.5, q2d = 0.7;
  const double q1d = -2.0 * q1 * q2 * q2d / (4.0 * q1 + 3.0 * q2 * q2);
  Vec<double, 4> y0{{q1, q2, q1d, q2d}};
  UdwadiaKalabaSystem<IntegrableConstraint> sys{p, EvalOptions()};
  const IntegratorOptions opt = reference_options();
  auto inv = [](const Vec<double, 4>& y) {
    return std::pow(y[0], 4) + std::pow(y[0], 3) * y[1] * y[1];
  };
  const double i0 = inv(y0);
  auto ts = start_trajectory<double, 4>(0.0, y0, opt);
  double worst = 0;
  for (int k = 1; k <= 100; ++k) {
    advance_to(sys, ts, 0.1 * k, opt);
    ASSERT_EQ(ts.status, Status::ok);
    worst = std::max(worst, std::abs(inv(ts.y) - i0) / std::abs(i0));
  }
  std::printf("integrable constraint: relative change of q1^4 + q1^3 q2^2 over 10 time units %.3e\n",
              worst);
  EXPECT_LT(worst, 1e-10);
}

// Sleigh on a slope with the centre of mass at the blade (a = 0), docs/physics.md,
// item 2: phi = Omega t + phi0, v = v0 + (g sin(alpha)/Omega)(sin(phi) - sin(phi0)).
TEST(Conservation, SleighClosedFormVelocity) {
  const Skate::Params p{1.0, 0.0, 0.7, 9.81, 0.25};
  const double Omega = 1.3, phi0 = 0.2, v0 = 0.5, gs = p.g * std::sin(p.slope);
  Vec<double, 6> y0{{0.0, 0.0, phi0, v0 * std::cos(phi0), v0 * std::sin(phi0), Omega}};
  UdwadiaKalabaSystem<Skate> sys{p, EvalOptions()};
  const IntegratorOptions opt = reference_options();
  auto ts = start_trajectory<double, 6>(0.0, y0, opt);
  for (int k = 1; k <= 50; ++k) {
    const double t = 0.5 * k;
    advance_to(sys, ts, t, opt);
    ASSERT_EQ(ts.status, Status::ok);
    const double phi = Omega * t + phi0;
    const double v = v0 + gs / Omega * (std::sin(phi) - std::sin(phi0));
    EXPECT_NEAR(ts.y[2], phi, 1e-10 * (1 + phi));
    EXPECT_NEAR(ts.y[3], v * std::cos(phi), 1e-10);
    EXPECT_NEAR(ts.y[4], v * std::sin(phi), 1e-10);
  }
  // mean drift across the slope: y(T) / T over whole periods -> g sin(alpha) / (2 Omega)
  //   y(t) = int v sin(phi) dt; over a period the mean of v sin(phi) is gs/(2 Omega)
  const double T = 2 * M_PI / Omega * 20;
  auto ts2 = start_trajectory<double, 6>(0.0, y0, opt);
  advance_to(sys, ts2, T, opt);
  ASSERT_EQ(ts2.status, Status::ok);
  // exact: y(T) = (v0 - gs/Omega sin(phi0)) (cos(phi0) - cos(phi0 + Omega T))/Omega + gs/(2 Omega) T
  const double yT = (v0 - gs / Omega * std::sin(phi0)) *
                        (std::cos(phi0) - std::cos(phi0 + Omega * T)) / Omega +
                    gs / (2 * Omega) * T;
  EXPECT_NEAR(ts2.y[1], yT, 1e-8 * std::abs(yT));
}

}  // namespace
