// nholo/host/run/typed_model_runtime.hpp — the ModelRuntime (host/run/model_runtime.hpp)
// of a model type compiled into nholo: a built-in model. Each is instantiated
// in a generated translation unit of its own (CMakeLists.txt), so that the
// models compile in parallel:
//
//   template const ModelRuntime& typed_model_runtime<models::RollingCoin>();
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

#include "host/backends/cpu_ensemble.hpp"
#include "host/backends/formulation_system.hpp"
#include "host/backends/model_functions.hpp"
#include "host/config/config.hpp"
#include "host/config/model_info.hpp"
#include "host/run/model_runtime.hpp"
#include "kernels/model.hpp"
#ifdef NHOLO_WITH_CUDA
#include "host/backends/cuda_ensemble.hpp"
#endif

namespace nholo {

template <class Model>
class TypedModelRuntime final : public ModelRuntime {
  using F = ModelFunctions<Model>;

 public:
  TypedModelRuntime() : info_(*find_model(Model::name)) {
    if constexpr (has_drift_statistic<Model>::value) {
      drift_.has_drift = true;
      drift_.drift_coordinate = Model::DriftStatistic::drift_coordinate;
      drift_.band_coordinate = Model::DriftStatistic::band_coordinate;
      drift_.prediction_doc = Model::DriftStatistic::prediction_doc;
    }
  }
  const ModelInfo& info() const override { return info_; }
  const Drift& drift() const override { return drift_; }

  // A formulation with a GPU module registered on a CUDA device (Device::add_module)
  // runs that module; otherwise the model's own kernels (CUDA: compiled into
  // a CUDA-enabled nholo; CPU: CpuEnsemble).
  std::unique_ptr<DeviceEnsemble> make_formulation(const std::string& f, const RunConfig& cfg,
                                                   Device& dev,
                                                   const EnsembleLayout& layout) const override {
    if (cfg.lyapunov)  // the tangent systems are compiled on demand, into the model's plugin
      throw std::logic_error("model " + std::string(Model::name) +
                             ": a run with [lyapunov] runs the model's plugin (built_in_plugin)");
    std::vector<double> values(static_cast<size_t>(Model::n_params > 0 ? Model::n_params : 1), 0.0);
    for (int j = 0; j < Model::n_params; ++j) values[j] = cfg.params.at(Model::param_info[j].name);
    std::unique_ptr<DeviceEnsemble> out;
    const bool found = visit_formulation<Model>(f, [&](auto sys) {
      sys.params = params_of_values<Model>(values.data());
      sys.eval = cfg.eval;
      if (dev.info().backend == Backend::cuda) {
        if (dev.has_module(f)) {
          out = dev.module_ensemble(f, formulation_system(sys, cfg.integrator), cfg.integrator,
                                    layout);
          return;
        }
#ifdef NHOLO_WITH_CUDA
        using Sys = decltype(sys);
        out = cuda_backend::make_ensemble<Sys>(f, dev, sys, cfg.integrator, layout,
                                               formulation_system(sys, cfg.integrator).cpu_window);
        return;
#else
        throw std::runtime_error("backend cuda: no GPU kernel of formulation " + f +
                                 " for model " + Model::name + " in this nholo");
#endif
      }
      FormulationSystem fs = formulation_system(sys, cfg.integrator);
      // the SIMD lanes' kernels (host/backends/lane_entry.hpp): the
      // Udwadia–Kalaba formulation of a built-in model
      if (f == "udwadia_kalaba") fs.lanes = nholo_lanes::find_lane_row(Model::name);
      out = std::make_unique<CpuEnsemble>(f, static_cast<CpuDevice&>(dev), std::move(fs), layout);
    });
    if (!found)
      throw ConfigError("formulations",
                        "'" + f + "' is not available for model " + std::string(Model::name));
    return out;
  }

  bool has_check_params() const override {
    return nholo::has_check_params<Model>::value;
  }
  const char* check_params(const double* p) const override {
    return F::check_params(p);
  }
  StateConsistency complete_state(const double* p, double t0, double* q, const bool* q_given,
                                  double* qd, const bool* qd_given) const override {
    const ConsistencyResult<double> r = F::complete_state(p, t0, q, q_given, qd, qd_given);
    return {r.residual, r.converged};
  }
  StateConsistency project_state(const double* p, double t0, double* q, double* qd) const override {
    const ConsistencyResult<double> r = F::project_state(p, t0, q, qd);
    return {r.residual, r.converged};
  }
  bool rank_deficient(const double* p, double t0, const double* q, const double* qd,
                      double rtol) const override {
    return F::rank_deficient(p, t0, q, qd, rtol);
  }
  double drift_prediction(const double* p, const double* q0, const double* qd0) const override {
    return F::drift_prediction(p, q0, qd0);
  }

 private:
  const ModelInfo& info_;
  Drift drift_;
};

template <class Model>
const ModelRuntime& typed_model_runtime() {
  static const TypedModelRuntime<Model> rt;
  return rt;
}

}  // namespace nholo
