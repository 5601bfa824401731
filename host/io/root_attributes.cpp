// nholo/host/io/root_attributes.cpp — the root attributes of a run's files,
// the release and revision of this nholo.
#include "host/io/root_attributes.hpp"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <vector>

#include "host/config/model_info.hpp"
#include "host/config/tables.hpp"

#ifndef NHOLO_VERSION
#define NHOLO_VERSION "0.0.0"
#endif
#ifndef NHOLO_GIT_REVISION
#define NHOLO_GIT_REVISION "unknown"
#endif

namespace nholo {

std::string nholo_version() {
  return NHOLO_VERSION;
}
std::string nholo_git_revision() {
  return NHOLO_GIT_REVISION;
}

std::string now_iso8601() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// The root attributes of a file a run writes: what it is and how it was
// made, and (with a summary) how it ended.
void write_root_attrs(h5::Group& root, const RunConfig& cfg, const DeviceInfo& di,
                      const RunSummary* sum) {
  const ModelInfo& mi = *find_model(cfg.model);
  root.set_attr("title", "nholo ensemble: " + cfg.model);
  root.set_attr("model", cfg.model);
  root.set_attr("model_description", mi.description);
  root.set_attr("coordinates", mi.coordinates);
  root.set_attr("constraints", mi.constraints);
  root.set_attr("formulations", cfg.formulations);
  if (!mi.coordinate_units.empty()) root.set_attr("coordinate_units", mi.coordinate_units);
  std::vector<std::string> pn, pu;
  std::vector<double> pv;
  for (const auto& p : mi.params) {
    pn.push_back(p.name);
    pu.push_back(p.unit);
    // a parameter that varies per trajectory has its values in /initial/params
    const bool varies = std::find(cfg.varied_params.begin(), cfg.varied_params.end(), p.name) !=
                        cfg.varied_params.end();
    pv.push_back(varies ? NAN : cfg.params.at(p.name));
    if (varies)
      root.set_attr("param_" + p.name, "varies per trajectory (/initial/params)");
    else
      root.set_attr("param_" + p.name, cfg.params.at(p.name));
  }
  root.set_attr("parameter_names", pn);
  root.set_attr("parameter_values", pv);
  if (!pu.empty()) root.set_attr("parameter_units", pu);
  if (!cfg.varied_params.empty()) root.set_attr("varied_parameters", cfg.varied_params);
  root.set_attr("integrator_method", tables::method_name(cfg.integrator.method));
  root.set_attr("integrator_rtol", cfg.integrator.rtol);
  root.set_attr("integrator_atol", cfg.integrator.atol);
  root.set_attr("integrator_dt", cfg.integrator.dt);
  root.set_attr("integrator_drift", tables::drift_name(cfg.eval.drift));
  root.set_attr("ensemble_size", cfg.size);
  root.set_attr("ensemble_sampler", name_of(cfg.sampler));
  root.set_attr("ensemble_seed", static_cast<int64_t>(cfg.seed));
  root.set_attr("backend", backend_name(di.backend));
  root.set_attr("backend_requested", name_of(cfg.device));
  root.set_attr("device_name", di.name);
  root.set_attr("threads", static_cast<int64_t>(di.threads));
  if (di.backend != Backend::cuda) {
    root.set_attr("simd", di.simd);  // the CPU backends' SIMD lanes (backend.simd)
    root.set_attr("simd_lanes", static_cast<int64_t>(di.lanes));
  }
  if (di.backend == Backend::cuda) {
    root.set_attr("gpu", static_cast<int64_t>(di.gpu));
    root.set_attr("compute_capability", di.compute_capability);
    root.set_attr("cuda_driver_version", di.driver_version);
    root.set_attr("cuda_runtime_version", di.runtime_version);
  }
  root.set_attr("output_mode",
                name_of(cfg.fields.empty() ? OutputMode::statistics : OutputMode::full));
  root.set_attr("output_compression", static_cast<int64_t>(cfg.compression));
  root.set_attr("config", cfg.text);
  root.set_attr("config_hash", cfg.result_hash);
  root.set_attr("nholo_version", nholo_version());
  root.set_attr("git_revision", nholo_git_revision());
  root.set_attr("created", now_iso8601());
  root.set_attr("complete", int64_t(sum && !sum->interrupted ? 1 : 0));
  if (!sum) return;
  root.set_attr("completed_trajectories", sum->completed);
  root.set_attr("initial_states_completed", sum->completed_from_constraints);
  root.set_attr("initial_states_projected", sum->projected);
  root.set_attr("initial_states_rejected", sum->rejected);
  root.set_attr("initial_states_singular", sum->singular_initial);
  root.set_attr("initial_states_params_rejected", sum->params_rejected);
  root.set_attr("interrupted", int64_t(sum->interrupted ? 1 : 0));
  root.set_attr("wall_seconds", sum->seconds);
  root.set_attr("output_seconds", sum->output_seconds);
  root.set_attr("output_bytes", sum->output_bytes);
  root.set_attr("compute_seconds", sum->compute_seconds);
  root.set_attr("output_wait_seconds", sum->wait_seconds);
  root.set_attr("device_busy_seconds", sum->device_busy_seconds);
  root.set_attr("device_copy_seconds", sum->device_copy_seconds);
  root.set_attr("device_busy_fraction",
                sum->seconds > 0 ? sum->device_busy_seconds / sum->seconds : 0.0);
  root.set_attr("integration_launches", sum->launches);
  root.set_attr("cpu_tail_seconds", sum->cpu_tail_seconds);
  root.set_attr("cpu_tail_trajectories", sum->cpu_tail_trajectories);
  if (!sum->fault.empty()) root.set_attr("fault", sum->fault);
}

}  // namespace nholo
