// nholo/kernels/constrained_terms.hpp — everything a formulation needs from
// the model at (t, q, qd): the unconstrained M qdd = F, the constraints
// differentiated to A qdd = b (with the Baumgarte correction), Udwadia's
// nonideal vector C and the constraint residuals.
#pragma once

#include "dynamics.hpp"
#include "system.hpp"

namespace nholo {

// Everything a formulation needs from the model at (t, q, qd):
//   M, F      unconstrained M qdd = F (F includes Q_np)     (n x n, n)
//   A, b      constraints differentiated to A qdd = b, with the Baumgarte
//             correction of b when eval.drift = baumgarte   (m x n, m)
//   C         Udwadia's nonideal vector                     (n)
//   residual, velocity_residual   as in constraint_terms     (m, m)
template <class S, int n, int m>
struct ConstrainedTerms {
  Mat<S, n, n> M;
  Vec<S, n> F;
  Mat<S, m, n> A;
  Vec<S, m> b;
  Vec<S, n> C;
  Vec<S, m> residual;
  Vec<S, m> velocity_residual;
};

// A, b (with the Baumgarte correction when eval.drift = baumgarte) and the
// residuals of ConstrainedTerms; M, F, C untouched.
template <class Model, class S>
NHOLO_HDI void constraint_rows(const typename Model::Params& p, const Vec<S, Model::n>& q,
                               const Vec<S, Model::n>& qd, S t, const EvalOptions& eo,
                               ConstrainedTerms<S, Model::n, m_of<Model>>& w) {
  // constraints: A qdd = b, with residuals for drift monitoring / correction
  constraint_terms<Model>(p, q, qd, t, w.A, w.b, &w.residual, &w.velocity_residual);
  if (eo.drift == DriftControl::baumgarte) {
    for (int l = 0; l < Model::m_position; ++l)
      w.b[l] -= S(2.0 * eo.baumgarte_alpha) * w.velocity_residual[l] +
                S(eo.baumgarte_beta * eo.baumgarte_beta) * w.residual[l];
    for (int l = Model::m_position; l < Model::m_position + Model::m_velocity; ++l)
      w.b[l] -= S(eo.baumgarte_alpha) * w.residual[l];
  }
}

template <class Model, class S>
NHOLO_HDI void constrained_terms(const typename Model::Params& p, const Vec<S, Model::n>& q,
                                 const Vec<S, Model::n>& qd, S t, const EvalOptions& eo,
                                 ConstrainedTerms<S, Model::n, m_of<Model>>& w) {
  // unconstrained system: M qdd = F
  lagrangian_terms<Model>(p, q, qd, t, w.M, w.F);
  constraint_rows<Model>(p, q, qd, t, eo, w);
  // nonideal constraint forces
  w.C = nonideal_terms<Model>(p, q, qd, t);
}

// out before a formulation's solve: qdd, force_ideal and the multipliers
// zero, force_applied = F, force_nonideal = C, the residuals of w, not the
// singular-mass form
template <class S, int n, int m>
NHOLO_HDI void start_acceleration(const ConstrainedTerms<S, n, m>& w, Acceleration<S, n, m>& out) {
  out.qdd = Vec<S, n>::zero();
  out.force_applied = w.F;
  out.force_ideal = Vec<S, n>::zero();
  out.force_nonideal = w.C;
  out.multiplier = Vec<S, m>::zero();
  out.residual = w.residual;
  out.velocity_residual = w.velocity_residual;
  out.singular_mass = false;
}

}  // namespace nholo
