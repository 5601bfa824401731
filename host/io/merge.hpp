// nholo/host/io/merge.hpp — `nholo merge`'s output: one result file from the
// complete shard files of one configuration, with the layout and statistics
// of a single run (the statistics folded from the shards' block moments in
// global block order), as virtual datasets over the shards or, copied, as
// real ones. No model, plugin or device is involved: the configuration and
// the files say everything (docs/cluster.md).
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "host/config/config.hpp"
#include "host/io/h5.hpp"
#include "host/io/result_layout.hpp"
#include "host/io/run_summary.hpp"

namespace nholo {

// Writes out (as out.merging, then renamed) from shards, which are complete,
// sorted by range and cover cfg's ensemble exactly once (merge_command
// checks that); copy: real datasets, else virtual ones referring to each
// shard as its vds_file. Returns the summary of the merged ensemble.
// ConfigError when a shard's status or block moments are not what its
// configuration says. stop (may be null): a signal handler's flag, checked
// between the tiles a --copy merge copies; set, the merge throws h5::Stopped
// and leaves nothing (no OUT, no temporary).
RunSummary merge_shards(const RunConfig& cfg, const std::vector<ShardSource>& shards,
                        const std::string& out, bool copy,
                        const std::atomic<bool>* stop = nullptr);

// A virtual merged file's root attributes naming its shards: the file names
// (relative to the merged file's folder, or absolute), their trajectory
// ranges (begin, end per shard) and their sizes in bytes at the merge.
inline constexpr const char* kMergedShards = "merged_shards";
inline constexpr const char* kMergedShardRanges = "merged_shard_ranges";
inline constexpr const char* kMergedShardBytes = "merged_shard_bytes";

// For a virtual merged file at path (root attribute merge = "virtual"):
// every shard it reads from is there, beside it (or at its absolute name),
// and is the one it was merged from: the same configuration hash, the
// recorded trajectory range and size. Throws std::runtime_error naming the
// first shard that is missing or foreign; a file that is not a virtual
// merge passes.
void check_merged_sources(const h5::Group& root, const std::string& path);

}  // namespace nholo
