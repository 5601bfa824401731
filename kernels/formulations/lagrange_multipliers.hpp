// nholo/kernels/formulations/lagrange_multipliers.hpp — the Lagrange
// multiplier formulation, "lagrange_multiplier" (System concept of
// system.hpp, y = (q, qd)):
//
//   Chetaev / d'Alembert–Lagrange with multipliers (Flannery (2011) eq 3.16,
//   Lemos (2022) eq 8), the nonideal C added to the impressed force:
//     [ M  -A^T ] [ qdd    ]   [ F + C ]
//     [ A   0   ] [ lambda ] = [ b     ]
//   solved by LU with partial pivoting (lu.hpp). A singular saddle-point
//   matrix (redundant constraints, A not of full row rank, or M singular on
//   null(A)) gives Status::singular, never NaN. Outputs:
//     force_ideal = A^T lambda (= M qdd - F - C), force_nonideal = C,
//     multiplier = lambda.
//
// Notation (M, F, A, b, C) and drift control: kernels/formulations.hpp.
#pragma once

#include "kernels/constrained_terms.hpp"
#include "kernels/kkt.hpp"
#include "kernels/second_order_system.hpp"

namespace nholo {

// Chetaev / d'Alembert–Lagrange multipliers:
//   [M -A^T; A 0] [qdd; lambda] = [F + C; b]
template <class Model, class S>
NHOLO_HDI Acceleration<S, Model::n, m_of<Model>> lagrange_multiplier_acceleration(
    const typename Model::Params& p, const Vec<S, Model::n>& q, const Vec<S, Model::n>& qd, S t,
    const EvalOptions& eo) {
  constexpr int n = Model::n;
  constexpr int m = m_of<Model>;
  ConstrainedTerms<S, n, m> w;
  constrained_terms<Model>(p, q, qd, t, eo, w);
  Acceleration<S, n, m> out;
  start_acceleration(w, out);
  // saddle-point (KKT) system
  Mat<S, n + m, n + m> K = Mat<S, n + m, n + m>::zero();
  Vec<S, n + m> rhs;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) K(i, j) = w.M(i, j);
    for (int l = 0; l < m; ++l) K(i, n + l) = -w.A(l, i);
    rhs[i] = w.F[i] + w.C[i];
  }
  const Status st = solve_kkt(K, rhs, w.A, w.b, S(eo.lu_rtol), out.qdd, out.multiplier);
  if (st == Status::singular) {
    out.status = st;
    return out;
  }
  // Q_i = A^T lambda (= M qdd - F - C)
  out.force_ideal = mul_transposed(w.A, out.multiplier);
  out.status = st;
  return out;
}

struct LagrangeMultiplierFormulation {
  template <class Model>
  static constexpr const char* name() {
    return "lagrange_multiplier";
  }
  template <class Model, class S>
  NHOLO_HDI static Acceleration<S, Model::n, m_of<Model>> acceleration(
      const typename Model::Params& p, const Vec<S, Model::n>& q, const Vec<S, Model::n>& qd, S t,
      const EvalOptions& eo) {
    return lagrange_multiplier_acceleration<Model, S>(p, q, qd, t, eo);
  }
};

template <class Model, class S = double>
using LagrangeMultiplierSystem = SecondOrderSystem<Model, S, LagrangeMultiplierFormulation>;

}  // namespace nholo
