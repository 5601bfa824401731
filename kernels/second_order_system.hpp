// nholo/kernels/second_order_system.hpp — SecondOrderSystem: a model under
// a formulation whose state is y = (q, qd) (the System concept of system.hpp),
// given the formulation's accelerations; the formulation's optional members
// (rhs_acceleration, ok_implies_finite_qdd, a per-trajectory cache) and the
// System with its cache bound (PreparedSystem).
#pragma once

#include <type_traits>
#include <utility>

#include "drift_projection.hpp"
#include "system.hpp"

namespace nholo {

// Optional member of a formulation: rhs_acceleration<Model, S>(p, q, qd, t,
// eval), the same as acceleration but only qdd and status need be valid (the
// right-hand side uses nothing else, so forces and multipliers may be skipped).
template <class Formulation, class Model, class S, class = void>
struct has_rhs_acceleration : std::false_type {};
template <class Formulation, class Model, class S>
struct has_rhs_acceleration<
    Formulation, Model, S,
    std::void_t<decltype(Formulation::template rhs_acceleration<Model, S>(
        std::declval<const typename Model::Params&>(), std::declval<const Vec<S, Model::n>&>(),
        std::declval<const Vec<S, Model::n>&>(), std::declval<S>(),
        std::declval<const EvalOptions&>()))>> : std::true_type {};

// Optional member of a formulation: static constexpr bool
// ok_implies_finite_qdd = true when its accelerations never have status ok
// with a non-finite qdd (the right-hand side then tests only qd, the rest of
// y', for finiteness: the same status with fewer tests).
template <class Formulation, class = void>
struct formulation_ok_implies_finite : std::false_type {};
template <class Formulation>
struct formulation_ok_implies_finite<Formulation,
                                     std::void_t<decltype(Formulation::ok_implies_finite_qdd)>>
    : std::integral_constant<bool, Formulation::ok_implies_finite_qdd> {};

// Optional members of a formulation: a per-trajectory cache,
//   Formulation::prepare<Model, S>(p, q, qd, t, eval) -> Cache
//   Formulation::acceleration<Model, S>(p, q, qd, t, eval, cache)
//   Formulation::rhs_acceleration<Model, S>(p, q, qd, t, eval, cache)
// formulation_cache<F, Model, S>::value says whether F has one for Model
// (and ::type is the Cache).
template <class Formulation, class Model, class S, class = void>
struct formulation_cache : std::false_type {
  using type = void;
};
template <class Formulation, class Model, class S>
struct formulation_cache<
    Formulation, Model, S,
    std::void_t<decltype(Formulation::template prepare<Model, S>(
        std::declval<const typename Model::Params&>(), std::declval<const Vec<S, Model::n>&>(),
        std::declval<const Vec<S, Model::n>&>(), std::declval<S>(),
        std::declval<const EvalOptions&>()))>> : std::true_type {
  using type = decltype(Formulation::template prepare<Model, S>(
      std::declval<const typename Model::Params&>(), std::declval<const Vec<S, Model::n>&>(),
      std::declval<const Vec<S, Model::n>&>(), std::declval<S>(),
      std::declval<const EvalOptions&>()));
};

// The checked form of that cache (its as_checked(): for code that integrates
// only trajectories whose cache is usable), where F has one for Model.
template <class Formulation, class Model, class S>
using checked_cache_t =
    decltype(std::declval<typename formulation_cache<Formulation, Model, S>::type>().as_checked());

namespace detail {
struct NoCache {};
}  // namespace detail

template <class Sys, class Cache>
struct PreparedSystem;

// A model under a formulation whose state is y = (q, qd) (N = 2n), as
// y' = f(t, y). Formulation (a tag type) supplies
//   Formulation::name<Model>()                          its name
//   Formulation::acceleration<Model, S>(p, q, qd, t, eval) -> Acceleration<S,n,m>
// (qdd, forces, multipliers, residuals, status at one state) and optionally
//   Formulation::rhs_acceleration<Model, S>(...)        the same, qdd and status
//                                                       only (has_rhs_acceleration)
template <class Model, class S, class Formulation>
struct SecondOrderSystem {
  using model_type = Model;
  using formulation_type = Formulation;
  using scalar = S;
  using Params = typename Model::Params;
  static constexpr int n = Model::n;
  static constexpr int m = m_of<Model>;
  static constexpr int n_extra = 0;
  static constexpr int N = 2 * n;
  static constexpr const char* formulation_name = Formulation::template name<Model>();

  Params params;
  EvalOptions eval;

  NHOLO_HDI Acceleration<S, n, m> acceleration(S t, const Vec<S, n>& q, const Vec<S, n>& qd) const {
    return Formulation::template acceleration<Model, S>(params, q, qd, t, eval);
  }
  // qdd and status (the rest may be left out)
  NHOLO_HDI Acceleration<S, n, m> rhs_acceleration(S t, const Vec<S, n>& q,
                                                   const Vec<S, n>& qd) const {
    if constexpr (has_rhs_acceleration<Formulation, Model, S>::value) {
      return Formulation::template rhs_acceleration<Model, S>(params, q, qd, t, eval);
    } else {
      return acceleration(t, q, qd);
    }
  }

  // y' = (qd, qdd(t, q, qd))
  NHOLO_FLATTEN NHOLO_HD NHOLO_RHS_NOINLINE Status operator()(S t, const Vec<S, N>& y,
                                                              Vec<S, N>& dydt) const {
    return rhs_with(t, y, dydt, detail::NoCache{});
  }

  // The system with the formulation's per-trajectory cache bound, prepared at
  // (t, y) (only where the formulation has one for this model and S).
  template <class F = Formulation,
            std::enable_if_t<formulation_cache<F, Model, S>::value, int> = 0>
  NHOLO_HDI PreparedSystem<SecondOrderSystem, typename formulation_cache<F, Model, S>::type>
  prepare(S t, const Vec<S, N>& y) const {
    PreparedSystem<SecondOrderSystem, typename formulation_cache<F, Model, S>::type> ps;
    static_cast<SecondOrderSystem&>(ps) = *this;
    Vec<S, n> q, qd;
    split(y, q, qd);
    ps.cache = F::template prepare<Model, S>(params, q, qd, t, eval);
    return ps;
  }

  // The same for code that integrates only trajectories whose cache is usable
  // (the CUDA backend's lean kernels, EnsembleWindow::run_part): the cache's
  // checked form (ps.cache.usable() says whether this trajectory may be
  // integrated with it), where the formulation has one.
  template <class F = Formulation, std::enable_if_t<formulation_cache<F, Model, S>::value, int> = 0>
  NHOLO_HDI PreparedSystem<SecondOrderSystem, checked_cache_t<F, Model, S>> prepare_checked(
      S t, const Vec<S, N>& y) const {
    PreparedSystem<SecondOrderSystem, checked_cache_t<F, Model, S>> ps;
    static_cast<SecondOrderSystem&>(ps) = *this;
    Vec<S, n> q, qd;
    split(y, q, qd);
    ps.cache = F::template prepare<Model, S>(params, q, qd, t, eval).as_checked();
    return ps;
  }

  // The pieces of operator(), observe and acceleration with a cache
  // (detail::NoCache: none); PreparedSystem calls them with its own.
  template <bool Forces, class Cache>
  NHOLO_HDI Acceleration<S, n, m> acceleration_with(S t, const Vec<S, n>& q, const Vec<S, n>& qd,
                                                    const Cache& cache) const {
    if constexpr (std::is_same<Cache, detail::NoCache>::value) {
      return Forces ? acceleration(t, q, qd) : rhs_acceleration(t, q, qd);
    } else if constexpr (Forces) {
      return Formulation::template acceleration<Model, S>(params, q, qd, t, eval, cache);
    } else {
      return Formulation::template rhs_acceleration<Model, S>(params, q, qd, t, eval, cache);
    }
  }
  template <class Cache>
  NHOLO_HDI Status rhs_with(S t, const Vec<S, N>& y, Vec<S, N>& dydt, const Cache& cache) const {
    Vec<S, n> q, qd;
    split(y, q, qd);
    const auto acc = acceleration_with<false>(t, q, qd, cache);
    for (int i = 0; i < n; ++i) {
      dydt[i] = qd[i];
      dydt[n + i] = acc.qdd[i];
    }
    if (acc.status != Status::ok) return acc.status;
    if constexpr (formulation_ok_implies_finite<Formulation>::value) {
      return all_finite_branchless(qd) ? Status::ok : Status::non_finite;
    } else {
      return all_finite(dydt) ? Status::ok : Status::non_finite;
    }
  }

  // Projection onto the constraint manifold (drift = project), see
  // project_onto_constraints (drift_projection.hpp).
  NHOLO_HDI bool post_step(S t, Vec<S, N>& y) const {
    if (eval.drift != DriftControl::project) return false;
    return project_state_onto_constraints<Model>(params, eval, t, y);
  }

  NHOLO_HDI void observe(S t, const Vec<S, N>& y, Observation<S, n, m>& obs) const {
    observe_with(t, y, obs, detail::NoCache{});
  }
  template <class Cache>
  NHOLO_HDI void observe_with(S t, const Vec<S, N>& y, Observation<S, n, m>& obs,
                              const Cache& cache) const {
    Vec<S, n> q, qd;
    split(y, q, qd);
    const auto acc = acceleration_with<true>(t, q, qd, cache);
    observe_acceleration(acc, obs);
    obs.constraint_residual =
        constraint_residual_norm<Model, S>(acc.residual, acc.velocity_residual);
    obs.energy = model_energy<Model, S>(params, q, qd, t);
  }

  // y = (q, qd); lambda0 is not used by these formulations
  NHOLO_HDI void pack(const Vec<S, n>& q, const Vec<S, n>& qd, const Vec<S, m>& /*lambda0*/,
                      Vec<S, N>& y) const {
    store_state(q, qd, y);
  }

  NHOLO_HDI static void split(const Vec<S, N>& y, Vec<S, n>& q, Vec<S, n>& qd) {
    split_state(y, q, qd);
  }
};

// A System (SecondOrderSystem) with its per-trajectory cache bound: the same
// System, whose right-hand side, observe and acceleration use the cache.
// Made by Sys::prepare(t, y); holds the parameters it was prepared with
// (prepare again after changing them).
template <class Sys, class Cache>
struct PreparedSystem : Sys {
  using S = typename Sys::scalar;
  static constexpr int n = Sys::n, m = Sys::m, N = Sys::N;
  Cache cache;

  NHOLO_FLATTEN NHOLO_HD NHOLO_RHS_NOINLINE Status operator()(S t, const Vec<S, N>& y,
                                                              Vec<S, N>& dydt) const {
    return this->rhs_with(t, y, dydt, cache);
  }
  NHOLO_HDI void observe(S t, const Vec<S, N>& y, Observation<S, n, m>& obs) const {
    this->observe_with(t, y, obs, cache);
  }
  NHOLO_HDI Acceleration<S, n, m> acceleration(S t, const Vec<S, n>& q, const Vec<S, n>& qd) const {
    return this->template acceleration_with<true>(t, q, qd, cache);
  }
  NHOLO_HDI Acceleration<S, n, m> rhs_acceleration(S t, const Vec<S, n>& q,
                                                   const Vec<S, n>& qd) const {
    return this->template acceleration_with<false>(t, q, qd, cache);
  }
};

}  // namespace nholo
