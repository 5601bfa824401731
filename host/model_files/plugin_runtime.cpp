// nholo/host/model_files/plugin_runtime.cpp — a model plugin's C table behind the
// ModelRuntime interface (plugin_runtime.hpp).
#include "host/model_files/plugin_runtime.hpp"

#include <algorithm>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "host/backends/cpu_ensemble.hpp"
#include "host/backends/formulation_system.hpp"
#include "host/model_files/plugin_convert.hpp"

namespace nholo {

namespace {

using namespace plugin_convert;

constexpr std::size_t kErrorSize = 1024;

// a plugin's window on a CPU backend; with lane_window (the window's bytes
// for a lane add-on, plugin_abi.h nholo_lane_plugin: empty where the lanes do
// not apply) its batches run in the lanes use_lanes gives
class PluginCpuWindow final : public CpuWindow {
 public:
  PluginCpuWindow(const nholo_plugin* t, nholo_window_c* w, std::vector<unsigned char> lane_window,
                  Method method)
      : t_(t), w_(w), lane_window_(std::move(lane_window)), method_(method) {}
  ~PluginCpuWindow() override { t_->window_close(w_); }
  PluginCpuWindow(const PluginCpuWindow&) = delete;
  PluginCpuWindow& operator=(const PluginCpuWindow&) = delete;
  bool run(int64_t i, int64_t launch_steps) const override {
    return t_->window_run(w_, i, launch_steps) != 0;
  }
  void run_batch(const int64_t* idx, int64_t n, int64_t launch_steps,
                 uint8_t* finished) const override {
    if (!lanes_) {
      CpuWindow::run_batch(idx, n, launch_steps, finished);
      return;
    }
    const nholo_lanes::LaneRun r =
        lane_run(lane_window_.data(), lane_window_.size(), method_, idx, n, launch_steps, finished);
    lanes_(&r);
  }
  bool use_lanes(nholo_lanes::LaneEntry entry) override {
    lanes_ = lane_window_.empty() ? nullptr : entry;
    return lanes_ != nullptr;
  }

 private:
  const nholo_plugin* t_;
  nholo_window_c* w_;
  std::vector<unsigned char> lane_window_;
  Method method_;
  nholo_lanes::LaneEntry lanes_ = nullptr;
};

std::vector<std::string> strings(const char* const* v, int count) {
  std::vector<std::string> out;
  if (v)
    for (int i = 0; i < count; ++i) out.emplace_back(v[i] ? v[i] : "");
  return out;
}

}  // namespace

ModelInfo model_info_of_plugin(const nholo_plugin& table) {
  const nholo_model_c& c = *table.model;
  ModelInfo mi;
  mi.name = c.name ? c.name : "";
  mi.description = c.description ? c.description : "";
  mi.n = c.n;
  mi.m = c.m;
  mi.m_position = c.m_position;
  mi.m_velocity = c.m_velocity;
  mi.m_acceleration = c.m_acceleration;
  mi.coordinates = strings(c.coordinates, c.n);
  mi.coordinate_units = strings(c.coordinate_units, c.n);
  mi.constraints = strings(c.constraints, c.m);
  mi.constraint_kinds = strings(c.constraint_kinds, c.m);
  for (int j = 0; j < c.n_params; ++j) {
    const nholo_param_c& p = c.params[j];
    ParamRange r;
    r.has_lo = p.has_lo != 0;
    r.lo = p.lo;
    r.lo_open = p.lo_open != 0;
    r.has_hi = p.has_hi != 0;
    r.hi = p.hi;
    r.hi_open = p.hi_open != 0;
    mi.params.push_back({p.name ? p.name : "",
                         p.default_value,
                         p.unit ? p.unit : "",
                         p.doc ? p.doc : "",
                         r,
                         {},
                         {}});
  }
  mi.formulations = strings(c.formulations, c.n_formulations);
  mi.has_energy = c.has_energy != 0;
  mi.has_nonideal = c.has_nonideal != 0;
  mi.has_conflated = c.has_conflated != 0;
  mi.has_hand_dynamics = c.has_hand_dynamics != 0;
  const nholo_plugin* t = &table;
  mi.check_params = [t](const std::vector<double>& values) -> std::string {
    if (!t->model->has_check_params) return "";
    const char* why = t->check_params(values.data());
    return why ? why : "";
  };
  return mi;
}

std::string plugin_layout_mismatch(const nholo_plugin& table) {
  static const nholo_layout_entry_c ours[] = {
      NHOLO_PLUGIN_LAYOUT(NHOLO_LAYOUT_SIZE, NHOLO_LAYOUT_OFFSET)};
  const std::size_t n = sizeof ours / sizeof ours[0];
  if (table.layout_count != n || !table.layout)
    return "its layout table has " + std::to_string(table.layout_count) +
           " entries, this nholo's " + std::to_string(n);
  for (std::size_t i = 0; i < n; ++i) {
    const nholo_layout_entry_c& theirs = table.layout[i];
    if (!theirs.what || std::string(theirs.what) != ours[i].what || theirs.value != ours[i].value)
      return std::string(ours[i].what) + " is " + std::to_string(theirs.value) + " there, " +
             std::to_string(ours[i].value) + " here";
  }
  return "";
}

PluginModelRuntime::PluginModelRuntime(const nholo_plugin* table, std::string path)
    : t_(table), path_(std::move(path)), info_(model_info_of_plugin(*table)) {
  if (t_->model->has_drift) {
    drift_.has_drift = true;
    drift_.drift_coordinate = t_->model->drift_coordinate;
    drift_.band_coordinate = t_->model->band_coordinate;
    drift_.prediction_doc = t_->model->drift_prediction_doc ? t_->model->drift_prediction_doc : "";
  }
}

std::unique_ptr<DeviceEnsemble> PluginModelRuntime::make_formulation(
    const std::string& f, const RunConfig& cfg, Device& dev, const EnsembleLayout& layout) const {
  std::vector<double> params(std::max<std::size_t>(info_.params.size(), 1), 0.0);
  for (std::size_t j = 0; j < info_.params.size(); ++j)
    params[j] = cfg.params.at(info_.params[j].name);
  nholo_eval_c eval = eval_c(cfg.eval);
  eval.tangent_renormalize_every = cfg.lyapunov ? cfg.lyapunov_renormalize_every : 0.0;
  eval.tangent_admissible = cfg.lyapunov && !cfg.lyapunov_observables.empty() ? 1 : 0;
  eval.tangent_t_start = cfg.t_start;
  const nholo_integrator_c opt = integrator_c(cfg.integrator);
  nholo_system_c* raw = nullptr;
  nholo_system_info_c si{};
  char err[kErrorSize] = "";
  if (t_->system_open(f.c_str(), params.data(), &eval, &opt, &raw, &si, err, sizeof err) != 0)
    throw ConfigError("formulations", "model " + info_.name + " (plugin " + path_ + "): " + err);
  const nholo_plugin* t = t_;
  const std::shared_ptr<const nholo_system_c> sys(raw,
                                                  [t](nholo_system_c* s) { t->system_close(s); });
  const std::string where =
      "model " + info_.name + ", formulation " + f + " (plugin " + path_ + ")";

  FormulationSystem fs;
  fs.n = info_.n;
  fs.m = info_.m;
  fs.N = si.N;
  fs.n_params = static_cast<int>(info_.params.size());
  fs.path_residual_index = si.path_residual_index;
  fs.tangent_base_size = si.tangent_base_size;
  fs.tangent_exponents = si.tangent_exponents;
  fs.window_bytes = static_cast<std::size_t>(si.window_bytes);
  const int N = si.N;
  fs.start = [t, sys, where, N](int64_t count, const double* q0, const double* qd0,
                                const double* l0, const uint8_t* rejected, double t0,
                                HostStates& out) {
    out.y.resize(static_cast<std::size_t>(N) * count);
    out.t.resize(count);
    out.h.resize(count);
    out.err_prev.resize(count);
    out.fail_time.resize(count);
    out.steps.resize(count);
    out.rejected.resize(count);
    out.status.resize(count);
    nholo_states_c c{};
    c.y = out.y.data();
    c.t = out.t.data();
    c.h = out.h.data();
    c.err_prev = out.err_prev.data();
    c.fail_time = out.fail_time.data();
    c.steps = out.steps.data();
    c.rejected = out.rejected.data();
    c.status = out.status.data();
    char e[kErrorSize] = "";
    if (t->start_states(sys.get(), count, q0, qd0, l0, rejected, t0, &c, e, sizeof e) != 0)
      throw std::runtime_error(where + ": initial states: " + e);
  };
  const uint64_t bytes = si.window_bytes;
  fs.window = [t, sys, where, bytes](void* dst, const EnsembleArrays<double>& arr, int64_t count,
                                     const double* save_times, int ns, bool trajectory_major) {
    const nholo_window_args_c a = window_args(arr, count, save_times, ns, trajectory_major);
    char e[kErrorSize] = "";
    if (t->gpu_window(sys.get(), &a, dst, bytes, e, sizeof e) != 0)
      throw std::runtime_error(where + ": " + e);
  };
  // the lane add-on's kernels (attach_lanes) for the Udwadia–Kalaba formulation
  const bool lanes = f == "udwadia_kalaba" && (lane_row_.avx512 || lane_row_.avx2);
  if (lanes) fs.lanes = &lane_row_;
  const Method method = cfg.integrator.method;
  fs.cpu_window = [t, sys, where, lanes, method, bytes](const EnsembleArrays<double>& arr,
                                                        int64_t count, const double* save_times,
                                                        int ns) -> std::unique_ptr<CpuWindow> {
    const nholo_window_args_c a = window_args(arr, count, save_times, ns, true);
    nholo_window_c* w = nullptr;
    char e[kErrorSize] = "";
    if (t->window_open(sys.get(), &a, &w, e, sizeof e) != 0)
      throw std::runtime_error(where + ": " + e);
    std::vector<unsigned char> lane_window;
    if (lanes) {
      lane_window.resize(bytes);
      if (t->gpu_window(sys.get(), &a, lane_window.data(), bytes, e, sizeof e) != 0) {
        t->window_close(w);
        throw std::runtime_error(where + ": " + e);
      }
    }
    return std::make_unique<PluginCpuWindow>(t, w, std::move(lane_window), method);
  };

  if (dev.info().backend == Backend::cuda) {
    if (!dev.has_module(f))
      throw std::runtime_error("backend cuda: no GPU module of formulation " + f + " for model " +
                               info_.name + " (a model file runs on a GPU through the kernels " +
                               "nholo compiles for it with NVRTC)");
    return dev.module_ensemble(f, fs, cfg.integrator, layout);
  }
  return std::make_unique<CpuEnsemble>(f, static_cast<CpuDevice&>(dev), std::move(fs), layout);
}

void PluginModelRuntime::attach_lanes(const nholo_lane_plugin* lanes) {
  lane_row_.model = info_.name.c_str();
  if (std::string(lanes->isa) == "avx512") lane_row_.avx512 = lanes->run;
  if (std::string(lanes->isa) == "avx2") lane_row_.avx2 = lanes->run;
}

const char* PluginModelRuntime::check_params(const double* params) const {
  return t_->model->has_check_params ? t_->check_params(params) : nullptr;
}

StateConsistency PluginModelRuntime::complete_state(const double* params, double t0, double* q,
                                                    const bool* q_given, double* qd,
                                                    const bool* qd_given) const {
  std::vector<uint8_t> qg(info_.n), qdg(info_.n);
  for (int c = 0; c < info_.n; ++c) {
    qg[c] = q_given[c] ? 1 : 0;
    qdg[c] = qd_given[c] ? 1 : 0;
  }
  nholo_consistency_c r{};
  t_->complete_state(params, t0, q, qg.data(), qd, qdg.data(), &r);
  return {r.residual, r.converged != 0};
}

StateConsistency PluginModelRuntime::project_state(const double* params, double t0, double* q,
                                                   double* qd) const {
  nholo_consistency_c r{};
  t_->project_state(params, t0, q, qd, &r);
  return {r.residual, r.converged != 0};
}

bool PluginModelRuntime::rank_deficient(const double* params, double t0, const double* q,
                                        const double* qd, double rtol) const {
  return t_->rank_deficient(params, t0, q, qd, rtol) != 0;
}

double PluginModelRuntime::drift_prediction(const double* params, const double* q0,
                                            const double* qd0) const {
  return t_->drift_prediction(params, q0, qd0);
}

}  // namespace nholo
