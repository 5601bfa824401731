// nholo/host/cli/mpi_run.cpp — `mpirun -n N nholo run CONFIG`: the work plan
// shared, parcels run as shards by run_command, the shards merged.
#include "host/cli/mpi_run.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "host/cli/parcel_queue.hpp"
#include "host/io/file_names.hpp"
#include "host/io/h5.hpp"
#include "host/io/output_path.hpp"
#include "host/model_files/plugin.hpp"
#include "host/run/device_choice.hpp"
#include "host/run/work_plan.hpp"
#ifdef NHOLO_WITH_MPI
#include <mpi.h>
#endif

namespace fs = std::filesystem;

namespace nholo::mpi {

int launcher_world_size() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE"})
    if (const char* s = std::getenv(v)) {
      const int k = std::atoi(s);
      return k > 0 ? k : 1;
    }
  if (std::getenv("PMIX_RANK") || std::getenv("PMI_RANK")) return -1;
  return 0;
}

// srun started several tasks without an MPI plugin: each would run the whole
// ensemble into the same file (SLURM_STEP_NUM_TASKS: the tasks of this srun
// step; a batch script's own process has SLURM_NTASKS of its allocation but
// is one process)
void refuse_plain_srun_tasks() {
  const char* tasks = std::getenv("SLURM_STEP_NUM_TASKS");
  const char* id = std::getenv("SLURM_PROCID");
  if (!tasks || !id || std::atoi(tasks) <= 1) return;
  throw std::runtime_error(
      std::string("this process is task ") + id + " of " + tasks +
      " started by srun without MPI (no PMI/PMIx in its environment), so every task would run "
      "the whole ensemble: run `srun --mpi=pmix nholo run CONFIG` (an nholo built with MPI), or "
      "one shard per task: `srun nholo run CONFIG --shard $SLURM_PROCID/$SLURM_NTASKS` and then "
      "nholo merge (docs/cluster.md)");
}

#ifndef NHOLO_WITH_MPI

std::string library_version() {
  return "";
}

int init(int*, char***) {
  const int ws = launcher_world_size();
  if (ws > 1)
    throw std::runtime_error(
        "this process is one of " + std::to_string(ws) +
        " started by an MPI launcher, but this nholo was built without MPI (configure with "
        "-DNHOLO_WITH_MPI=ON and an MPI library such as Debian's libopenmpi-dev); without it "
        "every process would run the whole ensemble. Run one process per shard instead: "
        "nholo run CONFIG --shard r/R, then nholo merge (docs/cluster.md)");
  return 1;
}
void finalize() {}
int rank() {
  return 0;
}
int run(const RunConfig&, const CommandOptions&, const Options&) {
  throw std::runtime_error("this nholo was built without MPI");
}

#else  // NHOLO_WITH_MPI

namespace {

bool g_initialized = false;

using namespace parcels;

// Message tags of the work queue.
constexpr int kTagReport = 11;   // rank -> 0: how its last parcel ended, and a request for the next
constexpr int kTagMessage = 12;  // rank -> 0: the error message of that parcel
constexpr int kTagParcel = 13;   // 0 -> rank: the next parcel's index, or -1: no more

void quiet_wait(MPI_Request& req);

void bcast_string(std::string& s, int root) {
  int64_t len = static_cast<int64_t>(s.size());
  MPI_Request req;
  MPI_Ibcast(&len, 1, MPI_INT64_T, root, MPI_COMM_WORLD, &req);
  quiet_wait(req);
  s.resize(static_cast<size_t>(len));
  if (len > 0) MPI_Bcast(s.data(), static_cast<int>(len), MPI_CHAR, root, MPI_COMM_WORLD);
}

// Every rank's string, on rank 0 (others get an empty vector).
std::vector<std::string> gather_strings(const std::string& mine, int me, int n) {
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(me == 0 ? n : 0), offs(me == 0 ? n : 0);
  MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string all;
  if (me == 0) {
    int at = 0;
    for (int r = 0; r < n; ++r) {
      offs[r] = at;
      at += lens[r];
    }
    all.resize(static_cast<size_t>(at));
  }
  MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), offs.data(), MPI_CHAR, 0,
              MPI_COMM_WORLD);
  std::vector<std::string> v;
  if (me == 0)
    for (int r = 0; r < n; ++r) v.push_back(all.substr(offs[r], lens[r]));
  return v;
}

// Waits for a request without spinning a core (a blocking MPI call polls
// at full speed, stealing the core of rank 0 compiling a plugin or merging).
void quiet_wait(MPI_Request& req) {
  for (int done = 0;;) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

void quiet_barrier() {
  MPI_Request req;
  MPI_Ibarrier(MPI_COMM_WORLD, &req);
  quiet_wait(req);
}

// Rank 0's server: answers the other ranks' requests until each has been
// told there is no more work.
void serve(Queue& q, int n) {
  int finished = 0;
  while (finished < n - 1) {
    int flag = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, kTagReport, MPI_COMM_WORLD, &flag, &st);
    if (!flag) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    Report rep;
    MPI_Recv(&rep, kReportInts, MPI_INT64_T, st.MPI_SOURCE, kTagReport, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
    std::string msg(static_cast<size_t>(rep.message_len), '\0');
    if (rep.message_len > 0)
      MPI_Recv(msg.data(), static_cast<int>(rep.message_len), MPI_CHAR, st.MPI_SOURCE, kTagMessage,
               MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int64_t idx = q.next(st.MPI_SOURCE, rep, msg);
    MPI_Send(&idx, 1, MPI_INT64_T, st.MPI_SOURCE, kTagParcel, MPI_COMM_WORLD);
    if (idx < 0) ++finished;
  }
}

// A rank other than 0 asks for its next parcel, reporting its last one.
int64_t request(const Report& rep, const std::string& msg) {
  MPI_Send(&rep, kReportInts, MPI_INT64_T, 0, kTagReport, MPI_COMM_WORLD);
  if (rep.message_len > 0)
    MPI_Send(msg.data(), static_cast<int>(rep.message_len), MPI_CHAR, 0, kTagMessage,
             MPI_COMM_WORLD);
  int64_t idx = -1;
  MPI_Recv(&idx, 1, MPI_INT64_T, 0, kTagParcel, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return idx;
}

}  // namespace

std::string library_version() {
  char v[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int len = 0;
  MPI_Get_library_version(v, &len);
  std::string s(v, static_cast<size_t>(std::max(0, len)));
  if (const size_t nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
  while (!s.empty() && (s.back() == ',' || s.back() == ' ' || s.back() == '\0')) s.pop_back();
  return s;
}

int init(int* argc, char*** argv) {
  if (launcher_world_size() == 0) return 1;
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
  g_initialized = true;
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (n > 1 && provided < MPI_THREAD_SERIALIZED)
    throw std::runtime_error("the MPI library gives thread support level " +
                             std::to_string(provided) +
                             "; nholo's work queue needs MPI_THREAD_SERIALIZED (rank 0 serves the "
                             "queue from a thread)");
  return n;
}

void finalize() {
  if (!g_initialized) return;
  g_initialized = false;
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin) MPI_Finalize();
}

int rank() {
  if (!g_initialized) return 0;
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

namespace {

// This process's place: its rank among all, and among those of its node.
struct World {
  int me = 0, n = 1;
  int local_rank = 0, local_size = 1;
};

World world() {
  World w;
  MPI_Comm_rank(MPI_COMM_WORLD, &w.me);
  MPI_Comm_size(MPI_COMM_WORLD, &w.n);
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, w.me, MPI_INFO_NULL, &local);
  MPI_Comm_rank(local, &w.local_rank);
  MPI_Comm_size(local, &w.local_size);
  MPI_Comm_free(&local);
  return w;
}

// one GPU per local rank (unless backend.gpu says which), the cores of a
// node shared among its ranks (unless backend.threads says how many)
RunConfig rank_config(const RunConfig& cfg_in, const World& w) {
  RunConfig cfg = cfg_in;
#ifdef NHOLO_WITH_CUDA
  if (!cfg.gpu_given &&
      (cfg.device == BackendDevice::automatic || cfg.device == BackendDevice::cuda)) {
    const int gpus = cuda_device_count();
    if (gpus > 0) cfg.gpu = w.local_rank % gpus;
  }
#endif
  if (cfg.threads == 0 && w.local_size > 1) {
    const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    cfg.threads = static_cast<int>(std::max(1u, hw / static_cast<unsigned>(w.local_size)));
  }
  return cfg;
}

// The plan, made on rank 0 and sent to every rank. Returns the exit status
// when the run ends here (an error, or OUT already complete), else -1.
int share_plan(const RunConfig& cfg, const CommandOptions& opts, const Options& mo, const World& w,
               WorkPlan& plan) {
  std::string error;
  if (w.me == 0) {
    try {
      plan = prepare_run(cfg, opts, mo.parcel_blocks, mo.static_partition, w.n);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  bcast_string(error, 0);
  if (!error.empty()) {
    if (w.me == 0) std::fprintf(stderr, "nholo: error: %s\n", error.c_str());
    return 2;
  }
  int complete = plan.complete ? 1 : 0;
  MPI_Bcast(&complete, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (complete) {
    if (w.me == 0 && !opts.quiet)
      std::fprintf(stderr, "nholo: %s is complete (same config); nothing to resume\n",
                   cfg.output_path.c_str());
    return 0;
  }
  int64_t nc = static_cast<int64_t>(plan.parcels.size());
  MPI_Bcast(&nc, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  std::vector<int64_t> ranges(2 * nc);
  if (w.me == 0)
    for (int64_t i = 0; i < nc; ++i) {
      ranges[2 * i] = plan.parcels[i].begin;
      ranges[2 * i + 1] = plan.parcels[i].end;
    }
  MPI_Bcast(ranges.data(), static_cast<int>(2 * nc), MPI_INT64_T, 0, MPI_COMM_WORLD);
  if (w.me != 0) {
    plan.parcels.resize(nc);
    for (int64_t i = 0; i < nc; ++i)
      plan.parcels[i] = {ranges[2 * i], ranges[2 * i + 1], false, false};
  }
  return -1;
}

// Rank 0: what the run is about to do, and every rank's device.
void print_run_start(const RunConfig& cfg, const Options& mo, const WorkPlan& plan, int n,
                     const std::vector<std::string>& hellos) {
  int64_t adopted = 0, complete_found = 0;
  for (const auto& c : plan.parcels) {
    adopted += c.found && !c.complete;
    complete_found += c.complete;
  }
  std::fprintf(stderr,
               "nholo: mpi: %d ranks, %s: %lld parcels of trajectories (%lld complete "
               "and %lld to continue from shard files on disk), written to %s\n",
               n, mo.static_partition ? "static partition" : "dynamic work queue",
               static_cast<long long>(plan.parcels.size()), static_cast<long long>(complete_found),
               static_cast<long long>(adopted),
               fs::path(cfg.output_path)
                   .replace_extension("")
                   .string()
                   .append(shard_infix())
                   .append("*")
                   .c_str());
  for (int r = 0; r < n; ++r)
    std::fprintf(stderr, "nholo: mpi: rank %d: %s\n", r, hellos[r].c_str());
}

// Every rank's device (a rank that cannot open one stops the run before it
// starts). Returns, on every rank, the ranks' errors ("" when none).
std::string open_devices(const RunConfig& cfg, const Options& mo, const WorkPlan& plan,
                         const World& w, bool quiet) {
  char host[256] = "?";
  ::gethostname(host, sizeof host - 1);
  std::string hello;
  try {
    hello = std::string(host) + ", " + describe_device(open_run_device(cfg, check_gpu_module_compiler)->info());
  } catch (const std::exception& e) {
    hello = std::string("error: ") + host + ": " + e.what();
  }
  const std::vector<std::string> hellos = gather_strings(hello, w.me, w.n);
  std::string error;
  if (w.me == 0) {
    for (int r = 0; r < w.n; ++r)
      if (hellos[r].rfind("error: ", 0) == 0)
        error +=
            (error.empty() ? "rank " : "; rank ") + std::to_string(r) + ": " + hellos[r].substr(7);
    if (error.empty() && !quiet) print_run_start(cfg, mo, plan, w.n, hellos);
  }
  bcast_string(error, 0);
  return error;
}

// The parcels: rank 0 serves the queue from a thread and runs parcels too.
void run_parcels(const RunConfig& cfg, const WorkPlan& plan, Queue& queue, const World& w) {
  std::thread server;
  if (w.me == 0 && w.n > 1) server = std::thread([&] { serve(queue, w.n); });
  Report rep;
  std::string msg;
  for (;;) {
    const int64_t idx = w.me == 0 ? queue.next(0, rep, msg) : request(rep, msg);
    if (idx < 0) break;
    msg.clear();
    rep = run_parcel(cfg, plan.parcels[idx], idx, msg);
  }
  if (server.joinable()) server.join();
}

}  // namespace

int run(const RunConfig& cfg_in, const CommandOptions& opts, const Options& mo) {
  const auto t0 = Clock::now();
  const World w = world();
  const RunConfig cfg = rank_config(cfg_in, w);
  WorkPlan plan;
  if (const int code = share_plan(cfg, opts, mo, w, plan); code >= 0) return code;
  if (const std::string error = open_devices(cfg, mo, plan, w, opts.quiet); !error.empty()) {
    if (w.me == 0) std::fprintf(stderr, "nholo: error: %s\n", error.c_str());
    return 2;
  }
  Queue queue(plan.parcels, w.n, mo.static_partition, opts.quiet);
  run_parcels(cfg, plan, queue, w);
  const int code = w.me == 0 ? finish(cfg, opts, plan, queue, w.n, t0) : 0;
  quiet_barrier();
  return code;
}

#endif  // NHOLO_WITH_MPI

}  // namespace nholo::mpi
