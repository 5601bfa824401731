// Tests of kernels/cholesky.hpp: M = L L^T on random SPD matrices of several
// sizes and conditionings, the triangular solves against Eigen, and the
// rejection (false, never NaN) of matrices that are not numerically positive
// definite. Residuals are evaluated in long double so that they measure the
// kernel, not the check; norms are Frobenius norms.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

#include "kernels/cholesky.hpp"

// GCC 12 at -O3 sees Eigen's packet (2-double) load in the triangular solve
// of a dynamic-size vector that holds one double (N = 1) and warns, though
// Eigen takes that path only for two or more: a known false positive.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Warray-bounds"
#endif

using namespace nholo;

namespace {

// The reference side in Eigen's dynamic-size types, whatever N: one set of
// Eigen's templates for every size (fixed-size ones, instantiated per size
// and in long double, made this file take minutes to compile).
template <int N>
using EMat = Eigen::MatrixXd;
template <int N>
using EMatLd = Eigen::Matrix<long double, Eigen::Dynamic, Eigen::Dynamic>;
template <int N>
using EVecLd = Eigen::Matrix<long double, Eigen::Dynamic, 1>;

template <class S, int N>
Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic> to_eigen(const Mat<double, N, N>& a) {
  Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic> e(N, N);
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) e(i, j) = static_cast<S>(a(i, j));
  return e;
}
template <class S, int N>
Eigen::Matrix<S, Eigen::Dynamic, 1> to_eigen(const Vec<double, N>& v) {
  Eigen::Matrix<S, Eigen::Dynamic, 1> e(N);
  for (int i = 0; i < N; ++i) e(i) = static_cast<S>(v[i]);
  return e;
}
template <int N>
Mat<double, N, N> from_eigen(const EMat<N>& e) {
  Mat<double, N, N> a;
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) a(i, j) = e(i, j);
  return a;
}

struct Worst {
  double factor = 0, vs_eigen_L = 0, solve_residual = 0, solve_vs_eigen = 0, lower_residual = 0,
         lower_vs_eigen = 0, upper_residual = 0, upper_vs_eigen = 0;
  double max_kappa = 0;
};
Worst g_worst;
void keep_max(double& w, double v) { w = v > w ? v : w; }

// Random SPD M = Q diag(lambda) Q^T, lambda = s 10^[-e, 0], Q orthogonal
// (Householder QR of a Gaussian matrix), s = 10^[-6, 6]; kappa <= 10^e.
template <int N>
EMat<N> random_spd(std::mt19937_64& rng, double max_log_kappa) {
  std::normal_distribution<double> g(0.0, 1.0);
  std::uniform_real_distribution<double> e(-max_log_kappa, 0.0), s(-6.0, 6.0);
  EMat<N> G(N, N);
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) G(i, j) = g(rng);
  const EMat<N> Q = Eigen::HouseholderQR<EMat<N>>(G).householderQ();
  Eigen::VectorXd lambda(N);
  const double scale = std::pow(10.0, s(rng));
  for (int i = 0; i < N; ++i) lambda(i) = scale * std::pow(10.0, e(rng));
  EMat<N> M = Q * lambda.asDiagonal() * Q.transpose();
  return 0.5 * (M + M.transpose());  // exactly symmetric
}

template <int N>
void check_random_spd(int count, unsigned long long seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0.0, 1.0);
  for (int t = 0; t < count; ++t) {
    SCOPED_TRACE(::testing::Message() << N << "x" << N << " trial " << t);
    const double log_kappa = (t % 3 == 0) ? 1.0 : (t % 3 == 1) ? 4.0 : 8.0;
    const EMat<N> Me = random_spd<N>(rng, log_kappa);
    const Mat<double, N, N> M = from_eigen<N>(Me);
    Mat<double, N, N> L;
    ASSERT_TRUE(cholesky(M, L));
    // L lower triangular with a positive diagonal
    for (int i = 0; i < N; ++i) {
      EXPECT_GT(L(i, i), 0.0);
      for (int j = i + 1; j < N; ++j) EXPECT_EQ(L(i, j), 0.0);
    }
    const EMatLd<N> m = to_eigen<long double>(M), l = to_eigen<long double>(L);
    const long double nm = m.norm();
    // L L^T = M
    const double fe = static_cast<double>((l * l.transpose() - m).norm() / nm);
    EXPECT_LE(fe, 1e-13);
    keep_max(g_worst.factor, fe);
    // against Eigen's LLT: L has forward error ~ kappa eps
    const Eigen::LLT<EMat<N>> llt(Me);
    ASSERT_EQ(llt.info(), Eigen::Success);
    const EMat<N> Le = llt.matrixL();
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(Eigen::MatrixXd(Me), Eigen::EigenvaluesOnly);
    const double kappa = eig.eigenvalues()(N - 1) / eig.eigenvalues()(0);
    keep_max(g_worst.max_kappa, kappa);
    const double dl = (to_eigen<double>(L) - Le).norm() / Le.norm();
    EXPECT_LE(dl, 1e-15 * (kappa > 10.0 ? kappa : 10.0));
    keep_max(g_worst.vs_eigen_L, dl / kappa);

    Vec<double, N> b;
    for (int i = 0; i < N; ++i) b[i] = g(rng);
    const EVecLd<N> bl = to_eigen<long double>(b);
    // M x = b: backward stable (small residual), forward error ~ kappa eps
    const Vec<double, N> x = cholesky_solve(L, b);
    const EVecLd<N> xl = to_eigen<long double>(x);
    const double rs = static_cast<double>((m * xl - bl).norm() / (nm * xl.norm()));
    EXPECT_LE(rs, 1e-14);
    keep_max(g_worst.solve_residual, rs);
    const Eigen::VectorXd xe = llt.solve(to_eigen<double>(b));
    const double dx = (to_eigen<double>(x) - xe).norm() / xe.norm();
    EXPECT_LE(dx, 1e-15 * (kappa > 10.0 ? kappa : 10.0));
    keep_max(g_worst.solve_vs_eigen, dx / kappa);
    // L y = b
    const Vec<double, N> y = solve_lower(L, b);
    const EVecLd<N> yl = to_eigen<long double>(y);
    const double ry = static_cast<double>((l * yl - bl).norm() / (l.norm() * yl.norm()));
    EXPECT_LE(ry, 1e-15);
    keep_max(g_worst.lower_residual, ry);
    const Eigen::VectorXd ye = to_eigen<double>(L).template triangularView<Eigen::Lower>().solve(
        to_eigen<double>(b));
    const double dy = (to_eigen<double>(y) - ye).norm() / ye.norm();
    EXPECT_LE(dy, 1e-15 * (kappa > 10.0 ? kappa : 10.0));
    keep_max(g_worst.lower_vs_eigen, dy);
    // L^T z = b
    const Vec<double, N> z = solve_lower_transposed(L, b);
    const EVecLd<N> zl = to_eigen<long double>(z);
    const double rz = static_cast<double>((l.transpose() * zl - bl).norm() / (l.norm() * zl.norm()));
    EXPECT_LE(rz, 1e-15);
    keep_max(g_worst.upper_residual, rz);
    const Eigen::VectorXd ze =
        to_eigen<double>(L).transpose().template triangularView<Eigen::Upper>().solve(to_eigen<double>(b));
    const double dz = (to_eigen<double>(z) - ze).norm() / ze.norm();
    EXPECT_LE(dz, 1e-15 * (kappa > 10.0 ? kappa : 10.0));
    keep_max(g_worst.upper_vs_eigen, dz);
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(Cholesky, RandomSpd) {
  check_random_spd<1>(300, 1);
  check_random_spd<2>(600, 2);
  check_random_spd<3>(600, 3);
  check_random_spd<4>(600, 4);
  check_random_spd<6>(600, 6);
  check_random_spd<8>(600, 8);
  check_random_spd<12>(300, 12);
  check_random_spd<16>(300, 16);
}

// By hand: M = [[4, 2, -2], [2, 10, 2], [-2, 2, 5]] = L L^T with
// L = [[2, 0, 0], [1, 3, 0], [-1, 1, sqrt(3)]]; M x = b for x = (1, -1, 2).
TEST(Cholesky, HandExample) {
  Mat<double, 3, 3> M = Mat<double, 3, 3>::zero();
  const double m[9] = {4, 2, -2, 2, 10, 2, -2, 2, 5};
  for (int i = 0; i < 9; ++i) M.a[i] = m[i];
  Mat<double, 3, 3> L;
  ASSERT_TRUE(cholesky(M, L));
  const double l[9] = {2, 0, 0, 1, 3, 0, -1, 1, std::sqrt(3.0)};
  for (int i = 0; i < 9; ++i) EXPECT_DOUBLE_EQ(L.a[i], l[i]) << i;
  const Vec<double, 3> xs{{1.0, -1.0, 2.0}};
  const Vec<double, 3> b = M * xs;  // (-2, -4, 6)
  const Vec<double, 3> x = cholesky_solve(L, b);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(x[i], xs[i], 1e-15);
  // L y = b by forward substitution: y = (-1, -1, (6 - 1 + 1) / sqrt(3))
  const Vec<double, 3> y = solve_lower(L, b);
  EXPECT_DOUBLE_EQ(y[0], -1.0);
  EXPECT_DOUBLE_EQ(y[1], -1.0);
  EXPECT_DOUBLE_EQ(y[2], 6.0 / std::sqrt(3.0));
  const Vec<double, 3> w = solve_lower_transposed(L, y);  // L^T w = y: w = x
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(w[i], xs[i], 1e-15);
}

// ---- rejection: false, and (for finite input) L without NaN or Inf

template <int N>
void expect_rejected(const Mat<double, N, N>& M, const char* what, bool finite_input = true) {
  SCOPED_TRACE(what);
  Mat<double, N, N> L;
  EXPECT_FALSE(cholesky(M, L));
  if (finite_input) {
    for (double v : L.a) EXPECT_TRUE(std::isfinite(v));
  }
  // the right-hand side's factors apply the same test
  CholeskyFactor<double, N> cf;
  EXPECT_FALSE(cholesky_factor(M, cf));
  LdltFactor<double, N> lf;
  EXPECT_FALSE(ldlt_factor(M, lf));
}

TEST(Cholesky, RejectsZero) {
  expect_rejected(Mat<double, 1, 1>::zero(), "1x1 zero");
  expect_rejected(Mat<double, 4, 4>::zero(), "4x4 zero");
  expect_rejected(Mat<double, 16, 16>::zero(), "16x16 zero");
}

TEST(Cholesky, RejectsSingular) {
  // [[1, 1], [1, 1]]
  Mat<double, 2, 2> J = Mat<double, 2, 2>::zero();
  for (double& v : J.a) v = 1.0;
  expect_rejected(J, "ones 2x2");
  std::mt19937_64 rng(21);
  std::normal_distribution<double> g(0.0, 1.0);
  std::uniform_int_distribution<int> pick(0, 7);
  for (int t = 0; t < 500; ++t) {
    // rank one u u^T
    Mat<double, 6, 6> R1;
    double u[6];
    for (double& v : u) v = g(rng);
    for (int i = 0; i < 6; ++i)
      for (int j = 0; j < 6; ++j) R1(i, j) = u[i] * u[j];
    expect_rejected(R1, "rank one");
    // B B^T with two equal rows of B (M has two equal rows and columns)
    Mat<double, 8, 8> B;
    for (double& v : B.a) v = g(rng);
    const int i0 = pick(rng);
    int i1 = pick(rng);
    if (i1 == i0) i1 = (i0 + 1) % 8;
    for (int j = 0; j < 8; ++j) B(i1, j) = B(i0, j);
    expect_rejected(B * transpose(B), "duplicated row");
    // SPD with a zero row and column
    EMat<5> S = random_spd<5>(rng, 2.0);
    const int k = pick(rng) % 5;
    S.row(k).setZero();
    S.col(k).setZero();
    expect_rejected(from_eigen<5>(S), "zero row and column");
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(Cholesky, RejectsIndefiniteAndNegative) {
  Mat<double, 2, 2> D = Mat<double, 2, 2>::identity();
  D(1, 1) = -1.0;
  expect_rejected(D, "diag(1, -1)");
  D(0, 0) = -1.0;
  expect_rejected(D, "-I");
  Mat<double, 2, 2> H = Mat<double, 2, 2>::zero();  // [[1, 2], [2, 1]]: eigenvalues 3, -1
  H(0, 0) = H(1, 1) = 1.0;
  H(0, 1) = H(1, 0) = 2.0;
  expect_rejected(H, "[[1,2],[2,1]]");
  std::mt19937_64 rng(22);
  std::uniform_real_distribution<double> e(0.0, 2.0);
  for (int t = 0; t < 500; ++t) {
    // Q diag(lambda) Q^T with one negative eigenvalue of any size
    std::normal_distribution<double> g(0.0, 1.0);
    EMat<6> G(6, 6);
    for (int i = 0; i < 6; ++i)
      for (int j = 0; j < 6; ++j) G(i, j) = g(rng);
    const EMat<6> Q = Eigen::HouseholderQR<EMat<6>>(G).householderQ();
    Eigen::VectorXd lambda(6);
    for (int i = 0; i < 6; ++i) lambda(i) = std::pow(10.0, e(rng));
    lambda(t % 6) = -std::pow(10.0, -std::uniform_real_distribution<double>(0.0, 6.0)(rng));
    EMat<6> M = Q * lambda.asDiagonal() * Q.transpose();
    M = 0.5 * (M + M.transpose());
    expect_rejected(from_eigen<6>(M), "one negative eigenvalue");
    expect_rejected(from_eigen<6>(-M), "negated: five negative eigenvalues");
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(Cholesky, RejectsNonFinite) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  std::mt19937_64 rng(23);
  const Mat<double, 4, 4> M = from_eigen<4>(random_spd<4>(rng, 2.0));
  for (double bad : {nan, inf, -inf}) {
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j <= i; ++j) {
        Mat<double, 4, 4> A = M;
        A(i, j) = A(j, i) = bad;  // symmetric placement
        char what[64];
        std::snprintf(what, sizeof what, "%g at (%d, %d)", bad, i, j);
        expect_rejected(A, what, false);
      }
  }
  Mat<double, 4, 4> A = M;  // NaN everywhere
  for (double& v : A.a) v = nan;
  expect_rejected(A, "all NaN", false);
}

// A pivot at or below rtol * max diag counts as zero.
TEST(Cholesky, PivotThreshold) {
  Mat<double, 3, 3> M = Mat<double, 3, 3>::zero();
  M(0, 0) = 2.0;
  M(1, 1) = 1.0;
  M(2, 2) = 1e-10;  // pivot 1e-10 = 5e-11 * max diag
  Mat<double, 3, 3> L;
  EXPECT_TRUE(cholesky(M, L));
  EXPECT_DOUBLE_EQ(L(2, 2), 1e-5);
  EXPECT_TRUE(cholesky(M, L, 1e-11));
  EXPECT_FALSE(cholesky(M, L, 1e-10));
  M(2, 2) = 1e-15;  // below the default 1e-12 * 2
  EXPECT_FALSE(cholesky(M, L));
  // scale invariance: the threshold is relative
  M(2, 2) = 1e-10;
  EXPECT_TRUE(cholesky(Mat<double, 3, 3>(1e-200 * M), L));
  EXPECT_TRUE(cholesky(Mat<double, 3, 3>(1e200 * M), L));
}

TEST(Cholesky, EmptyMatrix) {
  const Mat<double, 0, 0> M = Mat<double, 0, 0>::zero();
  Mat<double, 0, 0> L;
  EXPECT_TRUE(cholesky(M, L));
  const Vec<double, 0> x = cholesky_solve(L, Vec<double, 0>::zero());
  (void)x;
}

TEST(Cholesky, FloatInstantiation) {
  Mat<float, 3, 3> M = Mat<float, 3, 3>::zero();
  const float m[9] = {4, 2, -2, 2, 10, 2, -2, 2, 5};
  for (int i = 0; i < 9; ++i) M.a[i] = m[i];
  Mat<float, 3, 3> L;
  ASSERT_TRUE(cholesky(M, L, 1e-6f));
  EXPECT_NEAR(L(2, 2), std::sqrt(3.0f), 1e-6f);
  const Vec<float, 3> x = cholesky_solve(L, Vec<float, 3>{{-2.0f, -4.0f, 6.0f}});
  EXPECT_NEAR(x[0], 1.0f, 1e-6f);
  EXPECT_NEAR(x[1], -1.0f, 1e-6f);
  EXPECT_NEAR(x[2], 2.0f, 1e-6f);
}

// Regression: without pivoting, an exactly singular matrix whose null vector
// has a small last component leaves a last pivot of rounding size divided by
// that component squared. This 4x4 integer PSD matrix (B B^T, B 4x3; null
// vector (-4, 7, 6, 1)) ends with L(3,3)^2 = 5.4e-14, which passed the former
// default threshold 1e-14 * max diag; the default is now 1e-12 * max diag (M
// with condition number above ~1e12 counts as singular and goes to the
// singular-mass form).
TEST(Cholesky, RejectsSingularWithSmallLastNullComponent) {
  Mat<double, 4, 4> M = Mat<double, 4, 4>::zero();
  const double m[16] = {5, 1, 2, 1, 1, 3, -3, 1, 2, -3, 5, -1, 1, 1, -1, 3};
  for (int i = 0; i < 16; ++i) M.a[i] = m[i];
  expect_rejected(M, "exactly singular 4x4");
}

// ---- LDL^T (the Gram matrices of the fundamental equation)

// By hand: the matrix of Cholesky.HandExample, L_chol = L_unit diag(2, 3,
// sqrt(3)): D = (4, 9, 3), L_unit = [[1], [1/2, 1], [-1/2, 1/3, 1]].
TEST(Ldlt, HandExample) {
  Mat<double, 3, 3> M = Mat<double, 3, 3>::zero();
  const double m[9] = {4, 2, -2, 2, 10, 2, -2, 2, 5};
  for (int i = 0; i < 9; ++i) M.a[i] = m[i];
  LdltFactor<double, 3> f;
  ASSERT_TRUE(ldlt_factor(M, f));
  EXPECT_DOUBLE_EQ(f.inv_d[0], 1.0 / 4.0);
  EXPECT_DOUBLE_EQ(f.inv_d[1], 1.0 / 9.0);
  EXPECT_DOUBLE_EQ(f.inv_d[2], 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(f.L(1, 0), 0.5);
  EXPECT_DOUBLE_EQ(f.L(2, 0), -0.5);
  EXPECT_DOUBLE_EQ(f.L(2, 1), 1.0 / 3.0);
  const Vec<double, 3> x = f.solve(Vec<double, 3>{{-2.0, -4.0, 6.0}});  // M (1, -1, 2)
  EXPECT_NEAR(x[0], 1.0, 1e-15);
  EXPECT_NEAR(x[1], -1.0, 1e-15);
  EXPECT_NEAR(x[2], 2.0, 1e-15);
}

// Random SPD up to kappa 1e8: the pivots are the Cholesky factor's squared
// diagonal, the solve is backward stable (residual against long double) and
// agrees with the Cholesky solve to ~kappa eps.
template <int N>
void check_ldlt_random(int count, unsigned long long seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0.0, 1.0);
  for (int t = 0; t < count; ++t) {
    SCOPED_TRACE(::testing::Message() << N << "x" << N << " trial " << t);
    const double log_kappa = (t % 3 == 0) ? 1.0 : (t % 3 == 1) ? 4.0 : 8.0;
    const Mat<double, N, N> M = from_eigen<N>(random_spd<N>(rng, log_kappa));
    LdltFactor<double, N> f;
    CholeskyFactor<double, N> c;
    ASSERT_TRUE(ldlt_factor(M, f));
    ASSERT_TRUE(cholesky_factor(M, c));
    for (int j = 0; j < N; ++j) {
      // D_jj = L_jj^2 to rounding
      EXPECT_NEAR(f.inv_d[j] * c.L(j, j) * c.L(j, j), 1.0, 1e-13 * std::pow(10.0, log_kappa));
    }
    Vec<double, N> b;
    for (int i = 0; i < N; ++i) b[i] = g(rng);
    const Vec<double, N> x = f.solve(b);
    const EMatLd<N> m = to_eigen<long double>(M);
    const EVecLd<N> xl = to_eigen<long double>(x), bl = to_eigen<long double>(b);
    const double rs = static_cast<double>((m * xl - bl).norm() / (m.norm() * xl.norm()));
    EXPECT_LE(rs, 1e-14);
    const Vec<double, N> xc = c.solve(b);
    double dx = 0, nx = 0;
    for (int i = 0; i < N; ++i) {
      dx = std::fmax(dx, std::fabs(x[i] - xc[i]));
      nx = std::fmax(nx, std::fabs(xc[i]));
    }
    EXPECT_LE(dx, 1e-15 * std::pow(10.0, log_kappa) * 10.0 * nx);
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(Ldlt, RandomSpdMatchesCholesky) {
  check_ldlt_random<1>(300, 31);
  check_ldlt_random<2>(600, 32);
  check_ldlt_random<3>(600, 33);
  check_ldlt_random<4>(600, 34);
  check_ldlt_random<6>(300, 36);
}

// The rank test at its boundary: the Gram matrix of two unit rows at angle
// theta, K = [[1, c], [c, 1]], has the second pivot sin^2 theta; LDL^T and
// Cholesky accept and refuse the same matrices for pivots straddling rtol
// (the fundamental equation's gram_rtol 1e-8), scaled by 2^-600 .. 2^600.
TEST(Ldlt, SameRankDecisionAsCholeskyAtTheThreshold) {
  const double rtol = 1e-8;
  int accepted = 0, refused = 0;
  for (double rel = 0.99; rel <= 1.01; rel += 1e-4) {
    const double s2 = rtol * rel;  // sin^2 theta
    const double c = std::sqrt(1.0 - s2);
    for (double scale : {0x1p-600, 1.0, 0x1p600}) {
      Mat<double, 2, 2> K;
      K(0, 0) = K(1, 1) = scale;
      K(0, 1) = K(1, 0) = c * scale;
      LdltFactor<double, 2> f;
      CholeskyFactor<double, 2> ch;
      const bool a = ldlt_factor(K, f, rtol), b = cholesky_factor(K, ch, rtol);
      EXPECT_EQ(a, b) << "sin^2 theta = " << s2 << ", scale " << scale;
      (a ? accepted : refused)++;
    }
  }
  // both sides of the threshold were exercised
  EXPECT_GT(accepted, 100);
  EXPECT_GT(refused, 100);
  // and a diagonal pivot exactly at the threshold is refused by both
  Mat<double, 2, 2> D = Mat<double, 2, 2>::zero();
  D(0, 0) = 1.0;
  D(1, 1) = rtol;
  LdltFactor<double, 2> f;
  EXPECT_FALSE(ldlt_factor(D, f, rtol));
  D(1, 1) = 2.0 * rtol;
  EXPECT_TRUE(ldlt_factor(D, f, rtol));
  EXPECT_DOUBLE_EQ(f.inv_d[1], 0.5 / rtol);
}

// The worst errors seen, printed for the record when the whole binary runs
// (under ctest each test runs alone, and there is nothing to print). Not a
// test: each error is bounded where it is measured (factor <= 1e-13,
// residuals <= 1e-14 / 1e-15, Eigen within 1e-15 max(kappa, 10)).
class WorstErrorsReport : public ::testing::Environment {
 public:
  void TearDown() override {
    if (g_worst.max_kappa == 0) return;
    std::printf("L L^T - M (relative): %.3g\n", g_worst.factor);
    std::printf("L vs Eigen LLT, / kappa: %.3g (max kappa %.3g)\n", g_worst.vs_eigen_L,
                g_worst.max_kappa);
    std::printf("M x = b: residual %.3g, vs Eigen / kappa %.3g\n", g_worst.solve_residual,
                g_worst.solve_vs_eigen);
    std::printf("L y = b: residual %.3g, vs Eigen %.3g\n", g_worst.lower_residual,
                g_worst.lower_vs_eigen);
    std::printf("L^T z = b: residual %.3g, vs Eigen %.3g\n", g_worst.upper_residual,
                g_worst.upper_vs_eigen);
  }
};
::testing::Environment* const g_worst_report =
    ::testing::AddGlobalTestEnvironment(new WorstErrorsReport);

}  // namespace

// all_finite_branchless (the right-hand sides' status test: the sum of
// x * 0) against all_finite, element by element: every special value in
// every position, for sizes 0 to 5, double and float.
template <class T, int N>
void check_all_finite_branchless() {
  const T specials[] = {T(0),
                        -T(0),
                        T(1.5),
                        -T(3),
                        std::numeric_limits<T>::max(),
                        -std::numeric_limits<T>::max(),
                        std::numeric_limits<T>::denorm_min(),
                        std::numeric_limits<T>::infinity(),
                        -std::numeric_limits<T>::infinity(),
                        std::numeric_limits<T>::quiet_NaN()};
  Vec<T, N> u = Vec<T, N>::constant(T(2));
  EXPECT_TRUE(all_finite_branchless(u));
  for (int pos = 0; pos < N; ++pos)
    for (const T s : specials) {
      for (int other = 0; other < N; ++other) u[other] = std::numeric_limits<T>::max();
      u[pos] = s;
      EXPECT_EQ(all_finite_branchless(u), all_finite(u)) << "N " << N << " pos " << pos << " " << s;
      EXPECT_EQ(all_finite(u), std::isfinite(s));
    }
}

TEST(Linalg, AllFiniteBranchlessMatchesAllFinite) {
  check_all_finite_branchless<double, 0>();
  check_all_finite_branchless<double, 1>();
  check_all_finite_branchless<double, 2>();
  check_all_finite_branchless<double, 3>();
  check_all_finite_branchless<double, 4>();
  check_all_finite_branchless<double, 5>();
  check_all_finite_branchless<float, 3>();
  check_all_finite_branchless<float, 4>();
}

// a v and a^T v summed from the first product: the same values as the sums
// from +0 (in the same order) for finite operands, signs of exact zeros aside.
TEST(Linalg, ProductsFromFirstTerm) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int trial = 0; trial < 50; ++trial) {
    Mat<double, 3, 4> a;
    Vec<double, 4> v;
    Vec<double, 3> w;
    for (int i = 0; i < 12; ++i) a.a[i] = u(rng);
    for (int j = 0; j < 4; ++j) v[j] = u(rng);
    for (int i = 0; i < 3; ++i) w[i] = u(rng);
    const Vec<double, 3> av = a * v;
    const Vec<double, 4> atw = mul_transposed(a, w);
    for (int i = 0; i < 3; ++i) {
      double s = 0.0;
      for (int j = 0; j < 4; ++j) s += a(i, j) * v[j];
      EXPECT_EQ(av[i], s);
    }
    for (int j = 0; j < 4; ++j) {
      double s = 0.0;
      for (int i = 0; i < 3; ++i) s += a(i, j) * w[i];
      EXPECT_EQ(atw[j], s);
    }
  }
  // an all-zero column: -0 products stay -0 (from +0 they became +0)
  Mat<double, 1, 2> z = Mat<double, 1, 2>::zero();
  z(0, 0) = 1.0;
  const Vec<double, 2> r = mul_transposed(z, Vec<double, 1>{{-1.0}});
  EXPECT_EQ(r[0], -1.0);
  EXPECT_EQ(r[1], 0.0);
  EXPECT_TRUE(std::signbit(r[1]));
}
