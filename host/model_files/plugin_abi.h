/* nholo/host/model_files/plugin_abi.h — the interface between nholo and a model
 * plugin: a shared library holding the compiled functions of one model
 * (docs/models.md, "Plugins"). Plain C: fixed-width numbers, pointers,
 * function pointers, error codes and messages. No C++ type, exception or
 * object crosses it, so a plugin compiled by any C++17 compiler (clang++, a
 * newer g++) loads into nholo; the run pipeline (threads, files, devices)
 * stays in nholo and calls the model through this table.
 *
 * A plugin exports one C symbol, NHOLO_PLUGIN_ENTRY_SYMBOL, a function
 * returning its nholo_plugin table. Every version of the table begins with
 * abi_version, so nholo can refuse (and rebuild) a plugin of another version
 * before reading anything else; then it compares the layout table (the size
 * of every struct below and the offset of every member, as the plugin's
 * compiler laid them out) with its own, and the nholo release the plugin's
 * headers came from. The compiler's name is recorded, not checked.
 *
 * A plugin is compiled from one C++ translation unit:
 *   #include "my_model.hpp"          // struct MyModel, the Model concept
 *   #include "host/model_files/plugin_define.hpp"
 *   NHOLO_DEFINE_PLUGIN(MyModel)
 * nholo writes that unit itself for a model file; nholo_add_model (CMake)
 * writes it for a hand-written C++ model. The unit sees kernels/ and models/
 * only (the integrators, the formulations): no part of nholo's host code.
 *
 * Return codes: 0 success; a negative value an error, whose message the
 * function wrote into err (err_size bytes, NUL-terminated). */
#ifndef NHOLO_PLUGIN_ABI_H
#define NHOLO_PLUGIN_ABI_H

#include <stdint.h>

#include "host/backends/lane_run.h"

/* The version of the table's shape: raised when the entry table's functions
 * change, not for a member of the field lists below (the layout table names
 * every member, so a plugin without it is refused by the layout check).
 * 9: gpu_window honours args->trajectory_major (the window a lane add-on
 * integrates), the lane add-on's table nholo_lane_plugin;
 * 8: tangent systems (Lyapunov exponents: nholo_eval_c.tangent_renormalize_every,
 * nholo_system_info_c.tangent_base_size, window_layout's tangent); 7: events in
 * nholo_arrays_c; 6: the C interface (was: C++ types across
 * the boundary, 1-5). */
#define NHOLO_PLUGIN_ABI_VERSION 9u
#define NHOLO_PLUGIN_ENTRY_SYMBOL "nholo_plugin_entry_v1"

#ifdef __cplusplus
extern "C" {
#endif

/* The structs that carry the kernels' own (kernels/integrate.hpp
 * IntegratorOptions, kernels/system.hpp EvalOptions, kernels/ensemble.hpp
 * EnsembleArrays<double>) are each described once, by a list of rows
 *   X(A, C type, member, the kernel struct's member it carries)
 * (A: passed through to X) from which the C struct, its entries of the layout
 * table (NHOLO_PLUGIN_LAYOUT) and both conversions (plugin_convert.hpp) are
 * made. A member added to a kernel struct is one row here: the layout table
 * then names it, so that a plugin compiled without it is refused by the
 * layout check; the interface version stays. */

/* kernels/integrate.hpp IntegratorOptions */
#define NHOLO_INTEGRATOR_FIELDS(X, A)                                                    \
  X(A, int32_t, method, method) /* 0 rk4, 1 dopri5, 2 dop853 (kernels/integrate.hpp) */ \
  X(A, double, rtol, rtol)                                                              \
  X(A, double, atol, atol)                                                              \
  X(A, double, dt, dt)                                                                  \
  X(A, double, dt_min, dt_min)                                                          \
  X(A, double, dt_max, dt_max)                                                          \
  X(A, int64_t, max_steps, max_steps)                                                   \
  X(A, double, safety, safety)                                                          \
  X(A, double, fac_min, fac_min)                                                        \
  X(A, double, fac_max, fac_max)                                                        \
  X(A, double, pi_beta, pi_beta)

/* kernels/system.hpp EvalOptions (with kernels/fundamental.hpp PinvOptions) */
#define NHOLO_EVAL_FIELDS(X, A)                                     \
  X(A, double, pinv_rtol, pinv.rtol)                                \
  X(A, double, pinv_atol, pinv.atol)                                \
  X(A, double, pinv_chol_rtol, pinv.chol_rtol)                      \
  X(A, double, pinv_gram_rtol, pinv.gram_rtol)                      \
  X(A, int32_t, drift, drift) /* 0 none, 1 baumgarte, 2 project */  \
  X(A, int32_t, project_iterations, project_iterations)             \
  X(A, double, baumgarte_alpha, baumgarte_alpha)                    \
  X(A, double, baumgarte_beta, baumgarte_beta)                      \
  X(A, double, project_tol, project_tol)                            \
  X(A, double, lu_rtol, lu_rtol)

/* kernels/ensemble.hpp EnsembleArrays<double>: where a window's state and
 * outputs are (host memory on the CPU backends, device memory on a GPU); the
 * events: kernels/event_program.hpp EventTable of the same nholo release
 * (checked with the release), null when there are none, and the slice's
 * counts, records and g at each step's end (kernels/trajectory_events.hpp);
 * the observables: kernels/event_program.hpp ObservableTable, null when there
 * are none */
#define NHOLO_ARRAYS_FIELDS(X, A)                                       \
  X(A, double*, y, y)                                                   \
  X(A, double*, t, t)                                                   \
  X(A, double*, h, h)                                                   \
  X(A, double*, err_prev, err_prev)                                     \
  X(A, double*, fail_time, fail_time)                                   \
  X(A, int64_t*, steps, steps)                                          \
  X(A, int64_t*, rejected, rejected)                                    \
  X(A, int32_t*, status, status)                                        \
  X(A, double*, q, q)                                                   \
  X(A, double*, qdot, qdot)                                             \
  X(A, double*, qddot, qddot)                                           \
  X(A, double*, force_ideal, force_ideal)                               \
  X(A, double*, force_nonideal, force_nonideal)                         \
  X(A, double*, multiplier, multiplier)                                 \
  X(A, double*, constraint_residual, constraint_residual)               \
  X(A, double*, energy, energy)                                         \
  X(A, double*, lyapunov_estimate, lyapunov_estimate)                   \
  X(A, double*, lyapunov_observed_estimate, lyapunov_observed_estimate) \
  X(A, const void*, observables, observables)                           \
  X(A, const double*, params, params)                                   \
  X(A, int32_t*, save_k, save_k)                                        \
  X(A, int64_t*, interval_start, interval_start)                        \
  X(A, const void*, events, events)                                     \
  X(A, int64_t*, event_count, event_count)                              \
  X(A, double*, event_records, event_records)                           \
  X(A, double*, event_g, event_g)

#define NHOLO_C_MEMBER(A, type, member, kernel_member) type member;

typedef struct nholo_integrator_c {
  NHOLO_INTEGRATOR_FIELDS(NHOLO_C_MEMBER, ~)
} nholo_integrator_c;

typedef struct nholo_eval_c {
  NHOLO_EVAL_FIELDS(NHOLO_C_MEMBER, ~)
  /* > 0: open the formulation's tangent system (kernels/lyapunov.hpp
   * TangentSystem, renormalize_every in time) instead of the formulation's
   * own: a plugin compiled with NHOLO_PLUGIN_TANGENT (plugin_define.hpp) */
  double tangent_renormalize_every;
  /* with a tangent system: 1 projects its initial deltas onto the tangent
   * space of the constraint manifold at time tangent_t_start (TangentSystem
   * admissible, t_start: [lyapunov] observables), 0 not */
  int32_t tangent_admissible;
  double tangent_t_start;
} nholo_eval_c;

typedef struct nholo_arrays_c {
  NHOLO_ARRAYS_FIELDS(NHOLO_C_MEMBER, ~)
} nholo_arrays_c;

/* one window of saves over a slice of trajectories */
typedef struct nholo_window_args_c {
  nholo_arrays_c arrays;
  int64_t count;
  const double* save_times;
  int32_t n_saves;
  int32_t trajectory_major; /* 1: outputs [(i ns + k) nc + c] (CPU); 0: coalesced (GPU) */
} nholo_window_args_c;

/* A slice's initial integration state, written by start_states into arrays
 * nholo allocated: y [N count], the others [count]. */
typedef struct nholo_states_c {
  double *y, *t, *h, *err_prev, *fail_time;
  int64_t *steps, *rejected;
  int32_t* status;
} nholo_states_c;

/* A formulation's system as opened (system_open) */
typedef struct nholo_system_info_c {
  int32_t N;                   /* state size */
  int32_t path_residual_index; /* -1: none */
  int32_t tangent_base_size;   /* a tangent system: its base system's state size; -1: none */
  int32_t tangent_exponents;   /* and its exponents (tangent vectors); 0: none */
  uint64_t window_bytes;       /* sizeof(EnsembleWindow<Sys>): a GPU kernel's argument */
} nholo_system_info_c;

/* Sizes and alignments of EnsembleWindow<Sys> and its members' types, for a
 * GPU module's static checks (NVRTC must lay the kernel argument out as the
 * plugin's compiler does). */
typedef struct nholo_window_layout {
  uint64_t bytes, align, sys, sys_align, params, opt, opt_align, arr;
} nholo_window_layout;

/* the result of completing or projecting an initial state */
typedef struct nholo_consistency_c {
  double residual;
  int32_t converged;
  int32_t pad0;
} nholo_consistency_c;

/* a parameter of the model; range as kernels/model.hpp ParamRange */
typedef struct nholo_param_c {
  const char *name, *unit, *doc;
  double default_value;
  double lo, hi;
  int32_t has_lo, lo_open, has_hi, hi_open;
} nholo_param_c;

/* What the model is (host/config/model_info.hpp ModelInfo); every string and
 * array lives as long as the plugin is loaded. */
typedef struct nholo_model_c {
  const char *name, *description;
  int32_t n, m, m_position, m_velocity, m_acceleration, n_params;
  const char* const* coordinates;      /* n */
  const char* const* coordinate_units; /* n, or NULL: not declared */
  const char* const* constraints;      /* m */
  const char* const* constraint_kinds; /* m: "position" | "velocity" | "acceleration" */
  const nholo_param_c* params;         /* n_params */
  const char* const* formulations;     /* n_formulations, the supported ones */
  int32_t n_formulations;
  int32_t has_energy, has_nonideal, has_conflated, has_hand_dynamics, has_check_params;
  /* the model's drift statistic (kernels/reduce.hpp line fit), has_drift 0: none */
  int32_t has_drift, drift_coordinate, band_coordinate;
  int32_t pad0;
  const char* drift_prediction_doc;
} nholo_model_c;

typedef struct nholo_system_c nholo_system_c; /* opaque: a formulation's system */
typedef struct nholo_window_c nholo_window_c; /* opaque: a window on the CPU */

/* one entry of the layout table: "struct" (its size) or "struct.member" (its offset) */
typedef struct nholo_layout_entry_c {
  const char* what;
  uint64_t value;
} nholo_layout_entry_c;

/* The entry table. params: the model's n_params parameter values, in the
 * order of nholo_model_c.params. */
typedef struct nholo_plugin {
  uint32_t abi_version; /* first in every version: NHOLO_PLUGIN_ABI_VERSION */
  uint32_t layout_count;
  const nholo_layout_entry_c* layout;
  const char* nholo_version;  /* the release of the headers it was compiled with */
  const char* nholo_revision; /* their git revision (recorded, not checked) */
  const char* compiler;       /* recorded, not checked */
  const nholo_model_c* model;

  /* initial states, one trajectory (host/run/initial_states.hpp) */
  /* NULL when the parameters are admissible, else why not (a static string) */
  const char* (*check_params)(const double* params);
  /* complete q, qd (the given components kept) from the constraints */
  int32_t (*complete_state)(const double* params, double t0, double* q, const uint8_t* q_given,
                            double* qd, const uint8_t* qd_given, nholo_consistency_c* out);
  int32_t (*project_state)(const double* params, double t0, double* q, double* qd,
                           nholo_consistency_c* out);
  /* 1 when A(q) has lost rank (sigma_min < rtol sigma_max, below the declared rank), else 0 */
  int32_t (*rank_deficient)(const double* params, double t0, const double* q, const double* qd,
                            double rtol);
  /* the drift statistic's prediction from the initial state (has_drift) */
  double (*drift_prediction)(const double* params, const double* q0, const double* qd0);

  /* one formulation's system with the run's parameters and options */
  int32_t (*system_open)(const char* formulation, const double* params, const nholo_eval_c* eval,
                         const nholo_integrator_c* opt, nholo_system_c** out,
                         nholo_system_info_c* info, char* err, uint64_t err_size);
  void (*system_close)(nholo_system_c* sys);
  /* a slice's initial integration state (rejected[i] != 0: not integrated) */
  int32_t (*start_states)(const nholo_system_c* sys, int64_t count, const double* q0,
                          const double* qd0, const double* l0, const uint8_t* rejected, double t0,
                          const nholo_states_c* out, char* err, uint64_t err_size);
  /* CPU backends: a window, then trajectory i of it for at most launch_steps
   * steps (0: to the window's end); window_run returns 1 when the trajectory
   * finished the window, 0 when not. Called from several threads at once
   * with distinct i. */
  int32_t (*window_open)(const nholo_system_c* sys, const nholo_window_args_c* args,
                         nholo_window_c** out, char* err, uint64_t err_size);
  int32_t (*window_run)(const nholo_window_c* w, int64_t i, int64_t launch_steps);
  void (*window_close)(nholo_window_c* w);
  /* the kernel argument (EnsembleWindow<Sys>, window_bytes): a GPU module's
   * (args->trajectory_major 0) or a lane add-on's (1) */
  int32_t (*gpu_window)(const nholo_system_c* sys, const nholo_window_args_c* args, void* dst,
                        uint64_t bytes, char* err, uint64_t err_size);
  /* 1 and out filled; 0 when the model has no such formulation (tangent != 0:
   * its tangent system, of a plugin compiled with NHOLO_PLUGIN_TANGENT) */
  int32_t (*window_layout)(const char* formulation, int32_t tangent, nholo_window_layout* out);
} nholo_plugin;

typedef const nholo_plugin* (*nholo_plugin_entry_fn)(void);

/* A plugin's SIMD lane add-on (host/model_files/plugin_lanes_define.hpp): the
 * lanes' kernels (kernels/ensemble_lanes.hpp) of the model's Udwadia–Kalaba
 * formulation compiled for one instruction set, a shared library of its own
 * beside the plugin, compiled by the same compiler from the same model
 * header. run takes the window the plugin's gpu_window writes with
 * trajectory_major = 1 (window_bytes of them, its window_layout's bytes). */
#define NHOLO_LANE_PLUGIN_ENTRY_SYMBOL "nholo_lane_plugin_entry_v1"
typedef struct nholo_lane_plugin {
  uint32_t abi_version; /* NHOLO_PLUGIN_ABI_VERSION */
  uint32_t lanes;       /* 8 (avx512) or 4 (avx2) */
  const char* nholo_version;
  const char* model; /* the model's name */
  const char* isa;   /* "avx512" or "avx2" */
  uint64_t window_bytes;
  nholo_lane_entry_c run;
} nholo_lane_plugin;

typedef const nholo_lane_plugin* (*nholo_lane_plugin_entry_fn)(void);

/* The layout table: the size of every struct above and the offset of every
 * member; both sides expand it with their compiler's sizeof and offsetof. */
/* clang-format off */
#define NHOLO_PLUGIN_LAYOUT(S, M)                                                               \
  S(nholo_integrator_c) NHOLO_INTEGRATOR_FIELDS(NHOLO_LAYOUT_INTEGRATOR_ROW, M)                 \
  S(nholo_eval_c) NHOLO_EVAL_FIELDS(NHOLO_LAYOUT_EVAL_ROW, M)                                   \
  M(nholo_eval_c, tangent_renormalize_every)                                                    \
  M(nholo_eval_c, tangent_admissible) M(nholo_eval_c, tangent_t_start)                            \
  S(nholo_arrays_c) NHOLO_ARRAYS_FIELDS(NHOLO_LAYOUT_ARRAYS_ROW, M)                             \
  S(nholo_window_args_c) M(nholo_window_args_c, arrays) M(nholo_window_args_c, count)           \
  M(nholo_window_args_c, save_times) M(nholo_window_args_c, n_saves)                            \
  M(nholo_window_args_c, trajectory_major)                                                      \
  S(nholo_states_c) M(nholo_states_c, y) M(nholo_states_c, t) M(nholo_states_c, h)              \
  M(nholo_states_c, err_prev) M(nholo_states_c, fail_time) M(nholo_states_c, steps)             \
  M(nholo_states_c, rejected) M(nholo_states_c, status)                                         \
  S(nholo_system_info_c) M(nholo_system_info_c, N) M(nholo_system_info_c, path_residual_index)  \
  M(nholo_system_info_c, tangent_base_size) M(nholo_system_info_c, tangent_exponents)          \
  M(nholo_system_info_c, window_bytes)                                                          \
  S(nholo_window_layout) M(nholo_window_layout, bytes) M(nholo_window_layout, align)            \
  M(nholo_window_layout, sys) M(nholo_window_layout, sys_align) M(nholo_window_layout, params)  \
  M(nholo_window_layout, opt) M(nholo_window_layout, opt_align) M(nholo_window_layout, arr)     \
  S(nholo_consistency_c) M(nholo_consistency_c, residual) M(nholo_consistency_c, converged)     \
  S(nholo_param_c) M(nholo_param_c, name) M(nholo_param_c, unit) M(nholo_param_c, doc)          \
  M(nholo_param_c, default_value) M(nholo_param_c, lo) M(nholo_param_c, hi)                     \
  M(nholo_param_c, has_lo) M(nholo_param_c, lo_open) M(nholo_param_c, has_hi)                   \
  M(nholo_param_c, hi_open)                                                                     \
  S(nholo_model_c) M(nholo_model_c, name) M(nholo_model_c, description) M(nholo_model_c, n)     \
  M(nholo_model_c, m) M(nholo_model_c, m_position) M(nholo_model_c, m_velocity)                 \
  M(nholo_model_c, m_acceleration) M(nholo_model_c, n_params) M(nholo_model_c, coordinates)     \
  M(nholo_model_c, coordinate_units) M(nholo_model_c, constraints)                              \
  M(nholo_model_c, constraint_kinds) M(nholo_model_c, params) M(nholo_model_c, formulations)    \
  M(nholo_model_c, n_formulations) M(nholo_model_c, has_energy) M(nholo_model_c, has_nonideal)  \
  M(nholo_model_c, has_conflated) M(nholo_model_c, has_hand_dynamics)                           \
  M(nholo_model_c, has_check_params) M(nholo_model_c, has_drift)                                \
  M(nholo_model_c, drift_coordinate) M(nholo_model_c, band_coordinate)                          \
  M(nholo_model_c, drift_prediction_doc)                                                        \
  S(nholo_layout_entry_c) M(nholo_layout_entry_c, what) M(nholo_layout_entry_c, value)          \
  S(nholo_plugin) M(nholo_plugin, abi_version) M(nholo_plugin, layout_count)                    \
  M(nholo_plugin, layout) M(nholo_plugin, nholo_version) M(nholo_plugin, nholo_revision)        \
  M(nholo_plugin, compiler) M(nholo_plugin, model) M(nholo_plugin, check_params)                \
  M(nholo_plugin, complete_state) M(nholo_plugin, project_state)                                \
  M(nholo_plugin, rank_deficient) M(nholo_plugin, drift_prediction)                             \
  M(nholo_plugin, system_open) M(nholo_plugin, system_close) M(nholo_plugin, start_states)      \
  M(nholo_plugin, window_open) M(nholo_plugin, window_run) M(nholo_plugin, window_close)        \
  M(nholo_plugin, gpu_window) M(nholo_plugin, window_layout)                                   \
  S(nholo_lane_run_c) M(nholo_lane_run_c, window) M(nholo_lane_run_c, window_bytes)             \
  M(nholo_lane_run_c, method) M(nholo_lane_run_c, idx) M(nholo_lane_run_c, n)                   \
  M(nholo_lane_run_c, launch_steps) M(nholo_lane_run_c, finished)                               \
  S(nholo_lane_plugin) M(nholo_lane_plugin, abi_version) M(nholo_lane_plugin, lanes)            \
  M(nholo_lane_plugin, nholo_version) M(nholo_lane_plugin, model) M(nholo_lane_plugin, isa)     \
  M(nholo_lane_plugin, window_bytes) M(nholo_lane_plugin, run)
/* clang-format on */
/* the rows of the field lists above as M(struct, member) */
#define NHOLO_LAYOUT_INTEGRATOR_ROW(M, type, member, kernel_member) M(nholo_integrator_c, member)
#define NHOLO_LAYOUT_EVAL_ROW(M, type, member, kernel_member) M(nholo_eval_c, member)
#define NHOLO_LAYOUT_ARRAYS_ROW(M, type, member, kernel_member) M(nholo_arrays_c, member)

#define NHOLO_LAYOUT_SIZE(T) {#T, (uint64_t)sizeof(T)},
#define NHOLO_LAYOUT_OFFSET(T, m) {#T "." #m, (uint64_t)offsetof(T, m)},

#ifdef __cplusplus
}
#endif

#endif /* NHOLO_PLUGIN_ABI_H */
