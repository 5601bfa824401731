// nholo/host/config/choices.hpp — the named choices of the configuration
// that are no kernel enum (ensemble.sampler, ensemble.on_violation,
// output.mode, backend.device): each an enum and its table of names, in enum
// order (the order every message lists them in). A choice of a kernel enum
// (integrator.method, integrator.drift, an event's direction and action) has
// its table in tables.hpp, which shares NamedChoice and the lookups here.
#pragma once

#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

namespace nholo {

// ensemble.sampler: how the initial states are drawn (host/config/sampling.hpp)
enum class SamplerKind { random, grid, sobol, file };
// ensemble.on_violation: what becomes of an initial state the completion
// leaves violating the constraints (host/run/initial_states.hpp)
enum class OnViolation { project, reject, error };
// output.mode: per-save time series (full) or none (statistics); a run
// config says it by its fields (RunConfig::fields empty: statistics)
enum class OutputMode { full, statistics };
// backend.device: the backend asked for (host/run/device_choice.hpp);
// automatic is written "auto"
enum class BackendDevice { automatic, omp, cpp, cuda };

namespace tables {

// a named value of an enum the configuration chooses by name
template <class Enum>
struct NamedChoice {
  const char* name;
  Enum value;
};

// a table whose entry i is the enum's value i (name_of indexes it by value)
template <class Enum, size_t N>
constexpr bool indexed_by_enum(const NamedChoice<Enum> (&table)[N]) {
  for (size_t i = 0; i < N; ++i)
    if (static_cast<size_t>(table[i].value) != i) return false;
  return true;
}

template <class Enum, size_t N>
constexpr const char* name_of(const NamedChoice<Enum> (&table)[N], Enum value) {
  return table[static_cast<size_t>(value)].name;
}

// the entry named `name`; nullptr when there is none
template <class Enum, size_t N>
const NamedChoice<Enum>* find_choice(const NamedChoice<Enum> (&table)[N], const std::string& name) {
  for (const auto& e : table)
    if (name == e.name) return &e;
  return nullptr;
}

// the names of a table, in its order (for messages and choices)
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

inline constexpr NamedChoice<SamplerKind> kSamplers[] = {
    {"random", SamplerKind::random},
    {"grid", SamplerKind::grid},
    {"sobol", SamplerKind::sobol},
    {"file", SamplerKind::file},
};
inline constexpr NamedChoice<OnViolation> kOnViolation[] = {
    {"project", OnViolation::project},
    {"reject", OnViolation::reject},
    {"error", OnViolation::error},
};
inline constexpr NamedChoice<OutputMode> kOutputModes[] = {
    {"full", OutputMode::full},
    {"statistics", OutputMode::statistics},
};
inline constexpr NamedChoice<BackendDevice> kDevices[] = {
    {"auto", BackendDevice::automatic},
    {"omp", BackendDevice::omp},
    {"cpp", BackendDevice::cpp},
    {"cuda", BackendDevice::cuda},
};
static_assert(indexed_by_enum(kSamplers) && indexed_by_enum(kOnViolation) &&
                  indexed_by_enum(kOutputModes) && indexed_by_enum(kDevices),
              "kSamplers / kOnViolation / kOutputModes / kDevices out of enum order");

}  // namespace tables

// the configuration's name of each choice
inline const char* name_of(SamplerKind s) {
  return tables::name_of(tables::kSamplers, s);
}
inline const char* name_of(OnViolation v) {
  return tables::name_of(tables::kOnViolation, v);
}
inline const char* name_of(OutputMode m) {
  return tables::name_of(tables::kOutputModes, m);
}
inline const char* name_of(BackendDevice d) {
  return tables::name_of(tables::kDevices, d);
}

}  // namespace nholo
