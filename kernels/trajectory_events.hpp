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
// count goes on past max_records. g and its rate dg/dt are evaluated at
// each step's end in one run of the program on dual numbers (the state
// moving with f there) and kept per trajectory for the next step's start
// (g_end, for the slice: the same however the window is cut into launches),
// so that the signs along the trajectory's interpolants are continuous
// across steps even where the drift projection moves the state between them
// (no crossing at a step boundary reported twice or lost). Besides the ends
// of the event's equal parts of the step, g is sampled where the cubic
// through those values and rates is stationary (event_samples): a dip of g
// between two samples of one sign (a tangency pair) is sampled at its
// bottom.
#pragma once

#include <stdint.h>

#include "dual.hpp"
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

// a state y moving with rate dy = f(t, y), component by component as dual
// numbers (value, d/dt)
template <class S>
struct EventRatePoint {
  const S* y;
  const S* dy;
  int n;
  NHOLO_HDI Dual<S, 1> component(int c) const {
    Dual<S, 1> r;
    r.v = y[c];
    r.d[0] = dy[c];
    return r;
  }
  NHOLO_HDI Dual<S, 1> coord(int i) const { return component(i); }
  NHOLO_HDI Dual<S, 1> rate(int i) const { return component(n + i); }
};

// g and dg/dt at (t, y) moving with rate dy: one evaluation of the program
// on dual numbers, out of line as event_at
template <class S>
NHOLO_NOINLINE NHOLO_HD Dual<S, 1> event_and_rate_at(const EventFunction& f, S t, const S* y,
                                                     const S* dy, int n, const double* varied,
                                                     int64_t stride) {
  Dual<S, 1> td;
  td.v = t;
  td.d[0] = S(1);
  return event_value_of(f, td, EventRatePoint<S>{y, dy, n}, varied, stride);
}

// Where the cubic through g's values g0, g1 and its rates d0, d1 (per unit
// theta: dg/dt h) at a step's two ends is stationary inside the step: a dip
// or a bump of g between the ends, sampled there besides the equal parts.
template <class S>
NHOLO_HDI StepSamples<S> event_samples(int parts, S g0, S d0, S g1, S d1) {
  StepSamples<S> s{parts, 0, {S(0), S(0)}};
  // p'(theta) = a theta^2 + b theta + c for the cubic Hermite polynomial p
  const S a = S(6) * (g0 - g1) + S(3) * (d0 + d1);
  const S b = S(-6) * (g0 - g1) - S(4) * d0 - S(2) * d1;
  const S c = d0;
  if (!(is_finite(a) && is_finite(b) && is_finite(c))) return s;
  // p'(0) = d0 and p'(1) = d1 of one sign: a root inside needs two, around
  // p's vertex -b / (2 a) inside the step, with p' of the other sign there
  // (disc > 0); else none, and no root is computed (the usual step: g
  // monotone across it)
  if (d0 * d1 > S(0)) {
    const S twice_a = S(2) * a;
    const bool vertex_inside =
        twice_a > S(0) ? (-b > S(0) && -b < twice_a) : (-b < S(0) && -b > twice_a);
    if (!vertex_inside || !(b * b - S(4) * a * c > S(0))) return s;
  }
  S r[2];
  int nr = 0;
  const S scale = fabs(a) + fabs(b) + fabs(c);
  if (!(scale > S(0))) return s;
  if (fabs(a) <= S(1e-12) * scale) {
    if (b != S(0)) r[nr++] = -c / b;
  } else {
    const S disc = b * b - S(4) * a * c;
    if (disc < S(0)) return s;
    // the root of larger magnitude first, the other from the product c / a
    const S q = S(-0.5) * (b + (b < S(0) ? -sqrt(disc) : sqrt(disc)));
    if (q != S(0)) {
      r[nr++] = q / a;
      r[nr++] = c / q;
    } else {
      r[nr++] = S(0);
    }
  }
  for (int k = 0; k < nr; ++k)
    if (r[k] > S(0) && r[k] < S(1)) s.extra[s.n_extra++] = r[k];
  if (s.n_extra == 2 && s.extra[1] < s.extra[0]) {
    const S tmp = s.extra[0];
    s.extra[0] = s.extra[1];
    s.extra[1] = tmp;
  }
  return s;
}

// Whether g changes faster than a step's samples can follow, so that some
// of its crossings are likely missed (counted per trajectory: the file's
// events/<name>/undersampled_steps, and a warning in the run's log). Two
// signs together: the rates at the step's ends (d0, d1: per unit theta)
// change g over one part by more than 4 times the largest |g| seen in the
// step, and the cubic through the ends' values and rates does not describe
// g where it is stationary (off by more than a quarter of the larger value
// there). A steep crossing has the first (a rate of the order of the jump
// over a small |g|) but its cubic holds; a tangency pair has a cubic that
// holds at its dip; g = sin(1000 t) across a step of 0.04 has neither. g is
// evaluated again at the cubic's stationary points only when the rates say
// so (a step that passes the first test).
template <class G, class U, class S>
NHOLO_HDI bool undersampled(const G& g, const U& u, const StepSamples<S>& s, S g0, S d0, S g1,
                            S d1) {
  const S change = max_of(S(fabs(d0)), S(fabs(d1))) / S(s.parts);
  S seen = max_of(S(fabs(g0)), S(fabs(g1)));
  if (!(change > S(4) * seen)) return false;
  bool off = false;
  for (int x = 0; x < s.n_extra; ++x) {
    const S th = s.extra[x], w = S(1) - th;
    // the cubic Hermite polynomial through (g0, d0) at 0 and (g1, d1) at 1
    const S p = (S(1) + S(2) * th) * w * w * g0 + th * w * w * d0 + th * th * (S(3) - S(2) * th) * g1 -
                th * th * w * d1;
    const S gx = event_value(g, u, th);
    if (!(gx == gx)) continue;
    seen = max_of(seen, S(fabs(gx)));
    off = off || S(fabs(gx - p)) > S(0.25) * max_of(S(fabs(gx)), S(fabs(p)));
  }
  return off && change > S(4) * seen;
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
  int64_t* counts;          // [e * count + i] crossings, [(n_events + e) * count + i]
                            // undersampled steps (detail::undersampled)
  double* records;          // see the header
  double* g_end;            // [e * count + i]: g at the last step's end, and
                            // [(n_events + e) * count + i] dg/dt there (NaN: not yet)
  const double* varied;     // params[j * count + i] (null: none vary)

  NHOLO_HDI bool active() const { return table != nullptr && table->n_events > 0; }

  // The crossings of accepted step u (header), each refined on the method's
  // solution exact (detail::refine_crossing). True when a stop event ends
  // the trajectory in it: t_stop, y_stop the time and the state there.
  // given (none, or one): g and dg/dt of every event at the step's end,
  // given.at_end(e) -> Dual<S, 1>, evaluated by the caller (the CPU's lanes,
  // for W trajectories at once: kernels/lane_events.hpp) instead of here.
  template <class U, class X, int N, class... Given>
  NHOLO_RHS_NOINLINE NHOLO_HD bool step(const U& u, const X& exact, S& t_stop, Vec<S, N>& y_stop,
                                        const Given&... given) const {
    const int ne = table->n_events;
    // the earliest first crossing of a stop event
    S stop_theta = S(2);
    int stop_event = -1;
    for (int e = 0; e < ne; ++e) {
      const EventFunction& f = table->events[e];
      if (f.action != static_cast<int32_t>(EventAction::stop)) continue;
      scan<N>(
          u, e,
          [&](S theta, S, bool) {
            if (theta < stop_theta) {
              stop_theta = theta;
              stop_event = e;
            }
            return false;  // its first crossing only
          },
          given...);
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
      scan<N>(
          u, e,
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
          given...);
    }
    if (stop_event < 0) return false;
    t_stop = ts_;
    y_stop = ys;
    return true;
  }

  // A step of length h whose events' end values are given (given.at_end(e),
  // as step's) and in which, by those values alone, no event has anything
  // to do: for every event g and its rate at the step's start are known, g
  // is sampled at the step's end only (one part, and the cubic through the
  // ends' values and rates has no stationary point inside:
  // detail::event_samples) and keeps its nonzero sign there. Then the step
  // is taken as step would take it (no crossing; the step's end values kept
  // for the next one, no undersampling counted: it needs a sample inside)
  // and true is returned, without the step's state; false where step must
  // run (nothing changed). The CPU's lanes ask this first
  // (kernels/integrate_lanes.hpp), so that most of their steps skip step.
  template <class Given>
  NHOLO_HDI bool quiet_step(S h, const Given& given) const {
    const int ne = table->n_events;
    for (int e = 0; e < ne; ++e) {
      if (table->events[e].subdivisions != 1) return false;
      const S g0 = S(g_end[e * count + i]), r0 = S(g_end[(ne + e) * count + i]);
      if (!(g0 == g0 && r0 == r0)) return false;
      const Dual<S, 1> at1 = given.at_end(e);
      // a zero or NaN at the end: step's sign bookkeeping
      if (at1.v == S(0) || !(at1.v == at1.v)) return false;
      if (sign_before(g0) != detail::sign_of(at1.v)) return false;
      if (detail::event_samples(1, g0, r0 * h, at1.v, at1.d[0] * h).n_extra != 0) return false;
    }
    for (int e = 0; e < ne; ++e) {
      const Dual<S, 1> at1 = given.at_end(e);
      g_end[e * count + i] = static_cast<double>(at1.v);  // (nonzero: carried_start's value)
      g_end[(ne + e) * count + i] = static_cast<double>(at1.d[0]);
    }
    return true;
  }

 private:
  // event function f of this trajectory
  template <int N>
  NHOLO_HDI detail::EventOnState<S, N> function(const EventFunction& f) const {
    return {&f, n, varied ? varied + i : nullptr, count};
  }

  // The crossings of event e in step u, visited in time order (scan_crossings,
  // events.hpp). g and dg/dt at the step's end are evaluated once (dual
  // numbers: the state y1 moving with f1) and kept for the next step; at its
  // start they are the last step's end values (the sign the step starts
  // from is the one the last step ended with, whatever the drift projection
  // did in between), or evaluated at (y0, f0) when there are none. g is
  // sampled at the event's equal parts of the step and where the cubic
  // through those values and rates is stationary (detail::event_samples).
  // (given: the end values, as step's)
  template <int N, class U, class Visit, class... Given>
  NHOLO_HDI void scan(const U& u, int e, Visit&& visit, const Given&... given) const {
    const EventFunction& f = table->events[e];
    const detail::EventOnState<S, N> g = function<N>(f);
    const EventPoint<S> p = u.point(S(0), n);
    const double* vp = varied ? varied + i : nullptr;
    double& g_last = g_end[e * count + i];
    double& rate_last = g_end[(table->n_events + e) * count + i];
    S g0 = S(g_last), r0 = S(rate_last), g_start = g0;
    if (!(g_last == g_last && rate_last == rate_last)) {
      const Dual<S, 1> at0 = detail::event_and_rate_at(f, u.t0, p.y0, p.f0, n, vp, count);
      g0 = at0.v;
      r0 = at0.d[0];
      // starting on g = 0: no sign before it (no crossing until g has one)
      g_start = g0 == S(0) ? S(NAN) : g0;
    }
    const Dual<S, 1> at1 = end_value(f, e, u.t0 + u.h, p.y1, p.f1, vp, given...);
    const StepSamples<S> samples =
        detail::event_samples(f.subdivisions, g0, r0 * u.h, at1.v, at1.d[0] * u.h);
    if (detail::undersampled(g, u, samples, g0, r0 * u.h, at1.v, at1.d[0] * u.h))
      ++counts[(table->n_events + e) * count + i];
    int sign = 0;
    scan_crossings(g, u, static_cast<EventDirection>(f.direction), g_start, samples, at1.v,
                   static_cast<Visit&&>(visit), &sign);
    // the next step starts from g here, a zero with the sign before it
    // (NaN where none is known: then g and its rate are evaluated again there)
    g_last = static_cast<double>(carried_start(at1.v, sign));
    rate_last = static_cast<double>(at1.d[0]);
  }

  // g and dg/dt of event e at the step's end (t, y moving with dy):
  // evaluated, or given by the caller
  NHOLO_HDI Dual<S, 1> end_value(const EventFunction& f, int, S t, const S* y, const S* dy,
                                 const double* vp) const {
    return detail::event_and_rate_at(f, t, y, dy, n, vp, count);
  }
  template <class Given>
  NHOLO_HDI Dual<S, 1> end_value(const EventFunction&, int e, S, const S*, const S*, const double*,
                                 const Given& given) const {
    return given.at_end(e);
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
