// nholo/host/run/runner.cpp — run_model (runner.hpp): the driver of the stages of
// a run, each a type with one job in its own header under host/run/ (listed
// in runner.hpp).
#include "host/run/runner.hpp"

#include <chrono>
#include <cstdio>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "host/config/event_table.hpp"
#include "host/config/tables.hpp"
#include "host/io/field_memory.hpp"
#include "host/io/file_names.hpp"
#include "host/io/outcome.hpp"
#include "host/io/output_sink.hpp"
#include "host/io/pieces.hpp"
#include "host/io/result_layout.hpp"
#include "host/io/slice_plan.hpp"
#include "host/run/device_ensembles.hpp"
#include "host/run/initial_states.hpp"
#include "host/run/interrupt.hpp"
#include "host/run/piece_writers.hpp"
#include "host/run/run_context.hpp"
#include "host/run/runner.hpp"
#include "host/run/window_loop.hpp"

namespace nholo {

namespace detail {
namespace {

// The kernels' tables of the run's events and [lyapunov] observables (null:
// none), owned by the run, read by every ensemble.
struct KernelTables {
  std::unique_ptr<const EventTable> events;
  std::unique_ptr<const ObservableTable> observables;
};
KernelTables kernel_tables(const RunConfig& cfg, const ModelInfo& mi) {
  KernelTables k;
  if (!cfg.events.empty())
    k.events = std::make_unique<const EventTable>(compile_run_events(cfg.events, mi, cfg));
  if (cfg.lyapunov && !cfg.lyapunov_observables.empty())
    k.observables = std::make_unique<const ObservableTable>(
        compile_run_observables(cfg.lyapunov_observables, mi, cfg));
  return k;
}

// What the output layout needs of the model: its sizes and drift statistic.
LayoutShape layout_shape(const ModelRuntime& model) {
  LayoutShape shape;
  shape.n = model.info().n;
  shape.m = model.info().m;
  if (model.drift().has_drift) {
    shape.has_drift = true;
    shape.drift_prediction_doc = model.drift().prediction_doc;
  }
  return shape;
}

// A run whose per-save fields are held in memory (ro.memory) is refused,
// before anything is written, when they need more than the machine has
// available: they are its result, not bounded by output.memory_budget_mb.
void check_field_memory(const RunConfig& cfg, const LayoutShape& shape, const SlicePlan& plan) {
  double bytes = 0;
  for (const std::string& field : cfg.fields)
    bytes += static_cast<double>(plan.size) * static_cast<double>(plan.n_saves) *
             tables::field_components(field, shape.n, shape.m, cfg.lyapunov_exponents) *
             sizeof(double);
  bytes *= static_cast<double>(cfg.formulations.size());
  const int64_t available = available_memory_bytes();
  if (available < 0 || bytes <= 0.9 * static_cast<double>(available)) return;
  char what[320];
  std::snprintf(what, sizeof what,
                "the fields of %lld trajectories x %lld saves (%zu field(s), %zu formulation(s)) "
                "need %.3g GB in memory, more than the %.3g GB this machine has available; "
                "write them to a file instead (nholo.run(..., output=PATH)), or ask for fewer "
                "fields, saves or trajectories",
                static_cast<long long>(plan.size), static_cast<long long>(plan.n_saves),
                cfg.fields.size(), cfg.formulations.size(), bytes / 1e9, available / 1e9);
  throw ConfigError("output.fields", what);
}

// The result file of a run written in place (io/in_place_file.hpp), created
// with every chunk placed. HDF5 writes the fill of each checksummed chunk
// then (about a byte per byte of the result's per-trajectory datasets), so a
// new run creates it on a thread of its own while its device ensembles are
// set up: that thread owns the HDF5 library until it is waited for
// (run_model's set-up makes no HDF5 call meanwhile). A resumed run, which
// reads the file next, creates it when it waits. Nothing to do when nothing
// is written in place.
class ResultFileCreation {
 public:
  ResultFileCreation(OutputLayout& layout, const PieceDir& pieces, bool resume)
      : layout_(layout), pieces_(pieces) {
    if (!layout.in_place() || resume) return;
    shared_ = std::make_shared<Shared>();
    done_ = shared_->done.get_future();
    thread_ = std::thread([shared = shared_, &layout, &pieces] {
      try {
        layout.create_in_place_file(pieces, &shared->handoff);
        shared->done.set_value();
      } catch (...) {
        shared->done.set_exception(std::current_exception());
      }
    });
  }
  ResultFileCreation(const ResultFileCreation&) = delete;
  ResultFileCreation& operator=(const ResultFileCreation&) = delete;
  ~ResultFileCreation() {
    if (thread_.joinable()) thread_.join();
  }

  // The file created (by the thread, or here for a resumed run). A signal
  // stops the wait: the thread stops itself between two blocks of its HDF5
  // writes, and once it has only its commit's system calls left (its
  // fsyncs, which under I/O contention took seconds) it is left to finish
  // alone, its rename abandoned (pieces.hpp, CommitHandoff): Interrupted.
  void wait(const std::string& set_up_stopped) {
    try {
      if (!shared_) {
        if (layout_.in_place() && !waited_) layout_.create_in_place_file(pieces_);
        waited_ = true;
        return;
      }
      while (done_.wait_for(std::chrono::milliseconds(10)) != std::future_status::ready) {
        if (interrupt_flag().load() && shared_->handoff.abandon()) {
          thread_.detach();
          throw Interrupted(set_up_stopped);
        }
      }
      if (thread_.joinable()) thread_.join();
      done_.get();
      shared_.reset();
      waited_ = true;
    } catch (const h5::Stopped&) {
      throw Interrupted(set_up_stopped);
    }
  }

 private:
  struct Shared {
    std::promise<void> done;
    CommitHandoff handoff;
  };
  OutputLayout& layout_;
  const PieceDir& pieces_;
  std::shared_ptr<Shared> shared_;
  std::future<void> done_;
  std::thread thread_;
  bool waited_ = false;
};

}  // namespace
}  // namespace detail

namespace {

// What grows with the ensemble before the first slice, said when it is large
// (8 bytes a trajectory: 5e9 trajectories are 40 GB and minutes).
void say_a_large_index(int64_t trajectories) {
  constexpr int64_t kSaidIndexBytes = int64_t{1} << 30;
  if (trajectories > kSaidIndexBytes / 8)
    std::fprintf(stderr,
                 "nholo: writing the trajectory index of %lld trajectories (%.1f GB, before the "
                 "first slice; a signal stops it)\n",
                 static_cast<long long>(trajectories), 8.0 * static_cast<double>(trajectories) / 1e9);
}

}  // namespace

RunSummary run_model(const ModelRuntime& model, const RunConfig& cfg, const RunOptions& ro,
                     Device& dev) {
  const ModelInfo& mi = model.info();
  const int n = mi.n, m = mi.m;
  const int n_params = static_cast<int>(mi.params.size());
  const int nf = static_cast<int>(cfg.formulations.size());
  // parameters that vary per trajectory (cfg.varied_params, the columns of
  // /initial/params): each trajectory then holds all of the model's
  const bool varied = !cfg.varied_params.empty();
  RunSummary sum;

  // ---- 1. slice plan (a resumed run keeps the slices of the run it continues;
  // a shard plans its range only)
  const int64_t first = ro.range_begin;
  const int64_t last = ro.range_end >= 0 ? ro.range_end : cfg.size;
  const detail::SlicePlan plan = detail::plan_range(
      cfg, dev.usable_memory(), n, m, varied ? n_params : 0, first, last, ro.slice_size);
  sum.trajectories = plan.size;
  sum.slice_size = plan.slice;
  const PieceDir pieces(ro.path);
  const std::string partial = partial_path(ro.path);

  // ---- 2. output layout: written as the master (virtual datasets over the
  // pieces, at the start), again with the outcome when the run stops, or as
  // the result file (real datasets) when every slice is finished
  const detail::LayoutShape shape = detail::layout_shape(model);
  if (ro.memory) detail::check_field_memory(cfg, shape, plan);
  detail::LayoutSources sources;
  sources.path = ro.path;
  sources.sharded = ro.shard;
  sources.first = first;
  sources.fields_in_memory = ro.memory != nullptr;
  if (ro.memory && (ro.resume || ro.shard))
    throw std::logic_error("run_model: fields in memory are for a whole, new run");
  detail::OutputLayout layout(cfg, mi, dev.info(), plan, shape, sources);
  pieces.create();
  pieces.remove_temporaries();
  const std::string set_up_stopped = "while setting up the output of " +
                                     std::to_string(plan.size) + " trajectories in " + ro.path;
  // a signal stops the set-up between two blocks of its trajectory indexes
  // (what grows with the ensemble), and the last step between two tiles
  layout.set_stop(&interrupt_flag());
  if (!ro.quiet && !ro.resume) say_a_large_index(plan.size);
  try {
    layout.write_index_piece(pieces);
    layout.write_master(nullptr, nullptr);
    layout.index_specs();
    if (ro.memory)  // the per-save fields' arrays (host/io/field_memory.hpp)
      for (const detail::Spec& sp : layout.specs())
        if (sp.in_memory) ro.memory->allocate(sp.path, {sp.dims.begin(), sp.dims.end()});
  } catch (const h5::Stopped&) {  // the command removes what a new run wrote
    throw Interrupted(set_up_stopped);
  }
  // uncompressed, the per-trajectory datasets go straight into the result
  // file: a new run creates it while the device ensembles are set up
  detail::ResultFileCreation created(layout, pieces, ro.resume);
  // a resumed run checks the pieces it keeps: a damaged one's slice runs again
  std::vector<std::string> damaged;
  if (ro.resume) {
    created.wait(set_up_stopped);
    damaged = layout.discard_damaged_slices(pieces);
  }
  if (interrupt_flag().load()) throw Interrupted(set_up_stopped);

  // ---- 3. device ensembles (state allocated once, for the largest slice),
  // with the tables of events and observables they read
  const detail::KernelTables run_tables = detail::kernel_tables(cfg, mi);
  // (a window's memory, gigabytes for 10^5 trajectories and many saves, is
  // filled part by part with a look at the stop flag: SetUpStopped)
  std::optional<stages::DeviceEnsembles> ens_set_up;
  try {
    ens_set_up.emplace(cfg, dev, plan,
                       stages::ensemble_layout(cfg, plan, model, run_tables.events.get(),
                                               run_tables.observables.get()),
                       [&](const std::string& f, const EnsembleLayout& layout_e) {
                         return model.make_formulation(f, cfg, dev, layout_e);
                       });
  } catch (const SetUpStopped&) {
    created.wait(set_up_stopped);
    throw Interrupted(set_up_stopped);
  }
  stages::DeviceEnsembles& ens = *ens_set_up;
  created.wait(set_up_stopped);
  if (interrupt_flag().load()) throw Interrupted(set_up_stopped);

  // ---- 4. to 7.: per slice its initial states, per window integrate and
  // reduce on the device, the writer thread committing the pieces
  stages::InitialStates initial(cfg, model, first);
  OutputSink sink(true);
  Progress progress = stages::run_progress(plan, pieces, nf, ro, partial);
  progress.report_to(ro.progress);
  for (const std::string& note : damaged)  // printed also with -q: results were lost
    std::fprintf(stderr, "nholo: resuming: %s\n", note.c_str());
  const stages::RunContext run{cfg, plan, shape, layout, pieces, ro,  // what the run reads
                               sum, progress, sink, ens};            // what it changes
  stages::PieceWriters writers(run);
  stages::WindowLoop loop(run, initial, writers);
  loop.run();
  const DeviceTimes device_times = ens.times();
  sum.device_busy_seconds = device_times.busy_seconds;
  sum.device_copy_seconds = device_times.copy_seconds;
  sum.launches = device_times.launches;
  sum.cpu_tail_seconds = device_times.tail_seconds;
  sum.cpu_tail_trajectories = device_times.tail_trajectories;

  // ---- 8. the outcome, from the pieces of the finished slices, in block order
  // (a stopped run's master holds per-save statistics only where they are small)
  const bool save_moments =
      !sum.interrupted || plan.n_saves * n <= detail::kStoppedMasterStatistics;
  const detail::Outcome out =
      detail::fold_pieces(pieces, plan, cfg.formulations, n, shape.has_drift, sum, save_moments);
  detail::add_status_lines(out, cfg.formulations, sum);
  sum.seconds = progress.elapsed();

  if (sum.completed < plan.size) {
    // stopped: the master again, with the statistics of the finished slices
    sum.interrupted = true;
    layout.write_master(&out, &sum);
    return sum;
  }
  // every slice finished: the result file, completed where it is (fields in
  // place) or assembled from the pieces; a signal stops it between two tiles
  // of what it copies, and --resume completes it
  const auto as0 = detail::Clock::now();
  progress.message("every trajectory is finished; writing " + ro.path);
  try {
    if (layout.in_place())
      layout.finish_in_place(pieces, out, sum);
    else
      layout.assemble(pieces, out, sum);
  } catch (const h5::Stopped&) {
    sum.interrupted = true;
    sum.stopped_in_last_step = true;
    layout.write_master(&out, &sum);
    sum.seconds = progress.elapsed();
    return sum;
  }
  // PATH is the result: the command removes the master and the pieces
  // (io/output_file.hpp, OutputFile::commit)
  sum.assembly_seconds = detail::seconds_since(as0);
  sum.seconds = progress.elapsed();
  return sum;
}

}  // namespace nholo
