// Tests of kernels/lu.hpp: LU with partial pivoting against Eigen, pivoting
// where the leading entry vanishes, saddle-point (KKT) matrices, detection of
// singular matrices (never NaN), scale invariance, float.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <random>

#include "kernels/lu.hpp"

using namespace nholo;

namespace {

using Rng = std::mt19937_64;

double uni(Rng& r, double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(r);
}

template <int N>
Mat<double, N, N> random_matrix(Rng& r) {
  Mat<double, N, N> A;
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) A(i, j) = uni(r, -1.0, 1.0);
  return A;
}

template <int N>
Eigen::Matrix<double, N, N> to_eigen(const Mat<double, N, N>& A) {
  Eigen::Matrix<double, N, N> E;
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) E(i, j) = A(i, j);
  return E;
}

template <int N>
void check_random(int trials) {
  Rng rng(100 + N);
  for (int k = 0; k < trials; ++k) {
    const auto A = random_matrix<N>(rng);
    Vec<double, N> b;
    for (int i = 0; i < N; ++i) b[i] = uni(rng, -1.0, 1.0);
    Vec<double, N> x;
    ASSERT_TRUE(lu_solve_system(A, b, x));
    Eigen::Matrix<double, N, 1> eb;
    for (int i = 0; i < N; ++i) eb(i) = b[i];
    const Eigen::Matrix<double, N, 1> ex = to_eigen(A).fullPivLu().solve(eb);
    const double cond = to_eigen(A).jacobiSvd().singularValues()(0) /
                        to_eigen(A).jacobiSvd().singularValues()(N - 1);
    for (int i = 0; i < N; ++i) ASSERT_NEAR(x[i], ex(i), 1e-14 * cond * (1 + ex.norm()));
    // residual A x - b at rounding level
    const Vec<double, N> r = A * x - b;
    ASSERT_LE(norm_inf(r), 1e-13 * (1 + norm_inf(b)) * (1 + norm_max(A) * norm_inf(x)));
  }
}

TEST(Lu, RandomMatricesAgreeWithEigen) {
  check_random<1>(50);
  check_random<2>(200);
  check_random<4>(200);
  check_random<6>(200);
  check_random<9>(100);
}

// A zero (and a tiny) leading entry: partial pivoting swaps rows.
TEST(Lu, PivotsPastAZeroLeadingEntry) {
  const Mat<double, 3, 3> A{{0.0, 2.0, 1.0,  //
                             1.0, 1.0, 0.0,  //
                             3.0, 0.0, 1.0}};
  const Vec<double, 3> xs{{1.0, -2.0, 3.0}};
  const Vec<double, 3> b = A * xs;
  Vec<double, 3> x;
  ASSERT_TRUE(lu_solve_system(A, b, x));
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(x[i], xs[i], 1e-15);
  LuFactor<double, 3> f;
  ASSERT_TRUE(lu_factor(A, f));
  EXPECT_EQ(f.perm[0], 2);  // the largest entry of column 0
  EXPECT_GT(f.min_pivot_ratio, 0.1);
}

// The saddle-point matrix [M -A^T; A 0] of the multiplier formulation:
// regular for A of full row rank, singular (reported) for redundant rows.
TEST(Lu, SaddlePointMatricesRegularAndRedundant) {
  Rng rng(7);
  for (int k = 0; k < 200; ++k) {
    // M = B B^T + I (positive definite), A 2 x 4, optionally a third row A0 + A1
    Mat<double, 4, 4> B = random_matrix<4>(rng);
    const Mat<double, 4, 4> M = B * transpose(B) + Mat<double, 4, 4>::identity();
    Mat<double, 3, 4> A;
    for (int l = 0; l < 2; ++l)
      for (int j = 0; j < 4; ++j) A(l, j) = uni(rng, -1.0, 1.0);
    for (int j = 0; j < 4; ++j) A(2, j) = A(0, j) + A(1, j);
    // regular 6 x 6 (first two rows of A)
    Mat<double, 6, 6> K = Mat<double, 6, 6>::zero();
    Mat<double, 7, 7> Kr = Mat<double, 7, 7>::zero();
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) K(i, j) = Kr(i, j) = M(i, j);
    for (int l = 0; l < 3; ++l)
      for (int j = 0; j < 4; ++j) {
        if (l < 2) {
          K(4 + l, j) = A(l, j);
          K(j, 4 + l) = -A(l, j);
        }
        Kr(4 + l, j) = A(l, j);
        Kr(j, 4 + l) = -A(l, j);
      }
    Vec<double, 6> rhs, x;
    for (int i = 0; i < 6; ++i) rhs[i] = uni(rng, -1.0, 1.0);
    ASSERT_TRUE(lu_solve_system(K, rhs, x)) << k;
    ASSERT_LE(norm_inf(K * x - rhs), 1e-12 * (1 + norm_inf(x)));
    // redundant: singular, x = 0, no NaN
    Vec<double, 7> rhs7, x7;
    for (int i = 0; i < 7; ++i) rhs7[i] = uni(rng, -1.0, 1.0);
    EXPECT_FALSE(lu_solve_system(Kr, rhs7, x7)) << k;
    EXPECT_TRUE(all_finite(x7));
    EXPECT_EQ(norm_inf(x7), 0.0);
  }
}

TEST(Lu, SingularZeroAndNonFiniteMatrices) {
  Vec<double, 3> x;
  const Vec<double, 3> b{{1.0, 2.0, 3.0}};
  EXPECT_FALSE(lu_solve_system(Mat<double, 3, 3>::zero(), b, x));
  EXPECT_TRUE(all_finite(x));
  // rank 2: third row = 2 x first - second
  const Mat<double, 3, 3> S{{1.0, 2.0, 3.0,   //
                             0.5, -1.0, 4.0,  //
                             1.5, 5.0, 2.0}};
  EXPECT_FALSE(lu_solve_system(S, b, x));
  Mat<double, 3, 3> N = Mat<double, 3, 3>::identity();
  N(1, 2) = NAN;
  EXPECT_FALSE(lu_solve_system(N, b, x));
  EXPECT_TRUE(all_finite(x));
}

// The pivot tolerance is relative: scaling A by 1e-150 or 1e150 changes nothing.
TEST(Lu, ScaleInvariant) {
  Rng rng(3);
  const auto A = random_matrix<5>(rng);
  Vec<double, 5> b, x0, x1, x2;
  for (int i = 0; i < 5; ++i) b[i] = uni(rng, -1.0, 1.0);
  ASSERT_TRUE(lu_solve_system(A, b, x0));
  ASSERT_TRUE(lu_solve_system(1e-150 * A, 1e-150 * b, x1));
  ASSERT_TRUE(lu_solve_system(1e150 * A, 1e150 * b, x2));
  for (int i = 0; i < 5; ++i) {
    EXPECT_NEAR(x1[i], x0[i], 1e-13 * (1 + std::abs(x0[i])));
    EXPECT_NEAR(x2[i], x0[i], 1e-13 * (1 + std::abs(x0[i])));
  }
}

// Float: regular systems solve to float accuracy; a matrix singular up to
// float rounding is caught by the 16-ulp floor of the pivot tolerance.
TEST(Lu, Float) {
  const Mat<float, 3, 3> A{{4.0f, 1.0f, 0.5f,   //
                            1.0f, 3.0f, -1.0f,  //
                            0.5f, -1.0f, 2.0f}};
  const Vec<float, 3> xs{{1.0f, 2.0f, -1.0f}};
  Vec<float, 3> x;
  ASSERT_TRUE(lu_solve_system(A, A * xs, x));
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(x[i], xs[i], 1e-5f);
  // third row = 0.1 first + 0.3 second, rounded in float
  Mat<float, 3, 3> S = A;
  for (int j = 0; j < 3; ++j) S(2, j) = 0.1f * A(0, j) + 0.3f * A(1, j);
  EXPECT_FALSE(lu_solve_system(S, xs, x, 1e-12f));
  EXPECT_TRUE(all_finite(x));
}

}  // namespace
