// nholo/host/model_files/plugin_convert.hpp — nholo's option and array types to and
// from the C structs of the plugin interface (plugin_abi.h), both directions
// side by side: nholo converts to C (plugin_runtime.cpp), the plugin back
// (plugin_define.hpp). A field added to a struct is added here, twice.
#pragma once

#include <cstdint>

#include "host/model_files/plugin_abi.h"
#include "kernels/ensemble.hpp"
#include "kernels/integrate.hpp"
#include "kernels/system.hpp"

namespace nholo::plugin_convert {

// ---- to C (nholo's side)

inline nholo_integrator_c integrator_c(const IntegratorOptions& o) {
  nholo_integrator_c c{};
  c.method = static_cast<int32_t>(o.method);
  c.rtol = o.rtol;
  c.atol = o.atol;
  c.dt = o.dt;
  c.dt_min = o.dt_min;
  c.dt_max = o.dt_max;
  c.max_steps = o.max_steps;
  c.safety = o.safety;
  c.fac_min = o.fac_min;
  c.fac_max = o.fac_max;
  c.pi_beta = o.pi_beta;
  return c;
}

inline nholo_eval_c eval_c(const EvalOptions& e) {
  nholo_eval_c c{};
  c.pinv_rtol = e.pinv.rtol;
  c.pinv_atol = e.pinv.atol;
  c.pinv_chol_rtol = e.pinv.chol_rtol;
  c.pinv_gram_rtol = e.pinv.gram_rtol;
  c.drift = static_cast<int32_t>(e.drift);
  c.project_iterations = e.project_iterations;
  c.baumgarte_alpha = e.baumgarte_alpha;
  c.baumgarte_beta = e.baumgarte_beta;
  c.project_tol = e.project_tol;
  c.lu_rtol = e.lu_rtol;
  return c;
}

inline nholo_window_args_c window_args(const EnsembleArrays<double>& a, int64_t count,
                                       const double* save_times, int ns, bool trajectory_major) {
  nholo_window_args_c w{};
  nholo_arrays_c& c = w.arrays;
  c.y = a.y;
  c.t = a.t;
  c.h = a.h;
  c.err_prev = a.err_prev;
  c.fail_time = a.fail_time;
  c.steps = a.steps;
  c.rejected = a.rejected;
  c.status = a.status;
  c.q = a.q;
  c.qdot = a.qdot;
  c.qddot = a.qddot;
  c.force_ideal = a.force_ideal;
  c.force_nonideal = a.force_nonideal;
  c.multiplier = a.multiplier;
  c.constraint_residual = a.constraint_residual;
  c.energy = a.energy;
  c.params = a.params;
  c.save_k = a.save_k;
  c.interval_start = a.interval_start;
  c.events = a.events;
  c.event_count = a.event_count;
  c.event_records = a.event_records;
  c.event_g = a.event_g;
  w.count = count;
  w.save_times = save_times;
  w.n_saves = ns;
  w.trajectory_major = trajectory_major ? 1 : 0;
  return w;
}

// ---- from C (the plugin's side)

inline IntegratorOptions integrator_of(const nholo_integrator_c& c) {
  IntegratorOptions o;
  o.method = static_cast<Method>(c.method);
  o.rtol = c.rtol;
  o.atol = c.atol;
  o.dt = c.dt;
  o.dt_min = c.dt_min;
  o.dt_max = c.dt_max;
  o.max_steps = c.max_steps;
  o.safety = c.safety;
  o.fac_min = c.fac_min;
  o.fac_max = c.fac_max;
  o.pi_beta = c.pi_beta;
  return o;
}

inline EvalOptions eval_of(const nholo_eval_c& c) {
  EvalOptions e;
  e.pinv.rtol = c.pinv_rtol;
  e.pinv.atol = c.pinv_atol;
  e.pinv.chol_rtol = c.pinv_chol_rtol;
  e.pinv.gram_rtol = c.pinv_gram_rtol;
  e.drift = static_cast<DriftControl>(c.drift);
  e.baumgarte_alpha = c.baumgarte_alpha;
  e.baumgarte_beta = c.baumgarte_beta;
  e.project_iterations = c.project_iterations;
  e.project_tol = c.project_tol;
  e.lu_rtol = c.lu_rtol;
  return e;
}

inline EnsembleArrays<double> arrays_of(const nholo_arrays_c& c) {
  EnsembleArrays<double> a;
  a.y = c.y;
  a.t = c.t;
  a.h = c.h;
  a.err_prev = c.err_prev;
  a.fail_time = c.fail_time;
  a.steps = c.steps;
  a.rejected = c.rejected;
  a.status = c.status;
  a.q = c.q;
  a.qdot = c.qdot;
  a.qddot = c.qddot;
  a.force_ideal = c.force_ideal;
  a.force_nonideal = c.force_nonideal;
  a.multiplier = c.multiplier;
  a.constraint_residual = c.constraint_residual;
  a.energy = c.energy;
  a.params = c.params;
  a.save_k = c.save_k;
  a.interval_start = c.interval_start;
  a.events = static_cast<const EventTable*>(c.events);
  a.event_count = c.event_count;
  a.event_records = c.event_records;
  a.event_g = c.event_g;
  return a;
}

}  // namespace nholo::plugin_convert
