// nholo/kernels/formulations/vakonomic.hpp — vakonomic mechanics,
// "vakonomic" (System concept of system.hpp, y = (q, qd, lambda), n_extra = m):
//
//   Vakonomic mechanics (docs/physics.md, section 3; Lemos (2022) eq 17;
//   Flannery (2011) eq 6.9):
//   the Euler–Lagrange equations of L_lambda = L + lambda . g with lambda as
//   extra coordinates,
//     (M + sum_l lambda_l d2g_l/dqd2) qdd + A^T lambdadot
//         = F + C + sum_l lambda_l (dg_l/dq - (d2g_l/dqd dq) qd - d2g_l/dqd dt),
//     A qdd = b,
//   solved for (qdd, lambdadot) by LU with partial pivoting (lu.hpp;
//   singular -> Status::singular), as the multiplier formulation.
//   Sign convention: exactly Lemos (2022) eq 17 (multipliers enter as
//   + lambda . g); for the rolling coin it reproduces Lemos (2022) eqs 41-44
//   term by term (m xdd = -lambdadot_1, m ydd = m g sin(alpha) - lambdadot_2,
//   ...), so no flip was needed, and Lemos' level-plane choice lambda_1(0) = -m xd(0),
//   lambda_2(0) = -m yd(0) reproduces the nonholonomic motion
//   (tests/test_formulation_trajectories.cpp). All derivatives of g (d2g/dqd2 for
//   constraints nonlinear in qd such as Appell's, d2g/dqd dq, d2g/dqd dt) come
//   from nested forward AD of lambda . g (vakonomic_constraint_terms), in the
//   same way as M and F come from L (dynamics.hpp).
//   Position constraints phi(q, t) = 0 enter through their velocity form
//   g = phidot = J(q, t) qd + phi_t (one more forward derivative of phi); for
//   them the lambda terms cancel (Lemos (2022) eq 20) and the vakonomic motion is
//   the nonholonomic one with lambdadot = -(Lagrange multiplier).
//   Acceleration-level constraints have no vakonomic form: a model with
//   m_acceleration > 0 is rejected at compile time.
//   The nonideal C, where a model has one, is added to the impressed force
//   (the vakonomic principle has no notion of it). The initial multipliers
//   are inputs (pack's lambda0). Outputs: force_ideal = M qdd - F - C (the
//   vakonomic constraint force, Lemos (2022) eq 22), force_nonideal = C,
//   multiplier = lambda (the state), qdd.
//
// Notation (M, F, A, b, C) and drift control: kernels/formulations.hpp (the
// projection never moves the multipliers).
#pragma once

#include "kernels/constrained_terms.hpp"
#include "kernels/drift_projection.hpp"
#include "kernels/dual.hpp"
#include "kernels/kkt.hpp"
#include "kernels/system.hpp"

namespace nholo {

// g(q, qd, t) of every position and velocity constraint row, for any scalar
// or AD type T: position rows by their velocity form phidot = J qd + phi_t (a
// forward derivative of phi along (qd, 1) in (q, t)), velocity rows as given.
template <class Model, class T>
NHOLO_HDI Vec<T, Model::m_position + Model::m_velocity> velocity_form_constraints(
    const typename Model::Params& p, const Vec<T, Model::n>& q, const Vec<T, Model::n>& qd,
    const T& t) {
  constexpr int n = Model::n;
  constexpr int mp = Model::m_position;
  constexpr int mv = Model::m_velocity;
  Vec<T, mp + mv> g;
  if constexpr (mp > 0) {
    using D = Dual<T, 1>;
    Vec<D, n> qa;
    for (int i = 0; i < n; ++i) {
      seed(qa[i], q[i], 0, qd[i]);
    }
    D ta;
    seed(ta, t, 0, T(1));
    const Vec<D, mp> phi = Model::position_constraints(p, qa, ta);
    for (int l = 0; l < mp; ++l) g[l] = phi[l].d[0];
  }
  if constexpr (mv > 0) {
    const Vec<T, mv> gv = Model::velocity_constraints(p, q, qd, t);
    for (int l = 0; l < mv; ++l) g[mp + l] = gv[l];
  }
  return g;
}

// The multiplier terms of the vakonomic equations, by forward AD of
// G = lambda . g(q, qd, t):
//   Mg = d2G/dqd2 = sum_l lambda_l d2g_l/dqd2                       (n x n)
//   Fg = dG/dq - (d2G/dqd dq) qd - d2G/dqd dt
//      = sum_l lambda_l (dg_l/dq - (d2g_l/dqd dq) qd - d2g_l/dqd dt)  (n)
// in two passes (cheaper than one pass seeded in all of (q, qd)):
//   1. D2 = Dual<Dual<S,n>, n+1>: inner tangents qd_i, outer tangents qd_j
//      (j < n) and the direction v = (qd, 0, 1) in (q, qd, t)-space;
//      (outer j).d[i] = d2G/dqd_j dqd_i, (outer n).d[i] = D_v dG/dqd_i;
//   2. Dual<S,n> seeded in q: dG/dq_i.
template <class Model, class S>
NHOLO_HDI void vakonomic_constraint_terms(const typename Model::Params& p,
                                          const Vec<S, m_of<Model>>& lambda,
                                          const Vec<S, Model::n>& q, const Vec<S, Model::n>& qd,
                                          S t, Mat<S, Model::n, Model::n>& Mg,
                                          Vec<S, Model::n>& Fg) {
  constexpr int n = Model::n;
  constexpr int mg = Model::m_position + Model::m_velocity;
  {
    using D1 = Dual<S, n>;
    using D2 = Dual<D1, n + 1>;
    Vec<D2, n> qa, qda;
    D2 ta;
    detail::seed_rate_hessian(q, qd, t, qa, qda, ta);
    const Vec<D2, mg> g = velocity_form_constraints<Model>(p, qa, qda, ta);
    D2 G = D2(D1(S(0)));
    for (int l = 0; l < mg; ++l) G += D2(D1(lambda[l])) * g[l];
    detail::rate_hessian_terms(G, Mg, Fg);
  }
  {
    using D = Dual<S, n>;
    Vec<D, n> qa, qda;
    detail::seed_positions(q, qd, qa, qda);
    const Vec<D, mg> g = velocity_form_constraints<Model>(p, qa, qda, D(t));
    D G = D(S(0));
    for (int l = 0; l < mg; ++l) G += D(lambda[l]) * g[l];
    for (int i = 0; i < n; ++i) Fg[i] += G.d[i];
  }
}

template <class S, int n, int m>
struct VakonomicAcceleration : Acceleration<S, n, m> {
  Vec<S, m> lambdadot;  // d lambda / dt
};

// (M + Mg) qdd + A^T lambdadot = F + C + Fg,  A qdd = b
template <class Model, class S>
NHOLO_HDI VakonomicAcceleration<S, Model::n, m_of<Model>> vakonomic_acceleration(
    const typename Model::Params& p, const Vec<S, Model::n>& q, const Vec<S, Model::n>& qd,
    const Vec<S, m_of<Model>>& lambda, S t, const EvalOptions& eo) {
  constexpr int n = Model::n;
  constexpr int m = m_of<Model>;
  static_assert(Model::m_acceleration == 0,
                "the vakonomic formulation needs position or velocity constraints");
  ConstrainedTerms<S, n, m> w;
  constrained_terms<Model>(p, q, qd, t, eo, w);
  Mat<S, n, n> Mg;
  Vec<S, n> Fg;
  vakonomic_constraint_terms<Model>(p, lambda, q, qd, t, Mg, Fg);
  VakonomicAcceleration<S, n, m> out;
  start_acceleration(w, out);
  out.lambdadot = Vec<S, m>::zero();
  out.multiplier = lambda;
  // [M + Mg  A^T; A 0] [qdd; lambdadot] = [F + C + Fg; b]
  Mat<S, n + m, n + m> K = Mat<S, n + m, n + m>::zero();
  Vec<S, n + m> rhs;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) K(i, j) = w.M(i, j) + Mg(i, j);
    for (int l = 0; l < m; ++l) K(i, n + l) = w.A(l, i);
    rhs[i] = w.F[i] + w.C[i] + Fg[i];
  }
  const Status st = solve_kkt(K, rhs, w.A, w.b, S(eo.lu_rtol), out.qdd, out.lambdadot);
  if (st == Status::singular) {
    out.status = st;
    return out;
  }
  // the vakonomic constraint force (Lemos (2022) eq 22): M qdd - F - C
  out.force_ideal = w.M * out.qdd - w.F - w.C;
  out.status = st;
  return out;
}

// A model under vakonomic mechanics as y' = f(t, y), y = (q, qd, lambda).
template <class Model, class S = double>
struct VakonomicSystem {
  using model_type = Model;
  using scalar = S;
  using Params = typename Model::Params;
  static constexpr int n = Model::n;
  static constexpr int m = m_of<Model>;
  static constexpr int n_extra = m;
  static constexpr int N = 2 * n + m;
  static constexpr const char* formulation_name = "vakonomic";
  static_assert(Model::m_acceleration == 0,
                "the vakonomic formulation needs position or velocity constraints");

  Params params;
  EvalOptions eval;

  NHOLO_HDI VakonomicAcceleration<S, n, m> acceleration(S t, const Vec<S, N>& y) const {
    Vec<S, n> q, qd;
    split(y, q, qd);
    return vakonomic_acceleration<Model, S>(params, q, qd, multipliers(y), t, eval);
  }

  // y' = (qd, qdd, lambdadot)
  NHOLO_HD NHOLO_RHS_NOINLINE Status operator()(S t, const Vec<S, N>& y, Vec<S, N>& dydt) const {
    const auto acc = acceleration(t, y);
    store_rates(y, acc.qdd, acc.lambdadot, dydt);
    if (acc.status != Status::ok) return acc.status;
    return all_finite(dydt) ? Status::ok : Status::non_finite;
  }

  // (q, qd) projected onto the constraint manifold (drift = project); lambda
  // is left as it is
  NHOLO_HDI bool post_step(S t, Vec<S, N>& y) const {
    if (eval.drift != DriftControl::project) return false;
    return project_state_onto_constraints<Model>(params, eval, t, y);
  }

  NHOLO_HDI void observe(S t, const Vec<S, N>& y, Observation<S, n, m>& obs) const {
    Vec<S, n> q, qd;
    split(y, q, qd);
    const auto acc = acceleration(t, y);
    observe_acceleration(acc, obs);
    obs.constraint_residual =
        constraint_residual_norm<Model, S>(acc.residual, acc.velocity_residual);
    obs.energy = model_energy<Model, S>(params, q, qd, t);
  }

  // y = (q, qd, lambda0)
  NHOLO_HDI void pack(const Vec<S, n>& q, const Vec<S, n>& qd, const Vec<S, m>& lambda0,
                      Vec<S, N>& y) const {
    store_state(q, qd, lambda0, y);
  }

  NHOLO_HDI static void split(const Vec<S, N>& y, Vec<S, n>& q, Vec<S, n>& qd) {
    split_state(y, q, qd);
  }

  NHOLO_HDI static Vec<S, m> multipliers(const Vec<S, N>& y) {
    Vec<S, m> lambda = Vec<S, m>::zero();
    for (int l = 0; l < m; ++l) lambda[l] = y[2 * n + l];
    return lambda;
  }
};

}  // namespace nholo
