// nholo/host/config/event_table.hpp — the kernels' table of a run's events
// (kernels/event_program.hpp) from its [[events]]: each expression parsed in
// the model-file expression language and lowered to a postfix program.
// Declared here, for the run pipeline (run/ never includes model_language/);
// implemented by the expression language, host/model_language/event_compile.cpp.
// Also how a model file's [[events]] are read and reach the configuration.
#pragma once

#include <toml++/toml.h>

#include <string>
#include <vector>

#include "host/config/config.hpp"
#include "host/config/model_info.hpp"
#include "kernels/event_program.hpp"

namespace nholo {

// ConfigError (key events[k].expr) when an expression uses an unknown name,
// is malformed or too long for the kernels' program.
EventTable compile_event_table(const std::vector<EventConfig>& events,
                               const std::vector<std::string>& coordinates,
                               const std::vector<std::string>& param_names,
                               const std::vector<double>& param_values,
                               const std::vector<std::string>& varied_params);

// compile_event_table for a run of model mi: its coordinates, its
// parameters with cfg's values and the ones cfg varies per trajectory
EventTable compile_run_events(const std::vector<EventConfig>& events, const ModelInfo& mi,
                              const RunConfig& cfg);

// The [[events]] array at n, `key` its name in messages ("events" in a
// configuration and a model file): each table's keys and TOML types read
// (host/config/parse_events.cpp), its values and expression left to
// compile_event_table. ConfigError (key events[k].<key>) otherwise.
std::vector<EventConfig> read_event_tables(const toml::node& n, const std::string& key);

// A model file's own events (declared in it, checked when it was read:
// host/model_language/model_file.cpp); a run has them before its
// configuration's [[events]].
const std::vector<EventConfig>& model_spec_events(const ModelSpec& spec);

}  // namespace nholo
