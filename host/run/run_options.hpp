// nholo/host/run/run_options.hpp — what a run is asked to do (RunOptions),
// apart from the configuration (RunConfig); what it reports (RunSummary) is
// host/io/run_summary.hpp.
#pragma once

#include <cstdint>
#include <string>

#include "host/io/run_summary.hpp"

namespace nholo {

struct ProgressCounter;  // host/run/progress.hpp
class FieldMemory;       // host/io/field_memory.hpp

struct RunOptions {
  bool quiet = false;
  bool tty = false;
  std::string path;        // the result file PATH (the run writes PATH.partial, PATH.partial.d)
  bool resume = false;     // keep the finished slices' pieces, run the others
  int64_t slice_size = 0;  // > 0: the slice size of the run being resumed
  // A shard: only trajectories [range_begin, range_end) (block-aligned; end
  // < 0: the ensemble's size); its file holds their data under their global
  // indices, the per-block moments and the range (root attributes
  // shard_begin, shard_end), for `nholo merge` (host/io/merge.hpp).
  int64_t range_begin = 0, range_end = -1;
  bool shard = false;  // write a shard file (also when the range is the whole ensemble)
  // where the run's progress is also counted for a reader in another thread
  // (the Python module); nullptr: nowhere
  ProgressCounter* progress = nullptr;
  // where the per-save fields go instead of the pieces and the file (the
  // Python module's results); nullptr: into the file. Not with resume or a
  // shard.
  FieldMemory* memory = nullptr;
};

}  // namespace nholo
