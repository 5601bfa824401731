// nholo/host/model_language/event_compile.hpp — [[events]] arrays read and
// compiled: each table's keys and TOML types read (event_read.cpp), each
// expression parsed in the model-file expression language and lowered to the
// kernels' postfix program (event_compile.cpp). For a configuration's
// [[events]] (host/config/parse_events.cpp) and a model file's own.
#pragma once

#include <toml++/toml.h>

#include <string>
#include <vector>

#include "host/model_language/event_config.hpp"
#include "host/model_language/model_file.hpp"
#include "kernels/event_program.hpp"

namespace nholo {

// The [[events]] array at n, `key` its name in messages ("events" in a
// configuration and a model file): each table's keys and TOML types read,
// its values and expression left to compile_event_table. ConfigError (key
// events[k].<key>) otherwise.
std::vector<EventConfig> read_event_tables(const toml::node& n, const std::string& key);
// The keys of each table of the [[events]] array a (kEventKeys): ConfigError
// (key events[k].<name>) naming the accepted ones otherwise.
void check_event_table_keys(const toml::array& a, const std::string& key);

// The kernels' table of events: ConfigError (key events[k].expr) when an
// expression uses an unknown name, is malformed or too long for the
// kernels' program. model: a model file's spec, whose [definitions] the
// expressions may name (its coordinates and parameters are the ones given).
EventTable compile_event_table(const std::vector<EventConfig>& events,
                               const std::vector<std::string>& coordinates,
                               const std::vector<std::string>& param_names,
                               const std::vector<double>& param_values,
                               const std::vector<std::string>& varied_params,
                               const ModelSpec* model = nullptr);

// The kernels' table of [lyapunov] observables (kernels/lyapunov.hpp), each
// compiled as an event function's program: ConfigError (key
// lyapunov.observables[k]) for what compile_event_table refuses and for an
// expression that reads none of the coordinates and rates; ConfigError
// (lyapunov.observables) for none or more than kMaxObservables.
ObservableTable compile_observable_table(const std::vector<std::string>& observables,
                                         const std::vector<std::string>& coordinates,
                                         const std::vector<std::string>& param_names,
                                         const std::vector<double>& param_values,
                                         const std::vector<std::string>& varied_params,
                                         const ModelSpec* model = nullptr);

}  // namespace nholo
