// nholo/kernels/dynamics.hpp — from a model's Lagrangian and constraints to the
// matrices of the fundamental equation, by forward-mode AD (dual.hpp).
//
//   lagrangian_terms<Model>(p, q, qd, t, M, F)        M = d2L/dqd2,
//       F = dL/dq - (d2L/dqd dq) qd - d2L/dqd dt + Q_np      (n x n, n)
//   constraint_terms<Model>(p, q, qd, t, A, b, res)   A qdd = b (m x n, m) from
//       position (twice differentiated), velocity (once) and acceleration
//       constraints; res: residuals (phi, phi_dot, g, 0) for drift monitoring
//   nonideal_terms<Model>(p, q, qd, t) -> C           Udwadia's nonideal vector
//
// How the Lagrangian is differentiated in one evaluation: J = Jet2<S, 2n+1, n, 1>
// (dual.hpp) with first-order directions
//   w_j = qd_j (j < n),  w_n = v = (qd, 0, 1) in (q, qd, t)-space,  w_{n+1+i} = q_i,
// and second derivatives only for the pairs (qd_i, qd_j), j <= i, and (qd_i, v).
// Then  dL/dq_i = L.g[n+1+i],
//       M_ij = d2L/dqd_i dqd_j                      (one entry for i, j and j, i),
//       D_v dL/dqd_i = (d2L/dqd_i dq) qd + d2L/dqd_i dt   (entry (qd_i, v)).
// The qd-q and v-q second derivatives, which a nested Dual<Dual<S,2n>,n+1>
// computes and never uses, are not formed.
#pragma once

#include "dual.hpp"
#include "jet2.hpp"
#include "model.hpp"

namespace nholo {

template <class Model>
constexpr int n_of = Model::n;
template <class Model>
constexpr int m_of = constraint_count<Model>();

// M and F by AD, always (the reference for any hand-written override).
// UseStructure (default): a model that declares separable_lagrangian
// (L = T(qd) + U(q, t), model.hpp) gets J = Jet2<S, 2n, n, 0> with
// directions w_j = qd_j, w_{n+i} = q_i and second derivatives only in the
// (qd_i, qd_j) block: D_v dL/dqd = (d2L/dqd dq) qd + d2L/dqd dt vanishes
// identically, so the direction v and its n second derivatives are not
// carried (F = dL/dq). UseStructure = false: the general jet (tests compare
// the two). WithNonpotential = false: F without the model's
// nonpotential_force (the Lagrangian's part alone, which a constant_force
// model's per-trajectory cache holds).
template <class Model, class S, bool UseStructure = true, bool WithNonpotential = true>
NHOLO_FLATTEN NHOLO_HDI void lagrangian_terms_ad(const typename Model::Params& p,
                                                 const Vec<S, Model::n>& q,
                                                 const Vec<S, Model::n>& qd, S t,
                                                 Mat<S, Model::n, Model::n>& M,
                                                 Vec<S, Model::n>& F) {
  constexpr int n = Model::n;
  if constexpr (UseStructure && lagrangian_is_separable<Model>::value) {
    using J = Jet2<S, 2 * n, n, 0>;
    Vec<J, n> qa, qda;
    for (int i = 0; i < n; ++i) {
      seed(qa[i], q[i], n + i, S(1));
      seed(qda[i], qd[i], i, S(1));
    }
    const J L = Model::lagrangian(p, qa, qda, J(t));
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j <= i; ++j) {
        M(i, j) = L.h[i * (i + 1) / 2 + j];
        M(j, i) = M(i, j);
      }
      F[i] = L.g[n + i];
    }
  } else {
    using J = Jet2<S, 2 * n + 1, n, 1>;
    constexpr int hv = n * (n + 1) / 2;  // first (qd_i, v) entry
    Vec<J, n> qa, qda;
    for (int i = 0; i < n; ++i) {
      // q_i: direction q_i, and v has component qd_i
      seed(qa[i], q[i], n, qd[i], n + 1 + i, S(1));
      // qd_i: direction qd_i (v has no qd component)
      seed(qda[i], qd[i], i, S(1));
    }
    J ta;
    seed(ta, t, n, S(1));
    const J L = Model::lagrangian(p, qa, qda, ta);
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j <= i; ++j) {
        M(i, j) = L.h[i * (i + 1) / 2 + j];
        M(j, i) = M(i, j);
      }
      // F_i = dL/dq_i - D_v dL/dqd_i
      F[i] = L.g[n + 1 + i] - L.h[hv + i];
    }
  }
  if constexpr (WithNonpotential && has_nonpotential_force<Model>::value) {
    F += Model::nonpotential_force(p, q, qd, t);
  }
}

namespace detail {
// Seeds of the nested pass D2 = Dual<Dual<S,n>, n+1> (lagrangian_terms_nested,
// formulations.hpp vakonomic_constraint_terms): inner tangents qd_i, outer
// tangents qd_j (j < n) and the direction v = (qd, 0, 1) in (q, qd, t), so
// that f(qa, qda, ta).d[j].d[i] = d2f/dqd_j dqd_i and .d[n].d[i] = D_v df/dqd_i.
template <class S, int n>
NHOLO_HDI void seed_rate_hessian(const Vec<S, n>& q, const Vec<S, n>& qd, S t,
                                 Vec<Dual<Dual<S, n>, n + 1>, n>& qa,
                                 Vec<Dual<Dual<S, n>, n + 1>, n>& qda,
                                 Dual<Dual<S, n>, n + 1>& ta) {
  for (int i = 0; i < n; ++i) {
    seed(qa[i].v, q[i]);
    for (int k = 0; k <= n; ++k) seed(qa[i].d[k], k == n ? qd[i] : S(0));
    seed(qda[i].v, qd[i], i, S(1));
    for (int k = 0; k <= n; ++k) seed(qda[i].d[k], S(k == i ? 1 : 0));
  }
  seed(ta.v, t);
  for (int k = 0; k <= n; ++k) seed(ta.d[k], S(k == n ? 1 : 0));
}

// M(i, j) = f.d[j].d[i] and F_i = -f.d[n].d[i] of a value f computed from the
// seeds of seed_rate_hessian: d2f/dqd2 and -D_v df/dqd.
template <class S, int n>
NHOLO_HDI void rate_hessian_terms(const Dual<Dual<S, n>, n + 1>& f, Mat<S, n, n>& M, Vec<S, n>& F) {
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) M(i, j) = f.d[j].d[i];
    F[i] = -f.d[n].d[i];
  }
}

// Seeds for first derivatives in q: q_i the tangent i of Dual<S, n>, qd
// constant, so that f(qa, qda, D(t)).d[i] = df/dq_i.
template <class S, int n>
NHOLO_HDI void seed_positions(const Vec<S, n>& q, const Vec<S, n>& qd, Vec<Dual<S, n>, n>& qa,
                              Vec<Dual<S, n>, n>& qda) {
  for (int i = 0; i < n; ++i) {
    seed(qa[i], q[i], i, S(1));
    seed(qda[i], qd[i]);
  }
}
}  // namespace detail

// M and F by nested Dual, for a scalar S that is itself an AD type (Jet2
// holds plain scalars only): the derivatives of the flow along a path
// (kernels/euler_poisson.hpp, Taylor coefficients of y' = f(t, y)) evaluate the
// right-hand side at S = Dual<...>. Two passes, as vakonomic_constraint_terms:
//   Dual<Dual<S,n>, n+1>: inner tangents qd_i, outer tangents qd_j and
//     v = (qd, 0, 1): M_ij = d2L/dqd_j dqd_i, D_v dL/dqd_i;
//   Dual<S,n> seeded in q: dL/dq_i.
template <class Model, class S>
NHOLO_HDI void lagrangian_terms_nested(const typename Model::Params& p, const Vec<S, Model::n>& q,
                                       const Vec<S, Model::n>& qd, S t,
                                       Mat<S, Model::n, Model::n>& M, Vec<S, Model::n>& F) {
  constexpr int n = Model::n;
  {
    using D1 = Dual<S, n>;
    using D2 = Dual<D1, n + 1>;
    Vec<D2, n> qa, qda;
    D2 ta;
    detail::seed_rate_hessian(q, qd, t, qa, qda, ta);
    const D2 L = Model::lagrangian(p, qa, qda, ta);
    detail::rate_hessian_terms(L, M, F);
  }
  {
    using D = Dual<S, n>;
    Vec<D, n> qa, qda;
    detail::seed_positions(q, qd, qa, qda);
    const D L = Model::lagrangian(p, qa, qda, D(t));
    for (int i = 0; i < n; ++i) F[i] += L.d[i];
  }
  if constexpr (has_nonpotential_force<Model>::value) {
    F += Model::nonpotential_force(p, q, qd, t);
  }
}

// Model::hand_dynamics callable on the scalar S: a template over the scalar
// (the coin's, every model file's symbolic M and F) takes an AD scalar such
// as the tangent system's Dual<double, K> too; one written for double alone
// does not.
template <class Model, class S, class = void>
struct hand_dynamics_takes : std::false_type {};
template <class Model, class S>
struct hand_dynamics_takes<
    Model, S,
    std::void_t<decltype(Model::hand_dynamics(
        std::declval<const typename Model::Params&>(), std::declval<const Vec<S, Model::n>&>(),
        std::declval<const Vec<S, Model::n>&>(), std::declval<const S&>(),
        std::declval<Mat<S, Model::n, Model::n>&>(), std::declval<Vec<S, Model::n>&>()))>>
    : std::true_type {};

// M and F: the model's hand-written form when it has one that takes S, AD
// otherwise (nested duals when S is an AD type). An AD scalar S (the tangent
// system's Dual<double, K>, the Taylor coefficients of euler_poisson.hpp)
// through the hand-written form carries first derivatives of M and F only,
// where the nested duals would carry second and third derivatives of the
// Lagrangian (n (n + 1) tangents each): the same values up to rounding, a
// fraction of the work (docs/physics.md 4a).
template <class Model, class S>
NHOLO_HDI void lagrangian_terms(const typename Model::Params& p, const Vec<S, Model::n>& q,
                                const Vec<S, Model::n>& qd, S t, Mat<S, Model::n, Model::n>& M,
                                Vec<S, Model::n>& F) {
  if constexpr (has_hand_dynamics<Model>::value && hand_dynamics_takes<Model, S>::value) {
    Model::hand_dynamics(p, q, qd, t, M, F);
    if constexpr (has_nonpotential_force<Model>::value) {
      F += Model::nonpotential_force(p, q, qd, t);
    }
  } else if constexpr (!is_plain_scalar<S>::value) {
    lagrangian_terms_nested<Model>(p, q, qd, t, M, F);
  } else {
    lagrangian_terms_ad<Model>(p, q, qd, t, M, F);
  }
}

// F alone, for a model that declares constant_mass (M is then taken from a
// per-trajectory cache, system.hpp): the hand-written form when the model
// has one (its M discarded); for a separable Lagrangian (L = T(qd) + U(q, t))
// F = dU/dq by first-order duals seeded in q, the rates plain numbers (no
// second derivatives at all); otherwise the full jet of lagrangian_terms_ad
// (its M discarded: the (qd, v) second derivatives are what F needs).
// Plain scalars only (S = double or float).
template <class Model, class S>
NHOLO_FLATTEN NHOLO_HDI Vec<S, Model::n> lagrangian_force(const typename Model::Params& p,
                                                          const Vec<S, Model::n>& q,
                                                          const Vec<S, Model::n>& qd, S t) {
  constexpr int n = Model::n;
  Vec<S, n> F;
  if constexpr (has_hand_dynamics<Model>::value) {
    Mat<S, n, n> M;
    Model::hand_dynamics(p, q, qd, t, M, F);
  } else if constexpr (lagrangian_is_separable<Model>::value) {
    using D = Dual<S, n>;
    Vec<D, n> qa, qda;
    detail::seed_positions(q, qd, qa, qda);
    const D L = Model::lagrangian(p, qa, qda, D(t));
    for (int i = 0; i < n; ++i) F[i] = L.d[i];
  } else {
    Mat<S, n, n> M;
    lagrangian_terms_ad<Model, S, true, false>(p, q, qd, t, M, F);
  }
  if constexpr (has_nonpotential_force<Model>::value) {
    F += Model::nonpotential_force(p, q, qd, t);
  }
  return F;
}

// Constraints differentiated to A qdd = b. `residual` gets, row by row:
// position rows phi(q,t), velocity rows g(q,qd,t), acceleration rows 0;
// `velocity_residual` gets d/dt phi for position rows and g for velocity rows.
// By forward AD of the model's constraints (constraint_terms_by_ad), or, for
// a plain scalar, by the model's own constraint_terms where it declares
// constraint_terms_out_of_line (a large model's plugin,
// host/model_files/plugin_model_calls.hpp: the same computation compiled
// once, out of line, rather than inlined into every right-hand side).
template <class Model, class S>
NHOLO_HDI void constraint_terms_by_ad(const typename Model::Params& p, const Vec<S, Model::n>& q,
                                      const Vec<S, Model::n>& qd, S t,
                                      Mat<S, m_of<Model>, Model::n>& A, Vec<S, m_of<Model>>& b,
                                      Vec<S, m_of<Model>>* residual,
                                      Vec<S, m_of<Model>>* velocity_residual);

template <class Model, class = void>
struct has_out_of_line_constraint_terms : std::false_type {};
template <class Model>
struct has_out_of_line_constraint_terms<Model,
                                        std::void_t<decltype(Model::constraint_terms_out_of_line)>>
    : std::true_type {};

template <class Model, class S>
NHOLO_HDI void constraint_terms(const typename Model::Params& p, const Vec<S, Model::n>& q,
                                const Vec<S, Model::n>& qd, S t, Mat<S, m_of<Model>, Model::n>& A,
                                Vec<S, m_of<Model>>& b, Vec<S, m_of<Model>>* residual = nullptr,
                                Vec<S, m_of<Model>>* velocity_residual = nullptr) {
  if constexpr (has_out_of_line_constraint_terms<Model>::value &&
                std::is_floating_point<S>::value) {
    Model::constraint_terms(p, q, qd, t, A, b, residual, velocity_residual);
  } else {
    constraint_terms_by_ad<Model>(p, q, qd, t, A, b, residual, velocity_residual);
  }
}

template <class Model, class S>
NHOLO_HDI void constraint_terms_by_ad(const typename Model::Params& p, const Vec<S, Model::n>& q,
                                      const Vec<S, Model::n>& qd, S t,
                                      Mat<S, m_of<Model>, Model::n>& A, Vec<S, m_of<Model>>& b,
                                      Vec<S, m_of<Model>>* residual,
                                      Vec<S, m_of<Model>>* velocity_residual) {
  constexpr int n = Model::n;
  constexpr int mp = Model::m_position;
  constexpr int mv = Model::m_velocity;
  constexpr int ma = Model::m_acceleration;
  if constexpr (mp > 0) {
    // phi with D2 = Dual<Dual<S,n+1>,1>: inner tangents q_j (j < n) and the
    // direction v = (qd, 1) in (q, t); outer tangent v again.
    //   A_lj = dphi_l/dq_j,  phidot = D_v phi,  b_l = -D_v D_v phi_l
    using D1 = Dual<S, n + 1>;
    using D2 = Dual<D1, 1>;
    Vec<D2, n> qa;
    for (int i = 0; i < n; ++i) {
      seed(qa[i].v, q[i], i, S(1), n, qd[i]);
      seed(qa[i].d[0], qd[i]);
    }
    D2 ta;
    seed(ta.v, t, n, S(1));
    seed(ta.d[0], S(1));
    const Vec<D2, mp> phi = Model::position_constraints(p, qa, ta);
    for (int l = 0; l < mp; ++l) {
      for (int j = 0; j < n; ++j) A(l, j) = phi[l].v.d[j];
      b[l] = -phi[l].d[0].d[n];
      if (residual) (*residual)[l] = phi[l].v.v;
      if (velocity_residual) (*velocity_residual)[l] = phi[l].v.d[n];
    }
  }
  if constexpr (mv > 0) {
    // g with D = Dual<S,n+1>: tangents qd_j (j < n) and v = (qd, 0, 1).
    //   A_lj = dg_l/dqd_j,  b_l = -D_v g_l
    using D = Dual<S, n + 1>;
    Vec<D, n> qa, qda;
    for (int i = 0; i < n; ++i) {
      seed(qa[i], q[i], n, qd[i]);
      seed(qda[i], qd[i], i, S(1));
    }
    D ta;
    seed(ta, t, n, S(1));
    const Vec<D, mv> g = Model::velocity_constraints(p, qa, qda, ta);
    for (int l = 0; l < mv; ++l) {
      for (int j = 0; j < n; ++j) A(mp + l, j) = g[l].d[j];
      b[mp + l] = -g[l].d[n];
      if (residual) (*residual)[mp + l] = g[l].v;
      if (velocity_residual) (*velocity_residual)[mp + l] = g[l].v;
    }
  }
  if constexpr (ma > 0) {
    // h = A qdd - b, linear in qdd: A_lj = dh_l/dqdd_j, b_l = -h_l(qdd = 0)
    using D = Dual<S, n>;
    Vec<D, n> qa, qda, qdda;
    for (int i = 0; i < n; ++i) {
      seed(qa[i], q[i]);
      seed(qda[i], qd[i]);
      seed(qdda[i], S(0), i, S(1));
    }
    const Vec<D, ma> h = Model::acceleration_constraints(p, qa, qda, qdda, D(t));
    for (int l = 0; l < ma; ++l) {
      for (int j = 0; j < n; ++j) A(mp + mv + l, j) = h[l].d[j];
      b[mp + mv + l] = -h[l].v;
      if (residual) (*residual)[mp + mv + l] = S(0);
      if (velocity_residual) (*velocity_residual)[mp + mv + l] = S(0);
    }
  }
}

// Udwadia's nonideal vector C (zero for ideal constraints).
template <class Model, class S>
NHOLO_HDI Vec<S, Model::n> nonideal_terms(const typename Model::Params& p,
                                          const Vec<S, Model::n>& q, const Vec<S, Model::n>& qd,
                                          S t) {
  if constexpr (has_nonideal_force<Model>::value) {
    return Model::nonideal_force(p, q, qd, t);
  } else {
    return Vec<S, Model::n>::zero();
  }
}

}  // namespace nholo
