// nholo/host/cli/devices_command.cpp — `nholo devices`: the backends built in
// and the CUDA devices visible (main.cpp adds the MPI library's line).
#include <sstream>

#include "host/backends/cpu_ensemble.hpp"
#include "host/cli/commands.hpp"
#include "host/run/root_attributes.hpp"
#ifdef NHOLO_WITH_CUDA
#include "host/backends/cuda_ensemble.hpp"
#endif

namespace nholo {

std::string devices_command() {
  std::ostringstream os;
  os << "nholo " << nholo_version() << " (" << nholo_git_revision() << ")\n";
  os << "backends: omp (OpenMP, " << CpuDevice(Backend::omp, 0).info().threads
     << " threads here), cpp (serial)";
#ifdef NHOLO_WITH_CUDA
  os << ", cuda\n";
  os << "CUDA devices: " << cuda_backend::describe_devices() << "\n";
  os << "backend.device = \"auto\" runs on "
     << (cuda_backend::device_count() > 0 ? "the GPU backend.gpu (default 0)" : "OpenMP") << "\n";
#else
  os << "\nCUDA: not built in (configure with -DNHOLO_WITH_CUDA=ON); auto runs on OpenMP\n";
#endif
  return os.str();
}

}  // namespace nholo
