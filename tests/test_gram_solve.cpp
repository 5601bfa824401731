// Tests of the fundamental equation's two solves (kernels/fundamental.hpp):
// K = A M^-1 A^T by Cholesky when its relative rank test passes, the
// pseudoinverse of W = A L^-T otherwise. References are independent: the
// saddle-point system [M -A^T; A 0] [qdd; lambda] = [F; b] solved in long
// double by Eigen, and hand-derived Moore–Penrose answers for redundant and
// vanishing constraints.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <random>

#include "kernels/cholesky.hpp"
#include "kernels/fundamental.hpp"
#include "kernels/pinv.hpp"

using namespace nholo;

namespace {

using LD = long double;
using MatLD = Eigen::Matrix<LD, Eigen::Dynamic, Eigen::Dynamic>;
using VecLD = Eigen::Matrix<LD, Eigen::Dynamic, 1>;

template <int n>
Mat<double, n, n> random_spd(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Mat<double, n, n> B;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) B(i, j) = u(rng);
  Mat<double, n, n> M = transpose(B) * B;
  for (int i = 0; i < n; ++i) M(i, i) += 0.5;
  return M;
}

// qdd and lambda of [M -A^T; A 0] [qdd; lambda] = [F; b] (A of full row rank), long double
template <int n, int m>
void kkt_reference(const Mat<double, n, n>& M, const Vec<double, n>& F, const Mat<double, m, n>& A,
                   const Vec<double, m>& b, VecLD& qdd, VecLD& lambda) {
  MatLD K = MatLD::Zero(n + m, n + m);
  VecLD r(n + m);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) K(i, j) = M(i, j);
    for (int l = 0; l < m; ++l) K(i, n + l) = -A(l, i);
    r(i) = F[i];
  }
  for (int l = 0; l < m; ++l) {
    for (int j = 0; j < n; ++j) K(n + l, j) = A(l, j);
    r(n + l) = b[l];
  }
  const VecLD x = K.fullPivLu().solve(r);
  qdd = x.head(n);
  lambda = x.tail(m);
}

// condition number of K = A M^-1 A^T, long double
template <int n, int m>
LD gram_condition(const Mat<double, n, n>& M, const Mat<double, m, n>& A) {
  MatLD Ml(n, n), Al(m, n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) Ml(i, j) = M(i, j);
  for (int l = 0; l < m; ++l)
    for (int j = 0; j < n; ++j) Al(l, j) = A(l, j);
  const MatLD K = Al * Ml.inverse() * Al.transpose();
  Eigen::SelfAdjointEigenSolver<MatLD> es(K);
  return es.eigenvalues().maxCoeff() / es.eigenvalues().minCoeff();
}

// relative pivots of K: the smallest Cholesky pivot over the largest diagonal
template <int n, int m>
double gram_pivot_ratio(const Mat<double, n, n>& M, const Mat<double, m, n>& A) {
  CholeskyFactor<double, n> f;
  EXPECT_TRUE(cholesky_factor(M, f));
  Mat<double, n, m> Wt;
  for (int l = 0; l < m; ++l) {
    Vec<double, n> c;
    for (int j = 0; j < n; ++j) c[j] = A(l, j);
    c = f.solve_lower(c);
    for (int j = 0; j < n; ++j) Wt(j, l) = c[j];
  }
  const Mat<double, m, m> K = transpose(Wt) * Wt;
  double scale = 0.0, dmin = 1e300;
  Mat<double, m, m> L = Mat<double, m, m>::zero();
  for (int j = 0; j < m; ++j) {
    scale = std::max(scale, K(j, j));
    double d = K(j, j);
    for (int k = 0; k < j; ++k) d -= L(j, k) * L(j, k);
    dmin = std::min(dmin, d);
    L(j, j) = std::sqrt(std::max(d, 0.0));
    for (int i = j + 1; i < m; ++i) {
      double s = K(i, j);
      for (int k = 0; k < j; ++k) s -= L(i, k) * L(j, k);
      L(i, j) = L(j, j) > 0.0 ? s / L(j, j) : 0.0;
    }
  }
  return dmin / scale;
}

PinvOptions with_gram_rtol(double g) {
  PinvOptions o;
  o.gram_rtol = g;
  return o;
}

template <int n>
bool same_bits(const Vec<double, n>& a, const Vec<double, n>& b) {
  for (int i = 0; i < n; ++i)
    if (!(a[i] == b[i])) return false;
  return true;
}

TEST(CholeskyFactor, MatchesCholeskyAndSolves) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int trial = 0; trial < 100; ++trial) {
    const Mat<double, 5, 5> M = random_spd<5>(rng);
    Mat<double, 5, 5> L;
    CholeskyFactor<double, 5> f;
    ASSERT_TRUE(cholesky(M, L));
    ASSERT_TRUE(cholesky_factor(M, f));
    Vec<double, 5> b;
    for (int i = 0; i < 5; ++i) b[i] = u(rng);
    for (int i = 0; i < 5; ++i) {
      for (int j = 0; j <= i; ++j) EXPECT_NEAR(f.L(i, j), L(i, j), 1e-14 * (1 + std::abs(L(i, j))));
      EXPECT_NEAR(f.inv_diag[i] * L(i, i), 1.0, 1e-15);
    }
    // M x = b, L y = b, L^T z = b against residuals
    const Vec<double, 5> x = f.solve(b), y = f.solve_lower(b), z = f.solve_upper(b);
    const Vec<double, 5> Mx = M * x, Ly = f.mul_lower(y);
    const Vec<double, 5> Ltz = mul_transposed(L, z);
    for (int i = 0; i < 5; ++i) {
      EXPECT_NEAR(Mx[i], b[i], 1e-12);
      EXPECT_NEAR(Ly[i], b[i], 1e-13);
      EXPECT_NEAR(Ltz[i], b[i], 1e-13);
    }
  }
  // same rejections as cholesky(): singular, indefinite, zero, non-finite
  CholeskyFactor<double, 2> f;
  Mat<double, 2, 2> S = Mat<double, 2, 2>::zero();
  EXPECT_FALSE(cholesky_factor(S, f));
  S(0, 0) = 1.0; S(0, 1) = 1.0; S(1, 0) = 1.0; S(1, 1) = 1.0;
  EXPECT_FALSE(cholesky_factor(S, f));
  S(1, 1) = 0.5;
  EXPECT_FALSE(cholesky_factor(S, f));
  S(1, 1) = NAN;
  EXPECT_FALSE(cholesky_factor(S, f));
}

// Two constraints whose rows close in on each other (angle eps in the M^-1
// metric shrinks): the Cholesky path while the relative pivot exceeds
// gram_rtol, the pseudoinverse below, both accurate to the conditioning of K
// against the long-double saddle-point solution, and the switch exactly at
// the documented threshold.
TEST(GramSolve, NearlyDependentRowsBothSidesOfTheThreshold) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  int fast = 0, fallback = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const Mat<double, 4, 4> M = random_spd<4>(rng);
    Vec<double, 4> F, a1, w;
    for (int i = 0; i < 4; ++i) {
      F[i] = u(rng);
      a1[i] = u(rng);
      w[i] = u(rng);
    }
    Vec<double, 2> b{{u(rng), u(rng)}};
    for (double eps : {1e-1, 1e-2, 1e-3, 3e-4, 1e-4, 3e-5, 1e-5, 1e-6}) {
      Mat<double, 2, 4> A;
      for (int j = 0; j < 4; ++j) {
        A(0, j) = a1[j];
        A(1, j) = a1[j] + eps * w[j];
      }
      const double ratio = gram_pivot_ratio(M, A);
      const auto r = udwadia_kalaba(M, F, A, b, Vec<double, 4>::zero());
      const auto r_chol = udwadia_kalaba(M, F, A, b, Vec<double, 4>::zero(), with_gram_rtol(0.0));
      const auto r_pinv = udwadia_kalaba(M, F, A, b, Vec<double, 4>::zero(), with_gram_rtol(1.0));
      ASSERT_EQ(r.status, Status::ok);
      ASSERT_EQ(r_pinv.status, Status::ok);
      EXPECT_EQ(r_pinv.rank, 2);
      // which path: bitwise one of the two forced ones, chosen by the threshold
      // (a margin of 10 % around it, where the two pivot computations' rounding
      // could differ)
      if (ratio > 1.1 * kDefaultGramRtol) {
        EXPECT_TRUE(same_bits(r.qdd, r_chol.qdd)) << "eps " << eps << " ratio " << ratio;
        ++fast;
      } else if (ratio < 0.9 * kDefaultGramRtol) {
        EXPECT_TRUE(same_bits(r.qdd, r_pinv.qdd)) << "eps " << eps << " ratio " << ratio;
        ++fallback;
      }
      // accuracy against the long-double saddle point, relative to the
      // conditioning of K (the pseudoinverse loses ~sqrt(cond K) eps, the
      // Cholesky solve ~cond K eps)
      VecLD qref, lref;
      kkt_reference(M, F, A, b, qref, lref);
      const double cond = static_cast<double>(gram_condition(M, A));
      const double tol_qdd = 1e-14 * cond * (1.0 + static_cast<double>(qref.cwiseAbs().maxCoeff()));
      const double tol_lam = 1e-14 * cond * (1.0 + static_cast<double>(lref.cwiseAbs().maxCoeff()));
      for (int i = 0; i < 4; ++i) EXPECT_NEAR(r.qdd[i], static_cast<double>(qref(i)), tol_qdd);
      for (int l = 0; l < 2; ++l)
        EXPECT_NEAR(r.multiplier[l], static_cast<double>(lref(l)), tol_lam);
      // the Cholesky path (where taken) and the pseudoinverse agree to the same bound
      if (ratio > 1.1 * kDefaultGramRtol) {
        for (int i = 0; i < 4; ++i) EXPECT_NEAR(r.qdd[i], r_pinv.qdd[i], tol_qdd);
      }
    }
  }
  // the sweep crosses the threshold
  EXPECT_GT(fast, 40);
  EXPECT_GT(fallback, 10);
}

// M random symmetric positive definite, then F and a constraint row a with
// F[i], a[i] drawn in turn from u
struct MassForceRow {
  Mat<double, 3, 3> M;
  Vec<double, 3> F, a;
};
MassForceRow draw_mass_force_row(std::mt19937_64& rng, std::uniform_real_distribution<double>& u) {
  MassForceRow d{random_spd<3>(rng), {}, {}};
  for (int i = 0; i < 3; ++i) {
    d.F[i] = u(rng);
    d.a[i] = u(rng);
  }
  return d;
}

// A duplicated constraint row: K is singular, the pseudoinverse answers.
// Moore–Penrose, derived by hand: qdd is that of the single constraint, and
// the minimum-norm multipliers split the single multiplier equally.
TEST(GramSolve, RedundantRowGivesMoorePenrose) {
  std::mt19937_64 rng(13);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int trial = 0; trial < 50; ++trial) {
    const auto [M, F, a] = draw_mass_force_row(rng, u);
    const double beta = u(rng);
    Mat<double, 1, 3> A1;
    Mat<double, 2, 3> A2;
    for (int j = 0; j < 3; ++j) A1(0, j) = A2(0, j) = A2(1, j) = a[j];
    VecLD qref, lref;
    kkt_reference(M, F, A1, Vec<double, 1>{{beta}}, qref, lref);
    const auto r = udwadia_kalaba(M, F, A2, Vec<double, 2>{{beta, beta}}, Vec<double, 3>::zero());
    ASSERT_EQ(r.status, Status::ok);
    EXPECT_EQ(r.rank, 1);
    const double s = 1.0 + static_cast<double>(qref.cwiseAbs().maxCoeff());
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(r.qdd[i], static_cast<double>(qref(i)), 1e-12 * s);
    const double lam = static_cast<double>(lref(0));
    EXPECT_NEAR(r.multiplier[0], 0.5 * lam, 1e-12 * (1.0 + std::abs(lam)));
    EXPECT_NEAR(r.multiplier[1], 0.5 * lam, 1e-12 * (1.0 + std::abs(lam)));
    // Q_i = A^T lambda = M qdd - F
    const Vec<double, 3> Mq = M * r.qdd;
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(r.force_ideal[i], Mq[i] - F[i], 1e-12 * s);
  }
}

// Vanishing constraint (Appell's A = 0 at rest): K = 0, no constraint force,
// qdd = M^-1 F; and a tiny but nonzero row is still enforced (no absolute cut
// in the rank test; the pseudoinverse handles it).
TEST(GramSolve, VanishingAndTinyRows) {
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int trial = 0; trial < 50; ++trial) {
    const auto [M, F, a] = draw_mass_force_row(rng, u);
    Mat<double, 1, 3> A0 = Mat<double, 1, 3>::zero();
    const auto r0 = udwadia_kalaba(M, F, A0, Vec<double, 1>{{0.0}}, Vec<double, 3>::zero());
    ASSERT_EQ(r0.status, Status::ok);
    EXPECT_EQ(r0.rank, 0);
    const Vec<double, 3> Mq = M * r0.qdd;
    for (int i = 0; i < 3; ++i) {
      EXPECT_NEAR(Mq[i], F[i], 1e-13);
      EXPECT_EQ(r0.force_ideal[i], 0.0);
    }
    EXPECT_EQ(r0.multiplier[0], 0.0);
    // a row of size 1e-150 (K ~ 1e-300): enforced, A qdd = 0
    Mat<double, 1, 3> At;
    for (int j = 0; j < 3; ++j) At(0, j) = 1e-150 * a[j];
    const auto rt = udwadia_kalaba(M, F, At, Vec<double, 1>{{0.0}}, Vec<double, 3>::zero());
    ASSERT_EQ(rt.status, Status::ok);
    EXPECT_EQ(rt.rank, 1);
    // K ~ 1e-300 is below the Gram path's floor (its products have lost
    // digits to underflow): the pseudoinverse answers, bit for bit
    const auto rt_pinv = udwadia_kalaba(M, F, At, Vec<double, 1>{{0.0}}, Vec<double, 3>::zero(),
                                        with_gram_rtol(1.0));
    EXPECT_TRUE(same_bits(rt.qdd, rt_pinv.qdd));
    Mat<double, 1, 3> A1;
    for (int j = 0; j < 3; ++j) A1(0, j) = a[j];
    VecLD qref, lref;
    kkt_reference(M, F, A1, Vec<double, 1>{{0.0}}, qref, lref);
    for (int i = 0; i < 3; ++i)
      EXPECT_NEAR(rt.qdd[i], static_cast<double>(qref(i)),
                  1e-12 * (1.0 + static_cast<double>(qref.cwiseAbs().maxCoeff())));
  }
}

// Nonideal C: the Cholesky path's Q_ni^c = C - A^T K^-1 A M^-1 C and the
// pseudoinverse's L (c - W^+ W c) agree, and both satisfy
// M qdd = F + Q_i^c + Q_ni^c with A qdd = b and A M^-1 Q_ni^c = 0.
TEST(GramSolve, NonidealForcesAgreeBetweenPaths) {
  std::mt19937_64 rng(19);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int trial = 0; trial < 50; ++trial) {
    const Mat<double, 4, 4> M = random_spd<4>(rng);
    Vec<double, 4> F, C;
    Mat<double, 2, 4> A;
    for (int i = 0; i < 4; ++i) {
      F[i] = u(rng);
      C[i] = u(rng);
      A(0, i) = u(rng);
      A(1, i) = u(rng);
    }
    const Vec<double, 2> b{{u(rng), u(rng)}};
    const auto rc = udwadia_kalaba(M, F, A, b, C);
    const auto rp = udwadia_kalaba(M, F, A, b, C, with_gram_rtol(1.0));
    ASSERT_EQ(rc.status, Status::ok);
    ASSERT_EQ(rp.status, Status::ok);
    const double tol = 1e-11 * gram_condition(M, A);
    for (int i = 0; i < 4; ++i) {
      EXPECT_NEAR(rc.qdd[i], rp.qdd[i], tol);
      EXPECT_NEAR(rc.force_ideal[i], rp.force_ideal[i], tol);
      EXPECT_NEAR(rc.force_nonideal[i], rp.force_nonideal[i], tol);
    }
    for (int l = 0; l < 2; ++l) EXPECT_NEAR(rc.multiplier[l], rp.multiplier[l], tol);
    const Vec<double, 4> Mq = M * rc.qdd;
    const Vec<double, 2> Aq = A * rc.qdd;
    for (int i = 0; i < 4; ++i)
      EXPECT_NEAR(Mq[i], F[i] + rc.force_ideal[i] + rc.force_nonideal[i], tol);
    for (int l = 0; l < 2; ++l) EXPECT_NEAR(Aq[l], b[l], tol);
    // Q_ni^c does no work against the constraints: A M^-1 Q_ni^c = 0
    CholeskyFactor<double, 4> f;
    ASSERT_TRUE(cholesky_factor(M, f));
    const Vec<double, 2> AMQ = A * f.solve(rc.force_nonideal);
    for (int l = 0; l < 2; ++l) EXPECT_NEAR(AMQ[l], 0.0, tol);
  }
}

// qdd-only and ideal-only instantiations give the same qdd bits as the full one.
TEST(GramSolve, QddOnlyInstantiationsMatchFull) {
  std::mt19937_64 rng(23);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int trial = 0; trial < 20; ++trial) {
    const Mat<double, 4, 4> M = random_spd<4>(rng);
    Vec<double, 4> F;
    Mat<double, 2, 4> A;
    for (int i = 0; i < 4; ++i) {
      F[i] = u(rng);
      A(0, i) = u(rng);
      A(1, i) = trial % 2 ? A(0, i) : u(rng);  // odd trials: redundant (fallback)
    }
    const Vec<double, 2> b{{u(rng), trial % 2 ? 0.0 : u(rng)}};
    const auto full = udwadia_kalaba(M, F, A, b, Vec<double, 4>::zero());
    const auto lean = udwadia_kalaba<false, false>(M, F, A, b, Vec<double, 4>::zero());
    EXPECT_TRUE(same_bits(full.qdd, lean.qdd));
    EXPECT_EQ(full.rank, lean.rank);
    EXPECT_EQ(full.status, lean.status);
  }
}

// Null space by Householder QR (the null-space formulation's fast path)
// against the Jacobi SVD: the same A^+ and the same projector onto null(A)
// (the bases may differ by a rotation within it), orthonormal columns, and
// refusal (false) for redundant, vanishing and nearly dependent rows.
TEST(NullSpaceQr, MatchesSvdAndRefusesRankDeficiency) {
  std::mt19937_64 rng(29);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int trial = 0; trial < 100; ++trial) {
    Mat<double, 2, 5> A;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 5; ++j) A(i, j) = u(rng);
    NullSpace<double, 2, 5> qr;
    ASSERT_TRUE(null_space_qr(A, 1e-4, qr));
    const auto sv = null_space(A);
    ASSERT_EQ(sv.dim, 3);
    EXPECT_EQ(qr.dim, 3);
    EXPECT_EQ(qr.rank, 2);
    for (int i = 0; i < 5; ++i)
      for (int l = 0; l < 2; ++l) EXPECT_NEAR(qr.pinv(i, l), sv.pinv(i, l), 1e-12);
    // projectors S S^T, and S^T S = I, A S = 0
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 5; ++j) {
        double pq = 0.0, ps = 0.0;
        for (int k = 0; k < 3; ++k) {
          pq += qr.basis(i, k) * qr.basis(j, k);
          ps += sv.basis(i, k) * sv.basis(j, k);
        }
        EXPECT_NEAR(pq, ps, 1e-12);
      }
    for (int a = 0; a < 3; ++a) {
      for (int b = 0; b < 3; ++b) {
        double d = 0.0;
        for (int i = 0; i < 5; ++i) d += qr.basis(i, a) * qr.basis(i, b);
        EXPECT_NEAR(d, a == b ? 1.0 : 0.0, 1e-14);
      }
      for (int l = 0; l < 2; ++l) {
        double d = 0.0;
        for (int i = 0; i < 5; ++i) d += A(l, i) * qr.basis(i, a);
        EXPECT_NEAR(d, 0.0, 1e-13);
      }
    }
    // rank-deficient: a duplicated row, a zero row, a row within 1e-6 of the other
    NullSpace<double, 2, 5> tmp;
    Mat<double, 2, 5> D = A, Z = A, N = A;
    for (int j = 0; j < 5; ++j) {
      D(1, j) = A(0, j);
      Z(1, j) = 0.0;
      N(1, j) = A(0, j) + 1e-6 * A(1, j);
    }
    EXPECT_FALSE(null_space_qr(D, 1e-4, tmp));
    EXPECT_FALSE(null_space_qr(Z, 1e-4, tmp));
    EXPECT_FALSE(null_space_qr(N, 1e-4, tmp));
  }
}

}  // namespace
