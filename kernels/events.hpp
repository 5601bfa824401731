// nholo/kernels/events.hpp — where an event function changes sign inside one
// accepted step: the step's continuous extension, the crossings found on it
// in time order, each located by a bracketing root finder to near machine
// precision of t. The phase-space tools (Poincaré sections, first passage)
// are built on it; nothing here knows about files, threads or devices.
//
//   StepInterpolant<S,N> u{t0, h, y0, f0, y1, f1};   // cubic Hermite
//   u.state(theta, y);                               // y(t0 + theta h)
//   EventCrossing x[kMax];
//   const int n = step_crossings(g, u, EventDirection::both, samples, x, kMax);
//     g(t, y) -> S    the event function (a model-file expression, compiled)
//     x[k].t          crossing time, x[k].up: g rose through zero
//     n               crossings in (t0, t0 + h], in time order (at most kMax
//                     stored; n counts all of them)
//
// The interpolant. The cubic Hermite polynomial through (t0, y0, f0) and
// (t0 + h, y1, f1), f the right-hand side, is exact for cubics and its error
// is O(h^4) for any method (rk4 included), with nothing stored beyond what an
// FSAL step already has: y0, y1 and the derivatives at both ends.
//
// Crossings. g is sampled on the interpolant at `samples` equal parts of the
// step (both ends included; the start's value is the end of the previous
// step), so that two crossings inside one step, e.g. g dipping below zero
// and back (a near tangency), are both found when the dip is wider than a
// part. A crossing is a change of sign between two samples: rising when g
// goes from < 0 to >= 0, falling from > 0 to <= 0. A zero at a sample is
// the crossing's end, so a crossing that lands exactly at a step end is
// reported once, by the step it ends; g starting a step at zero is the
// previous step's (the sign before it is the one that counts). Each bracket
// is narrowed by the Illinois variant of regula falsi (a bisection where the
// secant would leave the bracket) until its width is at most 4 ulp of t (or
// 80 evaluations): the time returned is the bracket's end where g has the
// sign after the crossing.
#pragma once

#include "linalg.hpp"
#include "scalar_math.hpp"

namespace nholo {

enum class EventDirection : int { up = 0, down = 1, both = 2 };

template <class S, int N>
struct StepInterpolant {
  S t0, h;
  Vec<S, N> y0, f0, y1, f1;

  // component c at t0 + theta h, theta in [0, 1]
  NHOLO_HDI S at(int c, S theta) const {
    const S one_minus = S(1) - theta;
    const S h00 = (S(1) + S(2) * theta) * one_minus * one_minus;
    const S h10 = theta * one_minus * one_minus;
    const S h01 = theta * theta * (S(3) - S(2) * theta);
    const S h11 = theta * theta * (theta - S(1));
    return h00 * y0[c] + h * (h10 * f0[c] + h11 * f1[c]) + h01 * y1[c];
  }
  NHOLO_HDI void state(S theta, Vec<S, N>& y) const {
    for (int c = 0; c < N; ++c) y[c] = at(c, theta);
  }
  NHOLO_HDI S time(S theta) const { return t0 + theta * h; }
};

struct EventCrossing {
  double t;
  double theta;  // t = t0 + theta h
  bool up;       // g rose through zero
};

namespace detail {

// -1, 0, +1
template <class S>
NHOLO_HDI int sign_of(S v) {
  return v > S(0) ? 1 : v < S(0) ? -1 : 0;
}

// g on the interpolant at theta
template <class G, class S, int N>
NHOLO_HDI S event_value(const G& g, const StepInterpolant<S, N>& u, S theta) {
  Vec<S, N> y;
  u.state(theta, y);
  return g(u.time(theta), y);
}

// The crossing inside [a, b] (theta), g(a) of sign before (!= 0) and g(b)
// of the other sign or 0: regula falsi, Illinois variant (a side kept twice
// in a row has its value halved), a bisection where the secant leaves the
// bracket; the theta of the bracket's end on the after side.
template <class G, class S, int N>
NHOLO_HDI S locate_crossing(const G& g, const StepInterpolant<S, N>& u, S a, S ga, S b, S gb,
                            int before) {
  if (gb == S(0)) return b;
  const S t_scale = max_of(max_of(S(fabs(u.t0)), S(fabs(u.t0 + u.h))), S(1e-300));
  const S width = S(4) * S(2.220446049250313e-16) * t_scale;  // 4 ulp of t, in time
  int kept = 0;  // +1: a was kept by the last iteration, -1: b was
  for (int it = 0; it < 80 && (b - a) * S(fabs(u.h)) > width; ++it) {
    S m = (a * gb - b * ga) / (gb - ga);
    if (!(m > a && m < b)) m = S(0.5) * (a + b);
    const S gm = event_value(g, u, m);
    if (gm == S(0) || sign_of(gm) != before) {  // m is after the crossing
      b = m;
      gb = gm;
      if (gm == S(0)) break;
      if (kept > 0) ga = ga * S(0.5);
      kept = 1;
    } else {
      a = m;
      ga = gm;
      if (kept < 0) gb = gb * S(0.5);
      kept = -1;
    }
  }
  return b;
}

}  // namespace detail

// The crossings of g in (t0, t0 + h] along u, in time order, as the header
// says: g_start = g(t0, y0) (the previous step's g_end), samples >= 1 parts.
// At most cap written to x; returns how many there are (all of them).
template <class G, class S, int N>
NHOLO_HDI int step_crossings(const G& g, const StepInterpolant<S, N>& u, EventDirection dir,
                             S g_start, int samples, EventCrossing* x, int cap) {
  int found = 0;
  S a = S(0), ga = g_start;
  // the sign before the part (a zero carries the sign it came from)
  int before = detail::sign_of(g_start);
  for (int j = 1; j <= samples; ++j) {
    const S b = S(j) / S(samples);  // 1 exactly at the last sample
    const S gb = detail::event_value(g, u, b);
    const int after = detail::sign_of(gb);
    if (before != 0 && after != before) {
      const bool up = before < 0;
      if (dir == EventDirection::both || (dir == EventDirection::up) == up) {
        const S theta = ga == S(0) ? a : detail::locate_crossing(g, u, a, ga, b, gb, before);
        if (found < cap) {
          x[found].theta = static_cast<double>(theta);
          x[found].t = static_cast<double>(u.time(theta));
          x[found].up = up;
        }
        ++found;
      }
    }
    if (after != 0) before = after;
    a = b;
    ga = gb;
  }
  return found;
}

}  // namespace nholo
