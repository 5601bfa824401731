// nholo/host/run/model_runtime.cpp — the built-in models' runtimes, by name.
#include "host/run/model_runtime.hpp"

#include "models/registry.hpp"

namespace nholo {

const ModelRuntime* builtin_model_runtime(const std::string& model) {
  const ModelRuntime* r = nullptr;
  models::visit_model(model.c_str(), [&](auto tag) {
    using M = typename decltype(tag)::type;
    r = &typed_model_runtime<M>();
  });
  return r;
}

}  // namespace nholo
