// nholo/kernels/formulations.hpp — the other formulations of constrained
// mechanics, side by side with Udwadia–Kalaba (system.hpp), all fed by the
// same model definition (Lagrangian + constraints, nothing derived per model).
//
// Every system here follows the System concept of system.hpp (model_type,
// scalar, Params, n, m, n_extra, N, formulation_name, params, eval,
// sys(t, y, dydt) -> Status, post_step, observe, pack, split), so host code and
// the ensemble functor treat all formulations alike. Notation: M qdd = F is the
// unconstrained system (F includes Q_np), A qdd = b the constraints
// differentiated once (velocity rows) or twice (position rows), C Udwadia's
// nonideal vector (zero for ideal constraints); see dynamics.hpp.
//
//   LagrangeMultiplierSystem<Model>   "lagrange_multiplier", y = (q, qd)
//     Chetaev / d'Alembert–Lagrange with multipliers (Flannery (2011) eq 3.16,
//     Lemos (2022) eq 8), the nonideal C added to the impressed force:
//       [ M  -A^T ] [ qdd    ]   [ F + C ]
//       [ A   0   ] [ lambda ] = [ b     ]
//     solved by LU with partial pivoting (lu.hpp). A singular saddle-point
//     matrix (redundant constraints, A not of full row rank, or M singular on
//     null(A)) gives Status::singular, never NaN. Outputs:
//       force_ideal = A^T lambda (= M qdd - F - C), force_nonideal = C,
//       multiplier = lambda.
//
//   NullSpaceSystem<Model>            "null_space", y = (q, qd)
//     Maggi / Kane: the constraint force is eliminated by projecting the
//     equations onto the null space of A. DEPARTURE FROM THE DESIGN (see
//     docs/architecture.md, "Departures from the design"): the design
//     describes the velocity-level embedding qd = S(q) u with extra state u,
//     S^T M S ud = S^T (F - M Sdot u). A null-space basis S(q) from an
//     SVD (the only basis available generically, per thread) is not a
//     continuous function of q: its columns may rotate or flip from one state
//     to the next, so u would jump and Sdot does not exist. This is the
//     acceleration-level null-space method instead, which is basis-independent:
//       qdd = A^+ b + S z,   (S^T M S) z = S^T (F + C - M A^+ b),
//     S an orthonormal basis of null(A) and A^+ both from one Householder QR
//     of A^T when A has full row rank (pinv.hpp null_space_qr; relative test
//     |R_kk| > sqrt(gram_rtol) max |R_jj|), else from one Jacobi SVD
//     (pinv.hpp null_space), S^T M S by Cholesky. qdd does not depend on which
//     orthonormal basis the SVD returns (S (S^T M S)^-1 S^T is invariant under
//     S -> S Q). The state stays (q, qd) (n_extra = 0), the constraints may be
//     nonlinear in qd and redundant (the rank of A is found numerically, A^+
//     gives the least-squares particular solution). Outputs:
//       force_ideal = M qdd - F - C, force_nonideal = C,
//       multiplier = (A^+)^T force_ideal (the minimum-norm multipliers).
//
//   VakonomicSystem<Model>            "vakonomic", y = (q, qd, lambda), n_extra = m
//     Vakonomic mechanics (docs/physics.md, section 3; Lemos (2022) eq 17;
//     Flannery (2011) eq 6.9):
//     the Euler–Lagrange equations of L_lambda = L + lambda . g with lambda as
//     extra coordinates,
//       (M + sum_l lambda_l d2g_l/dqd2) qdd + A^T lambdadot
//           = F + C + sum_l lambda_l (dg_l/dq - (d2g_l/dqd dq) qd - d2g_l/dqd dt),
//       A qdd = b,
//     solved for (qdd, lambdadot) by the same LU (singular -> Status::singular).
//     Sign convention: exactly Lemos (2022) eq 17 (multipliers enter as
//     + lambda . g); for the rolling coin it reproduces Lemos (2022) eqs 41-44
//     term by term (m xdd = -lambdadot_1, m ydd = m g sin(alpha) - lambdadot_2,
//     ...), so no flip was needed, and Lemos' level-plane choice lambda_1(0) = -m xd(0),
//     lambda_2(0) = -m yd(0) reproduces the nonholonomic motion
//     (tests/test_formulations.cpp). All derivatives of g (d2g/dqd2 for
//     constraints nonlinear in qd such as Appell's, d2g/dqd dq, d2g/dqd dt) come
//     from nested forward AD of lambda . g (vakonomic_constraint_terms), in the
//     same way as M and F come from L (dynamics.hpp).
//     Position constraints phi(q, t) = 0 enter through their velocity form
//     g = phidot = J(q, t) qd + phi_t (one more forward derivative of phi); for
//     them the lambda terms cancel (Lemos (2022) eq 20) and the vakonomic motion is
//     the nonholonomic one with lambdadot = -(Lagrange multiplier).
//     Acceleration-level constraints have no vakonomic form: a model with
//     m_acceleration > 0 is rejected at compile time.
//     The nonideal C, where a model has one, is added to the impressed force
//     (the vakonomic principle has no notion of it). The initial multipliers
//     are inputs (pack's lambda0). Outputs: force_ideal = M qdd - F - C (the
//     vakonomic constraint force, Lemos (2022) eq 22), force_nonideal = C,
//     multiplier = lambda (the state), qdd.
//
//   ConflatedSystem<Model> (system.hpp) = UdwadiaKalabaSystem<Conflated<Model>>,
//     "conflated": the fundamental equation on the model's conflated Lagrangian,
//     with the singular-mass form (Udwadia & Wanichanon (2010) eq 2.7) chosen
//     automatically.
//
// Drift control (eval.drift) works as in system.hpp for all of them: Baumgarte
// corrects b, projection moves (q, qd) (never the vakonomic multipliers).
#pragma once

#include "cholesky.hpp"
#include "lu.hpp"
#include "pinv.hpp"
#include "system.hpp"

namespace nholo {

// ------------------------------------------------------------------ multipliers

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
  out.qdd = Vec<S, n>::zero();
  out.force_applied = w.F;
  out.force_ideal = Vec<S, n>::zero();
  out.force_nonideal = w.C;
  out.multiplier = Vec<S, m>::zero();
  out.residual = w.residual;
  out.velocity_residual = w.velocity_residual;
  out.singular_mass = false;
  // saddle-point (KKT) system
  Mat<S, n + m, n + m> K = Mat<S, n + m, n + m>::zero();
  Vec<S, n + m> rhs;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) K(i, j) = w.M(i, j);
    for (int l = 0; l < m; ++l) K(i, n + l) = -w.A(l, i);
    rhs[i] = w.F[i] + w.C[i];
  }
  for (int l = 0; l < m; ++l) {
    for (int j = 0; j < n; ++j) K(n + l, j) = w.A(l, j);
    rhs[n + l] = w.b[l];
  }
  Vec<S, n + m> x;
  if (!lu_solve_system(K, rhs, x, S(eo.lu_rtol))) {
    out.status = Status::singular;
    return out;
  }
  for (int i = 0; i < n; ++i) out.qdd[i] = x[i];
  for (int l = 0; l < m; ++l) out.multiplier[l] = x[n + l];
  // Q_i = A^T lambda (= M qdd - F - C)
  out.force_ideal = mul_transposed(w.A, out.multiplier);
  out.status = all_finite(x) ? Status::ok : Status::non_finite;
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

// ------------------------------------------------------------------ null space

// Acceleration-level null-space (Maggi / Kane) method:
//   qdd = A^+ b + S z,   (S^T M S) z = S^T (F + C - M A^+ b)
template <class Model, class S>
NHOLO_HDI Acceleration<S, Model::n, m_of<Model>> null_space_acceleration(
    const typename Model::Params& p, const Vec<S, Model::n>& q, const Vec<S, Model::n>& qd, S t,
    const EvalOptions& eo) {
  constexpr int n = Model::n;
  constexpr int m = m_of<Model>;
  ConstrainedTerms<S, n, m> w;
  constrained_terms<Model>(p, q, qd, t, eo, w);
  Acceleration<S, n, m> out;
  out.qdd = Vec<S, n>::zero();
  out.force_applied = w.F;
  out.force_ideal = Vec<S, n>::zero();
  out.force_nonideal = w.C;
  out.multiplier = Vec<S, m>::zero();
  out.residual = w.residual;
  out.velocity_residual = w.velocity_residual;
  out.singular_mass = false;
  // orthonormal basis of null(A) (first ns.dim columns) and A^+: Householder
  // QR of A^T when A has full row rank (the common case), the Jacobi SVD
  // otherwise (redundant or vanishing rows)
  NullSpace<S, m, n> ns;
  if constexpr (m <= n) {
    if (!null_space_qr(w.A, S(sqrt(eo.pinv.gram_rtol)), ns))
      ns = null_space(w.A, S(eo.pinv.rtol), S(eo.pinv.atol));
  } else {
    ns = null_space(w.A, S(eo.pinv.rtol), S(eo.pinv.atol));
  }
  // particular solution qp = A^+ b, residual force r = F + C - M qp
  const Vec<S, n> qp = ns.pinv * w.b;
  const Vec<S, n> r = w.F + w.C - w.M * qp;
  // reduced mass matrix S^T M S and force S^T r; the unused columns of the
  // basis are zero, their rows/columns are decoupled and padded with a unit
  // pivot of M's scale, so that a fixed-size Cholesky solves the ns.dim block
  // and returns z_i = 0 for the padding
  const Mat<S, n, n> Mred = transpose(ns.basis) * (w.M * ns.basis);
  Vec<S, n> rred = mul_transposed(ns.basis, r);
  S pad = S(0);
  for (int i = 0; i < ns.dim; ++i) pad = max_of(pad, Mred(i, i));
  if (!(pad > S(0))) pad = S(1);
  Mat<S, n, n> Mp = Mred;
  for (int i = ns.dim; i < n; ++i) {
    for (int j = 0; j < n; ++j) Mp(i, j) = Mp(j, i) = S(0);
    Mp(i, i) = pad;
    rred[i] = S(0);
  }
  Mat<S, n, n> L;
  if (!cholesky(Mp, L, S(eo.pinv.chol_rtol))) {
    out.status = Status::singular;  // M not positive definite on null(A)
    return out;
  }
  const Vec<S, n> z = cholesky_solve(L, rred);
  out.qdd = qp + ns.basis * z;
  // implied constraint force and the minimum-norm multipliers
  out.force_ideal = w.M * out.qdd - w.F - w.C;
  out.multiplier = mul_transposed(ns.pinv, out.force_ideal);
  out.status = all_finite(out.qdd) ? Status::ok : Status::non_finite;
  // A lost rank where the model says it does not: reported, as UK does
  if (out.status == Status::ok && n - ns.dim < declared_constraint_rank<Model>::value)
    out.status = Status::singular;
  return out;
}

struct NullSpaceFormulation {
  template <class Model>
  static constexpr const char* name() {
    return "null_space";
  }
  template <class Model, class S>
  NHOLO_HDI static Acceleration<S, Model::n, m_of<Model>> acceleration(
      const typename Model::Params& p, const Vec<S, Model::n>& q, const Vec<S, Model::n>& qd, S t,
      const EvalOptions& eo) {
    return null_space_acceleration<Model, S>(p, q, qd, t, eo);
  }
};

template <class Model, class S = double>
using NullSpaceSystem = SecondOrderSystem<Model, S, NullSpaceFormulation>;

// ------------------------------------------------------------------ vakonomic

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
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) Mg(i, j) = G.d[j].d[i];
      Fg[i] = -G.d[n].d[i];
    }
  }
  {
    using D = Dual<S, n>;
    Vec<D, n> qa, qda;
    for (int i = 0; i < n; ++i) {
      seed(qa[i], q[i], i, S(1));
      seed(qda[i], qd[i]);
    }
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
  out.qdd = Vec<S, n>::zero();
  out.lambdadot = Vec<S, m>::zero();
  out.force_applied = w.F;
  out.force_ideal = Vec<S, n>::zero();
  out.force_nonideal = w.C;
  out.multiplier = lambda;
  out.residual = w.residual;
  out.velocity_residual = w.velocity_residual;
  out.singular_mass = false;
  // [M + Mg  A^T; A 0] [qdd; lambdadot] = [F + C + Fg; b]
  Mat<S, n + m, n + m> K = Mat<S, n + m, n + m>::zero();
  Vec<S, n + m> rhs;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) K(i, j) = w.M(i, j) + Mg(i, j);
    for (int l = 0; l < m; ++l) K(i, n + l) = w.A(l, i);
    rhs[i] = w.F[i] + w.C[i] + Fg[i];
  }
  for (int l = 0; l < m; ++l) {
    for (int j = 0; j < n; ++j) K(n + l, j) = w.A(l, j);
    rhs[n + l] = w.b[l];
  }
  Vec<S, n + m> x;
  if (!lu_solve_system(K, rhs, x, S(eo.lu_rtol))) {
    out.status = Status::singular;
    return out;
  }
  for (int i = 0; i < n; ++i) out.qdd[i] = x[i];
  for (int l = 0; l < m; ++l) out.lambdadot[l] = x[n + l];
  // the vakonomic constraint force (Lemos (2022) eq 22): M qdd - F - C
  out.force_ideal = w.M * out.qdd - w.F - w.C;
  out.status = all_finite(x) ? Status::ok : Status::non_finite;
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
    for (int i = 0; i < n; ++i) {
      dydt[i] = y[n + i];
      dydt[n + i] = acc.qdd[i];
    }
    for (int l = 0; l < m; ++l) dydt[2 * n + l] = acc.lambdadot[l];
    if (acc.status != Status::ok) return acc.status;
    return all_finite(dydt) ? Status::ok : Status::non_finite;
  }

  // (q, qd) projected onto the constraint manifold (drift = project); lambda
  // is left as it is
  NHOLO_HDI bool post_step(S t, Vec<S, N>& y) const {
    if (eval.drift != DriftControl::project) return false;
    Vec<S, n> q, qd;
    split(y, q, qd);
    const bool moved = project_onto_constraints<Model, S>(params, eval, t, q, qd);
    store_state(q, qd, y);
    return moved;
  }

  NHOLO_HDI void observe(S t, const Vec<S, N>& y, Observation<S, n, m>& obs) const {
    Vec<S, n> q, qd;
    split(y, q, qd);
    const auto acc = acceleration(t, y);
    obs.qdd = acc.qdd;
    obs.force_ideal = acc.force_ideal;
    obs.force_nonideal = acc.force_nonideal;
    obs.multiplier = acc.multiplier;
    obs.status = acc.status;
    obs.constraint_residual =
        constraint_residual_norm<Model, S>(acc.residual, acc.velocity_residual);
    obs.energy = model_energy<Model, S>(params, q, qd, t);
  }

  // y = (q, qd, lambda0)
  NHOLO_HDI void pack(const Vec<S, n>& q, const Vec<S, n>& qd, const Vec<S, m>& lambda0,
                      Vec<S, N>& y) const {
    store_state(q, qd, y);
    for (int l = 0; l < m; ++l) y[2 * n + l] = lambda0[l];
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
