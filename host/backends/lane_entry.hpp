// nholo/host/backends/lane_entry.hpp — the entry points of the SIMD lanes'
// kernels (kernels/ensemble_lanes.hpp), compiled once per instruction set
// and built-in model in translation units of their own
// (CMakeLists.txt: generated/lanes_<Model>_<isa>.cpp, with -mavx2 -mfma or
// -mavx512f and `nholo` renamed to `nholo_<isa>`, so that nothing they
// instantiate shares a symbol with the baseline code: the linker cannot hand
// AVX-512 code to a machine without it), and the table of them
// (generated/lanes_table.cpp, compiled for the baseline) that a CPU backend
// looks its model up in. Outside namespace nholo: both sides name them.
#pragma once

#include "host/backends/lane_run.h"

namespace nholo_lanes {

// One call (host/backends/lane_run.h: C types, so that a model plugin's lane
// add-on, whichever compiler built it, takes the same call).
using LaneRun = nholo_lane_run_c;
using LaneEntry = nholo_lane_entry_c;

// A built-in model's lane kernels, under the Udwadia–Kalaba formulation.
struct LaneTableRow {
  const char* model;  // Model::name
  LaneEntry avx512;   // 8 lanes; runs only where the CPU has AVX-512F
  LaneEntry avx2;     // 4 lanes; runs only where the CPU has AVX2 and FMA
};

// The row of model `name`, or null (a model without lane kernels).
const LaneTableRow* find_lane_row(const char* name);

}  // namespace nholo_lanes
