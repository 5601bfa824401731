// nholo/kernels/euler_poisson.hpp — the independent check of the embedded
// formulation (formulations/embedded.hpp): whether a path solves Wang &
// Gao's Euler–Poisson equations (26), eq (26) being
//   E_j = dTheta/dq_j - d/dt dTheta/dqd_j + d2/dt2 dTheta/dqdd_j = 0
// for the independent j, with Theta(q_ind, qd_ind, qdd_ind, t) the Lagrangian
// with the embedded constraints substituted (eq 21); and the Taylor
// coefficients of a System's flow that give the path's higher derivatives.
// docs/formulations.md, "Embedded constraints".
//
// Model part read here: Model::m_embedded, Model::embedded_coordinate(l),
// Model::embedded_constraints(p, q, qd, t) (formulations/embedded.hpp).
#pragma once

#include "dual.hpp"
#include "linalg.hpp"
#include "status.hpp"
#include "system.hpp"

namespace nholo {

namespace detail {
template <class Model>
struct EmbeddedIndex {
  static constexpr int n = Model::n;
  static constexpr int k = Model::m_embedded;
  static constexpr int r = n - k;
  // the independent coordinates, in increasing order
  NHOLO_HDI static void independent(int* ind) {
    int c = 0;
    for (int i = 0; i < n; ++i) {
      bool dep = false;
      for (int l = 0; l < k; ++l) dep = dep || Model::embedded_coordinate(l) == i;
      if (!dep) ind[c++] = i;
    }
  }
};
}  // namespace detail

// The system SysT<Model, T> with the model's parameters p and options eo
template <template <class, class> class SysT, class Model, class T>
NHOLO_HDI SysT<Model, T> system_with(const typename Model::Params& p, const EvalOptions& eo) {
  SysT<Model, T> sys;
  sys.params = p;
  sys.eval = eo;
  return sys;
}

// Taylor coefficients of the flow of a System at (t, y), as derivatives:
// d[0] = y' = f(t, y), d[1] = y'', d[2] = y'''. Forward AD of the right-hand
// side along the path (Taylor mode by nested duals): with tau = e1 + e2 (e1,
// e2 the tangents of Dual<Dual<S,1>,1>), y(t + tau) = y + tau y' + tau^2/2 y''
// is exact to the order that the second tau-derivative of f(t + tau,
// y(t + tau)), the e1 e2 coefficient, needs: it is y'''. SysT<Model, T> must
// accept any scalar T (the formulations whose terms come from
// lagrangian_terms, constraint_terms and lu: all but null_space).
template <template <class, class> class SysT, class Model, class S, int N>
NHOLO_HDI Status flow_derivatives(const typename Model::Params& p, const EvalOptions& eo, S t,
                                  const Vec<S, N>& y, Vec<S, N> d[3]) {
  {
    const auto sys = system_with<SysT, Model, S>(p, eo);
    const Status st = sys(t, y, d[0]);
    if (st != Status::ok) return st;
  }
  {
    using D = Dual<S, 1>;
    const auto sys = system_with<SysT, Model, D>(p, eo);
    Vec<D, N> ya, fa;
    for (int c = 0; c < N; ++c) {
      ya[c] = D(y[c]);
      ya[c].d[0] = d[0][c];
    }
    D ta(t);
    ta.d[0] = S(1);
    const Status st = sys(ta, ya, fa);
    if (st != Status::ok) return st;
    for (int c = 0; c < N; ++c) d[1][c] = fa[c].d[0];
  }
  {
    using D1 = Dual<S, 1>;
    using D2 = Dual<D1, 1>;
    const auto sys = system_with<SysT, Model, D2>(p, eo);
    Vec<D2, N> ya, fa;
    for (int c = 0; c < N; ++c) {
      D1 v(y[c]);
      v.d[0] = d[0][c];
      D1 dv(d[0][c]);
      dv.d[0] = d[1][c];
      ya[c] = D2(v);
      ya[c].d[0] = dv;
    }
    D1 tv(t);
    tv.d[0] = S(1);
    D2 ta(tv);
    ta.d[0] = D1(S(1));
    const Status st = sys(ta, ya, fa);
    if (st != Status::ok) return st;
    for (int c = 0; c < N; ++c) d[2][c] = fa[c].d[0].d[0];
  }
  return Status::ok;
}

// Theta(q_ind, qd_ind, qdd_ind, t) = L with q_dep = phi + branch, qd_dep =
// d/dt phi (Wang & Gao eq 21), for any scalar T. branch: the constant
// multiple of the period that puts q_dep on the path's branch (0 for the
// forward sleigh; pi once it slides backwards: theta = atan2(yd, xd) + pi).
template <class Model, class T>
NHOLO_HDI T embedded_theta(const typename Model::Params& p,
                           const Vec<T, Model::n - Model::m_embedded>& qi,
                           const Vec<T, Model::n - Model::m_embedded>& qdi,
                           const Vec<T, Model::n - Model::m_embedded>& qddi, const T& t,
                           const Vec<T, Model::m_embedded>& branch) {
  constexpr int n = Model::n;
  constexpr int k = Model::m_embedded;
  constexpr int r = n - k;
  int ind[r > 0 ? r : 1];
  detail::EmbeddedIndex<Model>::independent(ind);
  // phi and d/dt phi = phi_q qd + phi_qd qdd + phi_t in one forward pass
  using D = Dual<T, 1>;
  Vec<D, n> qa, qda;
  for (int i = 0; i < n; ++i) {
    qa[i] = D(T(0));  // phi does not read the dependent coordinates
    qda[i] = D(T(0));
  }
  for (int j = 0; j < r; ++j) {
    qa[ind[j]] = D(qi[j]);
    qa[ind[j]].d[0] = qdi[j];
    qda[ind[j]] = D(qdi[j]);
    qda[ind[j]].d[0] = qddi[j];
  }
  D ta(t);
  ta.d[0] = T(1);
  const Vec<D, k> phi = Model::embedded_constraints(p, qa, qda, ta);
  Vec<T, n> q, qd;
  for (int j = 0; j < r; ++j) {
    q[ind[j]] = qi[j];
    qd[ind[j]] = qdi[j];
  }
  for (int l = 0; l < k; ++l) {
    q[Model::embedded_coordinate(l)] = phi[l].v + branch[l];
    qd[Model::embedded_coordinate(l)] = phi[l].d[0];
  }
  return Model::lagrangian(p, q, qd, t);
}

// The multiple of embedded constraint l's period nearest to a residual
// q_dep - phi (0 without a period): the constraint's branch
template <class Model, class S>
NHOLO_HDI S embedded_period_multiple(int l, const S& residual) {
  const double period = Model::embedded_period(l);
  return period > 0.0 ? S(period) * floor(residual / S(period) + S(0.5)) : S(0);
}

// The multiple of each embedded constraint's period between q_dep and phi at
// (q, qd, t): the branch of the constraint the state is on (0 without a period)
template <class Model, class S>
NHOLO_HDI Vec<S, Model::m_embedded> embedded_branch(const typename Model::Params& p, S t,
                                                    const Vec<S, Model::n>& q,
                                                    const Vec<S, Model::n>& qd) {
  const Vec<S, Model::m_embedded> phi = Model::embedded_constraints(p, q, qd, t);
  Vec<S, Model::m_embedded> branch;
  for (int l = 0; l < Model::m_embedded; ++l)
    branch[l] = embedded_period_multiple<Model>(l, q[Model::embedded_coordinate(l)] - phi[l]);
  return branch;
}

// The Euler–Poisson residual (eq 26) at time t of a path of the independent
// coordinates given by its derivatives: jet[0..4][c] = q_c, q_c', ..., q_c''''
// (full coordinate vectors; only the independent ones are read), on the
// constraints' branch (embedded_theta; default 0). Returns
//   max_j |E_j| / max_j max(|dTheta/dq_j|, |d/dt dTheta/dqd_j|, |d2/dt2 dTheta/dqdd_j|)
// (the absolute max |E_j| when every term is 0), all derivatives by AD: the
// gradient of Theta in (q_ind, qd_ind, qdd_ind) by Dual<., 3r>, its first and
// second total time derivatives by a time jet Dual<Dual<S,1>,1> with
// tau = e1 + e2 seeded through q(t + tau), qd(t + tau), qdd(t + tau).
template <class Model, class S>
NHOLO_HDI S euler_poisson_residual(
    const typename Model::Params& p, S t, const Vec<S, Model::n> jet[5],
    const Vec<S, Model::m_embedded>& branch = Vec<S, Model::m_embedded>::zero()) {
  constexpr int n = Model::n;
  constexpr int k = Model::m_embedded;
  constexpr int r = n - k;
  static_assert(r >= 1, "embedded constraints need at least one independent coordinate");
  (void)n;
  int ind[r];
  detail::EmbeddedIndex<Model>::independent(ind);
  using T1 = Dual<S, 1>;
  using TJ = Dual<T1, 1>;
  using G = Dual<TJ, 3 * r>;
  // a time jet with value a0 and derivatives a1, a2 in tau
  auto tj = [](S a0, S a1, S a2) {
    T1 v(a0);
    v.d[0] = a1;
    T1 dv(a1);
    dv.d[0] = a2;
    TJ x(v);
    x.d[0] = dv;
    return x;
  };
  Vec<G, r> qi, qdi, qddi;
  for (int j = 0; j < r; ++j) {
    const int c = ind[j];
    qi[j] = G::variable(tj(jet[0][c], jet[1][c], jet[2][c]), j);
    qdi[j] = G::variable(tj(jet[1][c], jet[2][c], jet[3][c]), r + j);
    qddi[j] = G::variable(tj(jet[2][c], jet[3][c], jet[4][c]), 2 * r + j);
  }
  const G ta = G(tj(t, S(1), S(0)));
  Vec<G, k> bg;
  for (int l = 0; l < k; ++l) bg[l] = G(tj(branch[l], S(0), S(0)));
  const G th = embedded_theta<Model>(p, qi, qdi, qddi, ta, bg);
  S res = S(0), scale = S(0);
  for (int j = 0; j < r; ++j) {
    const S a = th.d[j].v.v;                // dTheta/dq_j
    const S b = th.d[r + j].d[0].v;         // d/dt dTheta/dqd_j
    const S c = th.d[2 * r + j].d[0].d[0];  // d2/dt2 dTheta/dqdd_j
    res = max_of(res, S(fabs(a - b + c)));
    scale = max_of(scale, max_of(S(fabs(a)), max_of(S(fabs(b)), S(fabs(c)))));
  }
  return scale > S(0) ? res / scale : res;
}

// The Euler–Poisson residual of the path of a System through (t, y): q'''
// and q'''' from the flow (flow_derivatives), on the branch of the
// embedded constraints that y is on. NaN where the flow is not defined.
template <template <class, class> class SysT, class Model, class S, int N>
NHOLO_HDI S path_euler_poisson_residual(const typename Model::Params& p, const EvalOptions& eo, S t,
                                        const Vec<S, N>& y) {
  constexpr int n = Model::n;
  Vec<S, N> d[3];
  if (flow_derivatives<SysT, Model>(p, eo, t, y, d) != Status::ok) return S(NAN);
  Vec<S, n> jet[5];
  for (int c = 0; c < n; ++c) {
    jet[0][c] = y[c];
    jet[1][c] = y[n + c];
    jet[2][c] = d[0][n + c];
    jet[3][c] = d[1][n + c];
    jet[4][c] = d[2][n + c];
  }
  return euler_poisson_residual<Model>(p, t, jet, embedded_branch<Model>(p, t, jet[0], jet[1]));
}

}  // namespace nholo
