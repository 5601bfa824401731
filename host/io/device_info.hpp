// nholo/host/io/device_info.hpp — what a result file records of the device
// that made it (root attributes backend, device_name, threads, gpu, ...): the
// backend and DeviceInfo. Filled in by the backends (host/backends/), written by
// the root attributes (host/io/root_attributes.hpp).
#pragma once

#include <cstddef>
#include <string>

namespace nholo {

enum class Backend { omp, cpp, cuda };

inline const char* backend_name(Backend b) {
  switch (b) {
    case Backend::omp: return "omp";
    case Backend::cpp: return "cpp";
    case Backend::cuda: return "cuda";
  }
  return "?";
}

// What ran the ensemble, for the log and the file's root attributes.
struct DeviceInfo {
  Backend backend = Backend::omp;
  std::string name;                // "CPU (OpenMP, 2 threads)" or the GPU's name
  std::string compute_capability;  // "9.0" (CUDA), "" otherwise
  std::string driver_version;      // CUDA driver / runtime versions ("13.0"), "" otherwise
  std::string runtime_version;
  int gpu = -1;                  // CUDA device index
  int threads = 0;               // OpenMP threads (CPU backends)
  std::string simd;              // CPU backends' SIMD lanes: "avx512", "avx2", "off"; "" on a GPU
  int lanes = 1;                 // trajectories per thread at once (8, 4, 1)
  std::size_t memory_bytes = 0;  // device memory (CUDA), 0 for the host
};

}  // namespace nholo
