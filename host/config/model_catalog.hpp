// nholo/host/config/model_catalog.hpp — the models a configuration names that
// are no built-in model: a model file's [model] table, read by the model
// language (host/config/model_catalog.cpp), and a plugin "path.so",
// loaded by the loader a program registers.
#pragma once

#include <toml++/toml.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "host/config/model_info.hpp"

namespace nholo {

struct ModelSpec;

// A model file's model: what it says (host/model_language/model_file.hpp) and
// its description.
struct ModelFileModel {
  std::shared_ptr<const ModelSpec> spec;
  ModelInfo info;
};

// A [model] table (model_source: where it came from, for messages) parsed
// and checked; builtin: the built-in models' names, which it may not take.
// ConfigError (key model) when it is not a valid model.
ModelFileModel model_file_model(const toml::table& mt, const std::string& model_source,
                                const std::vector<std::string>& builtin);

// The text of the model file at path (a regular file of at most 64 MiB);
// ConfigError (key model) naming the path and the reason otherwise.
std::string model_file_text(const std::string& path);

// A model file's run-time description (formulations udwadia_kalaba,
// lagrange_multiplier, null_space, vakonomic, and conflated when a
// conflated Lagrangian is given).
ModelInfo model_info_from_spec(const ModelSpec& s);

// The plugin file `path` loaded (once per process) and its model's
// description; loaded_path: the path it was loaded from. Throws what loading
// throws (std::exception). Loading a plugin is the toolchain's
// (host/model_files/), which config/ never reaches: each program that reads
// configurations naming plugins registers the toolchain's loader
// (plugin_model_info, host/model_files/plugin.hpp) once, at its start
// (host/cli/main.cpp, python/src/module.cpp); a program that did not cannot
// read a configuration whose model is a plugin.
using PluginModelLoader =
    std::function<ModelInfo(const std::string& path, std::string& loaded_path)>;
void set_plugin_model_loader(PluginModelLoader loader);

}  // namespace nholo
