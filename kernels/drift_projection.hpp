// nholo/kernels/drift_projection.hpp — the drift projection (eval.drift =
// project) after an accepted step: (q, qd) onto the constraint manifold,
// minimal in the M-norm. Shared by every formulation; the vakonomic and
// embedded ones leave the rest of their state alone.
#pragma once

#include "dynamics.hpp"
#include "fundamental.hpp"
#include "system.hpp"

namespace nholo {

namespace detail {
// The terms of one Newton iteration of the projection at (q, qd): M, the
// first r rows of A as J (the position constraints' Jacobian, or the
// velocity-level rows' one) and their residuals as g. Shared by
// project_rows and its lanes (kernels/lane_system.hpp).
template <class Model, int r, bool Velocity, class S>
NHOLO_HDI void projection_terms(const typename Model::Params& params, S t,
                                const Vec<S, Model::n>& q, const Vec<S, Model::n>& qd,
                                Mat<S, Model::n, Model::n>& M, Mat<S, r, Model::n>& J,
                                Vec<S, r>& g) {
  constexpr int n = Model::n;
  constexpr int m = m_of<Model>;
  Vec<S, n> F;
  Mat<S, m, n> A;
  Vec<S, m> b, res;
  lagrangian_terms<Model>(params, q, qd, t, M, F);
  constraint_terms<Model, S>(params, q, qd, t, A, b, Velocity ? nullptr : &res,
                             Velocity ? &res : nullptr);
  for (int l = 0; l < r; ++l) {
    g[l] = res[l];
    for (int j = 0; j < n; ++j) J(l, j) = A(l, j);
  }
}

// Newton iterations of the M-norm-minimal correction that drives the first
// r constraint residuals to zero: the position ones phi by moving q
// (Velocity = false), or the velocity ones (phidot, g) by moving qd
// (Velocity = true). Returns true if q or qd moved.
template <class Model, int r, bool Velocity, class S>
NHOLO_HDI bool project_rows(const typename Model::Params& params, const EvalOptions& eval, S t,
                            Vec<S, Model::n>& q, Vec<S, Model::n>& qd) {
  constexpr int n = Model::n;
  bool moved = false;
  for (int it = 0; it < eval.project_iterations; ++it) {
    Mat<S, n, n> M;
    Mat<S, r, n> J;
    Vec<S, r> g;
    projection_terms<Model, r, Velocity>(params, t, q, qd, M, J, g);
    if (!(norm_inf(g) > S(eval.project_tol))) break;
    Vec<S, n> dx;
    if (!weighted_correction(M, J, g, dx, eval.pinv)) break;
    if constexpr (Velocity) {
      qd -= dx;
    } else {
      q -= dx;
    }
    moved = true;
  }
  return moved;
}
}  // namespace detail

// Projection onto the constraint manifold (drift = project): positions onto
// phi = 0, then velocities onto phidot = 0 and g = 0, each step minimal in
// the M-norm (Newton iterations for nonlinear constraints). Returns true if
// q or qd moved. Shared by every formulation (the vakonomic one leaves its
// multipliers alone).
template <class Model, class S>
NHOLO_HDI bool project_onto_constraints(const typename Model::Params& params,
                                        const EvalOptions& eval, S t, Vec<S, Model::n>& q,
                                        Vec<S, Model::n>& qd) {
  constexpr int mp = Model::m_position;
  constexpr int mpv = Model::m_position + Model::m_velocity;
  if (eval.drift != DriftControl::project) return false;
  if constexpr (mpv == 0) {
    return false;
  } else {
    bool moved = false;
    if constexpr (mp > 0) moved = detail::project_rows<Model, mp, false>(params, eval, t, q, qd);
    if (detail::project_rows<Model, mpv, true>(params, eval, t, q, qd)) moved = true;
    return moved;
  }
}

// project_onto_constraints on the (q, qd) part of a state y = (q, qd, ...),
// under the constraints of ConstraintModel (the model, or the model with
// other constraints: EmbeddedConstraintModel); returns true if q or qd moved.
template <class ConstraintModel, class S, int N>
NHOLO_HDI bool project_state_onto_constraints(const typename ConstraintModel::Params& params,
                                              const EvalOptions& eval, S t, Vec<S, N>& y) {
  constexpr int n = ConstraintModel::n;
  Vec<S, n> q, qd;
  split_state(y, q, qd);
  const bool moved = project_onto_constraints<ConstraintModel, S>(params, eval, t, q, qd);
  store_state(q, qd, y);
  return moved;
}

}  // namespace nholo
