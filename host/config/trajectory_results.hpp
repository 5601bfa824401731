// nholo/host/config/trajectory_results.hpp — the table of per-trajectory
// results: one value per trajectory and formulation, written once a slice is
// finished (/<formulation>/<name> in the result file, docs/output.md). Each
// row says what the value is, where the backends take it from, when a run
// has it, how the file describes it and how `nholo stats` and `nholo diff`
// read it; SliceResults (host/backends/slice_results.hpp), the result layout
// (host/io/result_layout.cpp), the slice's piece (host/run/piece_writers.hpp),
// stats and diff loop over it. A new per-trajectory result is a row here and
// the kernel code that computes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <string>

#include "host/config/tables.hpp"
#include "kernels/ensemble.hpp"
#include "kernels/status.hpp"

namespace nholo::tables {

// The per-trajectory results, in the order of kTrajectoryResults.
enum class TrajectoryResult {
  status,
  steps,
  rejected,
  fail_time,
  euler_poisson_residual,
  lyapunov
};

// The value's type in memory and in the file.
enum class ResultType { i32, i64, f64 };

// When a formulation's group of a run's file has the result.
enum class ResultPresence {
  always,
  euler_poisson,  // the formulation's has_euler_poisson_residual (the embedded one)
  lyapunov,       // the run has [lyapunov] (a tangent system)
};

// Where a backend finds it once the slice's last window is integrated.
enum class ResultSource {
  integrator,     // the integrator's per-trajectory array (TrajectoryResultEntry::array_*)
  path_residual,  // the state row Sys::path_residual_index (kernels/euler_poisson.hpp)
  lyapunov,       // from the tangent system's rows (kernels/lyapunov.hpp, NaN where it failed)
};

// How `nholo diff` compares two files' values (host/analysis/diff.cpp).
enum class ResultDiff {
  own,    // against the larger file's largest value
  count,  // integer counts: equal under --rtol 0, else shown, not compared
  shown,  // a diagnostic dominated by rounding: shown, never compared
};

// What `nholo stats` prints of it (host/analysis/stats.cpp); the status,
// step and failure columns feed the status line instead.
enum class ResultStats {
  none,
  max_and_mean,  // "<label>: max M, mean X over N trajectories"
  quantiles,     // "<label>: mean, quantiles 5/50/95 %, max over N trajectories"
};

// Per-trajectory arrays of the integrator (EnsembleArrays' status, steps,
// ...); FieldArray (tables.hpp) for those of doubles.
using Int32Array = int32_t* EnsembleArrays<double>::*;
using Int64Array = int64_t* EnsembleArrays<double>::*;

struct TrajectoryResultEntry {
  const char* name;  // the dataset's name in the formulation's group
  TrajectoryResult id;
  ResultType type;
  double fill;  // the file's value before the slice is written
  ResultPresence presence;
  ResultSource source;
  // ResultSource::integrator: the array of EnsembleArrays that holds it (one
  // of the three, by type; the others null)
  Int32Array array_i32;
  Int64Array array_i64;
  FieldArray array_f64;
  const char* long_name;  // the dataset's long_name attribute ("": none)
  const char* units;      // its units attribute ("": none)
  ResultDiff diff;
  ResultStats stats;
  const char* stats_label;  // what stats calls it (ResultStats other than none)
};

inline constexpr double kNotRunFill = static_cast<double>(Status::not_run);
inline constexpr double kNaNFill = std::numeric_limits<double>::quiet_NaN();

// clang-format off
inline constexpr TrajectoryResultEntry kTrajectoryResults[] = {
    {"status", TrajectoryResult::status, ResultType::i32, kNotRunFill, ResultPresence::always,
     ResultSource::integrator, &EnsembleArrays<double>::status, nullptr, nullptr,
     "", "", ResultDiff::own, ResultStats::none, ""},
    {"steps", TrajectoryResult::steps, ResultType::i64, 0, ResultPresence::always,
     ResultSource::integrator, nullptr, &EnsembleArrays<double>::steps, nullptr,
     "", "", ResultDiff::count, ResultStats::none, ""},
    {"rejected", TrajectoryResult::rejected, ResultType::i64, 0, ResultPresence::always,
     ResultSource::integrator, nullptr, &EnsembleArrays<double>::rejected, nullptr,
     "", "", ResultDiff::count, ResultStats::none, ""},
    {"fail_time", TrajectoryResult::fail_time, ResultType::f64, kNaNFill, ResultPresence::always,
     ResultSource::integrator, nullptr, nullptr, &EnsembleArrays<double>::fail_time,
     "", "", ResultDiff::own, ResultStats::none, ""},
    {"euler_poisson_residual", TrajectoryResult::euler_poisson_residual, ResultType::f64, kNaNFill,
     ResultPresence::euler_poisson, ResultSource::path_residual, nullptr, nullptr, nullptr,
     "max over the accepted steps of the Euler-Poisson (Wang & Gao eq 26) residual relative to "
     "its largest term", "",
     ResultDiff::shown, ResultStats::max_and_mean,
     "Euler-Poisson (eq 26) residual, max over each path relative to its largest term"},
    {"lyapunov", TrajectoryResult::lyapunov, ResultType::f64, kNaNFill, ResultPresence::lyapunov,
     ResultSource::lyapunov, nullptr, nullptr, nullptr,
     "largest Lyapunov exponent over the integrated time, (sum of log |delta| at the "
     "renormalisations + log |delta(t)|) / t, from the formulation's tangent flow; NaN where the "
     "trajectory failed", "1/time",
     ResultDiff::own, ResultStats::quantiles, "largest Lyapunov exponent"},
};
// clang-format on

inline constexpr std::size_t kTrajectoryResultCount = std::size(kTrajectoryResults);

constexpr bool trajectory_results_indexed_by_enum() {
  for (std::size_t i = 0; i < kTrajectoryResultCount; ++i)
    if (static_cast<std::size_t>(kTrajectoryResults[i].id) != i) return false;
  return true;
}
static_assert(trajectory_results_indexed_by_enum(), "kTrajectoryResults out of enum order");

// An integrator result names exactly the one array of its type.
constexpr bool integrator_results_name_their_array() {
  for (const auto& r : kTrajectoryResults) {
    const bool integrator = r.source == ResultSource::integrator;
    const bool i32 = r.array_i32 != nullptr, i64 = r.array_i64 != nullptr,
               f64 = r.array_f64 != nullptr;
    if (integrator != (r.type == ResultType::i32   ? i32 && !i64 && !f64
                       : r.type == ResultType::i64 ? i64 && !i32 && !f64
                                                   : f64 && !i32 && !i64))
      return false;
    if (!integrator && (i32 || i64 || f64)) return false;
  }
  return true;
}
static_assert(integrator_results_name_their_array(), "an integrator result without its array");

constexpr const TrajectoryResultEntry& trajectory_result(TrajectoryResult r) {
  return kTrajectoryResults[static_cast<std::size_t>(r)];
}

// nullptr when `name` is no per-trajectory result
inline const TrajectoryResultEntry* find_trajectory_result(const std::string& name) {
  for (const auto& r : kTrajectoryResults)
    if (name == r.name) return &r;
  return nullptr;
}

// Whether formulation `form`'s group of a run with [lyapunov] (or without)
// has result r.
inline bool result_present(const TrajectoryResultEntry& r, const FormulationEntry* form,
                           bool lyapunov) {
  switch (r.presence) {
    case ResultPresence::always: return true;
    case ResultPresence::euler_poisson: return form && form->has_euler_poisson_residual;
    case ResultPresence::lyapunov: return lyapunov;
  }
  return false;
}

}  // namespace nholo::tables
