// nholo/kernels/lane_tangent.hpp — the Lyapunov tangent system
// (kernels/lyapunov.hpp: TangentSystem<Sys, K>, with its cache
// TangentPrepared) as a lane system of kernels/integrate_lanes.hpp: W
// trajectories and their K tangent vectors at once. CPU only.
//
// The scalar tangent system evaluates Sys's right-hand side once on dual
// numbers, Dual<double, K>, tangent j seeded with delta_j. Here the same
// evaluation runs on Dual<Lanes<W>, K>: under the Udwadia–Kalaba formulation
// lane_system.hpp's full-rank path (the model's terms by automatic
// differentiation, M's and K's factors with the pivot tests on the values),
// the same operations on the same types with double replaced by the lanes,
// so that each lane computes what its scalar twin computes (the model's sin,
// cos, ... are SLEEF's on the lanes, as for the state alone). A lane where the
// fast path does not hold, or whose values or tangents are not all finite, is
// evaluated again alone by its scalar tangent system. Every other
// formulation is evaluated lane by lane by the scalar one.
//
// After an accepted step (post_step) Sys's drift projection moves the state
// (on the lanes under Udwadia–Kalaba, as LaneSystem's); whether the deltas
// are due for their reorthonormalisation (tau >= renormalize_every, or a
// delta longer than kTangentCeiling) is decided on the lanes with the scalar
// code's arithmetic, and a lane where it is due is reorthonormalised by its
// scalar system (TangentSystem::reorthonormalize: glibc's log, the scalar
// bits).
#pragma once

#include "lane_system.hpp"
#include "lyapunov.hpp"

namespace nholo {

// RunSys: TangentSystem<Sys, K>, or TangentPrepared of it (Sys's cache)
template <class RunSys, class Sys, int K, int W>
struct LaneTangentSystem {
  using L = Lanes<W>;
  using D = Dual<L, K>;
  using TS = TangentSystem<Sys, K>;
  using Model = typename Sys::model_type;
  static constexpr int n = Sys::n;
  static constexpr int m = Sys::m;
  static constexpr int N0 = TS::N0;
  static constexpr int N = TS::N;
  static constexpr bool on_lanes =
      lane_system_detail::runs_udwadia_kalaba_on_lanes<Sys>::value && n > 0 && N0 == 2 * n;

  RunSys lane[W];  // each lane's scalar tangent system (parameters, options, cache)

  // y' = f(t, y) in every lane; per lane the scalar tangent system's status
  LaneStatus<W> operator()(L t, const Vec<L, N>& y, Vec<L, N>& dydt) const {
    LaneMask<W> fast(false);
    if constexpr (on_lanes) fast = evaluate_on_lanes(t, y, dydt);
    LaneStatus<W> st;
    for (int i = 0; i < W; ++i) {
      if (fast[i]) {
        st.s[i] = Status::ok;
        continue;
      }
      Vec<double, N> yi, fi;
      for (int c = 0; c < N; ++c) yi[c] = y[c][i];
      st.s[i] = lane[i](t[i], yi, fi);
      for (int c = 0; c < N; ++c) dydt[c].set(i, fi[c]);
    }
    return st;
  }

  // Sys's post_step on the base state, then the deltas' reorthonormalisation
  // where it is due, in the lanes of `accepted`; the lanes whose state moved
  LaneMask<W> post_step(L t, Vec<L, N>& y, LaneMask<W> accepted) const {
    LaneMask<W> moved = project(t, y, accepted);
    // TangentSystem::post_step's test, with its arithmetic
    const L every = each_lane_value([&](int i) { return double(lane[i].renormalize_every); });
    LaneMask<W> due = y[TS::tau_index] >= every;
    for (int j = 0; j < K; ++j) {
      L s(0.0);
      for (int c = N0 + j * N0; c < N0 + (j + 1) * N0; ++c) s += y[c] * y[c];
      due = due || sqrt(s) > L(TS::kTangentCeiling);
    }
    due = due && accepted;
    if (!any(due)) return moved;
    for (int i = 0; i < W; ++i) {
      if (!due[i]) continue;
      Vec<double, N> yi;
      for (int c = 0; c < N; ++c) yi[c] = y[c][i];
      lane[i].reorthonormalize(yi);
      for (int c = N0; c < N; ++c) y[c].set(i, yi[c]);
    }
    return moved || due;
  }

 private:
  template <class F>
  static L each_lane_value(F f) {
    L r;
    for (int i = 0; i < W; ++i) r.set(i, f(i));
    return r;
  }

  // The fast path: Sys's right-hand side on Dual<Lanes<W>, K> (the state's
  // part of y with tangent j = delta_j, as TangentSystem::evaluate seeds it);
  // the lanes where it holds with everything finite
  LaneMask<W> evaluate_on_lanes(L t, const Vec<L, N>& y, Vec<L, N>& dydt) const {
    Vec<D, n> q, qd, qdd;
    for (int c = 0; c < n; ++c) {
      q[c] = D(y[c]);
      qd[c] = D(y[n + c]);
      for (int j = 0; j < K; ++j) {
        q[c].d[j] = y[N0 + j * N0 + c];
        qd[c].d[j] = y[N0 + j * N0 + n + c];
      }
    }
    const TS& first = lane[0];  // the lanes share its parameters and options
    LaneMask<W> fast(false);
    bool cached = false;
    if constexpr (lane_system_detail::has_cache<RunSys>::value) {
      // (the cache depends on the parameters only)
      if (lane[0].cache.ok) {
        fast = lane_system_detail::udwadia_kalaba_cached_lanes<Model>(
            first.params, q, qd, D(t), first.eval, lane[0].cache, qdd);
        cached = true;
      }
    }
    if (!cached)
      fast = lane_system_detail::udwadia_kalaba_lanes<Model>(first.params, q, qd, D(t), first.eval,
                                                             qdd);
    fast = fast && lane_system_detail::finite_parts(qd);
    for (int c = 0; c < n; ++c) {
      dydt[c] = qd[c].v;
      dydt[n + c] = qdd[c].v;
      for (int j = 0; j < K; ++j) {
        dydt[N0 + j * N0 + c] = qd[c].d[j];
        dydt[N0 + j * N0 + n + c] = qdd[c].d[j];
      }
    }
    for (int j = 0; j < K; ++j) dydt[TS::log_sum_index + j] = L(0.0);
    dydt[TS::tau_index] = L(1.0);
    dydt[TS::elapsed_index] = L(1.0);
    return fast;
  }

  // Sys's post_step (drift = project) on the base state of the lanes in
  // `accepted`: on the lanes under Udwadia–Kalaba, else lane by lane
  LaneMask<W> project(L t, Vec<L, N>& y, LaneMask<W> accepted) const {
    if (lane[0].eval.drift != DriftControl::project) return LaneMask<W>(false);
    if constexpr (on_lanes) {
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
        Vec<double, N0> y0;
        for (int c = 0; c < N0; ++c) y0[c] = y[c][i];
        if (!lane[i].system().post_step(t[i], y0)) continue;
        moved.set(i, true);
        for (int c = 0; c < N0; ++c) y[c].set(i, y0[c]);
      }
      return moved;
    }
  }
};

template <class Sys, int K, int W>
struct LaneSystem<TangentSystem<Sys, K>, W> : LaneTangentSystem<TangentSystem<Sys, K>, Sys, K, W> {
};
template <class Sys, int K, class Cache, int W>
struct LaneSystem<TangentPrepared<TangentSystem<Sys, K>, Cache>, W>
    : LaneTangentSystem<TangentPrepared<TangentSystem<Sys, K>, Cache>, Sys, K, W> {};

}  // namespace nholo
