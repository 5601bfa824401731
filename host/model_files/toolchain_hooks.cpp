// nholo/host/model_files/toolchain_hooks.cpp — what config/ and run/ ask of the
// toolchain and cannot include: a configuration's plugin loaded and described
// (the loader the programs register, host/config/model_catalog.hpp), whether
// a model file's GPU kernels can be compiled here (the check the commands
// hand open_run_device, host/run/device_choice.hpp), answered by loading NVRTC.
#include "host/model_files/plugin.hpp"

namespace nholo {

ModelInfo plugin_model_info(const std::string& path, std::string& loaded_path) {
  const Plugin& pl = load_plugin_file(path);
  loaded_path = pl.path;
  return pl.runtime->info();
}

void check_gpu_module_compiler() {
  (void)nvrtc_description();
}

}  // namespace nholo
