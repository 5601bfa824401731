// nholo/host/analysis/stats.hpp — the text of `nholo stats FILE`: what a result
// file holds (model, ensemble, completeness), the range of the parameters
// varied per trajectory, and per formulation the status counts, the moments
// of the last save (stored, or folded here from a .partial's block moments),
// the model's drift statistic and the Euler–Poisson residual.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "host/io/h5.hpp"

namespace nholo {

// `root`: the root group of the result file at `path` (open_result,
// host/analysis/result_file.hpp); per-trajectory datasets are read `block`
// values at a time (block >= 1).
std::string stats_report(const h5::Group& root, const std::string& path, int64_t block);

// What stats_report says of the per-trajectory results that only some runs
// have (the rows of host/config/trajectory_results.hpp not always present:
// [lyapunov]'s exponents, the Euler–Poisson residual), one line per
// formulation and result, e.g. "udwadia_kalaba: largest Lyapunov exponent:
// mean 0.21, quantiles ..." (the end of a run's log).
std::vector<std::string> optional_result_lines(const h5::Group& root, const std::string& path,
                                               int64_t block);

}  // namespace nholo
