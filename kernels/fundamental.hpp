// nholo/kernels/fundamental.hpp — the Udwadia–Kalaba fundamental equation,
// ideal and nonideal, and its singular-mass form (docs/physics.md, section 1).
//
//   qdd = a + M^-1 C + M^-1 A^T K^+ (b - A (a + M^-1 C)),  a = M^-1 F,  K = A M^-1 A^T
//   Q_i^c  = A^T K^+ (b - A a)                     (ideal constraint force)
//   Q_ni^c = (I - A^T K^+ A M^-1) C                (nonideal constraint force)
//   M qdd = F + Q_i^c + Q_ni^c
//
// Evaluated without squaring condition numbers and without M^1/2: with the
// Cholesky factor M = L L^T and W = A L^-T (so K = W W^T),
//   A^T K^+ r = L W^+ r,      K^+ r = (W^+)^T W^+ r  (the multipliers),
// i.e. Udwadia (2005) eq (24)/(26) with M^1/2 replaced by L. W^+ comes from the
// one-sided Jacobi SVD of pinv.hpp, so rank-deficient A (redundant
// constraints, Appell's A = 0 at rest) gives the Moore–Penrose answer.
//
// Singular M (Udwadia & Wanichanon (2010) eq 2.7), valid when rank [M | A^T] = n:
//   qdd = [ (I - A^+ A) M ; A ]^+ [ F ; b ]
//
//   FundamentalResult<S,n,m> r = udwadia_kalaba(M, F, A, b, C, opts);
//   r.status: ok, or singular (M not positive definite; use the singular form)
#pragma once

#include "cholesky.hpp"
#include "pinv.hpp"
#include "status.hpp"

namespace nholo {

struct PinvOptions {
  double rtol = kDefaultPinvRtol;  // singular values below rtol * sigma_max are zero
  double atol = 0.0;               // ... and below atol
  double chol_rtol = 1e-12;        // Cholesky pivot threshold relative to max diag(M)
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

template <class S, int n, int m>
NHOLO_HDI FundamentalResult<S, n, m> udwadia_kalaba(const Mat<S, n, n>& M, const Vec<S, n>& F,
                                                    const Mat<S, m, n>& A, const Vec<S, m>& b,
                                                    const Vec<S, n>& C,
                                                    const PinvOptions& opt = PinvOptions()) {
  FundamentalResult<S, n, m> r;
  r.qdd = Vec<S, n>::zero();
  r.force_ideal = Vec<S, n>::zero();
  r.force_nonideal = Vec<S, n>::zero();
  r.multiplier = Vec<S, m>::zero();
  r.rank = 0;
  // M = L L^T
  Mat<S, n, n> L;
  if (!cholesky(M, L, S(opt.chol_rtol))) {
    r.status = Status::singular;
    return r;
  }
  // a = M^-1 F, c = L^-1 C, ac = a + M^-1 C
  const Vec<S, n> a = cholesky_solve(L, F);
  const Vec<S, n> c = solve_lower(L, C);
  const Vec<S, n> ac = a + solve_lower_transposed(L, c);
  // W^T = L^-1 A^T, column by column
  Mat<S, n, m> Wt;
  for (int l = 0; l < m; ++l) {
    Vec<S, n> col;
    for (int j = 0; j < n; ++j) col[j] = A(l, j);
    col = solve_lower(L, col);
    for (int j = 0; j < n; ++j) Wt(j, l) = col[j];
  }
  // W^+ (n x m) = ((W^T)^+)^T
  int rank = 0;
  const Mat<S, m, n> WtP = pinv(Wt, S(opt.rtol), S(opt.atol), &rank);
  r.rank = rank;
  // y = W^+ (b - A ac),  qdd = ac + L^-T y
  const Vec<S, m> resid = b - A * ac;
  const Vec<S, n> y = mul_transposed(WtP, resid);
  r.qdd = ac + solve_lower_transposed(L, y);
  // Q_i^c = L W^+ (b - A a)
  const Vec<S, m> resid_ideal = b - A * a;
  const Vec<S, n> yi = mul_transposed(WtP, resid_ideal);
  // lambda = (W^+)^T W^+ (b - A a) = K^+ (b - A a)
  r.multiplier = WtP * yi;
  // Q_ni^c = L (c - W^+ W c)
  const Vec<S, m> Wc = mul_transposed(Wt, c);
  const Vec<S, n> pc = c - mul_transposed(WtP, Wc);
  for (int i = 0; i < n; ++i) {
    S si = S(0), sn = S(0);
    for (int k = 0; k <= i; ++k) {
      si += L(i, k) * yi[k];
      sn += L(i, k) * pc[k];
    }
    r.force_ideal[i] = si;
    r.force_nonideal[i] = sn;
  }
  r.status = all_finite(r.qdd) ? Status::ok : Status::non_finite;
  return r;
}

// Singular-mass form (Udwadia & Wanichanon (2010) eq 2.7), ideal constraints:
//   qdd = [ (I - A^+ A) M ; A ]^+ [ F ; b ]
// status singular when rank [M | A^T] < n (the motion is then not determined).
// force_ideal = M qdd - F (the constraint force that the formulation implies).
template <class S, int n, int m>
NHOLO_HDI FundamentalResult<S, n, m> udwadia_kalaba_singular(const Mat<S, n, n>& M,
                                                             const Vec<S, n>& F,
                                                             const Mat<S, m, n>& A,
                                                             const Vec<S, m>& b,
                                                             const PinvOptions& opt = PinvOptions()) {
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
    rhs[i] = F[i];
  }
  for (int l = 0; l < m; ++l) {
    for (int j = 0; j < n; ++j) G(n + l, j) = A(l, j);
    rhs[n + l] = b[l];
  }
  r.qdd = pinv(G, S(opt.rtol), S(opt.atol)) * rhs;
  r.force_ideal = M * r.qdd - F;
  r.status = all_finite(r.qdd) ? Status::ok : Status::non_finite;
  return r;
}

}  // namespace nholo

namespace nholo {

// M-weighted minimum-norm correction used by the drift projection:
//   delta = M^-1 A^T (A M^-1 A^T)^+ r      (the smallest delta in the M-norm
//                                            with A delta = r, or the least-
//                                            squares one when A is deficient)
// computed as L^-T W^+ r with M = L L^T, W = A L^-T. Returns false when M is
// not positive definite (delta untouched).
template <class S, int n, int k>
NHOLO_HDI bool weighted_correction(const Mat<S, n, n>& M, const Mat<S, k, n>& A,
                                   const Vec<S, k>& r, Vec<S, n>& delta,
                                   const PinvOptions& opt = PinvOptions()) {
  Mat<S, n, n> L;
  if (!cholesky(M, L, S(opt.chol_rtol))) return false;
  Mat<S, n, k> Wt;
  for (int l = 0; l < k; ++l) {
    Vec<S, n> col;
    for (int j = 0; j < n; ++j) col[j] = A(l, j);
    col = solve_lower(L, col);
    for (int j = 0; j < n; ++j) Wt(j, l) = col[j];
  }
  const Mat<S, k, n> WtP = pinv(Wt, S(opt.rtol), S(opt.atol));
  delta = solve_lower_transposed(L, mul_transposed(WtP, r));
  return true;
}

}  // namespace nholo
