// nholo/host/config/event_table.hpp — the kernels' table of a run's events
// (kernels/event_program.hpp) from its [[events]] and its model (and that of
// its [lyapunov] observables): each
// expression compiled by the model language (compile_event_table,
// host/model_language/event_compile.hpp) against the model's coordinates and
// parameters. For the run pipeline (run/ never includes model_language/).
#pragma once

#include <vector>

#include "host/config/config.hpp"
#include "host/config/model_info.hpp"
#include "host/model_language/event_compile.hpp"
#include "kernels/event_program.hpp"

namespace nholo {

// compile_event_table for a run of model mi: its coordinates, its
// parameters with cfg's values and the ones cfg varies per trajectory
EventTable compile_run_events(const std::vector<EventConfig>& events, const ModelInfo& mi,
                              const RunConfig& cfg);

// compile_observable_table for a run of model mi, as compile_run_events
ObservableTable compile_run_observables(const std::vector<std::string>& observables,
                                        const ModelInfo& mi, const RunConfig& cfg);

}  // namespace nholo
