// Tests of kernels/fundamental.hpp: the fundamental equation against closed
// forms derived by hand, its force decomposition, and its edge cases.
#include <gtest/gtest.h>

#include <random>

#include "kernels/dynamics.hpp"
#include "kernels/fundamental.hpp"
#include "models/rolling_coin.hpp"

using namespace nholo;
using models::RollingCoin;

namespace {

// Rolling coin: theta'' = 0 and, differentiating the constraints,
//   phi'' = 2 g sin(alpha) cos(theta) / (3 R)   (from docs/physics.md, item 10)
//   x'' = R phi'' sin(theta) + R phi' theta' cos(theta)
//   y'' = R phi'' cos(theta) - R phi' theta' sin(theta)
TEST(Fundamental, RollingCoinMatchesClosedForm) {
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  const RollingCoin::Params p{1.3, 0.7, 9.81, 0.4};
  for (int trial = 0; trial < 200; ++trial) {
    Vec<double, 4> q{{u(rng), u(rng), u(rng), u(rng)}};
    const double phid = u(rng), thd = u(rng);
    Vec<double, 4> qd{{p.radius * phid * std::sin(q[3]), p.radius * phid * std::cos(q[3]), phid, thd}};
    Mat<double, 4, 4> M;
    Vec<double, 4> F;
    lagrangian_terms_ad<RollingCoin>(p, q, qd, 0.0, M, F);
    Mat<double, 2, 4> A;
    Vec<double, 2> b;
    constraint_terms<RollingCoin>(p, q, qd, 0.0, A, b);
    const auto r = udwadia_kalaba(M, F, A, b, Vec<double, 4>::zero());
    ASSERT_EQ(r.status, Status::ok);
    const double phidd = 2.0 * p.g * std::sin(p.slope) * std::cos(q[3]) / (3.0 * p.radius);
    const double xdd = p.radius * phidd * std::sin(q[3]) + p.radius * phid * thd * std::cos(q[3]);
    const double ydd = p.radius * phidd * std::cos(q[3]) - p.radius * phid * thd * std::sin(q[3]);
    const double scale = 1.0 + std::abs(xdd) + std::abs(ydd) + std::abs(phidd);
    EXPECT_NEAR(r.qdd[0], xdd, 1e-12 * scale);
    EXPECT_NEAR(r.qdd[1], ydd, 1e-12 * scale);
    EXPECT_NEAR(r.qdd[2], phidd, 1e-12 * scale);
    EXPECT_NEAR(r.qdd[3], 0.0, 1e-12 * scale);
    // M qdd = F + Q_i, and the ideal force does no work on admissible velocities
    const Vec<double, 4> lhs = M * r.qdd;
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(lhs[i], F[i] + r.force_ideal[i], 1e-12 * scale);
    EXPECT_NEAR(dot(r.force_ideal, qd), 0.0, 1e-12 * scale * (1 + norm(qd)));
  }
}

// The singular-mass form with a nonideal force C. By hand: M = diag(1, 0),
// one constraint qdd1 + qdd2 = b. The virtual displacements v1 = -v2 see
// M qdd - F - C vanish: (qdd1 - F1 - C1) - (0 - F2 - C2) = 0, so
// qdd1 = F1 + C1 - F2 - C2 and qdd2 = b - qdd1; the nonideal force is C's
// part along (1, -1): ((C1 - C2) / 2, (C2 - C1) / 2).
TEST(Fundamental, SingularMassFormWithANonidealForce) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  for (int trial = 0; trial < 50; ++trial) {
    const Mat<double, 2, 2> M{{1.0, 0.0, 0.0, 0.0}};
    const Mat<double, 1, 2> A{{1.0, 1.0}};
    const Vec<double, 1> b{{u(rng)}};
    const Vec<double, 2> F{{u(rng), u(rng)}}, C{{u(rng), u(rng)}};
    const auto r = udwadia_kalaba_singular<true>(M, F, A, b, C);
    ASSERT_EQ(r.status, Status::ok);
    const double qdd1 = F[0] + C[0] - F[1] - C[1];
    EXPECT_NEAR(r.qdd[0], qdd1, 1e-13);
    EXPECT_NEAR(r.qdd[1], b[0] - qdd1, 1e-13);
    EXPECT_NEAR(r.force_nonideal[0], 0.5 * (C[0] - C[1]), 1e-14);
    EXPECT_NEAR(r.force_nonideal[1], 0.5 * (C[1] - C[0]), 1e-14);
    // the rest of the constraint force lies along A's row
    EXPECT_NEAR(r.force_ideal[0], r.force_ideal[1], 1e-13);
  }
  // where M is positive definite the motion is the regular form's, C included
  const RollingCoin::Params p{1.3, 0.7, 9.81, 0.4};
  for (int trial = 0; trial < 50; ++trial) {
    Vec<double, 4> q{{u(rng), u(rng), u(rng), u(rng)}}, qd{{u(rng), u(rng), u(rng), u(rng)}};
    Mat<double, 4, 4> M;
    Vec<double, 4> F, C{{u(rng), u(rng), u(rng), u(rng)}};
    lagrangian_terms_ad<RollingCoin>(p, q, qd, 0.0, M, F);
    Mat<double, 2, 4> A;
    Vec<double, 2> b;
    constraint_terms<RollingCoin>(p, q, qd, 0.0, A, b);
    const auto regular = udwadia_kalaba(M, F, A, b, C);
    const auto singular = udwadia_kalaba_singular<true>(M, F, A, b, C);
    ASSERT_EQ(singular.status, Status::ok);
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(singular.qdd[i], regular.qdd[i], 1e-11) << i;
  }
}

}  // namespace
