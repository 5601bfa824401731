// nholo/kernels/consistency.hpp — initial states on the constraint manifold.
//
//   ConsistencyResult r = complete_state<Model>(p, q, q_given, qd, qd_given, t, opt);
//     Coordinates and velocities NOT given (mask false) are solved from the
//     constraints: Newton iterations on phi(q, t) = 0 over the free
//     coordinates, then on (phidot, g)(q, qd, t) = 0 over the free velocities,
//     each step the minimum-norm correction delta = -J_free^+ r (given
//     components never move). Works for constraints nonlinear in qd.
//   r.residual       max |phi|, |phidot|, |g| after completion
//   project_state<Model>(p, q, qd, t, opt)   M-weighted projection of the whole
//     state (all components may move), as the drift projection does.
#pragma once

#include "dynamics.hpp"
#include "formulations/udwadia_kalaba.hpp"
#include "fundamental.hpp"
#include "system.hpp"

namespace nholo {

struct ConsistencyOptions {
  PinvOptions pinv;
  int iterations = 20;
  double tol = 1e-13;  // residual considered satisfied, relative to 1 + |q|_inf + |qd|_inf
};

namespace detail {
// The Newton steps go on to a sixteenth of the accepted residual, measured
// at the state they start from; the state is accepted at tol relative to the
// larger of its size before and after the move. Before, both were tol, at
// the sizes before and after: a projection that shrank the velocities
// (x = c yd zd from yd, zd ~ 1 to yd zd ~ 0.3) stopped just under the first
// and failed the second, and 0.6 % of the states were rejected.
constexpr double kIterateBelow = 1.0 / 16.0;

template <int n, class S>
NHOLO_HDI S state_size(const Vec<S, n>& q, const Vec<S, n>& qd) {
  return S(1) + norm_inf(q) + norm_inf(qd);
}
}  // namespace detail

template <class S>
struct ConsistencyResult {
  S residual;   // after the operation
  bool converged;
};

template <class Model, class S>
NHOLO_HDI S constraint_residual_max(const typename Model::Params& p, const Vec<S, Model::n>& q,
                                    const Vec<S, Model::n>& qd, S t) {
  constexpr int m = m_of<Model>;
  Mat<S, m, Model::n> A;
  Vec<S, m> b, res, vres;
  constraint_terms<Model, S>(p, q, qd, t, A, b, &res, &vres);
  return constraint_residual_norm<Model, S>(res, vres);
}

namespace detail {
// Newton iterations over the free components (given[j] false) that drive
// the first r constraint residuals to zero by minimum-norm steps: the
// position ones phi by moving q (Velocity = false), or the velocity ones
// (phidot, g) by moving qd (Velocity = true).
template <class Model, int r, bool Velocity, class S>
NHOLO_HDI void complete_rows(const typename Model::Params& p, Vec<S, Model::n>& q,
                             Vec<S, Model::n>& qd, const bool* given, S t, S tol,
                             const ConsistencyOptions& opt) {
  constexpr int n = Model::n;
  constexpr int m = m_of<Model>;
  for (int it = 0; it < opt.iterations; ++it) {
    Mat<S, m, n> A;
    Vec<S, m> b, res;
    constraint_terms<Model, S>(p, q, qd, t, A, b, Velocity ? nullptr : &res,
                               Velocity ? &res : nullptr);
    Mat<S, r, n> J = Mat<S, r, n>::zero();
    Vec<S, r> g;
    for (int l = 0; l < r; ++l) {
      g[l] = res[l];
      for (int j = 0; j < n; ++j) J(l, j) = given[j] ? S(0) : A(l, j);
    }
    if (!(norm_inf(g) > tol)) break;
    const Vec<S, n> dx = pinv(J, S(opt.pinv.rtol), S(opt.pinv.atol)) * g;
    if constexpr (Velocity) {
      qd -= dx;
    } else {
      q -= dx;
    }
  }
}
}  // namespace detail

template <class Model, class S>
NHOLO_HDI ConsistencyResult<S> complete_state(const typename Model::Params& p,
                                              Vec<S, Model::n>& q, const bool* q_given,
                                              Vec<S, Model::n>& qd, const bool* qd_given, S t,
                                              const ConsistencyOptions& opt = ConsistencyOptions()) {
  constexpr int mp = Model::m_position;
  constexpr int mpv = Model::m_position + Model::m_velocity;
  const S size_before = detail::state_size(q, qd);
  const S tol = S(opt.tol * detail::kIterateBelow) * size_before;
  // phi(q) = 0 over the free coordinates
  if constexpr (mp > 0) detail::complete_rows<Model, mp, false>(p, q, qd, q_given, t, tol, opt);
  // (phidot, g)(q, qd) = 0 over the free velocities
  if constexpr (mpv > 0) detail::complete_rows<Model, mpv, true>(p, q, qd, qd_given, t, tol, opt);
  ConsistencyResult<S> out;
  out.residual = constraint_residual_max<Model, S>(p, q, qd, t);
  const S size_after = detail::state_size(q, qd);
  out.converged =
      !(out.residual > S(opt.tol) * (size_after > size_before ? size_after : size_before));
  return out;
}

template <class Model, class S>
NHOLO_HDI ConsistencyResult<S> project_state(const typename Model::Params& p, Vec<S, Model::n>& q,
                                             Vec<S, Model::n>& qd, S t,
                                             const ConsistencyOptions& opt = ConsistencyOptions()) {
  constexpr int n = Model::n;
  UdwadiaKalabaSystem<Model, S> sys;
  sys.params = p;
  sys.eval.pinv = opt.pinv;
  sys.eval.drift = DriftControl::project;
  sys.eval.project_iterations = opt.iterations;
  const S size_before = detail::state_size(q, qd);
  sys.eval.project_tol = opt.tol * detail::kIterateBelow * static_cast<double>(size_before);
  Vec<S, 2 * n> y;
  for (int i = 0; i < n; ++i) {
    y[i] = q[i];
    y[n + i] = qd[i];
  }
  sys.post_step(t, y);
  for (int i = 0; i < n; ++i) {
    q[i] = y[i];
    qd[i] = y[n + i];
  }
  ConsistencyResult<S> out;
  out.residual = constraint_residual_max<Model, S>(p, q, qd, t);
  const S size_after = detail::state_size(q, qd);
  out.converged =
      !(out.residual > S(opt.tol) * (size_after > size_before ? size_after : size_before));
  return out;
}

}  // namespace nholo
