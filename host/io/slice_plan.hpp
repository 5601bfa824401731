// nholo/host/io/slice_plan.hpp — stage 1 of a run (host/run/runner.hpp): the
// slice plan, which is also how a result file is cut into pieces (the
// layout, host/io/result_layout.hpp, and `nholo merge` read it). Slices
// [begin, end) of whole kStatBlock blocks, sized from output.memory_budget_mb
// and the device's free memory; windows of saves. Also the small helpers
// every stage of the run and the layout use.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <string>

#include "host/config/config.hpp"
#include "host/config/tables.hpp"
#include "host/io/h5.hpp"
#include "kernels/reduce.hpp"

namespace nholo::detail {

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}
inline hsize_t H(int64_t v) {
  return static_cast<hsize_t>(v);
}

// Values read or written at once by the steps that go over a whole file's
// trajectories (the trajectory scales, `nholo merge` reading its shards), so
// that their memory does not grow with the ensemble.
constexpr int64_t kMergeBlock = int64_t(1) << 16;

// Windows of a run at most, when output.window is not given (RunConfig::
// window_given): each window is a piece file, synced, and a column of
// chunks of every field, so a run of 10^6 saves in windows of 16 would
// write 62,500 pieces and look up as many chunks per field.
constexpr int64_t kAutoWindows = 1024;

// A slice of at least kSliceAlign trajectories is a multiple of it, so that
// the result's per-trajectory datasets that are not fields can be chunked by
// up to that many trajectories (OutputLayout: each slice then writes whole
// chunks, and few of them).
constexpr int64_t kSliceAlign = 64 * kStatBlock;

// The slices and windows of a run: `size` trajectories (the run's range, a
// shard's or the ensemble's) in slices of `slice`, `n_saves` saves in
// windows of `window`.
struct SlicePlan {
  int64_t size = 0, slice = 0;
  int window = 1;
  int64_t n_saves = 0, n_windows = 0;

  int64_t n_slices() const { return (size + slice - 1) / slice; }
  int64_t n_blocks() const { return (size + kStatBlock - 1) / kStatBlock; }
  // slice s: trajectories [slice_begin(s), slice_end(s)) of the range
  int64_t slice_begin(int64_t s) const { return s * slice; }
  int64_t slice_end(int64_t s) const { return std::min(size, slice_begin(s) + slice); }
  // window w: saves [window_begin(w), window_begin(w) + window_saves(w))
  int64_t window_begin(int64_t w) const { return w * window; }
  int64_t window_saves(int64_t w) const {
    return std::min(n_saves, window_begin(w) + window) - window_begin(w);
  }
};

// The slice plan of the whole ensemble. n_params > 0 when parameters vary
// per trajectory: each trajectory of a slice then holds its sampled (varied)
// parameters and all n_params of them in the kernel's layout, on the host
// and, per formulation, on the device. usable_memory: the device's (0: no
// limit but the budget).
inline SlicePlan plan_slices(const RunConfig& cfg, std::size_t usable_memory, int n, int m, int N,
                             int n_params = 0) {
  SlicePlan p;
  p.size = cfg.size;
  p.n_saves = static_cast<int64_t>(cfg.save_times.size());
  int64_t window = cfg.window;
  if (!cfg.window_given)  // many saves: at most kAutoWindows windows
    window = std::max<int64_t>(window, (p.n_saves + kAutoWindows - 1) / kAutoWindows);
  p.window = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(window, p.n_saves)));
  p.n_windows = (p.n_saves + p.window - 1) / p.window;
  const double W = p.window, nf = static_cast<double>(cfg.formulations.size());
  double fields = 0;  // doubles per save of the fields written
  for (const auto& f : cfg.fields)
    fields += tables::field_components(f, n, m, cfg.lyapunov_exponents);
  const double pairs = nf * (nf - 1) / 2;
  // host bytes per trajectory: initial states, per formulation the state, two
  // output slots, q/qdot scratch, fit sums and per-slice results; pair sums
  const double varied = static_cast<double>(cfg.varied_params.size());
  // the events' counts, g and dg/dt at the last step's end and records of a slice
  // ([[events]]) per trajectory: on the device once, on the host three times
  // (in the ensemble, the slice's results and the writer's)
  double events = 0;
  for (const auto& e : cfg.events) events += 24.0 + e.max_records * (1.0 + 2 * n) * 8;
  // a chunk of the result file holds whole trajectories and HDF5 stores at
  // most kMaxChunkBytes in one: one trajectory's records of q must fit
  const uint64_t most_records = h5::kMaxChunkBytes / (8 * static_cast<uint64_t>(std::max(n, 1)));
  for (size_t k = 0; k < cfg.events.size(); ++k)
    if (static_cast<uint64_t>(cfg.events[k].max_records) > most_records)
      throw ConfigError("events[" + std::to_string(k) + "].max_records",
                        "is " + std::to_string(cfg.events[k].max_records) + ": the records of q (" +
                            std::to_string(n) +
                            " coordinates) of one trajectory would exceed HDF5's 4 GiB limit on "
                            "a chunk; the largest value that fits is " +
                            std::to_string(most_records));
  constexpr double kHostEventCopies = 3;
  const double host =
      (2.0 * n + m + N + 2) * 8 + (varied + n_params) * 8 +
      nf * ((N + 8) * 8 + 2 * W * fields * 8 + 2 * W * n * 8 + 7 * 8 + 40 + n_params * 8.0 +
            kHostEventCopies * events) +
      pairs * 16;
  // device bytes (CUDA): state, every observable of a window (SoA), two
  // staging copies in the file layout, fit sums; pair sums
  const double device =
      nf * ((N + 8) * 8 + W * (3.0 * n + m + 2) * 8 + 2 * W * fields * 8 + 7 * 8 + n_params * 8.0 +
            events) +
      pairs * 16;
  // a slice holds at least one block of trajectories, whatever the budget;
  // but the events' records of one block alone must fit it (a large
  // max_records is refused, not allocated)
  const double events_block = nf * kHostEventCopies * events * kStatBlock;
  if (events_block > cfg.memory_budget_mb * 1048576.0) {
    char need[64];
    std::snprintf(need, sizeof need, "%.1f", events_block / 1048576.0);
    throw ConfigError("events", "the records of max_records crossings per trajectory need " +
                                    std::string(need) + " MB for the smallest slice (" +
                                    std::to_string(kStatBlock) +
                                    " trajectories), more than output.memory_budget_mb allows: "
                                    "lower events[k].max_records or raise output.memory_budget_mb");
  }
  int64_t slice = static_cast<int64_t>(cfg.memory_budget_mb * 1048576.0 / host);
  if (usable_memory > 0)
    slice = std::min<int64_t>(slice, static_cast<int64_t>(usable_memory / device));
  slice = std::max<int64_t>(kStatBlock, slice / kStatBlock * kStatBlock);
  if (slice >= kSliceAlign) slice = slice / kSliceAlign * kSliceAlign;
  p.slice = std::min(slice, p.size);
  return p;
}

// The slice plan of trajectories [first, last) of the ensemble (a shard's
// range, or all of it); resumed_slice > 0: the slice size of the run being
// resumed, which a resumed run keeps (ConfigError when this device and
// budget cannot hold it).
inline SlicePlan plan_range(const RunConfig& cfg, std::size_t usable_memory, int n, int m,
                            int n_params, int64_t first, int64_t last, int64_t resumed_slice) {
  SlicePlan plan = plan_slices(cfg, usable_memory, n, m, 2 * n + m, n_params);
  plan.size = last - first;
  plan.slice = std::min(plan.slice, plan.size);
  if (resumed_slice > 0) {
    if (resumed_slice > plan.slice && resumed_slice < plan.size)
      throw ConfigError("--resume",
                        "the run being resumed used slices of " + std::to_string(resumed_slice) +
                            " trajectories; this device and output.memory_budget_mb "
                            "allow " +
                            std::to_string(plan.slice) +
                            " (raise output.memory_budget_mb or resume on a larger device)");
    plan.slice = std::min(resumed_slice, plan.size);
  }
  return plan;
}

}  // namespace nholo::detail
