// nholo/kernels/integrate_lanes.hpp — W trajectories advanced together in
// the lanes of one core's vector unit (kernels/lanes.hpp), each with its own
// step size, accept/reject decision, output time, step counts and status:
// the adaptive integrator of integrate.hpp (detail::advance_adaptive) with
// every decision taken per lane, and its fixed-step RK4 (detail::
// advance_fixed: step_lanes_fixed). CPU only.
//
//   LaneTrajectories<W, N> lt = start_lanes<W, N>(t0, y0, opt);
//   advance_lanes<TableauDopri5>(sys, lt, t_out, opt, active);   // to t_out[i]
// or, one attempted step at a time (the ensemble's lanes, which refill a lane
// as soon as its trajectory is done: kernels/ensemble_lanes.hpp):
//   begin_lane_interval(lt, i, budget);  ... step_lanes<Tab>(sys, lt, t_out, opt, running, ended);
//
// sys is a lane system: `LaneStatus<W> sys(Lanes<W> t, const Vec<Lanes<W>, N>& y,
// Vec<Lanes<W>, N>& dydt)`. The stages and the error norm run on lanes; the
// step-size control runs per lane on plain doubles with the same operations
// as integrate.hpp (glibc's pow included), so that a lane takes exactly the
// steps that the scalar integrator takes on the same right-hand side values:
// for a right-hand side of arithmetic and sqrt only, each lane's result is
// the scalar integrator's to the bit (tests/test_integrate_lanes.cpp). A lane
// whose trajectory has ended (landed on its t_out, failed, or not active)
// still rides along through the stages; what it computes is discarded.
// After an accepted step the lane system's post_step (a drift projection:
// LaneSystem::post_step) may move the lanes' states, as the scalar System's
// post_step does in integrate.hpp; a step's events (step_lanes' Events) run
// lane by lane after it is accepted, as in integrate.hpp, with the event
// functions' values at the step's end evaluated on the lanes
// (kernels/lane_events.hpp), and skipped for a lane whose values there say
// that the step has nothing for them (TrajectoryEvents::quiet_step). The
// Lyapunov tangent is a lane system of its own (kernels/lane_tangent.hpp),
// its reorthonormalisation its post_step.
#pragma once

#include <stdint.h>

#include <type_traits>
#include <utility>

#include "integrate.hpp"
#include "lane_events.hpp"
#include "lanes.hpp"

namespace nholo {

template <int W, int N>
struct LaneTrajectories {
  Vec<Lanes<W>, N> y;
  Vec<Lanes<W>, N> dydt;  // f(t, y) in the lanes where dydt_valid (FSAL)
  Lanes<W> t;
  Lanes<W> h;         // next step to try
  Lanes<W> err_prev;  // previous accepted error norm (PI control)
  Lanes<W> fail_time;
  int64_t steps[W];
  int64_t rejected[W];
  Status status[W];
  bool dydt_valid[W];
  // the current output interval of each lane (integrate.hpp's StepBudget and
  // its local last_failure): set by begin_lane_interval
  int64_t interval_start[W];
  int64_t call_left[W];  // iterations the lane's launch may still take; < 0: no limit
  Status last_failure[W];
};

// How a lane's output interval ended in step_lanes.
enum class LaneEnd : uint8_t {
  running = 0,  // not ended
  done = 1,     // landed on its t_out, or ended with a status (advance_* returned true)
  spent = 2,    // its launch's step budget ran out first (advance_* returned false)
};

// Lane i of lt as the scalar integrator's state.
template <int W, int N>
inline TrajectoryState<double, N> lane_state(const LaneTrajectories<W, N>& lt, int i) {
  TrajectoryState<double, N> ts;
  for (int c = 0; c < N; ++c) {
    ts.y[c] = lt.y[c][i];
    ts.dydt[c] = lt.dydt[c][i];
  }
  ts.t = lt.t[i];
  ts.h = lt.h[i];
  ts.err_prev = lt.err_prev[i];
  ts.fail_time = lt.fail_time[i];
  ts.steps = lt.steps[i];
  ts.rejected = lt.rejected[i];
  ts.status = lt.status[i];
  ts.dydt_valid = lt.dydt_valid[i];
  return ts;
}

// The scalar state ts into lane i of lt, the lane's output interval
// (interval_start, call_left, last_failure) left as it is: a scalar function
// of integrate.hpp applied to the lane's state (lane_state) written back.
template <int W, int N>
inline void set_lane_trajectory(LaneTrajectories<W, N>& lt, int i,
                                const TrajectoryState<double, N>& ts) {
  for (int c = 0; c < N; ++c) {
    lt.y[c].set(i, ts.y[c]);
    lt.dydt[c].set(i, ts.dydt[c]);
  }
  lt.t.set(i, ts.t);
  lt.h.set(i, ts.h);
  lt.err_prev.set(i, ts.err_prev);
  lt.fail_time.set(i, ts.fail_time);
  lt.steps[i] = ts.steps;
  lt.rejected[i] = ts.rejected;
  lt.status[i] = ts.status;
  lt.dydt_valid[i] = ts.dydt_valid;
}

// The scalar state ts into lane i of lt (a new trajectory taking a free
// lane), its output interval begun anew.
template <int W, int N>
inline void set_lane_state(LaneTrajectories<W, N>& lt, int i,
                           const TrajectoryState<double, N>& ts) {
  set_lane_trajectory(lt, i, ts);
  lt.interval_start[i] = ts.steps + ts.rejected;
  lt.call_left[i] = -1;
  lt.last_failure[i] = Status::ok;
}

// Lane i begins an output interval within budget b (integrate.hpp's
// advance_adaptive entered with b).
template <int W, int N>
inline void begin_lane_interval(LaneTrajectories<W, N>& lt, int i, const StepBudget& b) {
  lt.interval_start[i] = b.interval_start;
  lt.call_left[i] = b.call_left;
  lt.last_failure[i] = Status::ok;
}

namespace lane_step_detail {

// lane i's trajectory ends its interval with status st at its current time
// (integrate.hpp's detail::fail for a lane)
template <int W, int N>
inline LaneEnd fail_lane(LaneTrajectories<W, N>& lt, int i, Status st) {
  lt.status[i] = st;
  lt.fail_time.set(i, lt.t[i]);
  return LaneEnd::done;
}

// ... and leaves the running lanes of step_lanes / step_lanes_fixed
template <int W, int N>
inline void end_lane(LaneTrajectories<W, N>& lt, int i, Status st, bool* running, LaneEnd* ended) {
  ended[i] = fail_lane(lt, i, st);
  running[i] = false;
}

// k_I = f(t + c_I h, y + h sum_{J<I} a_IJ k_J) for I = I0 .. Last-1 on every
// lane, every stage evaluated (a lane that failed in an earlier one rides
// along); note(status) sees each stage's per-lane status.
template <class Tab, int I, int Last, class Sys, class L, int N, class Note>
inline void run_all_stages(const Sys& sys, L t, const Vec<L, N>& y, Vec<L, N>* k, L h,
                           const Note& note) {
  if constexpr (I < Last) {
    Vec<L, N> yi;
    for (int c = 0; c < N; ++c) yi[c] = detail::stage_sum<Tab, I, 0>(y[c], k, h, c);
    note(sys(t + L(Tab::c(I)) * h, yi, k[I]));
    run_all_stages<Tab, I + 1, Last>(sys, t, y, k, h, note);
  }
}

// One step of the tableau on every lane: y1, the error norm and the last
// stage, and per lane the status of the first stage that failed (ok: none),
// as rk_step.hpp's rk_step would return it for that lane alone.
template <class Tab, class Sys, int W, int N>
inline void rk_step_lanes(const Sys& sys, Lanes<W> t, const Vec<Lanes<W>, N>& y,
                          const Vec<Lanes<W>, N>& k0, Lanes<W> h, Lanes<W> t1,
                          const StepTolerance& tol, Vec<Lanes<W>, N>& y1, Lanes<W>& err,
                          Vec<Lanes<W>, N>& k_last, Status* first_failure) {
  using L = Lanes<W>;
  constexpr int s = Tab::stages;
  constexpr int explicit_stages = Tab::fsal ? s - 1 : s;
  Vec<L, N> k[s];
  k[0] = k0;
  for (int i = 0; i < W; ++i) first_failure[i] = Status::ok;
  const auto note = [&](const LaneStatus<W>& st) {
    for (int i = 0; i < W; ++i)
      if (first_failure[i] == Status::ok && st[i] != Status::ok) first_failure[i] = st[i];
  };
  run_all_stages<Tab, 1, explicit_stages>(sys, t, y, k, h, note);
  for (int c = 0; c < N; ++c)
    y1[c] = y[c] + h * detail::weighted_sum<Tab, 0, 0, explicit_stages>(L(0.0), k, c);
  // a lane whose y1 is not finite fails there (an FSAL tableau before its last stage)
  const LaneMask<W> y1_finite = finite_lanes(y1);
  const auto note_y1 = [&]() {
    for (int i = 0; i < W; ++i)
      if (first_failure[i] == Status::ok && !y1_finite[i]) first_failure[i] = Status::non_finite;
  };
  if constexpr (Tab::fsal) {
    note_y1();
    note(sys(t1, y1, k[s - 1]));
    k_last = k[s - 1];
  } else if constexpr (Tab::error_order == 0) {
    k_last = k[s - 1];  // a fixed-step tableau's last stage (rk_step.hpp)
  }
  if constexpr (Tab::error_order == 0) {
    err = L(0.0);
  } else if constexpr (!Tab::two_estimates) {
    L sum(0.0);
    for (int c = 0; c < N; ++c) {
      const L e = detail::weighted_sum<Tab, 1, 0, s>(L(0.0), k, c);
      const L sc = L(tol.atol) + L(tol.rtol) * max_of(fabs(y[c]), fabs(y1[c]));
      const L r = h * e / sc;
      sum += r * r;
    }
    err = sqrt(sum / L(double(N)));
  } else {
    L e5(0.0), e3(0.0);
    for (int c = 0; c < N; ++c) {
      const L a5 = detail::weighted_sum<Tab, 1, 0, s>(L(0.0), k, c);
      const L a3 = detail::weighted_sum<Tab, 2, 0, s>(L(0.0), k, c);
      const L sc = L(tol.atol) + L(tol.rtol) * max_of(fabs(y[c]), fabs(y1[c]));
      e5 += (a5 / sc) * (a5 / sc);
      e3 += (a3 / sc) * (a3 / sc);
    }
    const L deno = e5 + L(0.01) * e3;
    err = select(deno > L(0.0), fabs(h) * e5 / sqrt(L(double(N)) * deno), L(0.0));
  }
  if constexpr (!Tab::fsal) note_y1();
}

template <class Sys, int W, int N, class = void>
struct has_post_step : std::false_type {};
template <class Sys, int W, int N>
struct has_post_step<
    Sys, W, N,
    std::void_t<decltype(std::declval<const Sys&>().post_step(
        std::declval<Lanes<W>>(), std::declval<Vec<Lanes<W>, N>&>(), std::declval<LaneMask<W>>()))>>
    : std::true_type {};

// sys.post_step(t, y, accepted) where the lane system has one (a drift
// projection: LaneSystem), else nothing moves
template <class Sys, int W, int N>
inline LaneMask<W> post_step(const Sys& sys, Lanes<W> t, Vec<Lanes<W>, N>& y,
                             LaneMask<W> accepted) {
  if constexpr (has_post_step<Sys, W, N>::value) {
    return sys.post_step(t, y, accepted);
  } else {
    return LaneMask<W>(false);
  }
}

// The events of lane i's accepted step from (t, y, f0) to (t1s[i], y1, f1)
// (f1_status: why f1 could not be evaluated, ok when it was), as
// advance_adaptive and advance_fixed run them; true when they end the lane's interval
// (detail::end_at_event: at a stop, in the event's state, or at the step's
// end where f1 failed), the lane's state then set and the step not taken.
// The events' values at the step's end are evaluated for all lanes at once
// by the first lane that needs them (ends: kernels/lane_events.hpp), at the
// time the scalar code reads, t + (t1 - t); a lane whose step they show to
// be quiet keeps them and takes the step without the events' scalar code.
template <class Tab, class Events, int W, int N>
inline bool lane_events(const Events& events, int i, const StepTolerance& tol,
                        LaneTrajectories<W, N>& lt, const Vec<Lanes<W>, N>& f0,
                        const Vec<Lanes<W>, N>& y1, const Vec<Lanes<W>, N>& f1, const Lanes<W>& t1s,
                        Status f1_status, LaneEventEnds<W>& ends) {
  const double t1 = t1s[i];
  const bool given =
      f1_status == Status::ok &&
      (ends.n_events >= 0 || events.evaluate_ends(lt.t + (t1s - lt.t), y1, f1, ends));
  // most steps: nothing to do but keep the end values (TrajectoryEvents::quiet_step)
  if (given && events.quiet_step(i, t1 - lt.t[i], EventEndsOfLane<W>{&ends, i})) return false;
  Vec<double, N> y0i, f0i, y1i, f1i;
  for (int c = 0; c < N; ++c) {
    y0i[c] = lt.y[c][i];
    f0i[c] = f0[c][i];
    y1i[c] = y1[c][i];
    f1i[c] = f1[c][i];
  }
  detail::EventStepResult<double> r{f1_status, t1};
  if (given)
    r = events.template step<Tab>(i, tol, lt.t[i], y0i, f0i, t1, y1i, f1i,
                                  EventEndsOfLane<W>{&ends, i});
  else if (f1_status == Status::ok)
    r = events.template step<Tab>(i, tol, lt.t[i], y0i, f0i, t1, y1i, f1i);
  if (r.status == Status::ok) return false;
  TrajectoryState<double, N> ts = lane_state(lt, i);
  ts.y = y0i;  // (a stop's state: the events wrote it there)
  detail::end_at_event(ts, r, y1i);
  set_lane_trajectory(lt, i, ts);
  return true;
}

// The system's drift projection after the lanes in `accept` took their
// steps: f at a moved state is evaluated again; a state the projection
// spoils ends the lane's trajectory there, with the step size and error
// norm it had before the step (h_before, err_prev_before: the scalar
// integrator returns before its step-size control).
template <class Sys, int W, int N>
inline void project_accepted(const Sys& sys, LaneTrajectories<W, N>& lt, LaneMask<W> accept,
                             const Lanes<W>& h_before, const Lanes<W>& err_prev_before) {
  const LaneMask<W> moved = post_step(sys, lt.t, lt.y, accept);
  if (!any(moved)) return;
  const LaneMask<W> finite = finite_lanes(lt.y);
  for (int i = 0; i < W; ++i) {
    if (!moved[i]) continue;
    lt.dydt_valid[i] = false;
    if (finite[i]) continue;
    fail_lane(lt, i, Status::non_finite);
    lt.h.set(i, h_before[i]);
    lt.err_prev.set(i, err_prev_before[i]);
  }
}

}  // namespace lane_step_detail

template <int W, int N>
inline LaneTrajectories<W, N> start_lanes(const Lanes<W>& t0, const Vec<Lanes<W>, N>& y0,
                                          const IntegratorOptions& opt) {
  LaneTrajectories<W, N> lt;
  for (int i = 0; i < W; ++i) {
    Vec<double, N> yi;
    for (int c = 0; c < N; ++c) yi[c] = y0[c][i];
    set_lane_state(lt, i, start_trajectory<double, N>(t0[i], yi, opt));
  }
  return lt;
}

namespace lane_step_detail {

// The step lane i tries next, or why its interval ends before one: the
// tests at the top of integrate.hpp's advance_adaptive loop, in its order.
template <int W, int N>
inline LaneEnd lane_step_size(LaneTrajectories<W, N>& lt, int i, double t_out,
                              const IntegratorOptions& opt, double& h, double& t1,
                              bool& truncated) {
  const double t = lt.t[i];
  if (lt.status[i] != Status::ok || !(t < t_out)) return LaneEnd::done;
  if (lt.last_failure[i] == Status::ok) {  // integrate.hpp's call_spent
    if (lt.call_left[i] == 0) return LaneEnd::spent;
    if (lt.call_left[i] > 0) --lt.call_left[i];
  }
  if (lt.steps[i] + lt.rejected[i] - lt.interval_start[i] >= opt.max_steps)
    return fail_lane(lt, i, Status::max_steps);
  const double h_min = max_of(opt.dt_min, 64.0 * 2.2e-16 * fabs(t));
  if (!(lt.h[i] >= h_min))
    return fail_lane(
        lt, i, lt.last_failure[i] != Status::ok ? lt.last_failure[i] : Status::step_underflow);
  if (opt.dt_max > 0.0) lt.h.set(i, min_of(lt.h[i], opt.dt_max));
  h = lt.h[i];
  const bool lands = t + h >= t_out - 1e-12 * h;
  truncated = lands && t + h > t_out;
  if (lands) h = t_out - t;
  t1 = lands ? t_out : t + h;
  return LaneEnd::running;
}

// The step each lane in `running` tries next, by step_size(i, h, t1) (it
// returns why the lane's interval ends, or running): its h and t1 into hs
// and t1s; a lane whose interval ends leaves `running`. False: none steps.
template <int W, class StepSize>
inline bool gather_steps(bool* running, LaneEnd* ended, Lanes<W>& hs, Lanes<W>& t1s,
                         const StepSize& step_size) {
  bool any_running = false;
  for (int i = 0; i < W; ++i) {
    ended[i] = LaneEnd::running;
    if (!running[i]) continue;
    double h = 0.0, t1 = 0.0;
    ended[i] = step_size(i, h, t1);
    if (ended[i] != LaneEnd::running) {
      running[i] = false;
      continue;
    }
    hs.set(i, h);
    t1s.set(i, t1);
    any_running = true;
  }
  return any_running;
}

}  // namespace lane_step_detail

// The events of the lanes' trajectories (step_lanes' last argument): none.
// A lanes' events type (kernels/ensemble_lanes.hpp) gives
//   bool active(int lane) const           whether this lane's trajectory has events
//   bool evaluate_ends(t1, y1, f1, LaneEventEnds<W>& ends) const
//       the events' values at the lanes' step ends (kernels/lane_events.hpp);
//       false where they cannot be evaluated for all lanes at once
//   template <class Given> bool quiet_step(int lane, double h, const Given&) const
//       TrajectoryEvents::quiet_step for the lane's trajectory
//   template <class Tab, class... Given>
//   EventStepResult<double> step(int lane, tol, t0, y0, f0, t1, y1, f1, given...) const
// the latter integrate.hpp's events_after_step<Tab, false> for the lane's
// trajectory: f1 = f(t1, y1) is given (the lanes evaluate it together), and
// the end values where evaluate_ends gave them.
struct NoLaneEvents {};

// One attempted step for every lane in `running` towards its t_out[i], as
// one pass of integrate.hpp's advance_adaptive loop: a lane whose interval
// ends (now, or before its step) leaves `running`, with why in ended[i].
// With events, each accepted step's events run lane by lane, as the scalar
// integrator runs them; a stop ends the lane's interval at the event.
template <class Tab, class Sys, int W, int N, class Events = NoLaneEvents>
inline void step_lanes(const Sys& sys, LaneTrajectories<W, N>& lt, const Lanes<W>& t_out,
                       const IntegratorOptions& opt, bool* running, LaneEnd* ended,
                       const Events& events = Events()) {
  using L = Lanes<W>;
  const StepTolerance tol{opt.rtol, opt.atol};
  const double q = double(Tab::control_order);
  const double expo1 = 1.0 / q - 0.75 * opt.pi_beta;
  L hs = lt.h, t1s = lt.t;
  bool truncated[W] = {};
  const bool any_running =
      lane_step_detail::gather_steps(running, ended, hs, t1s, [&](int i, double& h, double& t1) {
        return lane_step_detail::lane_step_size(lt, i, t_out[i], opt, h, t1, truncated[i]);
      });
  if (!any_running) return;
  bool need_f0 = false;
  for (int i = 0; i < W; ++i) need_f0 = need_f0 || (running[i] && !lt.dydt_valid[i]);
  if (need_f0) {
    Vec<L, N> f0;
    const LaneStatus<W> st = sys(lt.t, lt.y, f0);
    for (int i = 0; i < W; ++i) {
      if (!running[i] || lt.dydt_valid[i]) continue;
      for (int c = 0; c < N; ++c) lt.dydt[c].set(i, f0[c][i]);
      if (st[i] != Status::ok) {
        lane_step_detail::end_lane(lt, i, st[i], running, ended);
        continue;
      }
      lt.dydt_valid[i] = true;
    }
  }
  Vec<L, N> y1, klast;
  L err;
  Status stage_failure[W];
  lane_step_detail::rk_step_lanes<Tab>(sys, lt.t, lt.y, lt.dydt, hs, t1s, tol, y1, err, klast,
                                       stage_failure);
  // with events and a tableau without a last stage at the step's end:
  // f(t1, y1) for the events (and the next step's f0), on every lane
  constexpr bool has_events = !std::is_same<Events, NoLaneEvents>::value;
  Vec<L, N> f1;
  LaneStatus<W> f1_status;
  if constexpr (has_events) {
    if constexpr (Tab::fsal) {
      f1 = klast;
    } else {
      f1_status = sys(t1s, y1, f1);
    }
  }
  // per lane the step's outcome and its next step size (the scalar
  // integrator's control, glibc's pow included); the states of the lanes
  // that accept are then taken over as whole vectors (lane by lane, the
  // stores of single doubles stall the vector loads of the next step)
  LaneMask<W> accept(false), evaluated_f1(false);
  LaneEventEnds<W> ends;  // the events' end values, once a lane needs them
  const L h_before = lt.h, err_prev_before = lt.err_prev;  // (a projection that fails)
  for (int i = 0; i < W; ++i) {
    if (!running[i]) continue;
    const double h = hs[i], e = err[i];
    if (stage_failure[i] != Status::ok || !is_finite(e)) {
      // a stage left the domain of the right-hand side: a quarter step
      lt.last_failure[i] = stage_failure[i] != Status::ok ? stage_failure[i] : Status::non_finite;
      lt.h.set(i, h * 0.25);
      ++lt.rejected[i];
      continue;
    }
    lt.last_failure[i] = Status::ok;
    if (e <= 1.0) {
      if constexpr (has_events) {
        if (events.active(i)) {
          // the step's events, before it is taken (a stop ends it earlier)
          if (lane_step_detail::lane_events<Tab>(events, i, tol, lt, lt.dydt, y1, f1, t1s,
                                                 Tab::fsal ? Status::ok : f1_status[i], ends))
            continue;
          evaluated_f1.set(i, !Tab::fsal);
        }
      }
      accept.set(i, true);
      lt.dydt_valid[i] = Tab::fsal || evaluated_f1[i];
      ++lt.steps[i];
      const double em = max_of(e, 1e-10);
      double fac = opt.safety * ::pow(em, -expo1) * ::pow(lt.err_prev[i], opt.pi_beta);
      fac = min_of(opt.fac_max, max_of(opt.fac_min, fac));
      lt.err_prev.set(i, max_of(e, 1e-4));
      if (!truncated[i]) lt.h.set(i, h * fac);
    } else {
      double fac = opt.safety * ::pow(e, -1.0 / q);
      fac = max_of(opt.fac_min, min_of(fac, 1.0));
      lt.h.set(i, h * fac);
      ++lt.rejected[i];
    }
  }
  if (!any(accept)) return;
  lt.t = select(accept, t1s, lt.t);
  for (int c = 0; c < N; ++c) {
    lt.y[c] = select(accept, y1[c], lt.y[c]);
    // f(t1, y1): the last stage, or evaluated for the events
    if (Tab::fsal) lt.dydt[c] = select(accept, klast[c], lt.dydt[c]);
    if constexpr (has_events && !Tab::fsal)
      if (any(evaluated_f1)) lt.dydt[c] = select(evaluated_f1, f1[c], lt.dydt[c]);
  }
  lane_step_detail::project_accepted(sys, lt, accept, h_before, err_prev_before);
}

namespace lane_step_detail {

// The step lane i takes next with the fixed-step method, or why its
// interval ends before one: the tests at the top of integrate.hpp's
// advance_fixed loop, in its order (steps of opt.dt, the last one shortened
// to land on t_out).
template <int W, int N>
inline LaneEnd lane_fixed_step_size(LaneTrajectories<W, N>& lt, int i, double t_out,
                                    const IntegratorOptions& opt, double& h, double& t1) {
  const double t = lt.t[i];
  if (lt.status[i] != Status::ok || !(t < t_out)) return LaneEnd::done;
  if (lt.call_left[i] == 0) return LaneEnd::spent;  // integrate.hpp's call_spent
  if (lt.call_left[i] > 0) --lt.call_left[i];
  if (lt.steps[i] + lt.rejected[i] - lt.interval_start[i] >= opt.max_steps)
    return fail_lane(lt, i, Status::max_steps);
  h = opt.dt;
  const bool landing = t + h >= t_out - 1e-12 * h;
  if (landing) h = t_out - t;
  t1 = landing ? t_out : t + h;
  return LaneEnd::running;
}

}  // namespace lane_step_detail

// One step of classical RK4 for every lane in `running` towards its
// t_out[i], as one pass of integrate.hpp's advance_fixed loop: f at the
// step's start evaluated anew (no FSAL), no error estimate or step-size
// control; the events of the step lane by lane, then the drift projection.
// A lane whose interval ends (now, or before its step) leaves `running`,
// with why in ended[i]. The lanes' h, err_prev and dydt are not touched, as
// the scalar fixed-step loop leaves the trajectory's.
template <class Sys, int W, int N, class Events = NoLaneEvents>
inline void step_lanes_fixed(const Sys& sys, LaneTrajectories<W, N>& lt, const Lanes<W>& t_out,
                             const IntegratorOptions& opt, bool* running, LaneEnd* ended,
                             const Events& events = Events()) {
  using L = Lanes<W>;
  using Tab = TableauRK4;
  const StepTolerance tol{opt.rtol, opt.atol};
  L hs(opt.dt), t1s = lt.t;
  const bool any_running =
      lane_step_detail::gather_steps(running, ended, hs, t1s, [&](int i, double& h, double& t1) {
        return lane_step_detail::lane_fixed_step_size(lt, i, t_out[i], opt, h, t1);
      });
  if (!any_running) return;
  Vec<L, N> k0, y1, klast;
  const LaneStatus<W> st0 = sys(lt.t, lt.y, k0);
  for (int i = 0; i < W; ++i)
    if (running[i] && st0[i] != Status::ok)
      lane_step_detail::end_lane(lt, i, st0[i], running, ended);
  L err;
  Status stage_failure[W];
  lane_step_detail::rk_step_lanes<Tab>(sys, lt.t, lt.y, k0, hs, t1s, tol, y1, err, klast,
                                       stage_failure);
  LaneMask<W> accept(false);
  LaneEventEnds<W> ends;  // the events' end values, once a lane needs them
  for (int i = 0; i < W; ++i) {
    if (!running[i]) continue;
    if (stage_failure[i] != Status::ok) {
      lane_step_detail::end_lane(lt, i, stage_failure[i], running, ended);
      continue;
    }
    // the events' end slope: the last stage (integrate.hpp's advance_fixed)
    if constexpr (!std::is_same<Events, NoLaneEvents>::value) {
      if (events.active(i) && lane_step_detail::lane_events<Tab>(events, i, tol, lt, k0, y1, klast,
                                                                 t1s, Status::ok, ends))
        continue;
    }
    accept.set(i, true);
    ++lt.steps[i];
  }
  if (!any(accept)) return;
  lt.t = select(accept, t1s, lt.t);
  for (int c = 0; c < N; ++c) lt.y[c] = select(accept, y1[c], lt.y[c]);
  // y1 is finite (rk_step_lanes): only a projection can spoil the state
  const LaneMask<W> moved = lane_step_detail::post_step(sys, lt.t, lt.y, accept);
  if (!any(moved)) return;
  const LaneMask<W> finite = finite_lanes(lt.y);
  for (int i = 0; i < W; ++i)
    if (moved[i] && !finite[i])
      lane_step_detail::end_lane(lt, i, Status::non_finite, running, ended);
}

// Advances the lanes in `active` (the others are left as they are) to their
// own t_out[i], each as detail::advance_adaptive<Tab> would with a whole
// interval's budget: landing exactly on t_out[i], or ending with its status
// and fail_time set.
template <class Tab, class Sys, int W, int N>
inline void advance_lanes(const Sys& sys, LaneTrajectories<W, N>& lt, const Lanes<W>& t_out,
                          const IntegratorOptions& opt, const bool* active) {
  bool running[W];
  LaneEnd ended[W];
  bool any = false;
  for (int i = 0; i < W; ++i) {
    running[i] = active[i];
    if (active[i]) begin_lane_interval(lt, i, StepBudget{lt.steps[i] + lt.rejected[i], -1});
    any = any || running[i];
  }
  while (any) {
    step_lanes<Tab>(sys, lt, t_out, opt, running, ended);
    any = false;
    for (int i = 0; i < W; ++i) any = any || running[i];
  }
}

}  // namespace nholo
