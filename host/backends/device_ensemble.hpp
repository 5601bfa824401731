// nholo/host/backends/device_ensemble.hpp — where an ensemble is integrated, as the run
// pipeline (host/run/runner.cpp) sees it: a Device (CPU cores or one CUDA
// GPU) and, per formulation, a DeviceEnsemble whose state lives on it for a
// whole slice. Plain C++: no Thrust, no CUDA types, so every backend shares it.
//
//   expression                                   meaning
//   Device& dev = *open_device(cfg, log)         the backend chosen (auto: the GPU
//                                                when one is visible, else OpenMP)
//   dev.info()                                   backend, device name, versions
//   dev.set_save_times(times)                    the run's output times, copied once
//   DeviceArray a(dev, n); dev.fill(a, v, n)     device memory (host memory on CPU)
//   dev.pair_distance(kernel, count)             kernels/reduce.hpp, on the device
//   dev.to_host(dst, a, n)                       synchronous copy back
//   e->start_slice(count, q0, qd0, l0, params,   a slice's initial states (and, when
//                  rej, t0)                      parameters vary, every trajectory's
//                                                parameters) to the device
//   e->run_window(k0, ns, slot)                  integrate saves [k0, k0+ns); the
//                                                requested fields (file layout) and the
//                                                block moments of q, qdot reach host
//                                                slot `slot` (0 or 1); may return early
//   e->wait(slot)                                until that slot's data is on the host
//   e->slot(s)                                   its host arrays
//   e->device_q(&tm)                             the last window's q on the device
//   e->finish_slice(res)                         per-trajectory results, synchronous
//
// Device memory is allocated once per run (sized for the largest slice) and
// reused across slices and windows. Two host slots per ensemble let the
// writer thread (host/io/output_sink.hpp) write window w while window w+1 runs.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "host/backends/ensemble_data.hpp"
#include "host/backends/slice_results.hpp"
#include "kernels/ensemble.hpp"
#include "kernels/formulations/embedded.hpp"
#include "kernels/reduce.hpp"

namespace nholo {

// Threads per block of a GPU integration kernel (one trajectory per thread):
// the built-in kernels' and a GPU module's __launch_bounds__.
constexpr int kGpuBlock = 128;

class DeviceEnsemble;
struct EnsembleLayout;
struct FormulationSystem;  // host/backends/formulation_system.hpp

// The device failed mid-run (a CUDA error, a kernel fault). The run stops;
// what finished stays in the marked .partial file.
class DeviceFault : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// EnsembleLayout::stop was set while an ensemble set up its memory: nothing
// ran (host/run turns it into Interrupted: the run keeps nothing of it).
class SetUpStopped : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What ran the ensemble (DeviceInfo, host/io/device_info.hpp: for the log and
// the file's root attributes).
class Device {
 public:
  virtual ~Device() = default;
  virtual const DeviceInfo& info() const = 0;
  // Bytes the run may allocate on the device for its slices (0: no device
  // limit beyond the host's memory budget).
  virtual std::size_t usable_memory() const = 0;
  virtual void* alloc_bytes(std::size_t bytes) = 0;
  virtual void release(void* p) noexcept = 0;
  virtual void fill(double* p, double v, std::size_t n) = 0;
  virtual void to_host(void* dst, const void* src, std::size_t bytes) = 0;  // synchronous
  virtual void set_save_times(const std::vector<double>& times) = 0;
  virtual const double* save_times() const = 0;  // on the device
  virtual void pair_distance(const PairDistanceKernel<double>& k, int64_t count) = 0;
  virtual void synchronize() = 0;
  // GPU modules (CUDA backend only): the integration kernel of a model that
  // is not built into nholo (a model file's), compiled by NVRTC for this
  // device (host/model_files/plugin.hpp, gpu_module). add_module loads the module of
  // one formulation before the run (ModuleLoadError: the device refused its
  // image); has_module says whether there is one;
  // module_ensemble makes that formulation's ensemble from it and the
  // system's host-side hooks (ModelRuntime::make_formulation calls it).
  virtual void add_module(const std::string& formulation, const std::string& image) {
    (void)formulation;
    (void)image;
    throw std::runtime_error("GPU modules need the CUDA backend");
  }
  virtual bool has_module(const std::string& formulation) const {
    (void)formulation;
    return false;
  }
  virtual std::unique_ptr<DeviceEnsemble> module_ensemble(const std::string& formulation,
                                                          const FormulationSystem& sys,
                                                          const IntegratorOptions& opt,
                                                          const EnsembleLayout& layout);
};

// A device could not load a GPU module's image (Device::add_module): the
// image is damaged or not for this device. A cached module is then rebuilt
// once (host/cli/commands.cpp, add_gpu_modules).
struct ModuleLoadError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Device memory owned by the holder.
class DeviceArray {
 public:
  DeviceArray() = default;
  DeviceArray(Device& d, std::size_t n) : dev_(&d), n_(n) {
    p_ = static_cast<double*>(n ? d.alloc_bytes(n * sizeof(double)) : nullptr);
  }
  DeviceArray(DeviceArray&& o) noexcept : dev_(o.dev_), p_(o.p_), n_(o.n_) { o.p_ = nullptr; }
  DeviceArray& operator=(DeviceArray&& o) noexcept {
    if (this != &o) {
      reset();
      dev_ = o.dev_;
      p_ = o.p_;
      n_ = o.n_;
      o.p_ = nullptr;
    }
    return *this;
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() { reset(); }
  double* get() const { return p_; }
  std::size_t size() const { return n_; }

 private:
  void reset() {
    if (p_ && dev_) dev_->release(p_);
    p_ = nullptr;
  }
  Device* dev_ = nullptr;
  double* p_ = nullptr;
  std::size_t n_ = 0;
};

// What an ensemble computes and hands to the host, fixed for the run.
struct EnsembleLayout {
  int64_t max_count = 0;  // slice capacity (trajectories)
  int window = 1;         // saves per window (the last may be shorter)
  // fields handed to the host, file layout (the ensembles compute these and
  // those of host/config/tables.hpp kFields that are always_computed)
  std::vector<std::string> fields;
  std::vector<int> components;  // per field: n, m or 1
  // a model's drift statistic (kernels/reduce.hpp LineFitKernel)
  bool line_fit = false;
  int fit_x = 0, fit_y = 0;
  double t_mid = 0;
  // parameters vary per trajectory: start_slice receives them (the device
  // holds n_params values per trajectory of the slice)
  bool per_trajectory_params = false;
  // steps a launch advances a trajectory at most (backend.steps_per_launch;
  // 0: a whole window per launch): a window is integrated in launches over
  // its active trajectories, those that finished dropping out, so that no
  // trajectory holds the others' threads (kernels/ensemble.hpp)
  int64_t steps_per_launch = 0;
  // the CUDA backend's CPU tail (backend.cpu_tail, host/backends/window_tail.hpp):
  // when a launch leaves at most this many trajectories of a window active
  // (and more than none), the host's cores finish them on host_threads
  // threads; 0: never (needs steps_per_launch > 0 and a run without events)
  int64_t cpu_tail = 0;
  int host_threads = 1;
  // set asynchronously (an interrupt): a backend stops between launches and
  // portions of them (the window is then not complete)
  const std::atomic<bool>* stop = nullptr;
  // the run's events ([[events]], kernels/event_program.hpp; null: none),
  // owned by the run: each ensemble counts and records them for its slice
  const EventTable* events = nullptr;
  // the run's [lyapunov] observables (kernels/event_program.hpp; null: none),
  // owned by the run: a tangent system's ensemble writes their exponents
  const ObservableTable* observables = nullptr;
};

// Per slice: one value per event and trajectory [e * count + i] (the
// events' counts), and the records
// (t, q, qd) per trajectory (kernels/trajectory_events.hpp), as sized for a
// table.
inline std::size_t per_event_and_trajectory(const EventTable* ev, int64_t count) {
  return ev ? static_cast<std::size_t>(ev->n_events) * count : 0;
}
// the events' counters: crossings, then undersampled steps (two per event
// and trajectory: [e * count + i], [(n_events + e) * count + i],
// kernels/trajectory_events.hpp)
inline std::size_t event_counters(const EventTable* ev, int64_t count) {
  return 2 * per_event_and_trajectory(ev, count);
}
// the events' g and dg/dt at each trajectory's last step end (two values per
// event and trajectory, kernels/trajectory_events.hpp)
inline std::size_t event_end_values(const EventTable* ev, int64_t count) {
  return 2 * per_event_and_trajectory(ev, count);
}
inline std::size_t event_record_size(const EventTable* ev, int64_t count, int n) {
  return ev ? static_cast<std::size_t>(ev->records_per_trajectory) * count * (1 + 2 * n) : 0;
}

// Where an ensemble's time went, for the timing line and the file's root
// attributes: the device busy integrating and reducing (on a GPU from CUDA
// events around the kernels, on the CPU the wall time of those loops), copying
// results to the host (GPU), and the number of integration launches; the
// CUDA backend's CPU tail: the host's seconds finishing windows' last
// trajectories (not counted as busy: the GPU waits) and how many it finished.
struct DeviceTimes {
  double busy_seconds = 0, copy_seconds = 0;
  int64_t launches = 0;
  double tail_seconds = 0;
  int64_t tail_trajectories = 0;
};

// One window's results on the host.
struct WindowSlot {
  std::vector<double*> fields;  // as EnsembleLayout::fields: [(i ns + k) nc + c]
  // block moments of q (0) and qdot (1): count, mean, M2, min, max, each
  // [(b ns + k) n + c] for the slice's blocks b
  double* moments[2][5] = {};
};

class DeviceEnsemble {
 public:
  virtual ~DeviceEnsemble() = default;
  virtual const std::string& name() const = 0;
  // Initial states, row-major host arrays [i n + c], [i m + l]; params: null
  // (every trajectory has the system's parameters) or, when the layout says
  // per_trajectory_params, every parameter of every trajectory,
  // params[j * count + i] for j < Model::n_params (kernels/ensemble.hpp);
  // rejected[i] != 0: not integrated (status rejected, or singular). The
  // arrays are copied: they need not outlive the call.
  virtual void start_slice(int64_t count, const double* q0, const double* qd0, const double* l0,
                           const double* params, const uint8_t* rejected, double t0) = 0;
  virtual void run_window(int64_t k0, int ns, int slot) = 0;
  // false when the last run_window stopped early because EnsembleLayout::stop
  // was set: its outputs and the slice's state are unusable (not_run)
  virtual bool window_complete() const { return true; }
  // accumulated over the run so far (complete once the last window was waited for)
  virtual DeviceTimes times() const { return {}; }
  virtual void wait(int slot) = 0;
  virtual const WindowSlot& slot(int s) const = 0;
  virtual const double* device_q(bool* trajectory_major) const = 0;
  virtual void finish_slice(SliceResults& out) = 0;
};

// A slice's initial integration state on the host, SoA (HostEnsemble's arrays).
struct HostStates {
  std::vector<double> y, t, h, err_prev, fail_time;
  std::vector<int64_t> steps, rejected;
  std::vector<int32_t> status;
};

inline std::unique_ptr<DeviceEnsemble> Device::module_ensemble(const std::string& formulation,
                                                               const FormulationSystem& sys,
                                                               const IntegratorOptions& opt,
                                                               const EnsembleLayout& layout) {
  (void)sys;
  (void)opt;
  (void)layout;
  throw std::runtime_error("formulation " + formulation + ": GPU modules need the CUDA backend");
}

// Moments arrays per slot: 2 fields x 5 quantities x blocks x window x n.
inline std::size_t moments_size(int64_t max_count, int window, int n) {
  const int64_t blocks = (max_count + kStatBlock - 1) / kStatBlock;
  return static_cast<std::size_t>(blocks) * window * n;
}

}  // namespace nholo
