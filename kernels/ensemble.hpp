// nholo/kernels/ensemble.hpp — the ensemble functor: one index = one
// trajectory integrated over a whole output window, structure-of-arrays I/O.
//
// Launched by the host as
//   thrust::for_each(policy, counting_iterator(0), counting_iterator(count), functor)
// on the OMP or CPP system (host/backends/backend.hpp), or as one CUDA thread per
// trajectory calling functor.run<Method>(i) (host/backends/cuda_ensemble_impl.cuh).
// Nothing here knows which.
//
// Layout (count = trajectories in the slice, i the trajectory, fastest index):
//   state arrays   y[c * count + i]            c in [0, N)
//                  t, h, err_prev, fail_time, steps, rejected, status: [i]
//   outputs        q[(k * n + c) * count + i]  k the save index in the window
//                  (same for qdot, qddot, force_ideal, force_nonideal),
//                  multiplier[(k * m + l) * count + i],
//                  constraint_residual[k * count + i], energy[k * count + i],
//                  lyapunov_estimate[(k * K + j) * count + i] (a tangent system's;
//                  the same for lyapunov_observed_estimate)
//                  — or, with trajectory_major, q[(i * n_saves + k) * n + c],
//                  multiplier[(i * n_saves + k) * m + l], energy[i * n_saves + k]
//                  (the file's order: each thread writes its own contiguous
//                  block, which suits CPU caches; the default suits the GPU,
//                  where neighbouring threads' stores then coalesce)
//   per-trajectory parameters (optional) params[j * count + i], j < n_params
//   window progress (optional) save_k[i], interval_start[i]
//   events (optional) event_count[e * count + i] (crossings) and
//                  [(n_events + e) * count + i] (undersampled steps), event_records: per
//                  trajectory and event a block of max_records records
//                  (kernels/trajectory_events.hpp), kept for the slice
// A window may be integrated in parts (launch_steps > 0: the scheduler of
// host/backends, backend.steps_per_launch, launches described by
// WindowLaunch): each call of run advances trajectory i by at most
// launch_steps steps and returns whether it finished the window; save_k
// (saves of the window done) and interval_start (steps + rejected when the
// current output interval began; < 0: the window has not started) carry the
// rest, and the host resets them to 0 and -1 before each window. The results
// are the same bits however the window is cut.
//
// A lean launch (run_part<M, Events, true>, for a system with a checked
// cache: the CUDA backend's lean kernels) integrates a trajectory only when
// its cache is usable and returns LaunchOutcome::general, having changed
// nothing, for the others, which the host then integrates with the general
// code (run_part<M, Events, false>): the lean code leaves out the general
// path and its registers, and a trajectory's results do not depend on which
// code ran it.
//
// A null output pointer means "not requested". After a failure the remaining
// saves of that trajectory are NaN and its status says why.
#pragma once

#include <stdint.h>

#include "integrate.hpp"
#include "system.hpp"
#include "trajectory_events.hpp"
#include "window_layout.hpp"

namespace nholo {

template <class S>
struct EnsembleArrays {
  // integration state, updated in place window after window
  S* y = nullptr;
  S* t = nullptr;
  S* h = nullptr;
  S* err_prev = nullptr;
  S* fail_time = nullptr;
  int64_t* steps = nullptr;
  int64_t* rejected = nullptr;
  int32_t* status = nullptr;
  // outputs of this window (any may be null)
  S* q = nullptr;
  S* qdot = nullptr;
  S* qddot = nullptr;
  S* force_ideal = nullptr;
  S* force_nonideal = nullptr;
  S* multiplier = nullptr;
  S* constraint_residual = nullptr;
  S* energy = nullptr;
  // a tangent system's running estimates of its K exponents
  // (kernels/lyapunov.hpp), K per save like multiplier's m
  S* lyapunov_estimate = nullptr;
  // and of its K observed exponents, with the observables (null: none)
  S* lyapunov_observed_estimate = nullptr;
  const ObservableTable* observables = nullptr;
  // optional per-trajectory parameters
  const double* params = nullptr;
  // window progress, for a window integrated in parts (launch_steps > 0)
  int32_t* save_k = nullptr;
  int64_t* interval_start = nullptr;
  // events (null: none): the table, the crossings counted and the records
  // kept for the whole slice (kernels/trajectory_events.hpp)
  const EventTable* events = nullptr;
  int64_t* event_count = nullptr;
  double* event_records = nullptr;
  double* event_g = nullptr;  // g at the last accepted step's end [e * count + i], and dg/dt
                              // there [(n_events + e) * count + i]; NaN: none
};

// One launch of a window integrated in parts, as a GPU kernel receives it
// (host/backends/cuda_ensemble_impl.cuh, a GPU module's kernel): thread j runs
// trajectory active[j] (j itself when active is null) for at most
// launch_steps steps, and appends it to unfinished (n_unfinished counts them)
// when it did not finish the window.
struct WindowLaunch {
  const int64_t* active;
  int64_t n_active;
  int64_t launch_steps;
  int64_t* unfinished;
  unsigned long long* n_unfinished;
};

// What one launch did with a trajectory (EnsembleWindow::run_part).
enum class LaunchOutcome : int {
  finished = 0,    // it reached the window's last save (or ended: status)
  unfinished = 1,  // the launch's step budget ran out first: launch it again
  general = 2,     // a lean launch left it, untouched, to the general code
};

// Where a lean launch (host/backends/cuda_ensemble_impl.cuh) appends the
// trajectories it leaves to the general code, and their count.
struct GeneralList {
  int64_t* index;
  unsigned long long* count;
};

// The observables at a save (the formulation's whole right-hand side and
// more), out of line under nvcc: the CUDA kernels with and without the
// events' hook (and each method's) share one copy per system instead of
// inlining one each, which halves their compile time. y by value: the
// integrator's state stays in registers.
template <class RunSys, class S, int N, int n, int m>
NHOLO_RHS_NOINLINE NHOLO_HD void observe_out_of_line(const RunSys& sys, S t, Vec<S, N> y,
                                                     Observation<S, n, m>& obs) {
  sys.observe(t, y, obs);
}

// K of a system with running estimates of K Lyapunov exponents
// (TangentSystem<Sys, K>::spectrum_estimate, kernels/lyapunov.hpp), else 0.
template <class Sys, class = void>
struct running_exponents : std::integral_constant<int, 0> {};
template <class Sys>
struct running_exponents<Sys, std::void_t<decltype(Sys::exponents)>>
    : std::integral_constant<int, Sys::exponents> {};

template <class Sys>
struct EnsembleWindow {
  using S = typename Sys::scalar;
  using Model = typename Sys::model_type;
  static constexpr int n = Sys::n;
  static constexpr int m = Sys::m;
  static constexpr int N = Sys::N;

  Sys sys;  // model parameters and formulation options
  IntegratorOptions opt;
  EnsembleArrays<S> arr;
  int64_t count;        // trajectories in the slice
  const S* save_times;  // the window's output times, increasing
  int n_saves;
  bool trajectory_major = false;  // output layout (see above)

  // The method chosen at run time (CPU backends: one switch per trajectory).
  NHOLO_HD bool run_method(int64_t i, int64_t launch_steps = 0) const {
    switch (opt.method) {
      case Method::rk4: return run<Method::rk4>(i, launch_steps);
      case Method::dopri5: return run<Method::dopri5>(i, launch_steps);
      case Method::dop853: return run<Method::dop853>(i, launch_steps);
    }
    return true;
  }
  NHOLO_HD void operator()(int64_t i) const { run_method(i); }

  // Trajectory i through the window with the method fixed at compile time
  // (the CUDA backend launches one kernel per method), or through its next
  // part of at most launch_steps steps (> 0; needs arr.save_k and
  // arr.interval_start); true when it finished the window. Events: false
  // compiles the integration without the events' hook (arr.events must be
  // null): the CUDA backend's kernel for a run without events, which keeps
  // its registers and stack (the hook costs a GPU thread about 450 B of
  // stack even when no event is declared).
  template <Method M, bool Events = true>
  NHOLO_HD bool run(int64_t i, int64_t launch_steps = 0) const {
    return run_part<M, Events, false>(i, launch_steps) == LaunchOutcome::finished;
  }

  // The same as one launch sees it. Lean (for a system with a checked cache,
  // has_checked_prepare): the trajectory is integrated with the cache's
  // checked form when its cache is usable; otherwise nothing is written (its
  // state and parameters were read), and the outcome is `general`.
  template <Method M, bool Events = true, bool Lean = false>
  NHOLO_HD LaunchOutcome run_part(int64_t i, int64_t launch_steps = 0) const {
    Sys local = sys;
    if (arr.params) {
      double pv[Model::n_params > 0 ? Model::n_params : 1];
      for (int j = 0; j < Model::n_params; ++j) pv[j] = arr.params[j * count + i];
      local.params = Model::make_params(pv);
    }
    TrajectoryState<S, N> ts = load(i);
    // the system with its per-trajectory cache (system.hpp, prepare_system;
    // `local` itself when it has none), prepared with this trajectory's
    // parameters at the window's first state
    if constexpr (Lean) {
      static_assert(has_checked_prepare<Sys>::value, "a lean launch needs a checked cache");
      const auto run_sys = local.prepare_checked(ts.t, ts.y);
      if (!run_sys.cache.usable()) return LaunchOutcome::general;
      return integrate_loaded<M, Events>(run_sys, ts, i, launch_steps);
    } else {
      const auto& run_sys = prepare_system(local, ts.t, ts.y);
      return integrate_loaded<M, Events>(run_sys, ts, i, launch_steps);
    }
  }

  // The pieces of run_part, public for the SIMD lanes' runner
  // (kernels/ensemble_lanes.hpp), which integrates W trajectories of the
  // window at once and loads, stores and saves each as run_part does.

  // trajectory i's integration state, as the last launch left it
  NHOLO_HDI TrajectoryState<S, N> load(int64_t i) const {
    TrajectoryState<S, N> ts;
    for (int c = 0; c < N; ++c) ts.y[c] = arr.y[c * count + i];
    ts.t = arr.t[i];
    ts.h = arr.h[i];
    ts.err_prev = arr.err_prev[i];
    ts.fail_time = arr.fail_time[i];
    ts.steps = arr.steps[i];
    ts.rejected = arr.rejected[i];
    ts.status = static_cast<Status>(arr.status[i]);
    ts.dydt_valid = false;
    return ts;
  }

  // run_part after the load: the saves of the window (from save_k) with
  // run_sys, and the state written back
  template <Method M, bool Events, class RunSys>
  NHOLO_HDI LaunchOutcome integrate_loaded(const RunSys& run_sys, TrajectoryState<S, N>& ts,
                                           int64_t i, int64_t launch_steps) const {
    int k = arr.save_k ? arr.save_k[i] : 0;
    StepBudget budget = whole_interval(ts);
    if (arr.interval_start && arr.interval_start[i] >= 0)
      budget.interval_start = arr.interval_start[i];
    if (launch_steps > 0) budget.call_left = launch_steps;
    const TrajectoryEvents<S> ev{arr.events,        i,           count,     n, arr.event_count,
                                 arr.event_records, arr.event_g, arr.params};
    bool finished = true;
    for (; k < n_saves; ++k) {
      const bool done = Events ? advance_to_method<M>(run_sys, ts, save_times[k], opt, budget, ev)
                               : advance_to_method<M>(run_sys, ts, save_times[k], opt, budget);
      if (!done) {
        finished = false;
        break;
      }
      store<Events>(run_sys, ts, k, i);
      budget.interval_start = ts.steps + ts.rejected;
    }
    write_back(ts, i, k, budget.interval_start);
    return finished ? LaunchOutcome::finished : LaunchOutcome::unfinished;
  }

  // trajectory i's state after a launch, with its window progress (the next
  // save k, the current interval's start) when the window runs in parts
  NHOLO_HDI void write_back(const TrajectoryState<S, N>& ts, int64_t i, int k,
                            int64_t interval_start) const {
    if (arr.save_k) {
      arr.save_k[i] = k;
      arr.interval_start[i] = interval_start;
    }
    for (int c = 0; c < N; ++c) arr.y[c * count + i] = ts.y[c];
    arr.t[i] = ts.t;
    arr.h[i] = ts.h;
    arr.err_prev[i] = ts.err_prev;
    arr.fail_time[i] = ts.fail_time;
    arr.steps[i] = ts.steps;
    arr.rejected[i] = ts.rejected;
    arr.status[i] = static_cast<int32_t>(ts.status);
  }

  // index of component c (of nc) of save k of trajectory i in an output array
  NHOLO_HDI int64_t at(int k, int c, int nc, int64_t i) const {
    return window_index(trajectory_major, k, c, nc, i, n_saves, count);
  }

  // save k of trajectory i: the state, or NaN once it failed or a stop
  // event ended it before the save (one that ended it at the save's time
  // exactly leaves the state there: the event's)
  template <bool Events, class RunSys>
  NHOLO_HDI void store(const RunSys& local, const TrajectoryState<S, N>& ts, int k,
                       int64_t i) const {
    const bool ok = ts.status == Status::ok ||
                    (Events && ts.status == Status::event && ts.t == S(save_times[k]));
    const S nan = S(NAN);
    if (arr.q)
      for (int c = 0; c < n; ++c) arr.q[at(k, c, n, i)] = ok ? ts.y[c] : nan;
    if (arr.qdot)
      for (int c = 0; c < n; ++c) arr.qdot[at(k, c, n, i)] = ok ? ts.y[n + c] : nan;
    if constexpr (running_exponents<RunSys>::value > 0) {
      constexpr int K = running_exponents<RunSys>::value;
      if (arr.lyapunov_estimate) {
        S lambda[K];
        if (ok) RunSys::spectrum_estimate(ts.y, lambda);
        for (int j = 0; j < K; ++j) arr.lyapunov_estimate[at(k, j, K, i)] = ok ? lambda[j] : nan;
      }
      if (arr.lyapunov_observed_estimate && arr.observables) {
        S lambda[K];
        if (ok)
          RunSys::observed_estimate(*arr.observables, ts.t, ts.y,
                                    arr.params ? arr.params + i : nullptr, count, lambda);
        for (int j = 0; j < K; ++j)
          arr.lyapunov_observed_estimate[at(k, j, K, i)] = ok ? lambda[j] : nan;
      }
    }
    const bool need_obs = arr.qddot || arr.force_ideal || arr.force_nonideal || arr.multiplier ||
                          arr.constraint_residual || arr.energy;
    if (!need_obs) return;
    Observation<S, n, m> obs{};
    if (ok) observe_out_of_line(local, ts.t, ts.y, obs);
    for (int c = 0; c < n; ++c) {
      if (arr.qddot) arr.qddot[at(k, c, n, i)] = ok ? obs.qdd[c] : nan;
      if (arr.force_ideal) arr.force_ideal[at(k, c, n, i)] = ok ? obs.force_ideal[c] : nan;
      if (arr.force_nonideal) arr.force_nonideal[at(k, c, n, i)] = ok ? obs.force_nonideal[c] : nan;
    }
    if (arr.multiplier)
      for (int l = 0; l < m; ++l) arr.multiplier[at(k, l, m, i)] = ok ? obs.multiplier[l] : nan;
    if (arr.constraint_residual)
      arr.constraint_residual[at(k, 0, 1, i)] = ok ? obs.constraint_residual : nan;
    if (arr.energy) arr.energy[at(k, 0, 1, i)] = ok ? obs.energy : nan;
  }
};

}  // namespace nholo
