// nholo/host/run/work_plan.hpp — how a run spread over many processes (`mpirun -n
// N nholo run CONFIG`, host/cli/mpi_run.cpp) cuts the ensemble into work units:
// parcels of whole blocks of 1024 trajectories, each run as a shard
// (`--range BEGIN:END`) into its own shard file, merged at the end like
// `nholo merge` (docs/cluster.md). Plain functions without MPI, so that the
// plan is tested on its own (tests/test_work_plan.cpp); the transport (the
// queue, the messages between ranks) is the command's (host/cli/parcel_queue.hpp,
// mpi_run.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace nholo {

struct RunConfig;  // host/config/config.hpp

struct Parcel {
  int64_t begin = 0, end = 0;  // trajectories [begin, end)
  bool found = false;          // adopted from a shard file (or its .partial) already on disk
  bool complete = false;       // found complete (and no .partial beside it): nothing to run
  bool operator==(const Parcel& o) const { return begin == o.begin && end == o.end; }
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

// Blocks per parcel when none is asked for: about 4 parcels per rank, so that
// the dynamic queue can balance uneven trajectories, at most 1024 blocks
// (2^20 trajectories), at least one block.
int64_t default_parcel_blocks(int64_t size, int ranks);

// The parcels of an ensemble of `size` trajectories: the ranges of the shard
// files found (adopted as they are, so that a run resumed with another number
// of ranks or another parcel size continues them), the rest cut into parcels of
// parcel_blocks blocks. Throws ConfigError naming the files when found ranges
// overlap, are not block-aligned or do not fit the ensemble.
std::vector<Parcel> plan_parcels(int64_t size, int64_t parcel_blocks,
                                 const std::vector<ShardFile>& found);

// What a run over `ranks` processes is asked to do.
struct WorkRequest {
  bool resume = false;     // continue the shard files found (run --resume)
  bool overwrite = false;  // discard what is in the way (run --overwrite)
  int64_t parcel_blocks = 0;  // blocks per parcel (0: default_parcel_blocks, or one run per rank)
  bool static_partition = false;  // parcel i to a fixed rank (static_owner), no queue
  int ranks = 1;
};

// What there is to do.
struct WorkPlan {
  std::vector<Parcel> parcels;
  bool complete = false;  // --resume found OUT complete: nothing
};

// The plan of a run writing cfg.output_path (whose folder the caller has
// checked: check_output_folder, host/io/output_path.hpp): OUT, its .partial
// and its shard files checked against req (--resume, --overwrite) and the
// configuration, what --overwrite discards removed, the parcels cut around
// the shard files found. Throws ConfigError naming the file in the way.
WorkPlan make_plan(const RunConfig& cfg, const WorkRequest& req);

// Static partition: the rank that runs parcel i of `parcels` parcels over
// `ranks` ranks (contiguous runs of parcels per rank, in order).
int static_owner(int64_t i, int64_t parcels, int ranks);

}  // namespace nholo
