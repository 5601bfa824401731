// nholo/kernels/system.hpp — a model under a formulation, as a first-order
// system y' = f(t, y) for the steppers, with drift control and observables.
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
// State layout: y = (q, qd, extra) (N = 2n + n_extra). Formulations here:
//   udwadia_kalaba    M qdd = F + Q_i^c + Q_ni^c   (fundamental.hpp), with the
//                     singular-mass form (Udwadia & Wanichanon (2010) eq 2.7)
//                     chosen automatically
//                     when M is not positive definite;
//   conflated         the same on Conflated<Model> (Hamel's paradox): pass
//                     Conflated<Model> as the model (ConflatedSystem<Model>).
// The multiplier, null-space and vakonomic formulations are in
// formulations.hpp; they share the pieces below (constrained_terms,
// project_onto_constraints, constraint_residual_norm, model_energy and, for
// formulations whose state is (q, qd), SecondOrderSystem).
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

// Udwadia–Kalaba for a model (ideal + nonideal); singular-mass fallback.
// Forces = false: qdd, status and singular_mass only (the right-hand side's
// needs); forces, multipliers and residuals are not set (not copied out of
// the work space, where nothing would read them).
template <class Model, class S, bool Forces = true>
NHOLO_HDI Acceleration<S, Model::n, m_of<Model>> udwadia_kalaba_acceleration(
    const typename Model::Params& p, const Vec<S, Model::n>& q, const Vec<S, Model::n>& qd, S t,
    const EvalOptions& eo) {
  constexpr int n = Model::n;
  constexpr int m = m_of<Model>;
  Acceleration<S, n, m> out;
  ConstrainedTerms<S, n, m> w;
  constrained_terms<Model>(p, q, qd, t, eo, w);
  if constexpr (Forces) {
    out.residual = w.residual;
    out.velocity_residual = w.velocity_residual;
  }
  auto r = udwadia_kalaba<Forces, has_nonideal_force<Model>::value>(w.M, w.F, w.A, w.b, w.C,
                                                                    eo.pinv);
  out.singular_mass = false;
  if (r.status == Status::singular) {
    // eq 2.7 covers ideal constraints only
    bool ideal = true;
    for (int i = 0; i < n; ++i) ideal = ideal && w.C[i] == S(0);
    if (ideal) {
      r = udwadia_kalaba_singular(w.M, w.F, w.A, w.b, eo.pinv);
      out.singular_mass = true;
    }
  }
  out.qdd = r.qdd;
  if constexpr (Forces) {
    out.force_applied = w.F;
    out.force_ideal = r.force_ideal;
    out.force_nonideal = r.force_nonideal;
    out.multiplier = r.multiplier;
  }
  out.status = r.status;
  // A lost rank where the model says it does not (Appell's particle at rest):
  // the Moore–Penrose accelerations are returned, the state reported singular,
  // as the saddle-point formulations do
  if (out.status == Status::ok && !out.singular_mass &&
      r.rank < declared_constraint_rank<Model>::value)
    out.status = Status::singular;
  return out;
}

// Per-trajectory cache of the Udwadia–Kalaba formulation for a model that
// declares constant_mass (model.hpp): M's Cholesky factor, taken at the
// trajectory's state when it is prepared (by the declaration the same at
// every state) and, with constant_force, the Lagrangian's F and M^-1 F.
// ok = false (M not positive definite, or not finite there): the right-hand
// side takes the general path, singular-mass form included.
template <class S, int n>
struct ConstantMassCache {
  CholeskyFactor<S, n> L;  // M = L L^T
  Vec<S, n> F;             // constant_force: the Lagrangian's F (no nonpotential_force)
  Vec<S, n> a;             // constant_force: M^-1 F
  bool ok;
  bool diagonal;           // L (M) is diagonal: the solves use DiagonalFactor
};

template <class Model, class S>
NHOLO_HDI ConstantMassCache<S, Model::n> prepare_constant_mass(const typename Model::Params& p,
                                                               const Vec<S, Model::n>& q,
                                                               const Vec<S, Model::n>& qd, S t,
                                                               const EvalOptions& eo) {
  constexpr int n = Model::n;
  ConstantMassCache<S, n> c;
  Mat<S, n, n> M;
  if constexpr (has_hand_dynamics<Model>::value) {
    Model::hand_dynamics(p, q, qd, t, M, c.F);
  } else {
    lagrangian_terms_ad<Model, S, true, false>(p, q, qd, t, M, c.F);
  }
  c.ok = cholesky_factor(M, c.L, S(eo.pinv.chol_rtol));
  c.a = c.ok ? c.L.solve(c.F) : Vec<S, n>::zero();
  c.diagonal = c.ok && is_diagonal(c.L);
  return c;
}

namespace detail {
// the fundamental equation with the cached factor (its diagonal view when L
// is diagonal) and a = M^-1 F
template <bool Forces, bool Nonideal, class S, int n, int m>
NHOLO_HDI void solve_cached(const ConstantMassCache<S, n>& c, const Vec<S, n>& a,
                            const ConstrainedTerms<S, n, m>& w, const PinvOptions& opt,
                            FundamentalResult<S, n, m>& r) {
  if (c.diagonal) {
    udwadia_kalaba_solved<Forces, Nonideal>(DiagonalFactor<S, n>{c.L}, a, w.A, w.b, w.C, opt, r);
  } else {
    udwadia_kalaba_solved<Forces, Nonideal>(c.L, a, w.A, w.b, w.C, opt, r);
  }
}
}  // namespace detail

// udwadia_kalaba_acceleration with M (and, with constant_force, F and
// M^-1 F) from the cache: the same arithmetic on the same numbers, so the
// same results; per evaluation only the constraints, C, the forces that are
// not constant and the solves with W^T = L^-1 A^T remain. Forces = false
// sets qdd, status and singular_mass only, as udwadia_kalaba_acceleration.
template <class Model, class S, bool Forces = true>
NHOLO_HDI Acceleration<S, Model::n, m_of<Model>> udwadia_kalaba_acceleration_cached(
    const typename Model::Params& p, const Vec<S, Model::n>& q, const Vec<S, Model::n>& qd, S t,
    const EvalOptions& eo, const ConstantMassCache<S, Model::n>& c) {
  constexpr int n = Model::n;
  constexpr int m = m_of<Model>;
  if (!c.ok) return udwadia_kalaba_acceleration<Model, S, Forces>(p, q, qd, t, eo);
  Acceleration<S, n, m> out;
  ConstrainedTerms<S, n, m> w;
  constraint_rows<Model>(p, q, qd, t, eo, w);
  w.C = nonideal_terms<Model>(p, q, qd, t);
  // udwadia_kalaba_solved sets qdd and rank on every path, the forces and
  // multipliers only with Forces (zero where they vanish: ideal constraints)
  FundamentalResult<S, n, m> r;
  if constexpr (Forces) {
    out.residual = w.residual;
    out.velocity_residual = w.velocity_residual;
    r.force_ideal = Vec<S, n>::zero();
    r.force_nonideal = Vec<S, n>::zero();
    r.multiplier = Vec<S, m>::zero();
  }
  if constexpr (force_is_constant<Model>::value && !has_nonpotential_force<Model>::value) {
    // a = M^-1 F straight from the cache (not copied); F itself only for
    // force_applied (Forces = false does not set it, as the multipliers)
    if constexpr (Forces) w.F = c.F;
    detail::solve_cached<Forces, has_nonideal_force<Model>::value>(c, c.a, w, eo.pinv, r);
  } else {
    if constexpr (force_is_constant<Model>::value) {
      w.F = c.F;
      w.F += Model::nonpotential_force(p, q, qd, t);
    } else {
      w.F = lagrangian_force<Model>(p, q, qd, t);
    }
    const Vec<S, n> a = c.L.solve(w.F);
    detail::solve_cached<Forces, has_nonideal_force<Model>::value>(c, a, w, eo.pinv, r);
  }
  out.singular_mass = false;
  out.qdd = r.qdd;
  if constexpr (Forces) {
    out.force_applied = w.F;
    out.force_ideal = r.force_ideal;
    out.force_nonideal = r.force_nonideal;
    out.multiplier = r.multiplier;
  }
  out.status = !all_finite_branchless(r.qdd) ? Status::non_finite
               : r.rank < declared_constraint_rank<Model>::value ? Status::singular
                                                                  : Status::ok;
  return out;
}

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

// Projection onto the constraint manifold (drift = project): positions onto
// phi = 0, then velocities onto phidot = 0 and g = 0, each step minimal in
// the M-norm (Newton iterations for nonlinear constraints). Returns true if
// q or qd moved. Shared by every formulation (the vakonomic one leaves its
// multipliers alone).
template <class Model, class S>
NHOLO_HDI bool project_onto_constraints(const typename Model::Params& params,
                                        const EvalOptions& eval, S t, Vec<S, Model::n>& q,
                                        Vec<S, Model::n>& qd) {
  constexpr int n = Model::n;
  constexpr int m = m_of<Model>;
  constexpr int mp = Model::m_position;
  constexpr int mpv = Model::m_position + Model::m_velocity;
  if (eval.drift != DriftControl::project) return false;
  if constexpr (mpv == 0) {
    return false;
  } else {
    bool moved = false;
    if constexpr (mp > 0) {
      for (int it = 0; it < eval.project_iterations; ++it) {
        Mat<S, n, n> M;
        Vec<S, n> F;
        Mat<S, m, n> A;
        Vec<S, m> b, res;
        lagrangian_terms<Model>(params, q, qd, t, M, F);
        constraint_terms<Model, S>(params, q, qd, t, A, b, &res, nullptr);
        Mat<S, mp, n> J;
        Vec<S, mp> phi;
        for (int l = 0; l < mp; ++l) {
          phi[l] = res[l];
          for (int j = 0; j < n; ++j) J(l, j) = A(l, j);
        }
        if (!(norm_inf(phi) > S(eval.project_tol))) break;
        Vec<S, n> dq;
        if (!weighted_correction(M, J, phi, dq, eval.pinv)) break;
        q -= dq;
        moved = true;
      }
    }
    for (int it = 0; it < eval.project_iterations; ++it) {
      Mat<S, n, n> M;
      Vec<S, n> F;
      Mat<S, m, n> A;
      Vec<S, m> b, vres;
      lagrangian_terms<Model>(params, q, qd, t, M, F);
      constraint_terms<Model, S>(params, q, qd, t, A, b, nullptr, &vres);
      Mat<S, mpv, n> G;
      Vec<S, mpv> r;
      for (int l = 0; l < mpv; ++l) {
        r[l] = vres[l];
        for (int j = 0; j < n; ++j) G(l, j) = A(l, j);
      }
      if (!(norm_inf(r) > S(eval.project_tol))) break;
      Vec<S, n> dqd;
      if (!weighted_correction(M, G, r, dqd, eval.pinv)) break;
      qd -= dqd;
      moved = true;
    }
    return moved;
  }
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
  // project_onto_constraints.
  NHOLO_HDI bool post_step(S t, Vec<S, N>& y) const {
    if (eval.drift != DriftControl::project) return false;
    Vec<S, n> q, qd;
    split(y, q, qd);
    const bool moved = project_onto_constraints<Model, S>(params, eval, t, q, qd);
    store_state(q, qd, y);
    return moved;
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
    obs.qdd = acc.qdd;
    obs.force_ideal = acc.force_ideal;
    obs.force_nonideal = acc.force_nonideal;
    obs.multiplier = acc.multiplier;
    obs.status = acc.status;
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

// The Udwadia–Kalaba formulation; named "conflated" on Conflated<Model>.
// A model that declares constant_mass (model.hpp) gets a per-trajectory cache
// (ConstantMassCache, plain scalars only).
struct UdwadiaKalabaFormulation {
  // status ok only with a finite qdd: udwadia_kalaba, udwadia_kalaba_singular
  // and the cached path test it (the rank test only turns ok into singular)
  static constexpr bool ok_implies_finite_qdd = true;
  template <class Model, class S,
            std::enable_if_t<mass_is_constant<Model>::value && std::is_floating_point<S>::value,
                             int> = 0>
  NHOLO_HDI static ConstantMassCache<S, Model::n> prepare(const typename Model::Params& p,
                                                          const Vec<S, Model::n>& q,
                                                          const Vec<S, Model::n>& qd, S t,
                                                          const EvalOptions& eo) {
    return prepare_constant_mass<Model, S>(p, q, qd, t, eo);
  }
  template <class Model, class S>
  NHOLO_HDI static Acceleration<S, Model::n, m_of<Model>> acceleration(
      const typename Model::Params& p, const Vec<S, Model::n>& q, const Vec<S, Model::n>& qd,
      S t, const EvalOptions& eo, const ConstantMassCache<S, Model::n>& c) {
    return udwadia_kalaba_acceleration_cached<Model, S, true>(p, q, qd, t, eo, c);
  }
  template <class Model, class S>
  NHOLO_HDI static Acceleration<S, Model::n, m_of<Model>> rhs_acceleration(
      const typename Model::Params& p, const Vec<S, Model::n>& q, const Vec<S, Model::n>& qd,
      S t, const EvalOptions& eo, const ConstantMassCache<S, Model::n>& c) {
    return udwadia_kalaba_acceleration_cached<Model, S, false>(p, q, qd, t, eo, c);
  }
  template <class Model>
  static constexpr const char* name() {
    return is_conflated<Model>::value ? "conflated" : "udwadia_kalaba";
  }
  template <class Model, class S>
  NHOLO_HDI static Acceleration<S, Model::n, m_of<Model>> acceleration(
      const typename Model::Params& p, const Vec<S, Model::n>& q, const Vec<S, Model::n>& qd,
      S t, const EvalOptions& eo) {
    return udwadia_kalaba_acceleration<Model, S>(p, q, qd, t, eo);
  }
  template <class Model, class S>
  NHOLO_HDI static Acceleration<S, Model::n, m_of<Model>> rhs_acceleration(
      const typename Model::Params& p, const Vec<S, Model::n>& q, const Vec<S, Model::n>& qd,
      S t, const EvalOptions& eo) {
    return udwadia_kalaba_acceleration<Model, S, false>(p, q, qd, t, eo);
  }
};

// A model under the Udwadia–Kalaba formulation as y' = f(t, y); on
// Conflated<Model> it is the "conflated" formulation.
template <class Model, class S = double>
using UdwadiaKalabaSystem = SecondOrderSystem<Model, S, UdwadiaKalabaFormulation>;

// The conflated formulation (Hamel's paradox): the Udwadia–Kalaba system of
// the model with its conflated Lagrangian, formulation_name "conflated".
template <class Model, class S = double>
using ConflatedSystem = UdwadiaKalabaSystem<Conflated<Model>, S>;

}  // namespace nholo
