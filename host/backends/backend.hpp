// nholo/host/backends/backend.hpp — running the ensemble functor on a CPU backend.
//
// The kernels (kernels/ensemble.hpp) are one source; the backend is the Thrust
// execution policy that runs them:
//   Backend::omp   thrust::omp::par  (OpenMP threads; the default CPU build)
//   Backend::cpp   thrust::cpp::par  (serial; debugging and determinism checks)
//   Backend::cuda  not here: the CUDA backend launches its own kernels
//                  (host/backends/cuda_ensemble_impl.cuh, one per model and method)
// Host memory is the "device" memory of the CPU systems, so the functor gets
// raw pointers into std::vector storage. Device containers never appear here.
// The ensemble functor's window is assembled by the CPU backend
// (host/backends/cpu_ensemble.hpp, CpuEnsemble::run_window).
#pragma once

#include <omp.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/system/cpp/execution_policy.h>
#include <thrust/system/omp/execution_policy.h>

#include <cstdint>
#include <stdexcept>

#include "host/backends/ensemble_data.hpp"

namespace nholo {

// f(i) for i in [begin, end) (or [0, count)) on a CPU backend (omp: `threads` OpenMP threads,
// 0 = all; cpp: serial, in index order).
template <class F>
void for_each_index(Backend backend, int threads, int64_t begin, int64_t end, const F& f) {
  thrust::counting_iterator<int64_t> first(begin), last(end);
  switch (backend) {
    case Backend::omp: {
      const int saved = omp_get_max_threads();
      if (threads > 0) omp_set_num_threads(threads);
      thrust::for_each(thrust::omp::par, first, last, f);
      omp_set_num_threads(saved);
      break;
    }
    case Backend::cpp: thrust::for_each(thrust::cpp::par, first, last, f); break;
    case Backend::cuda:
      throw std::invalid_argument("for_each_index: the CUDA backend runs its own kernels "
                                  "(host/backends/cuda_ensemble_impl.cuh)");
  }
}
template <class F>
void for_each_index(Backend backend, int threads, int64_t count, const F& f) {
  for_each_index(backend, threads, int64_t(0), count, f);
}

}  // namespace nholo
