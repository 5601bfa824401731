// nholo/host/run/run_context.hpp — what the stages of a run share
// (host/run/runner.hpp): what the run reads, fixed before its first slice,
// and what it changes as it goes. run_model builds it once these exist; the
// piece writers and the window loop take it instead of each part.
#pragma once

#include "host/config/config.hpp"
#include "host/io/output_sink.hpp"
#include "host/io/pieces.hpp"
#include "host/io/result_layout.hpp"
#include "host/io/run_summary.hpp"
#include "host/io/slice_plan.hpp"
#include "host/run/progress.hpp"
#include "host/run/run_options.hpp"

namespace nholo::stages {

class DeviceEnsembles;  // host/run/device_ensembles.hpp

struct RunContext {
  // what the run reads
  const RunConfig& config;
  const detail::SlicePlan& plan;
  const detail::LayoutShape& shape;
  const detail::OutputLayout& layout;
  const PieceDir& pieces;
  const RunOptions& options;
  // what the run changes
  RunSummary& summary;
  Progress& progress;
  OutputSink& sink;  // the writer thread
  DeviceEnsembles& ensembles;
};

}  // namespace nholo::stages
