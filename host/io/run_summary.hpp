// nholo/host/io/run_summary.hpp — what a run (or `nholo merge`) reports: the
// counts, times and status lines of RunSummary, which the result file's root
// attributes record (host/io/root_attributes.hpp) and the commands print.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace nholo {

struct RunSummary {
  int64_t trajectories = 0;
  int64_t completed = 0;  // trajectories whose integration finished (any status)
  int64_t completed_from_constraints = 0, projected = 0, rejected = 0;
  int64_t singular_initial = 0;  // degenerate initial states (status singular, not integrated)
  // trajectories whose sampled parameters break the model's relation between
  // parameters (ModelInfo::check_params): status rejected, not integrated
  int64_t params_rejected = 0;
  bool interrupted = false;
  bool stopped_in_last_step = false;  // interrupted with every trajectory finished
  bool already_complete = false;  // run --resume found PATH complete: nothing run
  std::string fault;              // non-empty: the device failed; the file is a marked .partial
  double seconds = 0;
  // the integrating thread's time issuing and running windows (compute), and
  // waiting for the writer to free a buffer (the output not hidden behind
  // compute); the writer's time per job is output_seconds
  double compute_seconds = 0, wait_seconds = 0;
  // the device's own time (host/backends/device_ensemble.hpp DeviceTimes):
  // busy integrating and reducing, copying to the host; integration launches
  double device_busy_seconds = 0, device_copy_seconds = 0;
  int64_t launches = 0;
  // the CUDA backend's CPU tail: seconds and trajectories (window tails) it finished
  double cpu_tail_seconds = 0;
  int64_t cpu_tail_trajectories = 0;
  int64_t slice_size = 0;
  int64_t steps = 0;  // accepted steps of every trajectory and formulation
  // the per-save fields (q, qdot, ...): bytes handed to HDF5; the writer
  // thread's seconds on every piece: each window's fields transposed to the
  // file layout and written (filters included), each slice's initial states
  // and results
  int64_t output_bytes = 0;
  double output_seconds = 0;
  // assembling PATH from the pieces at the end (copy, sync, rename, clean-up)
  double assembly_seconds = 0;
  std::vector<std::string> status_lines;  // "udwadia_kalaba: ok 1000, max_steps 2"
};

}  // namespace nholo
