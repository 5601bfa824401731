// nholo/host/io/outcome.hpp — stage 8 of a run (host/run/runner.hpp): what the
// finished slices add up to, read back from the pieces in block order (so
// the statistics do not depend on the slices), and the status lines of the
// summary. `nholo merge` folds its shards into the same Outcome
// (host/io/merge.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "host/io/pieces.hpp"
#include "host/io/run_summary.hpp"
#include "host/io/slice_plan.hpp"
#include "host/io/statistics.hpp"

namespace nholo::detail {

// What a run's finished slices add up to (read back from the pieces).
struct Outcome {
  std::vector<FieldStatistics> st_q, st_qd;
  std::vector<Moments> drift_ratio;
  std::vector<int64_t> status_count;  // [f * kStatusCount + status]

  // nothing yet: nf formulations, n_saves saves of n coordinates
  static Outcome empty(int nf, int64_t n_saves, int n);
};

// The outcome of a run from the pieces of its finished slices (plan's
// slices, in block order), and into sum: the initial states' counts, the
// completed trajectories and the steps. has_drift: the model has a drift
// statistic (statistics/<formulation>/drift_ratio in the slice pieces).
// save_moments false: no per-save moments (st_q, st_qd empty), only the
// counts (a stopped run's master with many saves: OutputLayout leaves them
// to `nholo stats`).
Outcome fold_pieces(const PieceDir& pieces, const SlicePlan& plan,
                    const std::vector<std::string>& formulations, int n, bool has_drift,
                    RunSummary& sum, bool save_moments = true);

// sum.status_lines: per formulation "name: ok 1000 max_steps 2" (statuses
// with a count only)
void add_status_lines(const Outcome& out, const std::vector<std::string>& formulations,
                      RunSummary& sum);

}  // namespace nholo::detail
