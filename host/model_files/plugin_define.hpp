// nholo/host/model_files/plugin_define.hpp — NHOLO_DEFINE_PLUGIN(Model): the one line that
// makes a translation unit a model plugin (host/model_files/plugin_abi.hpp): it
// instantiates the run pipeline of Model and exports the entry table.
// Compiled with -DNHOLO_VERSION=... -DNHOLO_GIT_REVISION=... of the nholo that
// will load it (host/model_files/plugin.cpp and nholo_add_model pass them).
#pragma once

#include <exception>

#include "host/config/model_info_of.hpp"
#include "host/model_files/plugin_abi.hpp"
#include "host/run/runner_impl.hpp"

#ifndef NHOLO_PLUGIN_IDENTITY
#error "a model plugin is compiled with -DNHOLO_VERSION and -DNHOLO_GIT_REVISION of its nholo"
#endif

namespace nholo::plugin_detail {
// nholo_plugin_v1::window_layout of Model
template <class Model>
int window_layout(const char* formulation, nholo_window_layout* out) {
  try {
    return with_formulation<Model>(formulation, [&](auto sys) {
      using Sys = decltype(sys);
      using W = EnsembleWindow<Sys>;
      out->bytes = sizeof(W);
      out->align = alignof(W);
      out->sys = sizeof(Sys);
      out->sys_align = alignof(Sys);
      out->params = sizeof(typename Sys::Params);
      out->opt = sizeof(IntegratorOptions);
      out->opt_align = alignof(IntegratorOptions);
      out->arr = sizeof(EnsembleArrays<double>);
      return 1;
    });
  } catch (const std::exception&) {
    return 0;  // no such formulation
  }
}
}  // namespace nholo::plugin_detail

#define NHOLO_DEFINE_PLUGIN(ModelType)                                                            \
  template nholo::RunSummary nholo::run_model<ModelType>(                                         \
      const nholo::RunConfig&, const nholo::RunOptions&, nholo::Device&);                         \
  extern "C" __attribute__((visibility("default"))) const nholo_plugin_v1* nholo_plugin_entry_v1( \
      void) {                                                                                     \
    static const nholo_plugin_v1 entry = {                                                        \
        NHOLO_PLUGIN_ABI_VERSION,                                                                 \
        NHOLO_PLUGIN_IDENTITY,                                                                    \
        ModelType::name,                                                                          \
        [](nholo::ModelInfo* out) { *out = nholo::model_info_of<ModelType>(); },                  \
        &nholo::run_model<ModelType>,                                                             \
        &nholo::plugin_detail::window_layout<ModelType>};                                         \
    return &entry;                                                                                \
  }
