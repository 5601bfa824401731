// nholo/host/analysis/stats.hpp — the text of `nholo stats FILE`: what a result
// file holds (model, ensemble, completeness), the range of the parameters
// varied per trajectory, and per formulation the status counts, the moments
// of the last save (stored, or folded here from a .partial's block moments),
// the model's drift statistic and the Euler–Poisson residual.
#pragma once

#include <cstdint>
#include <string>

#include "host/io/h5.hpp"

namespace nholo {

// `root`: the root group of the result file at `path` (open_result,
// host/analysis/result_file.hpp); per-trajectory datasets are read `block`
// values at a time (block >= 1).
std::string stats_report(const h5::Group& root, const std::string& path, int64_t block);

}  // namespace nholo
