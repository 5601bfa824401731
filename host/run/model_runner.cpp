// nholo/host/run/model_runner.cpp — the built-in models' pipelines, by name.
#include "host/run/model_runner.hpp"

#include "host/run/runner.hpp"
#include "models/registry.hpp"

namespace nholo {

ModelRunner builtin_model_runner(const std::string& model) {
  ModelRunner r;
  models::visit_model(model.c_str(), [&](auto tag) {
    using M = typename decltype(tag)::type;
    r = &run_model<M>;
  });
  return r;
}

}  // namespace nholo
