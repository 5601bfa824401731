// nholo/kernels/lane_system.hpp — a System evaluated for W trajectories at
// once (the lane systems of kernels/integrate_lanes.hpp), built from the
// scalar System each trajectory is integrated with:
//
//   LaneSystem<Sys, W> ls;  ls.lane[i] = (trajectory i's Sys, its cache prepared);
//   LaneStatus<W> st = ls(t, y, dydt);          // Vec<Lanes<W>, N>
//
// The Udwadia–Kalaba formulation (and "conflated") runs on the lanes: the
// model's M, F, A, b, C by automatic differentiation on Lanes<W>, M = L L^T
// and the Gram matrix K = A M^-1 A^T factored with the scalar code's
// arithmetic (cholesky.hpp, fundamental.hpp's full-rank branch), the pivot
// tests giving a mask. A lane where the fast path does not hold (M not
// positive definite, K rank-deficient: Appell's particle at rest, redundant
// constraints; a non-finite result) is evaluated again alone by its scalar
// System, whose singular-mass form, pseudoinverse and statuses are then its
// result: the lanes never run the SVD for all W. Every other formulation is
// evaluated lane by lane with its scalar System (correct, not faster).
//
// The drift projection after an accepted step (post_step, drift = project)
// runs on the lanes the same way: the scalar code's Newton iterations with
// M's and K's factors in lanes, a lane whose K is rank-deficient corrected
// alone by the scalar pseudoinverse, each lane stopping where the scalar loop
// stops.
//
// All lanes share the model's parameters (an ensemble with per-trajectory
// parameters integrates one trajectory at a time). A lane's result depends
// on its own state only, never on the other lanes: the lanes' math is
// elementwise (kernels/lanes.hpp) and a lane's fallback is its own.
#pragma once

#include <type_traits>

#include "constrained_terms.hpp"
#include "drift_projection.hpp"
#include "formulations/udwadia_kalaba.hpp"
#include "fundamental.hpp"
#include "lanes.hpp"

namespace nholo {

namespace lane_system_detail {

// A lane scalar L: Lanes<W>, or a dual number on them (Dual<Lanes<W>, K>: the
// tangent system's, kernels/lane_tangent.hpp). Its lanes' values, W and the
// lanes where every part (value and tangents) is finite.
template <class L>
struct lane_scalar;
template <int W>
struct lane_scalar<Lanes<W>> {
  static constexpr int width = W;
  static const Lanes<W>& value(const Lanes<W>& x) { return x; }
  static LaneMask<W> finite(const Lanes<W>& x) { return is_finite(x); }
};
template <int W, int K>
struct lane_scalar<Dual<Lanes<W>, K>> {
  static constexpr int width = W;
  static const Lanes<W>& value(const Dual<Lanes<W>, K>& x) { return x.v; }
  static LaneMask<W> finite(const Dual<Lanes<W>, K>& x) {
    LaneMask<W> ok = is_finite(x.v);
    for (int k = 0; k < K; ++k) ok = ok && is_finite(x.d[k]);
    return ok;
  }
};
template <class L>
using mask_of = LaneMask<lane_scalar<L>::width>;
template <class L>
using values_of = Lanes<lane_scalar<L>::width>;
template <class L, int N>
inline mask_of<L> finite_parts(const Vec<L, N>& u) {
  mask_of<L> ok(true);
  for (int i = 0; i < N; ++i) ok = ok && lane_scalar<L>::finite(u[i]);
  return ok;
}

// cholesky_factor (cholesky.hpp) on lanes: the same arithmetic, the pivot
// test per lane (false lanes: the factor is unusable there). On dual numbers
// the tests read the values, as the scalar code's comparisons do, and a lane
// where a diagonal entry's tangent is not finite is refused (the scalar code
// decides it: its scale test reads the tangents of one of them).
template <class L, int N>
inline mask_of<L> cholesky_factor_lanes(const Mat<L, N, N>& M, CholeskyFactor<L, N>& f,
                                        double rtol) {
  using V = values_of<L>;
  using LS = lane_scalar<L>;
  V scale(0.0);
  mask_of<L> ok(true);
  for (int i = 0; i < N; ++i) {
    scale = max_of(scale, fabs(LS::value(M(i, i))));
    ok = ok && LS::finite(M(i, i));
  }
  ok = ok && (scale > V(0.0)) && is_finite(scale);
  if (N == 0) return mask_of<L>(true);
  const V pivot_min = V(rtol) * scale;
  for (int j = 0; j < N; ++j) {
    L d = M(j, j);
    for (int k = 0; k < j; ++k) d -= f.L(j, k) * f.L(j, k);
    ok = ok && LS::value(d) > pivot_min;
    const L ljj = sqrt(d);
    const L inv = L(1.0) / ljj;
    f.L(j, j) = ljj;
    f.inv_diag[j] = inv;
    for (int i = j + 1; i < N; ++i) {
      L s = M(i, j);
      for (int k = 0; k < j; ++k) s -= f.L(i, k) * f.L(j, k);
      f.L(i, j) = s * inv;
    }
  }
  return ok;
}

// ldlt_factor (cholesky.hpp) on lanes, with fundamental.hpp's gram_floor
// test: the lanes where K has full rank for the relative test gram_rtol
template <class L, int N>
inline mask_of<L> gram_factor_lanes(const Mat<L, N, N>& K, LdltFactor<L, N>& f, double rtol) {
  using V = values_of<L>;
  using LS = lane_scalar<L>;
  V scale(0.0);
  mask_of<L> ok(true);
  for (int i = 0; i < N; ++i) {
    scale = max_of(scale, LS::value(K(i, i)));
    ok = ok && LS::finite(K(i, i));
  }
  ok = ok && scale > V(detail::gram_floor<double>()) && is_finite(scale);
  const V pivot_min = V(rtol) * scale;
  Mat<L, N, N> E;
  for (int j = 0; j < N; ++j) {
    L d = K(j, j);
    for (int k = 0; k < j; ++k) d -= E(j, k) * f.L(j, k);
    ok = ok && LS::value(d) > pivot_min;
    const L inv = L(1.0) / d;
    f.inv_d[j] = inv;
    for (int i = j + 1; i < N; ++i) {
      L s = K(i, j);
      for (int k = 0; k < j; ++k) s -= E(i, k) * f.L(j, k);
      E(i, j) = s;
      f.L(i, j) = s * inv;
    }
  }
  return ok;
}

// fundamental.hpp's udwadia_kalaba_solved, its full-rank branch, on lanes:
// qdd = ac + L^-T W^T K^-1 (b - A ac), ac = a + M^-1 C, with the mask of the
// lanes where K = W W^T passes the rank test (Factor: CholeskyFactor or its
// DiagonalFactor view, as in the scalar code)
template <bool Nonideal, class Factor, class L, int n, int m>
inline mask_of<L> solve_full_rank_lanes(const Factor& Lf, const Vec<L, n>& a,
                                        const ConstrainedTerms<L, n, m>& w, const PinvOptions& opt,
                                        Vec<L, n>& qdd) {
  Vec<L, n> ac = a;
  if constexpr (Nonideal) {
    const Vec<L, n> c = Lf.solve_lower(w.C);
    ac = a + Lf.solve_upper(c);
  }
  const Mat<L, m, n> Wm = detail::lower_solve_rows(Lf, w.A);
  const Vec<L, m> resid = w.b - w.A * ac;
  LdltFactor<L, m> kf;
  mask_of<L> ok(true);
  // (without constraints the scalar code's pseudoinverse of a 0 x 0 K adds
  // the same zero vector)
  if constexpr (m > 0) ok = gram_factor_lanes(detail::gram(Wm), kf, opt.gram_rtol);
  qdd = ac + Lf.solve_upper(mul_transposed(Wm, kf.solve(resid)));
  return ok;
}

// the same numbers in every lane (L(value): a dual number's tangents zero,
// as ConstantMassCache::on_scalar gives them to the scalar tangent system)
template <class L, int n>
inline CholeskyFactor<L, n> broadcast(const CholeskyFactor<double, n>& f) {
  CholeskyFactor<L, n> r;
  for (int i = 0; i < n; ++i) {
    r.inv_diag[i] = L(f.inv_diag[i]);
    for (int j = 0; j < n; ++j) r.L(i, j) = L(f.L(i, j));
  }
  return r;
}
template <class L, int n>
inline Vec<L, n> broadcast(const Vec<double, n>& v) {
  Vec<L, n> r;
  for (int i = 0; i < n; ++i) r[i] = L(v[i]);
  return r;
}

// The Udwadia–Kalaba accelerations on lanes where the full-rank path holds
// (fundamental.hpp: udwadia_kalaba, udwadia_kalaba_solved's first branch),
// and the mask of those lanes. L: Lanes<W>, or Dual<Lanes<W>, K> (the
// tangent system's duals, where the mask also asks for finite tangents).
template <class Model, class L>
inline mask_of<L> udwadia_kalaba_lanes(const typename Model::Params& p, const Vec<L, Model::n>& q,
                                       const Vec<L, Model::n>& qd, L t, const EvalOptions& eo,
                                       Vec<L, Model::n>& qdd) {
  constexpr int n = Model::n;
  constexpr int m = m_of<Model>;
  ConstrainedTerms<L, n, m> w;
  constrained_terms<Model>(p, q, qd, t, eo, w);
  CholeskyFactor<L, n> Lf;
  const mask_of<L> ok = cholesky_factor_lanes(w.M, Lf, eo.pinv.chol_rtol);
  const mask_of<L> full =
      solve_full_rank_lanes<has_nonideal_force<Model>::value>(Lf, Lf.solve(w.F), w, eo.pinv, qdd);
  // a rank m below the one the model declares is singular (the scalar code's status)
  if constexpr (m < declared_constraint_rank<Model>::value) return mask_of<L>(false);
  return ok && full && finite_parts(qdd);
}

// The same with a constant mass matrix's cache (udwadia_kalaba.hpp,
// ConstantMassCache, usable: c.ok), shared by every lane (the parameters
// are): udwadia_kalaba_acceleration_cached on lanes, M's factor (its
// diagonal view where M is diagonal) and, with a constant force, M^-1 F from
// the cache, so that per evaluation only the constraints and the solves remain.
template <class Model, class L, class Cache>
inline mask_of<L> udwadia_kalaba_cached_lanes(const typename Model::Params& p,
                                              const Vec<L, Model::n>& q, const Vec<L, Model::n>& qd,
                                              L t, const EvalOptions& eo, const Cache& c,
                                              Vec<L, Model::n>& qdd) {
  constexpr int n = Model::n;
  constexpr int m = m_of<Model>;
  ConstrainedTerms<L, n, m> w;
  constraint_rows<Model>(p, q, qd, t, eo, w);
  w.C = nonideal_terms<Model>(p, q, qd, t);
  const CholeskyFactor<L, n> Lf = broadcast<L>(c.L);
  Vec<L, n> a;
  if constexpr (force_is_constant<Model>::value && !has_nonpotential_force<Model>::value) {
    a = broadcast<L>(c.a);
  } else {
    Vec<L, n> F;
    if constexpr (force_is_constant<Model>::value) {
      F = broadcast<L>(c.F);
      F += Model::nonpotential_force(p, q, qd, t);
    } else {
      F = lagrangian_force<Model>(p, q, qd, t);
    }
    a = Lf.solve(F);
  }
  constexpr bool nonideal = has_nonideal_force<Model>::value;
  const mask_of<L> full =
      c.diagonal ? solve_full_rank_lanes<nonideal>(DiagonalFactor<L, n>{Lf}, a, w, eo.pinv, qdd)
                 : solve_full_rank_lanes<nonideal>(Lf, a, w, eo.pinv, qdd);
  if constexpr (m < declared_constraint_rank<Model>::value) return mask_of<L>(false);
  return full && finite_parts(qdd);
}

// weighted_correction (fundamental.hpp) on lanes: M = L L^T and K = W W^T
// factored with the scalar code's arithmetic; a lane of `need` where K fails
// the rank test is computed alone by the scalar weighted_correction (the
// pseudoinverse of W by the Jacobi SVD). Returns the lanes where M is
// positive definite (where the scalar function returns true).
template <int W, int n, int k>
inline LaneMask<W> weighted_correction_lanes(const Mat<Lanes<W>, n, n>& M,
                                             const Mat<Lanes<W>, k, n>& A,
                                             const Vec<Lanes<W>, k>& r, Vec<Lanes<W>, n>& delta,
                                             const PinvOptions& opt, LaneMask<W> need) {
  using L = Lanes<W>;
  CholeskyFactor<L, n> Lf;
  const LaneMask<W> chol = cholesky_factor_lanes(M, Lf, opt.chol_rtol);
  const Mat<L, k, n> Wm = detail::lower_solve_rows(Lf, A);
  LdltFactor<L, k> kf;
  const LaneMask<W> full = gram_factor_lanes(detail::gram(Wm), kf, opt.gram_rtol);
  delta = Lf.solve_upper(mul_transposed(Wm, kf.solve(r)));
  const LaneMask<W> alone = need && chol && !full;
  if (!any(alone)) return chol;
  for (int i = 0; i < W; ++i) {
    if (!alone[i]) continue;
    Mat<double, n, n> Mi;
    Mat<double, k, n> Ai;
    Vec<double, k> ri;
    Vec<double, n> di = Vec<double, n>::zero();  // (written: M is positive definite here)
    for (int a = 0; a < n; ++a)
      for (int b = 0; b < n; ++b) Mi(a, b) = M(a, b)[i];
    for (int l = 0; l < k; ++l) {
      ri[l] = r[l][i];
      for (int b = 0; b < n; ++b) Ai(l, b) = A(l, b)[i];
    }
    weighted_correction(Mi, Ai, ri, di, opt);
    for (int a = 0; a < n; ++a) delta[a].set(i, di[a]);
  }
  return chol;
}

// drift_projection.hpp's project_rows on lanes, for the lanes in `live`:
// each lane takes the scalar code's Newton iterations, stopping where the
// scalar loop breaks (its residual within project_tol, or M not positive
// definite), the others' corrections discarded by select. Returns the lanes
// whose q or qd moved.
template <class Model, int r, bool Velocity, int W>
inline LaneMask<W> project_rows_lanes(const typename Model::Params& params, const EvalOptions& eval,
                                      Lanes<W> t, Vec<Lanes<W>, Model::n>& q,
                                      Vec<Lanes<W>, Model::n>& qd, LaneMask<W> live) {
  using L = Lanes<W>;
  constexpr int n = Model::n;
  LaneMask<W> moved(false);
  for (int it = 0; it < eval.project_iterations; ++it) {
    Mat<L, n, n> M;
    Mat<L, r, n> J;
    Vec<L, r> g;
    detail::projection_terms<Model, r, Velocity>(params, t, q, qd, M, J, g);
    live = live && norm_inf(g) > L(eval.project_tol);
    if (!any(live)) break;
    Vec<L, n> dx;
    live = live && weighted_correction_lanes(M, J, g, dx, eval.pinv, live);
    if (!any(live)) break;
    Vec<L, n>& x = Velocity ? qd : q;
    for (int j = 0; j < n; ++j) x[j] = select(live, x[j] - dx[j], x[j]);
    moved = moved || live;
  }
  return moved;
}

// project_onto_constraints (drift_projection.hpp) on the lanes in `live`:
// positions onto phi = 0, then velocities onto phidot = 0 and g = 0. Returns
// the lanes where q or qd moved.
template <class Model, int W>
inline LaneMask<W> project_onto_constraints_lanes(const typename Model::Params& params,
                                                  const EvalOptions& eval, Lanes<W> t,
                                                  Vec<Lanes<W>, Model::n>& q,
                                                  Vec<Lanes<W>, Model::n>& qd, LaneMask<W> live) {
  constexpr int mp = Model::m_position;
  constexpr int mpv = Model::m_position + Model::m_velocity;
  LaneMask<W> moved(false);
  if (eval.drift != DriftControl::project) return moved;
  if constexpr (mpv > 0) {
    if constexpr (mp > 0)
      moved = project_rows_lanes<Model, mp, false>(params, eval, t, q, qd, live);
    moved = project_rows_lanes<Model, mpv, true>(params, eval, t, q, qd, live) || moved;
  }
  return moved;
}

// the System's per-trajectory cache (a PreparedSystem's), if it has one
template <class Sys, class = void>
struct has_cache : std::false_type {};
template <class Sys>
struct has_cache<Sys, std::void_t<decltype(std::declval<const Sys&>().cache)>> : std::true_type {};

// whether Sys is a SecondOrderSystem (or its PreparedSystem) under the
// Udwadia–Kalaba formulation
template <class Sys, class = void>
struct runs_udwadia_kalaba_on_lanes : std::false_type {};
template <class Sys>
struct runs_udwadia_kalaba_on_lanes<Sys, std::void_t<typename Sys::formulation_type>>
    : std::is_same<typename Sys::formulation_type, UdwadiaKalabaFormulation> {};

}  // namespace lane_system_detail

template <class Sys, int W>
struct LaneSystem {
  using L = Lanes<W>;
  using Model = typename Sys::model_type;
  static constexpr int n = Sys::n;
  static constexpr int m = Sys::m;
  static constexpr int N = Sys::N;

  Sys lane[W];  // each lane's scalar System (parameters, options, cache)

  // y' = f(t, y) in every lane; per lane the scalar System's status
  LaneStatus<W> operator()(L t, const Vec<L, N>& y, Vec<L, N>& dydt) const {
    LaneMask<W> fast(false);
    if constexpr (lane_system_detail::runs_udwadia_kalaba_on_lanes<Sys>::value && n > 0) {
      Vec<L, n> q, qd, qdd;
      for (int c = 0; c < n; ++c) {
        q[c] = y[c];
        qd[c] = y[n + c];
      }
      bool cached = false;
      if constexpr (lane_system_detail::has_cache<Sys>::value) {
        // the cache depends on the parameters only, which the lanes share
        if (lane[0].cache.ok) {
          fast = lane_system_detail::udwadia_kalaba_cached_lanes<Model>(
              lane[0].params, q, qd, t, lane[0].eval, lane[0].cache, qdd);
          cached = true;
        }
      }
      if (!cached) {
        fast = lane_system_detail::udwadia_kalaba_lanes<Model>(lane[0].params, q, qd, t,
                                                               lane[0].eval, qdd);
      }
      fast = fast && finite_lanes(qd);
      for (int c = 0; c < n; ++c) {
        dydt[c] = qd[c];
        dydt[n + c] = qdd[c];
      }
    }
    LaneStatus<W> st;
    for (int i = 0; i < W; ++i) {
      if (fast[i]) {
        st.s[i] = Status::ok;
        continue;
      }
      // this lane alone, by its scalar System
      Vec<double, N> yi, fi;
      for (int c = 0; c < N; ++c) yi[c] = y[c][i];
      st.s[i] = lane[i](t[i], yi, fi);
      for (int c = 0; c < N; ++c) dydt[c].set(i, fi[c]);
    }
    return st;
  }
  // The drift projection (drift = project) after an accepted step, in the
  // lanes of `accepted`: each the scalar System's post_step, on the lanes for
  // the Udwadia–Kalaba formulation, lane by lane for the others. Returns the
  // lanes whose state moved.
  LaneMask<W> post_step(L t, Vec<L, N>& y, LaneMask<W> accepted) const {
    if (lane[0].eval.drift != DriftControl::project) return LaneMask<W>(false);
    if constexpr (lane_system_detail::runs_udwadia_kalaba_on_lanes<Sys>::value && n > 0 &&
                  N == 2 * n) {
      Vec<L, n> q, qd;
      for (int c = 0; c < n; ++c) {
        q[c] = y[c];
        qd[c] = y[n + c];
      }
      const LaneMask<W> moved = lane_system_detail::project_onto_constraints_lanes<Model>(
          lane[0].params, lane[0].eval, t, q, qd, accepted);
      for (int c = 0; c < n; ++c) {
        y[c] = q[c];
        y[n + c] = qd[c];
      }
      return moved;
    } else {
      LaneMask<W> moved(false);
      for (int i = 0; i < W; ++i) {
        if (!accepted[i]) continue;
        Vec<double, N> yi;
        for (int c = 0; c < N; ++c) yi[c] = y[c][i];
        if (!lane[i].post_step(t[i], yi)) continue;
        moved.set(i, true);
        for (int c = 0; c < N; ++c) y[c].set(i, yi[c]);
      }
      return moved;
    }
  }
};

}  // namespace nholo
