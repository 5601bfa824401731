// nholo/kernels/trajectory_events.hpp — a run's events for one trajectory,
// as the integrator sees them after each accepted step (integrate.hpp).
//
//   TrajectoryEvents<S> ev{table, i, count, n, counts, records, varied};
//   if (ev.active() && ev.step(u, t_stop, y_stop)) -> the trajectory ends
//     at t_stop in state y_stop (status event)
//
// For each accepted step, with u its interpolant (events.hpp): the first
// crossing of every `stop` event is found; the earliest of them, if any,
// ends the trajectory there. Every event's crossings up to that time (all of
// them when nothing stops) are then counted, counts[e * count + i], and the
// first max_records of the trajectory are stored. A crossing is found and
// ordered on the interpolant, then refined on the method's own solution in
// the step (refine_crossing: a few steps of the method from the step's
// start), so that its time and state are as accurate as the integration,
// not only as the cubic interpolant. Each is stored as
// (t, q[0..n), qd[0..n)) at
//   records[((offset_e * count + i * max_records_e) + r) * (1 + 2 n) + j]
// with offset_e the EventTable's record_offset: per trajectory and event a
// fixed block, the file's order. A crossing inside a step is never lost: the
// count goes on past max_records. g's value at a step's start is the last
// step's end value, kept per trajectory (g_end, for the slice: the same
// however the window is cut into launches), so that the signs along the
// trajectory's interpolants are continuous across steps even where the drift
// projection moves the state between them (no crossing at a step boundary
// reported twice or lost), and g is evaluated once less per step.
#pragma once

#include <stdint.h>

#include "event_program.hpp"
#include "events.hpp"

namespace nholo {

namespace detail {

// g at a point (events.hpp EventPoint): out of line, one copy of the
// interpreter per scalar type for every system, method and call site
template <class S>
NHOLO_NOINLINE NHOLO_HD S event_at(const EventFunction& f, const EventPoint<S>& p,
                                   const double* varied, int64_t stride) {
  return event_value_of(f, p.t, p, varied, stride);
}

// one event function of a trajectory, as g(t, y), or on an interpolant
// (events.hpp reads_interpolant: only the components g reads are
// interpolated)
template <class S, int N>
struct EventOnState {
  static constexpr bool reads_interpolant = true;
  const EventFunction* f;
  int n;
  const double* varied;
  int64_t stride;
  NHOLO_HDI S operator()(S t, const Vec<S, N>& y) const {
    const EventPoint<S> p{t, &y[0], nullptr, nullptr, nullptr, S(0), S(0), n};
    return event_at(*f, p, varied, stride);
  }
  template <class U>
  NHOLO_HDI S on(const U& u, S theta) const {
    return event_at(*f, u.point(theta, n), varied, stride);
  }
};

// The crossing found at theta on the interpolant u, refined on the method's
// own solution inside the step, exact(tau, y) (integrate.hpp StepFromStart):
// a secant iteration on g(t0 + tau, exact(tau)) from the interpolant's zero
// and its slope there, until two iterates are 4 ulp of t apart (at most 6
// steps). Returns the time whose |g| is smallest, its state in y; the
// interpolant's where the method's steps fail.
template <class G, class U, class X, class S = typename U::scalar>
NHOLO_HDI S refine_crossing(const G& g, const U& u, const X& exact, S theta, Vec<S, U::dim>& y) {
  const S h = u.h;
  S best = theta * h;
  if (!exact(best, y)) {
    u.state(theta, y);
    return u.time(theta);
  }
  S g_best = g(u.t0 + best, y);
  if (g_best == S(0)) return u.t0 + best;
  // g's slope along the interpolant at theta, for the first secant
  const S ta = max_of(S(0), theta - S(1e-4)), tb = min_of(S(1), theta + S(1e-4));
  const S slope = (event_value(g, u, tb) - event_value(g, u, ta)) / ((tb - ta) * h);
  if (!is_finite(slope) || slope == S(0)) return u.t0 + best;
  const S t_scale = max_of(max_of(S(fabs(u.t0)), S(fabs(u.t0 + h))), S(1e-300));
  const S width = S(4) * S(2.220446049250313e-16) * t_scale;
  S a = best, ga = g_best, b = best - g_best / slope;
  Vec<S, U::dim> yb;
  for (int it = 0; it < 6; ++it) {
    if (!(b >= S(0) && b <= h) || !exact(b, yb)) break;
    const S gb = g(u.t0 + b, yb);
    if (!is_finite(gb)) break;
    if (fabs(gb) <= fabs(g_best)) {
      best = b;
      g_best = gb;
      y = yb;
    }
    if (gb == S(0) || fabs(b - a) <= width || gb == ga) break;
    const S next = b - gb * (b - a) / (gb - ga);
    a = b;
    ga = gb;
    b = next;
  }
  return u.t0 + best;
}

}  // namespace detail

template <class S>
struct TrajectoryEvents {
  const EventTable* table;  // null: no events
  int64_t i;                // the trajectory in the slice
  int64_t count;            // trajectories in the slice
  int n;                    // coordinates
  int64_t* counts;          // [e * count + i]
  double* records;          // see the header
  double* g_end;            // [e * count + i]: g at the last step's end (NaN: not yet)
  const double* varied;     // params[j * count + i] (null: none vary)

  NHOLO_HDI bool active() const { return table != nullptr && table->n_events > 0; }

  // The crossings of accepted step u (header), each refined on the method's
  // solution exact (detail::refine_crossing). True when a stop event ends
  // the trajectory in it: t_stop, y_stop the time and the state there.
  template <class U, class X, int N>
  NHOLO_RHS_NOINLINE NHOLO_HD bool step(const U& u, const X& exact, S& t_stop,
                                        Vec<S, N>& y_stop) const {
    const int ne = table->n_events;
    // the earliest first crossing of a stop event
    S stop_theta = S(2);
    int stop_event = -1;
    for (int e = 0; e < ne; ++e) {
      const EventFunction& f = table->events[e];
      if (f.action != static_cast<int32_t>(EventAction::stop)) continue;
      const detail::EventOnState<S, N> g = function<N>(f);
      for_each_crossing(
          g, u, static_cast<EventDirection>(f.direction), start_value(g, u, e), f.subdivisions,
          [&](S theta, S, bool) {
            if (theta < stop_theta) {
              stop_theta = theta;
              stop_event = e;
            }
            return false;  // its first crossing only
          },
          &g_end[e * count + i]);
    }
    // the stop's time and state on the method's solution (written into
    // y_stop last: it may be the step's own start, which u reads)
    Vec<S, N> ys;
    S ts_ = S(0);
    if (stop_event >= 0) {
      const EventFunction& f = table->events[stop_event];
      const detail::EventOnState<S, N> g = function<N>(f);
      ts_ = detail::refine_crossing(g, u, exact, stop_theta, ys);
      record(f, stop_event, ts_, &ys);
    }
    for (int e = 0; e < ne; ++e) {
      const EventFunction& f = table->events[e];
      if (f.action == static_cast<int32_t>(EventAction::stop)) continue;
      const detail::EventOnState<S, N> g = function<N>(f);
      for_each_crossing(
          g, u, static_cast<EventDirection>(f.direction), start_value(g, u, e), f.subdivisions,
          [&](S theta, S, bool) {
            if (theta > stop_theta) return false;
            if (counts[e * count + i] < f.max_records) {  // stored: refined
              Vec<S, N> y;
              const S t = detail::refine_crossing(g, u, exact, theta, y);
              record(f, e, t, &y);
            } else {
              record(f, e, S(0), static_cast<const Vec<S, N>*>(nullptr));
            }
            return true;
          },
          &g_end[e * count + i]);
    }
    if (stop_event < 0) return false;
    t_stop = ts_;
    y_stop = ys;
    return true;
  }

 private:
  // event function f of this trajectory
  template <int N>
  NHOLO_HDI detail::EventOnState<S, N> function(const EventFunction& f) const {
    return {&f, n, varied ? varied + i : nullptr, count};
  }

  // g at the step's start: the last step's end value (the sign the step
  // starts from is the one the last step ended with, whatever the drift
  // projection did in between), or from the state when there is none
  template <class G, class U>
  NHOLO_HDI S start_value(const G& g, const U& u, int e) const {
    const double v = g_end[e * count + i];
    return v == v ? S(v) : g(u.t0, u.start());
  }

  // one more crossing of event e; stored at time t with state y (q then qd)
  // while the trajectory has fewer than max_records (y null: not stored)
  template <int N>
  NHOLO_HDI void record(const EventFunction& f, int e, S t, const Vec<S, N>* y) const {
    int64_t& c = counts[e * count + i];
    if (y && c < f.max_records) {
      const int len = 1 + 2 * n;
      double* r = records + ((f.record_offset * count + i * f.max_records) + c) * len;
      r[0] = static_cast<double>(t);
      for (int j = 0; j < 2 * n; ++j) r[1 + j] = static_cast<double>((*y)[j]);
    }
    ++c;
  }
};

}  // namespace nholo
