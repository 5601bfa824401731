// nholo/bench/cuda_resources.cu — the ensemble kernels of the benchmark
// systems, compiled for the GPU only to read their resource usage (registers
// per thread, stack frame, spills) from ptxas; never launched.
//
//   nvcc -arch=sm_90 -std=c++17 -O3 -Xptxas -v --resource-usage -c \
//        -I. -I/usr/local/cuda/include/cccl bench/cuda_resources.cu -o /dev/null
// (bench/run.sh does this and computes the theoretical occupancy.)
//
// One __global__ per system: one thread = one trajectory over one output
// window, exactly the functor that host/backends/cuda_ensemble_impl.cuh launches through
// thrust::for_each (kernels/ensemble.hpp, EnsembleWindow<Sys>::operator()).
// Kernel names: ensemble_<system>_<impl>; impl as in bench_systems.hpp, plus
// "nholo" = the registry's model (the coin with its hand-written M, F).
// dopri5_<system>_<impl>: the same trajectory loop with the method fixed at
// compile time (detail::advance_adaptive<TableauDopri5> instead of
// advance_to's run-time switch over RK4 / DOPRI5 / DOP853), to show what the
// run-time choice of method costs in registers.
#include "bench/bench_systems.hpp"
#include "kernels/ensemble.hpp"
#include "kernels/integrate.hpp"

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
NHOLO_BENCH_KERNEL(ensemble_coin_nholo, nholo::UdwadiaKalabaSystem<nb::RollingCoin>)
NHOLO_BENCH_KERNEL(ensemble_coin_nholo_hand, nb::HandSystem<nb::RollingCoin>)
NHOLO_BENCH_KERNEL(ensemble_skate_nholo_hand, nb::HandSystem<nb::Skate>)
NHOLO_BENCH_KERNEL(ensemble_skate_closed, nb::ClosedSystem<nb::Skate>)
NHOLO_BENCH_KERNEL(ensemble_appell_nholo_hand, nb::HandSystem<nb::Appell>)
NHOLO_BENCH_KERNEL(ensemble_appell_closed, nb::ClosedSystem<nb::Appell>)

// one trajectory, 20 saves, DOPRI5 only; state in SoA like EnsembleWindow
template <class Sys>
__device__ void run_dopri5(const Sys& sys, double* y, int64_t count, nholo::IntegratorOptions opt) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  nholo::Vec<double, Sys::N> y0;
  for (int c = 0; c < Sys::N; ++c) y0[c] = y[c * count + i];
  auto ts = nholo::start_trajectory<double, Sys::N>(0.0, y0, opt);
  for (int k = 1; k <= 20; ++k) nholo::detail::advance_adaptive<nholo::TableauDopri5>(sys, ts, 0.5 * k, opt);
  for (int c = 0; c < Sys::N; ++c) y[c * count + i] = ts.y[c];
}

#define NHOLO_BENCH_DOPRI5_KERNEL(name, Sys)                                                  \
  extern "C" __global__ void name(const Sys sys, double* y, int64_t count,                   \
                                  const nholo::IntegratorOptions opt) {                       \
    run_dopri5(sys, y, count, opt);                                                          \
  }

NHOLO_BENCH_DOPRI5_KERNEL(dopri5_coin_nholo_ad, nb::GenericSystem<nb::RollingCoin>)
NHOLO_BENCH_DOPRI5_KERNEL(dopri5_skate_nholo_ad, nb::GenericSystem<nb::Skate>)
NHOLO_BENCH_DOPRI5_KERNEL(dopri5_appell_nholo_ad, nb::GenericSystem<nb::Appell>)
NHOLO_BENCH_DOPRI5_KERNEL(dopri5_coin_closed, nb::ClosedSystem<nb::RollingCoin>)
