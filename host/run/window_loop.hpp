// nholo/host/run/window_loop.hpp — stages 4 to 7 driven (host/run/runner.hpp):
// for each slice not finished yet, its initial states, then window by window
// integrate and reduce on the device while the writer commits the previous
// window, then the slice's results. Interrupts are honoured between windows
// (and inside them on the CPU backends, and during the initial states); a
// device fault ends the loop with the finished slices kept.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "host/io/output_sink.hpp"
#include "host/io/pieces.hpp"
#include "host/io/slice_plan.hpp"
#include "host/run/device_ensembles.hpp"
#include "host/run/initial_states.hpp"
#include "host/run/interrupt.hpp"
#include "host/run/piece_writers.hpp"
#include "host/run/progress.hpp"
#include "host/run/run_context.hpp"
#include "host/run/run_options.hpp"

namespace nholo::stages {

// the slice plan's names (io/slice_plan.hpp)
using detail::Clock;
using detail::seconds_since;
using detail::SlicePlan;

// The progress of a run over the slices still to do (a resumed run says how
// many it found finished).
inline Progress run_progress(const SlicePlan& plan, const PieceDir& pieces, int nf,
                             const RunOptions& ro, const std::string& partial) {
  const int64_t n_slices = plan.n_slices();
  int64_t todo_slices = 0, todo_traj = 0;
  for (int64_t s = 0; s < n_slices; ++s)
    if (!pieces.has(PieceDir::slice_name(s))) {
      ++todo_slices;
      todo_traj += std::min(plan.size, (s + 1) * plan.slice) - s * plan.slice;
    }
  Progress progress(std::max<int64_t>(1, todo_traj * plan.n_windows * nf), ro.quiet, ro.tty,
                    static_cast<double>(plan.n_windows * nf));
  if (ro.resume && todo_slices < n_slices)
    progress.message("resuming: " + std::to_string(n_slices - todo_slices) + " of " +
                     std::to_string(n_slices) + " slices are finished in " + partial);
  return progress;
}

class WindowLoop {
 public:
  WindowLoop(const RunContext& run, InitialStates& init, PieceWriters& writers)
      : n_(init.model().info().n),
        cfg_(run.config),
        plan_(run.plan),
        pieces_(run.pieces),
        ens_(run.ensembles),
        init_(init),
        writers_(writers),
        sink_(run.sink),
        progress_(run.progress),
        sum_(run.summary),
        nf_(static_cast<int>(run.config.formulations.size())) {}

  // Every slice whose piece is missing, until the end or an interrupt; a
  // device fault: sum.fault set and the run marked interrupted.
  void run() {
    try {
      for (int64_t s = 0; s < plan_.n_slices() && !sum_.interrupted; ++s) {
        if (pieces_.has(PieceDir::slice_name(s))) continue;  // finished by the run resumed
        if (!run_slice(s)) break;  // its pieces so far stay; the slice is not finished
      }
      sink_.drain();
    } catch (const DeviceFault& e) {
      // the device failed: every slice whose piece was committed is kept; the
      // rest keep the fill value not_run
      sink_.drain_quietly();
      sum_.fault = e.what();
      sum_.interrupted = true;
    } catch (...) {
      sink_.drain_quietly();
      throw;
    }
  }

 private:
  // slice s; false when interrupted (the slice is not finished)
  bool run_slice(int64_t s) {
    const int64_t begin = plan_.slice_begin(s);
    const int64_t end = plan_.slice_end(s), count = end - begin;
    // 4. initial states of the slice, committed by the sink
    InitCounts ic;
    init_.fill(begin, count, st_, ic);
    if (interrupt_flag().load()) {
      sum_.interrupted = true;
      return false;
    }
    if (ic.params_rejected > 0)
      progress_.message(init_.params_rejected_message(begin, end, st_, ic));
    writers_.post_init(s, count, st_, ic);
    const auto c0 = Clock::now();
    ens_.start_slice(count, st_.q0.data(), st_.qd0.data(), st_.l0.data(),
                     st_.pk.empty() ? nullptr : st_.pk.data(), st_.rejected.data(), init_.t0());
    sum_.compute_seconds += seconds_since(c0);
    for (int64_t w = 0; w < plan_.n_windows; ++w)
      if (!run_window(s, w, count)) return false;
    finish_slice(s, begin, end, count);
    return true;
  }

  // window w of slice s (count trajectories); false when
  // interrupted before or inside it (nothing of it is written)
  bool run_window(int64_t s, int64_t w, int64_t count) {
    if (interrupt_flag().load()) {
      sum_.interrupted = true;
      return false;
    }
    const int64_t k0 = plan_.window_begin(w), ns = plan_.window_saves(w);
    const int slot = static_cast<int>(window_counter_++ % 2);
    // wait until the writer has finished with this slot (double buffering)
    const auto a0 = Clock::now();
    sink_.acquire(slot);
    sum_.wait_seconds += seconds_since(a0);
    // 5. integrate, 6. reduce (on the device; may return before it is done)
    const auto w0 = Clock::now();
    if (!ens_.run_window(k0, ns, slot)) {
      // interrupted inside the window: nothing of it is written, the
      // slice's trajectories stay not_run
      sink_.release(slot);
      sum_.compute_seconds += seconds_since(w0);
      sum_.interrupted = true;
      return false;
    }
    ens_.pair_distances(count, k0, ns, n_);
    sum_.compute_seconds += seconds_since(w0);
    // 7. the writer: wait for the slot's data, write the window's piece
    writers_.post_window(slot, s, w, count, ns);
    done_units_ += count * nf_;
    std::ostringstream what;
    what << "slice " << (s + 1) << "/" << plan_.n_slices() << ", window " << (w + 1) << "/"
         << plan_.n_windows;
    progress_.update(done_units_, what.str());
    return true;
  }

  // the per-slice results (synchronous: waits for the device), to the writer
  void finish_slice(int64_t s, int64_t begin, int64_t end, int64_t count) {
    const auto r0 = Clock::now();
    SliceOutput so;
    so.results = std::make_shared<std::vector<SliceResults>>(nf_);
    so.pair_res = std::make_shared<std::vector<std::vector<double>>>(2 * ens_.n_pairs());
    ens_.finish_slice(count, *so.results, *so.pair_res);
    sum_.compute_seconds += seconds_since(r0);
    // initial theta_dot etc. for the drift prediction
    const ModelRuntime& model = init_.model();
    if (model.drift().has_drift) {
      so.pred.resize(count);
      std::vector<double> p;
      for (int64_t i = 0; i < count; ++i) {
        init_.params_of(st_.pk, count, i, p);
        so.pred[i] = model.drift_prediction(p.data(), &st_.q0[i * n_], &st_.qd0[i * n_]);
      }
    }
    writers_.post_slice(s, begin, end, std::move(so));
  }

  int n_;
  const RunConfig& cfg_;
  const SlicePlan& plan_;
  const PieceDir& pieces_;
  DeviceEnsembles& ens_;
  InitialStates& init_;
  PieceWriters& writers_;
  OutputSink& sink_;
  Progress& progress_;
  RunSummary& sum_;
  int nf_;
  SliceStates st_;
  int64_t done_units_ = 0;
  int64_t window_counter_ = 0;  // selects the host slot (double buffering)
};

}  // namespace nholo::stages
