// nholo/host/config/choices.hpp — the named choices of the configuration
// that are no kernel enum (ensemble.sampler, ensemble.on_violation,
// output.mode, backend.device): each an enum and its table of names, in enum
// order (the order every message lists them in). A choice of a kernel enum
// (integrator.method, integrator.drift) has its table in tables.hpp, an
// event's direction and action theirs in host/model_language/event_config.hpp;
// all share NamedChoice and its lookups (host/model_language/named_choice.hpp).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "host/model_language/named_choice.hpp"

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
// backend.simd: the CPU backends' SIMD lanes (kernels/lanes.hpp,
// host/backends/simd_choice.hpp); automatic is written "auto"
enum class SimdChoice { automatic, off, avx2, avx512 };

namespace tables {

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
inline constexpr NamedChoice<SimdChoice> kSimd[] = {
    {"auto", SimdChoice::automatic},
    {"off", SimdChoice::off},
    {"avx2", SimdChoice::avx2},
    {"avx512", SimdChoice::avx512},
};
static_assert(indexed_by_enum(kSamplers) && indexed_by_enum(kOnViolation) &&
                  indexed_by_enum(kOutputModes) && indexed_by_enum(kDevices) &&
                  indexed_by_enum(kSimd),
              "kSamplers / kOnViolation / kOutputModes / kDevices / kSimd out of enum order");

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
inline const char* name_of(SimdChoice s) {
  return tables::name_of(tables::kSimd, s);
}

}  // namespace nholo
