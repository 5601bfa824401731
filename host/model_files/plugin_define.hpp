// nholo/host/model_files/plugin_define.hpp — NHOLO_DEFINE_PLUGIN(Model): the one line
// that makes a translation unit a model plugin (host/model_files/plugin_abi.h):
// the model's functions behind the plugin's C table. Everything here is
// compiled by the plugin's compiler into the plugin; only the C types of
// plugin_abi.h cross to nholo, and no exception leaves a function of the
// table (each becomes an error code and a message).
// Compiled with -DNHOLO_VERSION=... -DNHOLO_GIT_REVISION=... of the nholo
// whose headers it includes (host/model_files/plugin.cpp and nholo_add_model pass them).
#pragma once

#include <cstddef>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "host/backends/formulation_system.hpp"
#include "host/backends/model_functions.hpp"
#include "host/backends/system_types.hpp"
#include "host/config/model_info_of.hpp"
#include "host/model_files/plugin_abi.h"
#include "host/model_files/plugin_convert.hpp"
#include "host/model_files/plugin_model_calls.hpp"
#ifdef NHOLO_PLUGIN_TANGENT
#include "kernels/lyapunov.hpp"
#ifndef NHOLO_PLUGIN_TANGENT_EXPONENTS  // the K of TangentSystem<Sys, K>: [lyapunov] exponents
#define NHOLO_PLUGIN_TANGENT_EXPONENTS 1
#endif
#endif

#if !defined(NHOLO_VERSION) || !defined(NHOLO_GIT_REVISION)
#error "a model plugin is compiled with -DNHOLO_VERSION and -DNHOLO_GIT_REVISION of its nholo"
#endif

#if defined(__clang__)
#define NHOLO_PLUGIN_COMPILER "clang++ " __clang_version__
#elif defined(__GNUC__)
#define NHOLO_PLUGIN_COMPILER "g++ " __VERSION__
#else
#define NHOLO_PLUGIN_COMPILER "unknown C++ compiler"
#endif

// a formulation's system inside the plugin, behind nholo_system_c*
struct nholo_system_c {
  nholo::FormulationSystem sys;
};
struct nholo_window_c {
  std::unique_ptr<nholo::CpuWindow> window;
};

namespace nholo::plugin_detail {

using namespace plugin_convert;

inline void put_error(char* err, uint64_t size, const char* what) {
  if (err && size) std::snprintf(err, static_cast<std::size_t>(size), "%s", what);
}

template <class T>
void copy_out(const std::vector<T>& from, T* to) {
  for (std::size_t i = 0; i < from.size(); ++i) to[i] = from[i];
}

// The plugin's units (NHOLO_PLUGIN_UNIT, set by host/model_files/plugin.cpp,
// which compiles them in parallel and links them into one plugin): unit 0
// holds the entry table, the model's description and its per-trajectory
// functions (ModelFunctions); each later unit the systems of some
// formulations (unit_of_formulation), so that the compilers' work on the
// formulations' kernels is shared among the machine's cores. Without
// NHOLO_PLUGIN_UNIT (a plugin built by nholo_add_model), one unit holds
// everything.
constexpr int kPluginUnits = 3;

// The unit holding the systems of the formulation of Row
// (host/backends/system_types.hpp): the vakonomic formulation, whose
// multiplier terms differentiate the constraints twice over nested duals, in
// a unit of its own; the others together.
template <class Row>
constexpr int unit_of_formulation() {
  return std::is_same<Row, system_types::VakonomicRow>::value ? 2 : 1;
}

// fn(sys) for formulation f of Model when unit Unit holds its systems
// (visit_formulation), or, when tangent, for its tangent system
// (kernels/lyapunov.hpp) renormalised every renormalize_every. A plugin
// compiled with NHOLO_PLUGIN_TANGENT holds the tangent systems only (a run
// with [lyapunov] uses nothing else, and they take as long to compile as the
// formulations), one without them the formulations only. false when Model
// has no formulation f or another unit holds it; throws when the plugin does
// not hold the kind asked for or f has no tangent system.
template <class Model, int Unit, class Fn>
bool visit_plugin_system(const char* f, bool tangent, double renormalize_every, Fn&& fn) {
  const tables::FormulationEntry* e = tables::find_formulation(f);
  if (!e) return false;
#ifdef NHOLO_PLUGIN_TANGENT
  if (!tangent)
    throw std::runtime_error("this plugin of model " + std::string(Model::name) +
                             " holds the tangent systems only (NHOLO_PLUGIN_TANGENT)");
#else
  (void)renormalize_every;
  if (tangent)
    throw std::runtime_error("this plugin of model " + std::string(Model::name) +
                             " was compiled without the tangent systems (NHOLO_PLUGIN_TANGENT)");
#endif
  bool has_tangent = true;
  const bool found = system_types::with_system_row(e->id, false, [&](auto row) {
    using Row = decltype(row);
    if constexpr (Row::template offered<Model>() && unit_of_formulation<Row>() == Unit) {
      using Sys = typename Row::template System<Model>;
#ifdef NHOLO_PLUGIN_TANGENT
      if constexpr (has_tangent_system<Sys>::value) {
        TangentSystem<Sys, NHOLO_PLUGIN_TANGENT_EXPONENTS> ts;
        ts.renormalize_every = renormalize_every;
        fn(ts);
      } else {
        has_tangent = false;
      }
#else
      fn(Sys{});
#endif
      return true;
    } else {
      return false;
    }
  });
  if (!has_tangent)
    throw std::runtime_error("formulation " + std::string(f) +
                             " has no tangent system (Lyapunov exponents): its state is not "
                             "smooth (the embedded formulation's running maximum)");
  return found;
}

// The systems of the formulations unit Unit holds, as the entry table's
// functions use them: open (a FormulationSystem with these parameters and
// options) and layout (the sizes of its kernel argument). Declared in every
// unit, defined in unit Unit only (NHOLO_DEFINE_PLUGIN's explicit
// instantiation): false when the unit does not hold formulation f.
template <class Model, int Unit>
struct UnitSystems {
  static bool open(const char* formulation, const double* params, const nholo_eval_c& eval,
                   const nholo_integrator_c& opt, FormulationSystem& out);
  static bool layout(const char* formulation, bool tangent, nholo_window_layout* out);
};

#if !defined(NHOLO_PLUGIN_UNIT) || NHOLO_PLUGIN_UNIT > 0
template <class Model, int Unit>
bool UnitSystems<Model, Unit>::open(const char* formulation, const double* params,
                                    const nholo_eval_c& eval, const nholo_integrator_c& opt,
                                    FormulationSystem& out) {
  const double every = eval.tangent_renormalize_every;
  return visit_plugin_system<Model, Unit>(formulation, every > 0, every, [&](auto sys) {
    sys.params = params_of_values<Model>(params);
    sys.eval = eval_of(eval);
    if constexpr (tangent_exponents<decltype(sys)>::value > 0) {
      sys.admissible = eval.tangent_admissible != 0;
      sys.t_start = eval.tangent_t_start;
    }
    out = formulation_system(sys, integrator_of(opt));
  });
}

template <class Model, int Unit>
bool UnitSystems<Model, Unit>::layout(const char* formulation, bool tangent,
                                      nholo_window_layout* out) {
  return visit_plugin_system<Model, Unit>(formulation, tangent, 1.0, [&](auto sys) {
    using Sys = decltype(sys);
    using W = EnsembleWindow<Sys>;
    out->bytes = sizeof(W);
    out->align = alignof(W);
    out->sys = sizeof(Sys);
    out->sys_align = alignof(Sys);
    out->params = sizeof(typename Sys::Params);
    out->opt = sizeof(IntegratorOptions);
    out->opt_align = alignof(IntegratorOptions);
    out->arr = sizeof(EnsembleArrays<double>);
  });
}
#endif

// fn(UnitSystems<Model, u>) for each unit u holding formulations, until fn
// returns true; whether one did
template <class Model, class Fn, int... U>
bool any_unit(Fn&& fn, std::integer_sequence<int, U...>) {
  return (fn(UnitSystems<Model, U + 1>{}) || ...);
}
template <class Model, class Fn>
bool any_unit(Fn&& fn) {
  return any_unit<Model>(fn, std::make_integer_sequence<int, kPluginUnits - 1>{});
}

// The model's description as C data, built once and kept for the life of
// the plugin.
template <class Model>
struct Description {
  ModelInfo info = model_info_of<Model>();
  std::vector<const char*> coordinates, units, constraints, kinds, formulations;
  std::vector<nholo_param_c> params;
  nholo_model_c c{};

  Description() {
    for (const auto& s : info.coordinates) coordinates.push_back(s.c_str());
    for (const auto& s : info.coordinate_units) units.push_back(s.c_str());
    for (const auto& s : info.constraints) constraints.push_back(s.c_str());
    for (const auto& s : info.constraint_kinds) kinds.push_back(s.c_str());
    for (const auto& s : info.formulations) formulations.push_back(s.c_str());
    for (const auto& p : info.params)
      params.push_back({p.name.c_str(), p.unit.c_str(), p.doc.c_str(), p.default_value, p.range.lo,
                        p.range.hi, p.range.has_lo, p.range.lo_open, p.range.has_hi,
                        p.range.hi_open});
    c.name = Model::name;
    c.description = Model::description;
    c.n = info.n;
    c.m = info.m;
    c.m_position = info.m_position;
    c.m_velocity = info.m_velocity;
    c.m_acceleration = info.m_acceleration;
    c.n_params = static_cast<int32_t>(params.size());
    c.coordinates = coordinates.data();
    c.coordinate_units = units.empty() ? nullptr : units.data();
    c.constraints = constraints.data();
    c.constraint_kinds = kinds.data();
    c.params = params.data();
    c.formulations = formulations.data();
    c.n_formulations = static_cast<int32_t>(formulations.size());
    c.has_energy = info.has_energy;
    c.has_nonideal = info.has_nonideal;
    c.has_conflated = info.has_conflated;
    c.has_hand_dynamics = info.has_hand_dynamics;
    c.has_check_params = has_check_params<Model>::value;
    if constexpr (has_drift_statistic<Model>::value) {
      c.has_drift = 1;
      c.drift_coordinate = Model::DriftStatistic::drift_coordinate;
      c.band_coordinate = Model::DriftStatistic::band_coordinate;
      c.drift_prediction_doc = Model::DriftStatistic::prediction_doc;
    }
  }
};

// The functions of the C table for Model.
template <class Model>
struct PluginOf {
  using F = ModelFunctions<Model>;

  static const char* check_params(const double* p) { return F::check_params(p); }
  static int32_t complete_state(const double* p, double t0, double* q, const uint8_t* q_given,
                                double* qd, const uint8_t* qd_given, nholo_consistency_c* out) {
    bool qg[Model::n], qdg[Model::n];
    for (int c = 0; c < Model::n; ++c) {
      qg[c] = q_given[c] != 0;
      qdg[c] = qd_given[c] != 0;
    }
    const ConsistencyResult<double> r = F::complete_state(p, t0, q, qg, qd, qdg);
    out->residual = r.residual;
    out->converged = r.converged;
    return 0;
  }
  static int32_t project_state(const double* p, double t0, double* q, double* qd,
                               nholo_consistency_c* out) {
    const ConsistencyResult<double> r = F::project_state(p, t0, q, qd);
    out->residual = r.residual;
    out->converged = r.converged;
    return 0;
  }
  static int32_t rank_deficient(const double* p, double t0, const double* q, const double* qd,
                                double rtol) {
    return F::rank_deficient(p, t0, q, qd, rtol) ? 1 : 0;
  }
  static double drift_prediction(const double* p, const double* q0, const double* qd0) {
    return F::drift_prediction(p, q0, qd0);
  }

  static int32_t system_open(const char* formulation, const double* params,
                             const nholo_eval_c* eval, const nholo_integrator_c* opt,
                             nholo_system_c** out, nholo_system_info_c* info, char* err,
                             uint64_t err_size) {
    try {
      auto s = std::make_unique<nholo_system_c>();
      const bool found = any_unit<Model>([&](auto unit) {
        return decltype(unit)::open(formulation, params, *eval, *opt, s->sys);
      });
      if (!found) {
        put_error(err, err_size,
                  ("'" + std::string(formulation) + "' is not available for model " +
                   std::string(Model::name))
                      .c_str());
        return -1;
      }
      info->N = s->sys.N;
      info->path_residual_index = s->sys.path_residual_index;
      info->tangent_base_size = s->sys.tangent_base_size;
      info->tangent_exponents = s->sys.tangent_exponents;
      info->window_bytes = s->sys.window_bytes;
      *out = s.release();
      return 0;
    } catch (const std::exception& e) {
      put_error(err, err_size, e.what());
      return -1;
    }
  }
  static void system_close(nholo_system_c* s) { delete s; }

  static int32_t start_states(const nholo_system_c* s, int64_t count, const double* q0,
                              const double* qd0, const double* l0, const uint8_t* rejected,
                              double t0, const nholo_states_c* out, char* err, uint64_t err_size) {
    try {
      HostStates h;
      s->sys.start(count, q0, qd0, l0, rejected, t0, h);
      copy_out(h.y, out->y);
      copy_out(h.t, out->t);
      copy_out(h.h, out->h);
      copy_out(h.err_prev, out->err_prev);
      copy_out(h.fail_time, out->fail_time);
      copy_out(h.steps, out->steps);
      copy_out(h.rejected, out->rejected);
      copy_out(h.status, out->status);
      return 0;
    } catch (const std::exception& e) {
      put_error(err, err_size, e.what());
      return -1;
    }
  }

  static int32_t window_open(const nholo_system_c* s, const nholo_window_args_c* a,
                             nholo_window_c** out, char* err, uint64_t err_size) {
    try {
      auto w = std::make_unique<nholo_window_c>();
      w->window = s->sys.cpu_window(arrays_of(a->arrays), a->count, a->save_times, a->n_saves);
      *out = w.release();
      return 0;
    } catch (const std::exception& e) {
      put_error(err, err_size, e.what());
      return -1;
    }
  }
  static int32_t window_run(const nholo_window_c* w, int64_t i, int64_t launch_steps) {
    return w->window->run(i, launch_steps) ? 1 : 0;
  }
  static void window_close(nholo_window_c* w) { delete w; }

  static int32_t gpu_window(const nholo_system_c* s, const nholo_window_args_c* a, void* dst,
                            uint64_t bytes, char* err, uint64_t err_size) {
    if (bytes != s->sys.window_bytes) {
      put_error(err, err_size, "gpu_window: the kernel argument's size differs from the plugin's");
      return -1;
    }
    s->sys.window(dst, arrays_of(a->arrays), a->count, a->save_times, a->n_saves,
                  a->trajectory_major != 0);
    return 0;
  }

  static int32_t window_layout(const char* formulation, int32_t tangent, nholo_window_layout* out) {
    bool found = false;
    try {
      found = any_unit<Model>(
          [&](auto unit) { return decltype(unit)::layout(formulation, tangent != 0, out); });
    } catch (const std::exception&) {
      found = false;
    }
    return found ? 1 : 0;
  }

  static const nholo_plugin* entry() {
    static const nholo_layout_entry_c layout[] = {
        NHOLO_PLUGIN_LAYOUT(NHOLO_LAYOUT_SIZE, NHOLO_LAYOUT_OFFSET)};
    static const Description<Model> description;
    static const nholo_plugin table = {NHOLO_PLUGIN_ABI_VERSION,
                                       static_cast<uint32_t>(sizeof layout / sizeof layout[0]),
                                       layout,
                                       NHOLO_VERSION,
                                       NHOLO_GIT_REVISION,
                                       NHOLO_PLUGIN_COMPILER,
                                       &description.c,
                                       &check_params,
                                       &complete_state,
                                       &project_state,
                                       &rank_deficient,
                                       &drift_prediction,
                                       &system_open,
                                       &system_close,
                                       &start_states,
                                       &window_open,
                                       &window_run,
                                       &window_close,
                                       &gpu_window,
                                       &window_layout};
    return &table;
  }
};

}  // namespace nholo::plugin_detail

// The plugin of ModelType: its entry point and table in unit 0 (or without
// NHOLO_PLUGIN_UNIT), the systems of unit k's formulations in unit k (all of
// them without NHOLO_PLUGIN_UNIT). With NHOLO_PLUGIN_OUT_OF_LINE (plugin.cpp
// defines it for a large model) the formulations see the model through
// OutOfLineModel (plugin_model_calls.hpp): its functions compiled once per
// scalar type and unit rather than inlined into every right-hand side, which
// is what a small model's speed wants (a call per function, and the AD
// seeds' zeros and ones no longer folded into the model's code: the rolling
// disk's run took twice the CPU time out of line, in one measurement on a
// loaded machine).
// (NHOLO_PLUGIN_MODEL: plugin_model_calls.hpp)
#define NHOLO_PLUGIN_ENTRY_POINT(ModelType)                                                    \
  extern "C" __attribute__((visibility("default"))) const nholo_plugin* nholo_plugin_entry_v1( \
      void) {                                                                                  \
    return nholo::plugin_detail::PluginOf<NHOLO_PLUGIN_MODEL(ModelType)>::entry();             \
  }
#define NHOLO_PLUGIN_UNIT_SYSTEMS(ModelType, Unit) \
  template struct nholo::plugin_detail::UnitSystems<NHOLO_PLUGIN_MODEL(ModelType), Unit>;
#if !defined(NHOLO_PLUGIN_UNIT)
#define NHOLO_DEFINE_PLUGIN(ModelType)    \
  NHOLO_PLUGIN_ENTRY_POINT(ModelType)     \
  NHOLO_PLUGIN_UNIT_SYSTEMS(ModelType, 1) \
  NHOLO_PLUGIN_UNIT_SYSTEMS(ModelType, 2)
#elif NHOLO_PLUGIN_UNIT == 0
#define NHOLO_DEFINE_PLUGIN(ModelType) NHOLO_PLUGIN_ENTRY_POINT(ModelType)
#else
#define NHOLO_DEFINE_PLUGIN(ModelType) NHOLO_PLUGIN_UNIT_SYSTEMS(ModelType, NHOLO_PLUGIN_UNIT)
#endif
