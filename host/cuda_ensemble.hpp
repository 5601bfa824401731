// nholo/host/cuda_ensemble.hpp — the CUDA backend as seen from plain C++.
//
// The definitions live in host/cuda_ensemble.cu and cuda_ensemble_impl.cuh
// (compiled by nvcc in the CUDA build only); run_window is instantiated for
// every registered model under the Udwadia–Kalaba, Lagrange-multiplier,
// null-space and vakonomic formulations (and conflated where the model has a
// conflated Lagrangian), one generated translation unit per model. Host code
// passes host containers; device memory never appears outside those files.
#pragma once

#include <string>
#include <vector>

#include "host/ensemble_data.hpp"

namespace nholo::cuda_backend {

// Number of CUDA devices visible (0 on machines without a GPU or driver).
int device_count();
// A one-line description of device 0, or why there is none.
std::string describe_device();

// Same contract as nholo::run_window (host/backend.hpp): copies the slice to
// the device, integrates the window there, copies state and outputs back.
template <class Sys>
void run_window(const Sys& sys, const IntegratorOptions& opt, HostEnsemble<Sys>& ens,
                const std::vector<typename Sys::scalar>& save_times, const OutputSelection& sel,
                WindowOutputs<Sys>& out);

}  // namespace nholo::cuda_backend
