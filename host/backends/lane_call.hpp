// nholo/host/backends/lane_call.hpp — the body of a lane kernels' entry point:
// one call (host/backends/lane_run.h) of the SIMD lanes' integration
// (kernels/ensemble_lanes.hpp) of system Sys with W lanes. Compiled for an
// instruction set with `nholo` renamed (-Dnholo=nholo_<isa>) in the built-in
// models' lane units (CMakeLists.txt) and in a model plugin's lane add-on
// (host/model_files/plugin_lanes_define.hpp).
#pragma once

#include <string.h>

#include "host/backends/lane_run.h"
#include "kernels/ensemble_lanes.hpp"

namespace nholo {

// r's window integrated with method r->method in W lanes. A window of
// another system (its size differs) traps: the caller's bytes would be
// misread.
template <class Sys, int W>
void run_lanes_of_width(const nholo_lane_run_c* r) {
  EnsembleWindow<Sys> w;
  if (r->window_bytes != sizeof w) __builtin_trap();
  memcpy(static_cast<void*>(&w), r->window, sizeof w);
  if (r->method == static_cast<int>(Method::dop853))
    run_window_lanes<Method::dop853, W>(w, r->idx, r->n, r->launch_steps, r->finished);
  else if (r->method == static_cast<int>(Method::rk4))
    run_window_lanes<Method::rk4, W>(w, r->idx, r->n, r->launch_steps, r->finished);
  else
    run_window_lanes<Method::dopri5, W>(w, r->idx, r->n, r->launch_steps, r->finished);
}

using lane_width_fn = void (*)(const nholo_lane_run_c*);

// r's window integrated in W lanes, or by one_lane (one lane: the same
// functions) where the parameters vary per trajectory, so that a sweep gives
// separate runs' bits. A model plugin's lane add-on compiles one_lane in a
// unit of its own (plugin_lanes_define.hpp), at the same time as the rest.
template <class Sys, int W, lane_width_fn one_lane = &run_lanes_of_width<Sys, 1>>
void run_lane_call(const nholo_lane_run_c* r) {
  EnsembleWindow<Sys> w;
  if (r->window_bytes != sizeof w) __builtin_trap();
  memcpy(static_cast<void*>(&w), r->window, sizeof w);
  if (lanes_width(w, W) == 1)
    one_lane(r);
  else
    run_lanes_of_width<Sys, W>(r);
}

}  // namespace nholo
