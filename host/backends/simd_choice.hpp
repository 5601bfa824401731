// nholo/host/backends/simd_choice.hpp — which SIMD lanes a CPU backend
// integrates with (kernels/lanes.hpp, kernels/ensemble_lanes.hpp): the
// instruction set backend.simd asks for, checked against this CPU (cpuid).
//
//   auto    AVX-512 (8 lanes) where the CPU has AVX-512F, else AVX2 (4 lanes)
//           where it has AVX2 and FMA, else off
//   avx512, avx2   that one; refused (DeviceUnavailable) on a CPU without it
//   off     one trajectory at a time per thread (the scalar kernels)
#pragma once

#include <string>

#include "host/config/choices.hpp"

namespace nholo {

enum class SimdIsa { off, avx2, avx512 };

// this CPU's best: avx512, avx2 or off
SimdIsa cpu_simd_isa();
// backend.simd resolved on this CPU; throws DeviceUnavailable for an
// instruction set it lacks, naming what it has
SimdIsa resolve_simd(SimdChoice c);
const char* simd_isa_name(SimdIsa s);  // "avx512", "avx2", "off"
int simd_lanes(SimdIsa s);             // 8, 4, 1
// the vector units of this CPU nholo can use: "avx512f avx2 fma", "none"
std::string cpu_vector_units();

}  // namespace nholo
