// nholo/host/run/model_runner.hpp — the run pipeline of a model as a function:
// run_model<Model> for a built-in model (models/registry.hpp). A model file's
// or a plugin file's pipeline comes from its plugin (host/model_files/plugin.hpp),
// which the command picks (host/cli/commands.cpp): run/ never includes
// model_files/.
#pragma once

#include <functional>
#include <string>

#include "host/backends/device_ensemble.hpp"
#include "host/config/config.hpp"
#include "host/run/run_options.hpp"

namespace nholo {

using ModelRunner = std::function<RunSummary(const RunConfig&, const RunOptions&, Device&)>;

// run_model<Model> of the built-in model named `model`; empty when there is none.
ModelRunner builtin_model_runner(const std::string& model);

}  // namespace nholo
