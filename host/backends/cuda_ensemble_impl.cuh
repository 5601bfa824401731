// nholo/host/backends/cuda_ensemble_impl.cuh — the CUDA backend: a device-resident
// ensemble per formulation, our own kernel launches, reductions on the GPU.
// Included by host/backends/cuda_ensemble.cu and by the per-model translation units
// CMakeLists.txt generates (build/generated/cuda_<Model>.cu), compiled with
// `--Werror cross-execution-space-call`, so that a host-only function reached
// from kernels/ or models/ fails the build.
//
// Per formulation and run (allocated once, for the largest slice):
//   state        y[c count + i], t, h, err_prev, fail_time, steps, rejected, status
//   params       with EnsembleLayout::per_trajectory_params: every parameter of
//                every trajectory of the slice, [j count + i], j < n_params
//   outputs      every observable of a window, SoA [(k nc + c) count + i]
//   staging[2]   the requested fields transposed to the file's layout
//   moments[2]   block moments of q and qdot (kernels/reduce.hpp)
//   host slots   pinned, two: the writer thread reads one while the next
//                window is computed and copied into the other
// Streams (the device's): `compute` runs the integration, reductions and
// transpositions; `copy` moves a finished window to its pinned slot once the
// compute stream's event says it is ready, so window w's copy overlaps window
// w+1's integration. Every CUDA call and launch is checked; a failure throws
// DeviceFault, which ends the run with a marked .partial file.
#pragma once

#include <cuda_runtime.h>

#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "host/backends/cuda_ensemble.hpp"
#include "host/backends/formulation_system.hpp"
#include "host/backends/launch_pacer.hpp"
#include "host/backends/window_tail.hpp"
#include "host/config/tables.hpp"
#include "kernels/ensemble.hpp"
#include "kernels/formulations.hpp"
#include "kernels/formulations/embedded.hpp"
#include "kernels/reduce.hpp"
#include "models/registry.hpp"

namespace nholo::cuda_backend {

// Throws DeviceFault naming the call and the CUDA error.
inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    throw DeviceFault(std::string("CUDA: ") + what + " failed: " + cudaGetErrorName(e) + " (" +
                      cudaGetErrorString(e) + ")");
  }
}

// Threads per block of the integration kernels: one trajectory per thread;
// __launch_bounds__ tells ptxas the block size it can plan registers for.
constexpr int kIntegrateBlock = kGpuBlock;
constexpr int kReduceBlock = 256;

template <class F>
__global__ void __launch_bounds__(kReduceBlock) index_kernel(const F f, const int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) f(i);
}

// One trajectory per thread, the method fixed at compile time: thread j runs
// the launch's j-th active trajectory (kernels/ensemble.hpp WindowLaunch).
// Events: the kernel of a run with [[events]] (EnsembleWindow::run).
template <class Sys, Method M, bool Events>
__global__ void __launch_bounds__(kIntegrateBlock)
    integrate_kernel(const EnsembleWindow<Sys> f, const WindowLaunch a) {
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= a.n_active) return;
  const int64_t i = a.active ? a.active[j] : j;
  if (!f.template run<M, Events>(i, a.launch_steps))
    a.unfinished[atomicAdd(a.n_unfinished, 1ull)] = i;
}

// The lean kernel of a system with a checked cache (has_checked_prepare; runs
// without events): integrate_kernel without the code for a trajectory whose
// cache is unusable (for the Udwadia-Kalaba systems of a constant mass
// matrix, the general path with its singular-mass form), which it appends to
// g for integrate_kernel instead (EnsembleWindow::run_part). Fewer registers
// per thread, more warps per SM (docs/BENCHMARKS.md, "Lean kernels").
template <class Sys, Method M>
__global__ void __launch_bounds__(kIntegrateBlock)
    lean_integrate_kernel(const EnsembleWindow<Sys> f, const WindowLaunch a, const GeneralList g) {
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= a.n_active) return;
  const int64_t i = a.active ? a.active[j] : j;
  const LaunchOutcome r = f.template run_part<M, false, true>(i, a.launch_steps);
  if (r == LaunchOutcome::unfinished)
    a.unfinished[atomicAdd(a.n_unfinished, 1ull)] = i;
  else if (r == LaunchOutcome::general)
    g.index[atomicAdd(g.count, 1ull)] = i;
}

// f(i), i in [0, n), on stream s.
template <class F>
void launch(const F& f, int64_t n, cudaStream_t s, const char* what) {
  if (n <= 0) return;
  const int64_t grid = (n + kReduceBlock - 1) / kReduceBlock;
  index_kernel<F><<<static_cast<unsigned>(grid), kReduceBlock, 0, s>>>(f, n);
  check(cudaGetLastError(), what);
}

// The GPU of a run: its streams, the save times, pair reductions.
class CudaDevice final : public Device {
 public:
  explicit CudaDevice(int gpu);
  ~CudaDevice() override;
  const DeviceInfo& info() const override { return info_; }
  std::size_t usable_memory() const override;
  void* alloc_bytes(std::size_t bytes) override;
  void release(void* p) noexcept override;
  void fill(double* p, double v, std::size_t n) override;
  void to_host(void* dst, const void* src, std::size_t bytes) override;
  void set_save_times(const std::vector<double>& times) override;
  const double* save_times() const override { return times_; }
  void pair_distance(const PairDistanceKernel<double>& k, int64_t count) override;
  void synchronize() override;
  void add_module(const std::string& formulation, const std::string& image) override;
  bool has_module(const std::string& formulation) const override {
    return modules_.count(formulation) > 0;
  }
  std::unique_ptr<DeviceEnsemble> module_ensemble(const std::string& formulation,
                                                  const FormulationSystem& sys,
                                                  const IntegratorOptions& opt,
                                                  const EnsembleLayout& layout) override;
  void make_current() const { check(cudaSetDevice(info_.gpu), "cudaSetDevice"); }
  cudaStream_t compute() const { return compute_; }
  cudaStream_t copy() const { return copy_; }

 private:
  DeviceInfo info_;
  cudaStream_t compute_ = nullptr, copy_ = nullptr;
  double* times_ = nullptr;
  std::map<std::string, cudaKernel_t> modules_;  // formulation -> its loaded kernel (add_module)
};

// Pinned host memory.
class PinnedArray {
 public:
  PinnedArray() = default;
  explicit PinnedArray(std::size_t n) : n_(n) {
    if (n)
      check(cudaMallocHost(reinterpret_cast<void**>(&p_), n * sizeof(double)), "cudaMallocHost");
  }
  PinnedArray(PinnedArray&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr; }
  PinnedArray& operator=(PinnedArray&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    return *this;
  }
  PinnedArray(const PinnedArray&) = delete;
  PinnedArray& operator=(const PinnedArray&) = delete;
  ~PinnedArray() {
    if (p_) cudaFreeHost(p_);
  }
  double* get() const { return p_; }

 private:
  double* p_ = nullptr;
  std::size_t n_ = 0;
};

// Everything of an ensemble but its system type: the device arrays, the
// window's reductions, transpositions and copies. Its two hooks are the
// parts that need the type: the slice's initial states (host_start) and the
// integration kernel's launch (launch_integrate). CudaEnsemble<Sys> (below,
// the models built into nholo) implements them with the type; ModuleEnsemble
// (host/backends/cuda_ensemble.cu, a model file's GPU module) with the hooks of a
// FormulationSystem and a kernel loaded from the module. Defined in
// host/backends/cuda_ensemble.cu, compiled once.
struct SystemShape {
  int n = 0, m = 0, N = 0, n_params = 0;
  int path_residual_index = -1;  // -1: the system has no path residual
  int tangent_base_size = -1;    // a tangent system's N0 (kernels/lyapunov.hpp), else -1
  int tangent_exponents = 0;     // and its K
};

// Whether CudaEnsemble<Sys> launches the lean kernels where its system has
// them (the default); NHOLO_CUDA_FULL_KERNELS=1 makes every launch take the
// general kernel, for measuring the two side by side (docs/BENCHMARKS.md).
bool lean_kernels_enabled();

class CudaEnsembleCore : public DeviceEnsemble {
 public:
  // lean: the system has lean kernels (launch_integrate with a GeneralList);
  // host_window: the system's CPU window, for the tails of windows
  // (EnsembleLayout::cpu_tail; host/backends/window_tail.hpp)
  CudaEnsembleCore(std::string name, CudaDevice& dev, const SystemShape& shape,
                   const IntegratorOptions& opt, const EnsembleLayout& layout, bool lean,
                   CpuWindowMaker host_window);
  ~CudaEnsembleCore() override;
  const std::string& name() const override { return name_; }
  void start_slice(int64_t count, const double* q0, const double* qd0, const double* l0,
                   const double* params, const uint8_t* rejected, double t0) override;
  void run_window(int64_t k0, int ns, int slot) override;
  bool window_complete() const override { return complete_; }
  DeviceTimes times() const override;
  void wait(int slot) override;
  const WindowSlot& slot(int s) const override { return slots_[s]; }
  const double* device_q(bool* trajectory_major) const override {
    *trajectory_major = false;
    return field("q");
  }
  void finish_slice(SliceResults& r) override;

 protected:
  // the slice's initial integration state (HostEnsemble<Sys>::start_from_states)
  virtual void host_start(int64_t count, const double* q0, const double* qd0, const double* l0,
                          const uint8_t* rejected, double t0, HostStates& out) = 0;
  // one launch of the integration kernel of method opt_.method over the
  // window (the trajectories of a, grid blocks), on stream cs; lean (only
  // where the constructor was told the system has them): the lean kernel,
  // which appends the trajectories it leaves to the general kernel to *lean
  virtual void launch_integrate(const EnsembleArrays<double>& arr, int64_t count,
                                const double* save_times, int ns, const WindowLaunch& a,
                                unsigned grid, cudaStream_t cs, const GeneralList* lean) = 0;
  CudaDevice& dev_;
  IntegratorOptions opt_;

 private:
  const double* field(const std::string& f) const;
  // the window's integration launches (the scheduler); false: interrupted
  bool integrate(const EnsembleArrays<double>& arr, int64_t k0, int ns);
  // launches from a until every trajectory finished the window (lean: of the
  // lean kernel, those it leaves appended to general_); false: interrupted
  bool launches(const EnsembleArrays<double>& arr, WindowLaunch a, int64_t k0, int ns, bool lean);
  // the window's n_tail trajectories idx (device) to its end on the host's
  // cores (host/backends/window_tail.hpp); false: interrupted
  bool finish_tail(const EnsembleArrays<double>& arr, const int64_t* idx, int64_t n_tail,
                   int64_t k0, int ns);
  std::string name_;
  SystemShape shape_;
  EnsembleLayout L_;
  int64_t count_ = 0;
  bool slice_params_ = false;  // the current slice has per-trajectory parameters (params_)
  DeviceArray y_, t_, h_, err_, ft_, steps_, rej_, status_, params_;
  // the events (EnsembleLayout::events): the table, the slice's counts
  // (int64 in double-sized storage) and records
  DeviceArray event_table_, event_count_, event_records_, event_g_;
  DeviceArray observables_;  // the [lyapunov] observables (EnsembleLayout::observables)
  // per field of tables::kFields (null when not computed), SoA [(k nc + c) count + i]
  DeviceArray outputs_[std::size(tables::kFields)];
  DeviceArray fit_;
  std::vector<DeviceArray> staging_[2];
  std::vector<PinnedArray> host_[2];
  DeviceArray moments_dev_[2];
  PinnedArray moments_host_[2];
  WindowSlot slots_[2];
  cudaEvent_t computed_[2] = {nullptr, nullptr}, copied_[2] = {nullptr, nullptr};
  // the scheduler: window progress, the active trajectories (two lists, one
  // read and one appended to per launch), the counts appended (to the next
  // list, and by a lean launch to general_: the trajectories it leaves to
  // the general kernel)
  DeviceArray save_k_, interval_start_, active_[2], general_, counts_;
  PinnedArray counts_host_;
  // each launch's steps per trajectory, from the times of those before it
  LaunchPacer pacer_;
  bool lean_ = false;  // the system has lean kernels and they are enabled
  CpuWindowMaker host_window_;
  double window_tail_seconds_ = 0;  // the CPU tail's seconds in the current window
  bool complete_ = true;
  // device timing: a window's start (compute stream) and copy start (copy
  // stream), read with computed_ and copied_ once the slot is waited for
  cudaEvent_t started_[2] = {nullptr, nullptr}, copy_started_[2] = {nullptr, nullptr};
  bool timed_[2] = {false, false};  // the slot's events belong to a window not yet timed
  double tail_seconds_[2] = {0, 0};  // the CPU tail's seconds within the slot's window
  mutable std::mutex times_mutex_;
  DeviceTimes times_;
};

// The ensemble of a system compiled into nholo: integrate_kernel<Sys, M>.
template <class Sys>
class CudaEnsemble final : public CudaEnsembleCore {
  using S = typename Sys::scalar;
  static_assert(std::is_same<S, double>::value, "the CUDA pipeline moves doubles");

 public:
  CudaEnsemble(std::string name, CudaDevice& dev, const Sys& sys, const IntegratorOptions& opt,
               const EnsembleLayout& layout, CpuWindowMaker host_window)
      : CudaEnsembleCore(std::move(name), dev, shape(), opt, layout,
                         has_checked_prepare<Sys>::value && lean_kernels_enabled(),
                         std::move(host_window)),
        sys_(sys) {}

  static SystemShape shape() {
    SystemShape s;
    s.n = Sys::n;
    s.m = Sys::m;
    s.N = Sys::N;
    s.n_params = Sys::model_type::n_params;
    if constexpr (has_path_residual<Sys>::value) s.path_residual_index = Sys::path_residual_index;
    s.tangent_base_size = tangent_base_size<Sys>::value;
    s.tangent_exponents = tangent_exponents<Sys>::value;
    return s;
  }

 protected:
  void host_start(int64_t count, const double* q0, const double* qd0, const double* l0,
                  const uint8_t* rejected, double t0, HostStates& out) override {
    start_host_states(sys_, opt_, count, q0, qd0, l0, rejected, t0, out);
  }
  void launch_integrate(const EnsembleArrays<double>& arr, int64_t count, const double* save_times,
                        int ns, const WindowLaunch& a, unsigned grid, cudaStream_t cs,
                        const GeneralList* lean) override {
    const EnsembleWindow<Sys> f = ensemble_window(sys_, opt_, arr, count, save_times, ns, false);
    switch (opt_.method) {
      case Method::rk4: return launch_method<Method::rk4>(f, a, lean, grid, cs);
      case Method::dopri5: return launch_method<Method::dopri5>(f, a, lean, grid, cs);
      case Method::dop853: return launch_method<Method::dop853>(f, a, lean, grid, cs);
    }
  }

  // method M's kernel: the lean one when asked for, else with or without the
  // events' hook
  template <Method M>
  void launch_method(const EnsembleWindow<Sys>& f, const WindowLaunch& a, const GeneralList* lean,
                     unsigned grid, cudaStream_t cs) const {
    if constexpr (has_checked_prepare<Sys>::value) {
      if (lean) {
        lean_integrate_kernel<Sys, M><<<grid, kIntegrateBlock, 0, cs>>>(f, a, *lean);
        return;
      }
    } else {
      (void)lean;  // never asked for: the system has no lean kernel
    }
    if (f.arr.events)
      integrate_kernel<Sys, M, true><<<grid, kIntegrateBlock, 0, cs>>>(f, a);
    else
      integrate_kernel<Sys, M, false><<<grid, kIntegrateBlock, 0, cs>>>(f, a);
  }

 private:
  Sys sys_;
};

template <class Sys>
std::unique_ptr<DeviceEnsemble> make_ensemble(const std::string& name, Device& dev, const Sys& sys,
                                              const IntegratorOptions& opt,
                                              const EnsembleLayout& layout,
                                              const CpuWindowMaker& host_window) {
  return std::make_unique<CudaEnsemble<Sys>>(name, static_cast<CudaDevice&>(dev), sys, opt, layout,
                                             host_window);
}

// Explicit instantiations for one model: Udwadia–Kalaba, Lagrange
// multipliers, null space and vakonomic apply to every model (none has
// acceleration-level constraints, which the vakonomic form rejects at compile
// time); conflated only where the model has a conflated Lagrangian (the
// generated file says which, and checks it with has_conflated_lagrangian).
#define NHOLO_CUDA_INSTANTIATE_SYSTEM(Sys)                                                      \
  template std::unique_ptr<DeviceEnsemble> make_ensemble<Sys>(                                  \
      const std::string&, Device&, const Sys&, const IntegratorOptions&, const EnsembleLayout&, \
      const CpuWindowMaker&);
// Every device ensemble of Model that TypedModelRuntime::make_formulation
// (host/run/typed_model_runtime.hpp) can ask for, conflated and embedded
// included when the model has them: the
// explicit instantiation of this function in the model's generated unit
// (CMakeLists.txt) stores each make_ensemble<Sys>'s address, which makes the
// compiler emit them there.
using AnyFunction = void (*)();
template <class Model>
int instantiate_model_ensembles(AnyFunction* out) {
  int k = 0;
  out[k++] = reinterpret_cast<AnyFunction>(&make_ensemble<UdwadiaKalabaSystem<Model>>);
  out[k++] = reinterpret_cast<AnyFunction>(&make_ensemble<LagrangeMultiplierSystem<Model>>);
  out[k++] = reinterpret_cast<AnyFunction>(&make_ensemble<NullSpaceSystem<Model>>);
  if constexpr (constraint_count<Model>() > 0 && Model::m_acceleration == 0)
    out[k++] = reinterpret_cast<AnyFunction>(&make_ensemble<VakonomicSystem<Model>>);
  if constexpr (has_conflated_lagrangian<Model>::value)
    out[k++] = reinterpret_cast<AnyFunction>(&make_ensemble<UdwadiaKalabaSystem<Conflated<Model>>>);
  if constexpr (has_embedded_constraints<Model>::value)
    out[k++] = reinterpret_cast<AnyFunction>(&make_ensemble<EmbeddedSystem<Model>>);
  return k;
}
#define NHOLO_CUDA_INSTANTIATE_MODEL(Model) \
  template int instantiate_model_ensembles<Model>(AnyFunction*);

}  // namespace nholo::cuda_backend
