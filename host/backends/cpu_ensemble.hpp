// nholo/host/backends/cpu_ensemble.hpp — the CPU backends (OpenMP threads, or serial)
// behind the Device / DeviceEnsemble interface of host/backends/device_ensemble.hpp.
//
// The "device" is host memory: the ensemble functor writes the requested
// fields straight into the host slot in the file's layout (trajectory-major),
// so nothing is copied or transposed; q and qdot, needed by the statistics
// and comparisons even when not written, go to scratch arrays otherwise. The
// reductions of kernels/reduce.hpp run on the same threads.
#pragma once

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "host/backends/backend.hpp"
#include "host/backends/device_ensemble.hpp"
#include "host/backends/formulation_system.hpp"
#include "host/backends/simd_choice.hpp"
#include "host/config/tables.hpp"

namespace nholo {

class CpuDevice final : public Device {
 public:
  // simd: the SIMD lanes the formulations that have lane kernels integrate
  // with (host/backends/simd_choice.hpp; a run resolves backend.simd)
  CpuDevice(Backend b, int threads, SimdIsa simd = SimdIsa::off) : simd_(simd) {
    info_.backend = b;
    info_.threads = b == Backend::cpp ? 1 : (threads > 0 ? threads : omp_get_max_threads());
    info_.name = b == Backend::cpp ? std::string("CPU (serial)")
                                   : "CPU (OpenMP, " + std::to_string(info_.threads) +
                                         (info_.threads == 1 ? " thread)" : " threads)");
    info_.simd = simd_isa_name(simd);
    info_.lanes = simd_lanes(simd);
  }
  SimdIsa simd() const { return simd_; }
  const DeviceInfo& info() const override { return info_; }
  std::size_t usable_memory() const override { return 0; }
  void* alloc_bytes(std::size_t bytes) override {
    void* p = std::malloc(bytes);
    if (!p) throw std::bad_alloc();
    return p;
  }
  void release(void* p) noexcept override { std::free(p); }
  void fill(double* p, double v, std::size_t n) override {
    for (std::size_t i = 0; i < n; ++i) p[i] = v;
  }
  void to_host(void* dst, const void* src, std::size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void set_save_times(const std::vector<double>& t) override { times_ = t; }
  const double* save_times() const override { return times_.data(); }
  void pair_distance(const PairDistanceKernel<double>& k, int64_t count) override {
    for_each_index(info_.backend, info_.threads, count, k);
  }
  void synchronize() override {}
  int threads() const { return info_.threads; }

 private:
  SimdIsa simd_;
  DeviceInfo info_;
  std::vector<double> times_;
};

// One formulation's ensemble on the CPU: the system's hooks
// (host/backends/formulation_system.hpp) integrate, this class schedules,
// reduces and holds the state.
class CpuEnsemble final : public DeviceEnsemble {
 public:
  CpuEnsemble(std::string name, CpuDevice& dev, FormulationSystem sys, const EnsembleLayout& layout)
      : name_(std::move(name)), dev_(dev), sys_(std::move(sys)), L_(layout) {
    const int n = sys_.n, m = sys_.m;
    const std::size_t per_save = static_cast<std::size_t>(L_.max_count) * L_.window;
    for (int s = 0; s < 2; ++s) {
      slot_data_[s].resize(L_.fields.size());
      slots_[s].fields.resize(L_.fields.size());
      for (size_t j = 0; j < L_.fields.size(); ++j) {
        zeroed(slot_data_[s][j], per_save * L_.components[j]);
        slots_[s].fields[j] = slot_data_[s][j].data();
      }
      zeroed(moments_[s], 10 * moments_size(L_.max_count, L_.window, n));
      for (int f = 0; f < 2; ++f)
        for (int a = 0; a < 5; ++a)
          slots_[s].moments[f][a] =
              moments_[s].data() + (f * 5 + a) * moments_size(L_.max_count, L_.window, n);
    }
    // q and qdot feed the statistics even when the file does not get them
    for (size_t i = 0; i < std::size(tables::kFields); ++i) {
      const tables::FieldEntry& e = tables::kFields[i];
      if (e.always_computed && field_index(e.name) < 0)
        zeroed(scratch_[i], per_save * tables::field_components(e.name, n, m));
    }
    if (L_.line_fit) fit_.resize(7 * static_cast<std::size_t>(L_.max_count));
    // failpoint (testing aid): NHOLO_FAILPOINT_DEVICE_FAULT=N makes window N
    // (counted from 0 over the run) fail like a faulting GPU, so that the
    // pipeline's fault handling is tested on machines without one
    if (const char* fp = std::getenv("NHOLO_FAILPOINT_DEVICE_FAULT")) fault_at_ = std::atoll(fp);
  }

  const std::string& name() const override { return name_; }

 private:
  // v sized to `size` zeros, written 8 MiB at a time with a look at the stop
  // flag in between: a window of 10^5 trajectories and many saves is
  // gigabytes, whose first touch took half a minute deaf to signals
  // (SetUpStopped: the run keeps nothing of a set-up).
  // failpoint (testing aid): NHOLO_FAILPOINT_SETUP_PAUSE_MS=N waits N ms
  // before each part, so that a test's small window sets up as slowly as a
  // machine-sized one
  void zeroed(std::vector<double>& v, std::size_t size) const {
    constexpr std::size_t kPart = std::size_t{1} << 20;
    static const long pause_ms = [] {
      const char* e = std::getenv("NHOLO_FAILPOINT_SETUP_PAUSE_MS");
      return e ? std::atol(e) : 0L;
    }();
    v.clear();
    v.reserve(size);
    while (v.size() < size) {
      if (pause_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
      if (L_.stop && L_.stop->load())
        throw SetUpStopped("while the windows' memory was set up");
      v.insert(v.end(), std::min(kPart, size - v.size()), 0.0);
    }
  }

 public:

  void start_slice(int64_t count, const double* q0, const double* qd0, const double* l0,
                   const double* params, const uint8_t* rejected, double t0) override {
    if (params && !L_.per_trajectory_params)
      throw std::logic_error("start_slice: per-trajectory parameters, but the layout has none");
    sys_.start(count, q0, qd0, l0, rejected, t0, ens_);
    count_ = count;
    if (params)
      params_.assign(params, params + static_cast<std::size_t>(sys_.n_params) * count);
    else
      params_.clear();
    if (L_.line_fit)
      for_each_index(dev_.info().backend, dev_.threads(), count,
                     LineFitResetKernel{count, fit_.data()});
    event_count_.assign(event_counters(L_.events, count), 0);
    event_g_.assign(event_end_values(L_.events, count), NAN);
    event_records_.assign(event_record_size(L_.events, count, sys_.n), NAN);
  }

  void run_window(int64_t k0, int ns, int slot) override {
    if (fault_at_ >= 0 && windows_++ == fault_at_)
      throw DeviceFault("injected fault at window " + std::to_string(fault_at_) +
                        " (NHOLO_FAILPOINT_DEVICE_FAULT)");
    const int64_t count = count_;
    const int n = sys_.n;
    const Backend b = dev_.info().backend;
    const int threads = dev_.threads();
    WindowSlot& W = slots_[slot];
    EnsembleArrays<double> arr;
    arr.y = ens_.y.data();
    arr.t = ens_.t.data();
    arr.h = ens_.h.data();
    arr.err_prev = ens_.err_prev.data();
    arr.fail_time = ens_.fail_time.data();
    arr.steps = ens_.steps.data();
    arr.rejected = ens_.rejected.data();
    arr.status = ens_.status.data();
    arr.params = params_.empty() ? nullptr : params_.data();
    arr.observables = L_.observables;
    if (L_.events) {
      arr.events = L_.events;
      arr.event_count = event_count_.data();
      arr.event_records = event_records_.data();
      arr.event_g = event_g_.data();
    }
    // each field into its host slot when the file gets it, else (q and
    // qdot) into scratch, else not computed
    for (size_t i = 0; i < std::size(tables::kFields); ++i) {
      const int j = field_index(tables::kFields[i].name);
      arr.*tables::kFields[i].array = j >= 0                ? W.fields[j]
                                      : scratch_[i].empty() ? nullptr
                                                            : scratch_[i].data();
    }
    if (!integrate(arr, count, dev_.save_times() + k0, ns)) return;
    q_ = arr.q;
    const auto r0 = std::chrono::steady_clock::now();
    // block moments of q and qdot (kernels/reduce.hpp)
    const int64_t blocks = (count + kStatBlock - 1) / kStatBlock;
    const double* src[2] = {arr.q, arr.qdot};
    for (int fi = 0; fi < 2; ++fi) {
      BlockMomentsKernel<double> bm{src[fi],
                                    true,
                                    count,
                                    ns,
                                    n,
                                    W.moments[fi][0],
                                    W.moments[fi][1],
                                    W.moments[fi][2],
                                    W.moments[fi][3],
                                    W.moments[fi][4]};
      for_each_index(b, threads, blocks * ns * n, bm);
    }
    if (L_.line_fit) {
      LineFitKernel<double> lf{arr.q,    true,       count,    ns,
                               n,        L_.fit_x,   L_.fit_y, dev_.save_times() + k0,
                               L_.t_mid, fit_.data()};
      for_each_index(b, threads, count, lf);
    }
    busy_seconds_ += seconds_since(r0);
  }
  bool window_complete() const override { return complete_; }
  DeviceTimes times() const override {
    DeviceTimes t;
    t.busy_seconds = busy_seconds_;
    t.launches = launches_;
    return t;
  }
  void wait(int) override {}
  const WindowSlot& slot(int s) const override { return slots_[s]; }
  const double* device_q(bool* trajectory_major) const override {
    *trajectory_major = true;
    return q_;
  }
  void finish_slice(SliceResults& r) override {
    SliceState st;
    st.arrays.y = ens_.y.data();
    st.arrays.status = ens_.status.data();
    st.arrays.steps = ens_.steps.data();
    st.arrays.rejected = ens_.rejected.data();
    st.arrays.fail_time = ens_.fail_time.data();
    st.count = count_;
    st.path_residual_index = sys_.path_residual_index;
    st.tangent_base_size = sys_.tangent_base_size;
    st.tangent_exponents = sys_.tangent_exponents;
    st.arrays.t = ens_.t.data();
    st.arrays.params = params_.empty() ? nullptr : params_.data();
    st.observables = L_.observables;
    st.n = sys_.n;
    st.to_host = [](void* host, const void* from, std::size_t bytes) {
      std::memcpy(host, from, bytes);
    };
    read_slice_results(st, r);
    r.line_fit.assign(fit_.begin(), fit_.begin() + (L_.line_fit ? 7 * count_ : 0));
    r.event_count = event_count_;
    r.event_records = event_records_;
  }

 private:
  static double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  // Part of a window for the active trajectories, a block of `block` of
  // them per index (1, or kLaneBlock where the window runs in SIMD lanes):
  // finished[j] says whether trajectory active[j] finished the window.
  struct ActivePart {
    const CpuWindow* w;
    const int64_t* active;
    uint8_t* finished;
    int64_t launch_steps;
    int64_t block, end;  // trajectories per index; active[0 .. end) in all
    void operator()(int64_t b) const {
      const int64_t a = b * block, e = std::min(end, a + block);
      w->run_batch(active + a, e - a, launch_steps, finished + a);
    }
  };
  // trajectories a thread integrates together in SIMD lanes, refilling each
  // lane as its trajectory finishes (kernels/ensemble_lanes.hpp)
  static constexpr int64_t kLaneBlock = 64;

  // The window's lane kernels for the device's instruction set, if the
  // system has them and they apply to the window (true: run_batch uses them).
  bool use_lanes(CpuWindow& window) const {
    if (!sys_.lanes || dev_.simd() == SimdIsa::off) return false;
    return window.use_lanes(dev_.simd() == SimdIsa::avx512 ? sys_.lanes->avx512 : sys_.lanes->avx2);
  }

  // The window's integration, scheduled as the CUDA backend does
  // (EnsembleLayout::steps_per_launch): launches over the active trajectories,
  // each advancing them by at most that many steps, those that finished the
  // window dropping out. Each launch runs in portions of trajectories, so that
  // an interrupt (L_.stop) is honoured within about kPortionSeconds: the portion
  // adapts to the measured cost per trajectory. The trajectories are
  // independent, so the results depend on neither. False: interrupted.
  bool integrate(EnsembleArrays<double>& arr, int64_t count, const double* save_times, int ns) {
    const auto c0 = std::chrono::steady_clock::now();
    if (L_.steps_per_launch > 0) {
      save_k_.assign(count, 0);
      interval_start_.assign(count, -1);
      arr.save_k = save_k_.data();
      arr.interval_start = interval_start_.data();
    }
    const std::unique_ptr<CpuWindow> window = sys_.cpu_window(arr, count, save_times, ns);
    const int64_t block = use_lanes(*window) ? kLaneBlock : 1;
    active_.resize(count);
    for (int64_t i = 0; i < count; ++i) active_[i] = i;
    complete_ = true;
    const int64_t per_thread = std::max(dev_.threads(), 1);
    while (!active_.empty()) {
      const int64_t n_active = static_cast<int64_t>(active_.size());
      // every launch starts small and grows 4x per portion while portions
      // are fast: a portion grown over a window's tail (trajectories that
      // finish in a few steps) would otherwise carry into the next launch or
      // window, whose trajectories take up to steps_per_launch steps each,
      // and hold a stop for minutes
      portion_ = 32 * per_thread;
      finished_.assign(active_.size(), 0);
      const ActivePart part{window.get(),        active_.data(), finished_.data(),
                            L_.steps_per_launch, block,          n_active};
      ++launches_;
      for (int64_t j0 = 0; j0 < n_active;) {
        if (L_.stop && L_.stop->load()) {
          complete_ = false;
          busy_seconds_ += seconds_since(c0);
          return false;
        }
        // whole blocks (j0 stays a multiple of block)
        const int64_t j1 = std::min(n_active, j0 + (portion_ + block - 1) / block * block);
        const auto t0 = std::chrono::steady_clock::now();
        for_each_index(dev_.info().backend, dev_.threads(), j0 / block, (j1 + block - 1) / block,
                       part);
        const double dt = seconds_since(t0);
        const double scale = dt > 0 ? std::min(4.0, std::max(0.25, kPortionSeconds / dt)) : 4.0;
        portion_ = std::min<int64_t>(
            int64_t(1) << 22,
            std::max<int64_t>(32 * per_thread, static_cast<int64_t>(portion_ * scale)));
        j0 = j1;
      }
      int64_t kept = 0;
      for (int64_t j = 0; j < n_active; ++j)
        if (!finished_[j]) active_[kept++] = active_[j];
      active_.resize(kept);
    }
    busy_seconds_ += seconds_since(c0);
    return true;
  }

  int field_index(const std::string& f) const {
    for (size_t j = 0; j < L_.fields.size(); ++j)
      if (L_.fields[j] == f) return static_cast<int>(j);
    return -1;
  }
  std::string name_;
  CpuDevice& dev_;
  FormulationSystem sys_;
  EnsembleLayout L_;
  HostStates ens_;
  int64_t count_ = 0;
  std::vector<double> params_;        // per trajectory, [j count + i], when they vary
  std::vector<int64_t> event_count_;  // the slice's events (EnsembleLayout::events)
  std::vector<double> event_records_, event_g_;
  std::vector<std::vector<double>> slot_data_[2];
  std::vector<double> moments_[2];
  WindowSlot slots_[2];
  // per field of tables::kFields: always computed, not written (q, qdot)
  std::vector<double> scratch_[std::size(tables::kFields)];
  std::vector<double> fit_;
  const double* q_ = nullptr;
  int64_t fault_at_ = -1, windows_ = 0;
  bool complete_ = true;
  static constexpr double kPortionSeconds = 0.1;
  int64_t portion_ = 0;  // trajectories per portion of the current launch (adapted)
  // the scheduler's: window progress, the active trajectories, which finished
  std::vector<int32_t> save_k_;
  std::vector<int64_t> interval_start_, active_;
  std::vector<uint8_t> finished_;
  double busy_seconds_ = 0;
  int64_t launches_ = 0;
};

}  // namespace nholo
