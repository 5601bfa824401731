// nholo/host/cli/mpi_run.hpp — `mpirun -n N nholo run CONFIG` (docs/cluster.md):
// a mode of the run command (in cli/ with it: it runs run_command per parcel
// and merge_command at the end; the pipeline and run/ know nothing of MPI).
//
// The ensemble is cut into parcels of whole blocks (host/run/work_plan.hpp). Every
// rank runs parcels as shards (`--range`), each into its own complete shard
// file OUT.shard-BEGIN-END.h5 next to OUT, through the same crash-consistent
// pipeline as a single run; rank 0 hands the parcels out (a work queue served
// by a thread of rank 0, so rank 0 integrates too; or a static partition),
// and when every parcel is finished writes OUT as `nholo merge` does: virtual
// datasets over the shard files, statistics merged in block order, bitwise
// those of a single process. A rank that dies leaves the finished shard
// files complete and its current one a valid .partial; `--resume` adopts
// both (with any number of ranks, one included: parcel_queue.hpp, which holds
// the plan, the queue and the merge without MPI) and runs what is missing.
//
// Built with -DNHOLO_WITH_MPI=ON (the default when an MPI library is found);
// the functions below exist in every build, so that an nholo without MPI
// started by mpirun says so instead of running N copies of one run.
#pragma once

#include <string>

#include "host/cli/commands.hpp"
#include "host/config/config.hpp"

namespace nholo::mpi {

// Started by an MPI launcher (mpirun/mpiexec of Open MPI or MPICH, srun with
// PMI/PMIx): the world size the launcher announces (0: not started by one,
// or it does not say, as srun with PMIx does: then -1).
int launcher_world_size();

// "Open MPI v4.1.4, ..." (empty: built without MPI).
std::string library_version();

struct Options {
  bool static_partition = false;  // parcel i to a fixed rank, no queue
  int64_t parcel_blocks = 0;      // blocks of 1024 per parcel (0: default_parcel_blocks)
};

// Initializes MPI when the process was started by a launcher; returns the
// world size (1 when started alone or built without MPI). Throws when nholo
// was built without MPI but started as one of several ranks.
int init(int* argc, char*** argv);
// A process that is one of several tasks of an srun step without MPI (each
// would run the whole ensemble into one file): std::runtime_error saying
// the two ways that work. Not called for a shard (--shard, --range).
void refuse_plain_srun_tasks();
void finalize();
int rank();

// The whole run over all ranks; the process's exit status (every rank calls it).
int run(const RunConfig& cfg, const CommandOptions& opts, const Options& mo);

}  // namespace nholo::mpi
