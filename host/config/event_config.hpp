// nholo/host/config/event_config.hpp — one [[events]] entry, as a run
// configuration or a model file declares it (docs/events.md); read by
// host/config/parse_events.cpp for both, compiled for the kernels by
// host/model_language/event_compile.cpp (host/config/event_table.hpp).
#pragma once

#include <string>

namespace nholo {

// An event function g(t, q, qd) of the model-file expression language,
// checked after every accepted step.
struct EventConfig {
  std::string name;                // [A-Za-z][A-Za-z0-9_]*, unique
  std::string expr;                // coordinates, rates (x_dot), t, parameters
  std::string direction = "both";  // up | down | both
  std::string action = "record";   // record | stop
  int max_records = 100;           // records kept per trajectory (the count goes on)
  int subdivisions = 1;            // equal parts of a step g is sampled at (and where
                                   // the cubic of its end values and rates is stationary)
};

}  // namespace nholo
