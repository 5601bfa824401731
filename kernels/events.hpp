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
// part. A crossing is a change of sign of g: rising from < 0 to > 0,
// falling from > 0 to < 0. Zeros do not decide it: g that reaches zero at
// samples (exactly: a step landing on the zero of t - 0.5, or the bottom of
// a tangency) crosses there when the sign after the zeros differs from the
// sign before them, at the first of them; g that touches zero and returns to
// its sign (a tangency, such as (t - 0.5)^2) does not cross. The sign before
// a zero is carried across the steps in the zero's own sign bit (g_start of
// a step that starts on a zero: +0 came from above, -0 from below; NaN, no
// sign known: a trajectory that starts on g = 0), so that the rule does not
// depend on where the steps end. Each bracket
// is narrowed by the Illinois variant of regula falsi (a bisection where the
// secant would leave the bracket) until its width is at most 4 ulp of t (or
// 80 evaluations): the time returned is the bracket's end where g has the
// sign after the crossing.
#pragma once

#include <type_traits>

#include "linalg.hpp"
#include "scalar_math.hpp"

namespace nholo {

enum class EventDirection : int { up = 0, down = 1, both = 2 };

// The cubic Hermite polynomial through (y0, f0) at theta = 0 and (y1, f1)
// at theta = 1, f scaled by the step h.
template <class S>
NHOLO_HDI S hermite(S y0, S f0, S y1, S f1, S h, S theta) {
  const S one_minus = S(1) - theta;
  const S h00 = (S(1) + S(2) * theta) * one_minus * one_minus;
  const S h10 = theta * one_minus * one_minus;
  const S h01 = theta * theta * (S(3) - S(2) * theta);
  const S h11 = theta * theta * (theta - S(1));
  return h00 * y0 + h * (h10 * f0 + h11 * f1) + h01 * y1;
}

// A point where an event function is read, as plain numbers (so that its
// evaluation is compiled once per scalar type, not once per system): the
// state y0 itself (f0 null), or the point theta of the cubic Hermite
// interpolant from (y0, f0) to (y1, f1) over a step h; n coordinates, then
// n rates.
template <class S>
struct EventPoint {
  S t;
  const S* y0;
  const S* f0;
  const S* y1;
  const S* f1;
  S h, theta;
  int n;
  NHOLO_HDI S component(int c) const {
    return f0 ? hermite(y0[c], f0[c], y1[c], f1[c], h, theta) : y0[c];
  }
  NHOLO_HDI S coord(int i) const { return component(i); }
  NHOLO_HDI S rate(int i) const { return component(n + i); }
};

// A step's interpolant holding the step's ends.
template <class S, int N>
struct StepInterpolant {
  using scalar = S;
  static constexpr int dim = N;
  S t0, h;
  Vec<S, N> y0, f0, y1, f1;

  // component c at t0 + theta h, theta in [0, 1]
  NHOLO_HDI S at(int c, S theta) const { return hermite(y0[c], f0[c], y1[c], f1[c], h, theta); }
  NHOLO_HDI const Vec<S, N>& start() const { return y0; }
  NHOLO_HDI void state(S theta, Vec<S, N>& y) const {
    for (int c = 0; c < N; ++c) y[c] = at(c, theta);
  }
  NHOLO_HDI S time(S theta) const { return t0 + theta * h; }
  NHOLO_HDI EventPoint<S> point(S theta, int n) const {
    return {time(theta), &y0[0], &f0[0], &y1[0], &f1[0], h, theta, n};
  }
};

// The same over the step's arrays where the integrator keeps them (nothing
// copied: on a GPU every copy would be more stack per thread).
template <class S, int N>
struct StepInterpolantView {
  using scalar = S;
  static constexpr int dim = N;
  S t0, h;
  const Vec<S, N>* y0;
  const Vec<S, N>* f0;
  const Vec<S, N>* y1;
  const Vec<S, N>* f1;

  NHOLO_HDI S at(int c, S theta) const {
    return hermite((*y0)[c], (*f0)[c], (*y1)[c], (*f1)[c], h, theta);
  }
  NHOLO_HDI const Vec<S, N>& start() const { return *y0; }
  NHOLO_HDI void state(S theta, Vec<S, N>& y) const {
    for (int c = 0; c < N; ++c) y[c] = at(c, theta);
  }
  NHOLO_HDI S time(S theta) const { return t0 + theta * h; }
  NHOLO_HDI EventPoint<S> point(S theta, int n) const {
    return {time(theta), &(*y0)[0], &(*f0)[0], &(*y1)[0], &(*f1)[0], h, theta, n};
  }
};

// No events: what the integrator is given when none are declared.
struct NoEvents {
  NHOLO_HD static constexpr bool active() { return false; }
  template <class U, class X, class S, int N>
  NHOLO_HDI bool step(const U&, const X&, S&, Vec<S, N>&) const {
    return false;
  }
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

// Whether g reads the interpolant itself, g.on(u, theta) (only the
// components it needs: kernels/trajectory_events.hpp), rather than a whole
// state g(t, y).
template <class G, class = void>
struct reads_interpolant : std::false_type {};
template <class G>
struct reads_interpolant<G, std::void_t<decltype(G::reads_interpolant)>> : std::true_type {};

// g on the interpolant at theta
template <class G, class U, class S = typename U::scalar>
NHOLO_HDI S event_value(const G& g, const U& u, S theta) {
  if constexpr (reads_interpolant<G>::value) {
    return g.on(u, theta);
  } else {
    Vec<S, U::dim> y;
    u.state(theta, y);
    return g(u.time(theta), y);
  }
}

// The crossing inside [a, b] (theta), g(a) of sign before (!= 0) and g(b)
// of the other sign or 0: regula falsi, Illinois variant (a side kept twice
// in a row has its value halved), a bisection where the secant leaves the
// bracket; the theta of the bracket's end on the after side.
template <class G, class U, class S = typename U::scalar>
NHOLO_HDI S locate_crossing(const G& g, const U& u, S a, S ga, S b, S gb, int before) {
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

// Where g is sampled in a step (theta in (0, 1], increasing, 1 last): the
// `parts` equal parts' ends j / parts, and up to two more points inside
// (kernels/trajectory_events.hpp: where the cubic through g's values and
// rates at the step's ends is stationary, so that a dip of g between two
// samples, a tangency pair, is sampled at its bottom).
template <class S>
struct StepSamples {
  int parts;       // >= 1
  int n_extra;     // 0..2
  S extra[2];      // in (0, 1), increasing
};

// The sign g had before a step that starts at g_start (header): its sign;
// for a zero, the sign bit's (+0: g came from above, -0: from below); 0 for
// NaN (none known).
template <class S>
NHOLO_HDI int sign_before(S g_start) {
  if (g_start == S(0)) return copysign(S(1), g_start) > S(0) ? 1 : -1;
  return detail::sign_of(g_start);
}

// g_start for the step after one that ended on g_end with `sign` carried
// (scan_crossings' end_sign): g_end, or a zero that keeps the sign before it
// in its sign bit (NaN: none known).
template <class S>
NHOLO_HDI S carried_start(S g_end, int sign) {
  if (!(g_end == S(0))) return g_end;
  return sign > 0 ? S(0) : sign < 0 ? S(-0.0) : S(NAN);
}

// The crossings of g in (t0, t0 + h] along u at the samples s, g_start =
// g(t0) (with the sign before it, sign_before) and g_end = g(t0 + h) given
// (the caller's; the last sample is not evaluated again), in time order;
// visit as for_each_crossing below. end_sign (when given) receives the sign
// g has at the step's end, or had before the zeros it ends on (0: unknown).
template <class G, class U, class Visit, class S = typename U::scalar>
NHOLO_HDI int scan_crossings(const G& g, const U& u, EventDirection dir, S g_start,
                             const StepSamples<S>& s, S g_end, Visit&& visit,
                             int* end_sign = nullptr) {
  int found = 0;
  S a = S(0), ga = g_start;
  // the last nonzero sign of g (0: none known), and where the zeros since
  // it began (theta; -1: g is not at zero)
  int before = sign_before(g_start);
  S zeros_from = g_start == S(0) ? S(0) : S(-1);
  int j = 1, x = 0;
  while (j <= s.parts) {
    // 1 exactly at the last part's end (no division for the default one part)
    const S uniform = j == s.parts ? S(1) : S(j) / S(s.parts);
    S b;
    if (x < s.n_extra && s.extra[x] < uniform) {
      b = s.extra[x++];
      if (!(b > a)) continue;
    } else {
      b = uniform;
      ++j;
      if (x < s.n_extra && s.extra[x] == b) ++x;
    }
    const S gb = b == S(1) ? g_end : detail::event_value(g, u, b);
    if (!(gb == gb)) {
      // g undefined here (NaN: the root or logarithm of a negative number):
      // no crossing; the sign starts again where g is defined
      before = 0;
      zeros_from = S(-1);
      a = b;
      ga = gb;
      continue;
    }
    if (gb == S(0)) {
      // the sign after the zeros decides
      if (zeros_from < S(0)) zeros_from = b;
      a = b;
      ga = gb;
      continue;
    }
    const int after = detail::sign_of(gb);
    if (before != 0 && after != before) {
      const bool up = before < 0;
      if (dir == EventDirection::both || (dir == EventDirection::up) == up) {
        const S theta = zeros_from >= S(0) ? zeros_from
                                           : detail::locate_crossing(g, u, a, ga, b, gb, before);
        ++found;
        if (!visit(theta, u.time(theta), up)) {
          if (end_sign) *end_sign = 0;  // the scan ended early: not used
          return found;
        }
      }
    }
    before = after;
    zeros_from = S(-1);
    a = b;
    ga = gb;
  }
  if (end_sign) *end_sign = before;
  return found;
}

// The crossings of g in (t0, t0 + h] along u, in time order, as the header
// says: g_start = g(t0, y0) (the previous step's g_end), samples >= 1 parts.
// visit(theta, t, up) is called for each; it returns false to end the scan.
// Returns how many were visited; g_end (when given) receives g at the step's
// end as the next step's g_start (carried_start: a zero with its sign).
template <class G, class U, class Visit, class S = typename U::scalar>
NHOLO_HDI int for_each_crossing(const G& g, const U& u, EventDirection dir, S g_start,
                                int samples, Visit&& visit, S* g_end = nullptr) {
  const S g1 = detail::event_value(g, u, S(1));
  const StepSamples<S> s{samples, 0, {S(0), S(0)}};
  int sign = 0;
  const int found = scan_crossings(g, u, dir, g_start, s, g1, static_cast<Visit&&>(visit), &sign);
  if (g_end) *g_end = carried_start(g1, sign);
  return found;
}

// The same into an array: at most cap written to x; returns how many there
// are (all of them).
template <class G, class S, int N>
NHOLO_HDI int step_crossings(const G& g, const StepInterpolant<S, N>& u, EventDirection dir,
                             S g_start, int samples, EventCrossing* x, int cap) {
  int stored = 0;
  return for_each_crossing(g, u, dir, g_start, samples, [&](S theta, S t, bool up) {
    if (stored < cap) {
      x[stored].theta = static_cast<double>(theta);
      x[stored].t = static_cast<double>(t);
      x[stored].up = up;
      ++stored;
    }
    return true;
  });
}

}  // namespace nholo
