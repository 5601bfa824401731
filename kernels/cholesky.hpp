// nholo/kernels/cholesky.hpp — Cholesky factorisation M = L L^T of a small
// symmetric positive definite matrix, and the triangular solves built on it.
//
//   bool ok = cholesky(M, L, rtol);   // false: M not numerically positive
//                                     // definite (a pivot <= rtol * max diag,
//                                     // default 1e-12) or not finite; L is then
//                                     // unusable (callers must not read it).
//                                     // Only the lower triangle of M is read.
//   x = solve_lower(L, b);            // L x = b
//   x = solve_lower_transposed(L, b); // L^T x = b
//   x = cholesky_solve(L, b);         // M x = b
//
//   CholeskyFactor<T,N> f;            // the right-hand side's form: L (lower
//   bool ok = cholesky_factor(M, f, rtol);  triangle only) and 1 / L_ii, so
//   f.solve_lower(b), f.solve_upper(b),     that the solves multiply instead
//   f.solve(b)                              of dividing (same pivot test)
//
//   LdltFactor<T,N> g;                // M = L D L^T, L unit lower: no square
//   bool ok = ldlt_factor(M, g, rtol);  roots (the Gram matrices of
//   g.solve(b)                          fundamental.hpp; same pivot test)
#pragma once

#include "linalg.hpp"

namespace nholo {

template <class T, int N>
NHOLO_HDI bool cholesky(const Mat<T, N, N>& M, Mat<T, N, N>& L, T rtol = T(1e-12)) {
  L = Mat<T, N, N>::zero();
  T scale = T(0);
  for (int i = 0; i < N; ++i) scale = max_of(scale, T(fabs(M(i, i))));
  if (!(scale > T(0)) || !is_finite(scale)) return N == 0;
  const T pivot_min = rtol * scale;
  for (int j = 0; j < N; ++j) {
    // L_jj^2 = M_jj - sum_k L_jk^2
    T d = M(j, j);
    for (int k = 0; k < j; ++k) d -= L(j, k) * L(j, k);
    if (!(d > pivot_min)) return false;
    const T ljj = sqrt(d);
    L(j, j) = ljj;
    // L_ij = (M_ij - sum_k L_ik L_jk) / L_jj
    for (int i = j + 1; i < N; ++i) {
      T s = M(i, j);
      for (int k = 0; k < j; ++k) s -= L(i, k) * L(j, k);
      L(i, j) = s / ljj;
    }
  }
  return true;
}

// L x = b, L lower triangular
template <class T, int N>
NHOLO_HDI Vec<T, N> solve_lower(const Mat<T, N, N>& L, const Vec<T, N>& b) {
  Vec<T, N> x = Vec<T, N>::zero();
  for (int i = 0; i < N; ++i) {
    T s = b[i];
    for (int k = 0; k < i; ++k) s -= L(i, k) * x[k];
    x[i] = s / L(i, i);
  }
  return x;
}

// L^T x = b, L lower triangular
template <class T, int N>
NHOLO_HDI Vec<T, N> solve_lower_transposed(const Mat<T, N, N>& L, const Vec<T, N>& b) {
  Vec<T, N> x = Vec<T, N>::zero();
  for (int i = N - 1; i >= 0; --i) {
    T s = b[i];
    for (int k = i + 1; k < N; ++k) s -= L(k, i) * x[k];
    x[i] = s / L(i, i);
  }
  return x;
}

// M x = b with M = L L^T
template <class T, int N>
NHOLO_HDI Vec<T, N> cholesky_solve(const Mat<T, N, N>& L, const Vec<T, N>& b) {
  return solve_lower_transposed(L, solve_lower(L, b));
}

// M = L L^T with the reciprocals of L's diagonal: the solves multiply by them
// (one division per row at factorisation instead of one per row and solve).
// Only the lower triangle of L is set.
template <class T, int N>
struct CholeskyFactor {
  Mat<T, N, N> L;
  Vec<T, N> inv_diag;

  // L x = b
  NHOLO_HDI Vec<T, N> solve_lower(const Vec<T, N>& b) const {
    Vec<T, N> x;
    for (int i = 0; i < N; ++i) {
      T s = b[i];
      for (int k = 0; k < i; ++k) s -= L(i, k) * x[k];
      x[i] = s * inv_diag[i];
    }
    return x;
  }
  // L^T x = b
  NHOLO_HDI Vec<T, N> solve_upper(const Vec<T, N>& b) const {
    Vec<T, N> x;
    for (int i = N - 1; i >= 0; --i) {
      T s = b[i];
      for (int k = i + 1; k < N; ++k) s -= L(k, i) * x[k];
      x[i] = s * inv_diag[i];
    }
    return x;
  }
  // M x = b
  NHOLO_HDI Vec<T, N> solve(const Vec<T, N>& b) const { return solve_upper(solve_lower(b)); }
  // L x (lower triangle)
  NHOLO_HDI Vec<T, N> mul_lower(const Vec<T, N>& x) const {
    Vec<T, N> y;
    for (int i = 0; i < N; ++i) {
      T s = T(0);
      for (int k = 0; k <= i; ++k) s += L(i, k) * x[k];
      y[i] = s;
    }
    return y;
  }
};

// A CholeskyFactor whose L is diagonal (M diagonal: a constant mass matrix of
// point masses and principal axes, system.hpp), with the same interface: the
// solves multiply by 1 / L_ii and skip the zero off-diagonal entries, which
// only ever contributed exact zeros, so the results are the same bits as the
// dense solves' for finite operands.
template <class T, int N>
struct DiagonalFactor {
  const CholeskyFactor<T, N>& f;

  NHOLO_HDI Vec<T, N> solve_lower(const Vec<T, N>& b) const {
    Vec<T, N> x;
    for (int i = 0; i < N; ++i) x[i] = b[i] * f.inv_diag[i];
    return x;
  }
  NHOLO_HDI Vec<T, N> solve_upper(const Vec<T, N>& b) const { return solve_lower(b); }
  NHOLO_HDI Vec<T, N> solve(const Vec<T, N>& b) const { return solve_upper(solve_lower(b)); }
  NHOLO_HDI Vec<T, N> mul_lower(const Vec<T, N>& x) const {
    Vec<T, N> y;
    for (int i = 0; i < N; ++i) y[i] = f.L(i, i) * x[i];
    return y;
  }
};

// L's strictly lower triangle is zero
template <class T, int N>
NHOLO_HDI bool is_diagonal(const CholeskyFactor<T, N>& f) {
  bool d = true;
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < i; ++j) d = d && f.L(i, j) == T(0);
  return d;
}

// Same test as cholesky(): false when M is not numerically positive definite
// (f unusable). As a relative rank test of a symmetric positive SEMIdefinite
// M (fundamental.hpp: K = A M^-1 A^T): every pivot d_j = M_jj sin^2(theta_j),
// theta_j the angle between row j of a factor W (M = W W^T) and the span of
// the rows before it, so "d_j > rtol max_i M_ii" bounds both the spread of
// the diagonal and every angle from below: rank-deficient M (a zero or
// dependent row) fail it, and a passing M has a scaled condition number of
// at most about 2^N / rtol, which bounds what the Cholesky solve can lose.
template <class T, int N>
NHOLO_HDI bool cholesky_factor(const Mat<T, N, N>& M, CholeskyFactor<T, N>& f,
                               T rtol = T(1e-12)) {
  T scale = T(0);
  for (int i = 0; i < N; ++i) scale = max_of(scale, T(fabs(M(i, i))));
  if (!(scale > T(0)) || !is_finite(scale)) return N == 0;
  const T pivot_min = rtol * scale;
  for (int j = 0; j < N; ++j) {
    T d = M(j, j);
    for (int k = 0; k < j; ++k) d -= f.L(j, k) * f.L(j, k);
    if (!(d > pivot_min)) return false;
    const T ljj = sqrt(d);
    const T inv = T(1) / ljj;
    f.L(j, j) = ljj;
    f.inv_diag[j] = inv;
    for (int i = j + 1; i < N; ++i) {
      T s = M(i, j);
      for (int k = 0; k < j; ++k) s -= f.L(i, k) * f.L(j, k);
      f.L(i, j) = s * inv;
    }
  }
  return true;
}

// K = L D L^T with L unit lower triangular and D diagonal, for the small
// symmetric positive (semi)definite Gram matrices of the fundamental equation
// (fundamental.hpp). The pivots D_jj are the Cholesky factor's squared
// diagonal (D_jj = M_jj - sum_k L_jk^2 D_kk), so ldlt_factor applies the same
// relative test as cholesky_factor, but it takes no square roots: the
// factorisation and the solve of an m x m Gram matrix cost m divisions and
// no sqrt on the right-hand side's critical path. Only the strictly lower
// triangle of L is set.
template <class T, int N>
struct LdltFactor {
  Mat<T, N, N> L;
  Vec<T, N> inv_d;  // 1 / D_jj

  // M x = b: L z = b, y = D^-1 z, L^T x = y
  NHOLO_HDI Vec<T, N> solve(const Vec<T, N>& b) const {
    Vec<T, N> z;
    for (int i = 0; i < N; ++i) {
      T s = b[i];
      for (int k = 0; k < i; ++k) s -= L(i, k) * z[k];
      z[i] = s;
    }
    Vec<T, N> x;
    for (int i = N - 1; i >= 0; --i) {
      T s = z[i] * inv_d[i];
      for (int k = i + 1; k < N; ++k) s -= L(k, i) * x[k];
      x[i] = s;
    }
    return x;
  }
};

// Same test as cholesky_factor (false: f unusable): every pivot D_jj >
// rtol * max_i M_ii, M_ii finite.
template <class T, int N>
NHOLO_HDI bool ldlt_factor(const Mat<T, N, N>& M, LdltFactor<T, N>& f, T rtol = T(1e-12)) {
  T scale = T(0);
  for (int i = 0; i < N; ++i) scale = max_of(scale, T(fabs(M(i, i))));
  if (!(scale > T(0)) || !is_finite(scale)) return N == 0;
  const T pivot_min = rtol * scale;
  // E(i,k) = L(i,k) D_kk: the products the updates need, without dividing back
  Mat<T, N, N> E;
  for (int j = 0; j < N; ++j) {
    T d = M(j, j);
    for (int k = 0; k < j; ++k) d -= E(j, k) * f.L(j, k);
    if (!(d > pivot_min)) return false;
    const T inv = T(1) / d;
    f.inv_d[j] = inv;
    for (int i = j + 1; i < N; ++i) {
      T s = M(i, j);
      for (int k = 0; k < j; ++k) s -= E(i, k) * f.L(j, k);
      E(i, j) = s;
      f.L(i, j) = s * inv;
    }
  }
  return true;
}

}  // namespace nholo
