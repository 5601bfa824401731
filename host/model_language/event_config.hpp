// nholo/host/model_language/event_config.hpp — one [[events]] entry, as a
// run configuration or a model file declares it (docs/events.md), its keys
// and the tables of its choices; read for both by read_event_tables and
// compiled for the kernels by compile_event_table
// (host/model_language/event_compile.hpp).
#pragma once

#include <string>

#include "host/model_language/named_choice.hpp"
#include "kernels/event_program.hpp"
#include "kernels/events.hpp"

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

// the keys of an [[events]] table, in the order of the messages (declared
// for the configuration's key table, with their types and docs, in
// host/config/config_keys.cpp; tests/test_config_keys.cpp checks the two
// name the same keys)
inline constexpr const char* kEventKeys[] = {"name",   "expr",        "direction",
                                             "action", "max_records", "subdivisions"};

namespace tables {

// events[k].direction: the crossings that count (g rising, falling, either)
inline constexpr NamedChoice<EventDirection> kEventDirections[] = {
    {"up", EventDirection::up},
    {"down", EventDirection::down},
    {"both", EventDirection::both},
};
// events[k].action: record the state at each crossing, or end the trajectory
// at the first one (status "event")
inline constexpr NamedChoice<EventAction> kEventActions[] = {
    {"record", EventAction::record},
    {"stop", EventAction::stop},
};
static_assert(indexed_by_enum(kEventDirections) && indexed_by_enum(kEventActions),
              "kEventDirections / kEventActions out of enum order");
// events[k].max_records: at most this many records per trajectory and event
// (the device holds max_records per trajectory of a slice)
inline constexpr int kMaxEventRecords = 1000000;

}  // namespace tables

}  // namespace nholo
