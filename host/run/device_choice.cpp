// nholo/host/run/device_choice.cpp — the device of a run, chosen from the
// configuration and what this build and machine offer.
#include "host/run/device_choice.hpp"

#include <sstream>

#include "host/backends/cpu_ensemble.hpp"
#ifdef NHOLO_WITH_CUDA
#include "host/backends/cuda_ensemble.hpp"
#endif

namespace nholo {

namespace {

// Refuses a backend this build or machine cannot give, before anything is written.
void check_backend(const RunConfig& cfg) {
  if (cfg.device != BackendDevice::cuda) return;
  if (!cfg.model_plugin.empty())
    throw DeviceUnavailable(
        "backend.device", "'cuda': model '" + cfg.model + "' comes from a plugin file (" +
                              cfg.model_plugin +
                              "), which runs on the CPU backends only: nholo "
                              "compiles GPU kernels from model files, and a plugin file carries no "
                              "model file; accepted: auto, omp, cpp");
#ifdef NHOLO_WITH_CUDA
  if (cuda_backend::device_count() == 0)
    throw DeviceUnavailable("backend.device", "'cuda' requested but " +
                                                  cuda_backend::describe_devices() +
                                                  "; accepted here: auto, omp, cpp");
  if (const std::string why = cuda_backend::check_only_build(); !why.empty())
    throw DeviceUnavailable("backend.device", "'cuda': " + why + "; accepted here: auto, omp, cpp");
  if (cfg.gpu >= cuda_backend::device_count())
    throw DeviceUnavailable("backend.gpu", std::to_string(cfg.gpu) +
                                               " is not a CUDA device here (" +
                                               cuda_backend::describe_devices() + ")");
#else
  throw DeviceUnavailable("backend.device",
                          "'cuda' is not available: this nholo was built without CUDA "
                          "(configure with -DNHOLO_WITH_CUDA=ON); accepted: auto, omp, cpp");
#endif
}

}  // namespace

int run_host_threads(const RunConfig& cfg) {
  if (cfg.device == BackendDevice::cpp) return 1;
  return cfg.threads > 0 ? cfg.threads : std::max(1, omp_get_max_threads());
}

std::unique_ptr<Device> open_run_device(const RunConfig& cfg,
                                        const GpuCompilerCheck& gpu_compiler_check,
                                        std::string* note) {
  check_backend(cfg);
  if (note) note->clear();
  if (cfg.device == BackendDevice::cpp) return std::make_unique<CpuDevice>(Backend::cpp, 1, resolve_simd(cfg.simd));
  if (cfg.device == BackendDevice::omp)
    return std::make_unique<CpuDevice>(Backend::omp, cfg.threads, resolve_simd(cfg.simd));
  if (!cfg.model_plugin.empty()) {
    if (note) *note = "auto: plugin files run on the CPU backends";
    return std::make_unique<CpuDevice>(Backend::omp, cfg.threads, resolve_simd(cfg.simd));
  }
#ifdef NHOLO_WITH_CUDA
  if (const std::string why = cuda_backend::check_only_build();
      !why.empty() && cuda_backend::device_count() > 0) {
    if (note) *note = "auto: a GPU is here, but " + why;
    return std::make_unique<CpuDevice>(Backend::omp, cfg.threads, resolve_simd(cfg.simd));
  }
  if (cfg.model_spec && cfg.device != BackendDevice::cuda && cuda_backend::device_count() > 0) {
    // auto: a model file takes the GPU when NVRTC can compile its kernels
    try {
      gpu_compiler_check();
    } catch (const std::exception& e) {
      if (note) *note = std::string("auto: a GPU is here, but ") + e.what();
      return std::make_unique<CpuDevice>(Backend::omp, cfg.threads, resolve_simd(cfg.simd));
    }
  }
  if (cfg.device == BackendDevice::cuda || cuda_backend::device_count() > 0)
    return cuda_backend::open_device(cfg.gpu);
  if (note) *note = "auto: " + cuda_backend::describe_devices();
#else
  (void)gpu_compiler_check;
  if (note) *note = "auto: this nholo was built without CUDA";
#endif
  return std::make_unique<CpuDevice>(Backend::omp, cfg.threads, resolve_simd(cfg.simd));
}

std::string describe_device(const DeviceInfo& d) {
  std::string s = std::string(backend_name(d.backend)) + ": " + d.name;
  if (d.backend != Backend::cuda && d.simd != "off")
    s += ", SIMD " + d.simd + " (" + std::to_string(d.lanes) + " lanes)";
  if (d.backend == Backend::cuda)
    s += " (GPU " + std::to_string(d.gpu) + ", compute " + d.compute_capability + ", driver " +
         d.driver_version + ", runtime " + d.runtime_version + ", " +
         std::to_string(d.memory_bytes >> 20) + " MiB)";
  return s;
}

int cuda_device_count() {
#ifdef NHOLO_WITH_CUDA
  return cuda_backend::device_count();
#else
  return 0;
#endif
}

std::string describe_backends() {
  std::ostringstream os;
  os << "backends: omp (OpenMP, " << CpuDevice(Backend::omp, 0).info().threads
     << " threads here), cpp (serial)";
  const SimdIsa best = cpu_simd_isa();
  os << "; SIMD lanes (backend.simd, CPU backends): auto = " << simd_isa_name(best);
  if (best != SimdIsa::off) os << ", " << simd_lanes(best) << " trajectories per core at once";
  os << " (this CPU: " << cpu_vector_units() << ")";
#ifdef NHOLO_WITH_CUDA
  os << ", cuda\n";
  os << "CUDA devices: " << cuda_backend::describe_devices() << "\n";
  const std::string check_only = cuda_backend::check_only_build();
  os << "backend.device = \"auto\" runs on "
     << (cuda_backend::device_count() > 0 && check_only.empty() ? "the GPU backend.gpu (default 0)"
                                                                : "OpenMP")
     << "\n";
  if (!check_only.empty()) os << "CUDA backend: " << check_only << "\n";
#else
  os << "\nCUDA: not built in (configure with -DNHOLO_WITH_CUDA=ON); auto runs on OpenMP\n";
#endif
  return os.str();
}

}  // namespace nholo
