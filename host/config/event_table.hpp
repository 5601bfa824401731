// nholo/host/config/event_table.hpp — the kernels' table of a run's events
// (kernels/event_program.hpp) from its [[events]]: each expression parsed in
// the model-file expression language and lowered to a postfix program.
// Declared here, for the run pipeline (run/ never includes model_files/);
// implemented by the expression language, host/model_files/event_compile.cpp.
#pragma once

#include <string>
#include <vector>

#include "host/config/config.hpp"
#include "kernels/event_program.hpp"

namespace nholo {

// ConfigError (key events[k].expr) when an expression uses an unknown name,
// is malformed or too long for the kernels' program.
EventTable compile_event_table(const std::vector<EventConfig>& events,
                               const std::vector<std::string>& coordinates,
                               const std::vector<std::string>& param_names,
                               const std::vector<double>& param_values,
                               const std::vector<std::string>& varied_params);

}  // namespace nholo
