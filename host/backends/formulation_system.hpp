// nholo/host/backends/formulation_system.hpp — one formulation of one model as the
// backends see it with its type erased: its sizes and hooks compiled with the
// system's type (kernels/formulations.hpp), either in nholo (a built-in model,
// host/run/typed_model_runtime.hpp) or in a model plugin behind its C table
// (host/model_files/plugin_define.hpp, plugin_runtime.hpp).
//
//   FormulationSystem s = formulation_system(sys, opt);   // Sys known here
//   s.start(count, q0, qd0, l0, rejected, t0, states)     HostEnsemble<Sys>::start_from_states
//   s.cpu_window(arrays, count, save_times, ns)->run(i, steps)   a CPU backend's window
//   s.window(dst, arrays, count, save_times, ns, false)   a GPU module's kernel argument
//   visit_formulation<Model>("vakonomic", fn)             fn(Sys{}) of that formulation
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "host/backends/device_ensemble.hpp"
#include "host/backends/lane_entry.hpp"
#include "host/backends/system_types.hpp"
#include "host/config/tables.hpp"
#include "kernels/ensemble.hpp"
#include "kernels/formulations.hpp"
#include "kernels/formulations/embedded.hpp"
#include "kernels/lyapunov.hpp"

namespace nholo {

// One window of a formulation on a CPU backend: run(i, launch_steps)
// integrates trajectory i for at most launch_steps steps (0: to the window's
// end) and says whether it finished the window. Called from several threads
// at once for distinct trajectories.
class CpuWindow {
 public:
  virtual ~CpuWindow() = default;
  virtual bool run(int64_t i, int64_t launch_steps) const = 0;
  // run(idx[j], launch_steps) for j < n, finished[j] its result: in SIMD
  // lanes where use_lanes gave kernels that apply to this window, else one
  // trajectory after the other (the same results up to the lanes' math
  // functions: kernels/ensemble_lanes.hpp)
  virtual void run_batch(const int64_t* idx, int64_t n, int64_t launch_steps,
                         uint8_t* finished) const {
    for (int64_t j = 0; j < n; ++j) finished[j] = run(idx[j], launch_steps) ? 1 : 0;
  }
  // the lane kernels of this system for the CPU's instruction set
  // (host/backends/lane_entry.hpp); true when run_batch will use them
  // (windows without lane kernels ignore them)
  virtual bool use_lanes(nholo_lanes::LaneEntry /*entry*/) { return false; }
};

// A formulation's CPU window over arrays (arrays, count, save_times, ns),
// outputs trajectory-major: what a CPU backend integrates, and what the CUDA
// backend finishes a window's tail with (host/backends/window_tail.hpp).
using CpuWindowMaker = std::function<std::unique_ptr<CpuWindow>(const EnsembleArrays<double>&,
                                                                int64_t, const double*, int)>;

struct FormulationSystem {
  int n = 0, m = 0, N = 0, n_params = 0;
  int path_residual_index = -1;  // Sys::path_residual_index, -1: none
  // a tangent system (kernels/lyapunov.hpp): its base system's state size N0,
  // where the tangent begins in the state; -1: none
  int tangent_base_size = -1;
  int tangent_exponents = 0;     // and its K exponents (tangent vectors)
  std::size_t window_bytes = 0;  // sizeof(EnsembleWindow<Sys>)
  // a slice's initial integration state: (count, q0, qd0, l0, rejected, t0, out)
  std::function<void(int64_t, const double*, const double*, const double*, const uint8_t*, double,
                     HostStates&)>
      start;
  // the kernel argument (window_bytes) for a window: a GPU module's, outputs
  // coalesced, or a plugin's lane add-on's, trajectory-major:
  // (dst, arrays, count, save_times, ns, trajectory_major)
  std::function<void(void*, const EnsembleArrays<double>&, int64_t, const double*, int, bool)>
      window;
  // a CPU backend's window, outputs trajectory-major: (arrays, count, save_times, ns)
  CpuWindowMaker cpu_window;
  // the system's SIMD lane kernels (a built-in model under the Udwadia–Kalaba
  // formulation: host/backends/lane_entry.hpp); null: none
  const nholo_lanes::LaneTableRow* lanes = nullptr;
};

// HostEnsemble<Sys>::start_from_states into HostStates.
template <class Sys>
void start_host_states(const Sys& sys, const IntegratorOptions& opt, int64_t count,
                       const double* q0, const double* qd0, const double* l0,
                       const uint8_t* rejected, double t0, HostStates& out) {
  HostEnsemble<Sys> h;
  h.start_from_states(sys, count, q0, qd0, l0, rejected, t0, opt);
  out.y = std::move(h.y);
  out.t = std::move(h.t);
  out.h = std::move(h.h);
  out.err_prev = std::move(h.err_prev);
  out.fail_time = std::move(h.fail_time);
  out.steps = std::move(h.steps);
  out.rejected = std::move(h.rejected);
  out.status = std::move(h.status);
}

// The window of sys over arrays: trajectory-major outputs (CPU) or coalesced
// (a GPU kernel, one thread per trajectory).
template <class Sys>
EnsembleWindow<Sys> ensemble_window(const Sys& sys, const IntegratorOptions& opt,
                                    const EnsembleArrays<double>& arr, int64_t count,
                                    const double* save_times, int ns, bool trajectory_major) {
  EnsembleWindow<Sys> f;
  f.sys = sys;
  f.opt = opt;
  f.arr = arr;
  f.count = count;
  f.save_times = save_times;
  f.n_saves = ns;
  f.trajectory_major = trajectory_major;
  return f;
}

// One call of a window's lane kernels (host/backends/lane_run.h).
inline nholo_lanes::LaneRun lane_run(const void* window, std::size_t window_bytes, Method method,
                                     const int64_t* idx, int64_t n, int64_t launch_steps,
                                     uint8_t* finished) {
  nholo_lanes::LaneRun r{};
  r.window = window;
  r.window_bytes = window_bytes;
  r.method = static_cast<int32_t>(method);
  r.idx = idx;
  r.n = n;
  r.launch_steps = launch_steps;
  r.finished = finished;
  return r;
}

template <class Sys>
class TypedCpuWindow final : public CpuWindow {
 public:
  explicit TypedCpuWindow(const EnsembleWindow<Sys>& f) : f_(f) {}
  bool run(int64_t i, int64_t launch_steps) const override {
    return f_.run_method(i, launch_steps);
  }
  void run_batch(const int64_t* idx, int64_t n, int64_t launch_steps,
                 uint8_t* finished) const override {
    if (!lanes_) {
      CpuWindow::run_batch(idx, n, launch_steps, finished);
      return;
    }
    const nholo_lanes::LaneRun r =
        lane_run(&f_, sizeof f_, f_.opt.method, idx, n, launch_steps, finished);
    lanes_(&r);
  }
  // the lanes integrate every method (kernels/ensemble_lanes.hpp); a null
  // entry: one trajectory at a time
  bool use_lanes(nholo_lanes::LaneEntry entry) override {
    lanes_ = entry;
    return lanes_ != nullptr;
  }

 private:
  EnsembleWindow<Sys> f_;
  nholo_lanes::LaneEntry lanes_ = nullptr;
};

// The FormulationSystem of sys (the hooks hold copies of sys and opt).
template <class Sys>
FormulationSystem formulation_system(const Sys& sys, const IntegratorOptions& opt) {
  static_assert(std::is_trivially_copyable<EnsembleWindow<Sys>>::value,
                "a kernel argument is copied as bytes");
  FormulationSystem fs;
  fs.n = Sys::n;
  fs.m = Sys::m;
  fs.N = Sys::N;
  fs.n_params = Sys::model_type::n_params;
  if constexpr (has_path_residual<Sys>::value) fs.path_residual_index = Sys::path_residual_index;
  fs.tangent_base_size = tangent_base_size<Sys>::value;
  fs.tangent_exponents = tangent_exponents<Sys>::value;
  fs.window_bytes = sizeof(EnsembleWindow<Sys>);
  fs.start = [sys, opt](int64_t count, const double* q0, const double* qd0, const double* l0,
                        const uint8_t* rejected, double t0, HostStates& out) {
    start_host_states(sys, opt, count, q0, qd0, l0, rejected, t0, out);
  };
  fs.window = [sys, opt](void* dst, const EnsembleArrays<double>& arr, int64_t count,
                         const double* save_times, int ns, bool trajectory_major) {
    const EnsembleWindow<Sys> f =
        ensemble_window(sys, opt, arr, count, save_times, ns, trajectory_major);
    std::memcpy(dst, &f, sizeof f);
  };
  fs.cpu_window = [sys, opt](const EnsembleArrays<double>& arr, int64_t count,
                             const double* save_times, int ns) -> std::unique_ptr<CpuWindow> {
    return std::make_unique<TypedCpuWindow<Sys>>(
        ensemble_window(sys, opt, arr, count, save_times, ns, true));
  };
  return fs;
}

// Model's parameters from their values in param_info order.
template <class Model>
typename Model::Params params_of_values(const double* v) {
  double none[1] = {0};
  return Model::make_params(Model::n_params > 0 ? v : none);
}

// fn(Sys{}) for the system of formulation f of Model (the formulations a run
// can build; their types: system_types.hpp); false, fn not called, when Model
// has no such formulation.
template <class Model, class Fn>
bool visit_formulation(const std::string& f, Fn&& fn) {
  const tables::FormulationEntry* e = tables::find_formulation(f);
  if (!e) return false;
  return system_types::with_system_row(e->id, false, [&](auto row) {
    using Row = decltype(row);
    if constexpr (Row::template offered<Model>()) {
      fn(typename Row::template System<Model>{});
      return true;
    } else {
      return false;
    }
  });
}

}  // namespace nholo
