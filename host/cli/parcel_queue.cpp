// nholo/host/cli/parcel_queue.cpp — parcels of a run as shards, their queue and
// their merge (parcel_queue.hpp).
#include "host/cli/parcel_queue.hpp"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <stdexcept>
#include <utility>

#include "host/io/output_path.hpp"
#include "host/run/interrupt.hpp"

namespace nholo::parcels {

namespace {

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
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

}  // namespace

std::string parcel_name(const Parcel& c) {
  return "[" + std::to_string(c.begin) + ", " + std::to_string(c.end) + ")";
}

Queue::Queue(std::vector<Parcel> parcels, int ranks, bool static_partition, bool quiet)
    : parcels_(std::move(parcels)),
      state_(parcels_.size(), kNone),
      message_(parcels_.size()),
      ranks_(ranks),
      static_(static_partition),
      quiet_(quiet),
      busy_(ranks, 0.0),
      done_by_(ranks, 0),
      traj_by_(ranks, 0),
      steps_by_(ranks, 0) {
  for (size_t i = 0; i < parcels_.size(); ++i)
    if (parcels_[i].complete) {
      state_[i] = kDone;
      ++done_;
    }
}

int64_t Queue::next(int r, const Report& rep, const std::string& message) {
  std::lock_guard<std::mutex> g(mu_);
  if (rep.parcel >= 0 && rep.parcel < static_cast<int64_t>(parcels_.size())) {
    state_[rep.parcel] = rep.outcome;
    message_[rep.parcel] = message;
    busy_[r] += rep.micros * 1e-6;
    steps_by_[r] += rep.steps;
    if (rep.outcome == kDone) {
      ++done_;
      ++done_by_[r];
      traj_by_[r] += rep.trajectories;
      if (!quiet_)
        std::fprintf(stderr, "nholo: [%lld/%zu parcels] trajectories %s by rank %d in %.2f s\n",
                     static_cast<long long>(done_), parcels_.size(),
                     parcel_name(parcels_[rep.parcel]).c_str(), r, rep.micros * 1e-6);
    } else {
      stop_ = true;
      if (rep.signal > 0 && signal_ == 0) signal_ = static_cast<int>(rep.signal);
    }
  }
  if (stop_ || interrupt_signal() != 0) return -1;
  if (!static_) {
    while (cursor_ < static_cast<int64_t>(parcels_.size()) && state_[cursor_] != kNone) ++cursor_;
    if (cursor_ >= static_cast<int64_t>(parcels_.size())) return -1;
    state_[cursor_] = -1;  // handed out
    return cursor_++;
  }
  for (int64_t i = 0; i < static_cast<int64_t>(parcels_.size()); ++i)
    if (state_[i] == kNone && static_owner(i, static_cast<int64_t>(parcels_.size()), ranks_) == r) {
      state_[i] = -1;
      return i;
    }
  return -1;
}

Report run_parcel(const RunConfig& cfg, const Parcel& c, int64_t idx, std::string& msg) {
  Report rep;
  rep.parcel = idx;
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
  } catch (const Interrupted& e) {
    rep.outcome = kInterrupted;
    msg = e.what();
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

WorkPlan prepare_run(const RunConfig& cfg, const CommandOptions& opts, int64_t parcel_blocks,
                     bool static_partition, int ranks) {
  check_output_folder(cfg.output_path);
  prepare_model(cfg, opts.quiet);  // a model file's plugin compiled once, before the ranks load it
  WorkRequest req;
  req.resume = opts.resume;
  req.overwrite = opts.overwrite;
  req.parcel_blocks = parcel_blocks;
  req.static_partition = static_partition;
  req.ranks = ranks;
  return make_plan(cfg, req);
}

int finish(const RunConfig& cfg, const CommandOptions& opts, const WorkPlan& plan,
           const Queue& queue, int ranks, Clock::time_point t0) {
  const int64_t nc = static_cast<int64_t>(plan.parcels.size());
  int code = 0;
  std::vector<std::string> files;
  int64_t interrupted = 0;
  for (size_t i = 0; i < plan.parcels.size(); ++i) {
    const int64_t s = queue.state(i);
    files.push_back(shard_path(cfg.output_path, plan.parcels[i].begin, plan.parcels[i].end));
    if (s == kError || s == kFault) {
      std::fprintf(stderr, "nholo: error: trajectories %s: %s\n",
                   parcel_name(plan.parcels[i]).c_str(), queue.message(i).c_str());
      code = s == kFault ? 3 : 2;
    }
    interrupted += s == kInterrupted;
  }
  const int64_t missing = nc - queue.done();
  if (!opts.quiet)
    for (int r = 0; r < ranks; ++r)
      std::fprintf(stderr,
                   "nholo: mpi: rank %d ran %lld parcels, %lld trajectories, %lld steps "
                   "in %.2f s (%.4g trajectory-steps/s)\n",
                   r, static_cast<long long>(queue.done_by(r)),
                   static_cast<long long>(queue.trajectories_by(r)),
                   static_cast<long long>(queue.steps_by(r)), queue.busy(r),
                   queue.busy(r) > 0 ? queue.steps_by(r) / queue.busy(r) : 0.0);
  if (missing == 0) {
    const int merged = merge_shards(cfg, opts, files, ranks, t0);
    return merged != 0 ? merged : code;
  }
  std::fprintf(stderr,
               "nholo: %s: %lld of %lld parcels finished (their shard files are complete); the "
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

int run_alone(const RunConfig& cfg, const CommandOptions& opts) {
  const auto t0 = Clock::now();
  const WorkPlan plan = prepare_run(cfg, opts, 0, false, 1);
  if (plan.complete) {
    if (!opts.quiet)
      std::fprintf(stderr, "nholo: %s is complete (same config); nothing to resume\n",
                   cfg.output_path.c_str());
    return 0;
  }
  Queue queue(plan.parcels, 1, false, opts.quiet);
  if (!opts.quiet) {
    int64_t complete = 0, adopted = 0;
    for (const auto& c : plan.parcels) {
      complete += c.complete;
      adopted += c.found && !c.complete;
    }
    std::fprintf(stderr,
                 "nholo: resuming the shard files of %s in one process: %lld parcels (%lld "
                 "complete and %lld to continue)\n",
                 cfg.output_path.c_str(), static_cast<long long>(plan.parcels.size()),
                 static_cast<long long>(complete), static_cast<long long>(adopted));
  }
  Report rep;
  std::string msg;
  for (;;) {
    const int64_t idx = queue.next(0, rep, msg);
    if (idx < 0) break;
    msg.clear();
    rep = run_parcel(cfg, plan.parcels[idx], idx, msg);
  }
  return finish(cfg, opts, plan, queue, 1, t0);
}

}  // namespace nholo::parcels
