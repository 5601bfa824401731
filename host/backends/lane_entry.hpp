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

#include <cstddef>
#include <cstdint>

namespace nholo_lanes {

// One call: the window (the bytes of an EnsembleWindow<Sys> of the model
// under the Udwadia–Kalaba formulation, window_bytes of them) and what
// run_window_lanes takes. method: 1 dopri5, 2 dop853 (kernels/integrate.hpp).
struct LaneRun {
  const void* window;
  std::size_t window_bytes;
  int method;
  const int64_t* idx;
  int64_t n;
  int64_t launch_steps;
  uint8_t* finished;
};

using LaneEntry = void (*)(const LaneRun&);

// A built-in model's lane kernels, under the Udwadia–Kalaba formulation.
struct LaneTableRow {
  const char* model;  // Model::name
  LaneEntry avx512;   // 8 lanes; runs only where the CPU has AVX-512F
  LaneEntry avx2;     // 4 lanes; runs only where the CPU has AVX2 and FMA
};

// The row of model `name`, or null (a model without lane kernels).
const LaneTableRow* find_lane_row(const char* name);

}  // namespace nholo_lanes
