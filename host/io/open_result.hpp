// nholo/host/io/open_result.hpp — an nholo result file opened for reading
// (complete, a .partial, or a shard), or an error that says why it is not
// one: what the readers of analysis/ and a run's --resume decision
// (io/output_file.hpp) open a result with.
#pragma once

#include <cstdint>
#include <string>

#include "host/config/config.hpp"
#include "host/io/h5.hpp"

namespace nholo {

// The largest ensemble_size a result file may claim: what a run accepts.
constexpr int64_t kMaxReadableEnsemble = kMaxEnsembleSize;

// An nholo result file (complete or .partial), or an error that says why not;
// a virtual merged file only with every shard it reads from beside it and
// the one it was merged from (check_merged_sources, host/io/merge.hpp).
h5::File open_result(const std::string& path);

}  // namespace nholo
