// nholo/host/cuda_ensemble_impl.cuh — the CUDA backend: a device-resident
// ensemble per formulation, our own kernel launches, reductions on the GPU.
// Included by host/cuda_ensemble.cu and by the per-model translation units
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
#include <stdexcept>
#include <string>
#include <vector>

#include "host/cuda_ensemble.hpp"
#include "kernels/embedded.hpp"
#include "kernels/ensemble.hpp"
#include "kernels/formulations.hpp"
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
constexpr int kIntegrateBlock = 128;
constexpr int kReduceBlock = 256;

template <class F>
__global__ void __launch_bounds__(kReduceBlock) index_kernel(const F f, const int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) f(i);
}

// One trajectory per thread, the method fixed at compile time.
template <class Sys, Method M>
__global__ void __launch_bounds__(kIntegrateBlock) integrate_kernel(const EnsembleWindow<Sys> f) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < f.count) f.template run<M>(i);
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
  void make_current() const { check(cudaSetDevice(info_.gpu), "cudaSetDevice"); }
  cudaStream_t compute() const { return compute_; }
  cudaStream_t copy() const { return copy_; }

 private:
  DeviceInfo info_;
  cudaStream_t compute_ = nullptr, copy_ = nullptr;
  double* times_ = nullptr;
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

template <class Sys>
class CudaEnsemble final : public DeviceEnsemble {
  using S = typename Sys::scalar;
  static_assert(std::is_same<S, double>::value, "the CUDA pipeline moves doubles");
  static constexpr int n = Sys::n, m = Sys::m, N = Sys::N;
  static constexpr int kParams = Sys::model_type::n_params;

 public:
  CudaEnsemble(std::string name, CudaDevice& dev, const Sys& sys, const IntegratorOptions& opt,
               const EnsembleLayout& layout)
      : name_(std::move(name)), dev_(dev), sys_(sys), opt_(opt), L_(layout) {
    dev_.make_current();
    const std::size_t cap = static_cast<std::size_t>(L_.max_count), W = L_.window;
    y_ = DeviceArray(dev_, N * cap);
    t_ = DeviceArray(dev_, cap);
    h_ = DeviceArray(dev_, cap);
    err_ = DeviceArray(dev_, cap);
    ft_ = DeviceArray(dev_, cap);
    steps_ = DeviceArray(dev_, cap);  // int64 in double-sized storage
    rej_ = DeviceArray(dev_, cap);
    status_ = DeviceArray(dev_, (cap + 1) / 2);  // int32
    const OutputSelection& s = L_.sel;
    q_ = DeviceArray(dev_, W * n * cap);
    qd_ = DeviceArray(dev_, W * n * cap);
    if (s.qddot) qdd_ = DeviceArray(dev_, W * n * cap);
    if (s.force_ideal) fi_ = DeviceArray(dev_, W * n * cap);
    if (s.force_nonideal) fni_ = DeviceArray(dev_, W * n * cap);
    if (s.multiplier) mult_ = DeviceArray(dev_, W * m * cap);
    if (s.constraint_residual) res_ = DeviceArray(dev_, W * cap);
    if (s.energy) en_ = DeviceArray(dev_, W * cap);
    const std::size_t ms = moments_size(L_.max_count, L_.window, n);
    for (int k = 0; k < 2; ++k) {
      moments_dev_[k] = DeviceArray(dev_, 10 * ms);
      moments_host_[k] = PinnedArray(10 * ms);
      slots_[k].fields.resize(L_.fields.size());
      for (size_t j = 0; j < L_.fields.size(); ++j) {
        staging_[k].emplace_back(dev_, W * L_.components[j] * cap);
        host_[k].emplace_back(W * L_.components[j] * cap);
        slots_[k].fields[j] = host_[k].back().get();
      }
      for (int f = 0; f < 2; ++f)
        for (int a = 0; a < 5; ++a)
          slots_[k].moments[f][a] = moments_host_[k].get() + (f * 5 + a) * ms;
      check(cudaEventCreateWithFlags(&computed_[k], cudaEventDisableTiming), "cudaEventCreate");
      check(cudaEventCreateWithFlags(&copied_[k], cudaEventDisableTiming), "cudaEventCreate");
    }
    if (L_.line_fit) fit_ = DeviceArray(dev_, 7 * cap);
    if (L_.per_trajectory_params) params_ = DeviceArray(dev_, kParams * cap);
  }
  ~CudaEnsemble() override {
    cudaStreamSynchronize(dev_.compute());
    cudaStreamSynchronize(dev_.copy());
    for (int k = 0; k < 2; ++k) {
      if (computed_[k]) cudaEventDestroy(computed_[k]);
      if (copied_[k]) cudaEventDestroy(copied_[k]);
    }
  }

  const std::string& name() const override { return name_; }

  void start_slice(int64_t count, const double* q0, const double* qd0, const double* l0,
                   const double* params, const uint8_t* rejected, double t0) override {
    if (params && !L_.per_trajectory_params)
      throw std::logic_error("start_slice: per-trajectory parameters, but the layout has none");
    dev_.make_current();
    count_ = count;
    slice_params_ = params != nullptr;
    HostEnsemble<Sys> h;
    h.start_from_states(sys_, count, q0, qd0, l0, rejected, t0, opt_);
    // the previous slice's copies must be done before its buffers are reused
    check(cudaStreamSynchronize(dev_.copy()), "cudaStreamSynchronize(copy)");
    auto up = [&](void* dst, const void* src, std::size_t bytes) {
      check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, dev_.compute()),
            "cudaMemcpyAsync(state)");
    };
    up(y_.get(), h.y.data(), h.y.size() * sizeof(double));
    up(t_.get(), h.t.data(), count * sizeof(double));
    up(h_.get(), h.h.data(), count * sizeof(double));
    up(err_.get(), h.err_prev.data(), count * sizeof(double));
    up(ft_.get(), h.fail_time.data(), count * sizeof(double));
    up(steps_.get(), h.steps.data(), count * sizeof(int64_t));
    up(rej_.get(), h.rejected.data(), count * sizeof(int64_t));
    up(status_.get(), h.status.data(), count * sizeof(int32_t));
    // the slice's parameters, [j count + i] (only the slice's count columns)
    if (slice_params_) up(params_.get(), params, kParams * count * sizeof(double));
    if (L_.line_fit)
      launch(LineFitResetKernel{count, fit_.get()}, count, dev_.compute(), "line fit reset");
    // pageable sources: wait before they go out of scope
    check(cudaStreamSynchronize(dev_.compute()), "cudaStreamSynchronize(start_slice)");
  }

  void run_window(int64_t k0, int ns, int slot) override {
    dev_.make_current();
    const int64_t count = count_;
    const cudaStream_t cs = dev_.compute();
    // staging[slot] is free once its previous copy to the host finished
    check(cudaStreamWaitEvent(cs, copied_[slot], 0), "cudaStreamWaitEvent");
    EnsembleWindow<Sys> f;
    f.sys = sys_;
    f.opt = opt_;
    f.count = count;
    f.save_times = dev_.save_times() + k0;
    f.n_saves = ns;
    f.trajectory_major = false;  // coalesced stores; transposed below
    f.arr.y = y_.get();
    f.arr.t = t_.get();
    f.arr.h = h_.get();
    f.arr.err_prev = err_.get();
    f.arr.fail_time = ft_.get();
    f.arr.steps = reinterpret_cast<int64_t*>(steps_.get());
    f.arr.rejected = reinterpret_cast<int64_t*>(rej_.get());
    f.arr.status = reinterpret_cast<int32_t*>(status_.get());
    f.arr.params = slice_params_ ? params_.get() : nullptr;
    f.arr.q = q_.get();
    f.arr.qdot = qd_.get();
    f.arr.qddot = qdd_.get();
    f.arr.force_ideal = fi_.get();
    f.arr.force_nonideal = fni_.get();
    f.arr.multiplier = mult_.get();
    f.arr.constraint_residual = res_.get();
    f.arr.energy = en_.get();
    const unsigned grid = static_cast<unsigned>((count + kIntegrateBlock - 1) / kIntegrateBlock);
    switch (opt_.method) {
      case Method::rk4:
        integrate_kernel<Sys, Method::rk4><<<grid, kIntegrateBlock, 0, cs>>>(f);
        break;
      case Method::dopri5:
        integrate_kernel<Sys, Method::dopri5><<<grid, kIntegrateBlock, 0, cs>>>(f);
        break;
      case Method::dop853:
        integrate_kernel<Sys, Method::dop853><<<grid, kIntegrateBlock, 0, cs>>>(f);
        break;
    }
    check(cudaGetLastError(), "integration kernel launch");
    // reductions: block moments of q and qdot, the model's drift sums
    const std::size_t ms = moments_size(L_.max_count, L_.window, n);
    double* md = moments_dev_[slot].get();
    const int64_t blocks = (count + kStatBlock - 1) / kStatBlock;
    const double* src[2] = {q_.get(), qd_.get()};
    for (int fi = 0; fi < 2; ++fi) {
      double* o = md + fi * 5 * ms;
      BlockMomentsKernel<double> bm{src[fi], false,  count,      ns,         n,
                                    o,       o + ms, o + 2 * ms, o + 3 * ms, o + 4 * ms};
      launch(bm, blocks * ns * n, cs, "block moments");
    }
    if (L_.line_fit) {
      LineFitKernel<double> lf{q_.get(), false,     count,    ns,
                               n,        L_.fit_x,  L_.fit_y, dev_.save_times() + k0,
                               L_.t_mid, fit_.get()};
      launch(lf, count, cs, "line fit");
    }
    // the requested fields in the file's layout
    for (size_t j = 0; j < L_.fields.size(); ++j) {
      const int nc = L_.components[j];
      TransposeKernel<double> tk{field(L_.fields[j]), staging_[slot][j].get(), count, ns, nc};
      launch(tk, count * ns * nc, cs, "transpose");
    }
    check(cudaEventRecord(computed_[slot], cs), "cudaEventRecord");
    // the copy stream moves the window to its pinned slot
    const cudaStream_t cp = dev_.copy();
    check(cudaStreamWaitEvent(cp, computed_[slot], 0), "cudaStreamWaitEvent");
    for (size_t j = 0; j < L_.fields.size(); ++j)
      check(cudaMemcpyAsync(host_[slot][j].get(), staging_[slot][j].get(),
                            count * ns * L_.components[j] * sizeof(double), cudaMemcpyDeviceToHost,
                            cp),
            "cudaMemcpyAsync(fields)");
    // only the blocks of this window: [(b ns + k) n + c] for b < blocks
    for (int a = 0; a < 10; ++a)
      check(cudaMemcpyAsync(moments_host_[slot].get() + a * ms, md + a * ms,
                            blocks * ns * n * sizeof(double), cudaMemcpyDeviceToHost, cp),
            "cudaMemcpyAsync(moments)");
    check(cudaEventRecord(copied_[slot], cp), "cudaEventRecord");
  }

  // Called from the writer thread.
  void wait(int slot) override {
    dev_.make_current();
    check(cudaEventSynchronize(copied_[slot]), "the window's integration or copy");
  }
  const WindowSlot& slot(int s) const override { return slots_[s]; }
  const double* device_q(bool* trajectory_major) const override {
    *trajectory_major = false;
    return q_.get();
  }
  void finish_slice(SliceResults& r) override {
    dev_.make_current();
    const int64_t count = count_;
    check(cudaStreamSynchronize(dev_.compute()), "the slice's integration");
    r.status.resize(count);
    r.steps.resize(count);
    r.rejected.resize(count);
    r.fail_time.resize(count);
    auto down = [&](void* dst, const void* src, std::size_t bytes) {
      check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy(results)");
    };
    down(r.status.data(), status_.get(), count * sizeof(int32_t));
    down(r.steps.data(), steps_.get(), count * sizeof(int64_t));
    down(r.rejected.data(), rej_.get(), count * sizeof(int64_t));
    down(r.fail_time.data(), ft_.get(), count * sizeof(double));
    r.line_fit.resize(L_.line_fit ? 7 * count : 0);
    if (L_.line_fit) down(r.line_fit.data(), fit_.get(), 7 * count * sizeof(double));
    r.path_residual.clear();
    if constexpr (has_path_residual<Sys>::value) {
      r.path_residual.resize(count);
      down(r.path_residual.data(), y_.get() + Sys::path_residual_index * count,
           count * sizeof(double));
    }
  }

 private:
  const double* field(const std::string& f) const {
    if (f == "q") return q_.get();
    if (f == "qdot") return qd_.get();
    if (f == "qddot") return qdd_.get();
    if (f == "force_ideal") return fi_.get();
    if (f == "force_nonideal") return fni_.get();
    if (f == "multiplier") return mult_.get();
    if (f == "constraint_residual") return res_.get();
    return en_.get();
  }
  std::string name_;
  CudaDevice& dev_;
  Sys sys_;
  IntegratorOptions opt_;
  EnsembleLayout L_;
  int64_t count_ = 0;
  bool slice_params_ = false;  // the current slice has per-trajectory parameters (params_)
  DeviceArray y_, t_, h_, err_, ft_, steps_, rej_, status_, params_;
  DeviceArray q_, qd_, qdd_, fi_, fni_, mult_, res_, en_, fit_;
  std::vector<DeviceArray> staging_[2];
  std::vector<PinnedArray> host_[2];
  DeviceArray moments_dev_[2];
  PinnedArray moments_host_[2];
  WindowSlot slots_[2];
  cudaEvent_t computed_[2] = {nullptr, nullptr}, copied_[2] = {nullptr, nullptr};
};

template <class Sys>
std::unique_ptr<DeviceEnsemble> make_ensemble(const std::string& name, Device& dev, const Sys& sys,
                                              const IntegratorOptions& opt,
                                              const EnsembleLayout& layout) {
  return std::make_unique<CudaEnsemble<Sys>>(name, static_cast<CudaDevice&>(dev), sys, opt, layout);
}

// Explicit instantiations for one model: Udwadia–Kalaba, Lagrange
// multipliers, null space and vakonomic apply to every model (none has
// acceleration-level constraints, which the vakonomic form rejects at compile
// time); conflated only where the model has a conflated Lagrangian (the
// generated file says which, and checks it with has_conflated_lagrangian).
#define NHOLO_CUDA_INSTANTIATE_SYSTEM(Sys)                     \
  template std::unique_ptr<DeviceEnsemble> make_ensemble<Sys>( \
      const std::string&, Device&, const Sys&, const IntegratorOptions&, const EnsembleLayout&);
// Every device ensemble of Model that make_formulation (host/runner.hpp) can
// ask for, conflated and embedded included when the model has them: the
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
