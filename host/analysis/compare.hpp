// nholo/host/analysis/compare.hpp — the text of `nholo compare FILE`: per pair
// of formulations, the largest distance between their paths over time and
// when it first exceeds the threshold (the file's compare/A__B groups).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "host/io/h5.hpp"

namespace nholo {

// `root`: the root group of the result file at `path` (open_result,
// host/analysis/result_file.hpp); `formulations`: the pairs of these only
// (empty: all; each must be in the file, else ConfigError); per-trajectory
// datasets read `block` values at a time (block >= 1).
std::string compare_report(const h5::Group& root, const std::string& path,
                           const std::vector<std::string>& formulations, int64_t block);

}  // namespace nholo
