// nholo/kernels/lu.hpp — LU factorisation with partial (row) pivoting of a small
// dense square matrix, and the solve built on it. Used for the saddle-point
// (KKT) systems of the multiplier and vakonomic formulations (formulations.hpp),
// which are symmetric indefinite or unsymmetric, so Cholesky does not apply.
//
//   LuFactor<T,N> f;
//   bool ok = lu_factor(A, f, rtol);   // P A = L U, L unit lower, U upper, both
//                                      // stored in f.lu; false when a pivot is
//                                      // <= rtol * max_ij |A_ij| (rtol at least
//                                      // 16 ulps of the scalar type; numerically
//                                      // singular: redundant constraints, ...)
//                                      // or not finite; f is then unusable,
//                                      // nothing is NaN
//   x = lu_solve(f, b);                // A x = b
//   bool ok = lu_solve_system(A, b, x, rtol);  // both; x = 0 when singular
//
// Partial pivoting picks, in column k, the row with the largest |entry| among
// rows k..N-1. The tolerance is relative to the largest entry of A, so it is
// independent of the overall scale of the system.
#pragma once

#include "linalg.hpp"

namespace nholo {

constexpr double kDefaultLuRtol = 1e-12;

template <class T, int N>
struct LuFactor {
  Mat<T, N, N> lu;          // L below the diagonal (unit diagonal implied), U on and above
  int perm[N > 0 ? N : 1];  // row i of P A is row perm[i] of A
  T min_pivot_ratio;        // min(1, min_k |U_kk| / max_ij |A_ij|): a cheap condition indicator
};

template <class T, int N>
NHOLO_HDI bool lu_factor(const Mat<T, N, N>& A, LuFactor<T, N>& f, T rtol = T(kDefaultLuRtol)) {
  f.lu = A;
  for (int i = 0; i < N; ++i) f.perm[i] = i;
  f.min_pivot_ratio = T(0);
  if constexpr (N == 0) {
    return true;
  } else {
    for (int i = 0; i < N * N; ++i)
      if (!is_finite(A.a[i])) return false;
    const T scale = norm_max(A);
    if (!(scale > T(0))) return false;
    // never below a few ulps of the scale: rounding-level pivots of a singular
    // matrix must be caught in float too (2^-19 ~ 1.9e-6 for float, 2^-48 for double)
    const T floor_rtol =
        T(sizeof(T) == sizeof(float) ? 1.9073486328125e-06 : 3.552713678800501e-15);
    const T pivot_min = max_of(rtol, floor_rtol) * scale;
    T ratio = T(1);
    for (int k = 0; k < N; ++k) {
      // pivot row: largest |entry| of column k at or below the diagonal
      int p = k;
      T best = fabs(f.lu(k, k));
      for (int i = k + 1; i < N; ++i) {
        const T a = fabs(f.lu(i, k));
        if (a > best) {
          best = a;
          p = i;
        }
      }
      if (!(best > pivot_min)) return false;
      ratio = min_of(ratio, T(best / scale));
      if (p != k) {
        for (int j = 0; j < N; ++j) {
          const T tmp = f.lu(k, j);
          f.lu(k, j) = f.lu(p, j);
          f.lu(p, j) = tmp;
        }
        const int tp = f.perm[k];
        f.perm[k] = f.perm[p];
        f.perm[p] = tp;
      }
      // eliminate below the pivot: l_ik = a_ik / u_kk, a_ij -= l_ik u_kj
      const T inv = T(1) / f.lu(k, k);
      for (int i = k + 1; i < N; ++i) {
        const T lik = f.lu(i, k) * inv;
        f.lu(i, k) = lik;
        if (lik == T(0)) continue;
        for (int j = k + 1; j < N; ++j) f.lu(i, j) -= lik * f.lu(k, j);
      }
    }
    f.min_pivot_ratio = ratio;
    return true;
  }
}

// A x = b from P A = L U: L y = P b (forward), U x = y (backward)
template <class T, int N>
NHOLO_HDI Vec<T, N> lu_solve(const LuFactor<T, N>& f, const Vec<T, N>& b) {
  Vec<T, N> x = Vec<T, N>::zero();
  for (int i = 0; i < N; ++i) {
    T s = b[f.perm[i]];
    for (int k = 0; k < i; ++k) s -= f.lu(i, k) * x[k];
    x[i] = s;
  }
  for (int i = N - 1; i >= 0; --i) {
    T s = x[i];
    for (int k = i + 1; k < N; ++k) s -= f.lu(i, k) * x[k];
    x[i] = s / f.lu(i, i);
  }
  return x;
}

// Factor and solve; false (and x = 0) when A is numerically singular.
template <class T, int N>
NHOLO_HDI bool lu_solve_system(const Mat<T, N, N>& A, const Vec<T, N>& b, Vec<T, N>& x,
                               T rtol = T(kDefaultLuRtol)) {
  LuFactor<T, N> f;
  if (!lu_factor(A, f, rtol)) {
    x = Vec<T, N>::zero();
    return false;
  }
  x = lu_solve(f, b);
  return true;
}

}  // namespace nholo
