// nholo/host/run/runner.hpp — one run of one model, as a list of stages:
//
//   RunSummary s = run_model(model, cfg, opts, device);   // model: a ModelRuntime
//
//   1. slice plan      slices [begin, end) of whole kStatBlock blocks, sized
//                      from output.memory_budget_mb and the device's free memory
//   2. output layout   the master PATH.partial: every group, attribute and
//                      scale of the file, each per-trajectory dataset a
//                      virtual dataset over pieces still to be written
//                      (host/io/pieces.hpp: crash-consistent output)
//   3. device ensembles one per formulation (host/backends/device_ensemble.hpp), state
//                      allocated once, kept on the device for a whole slice
//   for each slice:
//   4. initial states  sampled (counter-based), with the parameters that vary
//                      per trajectory ([ensemble.params]), completed from the
//                      constraints with each trajectory's own parameters,
//                      projected / rejected / refused (on_violation)
//      for each window of saves:
//   5.   integrate     every formulation, on the device
//   6.   reduce        on the device: block moments of q and qdot, pairwise
//                      distances between formulations, the model's own
//                      statistic (e.g. the coin's drift), transposition
//   7.   output sink   the writer thread commits window w as a piece (fields,
//                      block moments) while the device runs window w+1; host
//                      slots are double-buffered; each slice ends with its
//                      own piece (status, steps, comparisons, drift)
//   8. outcome         statistics merged in block order from the pieces of the
//                      finished slices; PATH completed in place (uncompressed
//                      fields, io/in_place_file.hpp) or assembled (all
//                      finished), or the master replaced by one with the
//                      statistics (stopped)
//      interrupts (SIGINT, SIGTERM, SIGHUP) are honoured between windows and,
//      on the CPU backends, between portions of a launch inside a window
//      (about 0.1 s apart) and during the initial states.
// Peak memory is set by the slice size and the window, never by the ensemble
// size or the number of saves.
//
// The pipeline is compiled once, in runner.cpp; what it needs of the model
// comes through ModelRuntime (host/run/model_runtime.hpp): a built-in
// model's compiled into nholo, a model plugin's through its C table.
// Each stage is a type of its own, in its own header (runner.cpp includes
// them and drives them): 1 io/slice_plan.hpp, 2 io/result_layout.hpp,
// 3, 5, 6 run/device_ensembles.hpp, 4 run/initial_states.hpp, 7
// run/piece_writers.hpp, the loop over slices and windows
// run/window_loop.hpp, 8 io/outcome.hpp; the root attributes
// io/root_attributes.hpp, interrupts run/interrupt.hpp. `nholo merge` is not
// a run: host/io/merge.hpp writes its file with the same output layout.
#pragma once

#include "host/backends/device_ensemble.hpp"
#include "host/config/config.hpp"
#include "host/run/model_runtime.hpp"
#include "host/run/run_options.hpp"

namespace nholo {

// The whole run of model on dev, writing ro.path (through its pieces). A run
// that finishes every slice leaves its master and pieces beside PATH for the
// command to remove (io/output_file.hpp, OutputFile::commit).
RunSummary run_model(const ModelRuntime& model, const RunConfig& cfg, const RunOptions& ro,
                     Device& dev);

}  // namespace nholo
