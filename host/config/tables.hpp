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
#include <type_traits>
#include <vector>

#include "kernels/integrate.hpp"
#include "kernels/system.hpp"

namespace nholo::tables {

// ---- formulations (kernels/system.hpp, formulations.hpp, embedded.hpp)

// What a model must offer for a formulation to be available.
struct FormulationEntry {
  const char* name;
  // a saddle-point (KKT) system: singular at every state when the
  // constraints have redundant rows (declared_constraint_rank < m)
  bool needs_full_rank;
  // the multipliers are state: at least one constraint, none at the
  // acceleration level (VakonomicSystem)
  bool needs_position_or_velocity_constraints;
  bool needs_conflated_lagrangian;  // Model::conflated_lagrangian (Conflated<Model>)
  bool needs_embedded_constraints;  // Model's embedded constraints (kernels/embedded.hpp)
  // the state holds one value per constraint (the vakonomic multipliers,
  // the embedded formulation's ell): ensemble.lambda0 gives their initial values
  bool takes_lambda0;
};

// clang-format off
inline constexpr FormulationEntry kFormulations[] = {
    // name                 full rank  pos/vel  conflated  embedded  lambda0
    {"udwadia_kalaba",       false,     false,   false,     false,    false},
    {"lagrange_multiplier",  true,      false,   false,     false,    false},
    {"null_space",           false,     false,   false,     false,    false},
    {"vakonomic",            true,      true,    false,     false,    true},
    {"conflated",            false,     false,   true,      false,    false},
    {"embedded",             false,     false,   false,     true,     true},
};
// clang-format on

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
  if (f.needs_position_or_velocity_constraints && (t.m == 0 || t.m_acceleration > 0)) return false;
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
enum class Components { per_coordinate, per_constraint, one };

struct FieldEntry {
  const char* name;
  Components components;
  bool in_default;  // written when output.fields is not given
};

inline constexpr FieldEntry kFields[] = {
    {"q", Components::per_coordinate, true},
    {"qdot", Components::per_coordinate, true},
    {"qddot", Components::per_coordinate, false},
    {"force_ideal", Components::per_coordinate, false},
    {"force_nonideal", Components::per_coordinate, false},
    {"multiplier", Components::per_constraint, false},
    {"constraint_residual", Components::one, true},
    {"energy", Components::one, true},
};

// nullptr when `name` is no field
inline const FieldEntry* find_field(const std::string& name) {
  for (const auto& f : kFields)
    if (name == f.name) return &f;
  return nullptr;
}

// Components per save of field `name` for n coordinates and m constraints.
inline int field_components(const std::string& name, int n, int m) {
  const FieldEntry* f = find_field(name);
  if (f && f->components == Components::per_coordinate) return n;
  if (f && f->components == Components::per_constraint) return m;
  return 1;
}

// ---- named choices of the configuration, each in the order of its enum

struct MethodEntry {
  const char* name;
  Method method;
};
inline constexpr MethodEntry kMethods[] = {
    {"rk4", Method::rk4},
    {"dopri5", Method::dopri5},
    {"dop853", Method::dop853},
};

struct DriftEntry {
  const char* name;
  DriftControl drift;
};
inline constexpr DriftEntry kDriftControls[] = {
    {"none", DriftControl::none},
    {"baumgarte", DriftControl::baumgarte},
    {"project", DriftControl::project},
};

// the entries of kMethods and kDriftControls are indexed by their enum
// (result files' attributes name them by index)
constexpr bool indexed_by_enum() {
  for (size_t i = 0; i < std::size(kMethods); ++i)
    if (static_cast<size_t>(kMethods[i].method) != i) return false;
  for (size_t i = 0; i < std::size(kDriftControls); ++i)
    if (static_cast<size_t>(kDriftControls[i].drift) != i) return false;
  return true;
}
static_assert(indexed_by_enum(), "kMethods / kDriftControls out of enum order");

inline const char* method_name(Method m) {
  return kMethods[static_cast<size_t>(m)].name;
}
inline const char* drift_name(DriftControl d) {
  return kDriftControls[static_cast<size_t>(d)].name;
}

inline constexpr const char* kSamplers[] = {"random", "grid", "sobol", "file"};
inline constexpr const char* kOnViolation[] = {"project", "reject", "error"};
inline constexpr const char* kOutputModes[] = {"full", "statistics"};
inline constexpr const char* kDevices[] = {"auto", "omp", "cpp", "cuda"};

// ---- lists of names, for messages and choices

template <class Entry, size_t N>
std::vector<std::string> names_of(const Entry (&table)[N]) {
  std::vector<std::string> v;
  for (const auto& e : table) {
    if constexpr (std::is_same_v<Entry, const char*>)
      v.push_back(e);
    else
      v.push_back(e.name);
  }
  return v;
}

}  // namespace nholo::tables
