// nholo/bench/cuda_resources.cu — the ensemble kernels of the benchmark
// systems, compiled for the GPU only to read their resource usage (registers
// per thread, stack frame, spills) from ptxas; never launched.
//
//   nvcc -arch=sm_90 -std=c++17 -O3 -Xptxas -v --resource-usage -c \
//        -I. -I/usr/local/cuda/include/cccl bench/cuda_resources.cu -o /dev/null
// (bench/run.sh does this and computes the theoretical occupancy;
// -DNHOLO_BENCH_QUICK=1 compiles the generic (nholo_ad) kernels and the
// coin's closed form only.)
//
// One __global__ per system: one thread = one trajectory over one output
// window, exactly the functor that host/cuda_ensemble.cu launches through
// thrust::for_each (kernels/ensemble.hpp, EnsembleWindow<Sys>::operator()).
// Kernel names: ensemble_<system>_<impl>; impl as in bench_systems.hpp, plus
// "nholo" = the registry's model (the coin with its hand-written M, F).
#include "bench/bench_systems.hpp"
#include "kernels/ensemble.hpp"

#ifndef NHOLO_BENCH_QUICK
#define NHOLO_BENCH_QUICK 0
#endif

namespace nb = nholo::bench;

template <class Sys>
__device__ void run_one(const nholo::EnsembleWindow<Sys>& f) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < f.count) f(i);
}

#define NHOLO_BENCH_KERNEL(name, Sys) \
  extern "C" __global__ void name(const nholo::EnsembleWindow<Sys> f) { run_one(f); }

NHOLO_BENCH_KERNEL(ensemble_coin_nholo_ad, nb::GenericSystem<nb::RollingCoin>)
NHOLO_BENCH_KERNEL(ensemble_skate_nholo_ad, nb::GenericSystem<nb::Skate>)
NHOLO_BENCH_KERNEL(ensemble_appell_nholo_ad, nb::GenericSystem<nb::Appell>)
NHOLO_BENCH_KERNEL(ensemble_coin_closed, nb::ClosedSystem<nb::RollingCoin>)
#if !NHOLO_BENCH_QUICK  // quick mode of bench/run.sh: fewer kernels (compile time)
NHOLO_BENCH_KERNEL(ensemble_coin_nholo, nholo::UdwadiaKalabaSystem<nb::RollingCoin>)
NHOLO_BENCH_KERNEL(ensemble_coin_nholo_hand, nb::HandSystem<nb::RollingCoin>)
NHOLO_BENCH_KERNEL(ensemble_skate_nholo_hand, nb::HandSystem<nb::Skate>)
NHOLO_BENCH_KERNEL(ensemble_skate_closed, nb::ClosedSystem<nb::Skate>)
NHOLO_BENCH_KERNEL(ensemble_appell_nholo_hand, nb::HandSystem<nb::Appell>)
NHOLO_BENCH_KERNEL(ensemble_appell_closed, nb::ClosedSystem<nb::Appell>)
#endif
