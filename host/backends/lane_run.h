/* nholo/host/backends/lane_run.h — one call of the SIMD lanes' kernels
 * (kernels/ensemble_lanes.hpp) as C types: what a CPU backend hands the lane
 * kernels of a built-in model (host/backends/lane_entry.hpp) and those of a
 * model plugin's lane add-on (host/model_files/plugin_abi.h,
 * nholo_lane_plugin), whichever compiler built them. */
#ifndef NHOLO_LANE_RUN_H
#define NHOLO_LANE_RUN_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The window (the bytes of an EnsembleWindow<Sys> of the model under the
 * Udwadia–Kalaba formulation with trajectory-major outputs, window_bytes of
 * them) and what run_window_lanes takes: trajectories idx[0 .. n), each for
 * at most launch_steps steps (0: to the window's end), finished[j] = 1 when
 * idx[j] finished the window. method: 1 dopri5, 2 dop853
 * (kernels/integrate.hpp). */
typedef struct nholo_lane_run_c {
  const void* window;
  uint64_t window_bytes;
  int32_t method;
  int32_t pad0;
  const int64_t* idx;
  int64_t n;
  int64_t launch_steps;
  uint8_t* finished;
} nholo_lane_run_c;

typedef void (*nholo_lane_entry_c)(const nholo_lane_run_c* run);

#ifdef __cplusplus
}
#endif

#endif /* NHOLO_LANE_RUN_H */
