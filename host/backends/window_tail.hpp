// nholo/host/backends/window_tail.hpp — the tail of a window on the CPU cores:
// when a GPU window's launches leave few trajectories active (the slow ones:
// Appell's particle near its zero-speed point takes ~10^5 steps where its
// neighbours take hundreds), one GPU thread per trajectory steps 10-50x slower
// than a CPU core, so the CUDA backend hands them to the host's cores for the
// rest of the window (backend.cpu_tail, docs/architecture.md "The CPU tail").
//
//   TailPlan plan(arr, count, N, n_params, ns, n, m, n_tail)  what moves, where
//   plan.move(part, compact, idx, scatter)(e), e < rows n_tail  one element gathered
//                                                            (device -> compact) or
//                                                            scattered back
//   EnsembleArrays<double> h = plan.host_arrays(arr, compact) the compact window
//   finish_on_host(window, n_tail, budget, threads, stop)     the CPU's integration
//
// A trajectory i = idx[j] of the device's window (arrays [r count + i], the
// coalesced layout of kernels/ensemble.hpp) becomes trajectory j of a compact
// window of n_tail trajectories: state arrays, progress and parameters
// [r n_tail + j], per-save outputs trajectory-major [j rows + r] (the layout
// of a CPU backend's window, FormulationSystem::cpu_window), so that the
// host runs the same EnsembleWindow code as the CPU backends. The tail runs
// the window from where the launches left it (save_k, interval_start), with
// the same step budget per call, so an interrupt is honoured between calls.
// Events are not moved: a run with [[events]] keeps its tail on the GPU.
#pragma once

#include <stdint.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <thread>
#include <type_traits>
#include <vector>

#include "host/backends/formulation_system.hpp"
#include "kernels/ensemble.hpp"
#include "kernels/execution_space.hpp"

namespace nholo {

// One array of the window: rows x count elements of elem bytes (8 or 4) on
// the device, rows x n_tail at byte offset `offset` of the compact buffer.
struct TailPart {
  char* device = nullptr;
  int rows = 0;
  int elem = 8;
  bool per_save = false;   // an output: trajectory-major in the compact buffer
  bool read_only = false;  // the parameters: gathered, never scattered back
  std::size_t offset = 0;
};

// Element e (< rows n_tail) of a part between the device's array and the
// compact buffer: gather (device -> compact) or scatter (compact -> device).
struct TailMove {
  char* device;
  char* compact;
  const int64_t* idx;  // the tail's trajectories in the device's window
  int64_t count, n_tail;
  int rows, elem;
  bool per_save, scatter;
  NHOLO_HD void operator()(int64_t e) const {
    const int64_t r = e / n_tail, j = e % n_tail;
    char* d = device + (r * count + idx[j]) * elem;
    char* c = compact + (per_save ? j * rows + r : r * n_tail + j) * elem;
    char* to = scatter ? d : c;
    const char* from = scatter ? c : d;
    if (elem == 8)
      memcpy(to, from, 8);  // doubles and int64 alike, as bytes
    else
      memcpy(to, from, 4);
  }
};

// Which arrays of a window move to the host for its tail, and where they lie
// in the compact buffer.
class TailPlan {
 public:
  // arr: the device's window (with save_k and interval_start; events null),
  // count trajectories; N state components, n_params parameters (0: none
  // per trajectory), ns saves, the fields' components from n and m
  TailPlan(const EnsembleArrays<double>& arr, int64_t count, int N, int n_params, int ns, int n,
           int m, int64_t n_tail)
      : count_(count), n_tail_(n_tail), shape_{N, n_params, ns, n, m} {
    EnsembleArrays<double> a = arr;
    visit(a, [&](auto*& p, int rows, int elem, bool per_save, bool read_only) {
      parts_.push_back({reinterpret_cast<char*>(const_cast<void*>(static_cast<const void*>(p))),
                        rows, elem, per_save, read_only, bytes_});
      bytes_ += static_cast<std::size_t>(rows) * elem * n_tail;
      bytes_ = (bytes_ + 7) / 8 * 8;  // each part 8-byte aligned
    });
  }
  const std::vector<TailPart>& parts() const { return parts_; }
  std::size_t bytes() const { return bytes_; }
  int64_t n_tail() const { return n_tail_; }

  // part p's move between the device and `compact` (element e < rows n_tail)
  TailMove move(const TailPart& p, char* compact, const int64_t* idx, bool scatter) const {
    return {p.device, compact + p.offset, idx,    count_, n_tail_, p.rows,
            p.elem,   p.per_save,         scatter};
  }

  // The compact window's arrays: arr's (the constructor's) with each moved
  // array in `compact`, a buffer of bytes() that the parts were gathered to.
  EnsembleArrays<double> host_arrays(const EnsembleArrays<double>& arr, char* compact) const {
    EnsembleArrays<double> h = arr;
    h.events = nullptr;  // not moved (a run with events has no CPU tail)
    h.event_count = nullptr;
    h.event_records = nullptr;
    h.event_g = nullptr;
    std::size_t k = 0;
    visit(h, [&](auto*& p, int, int, bool, bool) {
      using T = std::remove_pointer_t<std::remove_reference_t<decltype(p)>>;
      p = reinterpret_cast<T*>(compact + parts_[k++].offset);
    });
    return h;
  }

 private:
  // f(pointer, rows, elem, per_save, read_only) for each array that moves, in
  // one fixed order; null pointers are skipped, and a pointer to an empty
  // array is set to null (no device pointer is left in a host window)
  template <class F>
  void visit(EnsembleArrays<double>& a, F&& f) const {
    auto each = [&](auto*& p, int rows, int elem, bool per_save, bool read_only = false) {
      if (p && rows <= 0) p = nullptr;
      if (p) f(p, rows, elem, per_save, read_only);
    };
    const Shape& s = shape_;
    each(a.y, s.N, 8, false);
    each(a.t, 1, 8, false);
    each(a.h, 1, 8, false);
    each(a.err_prev, 1, 8, false);
    each(a.fail_time, 1, 8, false);
    each(a.steps, 1, 8, false);
    each(a.rejected, 1, 8, false);
    each(a.status, 1, 4, false);
    each(a.save_k, 1, 4, false);
    each(a.interval_start, 1, 8, false);
    each(a.params, s.n_params, 8, false, true);
    each(a.q, s.ns * s.n, 8, true);
    each(a.qdot, s.ns * s.n, 8, true);
    each(a.qddot, s.ns * s.n, 8, true);
    each(a.force_ideal, s.ns * s.n, 8, true);
    each(a.force_nonideal, s.ns * s.n, 8, true);
    each(a.multiplier, s.ns * s.m, 8, true);
    each(a.constraint_residual, s.ns, 8, true);
    each(a.energy, s.ns, 8, true);
  }
  struct Shape {
    int N, n_params, ns, n, m;
  };
  int64_t count_, n_tail_;
  Shape shape_;
  std::vector<TailPart> parts_;
  std::size_t bytes_ = 0;
};

// The compact window's trajectories [0, n_tail) to the end of their window on
// `threads` host threads, each taking the next trajectory when its last one
// finished (the slow ones differ by orders of magnitude in steps); each call
// of run advances a trajectory by at most `budget` steps (> 0), and between
// calls the threads look at *stop. False: stopped (the window is incomplete).
inline bool finish_on_host(const CpuWindow& window, int64_t n_tail, int64_t budget, int threads,
                           const std::atomic<bool>* stop) {
  std::atomic<int64_t> next{0};
  std::atomic<bool> stopped{false};
  auto interrupted = [&] {
    if (stop && stop->load()) stopped = true;
    return stopped.load();
  };
  auto work = [&] {
    for (int64_t j = next++; j < n_tail && !interrupted(); j = next++)
      while (!window.run(j, budget))
        if (interrupted()) return;
  };
  const int64_t nt = std::max<int64_t>(1, std::min<int64_t>(threads, n_tail));
  std::vector<std::thread> pool;
  for (int64_t k = 1; k < nt; ++k) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  return !stopped;
}

}  // namespace nholo
