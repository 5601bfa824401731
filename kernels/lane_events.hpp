// nholo/kernels/lane_events.hpp — the values of a run's event functions at
// the end of W trajectories' steps, evaluated once for the W lanes of one
// core (kernels/integrate_lanes.hpp's events). CPU only.
//
// After each accepted step a trajectory's events need g and dg/dt at the
// step's end (kernels/trajectory_events.hpp, TrajectoryEvents::scan): one
// run of the event's program on dual numbers, per event and step, by far the
// most frequent evaluation of an event function (crossings are rare). With
// lanes, the programs run once on dual numbers of lanes, Dual<Lanes<W>, 1>,
// for all W lanes' step ends (LaneEventEnds), and each lane's events take
// their values from there (EventEndsOfLane: TrajectoryEvents::step's
// `given`). Everything else of a step's events (the signs, the samples
// inside the step, a crossing's refinement on the method's solution) runs
// lane by lane in the scalar code.
//
//   LaneEventEnds<W> ends;   (ends.n_events < 0: not yet evaluated)
//   evaluate_event_ends(table, n, t1, y1, f1, varied, stride, ends);
//   ev.step(u, exact, t_stop, y_stop, EventEndsOfLane<W>{&ends, i});
//
// The interpreter is event_program.hpp's: arithmetic gives the scalar
// interpreter's bits in every lane; sin, cos, exp, pow, ... are the lanes'
// (SLEEF's, kernels/lanes.hpp): the same bits at every width, within an ulp
// of glibc's, which `simd = "off"` calls (docs/usage.md, determinism).
#pragma once

#include <stdint.h>

#include "dual.hpp"
#include "event_program.hpp"
#include "lanes.hpp"
#include "linalg.hpp"

namespace nholo {

// x^y in an event function on dual numbers of lanes: event_program.hpp's
// rule, its choice of terms made per lane
template <int W, int K>
inline Dual<Lanes<W>, K> event_pow(const Dual<Lanes<W>, K>& x, const Dual<Lanes<W>, K>& y) {
  using L = Lanes<W>;
  Dual<L, K> r;
  r.v = pow(x.v, y.v);
  const L dx = y.v * pow(x.v, y.v - L(1.0));
  for (int k = 0; k < K; ++k)
    r.d[k] = select(x.d[k] == L(0.0), L(0.0), dx * x.d[k]) +
             select(y.d[k] == L(0.0), L(0.0), r.v * log(x.v) * y.d[k]);
  return r;
}

// sign(x) in an event function on dual numbers of lanes: 1, 0 or -1 per
// lane (0 for NaN), no derivative
template <int W, int K>
inline Dual<Lanes<W>, K> event_sign(const Dual<Lanes<W>, K>& x) {
  return Dual<Lanes<W>, K>(sign_of_value(x.v));
}

namespace lane_events_detail {

// the lanes' states y moving with rates dy, component by component as dual
// numbers (value, d/dt): trajectory_events.hpp's EventRatePoint on lanes
template <int W, int N>
struct LaneRatePoint {
  const Vec<Lanes<W>, N>* y;
  const Vec<Lanes<W>, N>* dy;
  int n;
  Dual<Lanes<W>, 1> component(int c) const {
    Dual<Lanes<W>, 1> r;
    r.v = (*y)[c];
    r.d[0] = (*dy)[c];
    return r;
  }
  Dual<Lanes<W>, 1> coord(int i) const { return component(i); }
  Dual<Lanes<W>, 1> rate(int i) const { return component(n + i); }
};

}  // namespace lane_events_detail

// g and dg/dt of every event of a table at one step's end in W lanes
template <int W>
struct LaneEventEnds {
  int n_events = -1;  // < 0: not evaluated (for this step)
  Dual<Lanes<W>, 1> at[kMaxEvents];
};

// The table's events at time t of the lanes' states y (q then qd, n
// coordinates) moving with dy = f(t, y); varied[j * stride]: the varied
// parameters the programs read, the same for every lane (null: none vary).
template <int W, int N>
inline void evaluate_event_ends(const EventTable& table, int n, const Lanes<W>& t,
                                const Vec<Lanes<W>, N>& y, const Vec<Lanes<W>, N>& dy,
                                const double* varied, int64_t stride, LaneEventEnds<W>& out) {
  Dual<Lanes<W>, 1> td;
  td.v = t;
  td.d[0] = Lanes<W>(1.0);
  const lane_events_detail::LaneRatePoint<W, N> point{&y, &dy, n};
  for (int e = 0; e < table.n_events; ++e)
    out.at[e] = event_value_of(table.events[e], td, point, varied, stride);
  out.n_events = table.n_events;
}

// Lane `lane`'s values of ends, as TrajectoryEvents::step's `given`
template <int W>
struct EventEndsOfLane {
  const LaneEventEnds<W>* ends;
  int lane;
  Dual<double, 1> at_end(int e) const {
    Dual<double, 1> r;
    r.v = ends->at[e].v[lane];
    r.d[0] = ends->at[e].d[0][lane];
    return r;
  }
};

}  // namespace nholo
