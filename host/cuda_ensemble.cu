// nholo/host/cuda_ensemble.cu — device queries of the CUDA backend. The
// ensemble integrator itself (run_window) is in host/cuda_ensemble_impl.cuh,
// instantiated per model in the translation units CMakeLists.txt generates.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "host/cuda_ensemble.hpp"
#include "models/registry.hpp"

namespace nholo::cuda_backend {

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return n;
}

std::string describe_device() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return std::string("no CUDA device: ") + cudaGetErrorString(e);
  }
  if (n == 0) return "no CUDA device";
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) +
         std::to_string(prop.minor) + ", " + std::to_string(prop.totalGlobalMem >> 20) + " MiB)";
}

// CMakeLists.txt generates one instantiating translation unit per model in
// its NHOLO_MODEL_TYPES list and passes the list's length here.
static_assert(models::AllModels::size == NHOLO_CUDA_MODEL_COUNT,
              "NHOLO_MODEL_TYPES in CMakeLists.txt must list every registered model");

}  // namespace nholo::cuda_backend
