// nholo/host/run/device_choice.hpp — the device a run gets: the backend the
// configuration asks for (backend.device, backend.gpu, backend.threads)
// checked against what this build and machine offer, opened, and described
// for the log, `nholo check` and `nholo devices`.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "host/backends/device_ensemble.hpp"
#include "host/config/config.hpp"

namespace nholo {

// Throws, naming why, when a model file's GPU kernels cannot be compiled on
// this machine. The compiler is the model files' (NVRTC, loaded by
// host/model_files/), which run/ never includes: the commands hand their
// check (check_gpu_module_compiler, host/model_files/plugin.hpp) to
// open_run_device.
using GpuCompilerCheck = std::function<void()>;

// The device of a run: cfg.device = omp | cpp | cuda | auto (the GPU
// backend.gpu when a CUDA device is visible and nholo was built with CUDA,
// and, for a model file, gpu_compiler_check does not throw; else OpenMP;
// *note then says why). Throws ConfigError when the requested backend cannot
// be had, naming what was found.
std::unique_ptr<Device> open_run_device(const RunConfig& cfg,
                                        const GpuCompilerCheck& gpu_compiler_check,
                                        std::string* note = nullptr);
// The host threads of a run: backend.threads, or (0) the OpenMP default, as
// the OpenMP backend uses them; 1 with the serial backend. What the initial
// states are completed on and a GPU run's CPU tail is finished on.
int run_host_threads(const RunConfig& cfg);
// "cuda: NVIDIA H100 (GPU 0, compute 9.0, driver 13.0, runtime 13.0, 81559 MiB)"
std::string describe_device(const DeviceInfo& d);

// The CUDA devices visible (0 without a GPU, a driver, or CUDA built in).
int cuda_device_count();

// `nholo devices`' lines on the backends built in, the CUDA devices visible
// and what backend.device = "auto" runs on.
std::string describe_backends();

}  // namespace nholo
