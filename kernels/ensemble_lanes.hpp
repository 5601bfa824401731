// nholo/kernels/ensemble_lanes.hpp — an ensemble window's trajectories
// integrated W at a time in the SIMD lanes of one CPU core (CPU only):
//
//   run_window_lanes<Method::dopri5, W>(window, idx, n, launch_steps, finished);
//
// integrates trajectories idx[0 .. n) of the window (kernels/ensemble.hpp
// EnsembleWindow) for at most launch_steps steps each (0: to the window's
// end), finished[j] saying whether idx[j] finished it: what
// window.run<M>(idx[j], launch_steps) does for each, with the same results
// (the lanes' integrator takes each trajectory's scalar steps: only the
// model's sin, cos, ... are SLEEF's on the lanes, kernels/lanes.hpp). A lane
// whose trajectory finished its window, ended, or spent its launch's budget
// takes the next trajectory of idx at once, so that a slow trajectory holds
// one lane, not the other W - 1; each trajectory's result depends on it
// alone, not on its lane or its neighbours.
//
// Every method (DOPRI5, DOP853 and the fixed-step RK4), with the events and
// the drift projection after steps (each accepted step's events lane by
// lane, the projection on the lanes), for a formulation's System and for its
// Lyapunov tangent system (kernels/lane_tangent.hpp). Lanes share the model's parameters: a
// window with per-trajectory parameters runs with W = 1 (lanes_width), so
// that a trajectory computes the same bits in a sweep as in a run of its own.
#pragma once

#include <stdint.h>

#include <type_traits>
#include <utility>

#include "ensemble.hpp"
#include "integrate_lanes.hpp"
#include "lane_system.hpp"
#include "lane_tangent.hpp"  // (the lane system of a tangent system)

namespace nholo {

// the lanes a window runs with: W, or 1 where the parameters vary per trajectory
template <class Sys>
inline int lanes_width(const EnsembleWindow<Sys>& w, int W) {
  return w.arr.params ? 1 : W;
}

namespace ensemble_lanes_detail {

template <Method M>
struct TableauOf {
  using type = TableauDopri5;
};
template <>
struct TableauOf<Method::rk4> {
  using type = TableauRK4;  // (step_lanes_fixed)
};
template <>
struct TableauOf<Method::dop853> {
  using type = TableauDop853;
};

// The lanes' view of the window: which trajectory each lane holds, its next
// save and the lane system of their scalar systems.
template <class Sys, int W>
struct LanePool {
  using S = double;
  static constexpr int N = Sys::N;
  using RunSys = std::decay_t<decltype(prepare_system(std::declval<const Sys&>(), 0.0,
                                                      std::declval<const Vec<double, N>&>()))>;
  const EnsembleWindow<Sys>& win;
  const int64_t* idx;
  int64_t n;
  int64_t launch_steps;
  uint8_t* finished;

  LanePool(const EnsembleWindow<Sys>& w, const int64_t* trajectories, int64_t count,
           int64_t steps_per_launch, uint8_t* finished_out)
      : win(w),
        idx(trajectories),
        n(count),
        launch_steps(steps_per_launch),
        finished(finished_out) {}

  LaneSystem<RunSys, W> sys;
  LaneTrajectories<W, N> lt;
  Lanes<W> t_out;
  int64_t slot[W];  // the index into idx of the trajectory a lane holds; -1: empty
  int k[W];         // its next save
  bool running[W];
  int64_t next = 0;

  // trajectory idx[j] leaves its lane at save k, with or without its window done
  void leave(int lane, int save, bool done) {
    const int64_t j = slot[lane];
    win.write_back(lane_state(lt, lane), idx[j], save, lt.interval_start[lane]);
    finished[j] = done ? 1 : 0;
    slot[lane] = -1;
    running[lane] = false;
  }

  // After lane's interval ended at save k[lane] (landed, or its trajectory
  // ended): the save stored, and the next interval begun or the trajectory
  // gone; a trajectory that has ended gets NaN for every save left, as
  // window.run's advance_to returns at once for it.
  void after_interval(int lane) {
    const int64_t i = idx[slot[lane]];
    const TrajectoryState<double, N> ts = lane_state(lt, lane);
    do {
      win.template store<true>(sys.lane[lane], ts, k[lane], i);
      ++k[lane];
      lt.interval_start[lane] = ts.steps + ts.rejected;
    } while (k[lane] < win.n_saves && ts.status != Status::ok);
    if (k[lane] == win.n_saves) {
      leave(lane, k[lane], true);
      return;
    }
    begin_lane_interval(lt, lane, StepBudget{lt.interval_start[lane], lt.call_left[lane]});
    t_out.set(lane, win.save_times[k[lane]]);
    running[lane] = true;
  }

  // the next trajectory of idx into lane (false: none left); one that has
  // ended already is stored and written back at once, as window.run does
  bool fill(int lane) {
    while (next < n) {
      const int64_t j = next++;
      const int64_t i = idx[j];
      const TrajectoryState<double, N> ts = win.load(i);
      Sys local = win.sys;  // with trajectory i's parameters, as run_part
      if (win.arr.params) {
        double pv[Sys::model_type::n_params > 0 ? Sys::model_type::n_params : 1];
        for (int p = 0; p < Sys::model_type::n_params; ++p)
          pv[p] = win.arr.params[p * win.count + i];
        local.params = Sys::model_type::make_params(pv);
      }
      sys.lane[lane] = prepare_system(local, ts.t, ts.y);
      StepBudget b = whole_interval(ts);
      if (win.arr.interval_start && win.arr.interval_start[i] >= 0)
        b.interval_start = win.arr.interval_start[i];
      if (launch_steps > 0) b.call_left = launch_steps;
      set_lane_state(lt, lane, ts);
      begin_lane_interval(lt, lane, b);
      slot[lane] = j;
      k[lane] = win.arr.save_k ? win.arr.save_k[i] : 0;
      if (k[lane] >= win.n_saves) {
        leave(lane, k[lane], true);
        continue;
      }
      if (ts.status != Status::ok) {
        after_interval(lane);  // every save left NaN
        if (slot[lane] < 0) continue;
      }
      t_out.set(lane, win.save_times[k[lane]]);
      running[lane] = true;
      return true;
    }
    slot[lane] = -1;
    running[lane] = false;
    return false;
  }

  // the window's events of the trajectory lane holds (trajectory_events.hpp)
  TrajectoryEvents<double> events_of(int lane) const {
    const EnsembleArrays<double>& a = win.arr;
    return TrajectoryEvents<double>{a.events,      idx[slot[lane]], win.count, Sys::n,
                                    a.event_count, a.event_records, a.event_g, a.params};
  }

  // step_lanes' events (integrate_lanes.hpp): each lane's trajectory's, as
  // window.run's advance_to runs them, the event functions' values at the
  // step's end evaluated for all lanes at once (lane_events.hpp)
  struct Events {
    const LanePool* pool;
    bool active(int lane) const { return pool->events_of(lane).active(); }
    bool evaluate_ends(const Lanes<W>& t1, const Vec<Lanes<W>, N>& y1, const Vec<Lanes<W>, N>& f1,
                       LaneEventEnds<W>& ends) const {
      const EnsembleArrays<double>& a = pool->win.arr;
      // varied parameters: one lane (run_window_lanes), lane 0's trajectory's
      if (a.params && (W > 1 || pool->slot[0] < 0)) return false;
      const double* varied = a.params ? a.params + pool->idx[pool->slot[0]] : nullptr;
      evaluate_event_ends(*a.events, Sys::n, t1, y1, f1, varied, pool->win.count, ends);
      return true;
    }
    template <class Given>
    bool quiet_step(int lane, double h, const Given& given) const {
      return pool->events_of(lane).quiet_step(h, given);
    }
    template <class Tab, class... Given>
    detail::EventStepResult<double> step(int lane, const StepTolerance& tol, double t0,
                                         Vec<double, N>& y0, const Vec<double, N>& f0, double t1,
                                         const Vec<double, N>& y1, Vec<double, N>& f1,
                                         const Given&... given) const {
      return detail::events_after_step<Tab, false>(pool->sys.lane[lane], pool->events_of(lane), tol,
                                                   t0, y0, f0, t1, y1, f1, given...);
    }
  };

  // An empty lane rides along through the stages with the state and system
  // of an occupied one (so that it computes nothing that fails or is NaN).
  void park(int lane) {
    for (int o = 0; o < W; ++o) {
      if (slot[o] < 0) continue;
      for (int c = 0; c < N; ++c) {
        lt.y[c].set(lane, lt.y[c][o]);
        lt.dydt[c].set(lane, lt.dydt[c][o]);
      }
      lt.t.set(lane, lt.t[o]);
      lt.h.set(lane, lt.h[o]);
      sys.lane[lane] = sys.lane[o];
      return;
    }
  }
};

}  // namespace ensemble_lanes_detail

template <Method M, int W, class Sys>
inline void run_window_lanes(const EnsembleWindow<Sys>& win, const int64_t* idx, int64_t n,
                             int64_t launch_steps, uint8_t* finished) {
  // (the lanes share lane 0's parameters: per-trajectory ones take W = 1)
  if (W > 1 && win.arr.params) __builtin_trap();
  using Tab = typename ensemble_lanes_detail::TableauOf<M>::type;
  ensemble_lanes_detail::LanePool<Sys, W> pool(win, idx, n, launch_steps, finished);
  bool any = false;
  for (int lane = 0; lane < W; ++lane) any = pool.fill(lane) || any;
  if (!any) return;
  for (int lane = 0; lane < W; ++lane)
    if (pool.slot[lane] < 0) pool.park(lane);
  LaneEnd ended[W];
  const typename ensemble_lanes_detail::LanePool<Sys, W>::Events events{&pool};
  // one step of the method for the running lanes, with the events or without
  const auto step = [&](const auto&... with_events) {
    if constexpr (M == Method::rk4)
      step_lanes_fixed(pool.sys, pool.lt, pool.t_out, win.opt, pool.running, ended, with_events...);
    else
      step_lanes<Tab>(pool.sys, pool.lt, pool.t_out, win.opt, pool.running, ended, with_events...);
  };
  while (any) {
    if (win.arr.events)
      step(events);
    else
      step();
    any = false;
    for (int lane = 0; lane < W; ++lane) {
      if (pool.slot[lane] < 0) continue;
      if (ended[lane] == LaneEnd::spent) {
        pool.leave(lane, pool.k[lane], false);
        pool.fill(lane);
      } else if (ended[lane] == LaneEnd::done) {
        pool.after_interval(lane);
        if (pool.slot[lane] < 0) pool.fill(lane);
      }
      any = any || pool.slot[lane] >= 0;
    }
    for (int lane = 0; lane < W && any; ++lane)
      if (pool.slot[lane] < 0) pool.park(lane);
  }
}

}  // namespace nholo
