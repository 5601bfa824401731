// Tests of kernels/formulations.hpp (and the conflated formulation of
// system.hpp): the formulations of constrained mechanics side by side, fed by
// the same model definitions (tests/formulation_cases.hpp). Whole
// trajectories, Hamel's paradox and Lemos' proposition:
// test_formulation_trajectories.cpp.
//
//  1. Accelerations: udwadia_kalaba, lagrange_multiplier and null_space agree
//     to 1e-10 at >= 100 random consistent states of every model (linear and
//     nonlinear constraints), forces and multipliers included; the vakonomic
//     equations reproduce Lemos (2022) eqs 41-44 (coin), the hand-derived
//     d2g/dqd2 terms (Appell, example 3) and the position-dependent
//     dg/dq - d/dt dg/dqd terms (integrable constraint).
//  2. Integrable / holonomic constraints: vakonomic = nonholonomic for any
//     lambda(0); the vakonomic Appell particle keeps its constraint.
//  3. Redundant constraints: UK and null space give the plain model's motion,
//     multipliers and vakonomic report Status::singular, never NaN.
//  4. Every formulation packs and splits its state alike (the System
//     interface); the nonideal force's decomposition.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "kernels/formulations.hpp"
#include "models/registry.hpp"
#include "tests/cpu_ensemble_run.hpp"
#include "tests/formulation_cases.hpp"

using namespace nholo;
using namespace nholo::models;
using namespace nholo_test;

namespace {

// ------------------------------------------------ 1. accelerations, forces

constexpr int kStates = 200;
constexpr double kTolAcc = 1e-10;

// UK, multipliers and null space at kStates random consistent states:
// qdd, the total constraint force M qdd - F (= force_ideal + force_nonideal)
// and, for ideal constraints, the multipliers; A qdd = b.
template <class Model>
void check_three_agree(uint64_t seed) {
  constexpr int n = Model::n, m = m_of<Model>;
  Rng rng(seed);
  double worst_qdd = 0.0, worst_force = 0.0, worst_mult = 0.0;
  for (int k = 0; k < kStates; ++k) {
    const State<Model> s = Gen<Model>::draw(rng);
    const auto uk = accel<UdwadiaKalabaSystem<Model>>(s.p, s.q, s.qd, s.t);
    const auto lm = accel<LagrangeMultiplierSystem<Model>>(s.p, s.q, s.qd, s.t);
    const auto ns = accel<NullSpaceSystem<Model>>(s.p, s.q, s.qd, s.t);
    ASSERT_EQ(uk.status, Status::ok) << Model::name << " state " << k;
    ASSERT_EQ(lm.status, Status::ok) << Model::name << " state " << k;
    ASSERT_EQ(ns.status, Status::ok) << Model::name << " state " << k;
    ASSERT_TRUE(close(lm.qdd, uk.qdd, kTolAcc)) << Model::name << " multipliers, state " << k;
    ASSERT_TRUE(close(ns.qdd, uk.qdd, kTolAcc)) << Model::name << " null space, state " << k;
    worst_qdd = std::max({worst_qdd, max_diff(lm.qdd, uk.qdd) / (1 + max_abs(uk.qdd)),
                          max_diff(ns.qdd, uk.qdd) / (1 + max_abs(uk.qdd))});
    // the same total constraint force; each formulation's split adds up to it
    const V<n> total = uk.force_ideal + uk.force_nonideal;
    ASSERT_TRUE(close(lm.force_ideal + lm.force_nonideal, total, kTolAcc)) << "state " << k;
    ASSERT_TRUE(close(ns.force_ideal + ns.force_nonideal, total, kTolAcc)) << "state " << k;
    worst_force = std::max(
        worst_force, max_diff(lm.force_ideal + lm.force_nonideal, total) / (1 + max_abs(total)));
    // multipliers: unique for full-rank A; equal to UK's K^+ (b - A a) when C = 0
    if (max_abs(nonideal_terms<Model>(s.p, s.q, s.qd, s.t)) == 0.0) {
      ASSERT_TRUE(close(lm.multiplier, uk.multiplier, kTolAcc)) << "state " << k;
      ASSERT_TRUE(close(ns.multiplier, uk.multiplier, kTolAcc)) << "state " << k;
      worst_mult = std::max(worst_mult,
                            max_diff(lm.multiplier, uk.multiplier) / (1 + max_abs(uk.multiplier)));
    }
    // force_ideal of the multiplier form is A^T lambda
    Mat<double, m, n> A;
    V<m> b;
    constraint_terms<Model>(s.p, s.q, s.qd, s.t, A, b);
    ASSERT_TRUE(close(lm.force_ideal, mul_transposed(A, lm.multiplier), kTolAcc));
    ASSERT_TRUE(close(A * ns.qdd, b, kTolAcc));
  }
  std::printf(
      "%-22s UK vs multipliers vs null space over %d states: qdd %.2e, force %.2e, "
      "multiplier %.2e (relative)\n",
      Model::name, kStates, worst_qdd, worst_force, worst_mult);
}

TEST(Accelerations, ThreeFormulationsAgreeOnLinearConstraints) {
  check_three_agree<RollingCoin>(1);
  check_three_agree<Skate>(2);
  check_three_agree<UdwadiaExample2>(3);
  check_three_agree<InclineBlock>(4);
  check_three_agree<IntegrableConstraint>(5);
  check_three_agree<UdwadiaExample4>(6);
  check_three_agree<Sleigh>(10);
}

TEST(Accelerations, ThreeFormulationsAgreeOnNonlinearConstraints) {
  check_three_agree<Appell>(7);
  check_three_agree<UdwadiaExample3>(8);
  check_three_agree<ParallelVelocities>(9);
}

// The vakonomic equations at lambda = 0 are the nonholonomic ones with
// lambdadot = -lambda_LM (Lemos (2022) eq 17 vs eq 8: the multiplier terms
// vanish, A^T lambdadot takes the place of -A^T lambda).
template <class Model>
void check_vakonomic_at_zero_multipliers(uint64_t seed) {
  constexpr int m = m_of<Model>;
  Rng rng(seed);
  for (int k = 0; k < kStates; ++k) {
    const State<Model> s = Gen<Model>::draw(rng);
    const auto lm = accel<LagrangeMultiplierSystem<Model>>(s.p, s.q, s.qd, s.t);
    const auto vk = vakonomic_acceleration<Model>(s.p, s.q, s.qd, V<m>::zero(), s.t, EvalOptions());
    ASSERT_EQ(vk.status, Status::ok) << Model::name << " state " << k;
    ASSERT_TRUE(close(vk.qdd, lm.qdd, kTolAcc)) << Model::name << " state " << k;
    ASSERT_TRUE(close(vk.lambdadot, -lm.multiplier, kTolAcc)) << Model::name << " state " << k;
  }
}

TEST(Vakonomic, ZeroMultipliersGiveTheNonholonomicAcceleration) {
  check_vakonomic_at_zero_multipliers<RollingCoin>(11);
  check_vakonomic_at_zero_multipliers<Skate>(12);
  check_vakonomic_at_zero_multipliers<Sleigh>(20);
  check_vakonomic_at_zero_multipliers<Appell>(13);
  check_vakonomic_at_zero_multipliers<UdwadiaExample2>(14);
  check_vakonomic_at_zero_multipliers<UdwadiaExample3>(15);
  check_vakonomic_at_zero_multipliers<UdwadiaExample4>(16);
  check_vakonomic_at_zero_multipliers<InclineBlock>(17);
  check_vakonomic_at_zero_multipliers<ParallelVelocities>(18);
  check_vakonomic_at_zero_multipliers<IntegrableConstraint>(19);
}

// Lemos (2022) eqs (41)-(44), the vakonomic coin, term by term, with arbitrary
// lambda (this fixes the sign convention: + lambda . g in L_lambda):
//   m xdd = -l1d,  m ydd = m g sin(alpha) - l2d,
//   m R^2/2 phidd = l1 R thd cos th - l2 R thd sin th + l1d R sin th + l2d R cos th,
//   m R^2/4 thdd = -l1 R phid cos th + l2 R phid sin th;  A qdd = b.
TEST(Vakonomic, CoinReproducesLemosEqs41To44) {
  Rng rng(21);
  for (int k = 0; k < kStates; ++k) {
    const auto s = Gen<RollingCoin>::draw(rng);
    const V<2> lam{{uni(rng, -5.0, 5.0), uni(rng, -5.0, 5.0)}};
    const auto vk = vakonomic_acceleration<RollingCoin>(s.p, s.q, s.qd, lam, s.t, EvalOptions());
    ASSERT_EQ(vk.status, Status::ok);
    const double m = s.p.mass, R = s.p.radius, g = s.p.g, al = s.p.slope;
    const double th = s.q[3], phid = s.qd[2], thd = s.qd[3];
    const double l1 = lam[0], l2 = lam[1], l1d = vk.lambdadot[0], l2d = vk.lambdadot[1];
    const V<4> lhs{
        {m * vk.qdd[0], m * vk.qdd[1], 0.5 * m * R * R * vk.qdd[2], 0.25 * m * R * R * vk.qdd[3]}};
    const V<4> rhs{{-l1d, m * g * std::sin(al) - l2d,
                    l1 * R * thd * std::cos(th) - l2 * R * thd * std::sin(th) +
                        l1d * R * std::sin(th) + l2d * R * std::cos(th),
                    -l1 * R * phid * std::cos(th) + l2 * R * phid * std::sin(th)}};
    ASSERT_TRUE(close(lhs, rhs, kTolAcc)) << "state " << k;
    // the constraints, differentiated: xdd = R (phidd sin th + phid thd cos th), ...
    ASSERT_NEAR(vk.qdd[0], R * (vk.qdd[2] * std::sin(th) + phid * thd * std::cos(th)),
                kTolAcc * (1 + max_abs(vk.qdd)));
    ASSERT_NEAR(vk.qdd[1], R * (vk.qdd[2] * std::cos(th) - phid * thd * std::sin(th)),
                kTolAcc * (1 + max_abs(vk.qdd)));
    // multiplier output is the state lambda; force_ideal = M qdd - F
    ASSERT_TRUE(close(vk.multiplier, lam, 0.0));
  }
}

// Constraints nonlinear in qd: the d2g/dqd2 term, derived by hand.
//   Appell, g = (xd^2 + yd^2 - zd^2)/2 - alpha g(t): d2g/dqd2 = diag(1, 1, -1),
//     dg/dq = 0, d2g/dqd dq = 0, d2g/dqd dt = 0:
//     (I + lambda diag(1, 1, -1)) qdd + A^T lambdadot = F + C
//   example 3, g = c yd zd - x: d2g/dqd2 = c (e_y e_z^T + e_z e_y^T), dg/dq = -e_x:
//     (I + lambda d2g/dqd2) qdd + A^T lambdadot = F - lambda e_x
//   integrable, g = a(q) . qd (position-dependent, linear in qd):
//     Fg = lambda (-4 q2 q2d, 4 q2 q1d)  (curl of a: da1/dq2 - da2/dq1 = 4 q2)
TEST(Vakonomic, SecondDerivativesOfTheConstraintsByNestedAd) {
  Rng rng(22);
  for (int k = 0; k < kStates; ++k) {
    {
      const auto s = Gen<Appell>::draw(rng);
      const double lam = uni(rng, -0.6, 0.6);
      const auto vk =
          vakonomic_acceleration<Appell>(s.p, s.q, s.qd, V<1>{{lam}}, s.t, EvalOptions());
      ASSERT_EQ(vk.status, Status::ok);
      const V<3> F{{s.p.force_x, s.p.force_y, s.p.force_z}};
      const V<3> C = nonideal_terms<Appell>(s.p, s.q, s.qd, s.t);
      const V<3> A{{s.qd[0], s.qd[1], -s.qd[2]}};
      const double d[3] = {1.0, 1.0, -1.0};
      V<3> res;
      for (int i = 0; i < 3; ++i)
        res[i] = (1.0 + lam * d[i]) * vk.qdd[i] + A[i] * vk.lambdadot[0] - F[i] - C[i];
      ASSERT_TRUE(close(res, V<3>::zero(), kTolAcc)) << "Appell state " << k;
      // A qdd = b = alpha gdot(t)
      const double gdot = s.p.g_amplitude * s.p.g_frequency * std::cos(s.p.g_frequency * s.t);
      ASSERT_NEAR(dot(A, vk.qdd), s.p.alpha * gdot, kTolAcc * (1 + max_abs(vk.qdd)));
      // the vakonomic force: force_ideal = M qdd - F - C
      ASSERT_TRUE(close(vk.force_ideal, vk.qdd - F - C, kTolAcc));
    }
    {
      const auto s = Gen<UdwadiaExample3>::draw(rng);
      const double lam = uni(rng, -0.3, 0.3), c = s.p.c;
      const auto vk =
          vakonomic_acceleration<UdwadiaExample3>(s.p, s.q, s.qd, V<1>{{lam}}, s.t, EvalOptions());
      ASSERT_EQ(vk.status, Status::ok);
      const double yd = s.qd[1], zd = s.qd[2], ld = vk.lambdadot[0];
      const V<3>& a = vk.qdd;
      const V<3> res{{a[0] + s.q[0] + lam, a[1] + lam * c * a[2] + c * zd * ld,
                      a[2] + lam * c * a[1] + c * yd * ld}};
      ASSERT_TRUE(close(res, V<3>::zero(), kTolAcc)) << "example 3 state " << k;
    }
    {
      const auto s = Gen<IntegrableConstraint>::draw(rng);
      const double lam = uni(rng, -2.0, 2.0);
      Mat<double, 2, 2> Mg;
      V<2> Fg;
      vakonomic_constraint_terms<IntegrableConstraint>(s.p, V<1>{{lam}}, s.q, s.qd, s.t, Mg, Fg);
      const double q2 = s.q[1];
      ASSERT_TRUE(close(Fg, V<2>{{-4.0 * lam * q2 * s.qd[1], 4.0 * lam * q2 * s.qd[0]}}, 1e-13));
      ASSERT_EQ(norm_max(Mg), 0.0);
    }
  }
}

// Position constraints enter the vakonomic form through phidot: the lambda
// terms cancel (Lemos (2022) eq 20), so any lambda gives the nonholonomic qdd.
TEST(Vakonomic, PositionConstraintsCancelTheMultiplierTerms) {
  Rng rng(23);
  for (int k = 0; k < kStates; ++k) {
    const auto s = Gen<UdwadiaExample4>::draw(rng);
    Mat<double, 3, 3> Mg;
    V<3> Fg;
    const V<1> lam{{uni(rng, -10.0, 10.0)}};
    vakonomic_constraint_terms<UdwadiaExample4>(s.p, lam, s.q, s.qd, s.t, Mg, Fg);
    ASSERT_LE(norm_max(Mg), 1e-14);
    ASSERT_LE(max_abs(Fg), 1e-13 * (1 + std::abs(lam[0])));
    const auto vk =
        vakonomic_acceleration<UdwadiaExample4>(s.p, s.q, s.qd, lam, s.t, EvalOptions());
    const auto uk = accel<UdwadiaKalabaSystem<UdwadiaExample4>>(s.p, s.q, s.qd, s.t);
    ASSERT_TRUE(close(vk.qdd, uk.qdd, kTolAcc));
  }
}

// The pseudoinverse-based null-space helper: orthonormal basis, A S = 0,
// A^+ equal to pinv(A), dimension n - rank (also for redundant and zero A).
TEST(NullSpace, BasisAndPseudoinverseFromOneSvd) {
  Rng rng(24);
  for (int k = 0; k < 100; ++k) {
    Mat<double, 3, 5> A;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 5; ++j) A(i, j) = uni(rng, -2.0, 2.0);
    const int kind = k % 3;  // 0: full rank, 1: row 2 = row 0 + row 1, 2: zero matrix
    if (kind == 1)
      for (int j = 0; j < 5; ++j) A(2, j) = A(0, j) + A(1, j);
    if (kind == 2) A = Mat<double, 3, 5>::zero();
    const auto ns = null_space(A);
    const int rank = kind == 0 ? 3 : (kind == 1 ? 2 : 0);
    ASSERT_EQ(ns.rank, rank);
    ASSERT_EQ(ns.dim, 5 - rank);
    const auto P = pinv(A);
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 3; ++j) ASSERT_NEAR(ns.pinv(i, j), P(i, j), 1e-12 * (1 + norm_max(P)));
    const auto StS = transpose(ns.basis) * ns.basis;
    const auto AS = A * ns.basis;
    for (int i = 0; i < 5; ++i) {
      for (int j = 0; j < 5; ++j) {
        const double want = (i == j && i < ns.dim) ? 1.0 : 0.0;
        ASSERT_NEAR(StS(i, j), want, 1e-13);
      }
      for (int l = 0; l < 3; ++l) ASSERT_NEAR(AS(l, i), 0.0, 1e-13 * (1 + norm_max(A)));
    }
  }
}

// ------------------------------------------ 2. integrable and holonomic constraints

// For an integrable constraint g = fdot / q1^2 (f = q1^4 + q1^3 q2^2), L +
// lambda g = L + mu fdot with mu = lambda / q1^2: the vakonomic equations are
// those of a holonomic constraint, in which only mudot appears (Lemos (2022)
// eq 21), so EVERY lambda(0) gives the nonholonomic motion. Likewise for the
// position constraint of example 4 (velocity form phidot).
TEST(Vakonomic, IntegrableAndHolonomicConstraintsCoincideForAnyLambda0) {
  const IntegratorOptions opt = tight();
  double worst = 0.0;
  {
    const double q1 = 1.2, q2 = 0.5, q2d = 0.7;
    const V<2> q0{{q1, q2}}, qd0{{-2.0 * q1 * q2 * q2d / (4.0 * q1 + 3.0 * q2 * q2), q2d}};
    const IntegrableConstraint::Params p{};
    const auto nh =
        trajectory(UdwadiaKalabaSystem<IntegrableConstraint>{p, EvalOptions()}, q0, qd0, 10.0, opt);
    for (double l0 : {0.0, 0.7, -2.5, 10.0}) {
      const auto vk = trajectory(VakonomicSystem<IntegrableConstraint>{p, EvalOptions()}, q0, qd0,
                                 10.0, opt, V<1>{{l0}});
      const double g = trajectory_gap(vk, nh);
      worst = std::max(worst, g);
      EXPECT_LT(g, 1e-8) << "integrable constraint, lambda(0) = " << l0;
    }
  }
  {
    const UdwadiaExample4::Params p{0.3, -1.0, 0.2};
    const double z = 0.7, zd = 0.4;
    const V<3> q0{{0.1, 0.5 * z * z, z}}, qd0{{0.2, z * zd, zd}};
    const auto nh =
        trajectory(UdwadiaKalabaSystem<UdwadiaExample4>{p, EvalOptions()}, q0, qd0, 10.0, opt);
    for (double l0 : {0.0, 3.0, -7.0}) {
      const auto vk = trajectory(VakonomicSystem<UdwadiaExample4>{p, EvalOptions()}, q0, qd0, 10.0,
                                 opt, V<1>{{l0}});
      const double g = trajectory_gap(vk, nh);
      worst = std::max(worst, g);
      EXPECT_LT(g, 1e-8) << "example 4, lambda(0) = " << l0;
    }
  }
  std::printf(
      "integrable / holonomic constraints: vakonomic vs nonholonomic over 10 time units, "
      "several lambda(0): worst %.2e\n",
      worst);
}

// The vakonomic Appell particle (constraint quadratic in qd: d2g/dqd2 != 0)
// integrates and keeps its constraint.
TEST(Vakonomic, AppellIntegratesAndKeepsItsConstraint) {
  const Appell::Params p{0.0, 0.0, 0.3, -0.2, -1.0, 1.0, 1.0};
  const V<3> q0{{0.0, 0.0, 1.0}}, qd0{{0.6, 0.8, -1.0}};
  VakonomicSystem<Appell> sys{p, EvalOptions()};
  EXPECT_EQ(VakonomicSystem<Appell>::n_extra, 1);
  EXPECT_STREQ(VakonomicSystem<Appell>::formulation_name, "vakonomic");
  const IntegratorOptions opt = tight();
  for (double l0 : {0.0, 0.3}) {
    V<7> y0;
    sys.pack(q0, qd0, V<1>{{l0}}, y0);
    auto ts = start_trajectory<double, 7>(0.0, y0, opt);
    double worst = 0.0, dist = 0.0;
    const auto nh = trajectory(UdwadiaKalabaSystem<Appell>{p, EvalOptions()}, q0, qd0, 5.0, opt);
    for (int k = 1; k <= 50; ++k) {
      advance_to(sys, ts, 0.1 * k, opt);
      ASSERT_EQ(ts.status, Status::ok) << "lambda(0) = " << l0 << ", t = " << ts.t;
      Observation<double, 3, 1> obs;
      sys.observe(ts.t, ts.y, obs);
      ASSERT_EQ(obs.status, Status::ok);
      worst = std::max(worst, obs.constraint_residual);
      EXPECT_EQ(obs.multiplier[0], ts.y[6]);
      if (k % 10 == 0) {
        V<6> qq;
        for (int c = 0; c < 6; ++c) qq[c] = ts.y[c];
        dist = std::max(dist, max_diff(qq, nh[k / 10 - 1]));
      }
    }
    std::printf(
        "vakonomic Appell, lambda(0) = %.1f: largest |g| over 5 time units %.2e, lambda(5) "
        "= %.4f, distance to the nonholonomic motion %.4f\n",
        l0, worst, ts.y[6], dist);
    EXPECT_LT(worst, 1e-9);
    if (l0 != 0.0) {
      EXPECT_GT(dist, 1e-3);
    }
  }
}

// ------------------------------------------ 3. redundant constraints

template <class Plain, class Redundant>
void check_redundant(const typename Plain::Params& p, const V<Plain::n>& q0,
                     const V<Plain::n>& qd0) {
  constexpr int n = Plain::n;
  const IntegratorOptions opt = tight();
  const auto plain = trajectory(UdwadiaKalabaSystem<Plain>{p, EvalOptions()}, q0, qd0, 10.0, opt);
  const auto uk = trajectory(UdwadiaKalabaSystem<Redundant>{p, EvalOptions()}, q0, qd0, 10.0, opt);
  const auto ns = trajectory(NullSpaceSystem<Redundant>{p, EvalOptions()}, q0, qd0, 10.0, opt);
  const double g_uk = trajectory_gap(uk, plain), g_ns = trajectory_gap(ns, plain);
  EXPECT_LT(g_uk, 1e-10) << Redundant::name;
  EXPECT_LT(g_ns, 1e-10) << Redundant::name;
  // multipliers and vakonomic: singular saddle-point matrix, reported, no NaN
  LagrangeMultiplierSystem<Redundant> lm{p, EvalOptions()};
  VakonomicSystem<Redundant> vk{p, EvalOptions()};
  V<2 * n> y, dy;
  lm.pack(q0, qd0, V<m_of<Redundant>>::zero(), y);
  EXPECT_EQ(lm(0.0, y, dy), Status::singular);
  EXPECT_TRUE(all_finite(dy));
  Observation<double, n, m_of<Redundant>> obs;
  lm.observe(0.0, y, obs);
  EXPECT_EQ(obs.status, Status::singular);
  EXPECT_TRUE(all_finite(obs.qdd) && all_finite(obs.force_ideal) && all_finite(obs.multiplier));
  V<VakonomicSystem<Redundant>::N> yv, dyv;
  vk.pack(q0, qd0, V<m_of<Redundant>>::zero(), yv);
  EXPECT_EQ(vk(0.0, yv, dyv), Status::singular);
  EXPECT_TRUE(all_finite(dyv));
  auto ts = start_trajectory<double, 2 * n>(0.0, y, opt);
  advance_to(lm, ts, 1.0, opt);
  EXPECT_EQ(ts.status, Status::singular);
  EXPECT_EQ(ts.fail_time, 0.0);
  EXPECT_TRUE(all_finite(ts.y));
  std::printf(
      "%-22s UK vs plain model %.2e, null space vs plain %.2e; multipliers and vakonomic: "
      "%s\n",
      Redundant::name, g_uk, g_ns, status_name(ts.status));
}

TEST(Redundant, UdwadiaKalabaAndNullSpaceGiveThePlainMotionMultipliersReportSingular) {
  {
    const RollingCoin::Params p{1.0, 0.5, 9.81, 0.3};
    const double th = 0.4, phid = 2.0;
    const V<4> q0{{0.0, 1.0, 0.0, th}};
    const V<4> qd0{{0.5 * phid * std::sin(th), 0.5 * phid * std::cos(th), phid, 1.7}};
    check_redundant<RollingCoin, RollingCoinRedundant>(p, q0, qd0);
  }
  {
    const Skate::Params p{1.0, 0.4, 0.9, 9.81, 0.3};
    const double th = 0.3, v = 1.2;
    const V<3> q0{{0.0, 0.0, th}}, qd0{{v * std::cos(th), v * std::sin(th), 1.1}};
    check_redundant<Skate, SkateRedundant>(p, q0, qd0);
  }
}

// Appell at rest: A = 0. UK and null space return the unconstrained motion;
// all four formulations report the state singular (they agree).
TEST(Redundant, AppellAtRestVanishingConstraintRow) {
  const Appell::Params p{0.0, 0.0, 0.3, -0.2, -1.0, 1.0, 1.0};
  const V<3> q{{0.0, 0.0, 1.0}}, qd = V<3>::zero();
  const V<3> free{{p.force_x, p.force_y, p.force_z}};
  const auto uk = accel<UdwadiaKalabaSystem<Appell>>(p, q, qd, 0.0);
  const auto ns = accel<NullSpaceSystem<Appell>>(p, q, qd, 0.0);
  const auto lm = accel<LagrangeMultiplierSystem<Appell>>(p, q, qd, 0.0);
  const auto vk = vakonomic_acceleration<Appell>(p, q, qd, V<1>::zero(), 0.0, EvalOptions());
  // A = 0 where the model's constraint has rank 1: every formulation calls
  // the state singular; UK and null space still return the Moore–Penrose
  // (here: unconstrained) accelerations
  EXPECT_EQ(uk.status, Status::singular);
  EXPECT_EQ(ns.status, Status::singular);
  EXPECT_TRUE(close(uk.qdd, free, 1e-14));
  EXPECT_TRUE(close(ns.qdd, free, 1e-14));
  EXPECT_EQ(lm.status, Status::singular);
  EXPECT_EQ(vk.status, Status::singular);
  EXPECT_TRUE(all_finite(lm.qdd) && all_finite(vk.qdd) && all_finite(vk.lambdadot));
}

// ------------------------------------------ 4. the System interface, uniformly

template <class Sys>
void check_interface(const char* name, int n_extra) {
  EXPECT_STREQ(Sys::formulation_name, name);
  EXPECT_EQ(Sys::n_extra, n_extra);
  EXPECT_EQ(Sys::N, 2 * Sys::n + Sys::n_extra);
  const typename Sys::Params p{1.0, 0.5, 9.81, 0.3};
  Sys sys{p, EvalOptions()};
  V<4> q{{1.0, 2.0, 3.0, 4.0}}, qd{{5.0, 6.0, 7.0, 8.0}}, q2, qd2;
  V<Sys::N> y;
  sys.pack(q, qd, V<2>{{9.0, 10.0}}, y);
  Sys::split(y, q2, qd2);
  EXPECT_EQ(max_diff(q, q2), 0.0);
  EXPECT_EQ(max_diff(qd, qd2), 0.0);
  if (n_extra == 2) {
    EXPECT_EQ(y[8], 9.0);
    EXPECT_EQ(y[9], 10.0);
  }
}

TEST(Interface, EveryFormulationPacksAndSplitsAlike) {
  check_interface<UdwadiaKalabaSystem<RollingCoin>>("udwadia_kalaba", 0);
  check_interface<LagrangeMultiplierSystem<RollingCoin>>("lagrange_multiplier", 0);
  check_interface<NullSpaceSystem<RollingCoin>>("null_space", 0);
  check_interface<VakonomicSystem<RollingCoin>>("vakonomic", 2);
  EXPECT_STREQ(ConflatedSystem<Skate>::formulation_name, "conflated");
  EXPECT_STREQ((UdwadiaKalabaSystem<Conflated<Skate>>::formulation_name), "conflated");
}

// The nonideal C of the multiplier form, added to F, gives UK's motion (the
// Coulomb block and the Appell drag are in check_three_agree); here the
// observed forces along a trajectory of the block: force_nonideal = C for the
// multiplier form, force_ideal + force_nonideal = M qdd - F for all.
TEST(Accelerations, NonidealForceDecomposition) {
  const InclineBlock::Params p{2.0, 9.81, 0.5, 0.3};
  const double c = std::cos(p.angle), sn = std::sin(p.angle), v0 = -1.0;
  const V<2> q{{c, sn}}, qd{{v0 * c, v0 * sn}};
  UdwadiaKalabaSystem<InclineBlock> uk{p, EvalOptions()};
  LagrangeMultiplierSystem<InclineBlock> lm{p, EvalOptions()};
  V<4> y;
  uk.pack(q, qd, V<1>::zero(), y);
  Observation<double, 2, 1> ou, ol;
  uk.observe(0.0, y, ou);
  lm.observe(0.0, y, ol);
  const V<2> C = nonideal_terms<InclineBlock>(p, q, qd, 0.0);
  EXPECT_TRUE(close(ol.force_nonideal, C, 1e-15));
  EXPECT_TRUE(close(ol.qdd, ou.qdd, 1e-13));
  EXPECT_TRUE(close(ol.force_ideal + ol.force_nonideal, ou.force_ideal + ou.force_nonideal, 1e-13));
  // sliding down: sdd = -g sin(theta) + mu g cos(theta)
  const double sdd = ol.qdd[0] * c + ol.qdd[1] * sn;
  EXPECT_NEAR(sdd, -p.g * sn + p.friction * p.g * c, 1e-12);
}


}  // namespace
