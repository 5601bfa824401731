// nholo/kernels/status.hpp — how a trajectory (or one evaluation) ended.
#pragma once

#include <stdint.h>

namespace nholo {

enum class Status : int32_t {
  ok = 0,              // integrated to the end of the window
  max_steps = 1,       // the step budget of the window ran out
  step_underflow = 2,  // the adaptive step fell below the minimum step
  non_finite = 3,      // a NaN or Inf appeared in the state or its derivative
  singular = 4,        // singular mass matrix / KKT system that the formulation cannot treat
  not_run = 5,         // not integrated (the run was interrupted before it finished)
  rejected = 6,        // initial state violated the constraints (on_violation = reject)
  event = 7,           // ended by an event whose action is stop, at fail_time
};

constexpr int kStatusCount = 8;

inline constexpr const char* status_name(Status s) {
  switch (s) {
    case Status::ok: return "ok";
    case Status::max_steps: return "max_steps";
    case Status::step_underflow: return "step_underflow";
    case Status::non_finite: return "non_finite";
    case Status::singular: return "singular";
    case Status::not_run: return "not_run";
    case Status::rejected: return "rejected";
    case Status::event: return "event";
  }
  return "unknown";
}

}  // namespace nholo
