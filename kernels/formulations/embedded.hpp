// nholo/kernels/formulations/embedded.hpp — Wang & Gao's embedded constraints
// q_dep = phi(q_ind, qd_ind, t) ("Hamilton's principle with constraints
// embedded in the Lagrangian", eqs 20-26), integrated as a regular first-order
// system, and the independent check that a path solves their Euler–Poisson
// equations (26). docs/formulations.md, "Embedded constraints", derives and
// justifies everything below.
//
// Model part (optional; detected by has_embedded_constraints):
//   Model::m_embedded                       k, the number of embedded constraints;
//                                           must equal the model's constraint count
//                                           (the k rows replace its m rows: lambda0
//                                           row l is ell0 of embedded constraint l)
//   Model::embedded_coordinate(l)           index of q_dep of constraint l < k
//   Model::embedded_period(l)               the residual q_dep - phi is taken modulo
//                                           this (2 pi for an angle), 0: not periodic
//                                           (both NHOLO_HDI constexpr functions: a
//                                           static array is not visible on the device)
//   Model::embedded_constraints(p, q, qd, t) -> Vec<S,k>   phi; reads only the
//                                           independent coordinates and their rates
//
// Substituting the constraints gives Theta(q_ind, qd_ind, qdd_ind, t) (eq 21);
// eq (26) is  E_j = dTheta/dq_j - d/dt dTheta/dqd_j + d2/dt2 dTheta/dqdd_j = 0
// for the independent j. Its leading matrix d2Theta/dqdd2 is singular (rank 1
// for the sleigh), so it is integrated in the equivalent regular form
//
//   the Euler–Lagrange equations of  L_ell = L + ell . (q_dep - phi(q_ind, qd_ind, t)),
//   state y = (q, qd, ell): with g = q_dep - phi, A = dg/dqd, A qdd = b its
//   derivative, Mg = ell . d2g/dqd2, Fg = ell . (dg/dq - (d2g/dqd dq) qd - d2g/dqd dt),
//       [ M + Mg  A^T ] [ qdd  ]   [ F + Fg ]
//       [ A       0   ] [ elld ] = [ b      ]
//   ((n + k) x (n + k) LU, one per right-hand side). Its dependent rows say
//   ell = eps_dep(L) (Wang & Gao's eps_i(L) = d/dt dL/dqd_i - dL/dq_i); on
//   g = 0 the independent rows are exactly -E_j. Same equations as the
//   vakonomic ones (vakonomic.hpp) for the velocity constraint g, written
//   here for any scalar (AD types included) so that the flow can be
//   differentiated in time.
//
// EmbeddedSystem<Model> ("embedded", System concept of system.hpp):
//   y = (q, qd, z, chart, r), N = 2n + k + 2. chart 0: the embedded chart,
//   z = ell, the equations above; chart 1: the rest chart, z = lambda, the
//   vakonomic equations of the model's own constraints, in which the motion
//   passes the states where phi has no derivative (the sleigh at rest);
//   ell = D^T lambda (formulations/embedded_rest_chart.hpp says which chart
//   and why; the switch is made after a step, chart' = 0). r is the running
//   maximum over the accepted steps in the embedded chart of the relative
//   Euler–Poisson residual (euler_poisson_residual at the state, q''' and
//   q'''' from the flow's Taylor coefficients; r' = 0); path_residual_index
//   = N - 1 (per-trajectory result of a run).
//   Status::singular where, in the embedded chart, phi's derivatives are not
//   finite (a start at rest), where the KKT matrix is singular, or where
//   |q_dep - phi| (modulo the period) exceeds residual_limit: the path left
//   the constraint's branch (a model whose period does not join the
//   branches on either side of rest: the sleigh's is pi, Wang & Gao's
//   theta = arctan(yd / xd)).
//
// The Euler–Poisson check itself (flow_derivatives, euler_poisson_residual,
// path_euler_poisson_residual) is in kernels/euler_poisson.hpp.
#pragma once

#include <type_traits>

#include "kernels/drift_projection.hpp"
#include "kernels/dynamics.hpp"
#include "kernels/euler_poisson.hpp"
#include "kernels/formulations/embedded_rest_chart.hpp"
#include "kernels/formulations/lagrange_multipliers.hpp"
#include "kernels/formulations/vakonomic.hpp"
#include "kernels/lu.hpp"
#include "kernels/system.hpp"

namespace nholo {

// has_embedded_constraints<Model>: Model::m_embedded > 0 (a model derived
// from one with embedded constraints hides them with m_embedded = 0)
template <class Model, class = void>
struct has_embedded_constraints : std::false_type {};
template <class Model>
struct has_embedded_constraints<Model, std::void_t<decltype(Model::m_embedded)>>
    : std::integral_constant<bool, (Model::m_embedded > 0)> {};

// The model with its embedded constraints g = q_dep - phi(q_ind, qd_ind, t)
// as its only (velocity-level) constraints; the residual g is reduced modulo
// the period (a constant shift, derivatives untouched).
template <class Model>
struct EmbeddedConstraintModel : Model {
  static constexpr int k = Model::m_embedded;
  static constexpr int m_position = 0;
  static constexpr int m_velocity = k;
  static constexpr int m_acceleration = 0;
  template <class S>
  NHOLO_HDI static Vec<S, k> velocity_constraints(const typename Model::Params& p,
                                                  const Vec<S, Model::n>& q,
                                                  const Vec<S, Model::n>& qd, const S& t) {
    const Vec<S, k> phi = Model::embedded_constraints(p, q, qd, t);
    Vec<S, k> g;
    for (int l = 0; l < k; ++l) {
      g[l] = q[Model::embedded_coordinate(l)] - phi[l];
      g[l] -= embedded_period_multiple<Model>(l, static_cast<double>(value_of(g[l])));
    }
    return g;
  }
  // Udwadia's nonideal forces have no place in a variational principle
  static void nonideal_force() = delete;
};

template <class S, int n, int m>
struct EmbeddedAcceleration : Acceleration<S, n, m> {
  Vec<S, m> elldot;  // d ell / dt
};

// qdd and elld at (q, qd, ell, t); see the top of this file
template <class Model, class S>
NHOLO_HDI EmbeddedAcceleration<S, Model::n, Model::m_embedded> embedded_acceleration(
    const typename Model::Params& p, const Vec<S, Model::n>& q, const Vec<S, Model::n>& qd,
    const Vec<S, Model::m_embedded>& ell, S t, const EvalOptions& eo, double residual_limit) {
  constexpr int n = Model::n;
  constexpr int k = Model::m_embedded;
  using E = EmbeddedConstraintModel<Model>;
  EmbeddedAcceleration<S, n, k> out;
  out.qdd = Vec<S, n>::zero();
  out.elldot = Vec<S, k>::zero();
  out.force_ideal = Vec<S, n>::zero();
  out.force_nonideal = Vec<S, n>::zero();
  out.multiplier = ell;
  out.singular_mass = false;
  Mat<S, n, n> M;
  Vec<S, n> F;
  lagrangian_terms<Model>(p, q, qd, t, M, F);
  out.force_applied = F;
  Mat<S, k, n> A;
  Vec<S, k> b;
  constraint_terms<E, S>(p, q, qd, t, A, b, &out.residual, &out.velocity_residual);
  // phi not differentiable here (the sleigh at rest), or the path is no
  // longer on the constraint's branch: the embedded motion does not exist
  bool regular = all_finite(b);
  for (int l = 0; l < k; ++l) {
    for (int j = 0; j < n; ++j) regular = regular && is_finite(A(l, j));
    regular = regular && fabs(out.residual[l]) <= S(residual_limit);
  }
  if (!regular) {
    out.status = Status::singular;
    return out;
  }
  if (eo.drift == DriftControl::baumgarte)
    for (int l = 0; l < k; ++l) b[l] -= S(eo.baumgarte_alpha) * out.residual[l];
  Mat<S, n, n> Mg;
  Vec<S, n> Fg;
  vakonomic_constraint_terms<E, S>(p, ell, q, qd, t, Mg, Fg);
  Mat<S, n + k, n + k> K = Mat<S, n + k, n + k>::zero();
  Vec<S, n + k> rhs;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) K(i, j) = M(i, j) + Mg(i, j);
    for (int l = 0; l < k; ++l) K(i, n + l) = A(l, i);
    rhs[i] = F[i] + Fg[i];
  }
  for (int l = 0; l < k; ++l) {
    for (int j = 0; j < n; ++j) K(n + l, j) = A(l, j);
    rhs[n + l] = b[l];
  }
  Vec<S, n + k> x;
  if (!lu_solve_system(K, rhs, x, S(eo.lu_rtol))) {
    out.status = Status::singular;
    return out;
  }
  for (int i = 0; i < n; ++i) out.qdd[i] = x[i];
  for (int l = 0; l < k; ++l) out.elldot[l] = x[n + l];
  // the force that keeps the embedded constraints: M qdd - F
  out.force_ideal = M * out.qdd - F;
  out.status = all_finite(x) ? Status::ok : Status::non_finite;
  return out;
}

// ------------------------------------------------------------------ the system

template <class Model, class S = double>
struct EmbeddedSystem {
  static_assert(has_embedded_constraints<Model>::value,
                "the embedded formulation needs Model::m_embedded and embedded_constraints");
  static_assert(Model::m_embedded == m_of<Model>,
                "embedded constraints replace the model's constraints one for one "
                "(lambda0 row l is ell0 of embedded constraint l)");
  using model_type = Model;
  using scalar = S;
  using Params = typename Model::Params;
  using RestModel = EmbeddedRestChartModel<Model>;
  static constexpr int n = Model::n;
  static constexpr int m = Model::m_embedded;
  static constexpr int n_extra = m + 2;
  static constexpr int N = 2 * n + m + 2;
  static constexpr int chart_index = 2 * n + m;
  static constexpr int path_residual_index = N - 1;
  static constexpr const char* formulation_name = "embedded";

  Params params;
  EvalOptions eval;
  // |q_dep - phi| (modulo the period) above which the path has left the
  // constraint's branch (Status::singular)
  double residual_limit = 0.1;
  // evaluate the Euler–Poisson residual after every accepted step
  bool check_euler_poisson = true;
  // the smallest pivot of D = dc/dq_dep below which a step moves the state
  // to the rest chart, and above which back (embedded_rest_chart.hpp)
  double rest_chart_enter = 0.5;
  double rest_chart_leave = 2.0;

  NHOLO_HDI static bool in_rest_chart(const Vec<S, N>& y) { return y[chart_index] != S(0); }

  // (qdd, rate of the state's z) in the state's chart; multiplier = z
  NHOLO_HDI EmbeddedAcceleration<S, n, m> acceleration(S t, const Vec<S, N>& y) const {
    Vec<S, n> q, qd;
    split(y, q, qd);
    if (!in_rest_chart(y))
      return embedded_acceleration<Model, S>(params, q, qd, multipliers(y), t, eval,
                                             residual_limit);
    const auto vak = vakonomic_acceleration<RestModel, S>(params, q, qd, multipliers(y), t, eval);
    EmbeddedAcceleration<S, n, m> out;
    static_cast<Acceleration<S, n, m>&>(out) = vak;
    out.elldot = vak.lambdadot;
    return out;
  }

  // y' = (qd, qdd, zd, 0, 0)
  NHOLO_HD NHOLO_RHS_NOINLINE Status operator()(S t, const Vec<S, N>& y, Vec<S, N>& dydt) const {
    const auto acc = acceleration(t, y);
    for (int i = 0; i < n; ++i) {
      dydt[i] = y[n + i];
      dydt[n + i] = acc.qdd[i];
    }
    for (int l = 0; l < m; ++l) dydt[2 * n + l] = acc.elldot[l];
    dydt[chart_index] = S(0);
    dydt[N - 1] = S(0);
    if (acc.status != Status::ok) return acc.status;
    return all_finite(dydt) ? Status::ok : Status::non_finite;
  }

  // projection of (q, qd) onto the chart's constraints (drift = project; z
  // left as it is); the chart switch (embedded_rest_chart.hpp); then, in the
  // embedded chart, the Euler–Poisson residual at the accepted state into r
  // (a change of r alone leaves y' as it was: f does not depend on r)
  NHOLO_HDI bool post_step(S t, Vec<S, N>& y) const {
    bool moved = false;
    if (eval.drift == DriftControl::project)
      moved = in_rest_chart(y) ? project_state_onto_constraints<RestModel>(params, eval, t, y)
                               : project_state_onto_constraints<EmbeddedConstraintModel<Model>>(
                                     params, eval, t, y);
    if (switch_chart_if_due(t, y)) moved = true;
    if (check_euler_poisson && !in_rest_chart(y)) {
      const S e = path_euler_poisson_residual<EmbeddedSystem, Model>(params, eval, t, y);
      if (e > y[N - 1]) y[N - 1] = e;  // NaN (no flow here): the next step fails anyway
    }
    return moved;
  }

  // the embedded chart -> the rest chart where D's smallest pivot is below
  // rest_chart_enter, back where it is above rest_chart_leave; true if y moved
  NHOLO_HDI bool switch_chart_if_due(S t, Vec<S, N>& y) const {
    Vec<S, n> q, qd;
    split(y, q, qd);
    const auto d = embedded_chart_matrix<Model, S>(params, q, qd, t);
    LuFactor<S, m> f;
    const S pivot = embedded_chart_pivot(d, f);
    const Vec<S, m> z = multipliers(y);
    Vec<S, m> to;
    if (!in_rest_chart(y)) {
      if (!(pivot < S(rest_chart_enter)) || !lambda_of_ell(d, z, to)) return false;
      y[chart_index] = S(1);
    } else {
      if (!(pivot > S(rest_chart_leave))) return false;
      to = ell_of_lambda(d, z);
      y[chart_index] = S(0);
    }
    for (int l = 0; l < m; ++l) y[2 * n + l] = to[l];
    return true;
  }

  // multiplier = ell in either chart; constraint_residual = |q_dep - phi|
  // (modulo the period), which has a value also where phi has no derivative
  NHOLO_HDI void observe(S t, const Vec<S, N>& y, Observation<S, n, m>& obs) const {
    Vec<S, n> q, qd;
    split(y, q, qd);
    const auto acc = acceleration(t, y);
    observe_acceleration(acc, obs);
    if (in_rest_chart(y))
      obs.multiplier =
          ell_of_lambda(embedded_chart_matrix<Model, S>(params, q, qd, t), multipliers(y));
    const Vec<S, m> g = EmbeddedConstraintModel<Model>::velocity_constraints(params, q, qd, t);
    S res = S(0);
    for (int l = 0; l < m; ++l) res = max_of(res, S(fabs(g[l])));
    obs.constraint_residual = res;
    obs.energy = model_energy<Model, S>(params, q, qd, t);
  }

  // y = (q, qd, ell0, 0, 0): a trajectory starts in the embedded chart (at
  // rest its first step is singular: ell0 says nothing about lambda there)
  NHOLO_HDI void pack(const Vec<S, n>& q, const Vec<S, n>& qd, const Vec<S, m>& ell0,
                      Vec<S, N>& y) const {
    store_state(q, qd, ell0, y);
    y[chart_index] = S(0);
    y[N - 1] = S(0);
  }

  NHOLO_HDI static void split(const Vec<S, N>& y, Vec<S, n>& q, Vec<S, n>& qd) {
    split_state(y, q, qd);
  }

  // the state's z: ell in the embedded chart, lambda in the rest chart
  NHOLO_HDI static Vec<S, m> multipliers(const Vec<S, N>& y) {
    Vec<S, m> z;
    for (int l = 0; l < m; ++l) z[l] = y[2 * n + l];
    return z;
  }
};

// has_path_residual<Sys>: the system keeps a per-trajectory path residual in
// its state (component Sys::path_residual_index), written by a run
template <class Sys, class = void>
struct has_path_residual : std::false_type {};
template <class Sys>
struct has_path_residual<Sys, std::void_t<decltype(Sys::path_residual_index)>> : std::true_type {};

// The initial ell that gives the embedded motion the nonholonomic initial
// acceleration where one exists: ell = eps_dep(L) at the nonholonomic qdd,
// i.e. the dependent components of M qdd_nh - F, the nonholonomic constraint
// force on the dependent coordinates (0 for the sleigh: the knife edge exerts
// no torque). docs/formulations.md says when it is sufficient.
template <class Model, class S>
NHOLO_HDI Vec<S, Model::m_embedded> embedded_ell_nonholonomic(const typename Model::Params& p,
                                                              const Vec<S, Model::n>& q,
                                                              const Vec<S, Model::n>& qd, S t,
                                                              const EvalOptions& eo) {
  const auto acc = lagrange_multiplier_acceleration<Model, S>(p, q, qd, t, eo);
  Vec<S, Model::m_embedded> ell;
  for (int l = 0; l < Model::m_embedded; ++l)
    ell[l] = acc.force_ideal[Model::embedded_coordinate(l)];
  return ell;
}

}  // namespace nholo
