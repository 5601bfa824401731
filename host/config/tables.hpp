// nholo/host/config/tables.hpp — one table per concept of the configuration:
// the formulations (and which models support them), the output fields (and
// how many components a save has), the integration methods, the drift
// controls and the other named choices. The config reader, the model
// descriptions and the file attributes read their names from here, in the
// order listed (the order of every message and of ModelInfo::formulations).
#pragma once

#include <cstddef>
#include <iterator>
#include <string>
#include <vector>

#include "host/config/choices.hpp"
#include "host/model_language/event_config.hpp"
#include "kernels/ensemble.hpp"
#include "kernels/event_program.hpp"
#include "kernels/events.hpp"
#include "kernels/integrate.hpp"
#include "kernels/system.hpp"

namespace nholo::tables {

// ---- formulations (kernels/system.hpp, kernels/formulations/)

// The formulations, in the order of kFormulations: the code that builds a
// formulation's system (host/backends/formulation_system.hpp visit_formulation, a GPU module's
// system type in host/model_files/gpu_module.cpp) switches on this.
enum class Formulation {
  udwadia_kalaba,
  lagrange_multiplier,
  null_space,
  vakonomic,
  conflated,
  embedded
};

// What a model must offer for a formulation to be available.
struct FormulationEntry {
  const char* name;
  Formulation id;
  // a saddle-point (KKT) system: singular at every state when the
  // constraints have redundant rows (declared_constraint_rank < m)
  bool needs_full_rank;
  // the multipliers are state: at least one constraint, none at the
  // acceleration level (VakonomicSystem)
  bool needs_position_or_velocity_constraints;
  bool needs_conflated_lagrangian;  // Model::conflated_lagrangian (Conflated<Model>)
  bool needs_embedded_constraints;  // Model's embedded constraints
                                    // (kernels/formulations/embedded.hpp)
  // the state holds one value per constraint (the vakonomic multipliers,
  // the embedded formulation's ell): ensemble.lambda0 gives their initial values
  bool takes_lambda0;
  // the result file has its Euler–Poisson check, euler_poisson_residual
  // (kernels/euler_poisson.hpp)
  bool has_euler_poisson_residual;
  // its right-hand side has a tangent flow (kernels/lyapunov.hpp
  // has_tangent_system: a smooth state), so [lyapunov] can run it
  bool has_tangent_system;
};

// clang-format off
inline constexpr FormulationEntry kFormulations[] = {
    // name                 id                                full rank  pos/vel  conflated  embedded  lambda0  Euler-Poisson  tangent
    {"udwadia_kalaba",       Formulation::udwadia_kalaba,      false,     false,   false,     false,    false,   false,         true},
    {"lagrange_multiplier",  Formulation::lagrange_multiplier, true,      false,   false,     false,    false,   false,         true},
    {"null_space",           Formulation::null_space,          false,     false,   false,     false,    false,   false,         true},
    {"vakonomic",            Formulation::vakonomic,           true,      true,    false,     false,    true,    false,         true},
    {"conflated",            Formulation::conflated,           false,     false,   true,      false,    false,   false,         true},
    {"embedded",             Formulation::embedded,            false,     false,   false,     true,     true,    true,          false},
};
// clang-format on

constexpr bool formulations_indexed_by_enum() {
  for (size_t i = 0; i < std::size(kFormulations); ++i)
    if (static_cast<size_t>(kFormulations[i].id) != i) return false;
  return true;
}
static_assert(formulations_indexed_by_enum(), "kFormulations out of enum order");

// The rule of needs_position_or_velocity_constraints: at least one
// constraint, none at the acceleration level (m constraints of all kinds).
constexpr bool position_or_velocity_constraints_only(int m, int m_acceleration) {
  return m > 0 && m_acceleration == 0;
}

// What a model offers, as far as the formulations care.
struct ModelTraits {
  int m = 0;               // constraints (all kinds)
  int m_acceleration = 0;  // constraints at the acceleration level
  bool redundant = false;  // declared constraint rank below m
  bool has_conflated = false;
  bool has_embedded = false;
};

inline bool supports(const FormulationEntry& f, const ModelTraits& t) {
  if (f.needs_full_rank && t.redundant) return false;
  if (f.needs_position_or_velocity_constraints &&
      !position_or_velocity_constraints_only(t.m, t.m_acceleration))
    return false;
  if (f.needs_conflated_lagrangian && !t.has_conflated) return false;
  if (f.needs_embedded_constraints && !t.has_embedded) return false;
  return true;
}

// nullptr when `name` is no formulation
inline const FormulationEntry* find_formulation(const std::string& name) {
  for (const auto& f : kFormulations)
    if (name == f.name) return &f;
  return nullptr;
}

// The formulations a model supports, in table order.
inline std::vector<std::string> supported_formulations(const ModelTraits& t) {
  std::vector<std::string> v;
  for (const auto& f : kFormulations)
    if (supports(f, t)) v.push_back(f.name);
  return v;
}

// The formulation every configuration runs unless `formulations` says otherwise.
inline constexpr const char* kDefaultFormulation = "udwadia_kalaba";

// ---- output fields (kernels/ensemble.hpp EnsembleArrays, the groups of a result file)

// What one save of a field holds: a value per coordinate (the file's third
// dimension is the coordinate scale), per constraint (the constraint scale),
// or a single value. Every formulation provides every field (the system's
// observables).
enum class Components {
  per_coordinate,
  per_constraint,
  one,
  per_exponent,  // one per exponent of [lyapunov] (its `exponents`)
};

// An output array of the ensemble kernel (EnsembleArrays' q, qdot, ...).
using FieldArray = double* EnsembleArrays<double>::*;

struct FieldEntry {
  const char* name;
  Components components;
  bool in_default;  // written when output.fields is not given
  // computed by every ensemble, written or not: q and qdot feed the
  // statistics (the block moments); the others only when written
  bool always_computed;
  // where the ensemble kernel stores it (kernels/ensemble.hpp)
  FieldArray array;
  // a residual (zero in exact arithmetic, rounding of terms of the state's
  // size in practice): `nholo diff` compares it against the state's scale,
  // not against its own largest value (host/analysis/diff.cpp)
  bool residual = false;
};

// clang-format off
inline constexpr FieldEntry kFields[] = {
    // name                 components                  default  always  kernel output
    {"q",                   Components::per_coordinate, true,    true,   &EnsembleArrays<double>::q},
    {"qdot",                Components::per_coordinate, true,    true,   &EnsembleArrays<double>::qdot},
    {"qddot",               Components::per_coordinate, false,   false,  &EnsembleArrays<double>::qddot},
    {"force_ideal",         Components::per_coordinate, false,   false,  &EnsembleArrays<double>::force_ideal},
    {"force_nonideal",      Components::per_coordinate, false,   false,  &EnsembleArrays<double>::force_nonideal},
    {"multiplier",          Components::per_constraint, false,   false,  &EnsembleArrays<double>::multiplier},
    {"constraint_residual", Components::one,            true,    false,  &EnsembleArrays<double>::constraint_residual, true},
    {"energy",              Components::one,            true,    false,  &EnsembleArrays<double>::energy},
    {"lyapunov_estimate",   Components::per_exponent,   false,   false,  &EnsembleArrays<double>::lyapunov_estimate},
    {"lyapunov_observed_estimate", Components::per_exponent, false, false, &EnsembleArrays<double>::lyapunov_observed_estimate},
};
// clang-format on

// nullptr when `name` is no field
inline const FieldEntry* find_field(const std::string& name) {
  for (const auto& f : kFields)
    if (name == f.name) return &f;
  return nullptr;
}

// Components per save of field `name` for n coordinates, m constraints and
// `exponents` Lyapunov exponents.
inline int field_components(const std::string& name, int n, int m, int exponents = 1) {
  const FieldEntry* f = find_field(name);
  if (f && f->components == Components::per_coordinate) return n;
  if (f && f->components == Components::per_constraint) return m;
  if (f && f->components == Components::per_exponent) return exponents;
  return 1;
}

// ---- named choices of the configuration, each in the order of its enum
// (NamedChoice: choices.hpp)

inline constexpr NamedChoice<Method> kMethods[] = {
    {"rk4", Method::rk4},
    {"dopri5", Method::dopri5},
    {"dop853", Method::dop853},
};
inline constexpr NamedChoice<DriftControl> kDriftControls[] = {
    {"none", DriftControl::none},
    {"baumgarte", DriftControl::baumgarte},
    {"project", DriftControl::project},
};

// the entries of kMethods and kDriftControls are indexed by their enum
// (result files' attributes name them by index)
static_assert(indexed_by_enum(kMethods) && indexed_by_enum(kDriftControls),
              "kMethods / kDriftControls out of enum order");

// ---- events: the names of an event's direction and action and the bound
// on its records (kEventDirections, kEventActions, kMaxEventRecords) are the
// model language's, host/model_language/event_config.hpp

inline const char* method_name(Method m) {
  return kMethods[static_cast<size_t>(m)].name;
}
inline const char* drift_name(DriftControl d) {
  return kDriftControls[static_cast<size_t>(d)].name;
}

// the samplers, the on_violation choices, the output modes and the backend
// devices: choices.hpp (kSamplers, kOnViolation, kOutputModes, kDevices);
// names_of, name_of and find_choice read every table of choices

}  // namespace nholo::tables
