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

}  // namespace nholo
