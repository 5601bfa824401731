// nholo/host/backends/launch_pacer.hpp — how many steps a GPU launch gives
// each active trajectory. backend.steps_per_launch bounds what a launch asks
// of one trajectory, but a launch's time is that bound times the number of
// active trajectories: 10^7 coins x ~50 steps of a window take about half a
// second of an H200, a costlier model or a larger ensemble seconds, and an
// interrupt waits for the launch. The pacer gives the next launch about
// kTargetSeconds of work, from the time the launches before it took:
//
//   LaunchPacer pacer(max_steps);            // backend.steps_per_launch (> 0)
//   a.launch_steps = pacer.steps(n_active);  // in [1, max_steps]
//   ... launch, synchronize ...
//   pacer.record(n_active, a.launch_steps, seconds);
//
// The results do not depend on it: how many steps a launch allows changes
// only where a trajectory pauses between launches, never its steps
// (kernels/ensemble.hpp; tests/test_scheduler.cpp holds the files of every
// steps_per_launch to the same bits). Host code only: no CUDA in it, so that
// it is tested on any machine.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace nholo {

class LaunchPacer {
 public:
  // what a launch should take: an interrupt waits for at most about this
  static constexpr double kTargetSeconds = 0.25;
  // the work of a launch before any was timed, in trajectory-steps (the
  // coin's lean DOPRI5 kernel: about 1e9 a second on an H200)
  static constexpr double kFirstWork = 67108864.0;  // 2^26
  // a launch shorter than this is mostly launch and synchronization: its
  // time says little about a step's
  static constexpr double kShortestTimed = 0.01;

  LaunchPacer() = default;
  explicit LaunchPacer(int64_t max_steps) : max_steps_(std::max<int64_t>(1, max_steps)) {}

  // Steps per active trajectory for a launch over n_active of them.
  int64_t steps(int64_t n_active) const {
    const double work = step_seconds_ > 0 ? kTargetSeconds / step_seconds_ : kFirstWork;
    const double per_trajectory =
        std::floor(work / static_cast<double>(std::max<int64_t>(1, n_active)));
    if (!(per_trajectory < static_cast<double>(max_steps_))) return max_steps_;  // NaN too
    return std::max<int64_t>(1, static_cast<int64_t>(per_trajectory));
  }

  // A launch over n_active trajectories with `steps` each took `seconds`
  // (launched to synchronized). Trajectories that finish their window early
  // make fewer steps than n_active x steps, so the estimate of a step's time
  // may fall below the truth: it falls by at most half per launch (it rises
  // at once), so that a launch after one where most trajectories finished
  // early takes at most about twice the target.
  void record(int64_t n_active, int64_t steps, double seconds) {
    if (!(seconds >= kShortestTimed) || n_active <= 0 || steps <= 0) return;
    const double estimate = seconds / (static_cast<double>(n_active) * static_cast<double>(steps));
    step_seconds_ = step_seconds_ > 0 ? std::max(estimate, 0.5 * step_seconds_) : estimate;
  }

  // the estimate of one trajectory-step's seconds (0: none yet)
  double step_seconds() const { return step_seconds_; }

 private:
  int64_t max_steps_ = 1;
  double step_seconds_ = 0;
};

}  // namespace nholo
