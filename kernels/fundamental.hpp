// nholo/kernels/fundamental.hpp — the Udwadia–Kalaba fundamental equation,
// ideal and nonideal, and its singular-mass form (docs/physics.md, section 1).
//
//   qdd = a + M^-1 C + M^-1 A^T K^+ (b - A (a + M^-1 C)),  a = M^-1 F,  K = A M^-1 A^T
//   Q_i^c  = A^T K^+ (b - A a)                     (ideal constraint force)
//   Q_ni^c = (I - A^T K^+ A M^-1) C                (nonideal constraint force)
//   M qdd = F + Q_i^c + Q_ni^c
//
// Evaluated with the Cholesky factor M = L L^T (never an inverse) and
// W = A L^-T, W^T = L^-1 A^T (m triangular solves), so that K = W W^T:
//   * full rank (the common case): K by its m x m Gram products and its
//     LDL^T factorization on the host (cholesky.hpp, ldlt_factor: no square
//     roots; its pivots D_jj are the Cholesky factor's squared diagonal), its
//     Cholesky factor on the device (GramFactor below says why), with a
//     relative rank test (every pivot > gram_rtol * max diag K); then
//       M^-1 A^T K^-1 r = L^-T W^T (K^-1 r),   Q_i^c = A^T K^-1 (b - A a),
//       Q_ni^c = C - A^T K^-1 A M^-1 C;
//   * K numerically rank-deficient (a pivot <= gram_rtol * max diag K:
//     redundant constraints, Appell's A = 0 at rest, or K so ill-conditioned
//     that squaring W's condition number would cost digits): the
//     pseudoinverse of W by the one-sided Jacobi SVD of pinv.hpp,
//       A^T K^+ r = L W^+ r,      K^+ r = (W^+)^T W^+ r  (the multipliers),
//     i.e. Udwadia (2005) eq (24)/(26) with M^1/2 replaced by L — the
//     Moore–Penrose answer. Where both apply they agree to rounding: with
//     W of full row rank, W^+ = W^T (W W^T)^-1. K whose largest diagonal is
//     below ~1e-290 (|W| < ~1e-145: the Gram products underflow) also goes to
//     the SVD, so that the solve near a vanishing constraint (Appell's
//     particle passing through rest) is the pseudoinverse's, as before.
// The gram_rtol test declares K rank-deficient long before the SVD would
// (its cut is rtol on the singular values of W, i.e. rtol^2 on those of K),
// so the fallback sees every case the pseudoinverse treats differently from
// the inverse, plus the ill-conditioned band between.
#pragma once

#include "cholesky.hpp"
#include "pinv.hpp"
#include "status.hpp"

namespace nholo {

// Pivots of K = A M^-1 A^T at or below this fraction of its largest diagonal
// entry send the fundamental equation to the pseudoinverse: the
// (scaled) condition number of K is then at most about 2^m 1e8 (cholesky.hpp),
// and the LDL^T (Cholesky) solve loses at most ~8 digits in that worst case against
// the SVD's ~4; typical mechanical K have condition numbers below 1e3.
constexpr double kDefaultGramRtol = 1e-8;

struct PinvOptions {
  double rtol = kDefaultPinvRtol;  // singular values below rtol * sigma_max are zero
  double atol = 0.0;               // ... and below atol
  double chol_rtol = 1e-12;        // Cholesky pivot threshold relative to max diag(M)
  double gram_rtol = kDefaultGramRtol;  // K = A M^-1 A^T by Cholesky above this
                                        // relative pivot, pseudoinverse below
};

template <class S, int n, int m>
struct FundamentalResult {
  Vec<S, n> qdd;             // constrained acceleration
  Vec<S, n> force_ideal;     // Q_i^c
  Vec<S, n> force_nonideal;  // Q_ni^c
  Vec<S, m> multiplier;      // lambda with Q_i^c = A^T lambda (minimum-norm)
  int rank;                  // numerical rank of A M^-1/2 (or of [M | A^T] - n + rank A)
  Status status;
};

namespace detail {

// W = A L^-T (m x n), row by row: row l of W is L^-1 (row l of A)^T, i.e.
// column l of W^T = L^-1 A^T (Factor: CholeskyFactor or DiagonalFactor).
// Kept as W, whose rows are contiguous, so that the products with it below
// (K = W W^T, W^T x, W c) run along its rows.
template <class Factor, class S, int m, int n>
NHOLO_HDI Mat<S, m, n> lower_solve_rows(const Factor& f, const Mat<S, m, n>& A) {
  Mat<S, m, n> W;
  for (int l = 0; l < m; ++l) {
    Vec<S, n> row;
    for (int j = 0; j < n; ++j) row[j] = A(l, j);
    row = f.solve_lower(row);
    for (int j = 0; j < n; ++j) W(l, j) = row[j];
  }
  return W;
}

// Smallest largest-diagonal of K = W W^T that the Cholesky path accepts: below
// it the Gram products have lost digits to gradual underflow (|W| below
// ~1e-145 in double), and the SVD of W, which works with W itself, decides.
template <class S>
NHOLO_HDI S gram_floor() {
  return S(sizeof(S) == sizeof(float) ? 1e-30 : 1e-290);
}

// The factor of K = A M^-1 A^T. On the host LDL^T (cholesky.hpp,
// ldlt_factor): no square roots, so the chain sqrt -> divide -> sqrt ->
// divide of the Cholesky factor no longer holds up everything after it (the
// right-hand side is latency-bound on a CPU core: docs/BENCHMARKS.md, section
// 9.7). On the device the Cholesky factor: there ptxas gave the LDL^T form of
// the rolling coin's kernels 32 more registers per thread (222 -> 254 for
// DOPRI5) and RK4 spills, and a GPU hides latency with other warps instead.
// Both apply the same pivot test (the LDL^T pivots are the Cholesky factor's
// squared diagonal), so both take the same branch; results differ by
// rounding.
#if defined(__CUDA_ARCH__)
template <class S, int m>
using GramFactor = CholeskyFactor<S, m>;
#else
template <class S, int m>
using GramFactor = LdltFactor<S, m>;
#endif

// The factor of K when K is representable (largest diagonal above
// gram_floor) and passes the relative rank test; false: use the SVD of W.
template <class S, int m>
NHOLO_HDI bool gram_factor(const Mat<S, m, m>& K, GramFactor<S, m>& kf, S gram_rtol) {
  S scale = S(0);
  for (int i = 0; i < m; ++i) scale = max_of(scale, K(i, i));
  if (!(scale > gram_floor<S>())) return false;
#if defined(__CUDA_ARCH__)
  return cholesky_factor(K, kf, gram_rtol);
#else
  return ldlt_factor(K, kf, gram_rtol);
#endif
}

// K = W W^T (m x m, both triangles; each entry the dot product of two rows
// of W, summed in order from the first product)
template <class S, int m, int n>
NHOLO_HDI Mat<S, m, m> gram(const Mat<S, m, n>& W) {
  Mat<S, m, m> K;
  for (int a = 0; a < m; ++a)
    for (int b = 0; b <= a; ++b) {
      S s = n > 0 ? W(a, 0) * W(b, 0) : S(0);
      for (int j = 1; j < n; ++j) s += W(a, j) * W(b, j);
      K(a, b) = s;
      K(b, a) = s;
    }
  return K;
}

// The fundamental equation after M = L L^T. Forces: also the constraint forces
// and multipliers (else only qdd); Nonideal: C may be nonzero (else C is not
// read and Q_ni^c = 0).
// a = M^-1 F given (udwadia_kalaba_factored below computes it; a constant
// mass and force give it once per trajectory, system.hpp). Factor: the
// CholeskyFactor of M, or its DiagonalFactor view when L is diagonal.
template <bool Forces, bool Nonideal, class Factor, class S, int n, int m>
NHOLO_HDI void udwadia_kalaba_solved(const Factor& L, const Vec<S, n>& a,
                                     const Mat<S, m, n>& A, const Vec<S, m>& b,
                                     const Vec<S, n>& C, const PinvOptions& opt,
                                     FundamentalResult<S, n, m>& r) {
  // c = L^-1 C, ac = a + M^-1 C
  Vec<S, n> c = Vec<S, n>::zero(), ac = a;
  if constexpr (Nonideal) {
    c = L.solve_lower(C);
    ac = a + L.solve_upper(c);
  }
  const Mat<S, m, n> W = lower_solve_rows(L, A);
  const Vec<S, m> resid = b - A * ac;
  GramFactor<S, m> kf;
  if (gram_factor(gram(W), kf, S(opt.gram_rtol))) {
    // full rank: qdd = ac + L^-T W^T K^-1 (b - A ac)
    const Vec<S, m> x = kf.solve(resid);
    r.qdd = ac + L.solve_upper(mul_transposed(W, x));
    r.rank = m;
    if constexpr (Forces) {
      // lambda = K^-1 (b - A a), Q_i^c = A^T lambda
      if constexpr (Nonideal) {
        r.multiplier = kf.solve(b - A * a);
        // Q_ni^c = C - A^T K^-1 (W c),  W c = A M^-1 C
        const Vec<S, m> mu = kf.solve(W * c);
        r.force_nonideal = C - mul_transposed(A, mu);
      } else {
        r.multiplier = x;
      }
      r.force_ideal = mul_transposed(A, r.multiplier);
    }
    return;
  }
  // rank-deficient (or ill-conditioned) K: W^+ (n x m) = ((W^T)^+)^T
  const Mat<S, n, m> Wt = transpose(W);
  int rank = 0;
  const Mat<S, m, n> WtP = pinv(Wt, S(opt.rtol), S(opt.atol), &rank);
  r.rank = rank;
  // y = W^+ (b - A ac),  qdd = ac + L^-T y
  r.qdd = ac + L.solve_upper(mul_transposed(WtP, resid));
  if constexpr (Forces) {
    // Q_i^c = L W^+ (b - A a)
    const Vec<S, n> yi = Nonideal ? mul_transposed(WtP, b - A * a) : mul_transposed(WtP, resid);
    // lambda = (W^+)^T W^+ (b - A a) = K^+ (b - A a)
    r.multiplier = WtP * yi;
    r.force_ideal = L.mul_lower(yi);
    // Q_ni^c = L (c - W^+ W c)
    if constexpr (Nonideal)
      r.force_nonideal = L.mul_lower(c - mul_transposed(WtP, mul_transposed(Wt, c)));
  }
}

template <bool Forces, bool Nonideal, class S, int n, int m>
NHOLO_HDI void udwadia_kalaba_factored(const CholeskyFactor<S, n>& L, const Vec<S, n>& F,
                                       const Mat<S, m, n>& A, const Vec<S, m>& b,
                                       const Vec<S, n>& C, const PinvOptions& opt,
                                       FundamentalResult<S, n, m>& r) {
  udwadia_kalaba_solved<Forces, Nonideal>(L, L.solve(F), A, b, C, opt, r);
}

}  // namespace detail

// The fundamental equation. Forces = false computes qdd (and rank, status)
// only (force_ideal, force_nonideal and multiplier are not set); Nonideal =
// false ignores C (ideal constraints).
template <bool Forces = true, bool Nonideal = true, class S, int n, int m>
NHOLO_HDI FundamentalResult<S, n, m> udwadia_kalaba(const Mat<S, n, n>& M, const Vec<S, n>& F,
                                                    const Mat<S, m, n>& A, const Vec<S, m>& b,
                                                    const Vec<S, n>& C,
                                                    const PinvOptions& opt = PinvOptions()) {
  FundamentalResult<S, n, m> r;
  r.qdd = Vec<S, n>::zero();
  if constexpr (Forces) {
    r.force_ideal = Vec<S, n>::zero();
    r.force_nonideal = Vec<S, n>::zero();
    r.multiplier = Vec<S, m>::zero();
  }
  r.rank = 0;
  // M = L L^T
  CholeskyFactor<S, n> L;
  if (!cholesky_factor(M, L, S(opt.chol_rtol))) {
    r.status = Status::singular;
    return r;
  }
  detail::udwadia_kalaba_factored<Forces, Nonideal>(L, F, A, b, C, opt, r);
  r.status = all_finite(r.qdd) ? Status::ok : Status::non_finite;
  return r;
}

// Singular-mass form (Udwadia & Wanichanon (2010) eq 2.7), with the nonideal
// force C (zero for ideal constraints):
//   qdd = [ (I - A^+ A) M ; A ]^+ [ F + C ; b ]
// the virtual displacements v (A v = 0) see the constraint force M qdd - F
// do the work of C: (I - A^+ A)(M qdd - F - C) = 0, with A qdd = b; the
// (I - A^+ A) of the right-hand side's top rows is implicit (their part
// along A^T is orthogonal to the range of the stacked matrix). Status
// singular when rank [M | A^T] < n (the motion is then not determined).
// force_nonideal = (I - A^+ A) C (the part of C the virtual displacements
// see), force_ideal = M qdd - F - force_nonideal (along the rows of A).
// Nonideal = false: C is not read (a model without a nonideal force: F + 0
// and P 0 are no IEEE identities the compiler may fold, and their registers
// spilled the general dopri5 kernel of the rolling coin).
template <bool Nonideal, class S, int n, int m>
NHOLO_HDI FundamentalResult<S, n, m> udwadia_kalaba_singular(
    const Mat<S, n, n>& M, const Vec<S, n>& F, const Mat<S, m, n>& A, const Vec<S, m>& b,
    const Vec<S, n>& C, const PinvOptions& opt = PinvOptions()) {
  FundamentalResult<S, n, m> r;
  r.qdd = Vec<S, n>::zero();
  r.force_ideal = Vec<S, n>::zero();
  r.force_nonideal = Vec<S, n>::zero();
  r.multiplier = Vec<S, m>::zero();
  // rank [M | A^T]
  Mat<S, n, n + m> MA;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) MA(i, j) = M(i, j);
    for (int l = 0; l < m; ++l) MA(i, n + l) = A(l, i);
  }
  r.rank = numerical_rank(MA, S(opt.rtol), S(opt.atol));
  if (r.rank < n) {
    r.status = Status::singular;
    return r;
  }
  // G = [ (I - A^+ A) M ; A ],  rhs = [ F ; b ]
  const Mat<S, n, m> Ap = pinv(A, S(opt.rtol), S(opt.atol));
  const Mat<S, n, n> P = Mat<S, n, n>::identity() - Ap * A;
  const Mat<S, n, n> PM = P * M;
  Mat<S, n + m, n> G;
  Vec<S, n + m> rhs;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) G(i, j) = PM(i, j);
    if constexpr (Nonideal) {
      rhs[i] = F[i] + C[i];
    } else {
      rhs[i] = F[i];
    }
  }
  for (int l = 0; l < m; ++l) {
    for (int j = 0; j < n; ++j) G(n + l, j) = A(l, j);
    rhs[n + l] = b[l];
  }
  r.qdd = pinv(G, S(opt.rtol), S(opt.atol)) * rhs;
  if constexpr (Nonideal) {
    r.force_nonideal = P * C;
    r.force_ideal = M * r.qdd - F - r.force_nonideal;
  } else {
    r.force_ideal = M * r.qdd - F;
  }
  r.status = all_finite(r.qdd) ? Status::ok : Status::non_finite;
  return r;
}

// ideal constraints (C = 0)
template <class S, int n, int m>
NHOLO_HDI FundamentalResult<S, n, m> udwadia_kalaba_singular(
    const Mat<S, n, n>& M, const Vec<S, n>& F, const Mat<S, m, n>& A, const Vec<S, m>& b,
    const PinvOptions& opt = PinvOptions()) {
  return udwadia_kalaba_singular<false>(M, F, A, b, Vec<S, n>::zero(), opt);
}

}  // namespace nholo

namespace nholo {

// M-weighted minimum-norm correction used by the drift projection:
//   delta = M^-1 A^T (A M^-1 A^T)^+ r      (the smallest delta in the M-norm
//                                            with A delta = r, or the least-
//                                            squares one when A is deficient)
// computed as L^-T W^+ r with M = L L^T, W = A L^-T (W^+ r = W^T K^-1 r by
// the factor of K (GramFactor) when K has full rank, the Jacobi SVD of W
// otherwise, as in udwadia_kalaba). Returns false when M is
// not positive definite (delta untouched).
template <class S, int n, int k>
NHOLO_HDI bool weighted_correction(const Mat<S, n, n>& M, const Mat<S, k, n>& A,
                                   const Vec<S, k>& r, Vec<S, n>& delta,
                                   const PinvOptions& opt = PinvOptions()) {
  CholeskyFactor<S, n> L;
  if (!cholesky_factor(M, L, S(opt.chol_rtol))) return false;
  const Mat<S, k, n> W = detail::lower_solve_rows(L, A);
  detail::GramFactor<S, k> kf;
  if (detail::gram_factor(detail::gram(W), kf, S(opt.gram_rtol))) {
    // full rank: W^+ r = W^T K^-1 r
    delta = L.solve_upper(mul_transposed(W, kf.solve(r)));
  } else {
    const Mat<S, k, n> WtP = pinv(transpose(W), S(opt.rtol), S(opt.atol));
    delta = L.solve_upper(mul_transposed(WtP, r));
  }
  return true;
}

}  // namespace nholo
