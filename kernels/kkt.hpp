// nholo/kernels/kkt.hpp — the saddle-point (KKT) solve shared by the
// multiplier, vakonomic and embedded formulations: the constraint rows
// [A 0 | b] of the system, its LU solve (lu.hpp) and the split of the solution.
#pragma once

#include "lu.hpp"
#include "status.hpp"

namespace nholo {

// Solves [K_top; A 0] [qdd; mu] = [rhs_top; b], of which the caller has set
// the first n rows of K (zero elsewhere) and rhs; this sets the last m rows.
// Status::singular (qdd, mu untouched) when LU finds K numerically singular,
// else qdd = x[0:n], mu = x[n:n+m] and Status::ok, or Status::non_finite
// when x is not finite.
template <class S, int n, int m>
NHOLO_HDI Status solve_kkt(Mat<S, n + m, n + m>& K, Vec<S, n + m>& rhs, const Mat<S, m, n>& A,
                           const Vec<S, m>& b, S rtol, Vec<S, n>& qdd, Vec<S, m>& mu) {
  for (int l = 0; l < m; ++l) {
    for (int j = 0; j < n; ++j) K(n + l, j) = A(l, j);
    rhs[n + l] = b[l];
  }
  Vec<S, n + m> x;
  if (!lu_solve_system(K, rhs, x, rtol)) return Status::singular;
  for (int i = 0; i < n; ++i) qdd[i] = x[i];
  for (int l = 0; l < m; ++l) mu[l] = x[n + l];
  return all_finite(x) ? Status::ok : Status::non_finite;
}

}  // namespace nholo
