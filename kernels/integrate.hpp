// nholo/kernels/integrate.hpp — per-trajectory integration: one trajectory
// advanced to the next output time with its own step size.
//
//   TrajectoryState<S,N> ts = start_trajectory<S,N>(t0, y0, opt);
//   advance_to(sys, ts, t_out, opt);   // lands exactly on t_out, or stops with
//                                      // ts.status != ok and ts.fail_time set
//
// Methods: rk4 (fixed step opt.dt, the last step shortened to land on t_out),
// dopri5 and dop853 (adaptive; PI step-size control after Hairer & Wanner:
// fac = safety err^-(1/q - 0.75 beta) err_prev^beta, q = Tab::control_order,
// clamped to [fac_min, fac_max]; two pow per accepted step: one log and one
// exp would be cheaper but round differently, and the step sequence through
// a singular point of the motion, such as Appell's particle passing through
// rest in tests/test_conservation.cpp, depends on that rounding). After each
// accepted step the system's post_step (drift projection) may move the state;
// the FSAL derivative is then re-evaluated. Guards: opt.max_steps per output
// interval (status max_steps),
// a step below opt.dt_min or 64 ulp of t (status step_underflow), failed
// right-hand sides (rejected with a quarter step; status non_finite or
// singular when that cannot get past them).
//
// Events (kernels/trajectory_events.hpp): given a trajectory's events, each
// accepted step hands them its two ends (y0, f0, y1, f1: the step's cubic
// Hermite interpolant, over the integrator's own arrays); f1 is the last
// stage for DOPRI5 (f(t1, y1)) and RK4 (f(t1, y0 + h k3), f(t1, y1) to
// O(h^3)) and is evaluated for DOP853 (then reused as the next step's f0,
// unless a projection moved the state), so the steps are the same bits as
// without events. A `stop` event ends the interval there with
// status event. NoEvents (events.hpp) compiles to nothing.
//
// A StepBudget lets a caller cut one interval into parts (the ensemble's
// per-launch step budget, backend.steps_per_launch): advance_* returns false
// when the budget of the call is spent before t_out, with everything needed to
// continue in ts (the FSAL derivative is re-evaluated, which gives the same
// bits: rk_step.hpp) and the interval's own count of steps in the budget, so
// that the results do not depend on where the interval was cut.
#pragma once

#include <stdint.h>

#include "events.hpp"
#include "rk_step.hpp"
#include "status.hpp"
#include "tableau_dop853.hpp"
#include "tableaus.hpp"

namespace nholo {

enum class Method : int { rk4 = 0, dopri5 = 1, dop853 = 2 };

struct IntegratorOptions {
  Method method = Method::dopri5;
  double rtol = 1e-10;
  double atol = 1e-12;
  double dt = 1e-3;          // rk4: the step; adaptive: the first step
  double dt_min = 1e-13;     // below this an adaptive step is an underflow
  double dt_max = 0.0;       // 0: unbounded
  int64_t max_steps = 10000000;  // per advance_to call (one output interval)
  double safety = 0.9;
  double fac_min = 0.2;
  double fac_max = 10.0;
  double pi_beta = 0.04;     // 0: plain (I) control
};

template <class S, int N>
struct TrajectoryState {
  Vec<S, N> y;      // state at t
  Vec<S, N> dydt;   // f(t, y) when dydt_valid (FSAL)
  S t;
  S h;              // next step to try
  S err_prev;       // previous accepted error norm (PI control)
  S fail_time;      // t at which status became != ok (NaN while ok)
  int64_t steps;    // accepted steps, cumulative
  int64_t rejected; // rejected steps, cumulative
  Status status;
  bool dydt_valid;
};

// Where an output interval stands when it is advanced in parts.
struct StepBudget {
  int64_t interval_start;  // steps + rejected when the interval began (for opt.max_steps)
  int64_t call_left;       // iterations this call may still take; < 0: no limit
};

template <class S, int N>
NHOLO_HDI StepBudget whole_interval(const TrajectoryState<S, N>& ts) {
  return StepBudget{ts.steps + ts.rejected, -1};
}

template <class S, int N>
NHOLO_HDI TrajectoryState<S, N> start_trajectory(S t0, const Vec<S, N>& y0,
                                                 const IntegratorOptions& opt) {
  TrajectoryState<S, N> ts;
  ts.y = y0;
  ts.dydt = Vec<S, N>::zero();
  ts.t = t0;
  ts.h = S(opt.dt);
  ts.err_prev = S(1e-4);
  ts.fail_time = S(NAN);
  ts.steps = 0;
  ts.rejected = 0;
  ts.status = all_finite(y0) ? Status::ok : Status::non_finite;
  if (ts.status != Status::ok) ts.fail_time = t0;
  ts.dydt_valid = false;
  return ts;
}

namespace detail {

// the interval ends with status st (true: nothing more to do in it)
template <class S, int N>
NHOLO_HDI bool fail(TrajectoryState<S, N>& ts, Status st) {
  ts.status = st;
  ts.fail_time = ts.t;
  return true;
}

// What the events of one step did: status ok (go on), event (a stop event
// ends the trajectory at t_stop, its state written into the step's y0) or
// why f1 could not be evaluated.
template <class S>
struct EventStepResult {
  Status status;
  S t_stop;
};

// The method's own solution inside an accepted step: one step of the tableau
// from the step's start (t0, y0, f0) of any length tau in [0, h], as
// accurate as the step itself (a continuous extension of the method's
// order, at the price of a step). The events refine each crossing found on
// the cubic interpolant with it (trajectory_events.hpp).
template <class Tab, class Sys, class S, int N>
struct StepFromStart {
  const Sys* sys;
  S t0;
  const Vec<S, N>* y0;
  const Vec<S, N>* f0;
  StepTolerance tol;
  // out of line: on a GPU its stages would otherwise add to the registers
  // of the events' search, which calls it
  NHOLO_RHS_NOINLINE NHOLO_HD bool operator()(S tau, Vec<S, N>& y) const {
    if (tau == S(0)) {
      y = *y0;
      return true;
    }
    Vec<S, N> k_last;
    S err = S(0);
    return rk_step<Tab>(*sys, t0, *y0, *f0, tau, tol, y, err, k_last) == Status::ok;
  }
};

// The events of the accepted step from (t0, y0, f0) to (t1, y1, f1), f1
// first evaluated there when EvalF1 (RK4, DOP853: no last stage at the
// step's end). Out of line and given values and the arrays the integrator
// already keeps in memory, not the trajectory's state: the integration
// loop's registers and stack do not carry the events' work. given: the
// events' values at the step's end where the caller evaluated them
// (TrajectoryEvents::step).
template <class Tab, bool EvalF1, class Sys, class Ev, class S, int N, class... Given>
NHOLO_RHS_NOINLINE NHOLO_HD EventStepResult<S> events_after_step(
    const Sys& sys, Ev ev, const StepTolerance& tol, S t0, Vec<S, N>& y0, const Vec<S, N>& f0, S t1,
    const Vec<S, N>& y1, Vec<S, N>& f1, const Given&... given) {
  if constexpr (EvalF1) {
    const Status st = sys(t1, y1, f1);
    if (st != Status::ok) return {st, t1};
  }
  const StepInterpolantView<S, N> u{t0, t1 - t0, &y0, &f0, &y1, &f1};
  const StepFromStart<Tab, Sys, S, N> exact{&sys, t0, &y0, &f0, tol};
  S t_stop = t1;
  // the state at the stop is written into y0 once the step is done with it
  if (!ev.step(u, exact, t_stop, y0, given...)) return {Status::ok, t1};
  return {Status::event, t_stop};
}

// The interval ends after the events of a step said so (r.status != ok):
// at the stop, or at the step's end when f1 failed there.
template <class S, int N>
NHOLO_HDI bool end_at_event(TrajectoryState<S, N>& ts, const EventStepResult<S>& r,
                            const Vec<S, N>& y1) {
  if (r.status != Status::event) ts.y = y1;
  ts.t = r.t_stop;
  ++ts.steps;
  return fail(ts, r.status);
}

// Fixed step: steps of opt.dt, the last one shortened to land on t_out.
// Whether the call's budget ends it here (false: go on, one iteration counted).
NHOLO_HDI bool call_spent(StepBudget& b) {
  if (b.call_left == 0) return true;
  if (b.call_left > 0) --b.call_left;
  return false;
}

// Every iteration of the loops below adds one to steps or rejected, or ends
// the call: steps + rejected - interval_start is the interval's iteration count.
template <class S, int N>
NHOLO_HDI bool interval_spent(const TrajectoryState<S, N>& ts, const StepBudget& b,
                              const IntegratorOptions& opt) {
  return ts.steps + ts.rejected - b.interval_start >= opt.max_steps;
}

// Fixed step: steps of opt.dt, the last one shortened to land on t_out. False:
// the call's budget ran out first.
template <class Sys, class S, int N, class Ev>
NHOLO_HDI bool advance_fixed(const Sys& sys, TrajectoryState<S, N>& ts, S t_out,
                             const IntegratorOptions& opt, StepBudget& b, const Ev& ev) {
  const StepTolerance tol{opt.rtol, opt.atol};
  Vec<S, N> k0;
  while (ts.t < t_out) {
    if (call_spent(b)) return false;
    if (interval_spent(ts, b, opt)) return fail(ts, Status::max_steps);
    S h = S(opt.dt);
    bool landing = false;
    if (ts.t + h >= t_out - S(1e-12) * h) {
      h = t_out - ts.t;
      landing = true;
    }
    Status st = sys(ts.t, ts.y, k0);
    if (st != Status::ok) return fail(ts, st);
    Vec<S, N> y1, klast;
    S err = S(0);
    st = rk_step<TableauRK4>(sys, ts.t, ts.y, k0, h, tol, y1, err, klast);
    if (st != Status::ok) return fail(ts, st);
    const S t1 = landing ? t_out : ts.t + h;
    if (ev.active()) {
      // the interpolant's end slope: the last stage k4 = f(t1, y0 + h k3),
      // f(t1, y1) to O(h^3), so the cubic keeps its O(h^4) error and no
      // right-hand side is added (f(t1, y1) itself would be reused as the
      // next k0 only where no projection moves the state; the crossings are
      // refined by steps of the method, integrate.hpp's StepFromStart)
      const EventStepResult<S> r =
          events_after_step<TableauRK4, false>(sys, ev, tol, ts.t, ts.y, k0, t1, y1, klast);
      if (r.status != Status::ok) return end_at_event(ts, r, y1);
    }
    ts.y = y1;
    ts.t = t1;
    ++ts.steps;
    sys.post_step(ts.t, ts.y);
    if (!all_finite(ts.y)) return fail(ts, Status::non_finite);
  }
  return true;
}

// False: the call's budget ran out first (never inside a chain of steps
// retried after a failed stage, whose status would be lost).
template <class Tab, class Sys, class S, int N, class Ev>
NHOLO_HDI bool advance_adaptive(const Sys& sys, TrajectoryState<S, N>& ts, S t_out,
                                const IntegratorOptions& opt, StepBudget& b, const Ev& ev) {
  const StepTolerance tol{opt.rtol, opt.atol};
  const S q = S(Tab::control_order);
  const S expo1 = S(1) / q - S(0.75 * opt.pi_beta);
  // why the last step failed in a stage (ok: it did not): a step that keeps
  // failing down to the minimum step ends with that status (singular where
  // the formulation said so, e.g. the embedded sleigh coming to rest)
  Status last_failure = Status::ok;
  while (ts.t < t_out) {
    if (last_failure == Status::ok && call_spent(b)) return false;
    if (interval_spent(ts, b, opt)) return fail(ts, Status::max_steps);
    const S h_min = max_of(S(opt.dt_min), S(64.0 * 2.2e-16) * S(fabs(ts.t)));
    if (!(ts.h >= h_min)) {
      return fail(ts, last_failure != Status::ok ? last_failure : Status::step_underflow);
    }
    if (opt.dt_max > 0.0) ts.h = min_of(ts.h, S(opt.dt_max));
    S h = ts.h;
    // land exactly on t_out when the step reaches it (or falls short by a
    // relative 1e-12); truncated: the step was shortened to land
    const bool lands = ts.t + h >= t_out - S(1e-12) * h;
    const bool truncated = lands && ts.t + h > t_out;
    if (lands) h = t_out - ts.t;
    if (!ts.dydt_valid) {
      const Status st = sys(ts.t, ts.y, ts.dydt);
      if (st != Status::ok) return fail(ts, st);
      ts.dydt_valid = true;
    }
    Vec<S, N> y1, klast;
    S err = S(0);  // written by rk_step when it returns ok (GCC -O1 cannot see it)
    const S t1 = lands ? t_out : ts.t + h;
    const Status st = rk_step<Tab>(sys, ts.t, ts.y, ts.dydt, h, tol, y1, err, klast, t1);
    if (st != Status::ok || !is_finite(err)) {
      // a stage left the domain of the right-hand side: retry with a quarter step
      last_failure = st != Status::ok ? st : Status::non_finite;
      ts.h = h * S(0.25);
      ++ts.rejected;
      continue;
    }
    last_failure = Status::ok;
    if (err <= S(1)) {
      // accept (after the events in the step, which may end it earlier)
      if (ev.active()) {
        // without a last stage at the step's end, f there (the next step's f0)
        const EventStepResult<S> r =
            events_after_step<Tab, !Tab::fsal>(sys, ev, tol, ts.t, ts.y, ts.dydt, t1, y1, klast);
        if (r.status != Status::ok) return end_at_event(ts, r, y1);
      }
      ts.t = t1;
      ts.y = y1;
      ++ts.steps;
      if (Tab::fsal || ev.active()) {
        ts.dydt = klast;  // f(t1, y1): the last stage, or evaluated for the events
        ts.dydt_valid = true;
      } else {
        ts.dydt_valid = false;
      }
      // rk_step checked y1 for finiteness; only a projection can spoil it
      if (sys.post_step(ts.t, ts.y)) {
        ts.dydt_valid = false;
        if (!all_finite(ts.y)) return fail(ts, Status::non_finite);
      }
      const S e = max_of(err, S(1e-10));
      S fac = S(opt.safety) * pow(e, -expo1) * pow(ts.err_prev, S(opt.pi_beta));
      fac = min_of(S(opt.fac_max), max_of(S(opt.fac_min), fac));
      ts.err_prev = max_of(err, S(1e-4));
      // a step shortened to land on t_out does not set the pace
      if (!truncated) ts.h = h * fac;
    } else {
      // reject
      S fac = S(opt.safety) * pow(err, -S(1) / q);
      fac = max_of(S(opt.fac_min), min_of(fac, S(1)));
      ts.h = h * fac;
      ++ts.rejected;
    }
  }
  return true;
}

}  // namespace detail

// The same with the method fixed at compile time (one GPU kernel per method:
// no run-time switch holding the registers of all three steppers), within
// budget b: false when b's call budget ran out before t_out (continue with
// the same ts and b).
// ev: the trajectory's events (kernels/trajectory_events.hpp), NoEvents{}
// when there are none.
template <Method M, class Sys, class S, int N, class Ev>
NHOLO_HDI bool advance_to_method(const Sys& sys, TrajectoryState<S, N>& ts, S t_out,
                                 const IntegratorOptions& opt, StepBudget& b, const Ev& ev) {
  if (ts.status != Status::ok) return true;
  if constexpr (M == Method::rk4) {
    return detail::advance_fixed(sys, ts, t_out, opt, b, ev);
  } else if constexpr (M == Method::dopri5) {
    return detail::advance_adaptive<TableauDopri5>(sys, ts, t_out, opt, b, ev);
  } else {
    return detail::advance_adaptive<TableauDop853>(sys, ts, t_out, opt, b, ev);
  }
}

template <Method M, class Sys, class S, int N>
NHOLO_HDI bool advance_to_method(const Sys& sys, TrajectoryState<S, N>& ts, S t_out,
                                 const IntegratorOptions& opt, StepBudget& b) {
  return advance_to_method<M>(sys, ts, t_out, opt, b, NoEvents{});
}

template <class Sys, class S, int N>
NHOLO_HDI void advance_to(const Sys& sys, TrajectoryState<S, N>& ts, S t_out,
                          const IntegratorOptions& opt) {
  StepBudget b = whole_interval(ts);
  switch (opt.method) {
    case Method::rk4: advance_to_method<Method::rk4>(sys, ts, t_out, opt, b); break;
    case Method::dopri5: advance_to_method<Method::dopri5>(sys, ts, t_out, opt, b); break;
    case Method::dop853: advance_to_method<Method::dop853>(sys, ts, t_out, opt, b); break;
  }
}

}  // namespace nholo
