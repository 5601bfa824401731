// nholo/host/run/work_plan.hpp — how a run spread over many processes (`mpirun -n
// N nholo run CONFIG`, host/cli/mpi_run.cpp) cuts the ensemble into work units:
// chunks of whole blocks of 1024 trajectories, each run as a shard
// (`--range BEGIN:END`) into its own shard file, merged at the end like
// `nholo merge` (docs/cluster.md). Plain functions without MPI, so that the
// plan is tested on its own (tests/test_work_plan.cpp); the transport (the
// queue, the messages between ranks) is the command's (host/cli/chunk_queue.hpp,
// mpi_run.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace nholo {

struct RunConfig;  // host/config/config.hpp

struct Chunk {
  int64_t begin = 0, end = 0;  // trajectories [begin, end)
  bool found = false;          // adopted from a shard file (or its .partial) already on disk
  bool complete = false;       // found complete (and no .partial beside it): nothing to run
  bool operator==(const Chunk& o) const { return begin == o.begin && end == o.end; }
};

// A shard file of `output_path` in its folder: OUT.shard-BEGIN-END.h5
// (complete) or OUT.shard-BEGIN-END.h5.partial (interrupted or killed).
struct ShardFile {
  std::string path;  // the shard's result path (without .partial)
  int64_t begin = 0, end = 0;
  bool complete = false, partial = false;
};

// The shard files of output_path found in its folder (sorted by range): the
// files `nholo run --shard/--range` and an MPI run write next to it.
std::vector<ShardFile> find_shard_files(const std::string& output_path);

// Blocks per chunk when none is asked for: about 4 chunks per rank, so that
// the dynamic queue can balance uneven trajectories, at most 1024 blocks
// (2^20 trajectories), at least one block.
int64_t default_chunk_blocks(int64_t size, int ranks);

// The chunks of an ensemble of `size` trajectories: the ranges of the shard
// files found (adopted as they are, so that a run resumed with another number
// of ranks or another chunk size continues them), the rest cut into chunks of
// chunk_blocks blocks. Throws ConfigError naming the files when found ranges
// overlap, are not block-aligned or do not fit the ensemble.
std::vector<Chunk> plan_chunks(int64_t size, int64_t chunk_blocks, const std::vector<ShardFile>& found);

// What a run over `ranks` processes is asked to do.
struct WorkRequest {
  bool resume = false;     // continue the shard files found (run --resume)
  bool overwrite = false;  // discard what is in the way (run --overwrite)
  int64_t chunk_blocks = 0;  // blocks per chunk (0: default_chunk_blocks, or one run per rank)
  bool static_partition = false;  // chunk i to a fixed rank (static_owner), no queue
  int ranks = 1;
};

// What there is to do.
struct WorkPlan {
  std::vector<Chunk> chunks;
  bool complete = false;  // --resume found OUT complete: nothing
};

// The plan of a run writing cfg.output_path (whose folder the caller has
// checked: check_output_folder, host/io/output_path.hpp): OUT, its .partial
// and its shard files checked against req (--resume, --overwrite) and the
// configuration, what --overwrite discards removed, the chunks cut around
// the shard files found. Throws ConfigError naming the file in the way.
WorkPlan make_plan(const RunConfig& cfg, const WorkRequest& req);

// Static partition: the rank that runs chunk i of `chunks` chunks over
// `ranks` ranks (contiguous runs of chunks per rank, in order).
int static_owner(int64_t i, int64_t chunks, int ranks);

}  // namespace nholo
