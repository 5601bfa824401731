// nholo/host/backends/simd_choice.cpp — backend.simd against this CPU.
#include "host/backends/simd_choice.hpp"

#include "host/config/config.hpp"

namespace nholo {

namespace {
bool has_avx512() {
  return __builtin_cpu_supports("avx512f");
}
bool has_avx2_fma() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
}  // namespace

SimdIsa cpu_simd_isa() {
  if (has_avx512() && has_avx2_fma()) return SimdIsa::avx512;
  if (has_avx2_fma()) return SimdIsa::avx2;
  return SimdIsa::off;
}

std::string cpu_vector_units() {
  std::string s;
  if (has_avx512()) s += "avx512f ";
  if (__builtin_cpu_supports("avx2")) s += "avx2 ";
  if (__builtin_cpu_supports("fma")) s += "fma ";
  if (s.empty()) return "none";
  s.pop_back();
  return s;
}

SimdIsa resolve_simd(SimdChoice c) {
  switch (c) {
    case SimdChoice::automatic: return cpu_simd_isa();
    case SimdChoice::off: return SimdIsa::off;
    case SimdChoice::avx2:
      if (!has_avx2_fma())
        throw DeviceUnavailable(
            "backend.simd", "'avx2': this CPU has no AVX2 with FMA (it has: " + cpu_vector_units() +
                                "); accepted here: auto, off");
      return SimdIsa::avx2;
    case SimdChoice::avx512:
      if (cpu_simd_isa() != SimdIsa::avx512)
        throw DeviceUnavailable(
            "backend.simd", "'avx512': this CPU has no AVX-512F (it has: " + cpu_vector_units() +
                                "); accepted here: auto, off" + (has_avx2_fma() ? ", avx2" : ""));
      return SimdIsa::avx512;
  }
  return SimdIsa::off;
}

const char* simd_isa_name(SimdIsa s) {
  switch (s) {
    case SimdIsa::avx512: return "avx512";
    case SimdIsa::avx2: return "avx2";
    case SimdIsa::off: return "off";
  }
  return "off";
}

int simd_lanes(SimdIsa s) {
  return s == SimdIsa::avx512 ? 8 : s == SimdIsa::avx2 ? 4 : 1;
}

}  // namespace nholo
