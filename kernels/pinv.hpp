// nholo/kernels/pinv.hpp — rank-revealing singular value decomposition and
// Moore–Penrose pseudoinverse of small dense matrices, per thread.
//
// Method: one-sided (Hestenes) Jacobi. Plane rotations orthogonalise the
// columns of a working copy U = A V; at convergence the column norms are the
// singular values, V the right singular vectors. It is accurate to roughly
// machine precision relative to sigma_max, needs no workspace beyond the
// matrix itself and has no data-dependent memory access — suited to one GPU
// thread per matrix. Sizes are compile-time; R x C up to 8 x 16 (or more) work.
//
//   Svd<T,R,C> s = svd_jacobi(A);        // R >= C: A = U diag(sigma) V^T,
//                                        //   U stored unnormalised (U_i sigma_i)
//   Mat<T,C,R> P = pinv(A, rtol, atol, &rank);
//                                        // any R, C; singular values below
//                                        // max(rtol * sigma_max, atol) are
//                                        // treated as zero; zero matrix -> zero
//   int r = numerical_rank(A, rtol, atol);
//   NullSpace<T,R,C> ns = null_space(A, rtol, atol);
//                                        // orthonormal basis of null(A) (first
//                                        // ns.dim columns) and A^+, one SVD
#pragma once

#include "linalg.hpp"

namespace nholo {

constexpr double kDefaultPinvRtol = 1e-12;

template <class T, int R, int C>
struct Svd {
  Mat<T, R, C> us;   // columns u_i * sigma_i (left vectors, scaled)
  Mat<T, C, C> v;    // right singular vectors as columns
  Vec<T, C> sigma;   // singular values, unordered
  bool converged;
};

template <class T, int R, int C>
NHOLO_HDI Svd<T, R, C> svd_jacobi(const Mat<T, R, C>& A, int max_sweeps = 60) {
  static_assert(R >= C, "svd_jacobi needs rows >= columns; transpose first");
  Svd<T, R, C> s;
  s.us = A;
  s.v = Mat<T, C, C>::identity();
  s.converged = false;
  const T eps = T(sizeof(T) == sizeof(float) ? 1.2e-7 : 2.3e-16);
  // Columns shorter than eps |A|_F are numerically zero and are not rotated:
  // for an exactly rank-deficient A (duplicated or zero rows) their rounding
  // noise stays in A's column space, so the test below would never pass and
  // every call would run all max_sweeps sweeps.
  T negligible = T(0);
  for (int k = 0; k < R * C; ++k) negligible += A.a[k] * A.a[k];
  negligible *= eps * eps;
  for (int sweep = 0; sweep < max_sweeps && !s.converged; ++sweep) {
    bool rotated = false;
    for (int i = 0; i < C - 1; ++i) {
      for (int j = i + 1; j < C; ++j) {
        // alpha = |u_i|^2, beta = |u_j|^2, gamma = u_i . u_j
        T alpha = T(0), beta = T(0), gamma = T(0);
        for (int k = 0; k < R; ++k) {
          alpha += s.us(k, i) * s.us(k, i);
          beta += s.us(k, j) * s.us(k, j);
          gamma += s.us(k, i) * s.us(k, j);
        }
        if (!(alpha > negligible) || !(beta > negligible)) continue;
        // sqrt(alpha) sqrt(beta), not sqrt(alpha beta): the product overflows
        // for entries above ~1e77 (no rotation at all) and underflows below
        // ~1e-77 (no convergence)
        if (!(fabs(gamma) > eps * sqrt(alpha) * sqrt(beta)) || gamma == T(0)) continue;
        rotated = true;
        // rotation that zeroes gamma: t = tan(angle), smaller root
        const T zeta = (beta - alpha) / (T(2) * gamma);
        const T t = (zeta >= T(0) ? T(1) : T(-1)) / (fabs(zeta) + sqrt(T(1) + zeta * zeta));
        const T c = T(1) / sqrt(T(1) + t * t);
        const T sn = c * t;
        for (int k = 0; k < R; ++k) {
          const T ui = s.us(k, i), uj = s.us(k, j);
          s.us(k, i) = c * ui - sn * uj;
          s.us(k, j) = sn * ui + c * uj;
        }
        for (int k = 0; k < C; ++k) {
          const T vi = s.v(k, i), vj = s.v(k, j);
          s.v(k, i) = c * vi - sn * vj;
          s.v(k, j) = sn * vi + c * vj;
        }
      }
    }
    if (!rotated) s.converged = true;
  }
  for (int i = 0; i < C; ++i) {
    T a = T(0);
    for (int k = 0; k < R; ++k) a += s.us(k, i) * s.us(k, i);
    s.sigma[i] = sqrt(a);
  }
  return s;
}

namespace detail {
// A^+ = sum_{sigma_i > cut} v_i (u_i sigma_i)^T / sigma_i^2, for R >= C
template <class T, int R, int C>
NHOLO_HDI Mat<T, C, R> pinv_tall(const Mat<T, R, C>& A, T rtol, T atol, int* rank) {
  const Svd<T, R, C> s = svd_jacobi(A);
  T smax = T(0);
  for (int i = 0; i < C; ++i) smax = max_of(smax, s.sigma[i]);
  const T cut = max_of(rtol * smax, atol);
  Mat<T, C, R> P = Mat<T, C, R>::zero();
  int r = 0;
  for (int i = 0; i < C; ++i) {
    if (!(s.sigma[i] > cut) || !(s.sigma[i] > T(0))) continue;
    ++r;
    const T w = T(1) / (s.sigma[i] * s.sigma[i]);
    for (int a = 0; a < C; ++a) {
      const T va = s.v(a, i) * w;
      for (int b = 0; b < R; ++b) P(a, b) += va * s.us(b, i);
    }
  }
  if (rank) *rank = r;
  return P;
}
}  // namespace detail

template <class T, int R, int C>
NHOLO_HDI Mat<T, C, R> pinv(const Mat<T, R, C>& A, T rtol = T(kDefaultPinvRtol), T atol = T(0),
                            int* rank = nullptr) {
  if constexpr (R >= C) {
    return detail::pinv_tall(A, rtol, atol, rank);
  } else {
    // (A^T)^+ = (A^+)^T
    return transpose(detail::pinv_tall(transpose(A), rtol, atol, rank));
  }
}

// Orthonormal basis of null(A) and A^+ from ONE Jacobi SVD (the null-space
// formulation, formulations.hpp). A (R x C) is padded with zero rows to
// max(R, C) x C, so that the one-sided Jacobi method yields the full set of C
// right singular vectors V (orthogonal): those whose singular value is at or
// below max(rtol * sigma_max, atol) span null(A), the others give
//   A^+ = sum_{sigma_i > cut} v_i (u_i sigma_i)^T / sigma_i^2.
// The basis is unique only up to an orthogonal change within null(A) (and is
// NOT a continuous function of A); use it in basis-independent expressions.
template <class T, int R, int C>
struct NullSpace {
  Mat<T, C, C> basis;  // columns 0 .. dim-1: orthonormal basis of null(A); other columns 0
  Mat<T, C, R> pinv;   // A^+ (C x R)
  int dim;             // dimension of null(A) = C - rank
  int rank;            // numerical rank of A
};

template <class T, int R, int C>
NHOLO_HDI NullSpace<T, R, C> null_space(const Mat<T, R, C>& A, T rtol = T(kDefaultPinvRtol),
                                        T atol = T(0)) {
  constexpr int P = R > C ? R : C;
  Mat<T, P, C> padded = Mat<T, P, C>::zero();
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) padded(i, j) = A(i, j);
  const Svd<T, P, C> s = svd_jacobi(padded);
  T smax = T(0);
  for (int i = 0; i < C; ++i) smax = max_of(smax, s.sigma[i]);
  const T cut = max_of(rtol * smax, atol);
  NullSpace<T, R, C> ns;
  ns.basis = Mat<T, C, C>::zero();
  ns.pinv = Mat<T, C, R>::zero();
  ns.dim = 0;
  ns.rank = 0;
  for (int i = 0; i < C; ++i) {
    if (s.sigma[i] > cut && s.sigma[i] > T(0)) {
      // range direction: contributes v_i (u_i sigma_i)^T / sigma_i^2 to A^+
      ++ns.rank;
      const T w = T(1) / (s.sigma[i] * s.sigma[i]);
      for (int a = 0; a < C; ++a) {
        const T va = s.v(a, i) * w;
        for (int b = 0; b < R; ++b) ns.pinv(a, b) += va * s.us(b, i);
      }
    } else {
      // null direction: A v_i = 0 (to the rank tolerance)
      for (int a = 0; a < C; ++a) ns.basis(a, ns.dim) = s.v(a, i);
      ++ns.dim;
    }
  }
  return ns;
}

template <class T, int R, int C>
NHOLO_HDI int numerical_rank(const Mat<T, R, C>& A, T rtol = T(kDefaultPinvRtol), T atol = T(0)) {
  Vec<T, (R < C ? R : C)> sig;
  T smax = T(0);
  if constexpr (R >= C) {
    const auto s = svd_jacobi(A);
    sig = s.sigma;
  } else {
    const auto s = svd_jacobi(transpose(A));
    sig = s.sigma;
  }
  for (int i = 0; i < (R < C ? R : C); ++i) smax = max_of(smax, sig[i]);
  const T cut = max_of(rtol * smax, atol);
  int r = 0;
  for (int i = 0; i < (R < C ? R : C); ++i)
    if (sig[i] > cut && sig[i] > T(0)) ++r;
  return r;
}

}  // namespace nholo
