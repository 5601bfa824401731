// nholo/host/model_files/gpu_compiler.cpp — the run's question whether a model
// file's GPU kernels can be compiled here (host/run/device_choice.hpp), answered
// by loading NVRTC (host/model_files/plugin.hpp).
#include "host/model_files/plugin.hpp"
#include "host/run/device_choice.hpp"

namespace nholo {

void check_gpu_module_compiler() {
  (void)nvrtc_description();
}

}  // namespace nholo
