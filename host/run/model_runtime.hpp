// nholo/host/run/model_runtime.hpp — what the run pipeline needs of a model, its
// type erased, so that one pipeline (host/run/runner.hpp, compiled once) runs
// every model:
//
//   a built-in model   TypedModelRuntime<Model> (host/run/typed_model_runtime.hpp),
//                      compiled into nholo with the model's type
//   a model plugin     PluginModelRuntime (host/model_files/plugin_runtime.hpp): the
//                      model's functions compiled by any C++17 compiler, called
//                      through the plugin's C table (host/model_files/plugin_abi.h)
//
// The per-trajectory functions take parameters as the model's n_params
// values in its parameter order (ModelInfo::params) and states as n values.
#pragma once

#include <memory>
#include <string>

#include "host/backends/device_ensemble.hpp"
#include "host/config/config.hpp"
#include "host/config/model_info.hpp"

namespace nholo {

// The result of completing or projecting an initial state.
struct StateConsistency {
  double residual = 0;
  bool converged = false;
};

class ModelRuntime {
 public:
  virtual ~ModelRuntime() = default;
  virtual const ModelInfo& info() const = 0;
  // the model's drift statistic (kernels/reduce.hpp line fit), has_drift false: none
  struct Drift {
    bool has_drift = false;
    int drift_coordinate = 0, band_coordinate = 0;
    std::string prediction_doc;
  };
  virtual const Drift& drift() const = 0;

  // The device ensemble of formulation f on dev (CPU, or CUDA: the model's
  // own kernels, or a GPU module registered on dev). ConfigError when the
  // model has no such formulation.
  virtual std::unique_ptr<DeviceEnsemble> make_formulation(const std::string& f,
                                                           const RunConfig& cfg, Device& dev,
                                                           const EnsembleLayout& layout) const = 0;

  // Initial states, one trajectory at a time (host/run/initial_states.hpp).
  virtual bool has_check_params() const = 0;
  // nullptr: admissible; else why not (a string that lives as long as the model)
  virtual const char* check_params(const double* params) const = 0;
  // q, qd completed from the constraints, the given components kept
  virtual StateConsistency complete_state(const double* params, double t0, double* q,
                                          const bool* q_given, double* qd,
                                          const bool* qd_given) const = 0;
  virtual StateConsistency project_state(const double* params, double t0, double* q,
                                         double* qd) const = 0;
  // A(q) has lost rank there: sigma_min below rtol sigma_max (or A = 0) where
  // the model declares a higher rank
  virtual bool rank_deficient(const double* params, double t0, const double* q, const double* qd,
                              double rtol) const = 0;
  // the drift statistic's prediction from an initial state (drift().has_drift)
  virtual double drift_prediction(const double* params, const double* q0,
                                  const double* qd0) const = 0;
};

// The runtime of a built-in model type (host/run/typed_model_runtime.hpp,
// instantiated once per model in a generated unit, CMakeLists.txt).
template <class Model>
const ModelRuntime& typed_model_runtime();

// The built-in model named `model` (models/registry.hpp); nullptr when none.
const ModelRuntime* builtin_model_runtime(const std::string& model);

}  // namespace nholo
