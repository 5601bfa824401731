// nholo/kernels/system.hpp — a model under a formulation, as a first-order
// system y' = f(t, y) for the steppers, with drift control and observables.
//
// System concept (valid expressions), sys a const System, y Vec<S, N>:
//   System::N, System::n, System::m          state size, coordinates, constraints
//   Status st = sys(t, y, dydt)              right-hand side; st != ok: unusable
//   bool moved = sys.post_step(t, y)         drift projection after an accepted
//                                            step (true if y was changed)
//   sys.observe(t, y, obs)                   qdd, forces, multipliers,
//                                            constraint residual, energy
//
// State layout: y = (q, qd) (N = 2n). Formulations available here:
//   udwadia_kalaba    M qdd = F + Q_i^c + Q_ni^c   (fundamental.hpp), with the
//                     singular-mass form (seed 000 eq 2.7) chosen automatically
//                     when M is not positive definite;
//   conflated         the same on Conflated<Model> (Hamel's paradox): pass
//                     Conflated<Model> as the model.
#pragma once

#include "dynamics.hpp"
#include "fundamental.hpp"
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

// Udwadia–Kalaba for a model (ideal + nonideal); singular-mass fallback.
template <class Model, class S>
NHOLO_HDI Acceleration<S, Model::n, m_of<Model>> udwadia_kalaba_acceleration(
    const typename Model::Params& p, const Vec<S, Model::n>& q, const Vec<S, Model::n>& qd, S t,
    const EvalOptions& eo) {
  constexpr int n = Model::n;
  constexpr int m = m_of<Model>;
  Acceleration<S, n, m> out;
  // unconstrained system: M qdd = F
  Mat<S, n, n> M;
  Vec<S, n> F;
  lagrangian_terms<Model>(p, q, qd, t, M, F);
  // constraints: A qdd = b, with residuals for drift monitoring / correction
  Mat<S, m, n> A;
  Vec<S, m> b;
  constraint_terms<Model>(p, q, qd, t, A, b, &out.residual, &out.velocity_residual);
  if (eo.drift == DriftControl::baumgarte) {
    for (int l = 0; l < Model::m_position; ++l)
      b[l] -= S(2.0 * eo.baumgarte_alpha) * out.velocity_residual[l] +
              S(eo.baumgarte_beta * eo.baumgarte_beta) * out.residual[l];
    for (int l = Model::m_position; l < Model::m_position + Model::m_velocity; ++l)
      b[l] -= S(eo.baumgarte_alpha) * out.residual[l];
  }
  // nonideal constraint forces
  const Vec<S, n> C = nonideal_terms<Model>(p, q, qd, t);
  auto r = udwadia_kalaba(M, F, A, b, C, eo.pinv);
  out.singular_mass = false;
  if (r.status == Status::singular) {
    // eq 2.7 covers ideal constraints only
    bool ideal = true;
    for (int i = 0; i < n; ++i) ideal = ideal && C[i] == S(0);
    if (ideal) {
      r = udwadia_kalaba_singular(M, F, A, b, eo.pinv);
      out.singular_mass = true;
    }
  }
  out.qdd = r.qdd;
  out.force_applied = F;
  out.force_ideal = r.force_ideal;
  out.force_nonideal = r.force_nonideal;
  out.multiplier = r.multiplier;
  out.status = r.status;
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

// A model under the Udwadia–Kalaba formulation as y' = f(t, y).
template <class Model, class S = double>
struct UdwadiaKalabaSystem {
  using model_type = Model;
  using scalar = S;
  using Params = typename Model::Params;
  static constexpr int n = Model::n;
  static constexpr int m = m_of<Model>;
  static constexpr int N = 2 * n;

  Params params;
  EvalOptions eval;

  // y' = (qd, qdd(t, q, qd))
  NHOLO_HDI Status operator()(S t, const Vec<S, N>& y, Vec<S, N>& dydt) const {
    Vec<S, n> q, qd;
    split(y, q, qd);
    const auto acc = udwadia_kalaba_acceleration<Model, S>(params, q, qd, t, eval);
    for (int i = 0; i < n; ++i) {
      dydt[i] = qd[i];
      dydt[n + i] = acc.qdd[i];
    }
    if (acc.status != Status::ok) return acc.status;
    return all_finite(dydt) ? Status::ok : Status::non_finite;
  }

  // Projection onto the constraint manifold (drift = project): positions onto
  // phi = 0, then velocities onto phidot = 0 and g = 0, each step minimal in
  // the M-norm (Newton iterations for nonlinear constraints).
  NHOLO_HDI bool post_step(S t, Vec<S, N>& y) const {
    if (eval.drift != DriftControl::project) return false;
    constexpr int mp = Model::m_position;
    constexpr int mpv = Model::m_position + Model::m_velocity;
    if constexpr (mpv == 0) {
      return false;
    } else {
      Vec<S, n> q, qd;
      split(y, q, qd);
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
      for (int i = 0; i < n; ++i) {
        y[i] = q[i];
        y[n + i] = qd[i];
      }
      return moved;
    }
  }

  NHOLO_HDI void observe(S t, const Vec<S, N>& y, Observation<S, n, m>& obs) const {
    Vec<S, n> q, qd;
    split(y, q, qd);
    const auto acc = udwadia_kalaba_acceleration<Model, S>(params, q, qd, t, eval);
    obs.qdd = acc.qdd;
    obs.force_ideal = acc.force_ideal;
    obs.force_nonideal = acc.force_nonideal;
    obs.multiplier = acc.multiplier;
    obs.status = acc.status;
    S r = S(0);
    for (int l = 0; l < Model::m_position + Model::m_velocity; ++l) {
      r = max_of(r, S(fabs(acc.residual[l])));
      r = max_of(r, S(fabs(acc.velocity_residual[l])));
    }
    obs.constraint_residual = r;
    if constexpr (has_energy<Model>::value) {
      obs.energy = Model::energy(params, q, qd, t);
    } else {
      obs.energy = S(NAN);
    }
  }

  NHOLO_HDI static void split(const Vec<S, N>& y, Vec<S, n>& q, Vec<S, n>& qd) {
    for (int i = 0; i < n; ++i) {
      q[i] = y[i];
      qd[i] = y[n + i];
    }
  }
};

}  // namespace nholo
