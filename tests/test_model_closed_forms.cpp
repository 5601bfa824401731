// Tests of models/*.hpp against the papers (the terms of every model and the
// registry: test_model_terms.cpp).
//
//  1. Closed forms: every item 1-9 of docs/physics.md, section 2 (correct and
//     conflated), at >= 100 random consistent states, to 1e-12.
//  2. The misprints docs/physics.md lists really are misprints (the printed form
//     disagrees with the fundamental equation; the corrected one agrees).
//
// "to tol" means |got_i - want_i| <= tol * (1 + max_j |want_j|) (as in
// test_fundamental.cpp); states and parameters are O(1), so this is a
// relative tolerance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/dynamics.hpp"
#include "kernels/fundamental.hpp"
#include "models/registry.hpp"
#include "tests/model_cases.hpp"

using namespace nholo;
using namespace nholo::models;
using namespace nholo_test;

namespace {

// ------------------------------- 1.1 Hamel's skate (docs/physics.md, item 1)

// m = 1, no forces (slope 0): correct motion (1.12) as printed
//   xdd = s thd^2 cos th - xd thd tan th,  ydd = s thd^2 sin th + xd thd,
//   I_B thdd = -s thd (yd sin th + xd cos th)
TEST(ClosedForm, SkateCorrect_1_12) {
  Rng rng(101);
  for (int k = 0, tested = 0; tested < kStates; ++k) {
    auto p = Case<Skate>::params(rng);
    p.mass = 1.0;
    p.inertia = p.offset * p.offset + uni(rng, 0.2, 1.5);
    p.slope = 0.0;
    auto s = Case<Skate>::state(rng, p);
    if (std::abs(std::cos(s.q[2])) < 0.05) continue;  // (1.12) is printed with tan th
    ++tested;
    const auto r = solve<Skate>(p, s);
    ASSERT_EQ(r.status, Status::ok);
    const double th = s.q[2], xd = s.qd[0], yd = s.qd[1], thd = s.qd[2], a = p.offset;
    const V<3> want{{a * thd * thd * std::cos(th) - xd * thd * std::tan(th),
                     a * thd * thd * std::sin(th) + xd * thd,
                     -a * thd * (yd * std::sin(th) + xd * std::cos(th)) / p.inertia}};
    ASSERT_TRUE(close(r.qdd, want, kTolHand)) << "state " << k;
    expect_on_constraint<Skate>(p, s, r.qdd);
  }
}

// General m, s, I_B on a slope (derived by hand from (1.9)-(1.11) with gravity,
// v = xd cos th + yd sin th the speed along the blade):
//   I_B thdd = -m s (thd v + g sin(alpha) sin th)
//   xdd cos th + ydd sin th = s thd^2 + g sin(alpha) cos th
//   -xdd sin th + ydd cos th = thd v
TEST(ClosedForm, SkateCorrectOnSlopeGeneralMass) {
  Rng rng(102);
  for (int k = 0; k < kStates; ++k) {
    const auto p = Case<Skate>::params(rng);
    const auto s = Case<Skate>::state(rng, p);
    const auto r = solve<Skate>(p, s);
    ASSERT_EQ(r.status, Status::ok);
    const double th = s.q[2], c = std::cos(th), sn = std::sin(th), thd = s.qd[2];
    const double v = s.qd[0] * c + s.qd[1] * sn, gs = p.g * std::sin(p.slope);
    const double along = p.offset * thd * thd + gs * c, normal = thd * v;
    const V<3> want{{along * c - normal * sn, along * sn + normal * c,
                     -p.mass * p.offset * (thd * v + gs * sn) / p.inertia}};
    ASSERT_TRUE(close(r.qdd, want, kTolHand)) << "state " << k;
  }
}

// Conflated T+, m = 1, no forces: the wrong (1.14)
//   xdd = -xd thd tan th, ydd = xd thd, thdd = 0
TEST(ClosedForm, SkateConflated_1_14) {
  Rng rng(103);
  for (int k = 0, tested = 0; tested < kStates; ++k) {
    auto p = Case<Skate>::params(rng);
    p.mass = 1.0;
    p.inertia = p.offset * p.offset + uni(rng, 0.2, 1.5);
    p.slope = 0.0;
    const auto s = Case<Skate>::state(rng, p);
    if (std::abs(std::cos(s.q[2])) < 0.05) continue;  // (1.14) too
    ++tested;
    const auto r = solve<Conflated<Skate>>(p, as_conflated(s));
    ASSERT_EQ(r.status, Status::ok);
    const double th = s.q[2], xd = s.qd[0], thd = s.qd[2];
    const V<3> want{{-xd * thd * std::tan(th), xd * thd, 0.0}};
    ASSERT_TRUE(close(r.qdd, want, kTolHand)) << "state " << k;
    // and it differs from the correct motion whenever s thd != 0
    const auto rc = solve<Skate>(p, s);
    if (std::abs(p.offset * thd) > 0.1) {
      EXPECT_FALSE(close(rc.qdd, r.qdd, 1e-6));
    }
  }
}

// ------------------------------- 1.2 sleigh, a = 0 (docs/physics.md, item 2)
// phi = Omega t + phi0, v = v0 + (g sin(alpha)/Omega)(sin(Omega t + phi0) - sin phi0),
// xd = v cos phi, yd = v sin phi. Differentiated at time t:
//   thdd = 0,  vdot = g sin(alpha) cos phi,
//   xdd = vdot cos phi - v Omega sin phi,  ydd = vdot sin phi + v Omega cos phi
TEST(ClosedForm, SleighZeroOffset) {
  Rng rng(104);
  for (int k = 0; k < kStates; ++k) {
    auto p = Case<Skate>::params(rng);
    p.offset = 0.0;
    const double Omega = signed_uni(rng, 0.2, 2.0), phi0 = uni(rng, -3.0, 3.0);
    const double v0 = uni(rng, -2.0, 2.0), t = uni(rng, 0.0, 10.0);
    const double gs = p.g * std::sin(p.slope), phi = Omega * t + phi0;
    const double v = v0 + gs / Omega * (std::sin(phi) - std::sin(phi0));
    State<Skate> s;
    s.q = V<3>{{uni(rng, -3.0, 3.0), uni(rng, -3.0, 3.0), phi}};
    s.qd = V<3>{{v * std::cos(phi), v * std::sin(phi), Omega}};
    s.t = t;
    const auto r = solve<Skate>(p, s);
    ASSERT_EQ(r.status, Status::ok);
    const double vdot = gs * std::cos(phi);
    const V<3> want{{vdot * std::cos(phi) - v * Omega * std::sin(phi),
                     vdot * std::sin(phi) + v * Omega * std::cos(phi), 0.0}};
    ASSERT_TRUE(close(r.qdd, want, kTolHand)) << "state " << k;
  }
}

// ------------------------------- 1.3 Appell (docs/physics.md, item 3)

// Ideal, alpha = 0: (3.7) as printed, both of its forms
TEST(ClosedForm, AppellIdeal_3_7) {
  Rng rng(201);
  for (int k = 0; k < kStates; ++k) {
    auto p = Case<Appell>::params(rng);
    p.alpha = 0.0;
    p.drag = 0.0;
    const auto s = Case<Appell>::state(rng, p);
    const auto r = solve<Appell>(p, s);
    ASSERT_EQ(r.status, Status::ok);
    const double xd = s.qd[0], yd = s.qd[1], zd = s.qd[2];
    const double Fx = p.force_x, Fy = p.force_y, Fz = p.force_z;
    const double u2 = xd * xd + yd * yd + zd * zd, k1 = (-xd * Fx - yd * Fy + zd * Fz) / u2;
    const V<3> want1{{Fx + xd * k1, Fy + yd * k1, Fz - zd * k1}};
    const double d = 2.0 * zd * zd;
    const V<3> want2{{((yd * yd + zd * zd) * Fx - xd * yd * Fy + xd * zd * Fz) / d,
                      (-xd * yd * Fx + (xd * xd + zd * zd) * Fy + yd * zd * Fz) / d,
                      (xd * zd * Fx + yd * zd * Fy + (xd * xd + yd * yd) * Fz) / d}};
    ASSERT_TRUE(close(r.qdd, want1, kTolHand)) << "state " << k;
    ASSERT_TRUE(close(r.qdd, want2, kTolHand)) << "state " << k;
    EXPECT_TRUE(close(r.force_nonideal, V<3>::zero(), kTolHand));
  }
}

// Nonideal drag, alpha != 0 (Udwadia (2005) eq 30 with x^2 -> xd^2):
//   qdd = F + (alpha gdot - xd Fx - yd Fy + zd Fz)/u^2 (xd, yd, -zd)
//         - a0/|u| (2 xd zd^2, 2 yd zd^2, 2 zd (xd^2 + yd^2))
// with the middle term the ideal force Q_i^c, the last Q_ni^c.
TEST(ClosedForm, AppellDrag_30) {
  Rng rng(202);
  for (int k = 0; k < kStates; ++k) {
    const auto p = Case<Appell>::params(rng);
    const auto s = Case<Appell>::state(rng, p);
    const auto r = solve<Appell>(p, s);
    ASSERT_EQ(r.status, Status::ok);
    const double xd = s.qd[0], yd = s.qd[1], zd = s.qd[2];
    const double Fx = p.force_x, Fy = p.force_y, Fz = p.force_z;
    const double u2 = xd * xd + yd * yd + zd * zd, u = std::sqrt(u2);
    const double k1 = (p.alpha * Case<Appell>::gdot(p, s.t) - xd * Fx - yd * Fy + zd * Fz) / u2;
    const V<3> Qi{{xd * k1, yd * k1, -zd * k1}};
    const V<3> Qni{{-p.drag / u * 2.0 * xd * zd * zd, -p.drag / u * 2.0 * yd * zd * zd,
                    -p.drag / u * 2.0 * zd * (xd * xd + yd * yd)}};
    const V<3> want{{Fx + Qi[0] + Qni[0], Fy + Qi[1] + Qni[1], Fz + Qi[2] + Qni[2]}};
    ASSERT_TRUE(close(r.qdd, want, kTolHand)) << "state " << k;
    ASSERT_TRUE(close(r.force_ideal, Qi, kTolHand)) << "state " << k;
    ASSERT_TRUE(close(r.force_nonideal, Qni, kTolHand)) << "state " << k;
    expect_on_constraint<Appell>(p, s, r.qdd);
  }
}

// Conflated T+ = xd^2 + yd^2, M = diag(2, 2, 0) singular: udwadia_kalaba
// refuses (status singular), eq 2.7 gives the wrong (3.11)-(3.13):
//   xdd = (zd Fx + xd Fz)/(2 zd), ydd = (zd Fy + yd Fz)/(2 zd),
//   zdd = (xd zd Fx + yd zd Fy + (xd^2 + yd^2) Fz)/(2 zd^2)
TEST(ClosedForm, AppellConflated_3_11_to_3_13) {
  Rng rng(203);
  for (int k = 0; k < kStates; ++k) {
    auto p = Case<Appell>::params(rng);
    p.alpha = 0.0;
    p.drag = 0.0;
    const auto s = as_conflated(Case<Appell>::state(rng, p));
    EXPECT_EQ(solve<Conflated<Appell>>(p, s).status, Status::singular);
    const auto r = solve_singular<Conflated<Appell>>(p, s);
    ASSERT_EQ(r.status, Status::ok);
    EXPECT_EQ(r.rank, 3);
    const double xd = s.qd[0], yd = s.qd[1], zd = s.qd[2];
    const double Fx = p.force_x, Fy = p.force_y, Fz = p.force_z;
    const V<3> want{{(zd * Fx + xd * Fz) / (2.0 * zd), (zd * Fy + yd * Fz) / (2.0 * zd),
                     (xd * zd * Fx + yd * zd * Fy + (xd * xd + yd * yd) * Fz) / (2.0 * zd * zd)}};
    ASSERT_TRUE(close(r.qdd, want, kTolHand)) << "state " << k;
  }
}

// At rest A = [xd, yd, -zd] = 0 (and C = 0): the pseudoinverse drops the
// vanishing row and the result is the unconstrained acceleration, finite.
TEST(ClosedForm, AppellAtRestIsUnconstrained) {
  Rng rng(204);
  for (int k = 0; k < kStates; ++k) {
    auto p = Case<Appell>::params(rng);
    p.alpha = 0.0;  // consistent at rest: 2 alpha g(t) = 0
    State<Appell> s;
    s.q = V<3>{{uni(rng, -3.0, 3.0), uni(rng, -3.0, 3.0), uni(rng, -3.0, 3.0)}};
    s.qd = V<3>::zero();
    s.t = uni(rng, -5.0, 5.0);
    const auto r = solve<Appell>(p, s);
    ASSERT_EQ(r.status, Status::ok);
    ASSERT_TRUE(all_finite(r.qdd));
    EXPECT_EQ(r.rank, 0);
    ASSERT_TRUE(close(r.qdd, V<3>{{p.force_x, p.force_y, p.force_z}}, kTolHand));
    EXPECT_TRUE(close(r.force_ideal, V<3>::zero(), kTolHand));
    EXPECT_TRUE(close(r.force_nonideal, V<3>::zero(), kTolHand));
  }
}

// ------------------------------- 1.4 example 2 (docs/physics.md, item 4)

// Correct: (3.20) with z zd and z^2 for the printed zd zd and zd^2
//   xdd = -c^2 z xd zd/(1 + c^2 z^2), ydd = c xd zd/(1 + c^2 z^2), zdd = 0
TEST(ClosedForm, Example2Correct_3_20_corrected) {
  Rng rng(301);
  for (int k = 0; k < kStates; ++k) {
    const auto p = Case<UdwadiaExample2>::params(rng);
    const auto s = Case<UdwadiaExample2>::state(rng, p);
    const auto r = solve<UdwadiaExample2>(p, s);
    ASSERT_EQ(r.status, Status::ok);
    const double c = p.c, z = s.q[2], xd = s.qd[0], zd = s.qd[2], d = 1.0 + c * c * z * z;
    const V<3> want{{-c * c * z * xd * zd / d, c * xd * zd / d, 0.0}};
    ASSERT_TRUE(close(r.qdd, want, kTolHand)) << "state " << k;
  }
}

// Partly conflated T+(alpha), 0 <= alpha < 1: (3.25) as printed
//   xdd = -c^2 (alpha + 1) xd z zd/(1 + c^2 z^2),
//   ydd = c (1 - c^2 alpha z^2) xd zd/(1 + c^2 z^2),  zdd = c^2 alpha xd^2 z
// (alpha = 0 is the correct motion); alpha = 1 (singular M) by eq 2.7 gives
// the same expressions at alpha = 1 ((3.32), Udwadia & Wanichanon (2010) sec. 3.2.2).
TEST(ClosedForm, Example2Conflated_3_25) {
  Rng rng(302);
  const double alphas[] = {0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0};
  for (double alpha : alphas) {
    for (int k = 0; k < kStates; ++k) {
      auto p = Case<UdwadiaExample2>::params(rng);
      p.alpha = alpha;
      const auto s = as_conflated(Case<UdwadiaExample2>::state(rng, p));
      const auto r = alpha < 1.0 ? solve<Conflated<UdwadiaExample2>>(p, s)
                                 : solve_singular<Conflated<UdwadiaExample2>>(p, s);
      ASSERT_EQ(r.status, Status::ok) << "alpha " << alpha;
      const double c = p.c, z = s.q[2], xd = s.qd[0], zd = s.qd[2], d = 1.0 + c * c * z * z;
      const V<3> want{{-c * c * (alpha + 1.0) * xd * z * zd / d,
                       c * (1.0 - c * c * alpha * z * z) * xd * zd / d,
                       c * c * alpha * xd * xd * z}};
      ASSERT_TRUE(close(r.qdd, want, kTolHand)) << "alpha " << alpha << " state " << k;
    }
  }
}

// ------------------------------- 1.5 example 3 (docs/physics.md, item 5)

// Correct: (3.37) as printed
//   xdd = -x, ydd = xd zd/(c (yd^2 + zd^2)), zdd = xd yd/(c (yd^2 + zd^2))
TEST(ClosedForm, Example3Correct_3_37) {
  Rng rng(401);
  for (int k = 0; k < kStates; ++k) {
    const auto p = Case<UdwadiaExample3>::params(rng);
    const auto s = Case<UdwadiaExample3>::state(rng, p);
    const auto r = solve<UdwadiaExample3>(p, s);
    ASSERT_EQ(r.status, Status::ok);
    const double c = p.c, xd = s.qd[0], yd = s.qd[1], zd = s.qd[2];
    const double d = c * (yd * yd + zd * zd);
    const V<3> want{{-s.q[0], xd * zd / d, xd * yd / d}};
    ASSERT_TRUE(close(r.qdd, want, kTolHand)) << "state " << k;
  }
}

// Conflated L+: (3.40) with the printed 2 xd^2 read as 2 x^2 = 2 c^2 yd^2 zd^2
//   xdd = 0, ydd = xd zd (1 + c^2 yd^2)/(c D), zdd = xd yd (1 + c^2 zd^2)/(c D),
//   D = yd^2 + zd^2 + 2 c^2 yd^2 zd^2.
// Where the conflated M is positive definite (c^2 (yd^2 + zd^2) + 3 c^4 yd^2 zd^2
// < 1) by eq 2.6; where it is indefinite udwadia_kalaba reports singular and
// eq 2.7 (valid for any M with rank [M | A^T] = 3) gives the same expression.
TEST(ClosedForm, Example3Conflated_3_40_corrected) {
  Rng rng(402);
  int definite = 0, indefinite = 0;
  while (definite < kStates || indefinite < kStates) {
    const auto p = Case<UdwadiaExample3>::params(rng);
    const auto s = as_conflated(Case<UdwadiaExample3>::state(rng, p));
    const double c = p.c, xd = s.qd[0], yd = s.qd[1], zd = s.qd[2];
    const double c2 = c * c,
                 detM = 1.0 - c2 * (yd * yd + zd * zd) - 3.0 * c2 * c2 * yd * yd * zd * zd;
    if (std::abs(detM) < 0.1) continue;
    const bool pd = detM > 0.0 && 1.0 - c2 * zd * zd > 0.0;
    if ((pd && definite >= kStates) || (!pd && indefinite >= kStates)) continue;
    const double D = yd * yd + zd * zd + 2.0 * c2 * yd * yd * zd * zd;
    const V<3> want{
        {0.0, xd * zd * (1.0 + c2 * yd * yd) / (c * D), xd * yd * (1.0 + c2 * zd * zd) / (c * D)}};
    if (pd) {
      const auto r = solve<Conflated<UdwadiaExample3>>(p, s);
      ASSERT_EQ(r.status, Status::ok);
      ASSERT_TRUE(close(r.qdd, want, kTolHand)) << "definite state " << definite;
      ++definite;
    } else {
      EXPECT_EQ(solve<Conflated<UdwadiaExample3>>(p, s).status, Status::singular);
      const auto r = solve_singular<Conflated<UdwadiaExample3>>(p, s);
      ASSERT_EQ(r.status, Status::ok);
      ASSERT_TRUE(close(r.qdd, want, kTolHand)) << "indefinite state " << indefinite;
      ++indefinite;
    }
  }
}

// ------------------------------- 1.6 example 4 (docs/physics.md, item 6)

// (3.51): xdd = Fx, ydd = (zd^2 + z^2 Fy + z Fz)/(1 + z^2),
//         zdd = (-z zd^2 + z Fy + Fz)/(1 + z^2);
// the conflated T+ (singular M = diag(1, 0, 1 + z^2)) by eq 2.7 gives the same.
TEST(ClosedForm, Example4CorrectAndConflated_3_51) {
  Rng rng(501);
  for (int k = 0; k < kStates; ++k) {
    const auto p = Case<UdwadiaExample4>::params(rng);
    const auto s = Case<UdwadiaExample4>::state(rng, p);
    const double z = s.q[2], zd = s.qd[2], d = 1.0 + z * z;
    const V<3> want{{p.force_x, (zd * zd + z * z * p.force_y + z * p.force_z) / d,
                     (-z * zd * zd + z * p.force_y + p.force_z) / d}};
    const auto r = solve<UdwadiaExample4>(p, s);
    ASSERT_EQ(r.status, Status::ok);
    ASSERT_TRUE(close(r.qdd, want, kTolHand)) << "state " << k;
    const auto sc = as_conflated(s);
    EXPECT_EQ(solve<Conflated<UdwadiaExample4>>(p, sc).status, Status::singular);
    const auto rc = solve_singular<Conflated<UdwadiaExample4>>(p, sc);
    ASSERT_EQ(rc.status, Status::ok);
    EXPECT_EQ(rc.rank, 3);
    ASSERT_TRUE(close(rc.qdd, want, kTolHand)) << "conflated state " << k;
  }
}

// ------------------------------- 1.7 incline block (docs/physics.md, item 7)

// s the distance up the slope (x = s cos theta, y = s sin theta):
//   sdd = -g sin theta - mu g cos theta sgn(sd), no acceleration normal to the plane,
// and Udwadia (2005) eq (39) term by term: Q_i^c = m g (-sin cos, cos^2),
// Q_ni^c = -mu m g (cos^2, cos sin) sgn(xd).
TEST(ClosedForm, InclineBlockCoulomb_39) {
  Rng rng(601);
  for (int k = 0; k < kStates; ++k) {
    const auto p = Case<InclineBlock>::params(rng);
    auto s = Case<InclineBlock>::state(rng, p);
    if (k % 10 == 0) s.qd = V<2>::zero();  // at rest: sgn = 0, no friction
    const auto r = solve<InclineBlock>(p, s);
    ASSERT_EQ(r.status, Status::ok);
    const double th = p.angle, c = std::cos(th), sn = std::sin(th);
    const double sd = s.qd[0] * c + s.qd[1] * sn;
    const double sg = sd > 0.0 ? 1.0 : (sd < 0.0 ? -1.0 : 0.0);
    const double sdd = -p.g * sn - p.friction * p.g * c * sg;
    ASSERT_TRUE(close(r.qdd[0] * c + r.qdd[1] * sn, sdd, kTolHand)) << "state " << k;
    ASSERT_TRUE(close(-r.qdd[0] * sn + r.qdd[1] * c, 0.0, kTolHand)) << "state " << k;
    const double m = p.mass, g = p.g, mu = p.friction;
    const V<2> Qi{{-m * g * sn * c, m * g * c * c}};
    const V<2> Qni{{-mu * m * g * c * c * sg, -mu * m * g * c * sn * sg}};
    const V<2> want{{(0.0 + Qi[0] + Qni[0]) / m, (-m * g + Qi[1] + Qni[1]) / m}};
    ASSERT_TRUE(close(r.qdd, want, kTolHand)) << "state " << k;
    ASSERT_TRUE(close(r.force_ideal, Qi, kTolHand)) << "state " << k;
    ASSERT_TRUE(close(r.force_nonideal, Qni, kTolHand)) << "state " << k;
  }
}

// ------------------------------------------ 1.8 parallel velocities (item 8)

// No forces, parallel velocities: free motion, no constraint force, lambda = 0
TEST(ClosedForm, ParallelVelocitiesFree) {
  Rng rng(701);
  for (int k = 0; k < kStates; ++k) {
    const auto p = Case<ParallelVelocities>::params(rng);
    const auto s = Case<ParallelVelocities>::state(rng, p);
    const auto r = solve<ParallelVelocities>(p, s);
    ASSERT_EQ(r.status, Status::ok);
    const double scale = max_abs(s.qd) * max_abs(s.qd);
    ASSERT_LE(max_abs(r.qdd), 1e-12 * scale) << "state " << k;
    ASSERT_LE(max_abs(r.force_ideal), 1e-12 * scale) << "state " << k;
    ASSERT_LE(std::abs(r.multiplier[0]), 1e-12 * scale) << "state " << k;
  }
}

// ------------------------------------------ 1.9 integrable constraint (item 9)

// Theta = q1^4 + q1^3 q2^2 with grad = (4 q1^3 + 3 q1^2 q2^2, 2 q1^3 q2) and
// Hessian [[12 q1^2 + 6 q1 q2^2, 6 q1^2 q2], [6 q1^2 q2, 2 q1^3]]: at consistent
// states dTheta/dt = grad . qd = 0 and, along the computed acceleration,
// d2Theta/dt2 = grad . qdd + qd^T H qd = 0. Also qdd = b A^T/|A|^2 (M = I, F = 0).
TEST(ClosedForm, IntegrableConstraintConservesTheta) {
  Rng rng(801);
  const IntegrableConstraint::Params p{};
  for (int k = 0; k < kStates; ++k) {
    const auto s = Case<IntegrableConstraint>::state(rng, p);
    const auto r = solve<IntegrableConstraint>(p, s);
    ASSERT_EQ(r.status, Status::ok);
    const double q1 = s.q[0], q2 = s.q[1];
    const V<2> grad{{4.0 * q1 * q1 * q1 + 3.0 * q1 * q1 * q2 * q2, 2.0 * q1 * q1 * q1 * q2}};
    const Mx<2, 2> H{{12.0 * q1 * q1 + 6.0 * q1 * q2 * q2, 6.0 * q1 * q1 * q2,  //
                      6.0 * q1 * q1 * q2, 2.0 * q1 * q1 * q1}};
    const double dtheta = dot(grad, s.qd);
    const double ddtheta = dot(grad, r.qdd) + dot(s.qd, H * s.qd);
    const double scale1 = max_abs(grad) * max_abs(s.qd);
    const double scale2 =
        max_abs(grad) * max_abs(r.qdd) + max_abs(H) * max_abs(s.qd) * max_abs(s.qd);
    ASSERT_LE(std::abs(dtheta), 1e-12 * (scale1 + 1e-300)) << "state " << k;
    ASSERT_LE(std::abs(ddtheta), 1e-12 * (scale2 + 1e-300)) << "state " << k;
    // closed form qdd = b A^T / |A|^2
    const auto h = Case<IntegrableConstraint>::hand(p, s.q, s.qd, s.t);
    const double a1 = h.A(0, 0), a2 = h.A(0, 1), k2 = h.b[0] / (a1 * a1 + a2 * a2);
    ASSERT_TRUE(close(r.qdd, V<2>{{k2 * a1, k2 * a2}}, kTolHand)) << "state " << k;
    // the model's invariant is Theta
    EXPECT_TRUE(close(IntegrableConstraint::invariant(p, s.q),
                      q1 * q1 * q1 * q1 + q1 * q1 * q1 * q2 * q2, 1e-14));
  }
}

// A short RK4 integration of the fundamental equation keeps Theta constant to
// the integrator's truncation error (dt = 1e-3 over t in [0, 1]: ~1e-12 per
// unit time for these smooth paths; the tolerance 1e-9 leaves margin).
TEST(ClosedForm, IntegrableConstraintThetaAlongRk4Path) {
  Rng rng(802);
  const IntegrableConstraint::Params p{};
  using S = State<IntegrableConstraint>;
  const auto accel = [&p](const V<2>& q, const V<2>& qd, double t) {
    return solve<IntegrableConstraint>(p, S{q, qd, t}).qdd;
  };
  for (int traj = 0; traj < 10; ++traj) {
    S s;
    do {
      s = Case<IntegrableConstraint>::state(rng, p);
    } while (std::abs(s.q[0]) < 0.5);  // stay away from the singular q1 = 0
    const double theta0 = IntegrableConstraint::invariant(p, s.q);
    const double dt = 1e-3;
    V<2> q = s.q, v = s.qd;
    double t = 0.0;
    for (int step = 0; step < 1000; ++step) {
      const V<2> k1q = v, k1v = accel(q, v, t);
      const V<2> k2q = v + (0.5 * dt) * k1v, k2v = accel(q + (0.5 * dt) * k1q, k2q, t + 0.5 * dt);
      const V<2> k3q = v + (0.5 * dt) * k2v, k3v = accel(q + (0.5 * dt) * k2q, k3q, t + 0.5 * dt);
      const V<2> k4q = v + dt * k3v, k4v = accel(q + dt * k3q, k4q, t + dt);
      q += (dt / 6.0) * (k1q + 2.0 * k2q + 2.0 * k3q + k4q);
      v += (dt / 6.0) * (k1v + 2.0 * k2v + 2.0 * k3v + k4v);
      t += dt;
    }
    const double theta1 = IntegrableConstraint::invariant(p, q);
    EXPECT_NEAR(theta1, theta0, 1e-9 * (1.0 + std::abs(theta0))) << "trajectory " << traj;
  }
}

// ----------------------------------------------- 2. misprints of the papers

// Each printed form below disagrees with the fundamental equation at a generic
// consistent state, and the corrected form (tested above) agrees. The numbers
// at the fixed states are in the failure messages.
TEST(Misprints, Example2PrintedZdZd_3_20) {
  const UdwadiaExample2::Params p{1.3, 0.0};
  State<UdwadiaExample2> s{V<3>{{0.2, -0.4, 0.7}}, V<3>{{1.1, 1.3 * 0.7 * 1.1, -0.9}}, 0.0};
  const auto r = solve<UdwadiaExample2>(p, s);
  const double c = p.c, z = s.q[2], xd = s.qd[0], zd = s.qd[2];
  const double printed_x = -c * c * xd * zd * zd / (1.0 + c * c * zd * zd);
  const double printed_y = c * xd * zd / (1.0 + c * c * zd * zd);
  const double fixed_x = -c * c * z * xd * zd / (1.0 + c * c * z * z);
  EXPECT_TRUE(close(r.qdd[0], fixed_x, kTolHand));
  EXPECT_FALSE(close(r.qdd[0], printed_x, 1e-3)) << r.qdd[0] << " vs printed " << printed_x;
  EXPECT_FALSE(close(r.qdd[1], printed_y, 1e-3)) << r.qdd[1] << " vs printed " << printed_y;
}

TEST(Misprints, Example3PrintedDenominator_3_40) {
  const UdwadiaExample3::Params p{0.5};
  const double yd = 0.6, zd = -0.8;
  State<Conflated<UdwadiaExample3>> s{V<3>{{p.c * yd * zd, 0.3, 0.1}}, V<3>{{0.9, yd, zd}}, 0.0};
  const auto r = solve<Conflated<UdwadiaExample3>>(p, s);
  ASSERT_EQ(r.status, Status::ok);
  const double c = p.c, xd = s.qd[0];
  const double printed_y =
      xd * zd / c * (1.0 + c * c * yd * yd) / (2.0 * xd * xd + yd * yd + zd * zd);
  const double fixed_y =
      xd * zd / c * (1.0 + c * c * yd * yd) / (2.0 * s.q[0] * s.q[0] + yd * yd + zd * zd);
  EXPECT_TRUE(close(r.qdd[1], fixed_y, kTolHand));
  EXPECT_FALSE(close(r.qdd[1], printed_y, 1e-3)) << r.qdd[1] << " vs printed " << printed_y;
}

TEST(Misprints, AppellPositionsForVelocities_30) {
  const Appell::Params p{0.0, 0.7, 0.5, -1.0, -9.81, 1.0, 1.0};
  const double xd = 0.8, yd = -0.6, zd = 1.0;  // zd^2 = xd^2 + yd^2
  State<Appell> s{V<3>{{1.5, 2.0, -0.5}}, V<3>{{xd, yd, zd}}, 0.0};
  const auto r = solve<Appell>(p, s);
  ASSERT_EQ(r.status, Status::ok);
  // eq (30) as printed: 2 zd (x^2 + y^2) in the z row, with positions
  const double u = std::sqrt(xd * xd + yd * yd + zd * zd);
  const double printed_z = -p.drag / u * 2.0 * zd * (s.q[0] * s.q[0] + s.q[1] * s.q[1]);
  const double fixed_z = -p.drag / u * 2.0 * zd * (xd * xd + yd * yd);
  EXPECT_TRUE(close(r.force_nonideal[2], fixed_z, kTolHand));
  EXPECT_FALSE(close(r.force_nonideal[2], printed_z, 1e-3))
      << r.force_nonideal[2] << " vs printed " << printed_z;
}


}  // namespace
