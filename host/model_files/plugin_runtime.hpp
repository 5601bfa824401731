// nholo/host/model_files/plugin_runtime.hpp — the ModelRuntime (host/run/model_runtime.hpp)
// of a model plugin: the run pipeline calls the model's functions through the
// plugin's C table (host/model_files/plugin_abi.h), whichever compiler built it.
//
//   PluginModelRuntime rt(table, path);   // table: checked by open_entry (plugin.cpp)
//   run_model(rt, cfg, opts, dev);
#pragma once

#include <string>

#include "host/backends/lane_entry.hpp"
#include "host/config/model_info.hpp"
#include "host/model_files/plugin_abi.h"
#include "host/run/model_runtime.hpp"

namespace nholo {

// The description in a plugin's table as a ModelInfo.
ModelInfo model_info_of_plugin(const nholo_plugin& table);

// The layout table of this nholo's compiler (plugin_abi.h NHOLO_PLUGIN_LAYOUT);
// the first entry where a plugin's differs, "" when none.
std::string plugin_layout_mismatch(const nholo_plugin& table);

class PluginModelRuntime final : public ModelRuntime {
 public:
  PluginModelRuntime(const nholo_plugin* table, std::string path);
  const ModelInfo& info() const override { return info_; }
  const Drift& drift() const override { return drift_; }
  std::unique_ptr<DeviceEnsemble> make_formulation(const std::string& f, const RunConfig& cfg,
                                                   Device& dev,
                                                   const EnsembleLayout& layout) const override;
  bool has_check_params() const override { return t_->model->has_check_params != 0; }
  const char* check_params(const double* params) const override;
  StateConsistency complete_state(const double* params, double t0, double* q, const bool* q_given,
                                  double* qd, const bool* qd_given) const override;
  StateConsistency project_state(const double* params, double t0, double* q,
                                 double* qd) const override;
  bool rank_deficient(const double* params, double t0, const double* q, const double* qd,
                      double rtol) const override;
  double drift_prediction(const double* params, const double* q0, const double* qd0) const override;
  // the plugin's SIMD lane add-on (plugin.hpp lane_plugin): the
  // Udwadia–Kalaba ensembles made after this integrate in its lanes on a CPU
  // backend of its instruction set
  void attach_lanes(const nholo_lane_plugin* lanes);

 private:
  // the lane add-ons attached, as a built-in model's row of lane kernels
  nholo_lanes::LaneTableRow lane_row_{};
  const nholo_plugin* t_;
  std::string path_;
  ModelInfo info_;
  Drift drift_;
};

}  // namespace nholo
