// nholo/host/config/trajectory_results.hpp — the table of per-trajectory
// results: one value (or one per Lyapunov exponent) per trajectory and
// formulation, written once a slice is
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
#include "kernels/lyapunov.hpp"
#include "kernels/status.hpp"

namespace nholo::tables {

// The per-trajectory results, in the order of kTrajectoryResults.
enum class TrajectoryResult {
  status,
  steps,
  rejected,
  fail_time,
  euler_poisson_residual,
  lyapunov,
  lyapunov_spectrum,
  lyapunov_sum,
  kaplan_yorke,
  lyapunov_observed
};

// The value's type in memory and in the file.
enum class ResultType { i32, i64, f64 };

// When a formulation's group of a run's file has the result.
enum class ResultPresence {
  always,
  euler_poisson,  // the formulation's has_euler_poisson_residual (the embedded one)
  lyapunov,       // the run has [lyapunov] (a tangent system)
  spectrum,       // the run's [lyapunov] has exponents > 1
  observed,       // the run's [lyapunov] has observables
};

// How many values a trajectory has: the dataset's second dimension.
enum class ResultWidth {
  one,        // one: a dataset of shape (trajectories)
  exponents,  // one per exponent of [lyapunov]: (trajectories, exponents)
};

// Where a backend finds it once the slice's last window is integrated.
enum class ResultSource {
  integrator,     // the integrator's per-trajectory array (TrajectoryResultEntry::array_*)
  path_residual,  // the state row Sys::path_residual_index (kernels/euler_poisson.hpp)
  tangent,        // from the tangent system's final rows (TrajectoryResultEntry::from_tangent,
                  // kernels/lyapunov.hpp; NaN where the trajectory failed)
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
  column_means,  // "<label>: means m1, m2, ... over N trajectories" (ResultWidth::exponents)
};

// Per-trajectory arrays of the integrator (EnsembleArrays' status, steps,
// ...); FieldArray (tables.hpp) for those of doubles.
using Int32Array = int32_t* EnsembleArrays<double>::*;
using Int64Array = int64_t* EnsembleArrays<double>::*;
// ResultSource::tangent: trajectory i's values (its row's width of them)
// from the slice's final tangent rows
using TangentResult = void (*)(const TangentRows& rows, int64_t i, double* out);

struct TrajectoryResultEntry {
  const char* name;  // the dataset's name in the formulation's group
  TrajectoryResult id;
  ResultType type;
  double fill;  // the file's value before the slice is written
  ResultPresence presence;
  ResultWidth width;
  ResultSource source;
  // ResultSource::integrator: the array of EnsembleArrays that holds it (one
  // of the three, by type; the others null)
  Int32Array array_i32;
  Int64Array array_i64;
  FieldArray array_f64;
  TangentResult from_tangent;  // ResultSource::tangent: the kernel's reader (else null)
  const char* long_name;  // the dataset's long_name attribute ("": none)
  const char* units;      // its units attribute ("": none)
  ResultDiff diff;
  ResultStats stats;
  const char* stats_label;  // what stats calls it (ResultStats other than none)
};

// the most exponents a run computes ([lyapunov] exponents)
inline constexpr int kMaxLyapunovExponents = kMaxTangentExponents;

inline constexpr double kNotRunFill = static_cast<double>(Status::not_run);
inline constexpr double kNaNFill = std::numeric_limits<double>::quiet_NaN();

// clang-format off
inline constexpr TrajectoryResultEntry kTrajectoryResults[] = {
    {"status", TrajectoryResult::status, ResultType::i32, kNotRunFill, ResultPresence::always,
     ResultWidth::one, ResultSource::integrator, &EnsembleArrays<double>::status, nullptr, nullptr, nullptr,
     "", "", ResultDiff::own, ResultStats::none, ""},
    {"steps", TrajectoryResult::steps, ResultType::i64, 0, ResultPresence::always,
     ResultWidth::one, ResultSource::integrator, nullptr, &EnsembleArrays<double>::steps, nullptr, nullptr,
     "", "", ResultDiff::count, ResultStats::none, ""},
    {"rejected", TrajectoryResult::rejected, ResultType::i64, 0, ResultPresence::always,
     ResultWidth::one, ResultSource::integrator, nullptr, &EnsembleArrays<double>::rejected, nullptr, nullptr,
     "", "", ResultDiff::count, ResultStats::none, ""},
    {"fail_time", TrajectoryResult::fail_time, ResultType::f64, kNaNFill, ResultPresence::always,
     ResultWidth::one, ResultSource::integrator, nullptr, nullptr, &EnsembleArrays<double>::fail_time,
     nullptr, "", "", ResultDiff::own, ResultStats::none, ""},
    {"euler_poisson_residual", TrajectoryResult::euler_poisson_residual, ResultType::f64, kNaNFill,
     ResultPresence::euler_poisson, ResultWidth::one, ResultSource::path_residual, nullptr,
     nullptr, nullptr, nullptr,
     "max over the accepted steps of the Euler-Poisson (Wang & Gao eq 26) residual relative to "
     "its largest term", "",
     ResultDiff::shown, ResultStats::max_and_mean,
     "Euler-Poisson (eq 26) residual, max over each path relative to its largest term"},
    {"lyapunov", TrajectoryResult::lyapunov, ResultType::f64, kNaNFill, ResultPresence::lyapunov,
     ResultWidth::one, ResultSource::tangent, nullptr, nullptr, nullptr, &largest_exponent_of_states,
     "largest Lyapunov exponent over the integrated time, (sum of log |delta| at the "
     "renormalisations + log |delta(t)|) / t, from the formulation's tangent flow; NaN where the "
     "trajectory failed", "1/time",
     ResultDiff::own, ResultStats::quantiles, "largest Lyapunov exponent"},
    {"lyapunov_spectrum", TrajectoryResult::lyapunov_spectrum, ResultType::f64, kNaNFill,
     ResultPresence::spectrum, ResultWidth::exponents, ResultSource::tangent, nullptr, nullptr,
     nullptr, &spectrum_of_states,
     "the largest Lyapunov exponents over the integrated time, (sum of log r_j at the "
     "reorthonormalisations + log r_j(t)) / t, r_j the diagonal of the QR factorisation of the "
     "tangent vectors (Benettin); NaN where the trajectory failed", "1/time",
     ResultDiff::own, ResultStats::column_means, "Lyapunov spectrum"},
    {"lyapunov_sum", TrajectoryResult::lyapunov_sum, ResultType::f64, kNaNFill,
     ResultPresence::spectrum, ResultWidth::one, ResultSource::tangent, nullptr, nullptr, nullptr,
     &spectrum_sum_of_states,
     "sum of the computed Lyapunov exponents (of all of them: the mean phase-space contraction "
     "rate, the divergence of the flow averaged over the integrated time)", "1/time",
     ResultDiff::own, ResultStats::quantiles, "sum of the Lyapunov exponents"},
    {"kaplan_yorke", TrajectoryResult::kaplan_yorke, ResultType::f64, kNaNFill,
     ResultPresence::spectrum, ResultWidth::one, ResultSource::tangent, nullptr, nullptr, nullptr,
     &kaplan_yorke_of_states,
     "Kaplan-Yorke dimension j + (lambda_1 + ... + lambda_j) / |lambda_(j+1)| of the computed "
     "exponents; NaN where their partial sums are all >= 0 and more exist", "",
     ResultDiff::own, ResultStats::quantiles, "Kaplan-Yorke dimension"},
    {"lyapunov_observed", TrajectoryResult::lyapunov_observed, ResultType::f64, kNaNFill,
     ResultPresence::observed, ResultWidth::one, ResultSource::tangent, nullptr, nullptr,
     nullptr, &observed_exponent_of_states,
     "largest Lyapunov exponent in the norm of the [lyapunov] observables h, (sum of log "
     "|delta| at the renormalisations + log |dh/dy delta(t)|) / t; NaN where the trajectory "
     "failed or where the observed part of the tangent vector fell to rounding", "1/time",
     ResultDiff::own, ResultStats::quantiles, "largest Lyapunov exponent of the observables"},
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
    // (a tangent result's reader, a function's address, is not compared with
    // null here: under the sanitizers GCC does not fold it; the test of the
    // table checks it)
    if (r.width != ResultWidth::one &&
        (r.type != ResultType::f64 || r.source != ResultSource::tangent))
      return false;
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

// Whether formulation `form`'s group of a run with [lyapunov] exponents =
// `exponents` (0: no [lyapunov]) and observables (or none) has result r.
inline bool result_present(const TrajectoryResultEntry& r, const FormulationEntry* form,
                           int exponents, bool observables = false) {
  switch (r.presence) {
    case ResultPresence::always: return true;
    case ResultPresence::euler_poisson: return form && form->has_euler_poisson_residual;
    case ResultPresence::lyapunov: return exponents > 0;
    case ResultPresence::spectrum: return exponents > 1;
    case ResultPresence::observed: return exponents > 0 && observables;
  }
  return false;
}

// How many values per trajectory result r has in a run with [lyapunov]
// exponents = `exponents`.
inline int result_width(const TrajectoryResultEntry& r, int exponents) {
  return r.width == ResultWidth::exponents ? exponents : 1;
}

}  // namespace nholo::tables
