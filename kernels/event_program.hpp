// nholo/kernels/event_program.hpp — event functions g(t, q, qd) as the
// kernels evaluate them, and the table of a run's events.
//
// An event's expression (the model-file expression language: coordinates,
// rates, t, parameters) is compiled on the host (host/model_language/
// event_compile.cpp) into a postfix program of at most kMaxEventInstrs
// instructions over a stack of at most kMaxEventStack values, evaluated here
// by a small interpreter: the same code for built-in models and model files,
// on every backend, with nothing generated per event. A model's parameter is
// a constant of the program unless it varies per trajectory
// ([ensemble.params]): then the program reads the trajectory's value.
//
//   EventTable (plain numbers, copied to the device once per run)
//     n_events, events[e]: program, direction, action, max_records,
//     subdivisions (parts of a step the function is sampled at), and
//     record_offset (the records of the events before e, per trajectory)
//   EventArgs: what one evaluation reads (t, the state, the trajectory's
//     varied parameters with their stride)
#pragma once

#include <stdint.h>

#include "dual.hpp"
#include "execution_space.hpp"
#include "scalar_math.hpp"

namespace nholo {

constexpr int kMaxEvents = 8;
constexpr int kMaxEventInstrs = 96;
constexpr int kMaxEventStack = 24;
constexpr int kMaxEventSubdivisions = 64;
constexpr int kMaxObservables = 8;

enum class EventOp : int32_t {
  constant = 0,  // push value
  time,          // push t
  coord,         // push q[index]
  rate,          // push qd[index]
  varied_param,  // push the trajectory's varied parameter index
  neg,
  add,
  sub,
  mul,
  div,
  pow,
  sin,
  cos,
  tan,
  exp,
  log,
  sqrt,
  sinh,
  cosh,
  tanh,
  abs,
  sign,
  atan2,
};

struct EventInstr {
  EventOp op;
  int32_t index;
  double value;
};

enum class EventAction : int32_t { record = 0, stop = 1 };

struct EventFunction {
  int32_t n_instr;
  int32_t direction;      // EventDirection (events.hpp): up, down, both
  int32_t action;         // EventAction
  int32_t max_records;    // records kept per trajectory (the count goes on)
  int32_t subdivisions;   // parts of a step g is sampled at, >= 1
  int32_t record_offset;  // sum of max_records of the events before
  EventInstr instr[kMaxEventInstrs];
};

struct EventTable {
  int32_t n_events;
  int32_t records_per_trajectory;  // sum of max_records
  EventFunction events[kMaxEvents];
};

// The observables of a [lyapunov] table (plain numbers, copied to the device
// once per run; their exponents: kernels/lyapunov.hpp): each an expression of
// t, the coordinates, their rates and the parameters compiled as an event
// function is (only its program is read), and how many of the model's
// parameters (the first n_varied_read) the programs read per trajectory.
struct ObservableTable {
  int32_t n_observables;
  int32_t n_varied_read;
  EventFunction programs[kMaxObservables];
};

// What an event function reads: the state y = (q, qd, ...) at t, and the
// trajectory's varied parameters varied[j * stride] (null: none vary).
template <class S>
struct EventArgs {
  S t;
  const S* q;
  const S* qd;
  const double* varied;
  int64_t stride;
};

// The state an event function reads, from arrays (EventArgs).
template <class S>
struct EventArrayState {
  const EventArgs<S>* a;
  NHOLO_HDI S coord(int i) const { return a->q[i]; }
  NHOLO_HDI S rate(int i) const { return a->qd[i]; }
};

// x^y in an event function (and on dual numbers: below; on the CPU's lanes:
// kernels/lane_events.hpp)
template <class S>
NHOLO_HDI S event_pow(const S& x, const S& y) {
  return pow(x, y);
}

// x^y on dual numbers for the event functions' interpreter: the value as
// pow's, the rate d(x^y) = y x^(y-1) dx + x^y log(x) dy (the second term
// only where y varies)
template <class T, int K>
NHOLO_HDI Dual<T, K> event_pow(const Dual<T, K>& x, const Dual<T, K>& y) {
  Dual<T, K> r;
  r.v = pow(x.v, y.v);
  const T dx = y.v * pow(x.v, y.v - T(1));
  for (int k = 0; k < K; ++k)
    r.d[k] =
        (x.d[k] == T(0) ? T(0) : dx * x.d[k]) + (y.d[k] == T(0) ? T(0) : r.v * log(x.v) * y.d[k]);
  return r;
}

// sign(x) in an event function: 1, 0 or -1 (0 for NaN), no derivative (on
// the CPU's lanes: kernels/lane_events.hpp)
template <class S>
NHOLO_HDI S event_sign(const S& x) {
  return S((x > S(0)) - (x < S(0)));
}

// g at time t of the state st (st.coord(i), st.rate(i): only the components
// the program reads are asked for), the trajectory's varied parameters
// varied[j * stride]; NaN for a malformed program (the host never makes one)
template <class S, class State>
NHOLO_HDI S event_value_of(const EventFunction& f, S t, const State& st, const double* varied,
                           int64_t stride) {
  S stack[kMaxEventStack];
  int sp = 0;
  for (int k = 0; k < f.n_instr; ++k) {
    const EventInstr& in = f.instr[k];
    const int ar = in.op >= EventOp::add && in.op <= EventOp::pow ? 2
                   : in.op == EventOp::atan2                      ? 2
                   : in.op >= EventOp::neg                        ? 1
                                                                  : 0;
    if (sp < ar || (ar == 0 && sp >= kMaxEventStack)) return S(NAN);
    S x = ar ? stack[sp - ar] : S(0);
    const S y = ar == 2 ? stack[sp - 1] : S(0);
    switch (in.op) {
      case EventOp::constant: x = S(in.value); break;
      case EventOp::time: x = t; break;
      case EventOp::coord: x = st.coord(in.index); break;
      case EventOp::rate: x = st.rate(in.index); break;
      case EventOp::varied_param: x = S(varied[in.index * stride]); break;
      case EventOp::neg: x = -x; break;
      case EventOp::add: x = x + y; break;
      case EventOp::sub: x = x - y; break;
      case EventOp::mul: x = x * y; break;
      case EventOp::div: x = x / y; break;
      case EventOp::pow: x = event_pow(x, y); break;
      case EventOp::sin: x = sin(x); break;
      case EventOp::cos: x = cos(x); break;
      case EventOp::tan: x = tan(x); break;
      case EventOp::exp: x = exp(x); break;
      case EventOp::log: x = log(x); break;
      case EventOp::sqrt: x = sqrt(x); break;
      case EventOp::sinh: x = sinh(x); break;
      case EventOp::cosh: x = cosh(x); break;
      case EventOp::tanh: x = tanh(x); break;
      case EventOp::abs: x = fabs(x); break;
      case EventOp::sign: x = event_sign(x); break;
      case EventOp::atan2: x = atan2(x, y); break;
    }
    sp -= ar;
    stack[sp++] = x;
  }
  return sp == 1 ? stack[0] : S(NAN);
}

// g at args
template <class S>
NHOLO_HDI S event_value_of(const EventFunction& f, const EventArgs<S>& a) {
  return event_value_of(f, a.t, EventArrayState<S>{&a}, a.varied, a.stride);
}

}  // namespace nholo
