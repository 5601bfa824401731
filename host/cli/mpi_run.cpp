// nholo/host/cli/mpi_run.cpp — `mpirun -n N nholo run CONFIG`: the work plan
// shared, chunks run as shards by run_command, the shards merged.
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

#include "host/cli/output_path.hpp"
#include "host/io/file_names.hpp"
#include "host/io/h5.hpp"
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

namespace {
// srun started several tasks without an MPI plugin: each would run the whole
// ensemble into the same file
void refuse_plain_srun_tasks() {
  const char* tasks = std::getenv("SLURM_STEP_NUM_TASKS");
  if (!tasks) tasks = std::getenv("SLURM_NTASKS");
  const char* id = std::getenv("SLURM_PROCID");
  if (!tasks || !id || std::atoi(tasks) <= 1) return;
  throw std::runtime_error(
      std::string("this process is task ") + id + " of " + tasks +
      " started by srun without MPI (no PMI/PMIx in its environment), so every task would run "
      "the whole ensemble: run `srun --mpi=pmix nholo run CONFIG` (an nholo built with MPI), or "
      "one shard per task: `srun nholo run CONFIG --shard $SLURM_PROCID/$SLURM_NTASKS` and then "
      "nholo merge (docs/cluster.md)");
}
}  // namespace

#ifndef NHOLO_WITH_MPI

std::string library_version() {
  return "";
}

int init(int*, char***) {
  const int ws = launcher_world_size();
  if (ws == 0) refuse_plain_srun_tasks();
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

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Message tags of the work queue.
constexpr int kTagReport = 11;   // rank -> 0: how its last chunk ended, and a request for the next
constexpr int kTagMessage = 12;  // rank -> 0: the error message of that chunk
constexpr int kTagChunk = 13;    // 0 -> rank: the next chunk's index, or -1: no more

enum Outcome : int64_t { kNone = 0, kDone = 1, kInterrupted = 2, kFault = 3, kError = 4 };

// How a chunk ended, as a rank reports it.
struct Report {
  int64_t chunk = -1, outcome = kNone, completed = 0, trajectories = 0, steps = 0, micros = 0,
          message_len = 0, signal = 0;
};
constexpr int kReportInts = 8;
static_assert(sizeof(Report) == kReportInts * sizeof(int64_t), "Report is sent as int64_t[8]");

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

std::string chunk_name(const Chunk& c) {
  return "[" + std::to_string(c.begin) + ", " + std::to_string(c.end) + ")";
}

// What rank 0 knows of the run: the chunks, who runs what, how they ended.
class Queue {
 public:
  Queue(std::vector<Chunk> chunks, int ranks, bool static_partition, bool quiet)
      : chunks_(std::move(chunks)),
        state_(chunks_.size(), kNone),
        message_(chunks_.size()),
        ranks_(ranks),
        static_(static_partition),
        quiet_(quiet),
        busy_(ranks, 0.0),
        done_by_(ranks, 0),
        traj_by_(ranks, 0),
        steps_by_(ranks, 0) {
    for (size_t i = 0; i < chunks_.size(); ++i)
      if (chunks_[i].complete) {
        state_[i] = kDone;
        ++done_;
      }
  }

  // Records how rank r's last chunk ended and gives it its next one (-1: none).
  int64_t next(int r, const Report& rep, const std::string& message) {
    std::lock_guard<std::mutex> g(mu_);
    if (rep.chunk >= 0 && rep.chunk < static_cast<int64_t>(chunks_.size())) {
      state_[rep.chunk] = rep.outcome;
      message_[rep.chunk] = message;
      busy_[r] += rep.micros * 1e-6;
      steps_by_[r] += rep.steps;
      if (rep.outcome == kDone) {
        ++done_;
        ++done_by_[r];
        traj_by_[r] += rep.trajectories;
        if (!quiet_)
          std::fprintf(stderr, "nholo: [%lld/%zu chunks] trajectories %s by rank %d in %.2f s\n",
                       static_cast<long long>(done_), chunks_.size(),
                       chunk_name(chunks_[rep.chunk]).c_str(), r, rep.micros * 1e-6);
      } else {
        stop_ = true;
        if (rep.signal > 0 && signal_ == 0) signal_ = static_cast<int>(rep.signal);
      }
    }
    if (stop_ || interrupt_signal() != 0) return -1;
    if (!static_) {
      while (cursor_ < static_cast<int64_t>(chunks_.size()) && state_[cursor_] != kNone) ++cursor_;
      if (cursor_ >= static_cast<int64_t>(chunks_.size())) return -1;
      state_[cursor_] = -1;  // handed out
      return cursor_++;
    }
    for (int64_t i = 0; i < static_cast<int64_t>(chunks_.size()); ++i)
      if (state_[i] == kNone &&
          static_owner(i, static_cast<int64_t>(chunks_.size()), ranks_) == r) {
        state_[i] = -1;
        return i;
      }
    return -1;
  }

  const std::vector<Chunk>& chunks() const { return chunks_; }
  int64_t state(size_t i) const { return state_[i]; }
  const std::string& message(size_t i) const { return message_[i]; }
  int64_t done() const { return done_; }
  int signal() const { return signal_; }
  double busy(int r) const { return busy_[r]; }
  int64_t done_by(int r) const { return done_by_[r]; }
  int64_t trajectories_by(int r) const { return traj_by_[r]; }
  int64_t steps_by(int r) const { return steps_by_[r]; }

 private:
  std::mutex mu_;
  std::vector<Chunk> chunks_;
  std::vector<int64_t> state_;  // kNone: not handed out, -1: running, else its Outcome
  std::vector<std::string> message_;
  int ranks_;
  bool static_, quiet_;
  int64_t cursor_ = 0, done_ = 0;
  bool stop_ = false;
  int signal_ = 0;
  std::vector<double> busy_;
  std::vector<int64_t> done_by_, traj_by_, steps_by_;
};

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
    MPI_Send(&idx, 1, MPI_INT64_T, st.MPI_SOURCE, kTagChunk, MPI_COMM_WORLD);
    if (idx < 0) ++finished;
  }
}

// A rank other than 0 asks for its next chunk, reporting its last one.
int64_t request(const Report& rep, const std::string& msg) {
  MPI_Send(&rep, kReportInts, MPI_INT64_T, 0, kTagReport, MPI_COMM_WORLD);
  if (rep.message_len > 0)
    MPI_Send(msg.data(), static_cast<int>(rep.message_len), MPI_CHAR, 0, kTagMessage,
             MPI_COMM_WORLD);
  int64_t idx = -1;
  MPI_Recv(&idx, 1, MPI_INT64_T, 0, kTagChunk, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return idx;
}

// One chunk, as a shard run of its range (resumed when its .partial exists,
// skipped when its shard file is complete).
Report run_chunk(const RunConfig& cfg, const Chunk& c, int64_t idx, std::string& msg) {
  Report rep;
  rep.chunk = idx;
  CommandOptions o;
  o.quiet = true;
  o.resume = true;
  o.range = std::to_string(c.begin) + ":" + std::to_string(c.end);
  const auto t0 = Clock::now();
  try {
    const RunSummary s = run_command(cfg, o);
    rep.completed = s.completed;
    rep.trajectories = s.trajectories;
    rep.steps = s.steps;
    if (!s.fault.empty()) {
      rep.outcome = kFault;
      msg = s.fault;
    } else if (s.interrupted) {
      rep.outcome = kInterrupted;
    } else {
      rep.outcome = kDone;
    }
  } catch (const std::exception& e) {
    rep.outcome = kError;
    msg = e.what();
  }
  if (rep.outcome != kDone && interrupt_signal() != 0 && rep.outcome != kError)
    rep.outcome = kInterrupted;
  rep.signal = interrupt_signal();
  rep.micros = static_cast<int64_t>(seconds_since(t0) * 1e6);
  rep.message_len = static_cast<int64_t>(msg.size());
  return rep;
}

struct Plan {
  std::vector<Chunk> chunks;
  bool complete = false;  // --resume found OUT complete
};

std::string hash_of(const std::string& file) {
  h5::File f = h5::File::open_ro(file);
  const h5::Group r = f.root();
  return r.has_attr("config_hash") ? r.attr_string("config_hash") : std::string();
}

// Rank 0: what there is to do (and whether it may be done).
Plan make_plan(const RunConfig& cfg, const CommandOptions& opts, const Options& mo, int n) {
  Plan plan;
  if (opts.resume && opts.overwrite)
    throw ConfigError("--resume", "--resume and --overwrite exclude each other");
  const std::string& out = cfg.output_path;
  check_output_folder(out);
  prepare_model(cfg, opts.quiet);  // a model file's plugin compiled once, before the ranks load it
  std::error_code ec;
  if (fs::exists(out)) {
    if (opts.resume) {
      std::string h;
      try {
        h = hash_of(out);
      } catch (const std::exception&) {
      }
      if (h != cfg.result_hash)
        throw ConfigError("--resume", "'" + out +
                                          "' exists and is not the result of this "
                                          "configuration; choose another output.path");
      plan.complete = true;
      return plan;
    }
    if (!opts.overwrite)
      throw ConfigError("output.path", "'" + out + "' exists; pass --overwrite to replace it");
  }
  if (fs::exists(partial_path(out))) {
    if (!opts.overwrite)
      throw ConfigError("output.path",
                        "'" + partial_path(out) +
                            "' exists: the incomplete result of a "
                            "single-process run; continue it with `nholo run CONFIG "
                            "--resume` (one process), or pass --overwrite to discard it");
    fs::remove(partial_path(out), ec);
    fs::remove_all(pieces_dir_path(out), ec);
  }
  std::vector<ShardFile> found = find_shard_files(out);
  if (!found.empty() && !opts.resume) {
    if (!opts.overwrite) {
      std::string names;
      for (size_t i = 0; i < found.size() && i < 3; ++i)
        names += (i ? ", '" : "'") +
                 (found[i].complete ? found[i].path : partial_path(found[i].path)) + "'";
      if (found.size() > 3) names += " and " + std::to_string(found.size() - 3) + " more";
      throw ConfigError("output.path", "shard files of '" + out + "' exist (" + names +
                                           "), from an earlier run; pass --resume to continue "
                                           "them, or --overwrite to discard them");
    }
    for (const auto& s : found) {
      fs::remove(s.path, ec);
      fs::remove(partial_path(s.path), ec);
      fs::remove_all(pieces_dir_path(s.path), ec);
    }
    found.clear();
  }
  for (const auto& s : found) {
    // a shard of another configuration would only fail later, in its rank
    const std::string file = s.complete ? s.path : partial_path(s.path);
    std::string h;
    try {
      h = hash_of(file);
    } catch (const std::exception& e) {
      if (s.complete)
        throw ConfigError("--resume", "'" + file + "' cannot be read (" + e.what() +
                                          "); move it away or pass --overwrite");
      continue;  // a .partial its rank could not finish writing: its run replaces it
    }
    if (h != cfg.result_hash)
      throw ConfigError("--resume", "'" + file +
                                        "' is the result of another configuration (config "
                                        "hash " +
                                        h + ", this one " + cfg.result_hash +
                                        "); move it away or pass --overwrite to discard it");
  }
  const int64_t blocks = (cfg.size + kStatBlock - 1) / kStatBlock;
  int64_t cb = mo.chunk_blocks;
  if (cb <= 0) cb = mo.static_partition ? (blocks + n - 1) / n : default_chunk_blocks(cfg.size, n);
  plan.chunks = plan_chunks(cfg.size, cb, found);
  return plan;
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
  if (launcher_world_size() == 0) {
    refuse_plain_srun_tasks();
    return 1;
  }
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
  if (!cfg.gpu_given && (cfg.device == "auto" || cfg.device == "cuda")) {
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
               Plan& plan) {
  std::string error;
  if (w.me == 0) {
    try {
      plan = make_plan(cfg, opts, mo, w.n);
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
  int64_t nc = static_cast<int64_t>(plan.chunks.size());
  MPI_Bcast(&nc, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  std::vector<int64_t> ranges(2 * nc);
  if (w.me == 0)
    for (int64_t i = 0; i < nc; ++i) {
      ranges[2 * i] = plan.chunks[i].begin;
      ranges[2 * i + 1] = plan.chunks[i].end;
    }
  MPI_Bcast(ranges.data(), static_cast<int>(2 * nc), MPI_INT64_T, 0, MPI_COMM_WORLD);
  if (w.me != 0) {
    plan.chunks.resize(nc);
    for (int64_t i = 0; i < nc; ++i)
      plan.chunks[i] = {ranges[2 * i], ranges[2 * i + 1], false, false};
  }
  return -1;
}

// Rank 0: what the run is about to do, and every rank's device.
void print_run_start(const RunConfig& cfg, const Options& mo, const Plan& plan, int n,
                     const std::vector<std::string>& hellos) {
  int64_t adopted = 0, complete_found = 0;
  for (const auto& c : plan.chunks) {
    adopted += c.found && !c.complete;
    complete_found += c.complete;
  }
  std::fprintf(stderr,
               "nholo: mpi: %d ranks, %s: %lld chunks of trajectories (%lld complete "
               "and %lld to continue from shard files on disk), written to %s\n",
               n, mo.static_partition ? "static partition" : "dynamic work queue",
               static_cast<long long>(plan.chunks.size()), static_cast<long long>(complete_found),
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
std::string open_devices(const RunConfig& cfg, const Options& mo, const Plan& plan, const World& w,
                         bool quiet) {
  char host[256] = "?";
  ::gethostname(host, sizeof host - 1);
  std::string hello;
  try {
    hello = std::string(host) + ", " + describe_device(open_run_device(cfg)->info());
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

// The chunks: rank 0 serves the queue from a thread and runs chunks too.
void run_chunks(const RunConfig& cfg, const Plan& plan, Queue& queue, const World& w) {
  std::thread server;
  if (w.me == 0 && w.n > 1) server = std::thread([&] { serve(queue, w.n); });
  Report rep;
  std::string msg;
  for (;;) {
    const int64_t idx = w.me == 0 ? queue.next(0, rep, msg) : request(rep, msg);
    if (idx < 0) break;
    msg.clear();
    rep = run_chunk(cfg, plan.chunks[idx], idx, msg);
  }
  if (server.joinable()) server.join();
}

// Rank 0: OUT merged from the complete shard files; the exit status.
int merge_shards(const RunConfig& cfg, const CommandOptions& opts,
                 const std::vector<std::string>& files, int n, Clock::time_point t0) {
  try {
    const auto tm = Clock::now();
    const RunSummary s = merge_command(cfg.output_path, files, false, opts.overwrite, true);
    if (!opts.quiet) {
      for (const auto& l : s.status_lines) std::fprintf(stderr, "nholo: status %s\n", l.c_str());
      std::fprintf(stderr, "nholo: merged %lld shard files in %.2f s\n",
                   static_cast<long long>(files.size()), seconds_since(tm));
      std::fprintf(stderr,
                   "nholo: wrote %s (%lld trajectories by %d ranks, %.2f s; virtual "
                   "datasets over the shard files: keep them next to it)\n",
                   cfg.output_path.c_str(), static_cast<long long>(s.trajectories), n,
                   seconds_since(t0));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nholo: error: merging the shard files: %s\n", e.what());
    return 2;
  }
  return 0;
}

// Rank 0: the outcome — OUT merged from the shard files, or what is missing;
// the exit status.
int finish(const RunConfig& cfg, const CommandOptions& opts, const Plan& plan, const Queue& queue,
           int n, Clock::time_point t0) {
  const int64_t nc = static_cast<int64_t>(plan.chunks.size());
  int code = 0;
  std::vector<std::string> files;
  int64_t interrupted = 0;
  for (size_t i = 0; i < plan.chunks.size(); ++i) {
    const int64_t s = queue.state(i);
    files.push_back(shard_path(cfg.output_path, plan.chunks[i].begin, plan.chunks[i].end));
    if (s == kError || s == kFault) {
      std::fprintf(stderr, "nholo: error: trajectories %s: %s\n",
                   chunk_name(plan.chunks[i]).c_str(), queue.message(i).c_str());
      code = s == kFault ? 3 : 2;
    }
    interrupted += s == kInterrupted;
  }
  const int64_t missing = nc - queue.done();
  if (!opts.quiet)
    for (int r = 0; r < n; ++r)
      std::fprintf(stderr,
                   "nholo: mpi: rank %d ran %lld chunks, %lld trajectories, %lld steps "
                   "in %.2f s (%.4g trajectory-steps/s)\n",
                   r, static_cast<long long>(queue.done_by(r)),
                   static_cast<long long>(queue.trajectories_by(r)),
                   static_cast<long long>(queue.steps_by(r)), queue.busy(r),
                   queue.busy(r) > 0 ? queue.steps_by(r) / queue.busy(r) : 0.0);
  if (missing == 0) {
    const int merged = merge_shards(cfg, opts, files, n, t0);
    return merged != 0 ? merged : code;
  }
  std::fprintf(stderr,
               "nholo: %s: %lld of %lld chunks finished (their shard files are complete); the "
               "others are not run or their .partial holds what finished. `mpirun -n N nholo "
               "run CONFIG --resume` (any N) continues them\n",
               interrupted > 0 || queue.signal() || interrupt_signal() ? "interrupted" : "stopped",
               static_cast<long long>(queue.done()), static_cast<long long>(nc));
  if (code == 0) {
    const int sig = queue.signal() ? queue.signal() : interrupt_signal();
    code = 128 + (sig > 0 ? sig : SIGINT);
  }
  return code;
}

}  // namespace

int run(const RunConfig& cfg_in, const CommandOptions& opts, const Options& mo) {
  const auto t0 = Clock::now();
  const World w = world();
  const RunConfig cfg = rank_config(cfg_in, w);
  Plan plan;
  if (const int code = share_plan(cfg, opts, mo, w, plan); code >= 0) return code;
  if (const std::string error = open_devices(cfg, mo, plan, w, opts.quiet); !error.empty()) {
    if (w.me == 0) std::fprintf(stderr, "nholo: error: %s\n", error.c_str());
    return 2;
  }
  Queue queue(plan.chunks, w.n, mo.static_partition, opts.quiet);
  run_chunks(cfg, plan, queue, w);
  const int code = w.me == 0 ? finish(cfg, opts, plan, queue, w.n, t0) : 0;
  quiet_barrier();
  return code;
}

#endif  // NHOLO_WITH_MPI

}  // namespace nholo::mpi
