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
//   bool full = null_space_qr(A, rtol_r, ns);
//                                        // the same NullSpace (R <= C) from a
//                                        // Householder QR of A^T when A has
//                                        // full row rank (every |R_kk| > rtol_r
//                                        // max |R_jj|); false: use null_space
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

// Orthonormal basis of null(A) and A^+ for A (R x C, R <= C) of full row
// rank, from a Householder QR of A^T = Q [Rf; 0] (Q orthogonal C x C, Rf
// upper triangular R x R): the last C - R columns of Q span null(A), and with
// Q1 the first R columns, A = Rf^T Q1^T, A^+ = Q1 Rf^-T. Full row rank is
// declared when every |Rf_kk| exceeds rtol times the largest (Rf_kk^2 are the
// pivots of the Cholesky factor of A A^T, so rtol = sqrt(gram_rtol) is the
// test of fundamental.hpp); otherwise false and ns must not be used (the
// Jacobi SVD of null_space handles rank-deficient A, vanishing rows, and
// rows so small that their squares underflow). The
// basis differs from the SVD's by an orthogonal change within null(A), which
// basis-independent uses (formulations.hpp) do not see.
template <class T, int R, int C>
NHOLO_HDI bool null_space_qr(const Mat<T, R, C>& A, T rtol, NullSpace<T, R, C>& ns) {
  static_assert(R <= C, "null_space_qr needs rows <= columns");
  // W = A^T (C x R), reduced in place to [Rf; 0]; Q accumulated as a product
  // of reflectors applied to the identity (Q = H_0 H_1 ... H_{R-1})
  Mat<T, C, R> W = transpose(A);
  Mat<T, C, C> Q = Mat<T, C, C>::identity();
  T rmax = T(0);
  Vec<T, R> rdiag;
  for (int k = 0; k < R; ++k) {
    // reflector H = I - 2 v v^T / (v^T v) mapping W(k:, k) to -sign(W_kk) |.| e_k
    T norm2 = T(0);
    for (int i = k; i < C; ++i) norm2 += W(i, k) * W(i, k);
    // below ~1e-290 (1e-30 in float) the squares have lost digits to
    // underflow: leave such A to the SVD
    if (!(norm2 > T(sizeof(T) == sizeof(float) ? 1e-30 : 1e-290)) || !is_finite(norm2)) return false;
    const T alpha = sqrt(norm2);
    const T beta = W(k, k) >= T(0) ? -alpha : alpha;  // new diagonal entry
    Vec<T, C> v = Vec<T, C>::zero();
    for (int i = k; i < C; ++i) v[i] = W(i, k);
    v[k] -= beta;
    T vv = T(0);
    for (int i = k; i < C; ++i) vv += v[i] * v[i];
    const T tau = T(2) / vv;  // vv >= alpha^2 > 0
    // W <- H W (columns k .. R-1)
    for (int j = k; j < R; ++j) {
      T d = T(0);
      for (int i = k; i < C; ++i) d += v[i] * W(i, j);
      d *= tau;
      for (int i = k; i < C; ++i) W(i, j) -= d * v[i];
    }
    // Q <- Q H
    for (int r = 0; r < C; ++r) {
      T d = T(0);
      for (int i = k; i < C; ++i) d += Q(r, i) * v[i];
      d *= tau;
      for (int i = k; i < C; ++i) Q(r, i) -= d * v[i];
    }
    rdiag[k] = W(k, k);
    rmax = max_of(rmax, T(fabs(W(k, k))));
  }
  for (int k = 0; k < R; ++k)
    if (!(fabs(rdiag[k]) > rtol * rmax)) return false;
  // A^+ = Q1 Rf^-T: column l is Q1 y, Rf^T y = e_l (forward substitution)
  ns.pinv = Mat<T, C, R>::zero();
  for (int l = 0; l < R; ++l) {
    Vec<T, R> y;
    for (int i = 0; i < R; ++i) {
      T sum = i == l ? T(1) : T(0);
      for (int k = 0; k < i; ++k) sum -= W(k, i) * y[k];
      y[i] = sum / W(i, i);
    }
    for (int r = 0; r < C; ++r) {
      T acc = T(0);
      for (int k = 0; k < R; ++k) acc += Q(r, k) * y[k];
      ns.pinv(r, l) = acc;
    }
  }
  ns.basis = Mat<T, C, C>::zero();
  for (int r = 0; r < C; ++r)
    for (int j = 0; j < C - R; ++j) ns.basis(r, j) = Q(r, R + j);
  ns.dim = C - R;
  ns.rank = R;
  return true;
}

}  // namespace nholo
