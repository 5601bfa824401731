// nholo/host/model_files/plugin_convert.hpp — nholo's option and array types to and
// from the C structs of the plugin interface (plugin_abi.h), both directions
// made from the interface's field lists (NHOLO_INTEGRATOR_FIELDS, ...): nholo
// converts to C (plugin_runtime.cpp), the plugin back (plugin_define.hpp). A
// member added to a kernel struct is a row of its list, nothing here.
#pragma once

#include <cstdint>

#include "host/model_files/plugin_abi.h"
#include "kernels/ensemble.hpp"
#include "kernels/integrate.hpp"
#include "kernels/system.hpp"

namespace nholo::plugin_convert {

// A kernel member without a row in its list would stay at its default on
// the plugin's side: where the C struct lays out the same members in the
// same order, the two must be the same size. (EvalOptions is ordered
// otherwise, and nholo_eval_c also holds the tangent system's options: its
// sizes prove nothing.)
static_assert(sizeof(nholo_arrays_c) == sizeof(EnsembleArrays<double>),
              "EnsembleArrays has a member NHOLO_ARRAYS_FIELDS (plugin_abi.h) lacks");
static_assert(sizeof(nholo_integrator_c) == sizeof(IntegratorOptions),
              "IntegratorOptions has a member NHOLO_INTEGRATOR_FIELDS (plugin_abi.h) lacks");

// one row of a field list: the C struct c from the kernel struct k, and back
#define NHOLO_FIELD_TO_C(A, type, member, kernel_member) \
  c.member = static_cast<type>(k.kernel_member);
#define NHOLO_FIELD_FROM_C(A, type, member, kernel_member) \
  k.kernel_member = static_cast<decltype(k.kernel_member)>(c.member);

// ---- to C (nholo's side)

inline nholo_integrator_c integrator_c(const IntegratorOptions& k) {
  nholo_integrator_c c{};
  NHOLO_INTEGRATOR_FIELDS(NHOLO_FIELD_TO_C, ~)
  return c;
}

// tangent_renormalize_every, tangent_admissible and tangent_t_start, which
// no kernel struct has, stay 0
inline nholo_eval_c eval_c(const EvalOptions& k) {
  nholo_eval_c c{};
  NHOLO_EVAL_FIELDS(NHOLO_FIELD_TO_C, ~)
  return c;
}

inline nholo_window_args_c window_args(const EnsembleArrays<double>& k, int64_t count,
                                       const double* save_times, int ns, bool trajectory_major) {
  nholo_window_args_c w{};
  nholo_arrays_c& c = w.arrays;
  NHOLO_ARRAYS_FIELDS(NHOLO_FIELD_TO_C, ~)
  w.count = count;
  w.save_times = save_times;
  w.n_saves = ns;
  w.trajectory_major = trajectory_major ? 1 : 0;
  return w;
}

// ---- from C (the plugin's side)

inline IntegratorOptions integrator_of(const nholo_integrator_c& c) {
  IntegratorOptions k;
  NHOLO_INTEGRATOR_FIELDS(NHOLO_FIELD_FROM_C, ~)
  return k;
}

inline EvalOptions eval_of(const nholo_eval_c& c) {
  EvalOptions k;
  NHOLO_EVAL_FIELDS(NHOLO_FIELD_FROM_C, ~)
  return k;
}

inline EnsembleArrays<double> arrays_of(const nholo_arrays_c& c) {
  EnsembleArrays<double> k;
  NHOLO_ARRAYS_FIELDS(NHOLO_FIELD_FROM_C, ~)
  return k;
}

#undef NHOLO_FIELD_TO_C
#undef NHOLO_FIELD_FROM_C

}  // namespace nholo::plugin_convert
