// nholo/kernels/formulations/null_space.hpp — the null-space formulation,
// "null_space" (System concept of system.hpp, y = (q, qd)):
//
//   Maggi / Kane: the constraint force is eliminated by projecting the
//   equations onto the null space of A. DEPARTURE FROM THE DESIGN (see
//   docs/architecture.md, "Departures from the design"): the design
//   describes the velocity-level embedding qd = S(q) u with extra state u,
//   S^T M S ud = S^T (F - M Sdot u). A null-space basis S(q) from an
//   SVD (the only basis available generically, per thread) is not a
//   continuous function of q: its columns may rotate or flip from one state
//   to the next, so u would jump and Sdot does not exist. This is the
//   acceleration-level null-space method instead, which is basis-independent:
//     qdd = A^+ b + S z,   (S^T M S) z = S^T (F + C - M A^+ b),
//   S an orthonormal basis of null(A) and A^+ both from one Householder QR
//   of A^T when A has full row rank (pinv.hpp null_space_qr; relative test
//   |R_kk| > sqrt(gram_rtol) max |R_jj|), else from one Jacobi SVD
//   (pinv.hpp null_space), S^T M S by Cholesky. qdd does not depend on which
//   orthonormal basis the SVD returns (S (S^T M S)^-1 S^T is invariant under
//   S -> S Q). The state stays (q, qd) (n_extra = 0), the constraints may be
//   nonlinear in qd and redundant (the rank of A is found numerically, A^+
//   gives the least-squares particular solution). Outputs:
//     force_ideal = M qdd - F - C, force_nonideal = C,
//     multiplier = (A^+)^T force_ideal (the minimum-norm multipliers).
//
// Notation (M, F, A, b, C) and drift control: kernels/formulations.hpp.
#pragma once

#include "kernels/cholesky.hpp"
#include "kernels/constrained_terms.hpp"
#include "kernels/pinv.hpp"
#include "kernels/second_order_system.hpp"

namespace nholo {

// Acceleration-level null-space (Maggi / Kane) method:
//   qdd = A^+ b + S z,   (S^T M S) z = S^T (F + C - M A^+ b)
template <class Model, class S>
NHOLO_HDI Acceleration<S, Model::n, m_of<Model>> null_space_acceleration(
    const typename Model::Params& p, const Vec<S, Model::n>& q, const Vec<S, Model::n>& qd, S t,
    const EvalOptions& eo) {
  constexpr int n = Model::n;
  constexpr int m = m_of<Model>;
  ConstrainedTerms<S, n, m> w;
  constrained_terms<Model>(p, q, qd, t, eo, w);
  Acceleration<S, n, m> out;
  start_acceleration(w, out);
  // orthonormal basis of null(A) (first ns.dim columns) and A^+: Householder
  // QR of A^T when A has full row rank (the common case), the Jacobi SVD
  // otherwise (redundant or vanishing rows)
  NullSpace<S, m, n> ns;
  if constexpr (m <= n) {
    if (!null_space_qr(w.A, S(sqrt(eo.pinv.gram_rtol)), ns))
      ns = null_space(w.A, S(eo.pinv.rtol), S(eo.pinv.atol));
  } else {
    ns = null_space(w.A, S(eo.pinv.rtol), S(eo.pinv.atol));
  }
  // particular solution qp = A^+ b, residual force r = F + C - M qp
  const Vec<S, n> qp = ns.pinv * w.b;
  const Vec<S, n> r = w.F + w.C - w.M * qp;
  // reduced mass matrix S^T M S and force S^T r; the unused columns of the
  // basis are zero, their rows/columns are decoupled and padded with a unit
  // pivot of M's scale, so that a fixed-size Cholesky solves the ns.dim block
  // and returns z_i = 0 for the padding
  const Mat<S, n, n> Mred = transpose(ns.basis) * (w.M * ns.basis);
  Vec<S, n> rred = mul_transposed(ns.basis, r);
  S pad = S(0);
  for (int i = 0; i < ns.dim; ++i) pad = max_of(pad, Mred(i, i));
  if (!(pad > S(0))) pad = S(1);
  Mat<S, n, n> Mp = Mred;
  for (int i = ns.dim; i < n; ++i) {
    for (int j = 0; j < n; ++j) Mp(i, j) = Mp(j, i) = S(0);
    Mp(i, i) = pad;
    rred[i] = S(0);
  }
  Mat<S, n, n> L;
  if (!cholesky(Mp, L, S(eo.pinv.chol_rtol))) {
    out.status = Status::singular;  // M not positive definite on null(A)
    return out;
  }
  const Vec<S, n> z = cholesky_solve(L, rred);
  out.qdd = qp + ns.basis * z;
  // implied constraint force and the minimum-norm multipliers
  out.force_ideal = w.M * out.qdd - w.F - w.C;
  out.multiplier = mul_transposed(ns.pinv, out.force_ideal);
  out.status = all_finite(out.qdd) ? Status::ok : Status::non_finite;
  // A lost rank where the model says it does not: reported, as UK does
  if (out.status == Status::ok && n - ns.dim < declared_constraint_rank<Model>::value)
    out.status = Status::singular;
  return out;
}

struct NullSpaceFormulation {
  template <class Model>
  static constexpr const char* name() {
    return "null_space";
  }
  template <class Model, class S>
  NHOLO_HDI static Acceleration<S, Model::n, m_of<Model>> acceleration(
      const typename Model::Params& p, const Vec<S, Model::n>& q, const Vec<S, Model::n>& qd, S t,
      const EvalOptions& eo) {
    return null_space_acceleration<Model, S>(p, q, qd, t, eo);
  }
};

template <class Model, class S = double>
using NullSpaceSystem = SecondOrderSystem<Model, S, NullSpaceFormulation>;

}  // namespace nholo
