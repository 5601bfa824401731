// Tests of kernels/pinv.hpp: the one-sided Jacobi SVD and the Moore–Penrose
// pseudoinverse built on it, against the four Penrose conditions, the rank of
// matrices built with a known rank, and Eigen's JacobiSVD as the reference.
//
// Norms are Frobenius norms. The Penrose residuals are evaluated in long
// double (so that they measure pinv, not the check) and normalised by the
// natural scale of each condition, kappa_F = |A| |P| being the Frobenius
// condition number of the nonzero part:
//   e1 = |A P A - A| / (|A| kappa_F)     e2 = |P A P - P| / (|P| kappa_F)
//   e3 = |(A P)^T - A P| / kappa_F       e4 = |(P A)^T - P A| / kappa_F
// The comparison with Eigen (JacobiSVD, same cut) is relative in the
// Frobenius norm, with a tolerance max(1e-12, c kappa_2) that grows with
// kappa_2 = sigma_max / sigma_min(nonzero), as the forward error of any stable
// method does (see check_pinv). Worst values are printed by the last test.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "kernels/pinv.hpp"

using namespace nholo;

namespace {

constexpr double kRtol = kDefaultPinvRtol;

using MatXld = Eigen::Matrix<long double, Eigen::Dynamic, Eigen::Dynamic>;

template <class T, int R, int C>
Eigen::MatrixXd to_eigen(const Mat<T, R, C>& a) {
  Eigen::MatrixXd e(R, C);
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) e(i, j) = static_cast<double>(a(i, j));
  return e;
}

template <class T, int R, int C>
MatXld to_eigen_ld(const Mat<T, R, C>& a) {
  MatXld e(R, C);
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) e(i, j) = static_cast<long double>(a(i, j));
  return e;
}

// Reference pseudoinverse from Eigen's two-sided JacobiSVD with pinv's cut:
// singular values <= rtol * sigma_max are dropped. Computed in double (the
// plain Eigen reference) and in long double (a reference whose own error is
// ~2000 times smaller, so that the comparison measures pinv alone).
template <class S>
struct Reference {
  Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic> P;
  int rank = 0;
  double kappa = 1.0;  // sigma_max / smallest kept sigma
};

template <class S>
Reference<S> reference_pinv(const Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>& A, double rtol) {
  using MatS = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;
  Eigen::JacobiSVD<MatS> svd(A, Eigen::ComputeFullU | Eigen::ComputeFullV);
  const auto& s = svd.singularValues();  // descending
  Reference<S> ref;
  ref.P = MatS::Zero(A.cols(), A.rows());
  const S smax = s.size() > 0 ? s(0) : S(0);
  for (int i = 0; i < s.size(); ++i) {
    if (!(s(i) > S(rtol) * smax) || !(s(i) > S(0))) continue;
    ++ref.rank;
    ref.kappa = static_cast<double>(smax / s(i));
    ref.P += svd.matrixV().col(i) * svd.matrixU().col(i).transpose() / s(i);
  }
  return ref;
}

// Worst values seen over all sizes, printed when the binary ends (WorstErrorsReport).
struct Worst {
  double penrose[4] = {0, 0, 0, 0};
  double penrose_plain[4] = {0, 0, 0, 0};  // e1 |A|, e2 |P|, e3, e4 without kappa_F
  double vs_eigen = 0, vs_eigen_ld = 0;    // kappa_2 <= 1e4
  double vs_eigen_over_kappa = 0, vs_eigen_ld_over_kappa = 0;  // all: err / kappa_2
  double max_kappa_compared = 0, max_kappa = 0;
  double vs_eigen_ld_k100 = 0;  // kappa_2 <= 100
  double svd_reconstruct = 0, svd_orth = 0, svd_sigma = 0, svd_us_orth = 0;
  long matrices = 0;
};
Worst g_worst;

void keep_max(double& w, double v) { w = std::max(w, v); }

// ---- generators of matrices with a known rank

enum class Kind { full, product, dependent_rows, dependent_cols, zero, count };

template <int R, int C>
struct Case {
  Mat<double, R, C> A;
  int rank;
};

// Fill rows [0, R) of `a` with r0 independent Gaussian rows and R - r0 rows
// that depend on them (copies, scaled copies, combinations, zero rows), shuffled.
template <int R, int C>
void dependent_rows(std::mt19937_64& rng, int r0, Mat<double, R, C>& a) {
  std::normal_distribution<double> g(0.0, 1.0);
  std::uniform_int_distribution<int> pick(0, r0 - 1);
  std::uniform_int_distribution<int> how(0, 3);
  std::vector<std::vector<double>> rows(R, std::vector<double>(C, 0.0));
  for (int i = 0; i < r0; ++i)
    for (int j = 0; j < C; ++j) rows[i][j] = g(rng);
  for (int i = r0; i < R; ++i) {
    const int h = how(rng);
    if (h == 0) {  // exact duplicate
      rows[i] = rows[pick(rng)];
    } else if (h == 1) {  // scaled duplicate
      const double s = g(rng);
      const int k = pick(rng);
      for (int j = 0; j < C; ++j) rows[i][j] = s * rows[k][j];
    } else if (h == 2) {  // linear combination of all independent rows
      for (int k = 0; k < r0; ++k) {
        const double s = g(rng);
        for (int j = 0; j < C; ++j) rows[i][j] += s * rows[k][j];
      }
    }  // h == 3: zero row
  }
  std::shuffle(rows.begin(), rows.end(), rng);
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) a(i, j) = rows[i][j];
}

template <int R, int C>
Case<R, C> make_case(std::mt19937_64& rng, Kind kind, bool scale_rows, bool scale_all) {
  constexpr int kMin = R < C ? R : C;
  std::normal_distribution<double> g(0.0, 1.0);
  Case<R, C> c{Mat<double, R, C>::zero(), 0};
  switch (kind) {
    case Kind::full:
    case Kind::count:
      for (double& x : c.A.a) x = g(rng);
      c.rank = kMin;
      break;
    case Kind::product: {  // (R x k)(k x C), k in [1, min(R, C)]
      const int k = std::uniform_int_distribution<int>(1, kMin)(rng);
      Mat<double, R, kMin> X = Mat<double, R, kMin>::zero();
      Mat<double, kMin, C> Y = Mat<double, kMin, C>::zero();
      for (int i = 0; i < R; ++i)
        for (int j = 0; j < k; ++j) X(i, j) = g(rng);
      for (int i = 0; i < k; ++i)
        for (int j = 0; j < C; ++j) Y(i, j) = g(rng);
      c.A = X * Y;
      c.rank = k;
      break;
    }
    case Kind::dependent_rows: {
      const int hi = R > 1 ? std::min(R - 1, C) : 1;
      c.rank = std::uniform_int_distribution<int>(1, hi)(rng);
      dependent_rows(rng, c.rank, c.A);
      break;
    }
    case Kind::dependent_cols: {
      const int hi = C > 1 ? std::min(C - 1, R) : 1;
      c.rank = std::uniform_int_distribution<int>(1, hi)(rng);
      Mat<double, C, R> t = Mat<double, C, R>::zero();
      dependent_rows(rng, c.rank, t);
      c.A = transpose(t);
      break;
    }
    case Kind::zero:
      c.rank = 0;
      break;
  }
  if (scale_rows) {  // rows scaled by 10^[-2, 2]: four orders of magnitude
    std::uniform_real_distribution<double> e(-2.0, 2.0);
    for (int i = 0; i < R; ++i) {
      const double s = std::pow(10.0, e(rng));
      for (int j = 0; j < C; ++j) c.A(i, j) *= s;
    }
  }
  if (scale_all) {  // whole matrix scaled by 10^[-8, 8]: pinv is scale-covariant
    const double s = std::pow(10.0, std::uniform_real_distribution<double>(-8.0, 8.0)(rng));
    c.A = s * c.A;
  }
  return c;
}

// ---- checks on one matrix

template <int R, int C>
void check_pinv(const Case<R, C>& c, const char* what) {
  SCOPED_TRACE(what);
  const Mat<double, R, C>& A = c.A;
  int rank = -1;
  const Mat<double, C, R> P = pinv(A, kRtol, 0.0, &rank);
  ++g_worst.matrices;

  for (double x : P.a) ASSERT_TRUE(std::isfinite(x));
  EXPECT_EQ(rank, c.rank);
  EXPECT_EQ(numerical_rank(A, kRtol), c.rank);

  const Reference<double> ref = reference_pinv<double>(to_eigen(A), kRtol);
  const Reference<long double> ref_ld = reference_pinv<long double>(to_eigen_ld(A), kRtol);
  ASSERT_EQ(ref.rank, c.rank) << "generator produced an unexpected rank";
  ASSERT_EQ(ref_ld.rank, c.rank) << "generator produced an unexpected rank";

  if (c.rank == 0) {  // zero matrix: zero pseudoinverse, exactly
    for (double x : P.a) EXPECT_EQ(x, 0.0);
    return;
  }

  // Penrose conditions in long double
  const MatXld a = to_eigen_ld(A), p = to_eigen_ld(P);
  const long double na = a.norm(), np = p.norm(), kf = na * np;
  const MatXld ap = a * p, pa = p * a;
  const double r1 = static_cast<double>((ap * a - a).norm());
  const double r2 = static_cast<double>((pa * p - p).norm());
  const double r3 = static_cast<double>((ap.transpose() - ap).norm());
  const double r4 = static_cast<double>((pa.transpose() - pa).norm());
  const double e[4] = {static_cast<double>(r1 / (na * kf)), static_cast<double>(r2 / (np * kf)),
                       static_cast<double>(r3 / kf), static_cast<double>(r4 / kf)};
  const double plain[4] = {static_cast<double>(r1 / na), static_cast<double>(r2 / np), r3, r4};
  for (int k = 0; k < 4; ++k) {
    EXPECT_LE(e[k], 1e-12) << "Penrose condition " << k + 1;
    keep_max(g_worst.penrose[k], e[k]);
    keep_max(g_worst.penrose_plain[k], plain[k]);
  }

  // Against Eigen's references. The relative forward error of any backward
  // stable pinv is ~ kappa_2 n eps, so the tolerance grows with kappa_2:
  //   long double reference: |P - P_ref| <= max(1e-12, 2e-15 kappa_2) |P_ref|
  //     (1e-12 up to kappa_2 = 500, 2e-11 at kappa_2 = 1e4)
  //   double reference (its own error adds): <= max(1e-12, 5e-15 kappa_2) |P_ref|
  const double diff = (to_eigen(P) - ref.P).norm() / ref.P.norm();
  const double diff_ld = static_cast<double>((p - ref_ld.P).norm() / ref_ld.P.norm());
  EXPECT_LE(diff_ld, std::max(1e-12, 2e-15 * ref.kappa)) << "kappa " << ref.kappa;
  EXPECT_LE(diff, std::max(1e-12, 5e-15 * ref.kappa)) << "kappa " << ref.kappa;
  keep_max(g_worst.vs_eigen_over_kappa, diff / ref.kappa);
  keep_max(g_worst.vs_eigen_ld_over_kappa, diff_ld / ref.kappa);
  if (ref.kappa <= 1e4) {
    keep_max(g_worst.vs_eigen, diff);
    keep_max(g_worst.vs_eigen_ld, diff_ld);
    keep_max(g_worst.max_kappa_compared, ref.kappa);
  }
  if (ref.kappa <= 1e2) keep_max(g_worst.vs_eigen_ld_k100, diff_ld);
  keep_max(g_worst.max_kappa, ref.kappa);
}

template <int R, int C>
void run_size(int count, unsigned long long seed) {
  std::mt19937_64 rng(seed);
  const int kinds = static_cast<int>(Kind::count);
  for (int t = 0; t < count; ++t) {
    const Kind kind = static_cast<Kind>(t % kinds);
    const bool scale_rows = (t / kinds) % 2 == 1;
    const bool scale_all = (t / kinds) % 3 == 2;
    const Case<R, C> c = make_case<R, C>(rng, kind, scale_rows, scale_all);
    char what[96];
    std::snprintf(what, sizeof what, "%dx%d trial %d kind %d scale_rows %d scale_all %d", R, C, t,
                  static_cast<int>(kind), scale_rows, scale_all);
    check_pinv(c, what);
    if (::testing::Test::HasFailure()) return;  // one reported matrix is enough
  }
}

// 10^4 matrices in total over the sizes below.
TEST(Pinv, PenroseRankAndEigen_1x1) { run_size<1, 1>(500, 11); }
TEST(Pinv, PenroseRankAndEigen_2x4) { run_size<2, 4>(1000, 12); }
TEST(Pinv, PenroseRankAndEigen_4x2) { run_size<4, 2>(1000, 13); }
TEST(Pinv, PenroseRankAndEigen_3x3) { run_size<3, 3>(1000, 14); }
TEST(Pinv, PenroseRankAndEigen_6x6) { run_size<6, 6>(1000, 15); }
TEST(Pinv, PenroseRankAndEigen_8x16) { run_size<8, 16>(1500, 16); }
TEST(Pinv, PenroseRankAndEigen_16x8) { run_size<16, 8>(1500, 17); }
TEST(Pinv, PenroseRankAndEigen_2x8) { run_size<2, 8>(1000, 18); }
TEST(Pinv, PenroseRankAndEigen_8x2) { run_size<8, 2>(500, 19); }
TEST(Pinv, PenroseRankAndEigen_5x7) { run_size<5, 7>(1000, 20); }

template <int R, int C>
void expect_zero_pinv() {
  const Mat<double, R, C> Z = Mat<double, R, C>::zero();
  int rank = -1;
  const Mat<double, C, R> P = pinv(Z, kRtol, 0.0, &rank);
  EXPECT_EQ(rank, 0);
  EXPECT_EQ(numerical_rank(Z), 0);
  for (double x : P.a) EXPECT_EQ(x, 0.0);  // also rules out NaN
  const Mat<double, C, R> Pd = pinv(Z);    // default arguments
  for (double x : Pd.a) EXPECT_EQ(x, 0.0);
}

TEST(Pinv, ZeroMatrixGivesZero) {
  expect_zero_pinv<1, 1>();
  expect_zero_pinv<2, 4>();
  expect_zero_pinv<4, 2>();
  expect_zero_pinv<3, 3>();
  expect_zero_pinv<8, 16>();
  expect_zero_pinv<16, 8>();
}

// Closed forms: a rank-one matrix u v^T has pinv v u^T / (|u|^2 |v|^2); a
// diagonal matrix inverts its entries above the cut.
TEST(Pinv, ClosedForms) {
  Mat<double, 2, 3> A = Mat<double, 2, 3>::zero();
  const double u[2] = {1.0, -2.0}, v[3] = {3.0, 0.5, -1.0};
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) A(i, j) = u[i] * v[j];
  int rank = -1;
  const Mat<double, 3, 2> P = pinv(A, kRtol, 0.0, &rank);
  EXPECT_EQ(rank, 1);
  const double s = (1.0 + 4.0) * (9.0 + 0.25 + 1.0);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j) EXPECT_NEAR(P(i, j), v[i] * u[j] / s, 1e-15);

  Mat<double, 3, 3> D = Mat<double, 3, 3>::zero();
  D(0, 0) = 4.0;
  D(1, 1) = -1e-3;
  D(2, 2) = 1e-9;
  const Mat<double, 3, 3> Pd = pinv(D, 1e-12, 0.0, &rank);
  EXPECT_EQ(rank, 3);
  EXPECT_DOUBLE_EQ(Pd(0, 0), 0.25);
  EXPECT_DOUBLE_EQ(Pd(1, 1), -1e3);
  EXPECT_DOUBLE_EQ(Pd(2, 2), 1e9);
  // rtol drops sigma = 1e-9 (< 1e-6 * 4), atol drops sigma = 1e-3 too
  const Mat<double, 3, 3> Pr = pinv(D, 1e-6, 0.0, &rank);
  EXPECT_EQ(rank, 2);
  EXPECT_DOUBLE_EQ(Pr(1, 1), -1e3);
  EXPECT_EQ(Pr(2, 2), 0.0);
  EXPECT_EQ(numerical_rank(D, 1e-6), 2);
  const Mat<double, 3, 3> Pa = pinv(D, 1e-12, 1e-2, &rank);
  EXPECT_EQ(rank, 1);
  EXPECT_DOUBLE_EQ(Pa(0, 0), 0.25);
  EXPECT_EQ(Pa(1, 1), 0.0);
  EXPECT_EQ(Pa(2, 2), 0.0);
  EXPECT_EQ(numerical_rank(D, 1e-12, 1e-2), 1);
  // an invertible matrix: pinv is the inverse
  Mat<double, 2, 2> B = Mat<double, 2, 2>::zero();
  B(0, 0) = 2.0;
  B(0, 1) = 1.0;
  B(1, 0) = 1.0;
  B(1, 1) = 3.0;
  const Mat<double, 2, 2> Bi = pinv(B);
  EXPECT_NEAR(Bi(0, 0), 0.6, 1e-15);
  EXPECT_NEAR(Bi(0, 1), -0.2, 1e-15);
  EXPECT_NEAR(Bi(1, 0), -0.2, 1e-15);
  EXPECT_NEAR(Bi(1, 1), 0.4, 1e-15);
}

// ---- svd_jacobi: A = us v^T, v orthogonal, columns of us orthogonal,
// sigma = Eigen's singular values.

template <int R, int C>
void check_svd(int count, unsigned long long seed) {
  std::mt19937_64 rng(seed);
  const int kinds = static_cast<int>(Kind::count);
  for (int t = 0; t < count; ++t) {
    const Case<R, C> c = make_case<R, C>(rng, static_cast<Kind>(t % kinds), (t / kinds) % 2 == 1, false);
    SCOPED_TRACE(::testing::Message() << R << "x" << C << " trial " << t);
    const Svd<double, R, C> s = svd_jacobi(c.A);
    EXPECT_TRUE(s.converged);
    const MatXld a = to_eigen_ld(c.A), us = to_eigen_ld(s.us), v = to_eigen_ld(s.v);
    const long double na = a.norm();
    const double rec = static_cast<double>((us * v.transpose() - a).norm() / (na > 0 ? na : 1.0L));
    const double orth =
        static_cast<double>((v.transpose() * v - MatXld::Identity(C, C)).cwiseAbs().maxCoeff());
    EXPECT_LE(rec, 1e-14);
    EXPECT_LE(orth, 1e-14);
    keep_max(g_worst.svd_reconstruct, rec);
    keep_max(g_worst.svd_orth, orth);
    // sigma_i = |us_i| and us_i . us_j = 0 (relative to sigma_max^2)
    long double smax = 0;
    for (int i = 0; i < C; ++i) {
      EXPECT_GE(s.sigma[i], 0.0);
      EXPECT_NEAR(s.sigma[i], static_cast<double>(us.col(i).norm()), 1e-15 * s.sigma[i]);
      smax = std::max(smax, static_cast<long double>(s.sigma[i]));
    }
    if (smax > 0) {
      const MatXld gram = us.transpose() * us;
      long double off = 0;
      for (int i = 0; i < C; ++i)
        for (int j = 0; j < C; ++j)
          if (i != j) off = std::max(off, std::fabs(gram(i, j)));
      const double uo = static_cast<double>(off / (smax * smax));
      EXPECT_LE(uo, 1e-14);
      keep_max(g_worst.svd_us_orth, uo);
    }
    // sorted sigma against Eigen
    std::vector<double> mine(s.sigma.v, s.sigma.v + C);
    std::sort(mine.rbegin(), mine.rend());
    const Eigen::VectorXd ref = Eigen::JacobiSVD<Eigen::MatrixXd>(to_eigen(c.A)).singularValues();
    for (int i = 0; i < C; ++i) {
      const double d = std::fabs(mine[i] - ref(i)) / (ref(0) > 0 ? ref(0) : 1.0);
      EXPECT_LE(d, 1e-14);
      keep_max(g_worst.svd_sigma, d);
    }
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(SvdJacobi, ReconstructsAndOrthogonal) {
  check_svd<1, 1>(50, 31);
  check_svd<4, 2>(200, 32);
  check_svd<3, 3>(200, 33);
  check_svd<6, 6>(200, 34);
  check_svd<16, 8>(300, 35);
  check_svd<8, 2>(200, 36);
  check_svd<16, 16>(100, 37);
}

// A matrix with columns of very different lengths: one-sided Jacobi keeps the
// small singular value to high relative accuracy.
TEST(SvdJacobi, GradedColumns) {
  Mat<double, 3, 2> A = Mat<double, 3, 2>::zero();
  A(0, 0) = 1e8;
  A(1, 1) = 1e-8;
  A(2, 1) = 1e-8;
  const Svd<double, 3, 2> s = svd_jacobi(A);
  EXPECT_TRUE(s.converged);
  double lo = std::min(s.sigma[0], s.sigma[1]), hi = std::max(s.sigma[0], s.sigma[1]);
  EXPECT_NEAR(hi, 1e8, 1e-16 * 1e8);
  EXPECT_NEAR(lo, std::sqrt(2.0) * 1e-8, 1e-15 * 1e-8);
}

// Regressions for svd_jacobi's stopping test (fixed in pinv.hpp). It compared
// |gamma| with eps sqrt(alpha beta): the product overflowed for entries above
// ~1e77 (no rotation at all, a wrong pinv: |A P - I| ~ 1) and underflowed
// below ~1e-77 (all 60 sweeps, converged = false). And a column that is only
// rounding noise inside the column space of an exactly rank-deficient matrix
// (duplicated rows) was rotated forever (60 sweeps, converged = false).
TEST(SvdJacobi, ConvergesAtExtremeScales) {
  std::mt19937_64 rng(41);
  std::normal_distribution<double> g(0.0, 1.0);
  Mat<double, 5, 4> B = Mat<double, 5, 4>::zero();
  for (double& x : B.a) x = g(rng);
  for (double scale : {1e-150, 1e-100, 1e-60, 1.0, 1e60, 1e100, 1e150}) {
    SCOPED_TRACE(::testing::Message() << "scale " << scale);
    const Mat<double, 5, 4> A = scale * B;
    EXPECT_TRUE(svd_jacobi(A, 12).converged);
    int rank = -1;
    const Mat<double, 4, 5> P = pinv(A, kRtol, 0.0, &rank);
    EXPECT_EQ(rank, 4);
    const Mat<double, 4, 4> PA = P * A;  // full column rank: P A = I
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) EXPECT_NEAR(PA(i, j), i == j ? 1.0 : 0.0, 1e-13);
    const Mat<double, 5, 4> As = scale * B;  // and the wide transpose
    const Mat<double, 5, 4> Pt = pinv(transpose(As), kRtol, 0.0, &rank);
    EXPECT_EQ(rank, 4);
    const Mat<double, 4, 4> AP = transpose(As) * Pt;
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) EXPECT_NEAR(AP(i, j), i == j ? 1.0 : 0.0, 1e-13);
  }
}

TEST(SvdJacobi, ConvergesOnDuplicatedRows) {
  std::mt19937_64 rng(42);
  std::normal_distribution<double> g(0.0, 1.0);
  // 16 x 8 from two distinct rows (copies, negated copies, zero rows): rank 2
  Case<16, 8> c{Mat<double, 16, 8>::zero(), 2};
  double r0[8], r1[8];
  for (int j = 0; j < 8; ++j) {
    r0[j] = g(rng);
    r1[j] = g(rng);
  }
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j) c.A(i, j) = i % 4 == 0 ? r0[j] : i % 4 == 1 ? r1[j] : i % 4 == 2 ? -r0[j] : 0.0;
  EXPECT_TRUE(svd_jacobi(c.A, 12).converged);
  check_pinv(c, "16x8 duplicated rows");
  // the wide transpose (pinv works on its transpose, with duplicated columns)
  const Case<8, 16> w{transpose(c.A), 2};
  check_pinv(w, "8x16 duplicated columns");
  // 3 x 3 [r; r; 0]: rank 1
  Case<3, 3> d{Mat<double, 3, 3>::zero(), 1};
  for (int j = 0; j < 3; ++j) d.A(0, j) = d.A(1, j) = g(rng);
  EXPECT_TRUE(svd_jacobi(d.A, 12).converged);
  check_pinv(d, "3x3 duplicated row");
}

// ---- float instantiation compiles and is accurate to float precision

TEST(Pinv, FloatInstantiation) {
  Mat<float, 4, 3> Af = Mat<float, 4, 3>::zero();
  Mat<double, 4, 3> Ad = Mat<double, 4, 3>::zero();
  const float vals[12] = {1.0f, 2.0f, -1.0f, 0.5f, 0.0f, 3.0f, -2.0f, 1.5f, 1.0f, 0.25f, -0.75f, 2.0f};
  for (int i = 0; i < 12; ++i) {
    Af.a[i] = vals[i];
    Ad.a[i] = vals[i];
  }
  int rank = -1;
  const Mat<float, 3, 4> Pf = pinv(Af, 1e-6f, 0.0f, &rank);
  EXPECT_EQ(rank, 3);
  const Mat<double, 3, 4> Pd = pinv(Ad);
  const double scale = norm_max(Pd);
  double worst = 0;
  for (int i = 0; i < 12; ++i) worst = std::max(worst, std::fabs(Pf.a[i] - Pd.a[i]) / scale);
  EXPECT_LE(worst, 1e-5);
  std::printf("float pinv 4x3: max |Pf - Pd| / max |Pd| = %.3g\n", worst);
  // the wide case goes through the transpose, and a rank-one float matrix
  const Mat<float, 3, 4> Bf = transpose(Af);
  const Mat<float, 4, 3> Pbf = pinv(Bf, 1e-6f, 0.0f, &rank);
  EXPECT_EQ(rank, 3);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_NEAR(Pbf(i, j), Pd(j, i), 1e-5 * scale);
  Mat<float, 2, 2> Rf = Mat<float, 2, 2>::zero();
  Rf(0, 0) = 1.0f;
  Rf(0, 1) = 2.0f;
  Rf(1, 0) = 2.0f;
  Rf(1, 1) = 4.0f;
  const Mat<float, 2, 2> Prf = pinv(Rf, 1e-5f, 0.0f, &rank);
  EXPECT_EQ(rank, 1);
  EXPECT_EQ(numerical_rank(Rf, 1e-5f), 1);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) EXPECT_NEAR(Prf(i, j), Rf(i, j) / 25.0f, 1e-6f);
}

// The worst errors seen, printed for the record when the whole binary runs
// (under ctest each test runs alone, and there is nothing to print). Not a
// test: each error is bounded where it is measured (Penrose conditions
// <= 1e-12, Eigen's pseudoinverse within max(1e-12, 5e-15 kappa), the SVD's
// reconstruction and orthogonality <= 1e-14).
class WorstErrorsReport : public ::testing::Environment {
 public:
  void TearDown() override {
    if (g_worst.matrices == 0) return;
    std::printf("matrices checked: %ld\n", g_worst.matrices);
    std::printf("Penrose (kappa_F-normalised): %.3g %.3g %.3g %.3g\n", g_worst.penrose[0],
                g_worst.penrose[1], g_worst.penrose[2], g_worst.penrose[3]);
    std::printf("Penrose (|A|,|P|,1,1-normalised): %.3g %.3g %.3g %.3g\n",
                g_worst.penrose_plain[0], g_worst.penrose_plain[1], g_worst.penrose_plain[2],
                g_worst.penrose_plain[3]);
    std::printf("vs Eigen (double / long double), kappa <= 1e4: %.3g / %.3g (max kappa %.3g)\n",
                g_worst.vs_eigen, g_worst.vs_eigen_ld, g_worst.max_kappa_compared);
    std::printf("vs Eigen (double / long double), all: max err/kappa %.3g / %.3g (max kappa %.3g)\n",
                g_worst.vs_eigen_over_kappa, g_worst.vs_eigen_ld_over_kappa, g_worst.max_kappa);
    std::printf("vs Eigen (long double), kappa <= 100: %.3g\n", g_worst.vs_eigen_ld_k100);
    std::printf("svd: reconstruct %.3g, V^T V - I %.3g, us orth %.3g, sigma vs Eigen %.3g\n",
                g_worst.svd_reconstruct, g_worst.svd_orth, g_worst.svd_us_orth, g_worst.svd_sigma);
  }
};
::testing::Environment* const g_worst_report =
    ::testing::AddGlobalTestEnvironment(new WorstErrorsReport);

}  // namespace
