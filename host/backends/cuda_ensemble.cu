// nholo/host/backends/cuda_ensemble.cu — the CUDA device of a run (streams, memory,
// save times, pair reductions, GPU modules), the device queries, the part of
// every ensemble that does not depend on its system (CudaEnsembleCore) and
// the ensemble of a GPU module (ModuleEnsemble). The ensembles of the built-in
// models (CudaEnsemble<Sys>, host/backends/cuda_ensemble_impl.cuh) are instantiated
// per model in the translation units CMakeLists.txt generates.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "host/backends/cuda_ensemble_impl.cuh"

namespace nholo::cuda_backend {

namespace {
std::string version_string(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}
}  // namespace

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the "no driver" error
    return 0;
  }
  return n;
}

std::string describe_devices() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    // the runtime says "insufficient driver" also when there is no driver at all
    if (e == cudaErrorInsufficientDriver) {
      void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
      if (!lib) return "no usable CUDA device (no NVIDIA driver: libcuda.so.1 cannot be loaded)";
      dlclose(lib);
      int drv = 0;
      cudaDriverGetVersion(&drv);
      int rt = 0;
      cudaRuntimeGetVersion(&rt);
      return "no usable CUDA device (the NVIDIA driver supports CUDA " + version_string(drv) +
             ", older than the CUDA runtime " + version_string(rt) + " nholo was built with)";
    }
    return std::string("no usable CUDA device (") + cudaGetErrorName(e) + ": " +
           cudaGetErrorString(e) + ")";
  }
  if (n == 0) return "no CUDA device";
  std::string s;
  for (int d = 0; d < n; ++d) {
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) continue;
    s += (d ? "; " : "") + std::string("GPU ") + std::to_string(d) + ": " + prop.name +
         " (compute " + std::to_string(prop.major) + "." + std::to_string(prop.minor) + ", " +
         std::to_string(prop.totalGlobalMem >> 20) + " MiB)";
  }
  return s;
}

std::string check_only_build() {
#ifdef NHOLO_CUDA_CHECK_ONLY
  return "this nholo was built with -DNHOLO_CUDA_CHECK_ONLY=ON: its GPU code was compiled "
         "unoptimized, only to check that it compiles (scripts/test.sh on a machine without a "
         "GPU), and runs on no GPU; rebuild without that option to run on a GPU";
#else
  return "";
#endif
}

std::unique_ptr<Device> open_device(int gpu) {
  const int n = device_count();
  if (n == 0)
    throw std::runtime_error("backend cuda: " + describe_devices() +
                             "; accepted here: auto, omp, cpp");
  if (const std::string why = check_only_build(); !why.empty())
    throw std::runtime_error("backend cuda: " + why + "; accepted here: auto, omp, cpp");
  if (gpu < 0 || gpu >= n)
    throw std::runtime_error("backend.gpu = " + std::to_string(gpu) + ": there are " +
                             std::to_string(n) + " CUDA devices (" + describe_devices() +
                             "); accepted: 0.." + std::to_string(n - 1));
  return std::make_unique<CudaDevice>(gpu);
}

CudaDevice::CudaDevice(int gpu) {
  check(cudaSetDevice(gpu), "cudaSetDevice");
  cudaDeviceProp prop;
  check(cudaGetDeviceProperties(&prop, gpu), "cudaGetDeviceProperties");
  int drv = 0, rt = 0;
  check(cudaDriverGetVersion(&drv), "cudaDriverGetVersion");
  check(cudaRuntimeGetVersion(&rt), "cudaRuntimeGetVersion");
  info_.backend = Backend::cuda;
  info_.gpu = gpu;
  info_.name = prop.name;
  info_.compute_capability = std::to_string(prop.major) + "." + std::to_string(prop.minor);
  info_.driver_version = version_string(drv);
  info_.runtime_version = version_string(rt);
  info_.memory_bytes = prop.totalGlobalMem;
  check(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking), "cudaStreamCreate");
}

CudaDevice::~CudaDevice() {
  cudaSetDevice(info_.gpu);
  if (compute_) cudaStreamSynchronize(compute_);
  if (copy_) cudaStreamSynchronize(copy_);
  if (times_) cudaFree(times_);
  if (compute_) cudaStreamDestroy(compute_);
  if (copy_) cudaStreamDestroy(copy_);
}

std::size_t CudaDevice::usable_memory() const {
  make_current();
  std::size_t free_b = 0, total_b = 0;
  check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
  return free_b / 10 * 8;  // leave a fifth for the runtime and the kernels' local memory
}

void* CudaDevice::alloc_bytes(std::size_t bytes) {
  make_current();
  void* p = nullptr;
  check(cudaMalloc(&p, bytes), "cudaMalloc");
  return p;
}

void CudaDevice::release(void* p) noexcept {
  cudaSetDevice(info_.gpu);
  cudaFree(p);
}

namespace {
struct FillKernel {
  double* p;
  double v;
  __host__ __device__ void operator()(int64_t i) const { p[i] = v; }
};
}  // namespace

void CudaDevice::fill(double* p, double v, std::size_t n) {
  make_current();
  launch(FillKernel{p, v}, static_cast<int64_t>(n), compute_, "fill");
}

void CudaDevice::to_host(void* dst, const void* src, std::size_t bytes) {
  make_current();
  check(cudaStreamSynchronize(compute_), "cudaStreamSynchronize");
  if (bytes) check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
}

void CudaDevice::set_save_times(const std::vector<double>& t) {
  make_current();
  if (times_) check(cudaFree(times_), "cudaFree");
  times_ = nullptr;
  check(cudaMalloc(reinterpret_cast<void**>(&times_), t.size() * sizeof(double)),
        "cudaMalloc(save times)");
  check(cudaMemcpy(times_, t.data(), t.size() * sizeof(double), cudaMemcpyHostToDevice),
        "cudaMemcpy(save times)");
}

void CudaDevice::pair_distance(const PairDistanceKernel<double>& k, int64_t count) {
  make_current();
  launch(k, count, compute_, "pair distance");
}

void CudaDevice::synchronize() {
  make_current();
  check(cudaStreamSynchronize(compute_), "cudaStreamSynchronize(compute)");
  check(cudaStreamSynchronize(copy_), "cudaStreamSynchronize(copy)");
}

// ---------------------------------------------------------------------------
// CudaEnsembleCore

bool lean_kernels_enabled() {
  const char* v = std::getenv("NHOLO_CUDA_FULL_KERNELS");
  return !(v && *v && std::string(v) != "0");
}

CudaEnsembleCore::CudaEnsembleCore(std::string name, CudaDevice& dev, const SystemShape& shape,
                                   const IntegratorOptions& opt, const EnsembleLayout& layout,
                                   bool lean, CpuWindowMaker host_window)
    : dev_(dev),
      opt_(opt),
      name_(std::move(name)),
      shape_(shape),
      L_(layout),
      host_window_(std::move(host_window)) {
  dev_.make_current();
  const int n = shape_.n, m = shape_.m, N = shape_.N;
  const std::size_t cap = static_cast<std::size_t>(L_.max_count), W = L_.window;
  y_ = DeviceArray(dev_, N * cap);
  t_ = DeviceArray(dev_, cap);
  h_ = DeviceArray(dev_, cap);
  err_ = DeviceArray(dev_, cap);
  ft_ = DeviceArray(dev_, cap);
  steps_ = DeviceArray(dev_, cap);  // int64 in double-sized storage
  rej_ = DeviceArray(dev_, cap);
  status_ = DeviceArray(dev_, (cap + 1) / 2);  // int32
  // the observables: q and qdot always (they feed the statistics), the
  // others when the file gets them
  for (size_t i = 0; i < std::size(tables::kFields); ++i) {
    const tables::FieldEntry& e = tables::kFields[i];
    const auto at = std::find(L_.fields.begin(), L_.fields.end(), e.name);
    if (e.always_computed || at != L_.fields.end())
      outputs_[i] =
          DeviceArray(dev_, W * cap *
                                (at != L_.fields.end() ? L_.components[at - L_.fields.begin()]
                                                       : tables::field_components(e.name, n, m)));
  }
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
    for (cudaEvent_t* e : {&computed_[k], &copied_[k], &started_[k], &copy_started_[k]})
      check(cudaEventCreate(e), "cudaEventCreate");
  }
  if (L_.steps_per_launch > 0) {
    // int32 and int64 arrays in double-sized storage
    save_k_ = DeviceArray(dev_, (cap + 1) / 2);
    interval_start_ = DeviceArray(dev_, cap);
    active_[0] = DeviceArray(dev_, cap);
    active_[1] = DeviceArray(dev_, cap);
    counts_ = DeviceArray(dev_, 2);
    counts_host_ = PinnedArray(2);
    pacer_ = LaunchPacer(L_.steps_per_launch);
    // the lean kernels need the scheduler's lists (a run with events or
    // without a step budget takes the general kernel)
    lean_ = lean && !L_.events;
    if (lean_) general_ = DeviceArray(dev_, cap);
  }
  if (L_.line_fit) fit_ = DeviceArray(dev_, 7 * cap);
  if (L_.per_trajectory_params) params_ = DeviceArray(dev_, shape_.n_params * cap);
  if (L_.observables) {
    observables_ =
        DeviceArray(dev_, (sizeof(ObservableTable) + sizeof(double) - 1) / sizeof(double));
    check(cudaMemcpy(observables_.get(), L_.observables, sizeof(ObservableTable),
                     cudaMemcpyHostToDevice),
          "cudaMemcpy(observables)");
  }
  if (L_.events) {
    event_table_ = DeviceArray(dev_, (sizeof(EventTable) + sizeof(double) - 1) / sizeof(double));
    check(cudaMemcpy(event_table_.get(), L_.events, sizeof(EventTable), cudaMemcpyHostToDevice),
          "cudaMemcpy(events)");
    event_count_ = DeviceArray(dev_, event_counters(L_.events, L_.max_count));
    event_records_ = DeviceArray(dev_, event_record_size(L_.events, L_.max_count, n));
    event_g_ = DeviceArray(dev_, event_end_values(L_.events, L_.max_count));
  }
}

CudaEnsembleCore::~CudaEnsembleCore() {
  cudaStreamSynchronize(dev_.compute());
  cudaStreamSynchronize(dev_.copy());
  for (int k = 0; k < 2; ++k)
    for (cudaEvent_t e : {computed_[k], copied_[k], started_[k], copy_started_[k]})
      if (e) cudaEventDestroy(e);
}

void CudaEnsembleCore::start_slice(int64_t count, const double* q0, const double* qd0,
                                   const double* l0, const double* params, const uint8_t* rejected,
                                   double t0) {
  if (params && !L_.per_trajectory_params)
    throw std::logic_error("start_slice: per-trajectory parameters, but the layout has none");
  dev_.make_current();
  count_ = count;
  slice_params_ = params != nullptr;
  HostStates h;
  host_start(count, q0, qd0, l0, rejected, t0, h);
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
  if (slice_params_) up(params_.get(), params, shape_.n_params * count * sizeof(double));
  if (L_.line_fit)
    launch(LineFitResetKernel{count, fit_.get()}, count, dev_.compute(), "line fit reset");
  if (L_.events) {
    check(cudaMemsetAsync(event_count_.get(), 0,
                          event_counters(L_.events, count) * sizeof(int64_t), dev_.compute()),
          "cudaMemsetAsync(event counts)");
    dev_.fill(event_records_.get(), NAN, event_record_size(L_.events, count, shape_.n));
    dev_.fill(event_g_.get(), NAN, event_end_values(L_.events, count));
  }
  // pageable sources: wait before they go out of scope
  check(cudaStreamSynchronize(dev_.compute()), "cudaStreamSynchronize(start_slice)");
}

void CudaEnsembleCore::run_window(int64_t k0, int ns, int slot) {
  dev_.make_current();
  const int n = shape_.n;
  const int64_t count = count_;
  const cudaStream_t cs = dev_.compute();
  // staging[slot] is free once its previous copy to the host finished
  check(cudaStreamWaitEvent(cs, copied_[slot], 0), "cudaStreamWaitEvent");
  complete_ = true;
  EnsembleArrays<double> arr;
  arr.y = y_.get();
  arr.t = t_.get();
  arr.h = h_.get();
  arr.err_prev = err_.get();
  arr.fail_time = ft_.get();
  arr.steps = reinterpret_cast<int64_t*>(steps_.get());
  arr.rejected = reinterpret_cast<int64_t*>(rej_.get());
  arr.status = reinterpret_cast<int32_t*>(status_.get());
  arr.params = slice_params_ ? params_.get() : nullptr;
  arr.observables =
      L_.observables ? reinterpret_cast<const ObservableTable*>(observables_.get()) : nullptr;
  if (L_.events) {
    arr.events = reinterpret_cast<const EventTable*>(event_table_.get());
    arr.event_count = reinterpret_cast<int64_t*>(event_count_.get());
    arr.event_records = event_records_.get();
    arr.event_g = event_g_.get();
  }
  for (size_t i = 0; i < std::size(tables::kFields); ++i)
    arr.*tables::kFields[i].array = outputs_[i].get();
  check(cudaEventRecord(started_[slot], cs), "cudaEventRecord");
  window_tail_seconds_ = 0;
  const bool integrated = integrate(arr, k0, ns);
  {
    std::lock_guard<std::mutex> lock(times_mutex_);
    tail_seconds_[slot] = window_tail_seconds_;
  }
  if (!integrated) return;
  // reductions: block moments of q and qdot, the model's drift sums
  const std::size_t ms = moments_size(L_.max_count, L_.window, n);
  double* md = moments_dev_[slot].get();
  const int64_t blocks = (count + kStatBlock - 1) / kStatBlock;
  const double* src[2] = {field("q"), field("qdot")};
  for (int fi = 0; fi < 2; ++fi) {
    double* o = md + fi * 5 * ms;
    BlockMomentsKernel<double> bm{src[fi], false,  count,      ns,         n,
                                  o,       o + ms, o + 2 * ms, o + 3 * ms, o + 4 * ms};
    launch(bm, blocks * ns * n, cs, "block moments");
  }
  if (L_.line_fit) {
    LineFitKernel<double> lf{field("q"), false,     count,    ns,
                             n,          L_.fit_x,  L_.fit_y, dev_.save_times() + k0,
                             L_.t_mid,   fit_.get()};
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
  check(cudaEventRecord(copy_started_[slot], cp), "cudaEventRecord");
  for (size_t j = 0; j < L_.fields.size(); ++j)
    check(
        cudaMemcpyAsync(host_[slot][j].get(), staging_[slot][j].get(),
                        count * ns * L_.components[j] * sizeof(double), cudaMemcpyDeviceToHost, cp),
        "cudaMemcpyAsync(fields)");
  // only the blocks of this window: [(b ns + k) n + c] for b < blocks
  for (int a = 0; a < 10; ++a)
    check(cudaMemcpyAsync(moments_host_[slot].get() + a * ms, md + a * ms,
                          blocks * ns * n * sizeof(double), cudaMemcpyDeviceToHost, cp),
          "cudaMemcpyAsync(moments)");
  check(cudaEventRecord(copied_[slot], cp), "cudaEventRecord");
  std::lock_guard<std::mutex> lock(times_mutex_);
  timed_[slot] = true;
}

// The window's integration: launches over the trajectories still active, each
// advancing them by at most L_.steps_per_launch steps (kernels/ensemble.hpp),
// fewer where that many would make the launch long (launch_pacer.hpp: about
// 0.25 s a launch, from the times of the launches before it),
// those that finished dropping out of the next launch (the kernel appends the
// others to the other list), so that a slow trajectory holds no warp of
// finished ones and the host can stop between launches. Without a budget, one
// launch, asynchronous. With lean kernels (lean_), the lean kernel's launches
// first, then the general kernel's over the trajectories it left (those whose
// cache is unusable: none, mostly). False: interrupted (the window is not
// complete).
bool CudaEnsembleCore::integrate(const EnsembleArrays<double>& arr_in, int64_t k0, int ns) {
  const cudaStream_t cs = dev_.compute();
  const int64_t budget = L_.steps_per_launch;
  EnsembleArrays<double> arr = arr_in;
  unsigned long long* counts = reinterpret_cast<unsigned long long*>(counts_.get());
  if (budget > 0) {
    arr.save_k = reinterpret_cast<int32_t*>(save_k_.get());
    arr.interval_start = reinterpret_cast<int64_t*>(interval_start_.get());
    check(cudaMemsetAsync(arr.save_k, 0, count_ * sizeof(int32_t), cs), "cudaMemsetAsync");
    check(cudaMemsetAsync(arr.interval_start, 0xff, count_ * sizeof(int64_t), cs),
          "cudaMemsetAsync");  // -1: not started
    check(cudaMemsetAsync(counts, 0, 2 * sizeof *counts, cs), "cudaMemsetAsync");
  }
  const WindowLaunch all{nullptr, count_, budget, nullptr, counts};
  if (!lean_) return launches(arr, all, k0, ns, false);
  if (!launches(arr, all, k0, ns, true)) return false;
  // counts[1]: the trajectories the lean kernel left (read with the last count)
  const int64_t n_general =
      static_cast<int64_t>(reinterpret_cast<const unsigned long long*>(counts_host_.get())[1]);
  if (n_general == 0) return true;
  const WindowLaunch left{reinterpret_cast<const int64_t*>(general_.get()), n_general, budget,
                          nullptr, counts};
  return launches(arr, left, k0, ns, false);
}

bool CudaEnsembleCore::launches(const EnsembleArrays<double>& arr, WindowLaunch a, int64_t k0,
                                int ns, bool lean) {
  const cudaStream_t cs = dev_.compute();
  const int64_t budget = L_.steps_per_launch;
  unsigned long long* counts = a.n_unfinished;
  const GeneralList general{reinterpret_cast<int64_t*>(general_.get()), counts + 1};
  for (int list = 0; a.n_active > 0; list = 1 - list) {
    if (budget > 0) {
      a.unfinished = reinterpret_cast<int64_t*>(active_[1 - list].get());
      a.launch_steps = pacer_.steps(a.n_active);  // at most budget
      check(cudaMemsetAsync(counts, 0, sizeof *counts, cs), "cudaMemsetAsync");
    }
    const auto launched = std::chrono::steady_clock::now();
    const unsigned grid =
        static_cast<unsigned>((a.n_active + kIntegrateBlock - 1) / kIntegrateBlock);
    launch_integrate(arr, count_, dev_.save_times() + k0, ns, a, grid, cs,
                     lean ? &general : nullptr);
    check(cudaGetLastError(), "integration kernel launch");
    {
      std::lock_guard<std::mutex> lock(times_mutex_);
      ++times_.launches;
    }
    if (budget == 0) break;  // every trajectory ran to the window's end
    unsigned long long* host_counts = reinterpret_cast<unsigned long long*>(counts_host_.get());
    check(cudaMemcpyAsync(host_counts, counts, 2 * sizeof *host_counts, cudaMemcpyDeviceToHost, cs),
          "cudaMemcpyAsync(unfinished count)");
    check(cudaStreamSynchronize(cs), "the integration launch");
    pacer_.record(
        a.n_active, a.launch_steps,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - launched).count());
    a.n_active = static_cast<int64_t>(host_counts[0]);
    a.active = reinterpret_cast<const int64_t*>(active_[1 - list].get());
    if (a.n_active > 0 && L_.stop && L_.stop->load()) {
      complete_ = false;
      return false;
    }
    // the last few (slow) trajectories: on the CPU's cores (window_tail.hpp)
    if (a.n_active > 0 && a.n_active <= L_.cpu_tail && !L_.events && host_window_) {
      if (!finish_tail(arr, a.active, a.n_active, k0, ns)) {
        complete_ = false;
        return false;
      }
      a.n_active = 0;
    }
  }
  return true;
}

// The trajectories idx[0, n_tail) of the window gathered from the device into
// one compact buffer, copied to the host, integrated there by the system's
// CPU window to the window's end, copied back and scattered to their places;
// the rest of the window (reductions, transpositions) then runs as usual.
bool CudaEnsembleCore::finish_tail(const EnsembleArrays<double>& arr, const int64_t* idx,
                                   int64_t n_tail, int64_t k0, int ns) {
  const auto t0 = std::chrono::steady_clock::now();
  const cudaStream_t cs = dev_.compute();
  const TailPlan plan(arr, count_, shape_.N, slice_params_ ? shape_.n_params : 0, ns, shape_.n,
                      shape_.m, n_tail);
  DeviceArray compact(dev_, plan.bytes() / sizeof(double));
  char* dc = reinterpret_cast<char*>(compact.get());
  for (const TailPart& p : plan.parts())
    launch(plan.move(p, dc, idx, false), p.rows * n_tail, cs, "CPU tail: gather");
  std::vector<double> host(plan.bytes() / sizeof(double));
  std::vector<double> times(static_cast<std::size_t>(ns));
  check(cudaMemcpyAsync(host.data(), dc, plan.bytes(), cudaMemcpyDeviceToHost, cs),
        "cudaMemcpyAsync(CPU tail)");
  check(cudaMemcpyAsync(times.data(), dev_.save_times() + k0, ns * sizeof(double),
                        cudaMemcpyDeviceToHost, cs),
        "cudaMemcpyAsync(save times)");
  check(cudaStreamSynchronize(cs), "the CPU tail's gather");
  const EnsembleArrays<double> h = plan.host_arrays(arr, reinterpret_cast<char*>(host.data()));
  const std::unique_ptr<CpuWindow> window = host_window_(h, n_tail, times.data(), ns);
  const bool done = finish_on_host(*window, n_tail, L_.steps_per_launch, L_.host_threads, L_.stop);
  if (done) {
    check(cudaMemcpyAsync(dc, host.data(), plan.bytes(), cudaMemcpyHostToDevice, cs),
          "cudaMemcpyAsync(CPU tail)");
    for (const TailPart& p : plan.parts())
      if (!p.read_only)
        launch(plan.move(p, dc, idx, true), p.rows * n_tail, cs, "CPU tail: scatter");
    // host and compact are released on return
    check(cudaStreamSynchronize(cs), "the CPU tail's scatter");
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  window_tail_seconds_ += seconds;
  std::lock_guard<std::mutex> lock(times_mutex_);
  times_.tail_seconds += seconds;
  times_.tail_trajectories += n_tail;
  return done;
}

// Called from the writer thread: the slot's window is on the host; its
// device time (integration and reductions) and copy time are counted.
void CudaEnsembleCore::wait(int slot) {
  dev_.make_current();
  check(cudaEventSynchronize(copied_[slot]), "the window's integration or copy");
  std::lock_guard<std::mutex> lock(times_mutex_);
  if (!timed_[slot]) return;
  timed_[slot] = false;
  float busy_ms = 0, copy_ms = 0;
  check(cudaEventElapsedTime(&busy_ms, started_[slot], computed_[slot]), "cudaEventElapsedTime");
  check(cudaEventElapsedTime(&copy_ms, copy_started_[slot], copied_[slot]),
        "cudaEventElapsedTime");
  // the events enclose the CPU tail, during which the GPU waited
  times_.busy_seconds += std::max(0.0, 1e-3 * busy_ms - tail_seconds_[slot]);
  times_.copy_seconds += 1e-3 * copy_ms;
}

DeviceTimes CudaEnsembleCore::times() const {
  std::lock_guard<std::mutex> lock(times_mutex_);
  return times_;
}

void CudaEnsembleCore::finish_slice(SliceResults& r) {
  dev_.make_current();
  const int64_t count = count_;
  check(cudaStreamSynchronize(dev_.compute()), "the slice's integration");
  auto down = [](void* dst, const void* src, std::size_t bytes) {
    check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy(results)");
  };
  SliceState st;
  st.arrays.y = y_.get();
  st.arrays.status = reinterpret_cast<int32_t*>(status_.get());
  st.arrays.steps = reinterpret_cast<int64_t*>(steps_.get());
  st.arrays.rejected = reinterpret_cast<int64_t*>(rej_.get());
  st.arrays.fail_time = ft_.get();
  st.count = count;
  st.path_residual_index = shape_.path_residual_index;
  st.tangent_base_size = shape_.tangent_base_size;
  st.tangent_exponents = shape_.tangent_exponents;
  st.arrays.t = t_.get();
  st.arrays.params = slice_params_ ? params_.get() : nullptr;
  st.observables = L_.observables;
  st.n = shape_.n;
  st.to_host = down;
  read_slice_results(st, r);
  r.line_fit.resize(L_.line_fit ? 7 * count : 0);
  if (L_.line_fit) down(r.line_fit.data(), fit_.get(), 7 * count * sizeof(double));
  r.event_count.resize(event_counters(L_.events, count));
  r.event_records.resize(event_record_size(L_.events, count, shape_.n));
  down(r.event_count.data(), event_count_.get(), r.event_count.size() * sizeof(int64_t));
  down(r.event_records.data(), event_records_.get(), r.event_records.size() * sizeof(double));
}

const double* CudaEnsembleCore::field(const std::string& f) const {
  const tables::FieldEntry* e = tables::find_field(f);
  return e ? outputs_[e - tables::kFields].get() : nullptr;
}

// ---------------------------------------------------------------------------
// GPU modules: a model file's integration kernel, compiled by NVRTC
// (host/model_files/plugin.hpp, gpu_module) into a cubin for this device, loaded with the
// runtime's library API (no driver API, no link to libcuda). The module's one
// kernel, `nholo_integrate`, takes the EnsembleWindow<Sys> of the plugin's
// system by value: the plugin writes its bytes (FormulationSystem::window), whose
// layout the module checked against the plugin's when it was compiled.

namespace {

class ModuleEnsemble final : public CudaEnsembleCore {
 public:
  ModuleEnsemble(std::string name, CudaDevice& dev, const FormulationSystem& sys,
                 cudaKernel_t kernel, const IntegratorOptions& opt, const EnsembleLayout& layout)
      : CudaEnsembleCore(std::move(name), dev, shape_of(sys), opt, layout, false, sys.cpu_window),
        sys_(sys),
        kernel_(kernel),
        window_(sys.window_bytes) {}

 protected:
  void host_start(int64_t count, const double* q0, const double* qd0, const double* l0,
                  const uint8_t* rejected, double t0, HostStates& out) override {
    sys_.start(count, q0, qd0, l0, rejected, t0, out);
  }
  void launch_integrate(const EnsembleArrays<double>& arr, int64_t count, const double* save_times,
                        int ns, const WindowLaunch& a, unsigned grid, cudaStream_t cs,
                        const GeneralList* /*lean: a GPU module has no lean kernel*/) override {
    // the argument bytes are copied by the launch: window_ may be reused
    sys_.window(window_.data(), arr, count, save_times, ns, false);
    WindowLaunch launch = a;
    void* args[2] = {window_.data(), &launch};
    check(cudaLaunchKernel(reinterpret_cast<const void*>(kernel_), dim3(grid),
                           dim3(kIntegrateBlock), args, 0, cs),
          "cudaLaunchKernel(GPU module)");
  }

 private:
  static SystemShape shape_of(const FormulationSystem& m) {
    SystemShape s;
    s.n = m.n;
    s.m = m.m;
    s.N = m.N;
    s.n_params = m.n_params;
    s.path_residual_index = m.path_residual_index;
    s.tangent_base_size = m.tangent_base_size;
    s.tangent_exponents = m.tangent_exponents;
    return s;
  }
  FormulationSystem sys_;
  cudaKernel_t kernel_;
  std::vector<unsigned char> window_;
};

}  // namespace

// The module is loaded here, before the run, so that an image the driver
// refuses (a damaged cache entry, another architecture) is found while it can
// still be rebuilt (ModuleLoadError; host/cli/commands.cpp, add_gpu_modules).
void CudaDevice::add_module(const std::string& formulation, const std::string& image) {
  if (image.empty()) throw ModuleLoadError("the GPU module of " + formulation + " is empty");
  make_current();
  // a library stays loaded for the life of the process (its kernel may be
  // launched by ensembles of later runs of the same module)
  static std::map<std::string, cudaKernel_t> loaded;
  const std::string key = std::to_string(info_.gpu) + ":" + image;
  if (const auto k = loaded.find(key); k != loaded.end()) {
    modules_[formulation] = k->second;
    return;
  }
  auto refused = [&](const char* call, cudaError_t e) {
    (void)cudaGetLastError();  // not an error of the context: clear it
    return ModuleLoadError(std::string(call) + " refused the GPU module of " + formulation + " (" +
                           cudaGetErrorName(e) + ": " + cudaGetErrorString(e) + ")");
  };
  cudaLibrary_t lib = nullptr;
  cudaError_t e = cudaLibraryLoadData(&lib, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
  if (e != cudaSuccess) throw refused("the driver (cudaLibraryLoadData)", e);
  cudaKernel_t kernel = nullptr;
  e = cudaLibraryGetKernel(&kernel, lib, "nholo_integrate");
  if (e != cudaSuccess) {
    const ModuleLoadError err = refused("cudaLibraryGetKernel(nholo_integrate)", e);
    (void)cudaLibraryUnload(lib);
    (void)cudaGetLastError();
    throw err;
  }
  loaded[key] = kernel;
  modules_[formulation] = kernel;
}

std::unique_ptr<DeviceEnsemble> CudaDevice::module_ensemble(const std::string& formulation,
                                                            const FormulationSystem& sys,
                                                            const IntegratorOptions& opt,
                                                            const EnsembleLayout& layout) {
  const auto it = modules_.find(formulation);
  if (it == modules_.end()) throw std::logic_error("no GPU module for formulation " + formulation);
  if (!sys.start || !sys.window || sys.window_bytes == 0)
    throw std::logic_error("GPU module of " + formulation + ": the system's hooks are missing");
  make_current();
  return std::make_unique<ModuleEnsemble>(formulation, *this, sys, it->second, opt, layout);
}

// CMakeLists.txt generates one instantiating translation unit per model of
// models/registry.hpp (NHOLO_CUDA_INSTANTIATE_MODEL, cuda_ensemble_impl.cuh).

}  // namespace nholo::cuda_backend
