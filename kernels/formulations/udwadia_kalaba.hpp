// nholo/kernels/formulations/udwadia_kalaba.hpp — the Udwadia–Kalaba
// formulation, "udwadia_kalaba": M qdd = F + Q_i^c + Q_ni^c (fundamental.hpp),
// with the singular-mass form (Udwadia & Wanichanon (2010) eq 2.7) chosen
// automatically when M is not positive definite; the optional per-trajectory
// cache of models that declare constant_mass (ConstantMassCache: M's Cholesky
// factor, and F, M^-1 F with constant_force). On Conflated<Model> it is the
// "conflated" formulation (conflated.hpp). y = (q, qd).
#pragma once

#include <type_traits>

#include "kernels/constrained_terms.hpp"
#include "kernels/dynamics.hpp"
#include "kernels/fundamental.hpp"
#include "kernels/second_order_system.hpp"

namespace nholo {

namespace detail {
// r into out: qdd, and with Forces the applied force F, the constraint
// forces and the multipliers
template <bool Forces, class S, int n, int m>
NHOLO_HDI void store_result(const FundamentalResult<S, n, m>& r, const Vec<S, n>& F,
                            Acceleration<S, n, m>& out) {
  out.qdd = r.qdd;
  if constexpr (Forces) {
    out.force_applied = F;
    out.force_ideal = r.force_ideal;
    out.force_nonideal = r.force_nonideal;
    out.multiplier = r.multiplier;
  }
}
}  // namespace detail

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
    // M is not positive definite: eq 2.7, with the nonideal force
    r = udwadia_kalaba_singular<has_nonideal_force<Model>::value>(w.M, w.F, w.A, w.b, w.C, eo.pinv);
    out.singular_mass = true;
  }
  detail::store_result<Forces>(r, w.F, out);
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
// Checked = true: the same cache for code that integrates only trajectories
// whose cache is usable (the CUDA backend's lean kernels, kernels/ensemble.hpp
// EnsembleWindow::run_part): its formulation code has no general path, whose
// singular-mass form alone (two Jacobi SVDs) costs the coin's kernels some 60
// registers per thread (docs/BENCHMARKS.md, "Lean kernels").
template <class S, int n, bool Checked = false>
struct ConstantMassCache {
  CholeskyFactor<S, n> L;  // M = L L^T
  Vec<S, n> F;             // constant_force: the Lagrangian's F (no nonpotential_force)
  Vec<S, n> a;             // constant_force: M^-1 F
  bool ok;
  bool diagonal;           // L (M) is diagonal: the solves use DiagonalFactor

  // whether a trajectory may be integrated with the checked form
  NHOLO_HDI bool usable() const { return ok; }
  NHOLO_HDI ConstantMassCache<S, n, true> as_checked() const { return {L, F, a, ok, diagonal}; }
  // The same numbers on scalar T (each T(value)): for the tangent system's
  // duals (kernels/lyapunov.hpp), whose tangents of these state-independent
  // quantities are zero.
  template <class T>
  NHOLO_HDI ConstantMassCache<T, n, Checked> on_scalar() const {
    ConstantMassCache<T, n, Checked> c;
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) c.L.L(i, j) = T(L.L(i, j));
      c.L.inv_diag[i] = T(L.inv_diag[i]);
      c.F[i] = T(F[i]);
      c.a[i] = T(a[i]);
    }
    c.ok = ok;
    c.diagonal = diagonal;
    return c;
  }
};

// Whether udwadia_kalaba_acceleration_cached can evaluate Model on scalar T
// (an AD type: the tangent system's duals): a constant force comes from the
// cache; any other F from lagrangian_force, which takes T through a
// hand_dynamics written for any scalar or, without one, a separable
// Lagrangian's first-order duals.
template <class Model, class T>
struct constant_mass_cache_takes
    : std::integral_constant<bool, force_is_constant<Model>::value ||
                                       (has_hand_dynamics<Model>::value
                                            ? hand_dynamics_takes<Model, T>::value
                                            : lagrangian_is_separable<Model>::value)> {};

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
template <bool Forces, bool Nonideal, class S, int n, int m, bool Checked>
NHOLO_HDI void solve_cached(const ConstantMassCache<S, n, Checked>& c, const Vec<S, n>& a,
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
// A checked cache (ConstantMassCache<S, n, true>) has no general path: an
// unusable one, which its callers never pass, gives NaN and status singular.
template <class Model, class S, bool Forces = true, bool Checked = false>
NHOLO_HDI Acceleration<S, Model::n, m_of<Model>> udwadia_kalaba_acceleration_cached(
    const typename Model::Params& p, const Vec<S, Model::n>& q, const Vec<S, Model::n>& qd, S t,
    const EvalOptions& eo, const ConstantMassCache<S, Model::n, Checked>& c) {
  constexpr int n = Model::n;
  constexpr int m = m_of<Model>;
  if (!c.ok) {
    if constexpr (!Checked) {
      return udwadia_kalaba_acceleration<Model, S, Forces>(p, q, qd, t, eo);
    } else {
      Acceleration<S, n, m> unusable{};
      unusable.qdd = Vec<S, n>::constant(S(NAN));
      unusable.status = Status::singular;
      return unusable;
    }
  }
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
  detail::store_result<Forces>(r, w.F, out);
  out.status = !all_finite_branchless(r.qdd) ? Status::non_finite
               : r.rank < declared_constraint_rank<Model>::value ? Status::singular
                                                                  : Status::ok;
  return out;
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
  template <class Model, class S, bool Checked>
  NHOLO_HDI static Acceleration<S, Model::n, m_of<Model>> acceleration(
      const typename Model::Params& p, const Vec<S, Model::n>& q, const Vec<S, Model::n>& qd, S t,
      const EvalOptions& eo, const ConstantMassCache<S, Model::n, Checked>& c) {
    return udwadia_kalaba_acceleration_cached<Model, S, true, Checked>(p, q, qd, t, eo, c);
  }
  template <class Model, class S, bool Checked>
  NHOLO_HDI static Acceleration<S, Model::n, m_of<Model>> rhs_acceleration(
      const typename Model::Params& p, const Vec<S, Model::n>& q, const Vec<S, Model::n>& qd, S t,
      const EvalOptions& eo, const ConstantMassCache<S, Model::n, Checked>& c) {
    return udwadia_kalaba_acceleration_cached<Model, S, false, Checked>(p, q, qd, t, eo, c);
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

}  // namespace nholo
