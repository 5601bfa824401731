// nholo/kernels/system.hpp — the System concept: a model under a formulation,
// as a first-order system y' = f(t, y) for the steppers, with drift control
// and observables; the types every formulation shares (EvalOptions,
// Acceleration, Observation), the state's (q, qd) part and the observables
// every formulation reports.
//
// System concept (valid expressions), sys a const System, y Vec<S, N>:
//   System::model_type, System::scalar       the model, the scalar type S
//   System::Params                           the model's parameters
//   System::N, System::n, System::m          state size, coordinates, constraints
//   System::n_extra                          state beyond (q, qd): N = 2n + n_extra
//   System::formulation_name                 "udwadia_kalaba", "conflated", ...
//   sys.params, sys.eval                     Params, EvalOptions
//   Status st = sys(t, y, dydt)              right-hand side; st != ok: unusable
//   bool moved = sys.post_step(t, y)         drift projection after an accepted
//                                            step (true if y was changed)
//   sys.observe(t, y, obs)                   qdd, forces, multipliers,
//                                            constraint residual, energy
//   sys.pack(q, qd, lambda0, y)              initial state from q, qd and, for
//                                            formulations with extra state
//                                            (vakonomic), the multipliers;
//                                            others ignore lambda0
//   System::split(y, q, qd)                  q, qd from a state (always first)
// Optional:
//   auto ps = sys.prepare(t, y)              the system with a per-trajectory
//                                            cache bound (a System itself, same
//                                            results); prepare_system(sys, t, y)
//                                            below returns it, or sys itself
//                                            for systems without one. The
//                                            ensemble functor prepares once
//                                            per trajectory and window, after
//                                            the trajectory's parameters are set.
//
// State layout: y = (q, qd, extra) (N = 2n + n_extra). The formulations are in
// kernels/formulations/ (kernels/formulations.hpp includes them all); those
// whose state is (q, qd) are a SecondOrderSystem (second_order_system.hpp).
// Their shared pieces: constrained_terms (constrained_terms.hpp), the drift
// projection (drift_projection.hpp), split_state / store_state,
// observe_acceleration, constraint_residual_norm and model_energy (below).
#pragma once

#include <type_traits>
#include <utility>

#include "dynamics.hpp"
#include "fundamental.hpp"
#include "lu.hpp"
#include "status.hpp"

namespace nholo {

enum class DriftControl : int { none = 0, baumgarte = 1, project = 2 };

struct EvalOptions {
  PinvOptions pinv;
  DriftControl drift = DriftControl::none;
  // Baumgarte: position rows b -= 2 alpha phidot + beta^2 phi; velocity rows b -= alpha g
  double baumgarte_alpha = 10.0;
  double baumgarte_beta = 10.0;
  // Projection: Newton iterations and the residual (inf-norm) they aim for
  int project_iterations = 4;
  double project_tol = 1e-14;
  // LU pivot threshold (relative to the largest entry) of the saddle-point
  // systems of the multiplier and vakonomic formulations (formulations.hpp)
  double lu_rtol = kDefaultLuRtol;
};

// Everything one evaluation of the formulation gives at (t, q, qd).
template <class S, int n, int m>
struct Acceleration {
  Vec<S, n> qdd;             // constrained acceleration
  Vec<S, n> force_applied;   // F = impressed + Lagrangian terms (M qdd = F + Q_i + Q_ni)
  Vec<S, n> force_ideal;     // Q_i^c
  Vec<S, n> force_nonideal;  // Q_ni^c
  Vec<S, m> multiplier;      // lambda, Q_i^c = A^T lambda
  Vec<S, m> residual;        // phi (position rows), g (velocity rows), 0 (acceleration rows)
  Vec<S, m> velocity_residual;  // phidot (position rows), g (velocity rows)
  Status status;
  bool singular_mass;        // the singular-mass form (eq 2.7) was used
};

// Observables at a save point.
template <class S, int n, int m>
struct Observation {
  Vec<S, n> qdd, force_ideal, force_nonideal;
  Vec<S, m> multiplier;
  S constraint_residual;  // max |phi|, |phidot|, |g| over the constraint rows
  S energy;               // NaN when the model defines none
  Status status;
};

// max |phi|, |phidot|, |g| over the position and velocity constraint rows
template <class Model, class S>
NHOLO_HDI S constraint_residual_norm(const Vec<S, m_of<Model>>& residual,
                                     const Vec<S, m_of<Model>>& velocity_residual) {
  S r = S(0);
  for (int l = 0; l < Model::m_position + Model::m_velocity; ++l) {
    r = max_of(r, S(fabs(residual[l])));
    r = max_of(r, S(fabs(velocity_residual[l])));
  }
  return r;
}

// The model's energy, NaN when it defines none.
template <class Model, class S>
NHOLO_HDI S model_energy(const typename Model::Params& p, const Vec<S, Model::n>& q,
                         const Vec<S, Model::n>& qd, S t) {
  if constexpr (has_energy<Model>::value) {
    return Model::energy(p, q, qd, t);
  } else {
    return S(NAN);
  }
}

// The observables that come straight from an acceleration (qdd, forces,
// multipliers, status); the caller adds the constraint residual and the energy.
template <class Acc, class S, int n, int m>
NHOLO_HDI void observe_acceleration(const Acc& acc, Observation<S, n, m>& obs) {
  obs.qdd = acc.qdd;
  obs.force_ideal = acc.force_ideal;
  obs.force_nonideal = acc.force_nonideal;
  obs.multiplier = acc.multiplier;
  obs.status = acc.status;
}

// q, qd from y = (q, qd, ...), and the reverse
template <class S, int n, int N>
NHOLO_HDI void split_state(const Vec<S, N>& y, Vec<S, n>& q, Vec<S, n>& qd) {
  static_assert(N >= 2 * n, "a state holds q and qd first");
  for (int i = 0; i < n; ++i) {
    q[i] = y[i];
    qd[i] = y[n + i];
  }
}
template <class S, int n, int N>
NHOLO_HDI void store_state(const Vec<S, n>& q, const Vec<S, n>& qd, Vec<S, N>& y) {
  static_assert(N >= 2 * n, "a state holds q and qd first");
  for (int i = 0; i < n; ++i) {
    y[i] = q[i];
    y[n + i] = qd[i];
  }
}
// y = (q, qd, x): a state whose extra part begins with x (k components)
template <class S, int n, int k, int N>
NHOLO_HDI void store_state(const Vec<S, n>& q, const Vec<S, n>& qd, const Vec<S, k>& x,
                           Vec<S, N>& y) {
  static_assert(N >= 2 * n + k, "a state holds q, qd and then the extra part");
  store_state(q, qd, y);
  for (int l = 0; l < k; ++l) y[2 * n + l] = x[l];
}
// y' = (qd, qdd, xd) of a state y = (q, qd, x, ...) (qd read from y, the
// components after xd left as they are)
template <class S, int n, int k, int N>
NHOLO_HDI void store_rates(const Vec<S, N>& y, const Vec<S, n>& qdd, const Vec<S, k>& xd,
                           Vec<S, N>& dydt) {
  static_assert(N >= 2 * n + k, "a state holds q, qd and then the extra part");
  for (int i = 0; i < n; ++i) {
    dydt[i] = y[n + i];
    dydt[n + i] = qdd[i];
  }
  for (int l = 0; l < k; ++l) dydt[2 * n + l] = xd[l];
}

// has_prepare<Sys>: Sys binds a per-trajectory cache (sys.prepare(t, y))
template <class Sys, class = void>
struct has_prepare : std::false_type {};
template <class Sys>
struct has_prepare<Sys, std::void_t<decltype(std::declval<const Sys&>().prepare(
                            std::declval<typename Sys::scalar>(),
                            std::declval<const Vec<typename Sys::scalar, Sys::N>&>()))>>
    : std::true_type {};

// The system to integrate a trajectory from (t, y) with: sys.prepare(t, y)
// when Sys has a cache, else sys itself (a reference; nothing copied or
// computed). Bind the result to `const auto&`.
template <class Sys>
NHOLO_HDI decltype(auto) prepare_system(const Sys& sys, typename Sys::scalar t,
                                        const Vec<typename Sys::scalar, Sys::N>& y) {
  if constexpr (has_prepare<Sys>::value) {
    return sys.prepare(t, y);
  } else {
    (void)t;
    (void)y;
    return (sys);
  }
}

// has_checked_prepare<Sys>: Sys binds a cache with a checked form
// (sys.prepare_checked(t, y), second_order_system.hpp), so that a kernel for
// the trajectories whose cache is usable leaves out the code for the others
// (EnsembleWindow::run_part, Lean)
template <class Sys, class = void>
struct has_checked_prepare : std::false_type {};
template <class Sys>
struct has_checked_prepare<Sys, std::void_t<decltype(std::declval<const Sys&>().prepare_checked(
                                    std::declval<typename Sys::scalar>(),
                                    std::declval<const Vec<typename Sys::scalar, Sys::N>&>()))>>
    : std::true_type {};

}  // namespace nholo
