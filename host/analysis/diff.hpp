// nholo/host/analysis/diff.hpp — `nholo diff A B`: two result files of one
// configuration (e.g. one run on the GPU, one on OpenMP) compared dataset by
// dataset: every dataset of either file (time series, statistics,
// comparisons, initial states, events, statuses).
#pragma once

#include <cstdint>
#include <string>

#include "host/io/h5.hpp"

namespace nholo {

// ra, rb: the root groups of the result files at path_a, path_b (open_result,
// host/analysis/result_file.hpp). True when both files have the same
// datasets, every one agrees to rtol relative to its largest value in b (NaN
// positions equal; residuals against the state's scale, the integrator's
// counts only under rtol 0, strings equal) and every status is the same; the
// report names each dataset compared. Datasets are read `block` values at a
// time (block >= 1).
bool diff_results(const h5::Group& ra, const h5::Group& rb, const std::string& path_a,
                  const std::string& path_b, double rtol, int64_t block, std::string& report);

}  // namespace nholo
