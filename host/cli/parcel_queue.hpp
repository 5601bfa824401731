// nholo/host/cli/parcel_queue.hpp — a run cut into parcels, each run as a
// shard into its own shard file and merged at the end: what an MPI run
// (host/cli/mpi_run.cpp) does over its ranks, without MPI itself, so that
// one process can do it too (`nholo run CONFIG --resume` continuing the
// shard files an MPI run left, with or without mpirun).
//
// The plan (which parcels, which are complete on disk: host/run/work_plan.hpp)
// is made once; the queue hands the parcels out and records how each ended;
// run_parcel runs one through run_command (resumed when its .partial exists);
// finish merges the shard files into OUT when every parcel is done, or says
// what is missing.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "host/cli/commands.hpp"
#include "host/config/config.hpp"
#include "host/run/work_plan.hpp"

namespace nholo::parcels {

using Clock = std::chrono::steady_clock;

enum Outcome : int64_t { kNone = 0, kDone = 1, kInterrupted = 2, kFault = 3, kError = 4 };

// How a parcel ended, as a rank reports it (sent between ranks as int64_t[8]).
struct Report {
  int64_t parcel = -1, outcome = kNone, completed = 0, trajectories = 0, steps = 0, micros = 0,
          message_len = 0, signal = 0;
};
constexpr int kReportInts = 8;
static_assert(sizeof(Report) == kReportInts * sizeof(int64_t), "Report is sent as int64_t[8]");

// "[BEGIN, END)"
std::string parcel_name(const Parcel& c);

// The work plan (host/run/work_plan.hpp, make_plan) for `ranks` processes,
// once OUT's folder is checked and the model's plugin compiled (once, before
// the ranks load it). Throws ConfigError naming what is in the way.
WorkPlan prepare_run(const RunConfig& cfg, const CommandOptions& opts, int64_t parcel_blocks,
                     bool static_partition, int ranks);

// What rank 0 (or the only process) knows of the run: the parcels, who runs
// what, how they ended. Thread-safe: rank 0 serves the others from a thread.
class Queue {
 public:
  Queue(std::vector<Parcel> parcels, int ranks, bool static_partition, bool quiet);

  // Records how rank r's last parcel ended and gives it its next one (-1: none).
  int64_t next(int r, const Report& rep, const std::string& message);

  const std::vector<Parcel>& parcels() const { return parcels_; }
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
  std::vector<Parcel> parcels_;
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

// One parcel, as a shard run of its range (resumed when its .partial exists,
// skipped when its shard file is complete); msg: the error, if any.
Report run_parcel(const RunConfig& cfg, const Parcel& c, int64_t idx, std::string& msg);

// Rank 0 (or the only process) at the end: OUT merged from the shard files
// when every parcel is done, else what is missing; the exit status. t0: when
// the run started.
int finish(const RunConfig& cfg, const CommandOptions& opts, const WorkPlan& plan,
           const Queue& queue, int ranks, Clock::time_point t0);

// `nholo run CONFIG` in one process over the shard files of OUT (those an
// MPI run or `--shard` runs left): refused without --resume or --overwrite,
// continued with --resume, discarded with --overwrite. The exit status.
int run_alone(const RunConfig& cfg, const CommandOptions& opts);

}  // namespace nholo::parcels
