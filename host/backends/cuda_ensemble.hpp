// nholo/host/backends/cuda_ensemble.hpp — the CUDA backend as seen from plain C++
// (compiled into nholo when it is built with NHOLO_WITH_CUDA).
//
// The definitions live in host/backends/cuda_ensemble.cu (the device, queries) and
// host/backends/cuda_ensemble_impl.cuh (the ensemble), compiled by nvcc;
// make_ensemble<Sys> is instantiated for every registered model under every
// formulation it supports, one generated translation unit per model
// (CMakeLists.txt). Device memory and CUDA types never appear here.
#pragma once

#include <memory>
#include <string>

#include "host/backends/device_ensemble.hpp"
#include "host/backends/formulation_system.hpp"
#include "kernels/integrate.hpp"

namespace nholo::cuda_backend {

// Number of CUDA devices visible (0 without a GPU or a driver).
int device_count();
// Why there is no usable device, or a one-line list of the devices.
std::string describe_devices();
// Empty, or why this nholo runs nothing on a GPU although it has the CUDA
// backend: a build configured with -DNHOLO_CUDA_CHECK_ONLY=ON, whose GPU code
// was compiled unoptimized only to check it (scripts/test.sh without a GPU).
std::string check_only_build();
// Opens GPU `gpu` for a run; throws std::runtime_error naming what was found
// when it cannot be used.
std::unique_ptr<Device> open_device(int gpu);

// The ensemble of one formulation (Sys) on a device from open_device;
// host_window: the same formulation's CPU window (FormulationSystem::cpu_window,
// compiled by the host compiler), which finishes the tails of windows on the
// CPU cores (EnsembleLayout::cpu_tail).
template <class Sys>
std::unique_ptr<DeviceEnsemble> make_ensemble(const std::string& name, Device& dev, const Sys& sys,
                                              const IntegratorOptions& opt,
                                              const EnsembleLayout& layout,
                                              const CpuWindowMaker& host_window);

}  // namespace nholo::cuda_backend
