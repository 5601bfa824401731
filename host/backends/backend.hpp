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
#pragma once

#include <omp.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/system/cpp/execution_policy.h>
#include <thrust/system/omp/execution_policy.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

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

// Integrate every trajectory of `ens` through the output times `save_times`
// (increasing, all > the current t), storing the selected outputs in the
// structure-of-arrays layout, or trajectory-major (the file's order) when
// `trajectory_major` (out.trajectory_major says which).
template <class Sys>
void run_window(Backend backend, int threads, const Sys& sys, const IntegratorOptions& opt,
                HostEnsemble<Sys>& ens, const std::vector<typename Sys::scalar>& save_times,
                const OutputSelection& sel, WindowOutputs<Sys>& out, bool trajectory_major = false) {
  using S = typename Sys::scalar;
  const int64_t count = ens.count;
  const size_t ns = save_times.size();
  const size_t nq = ns * Sys::n * count, nm = ns * Sys::m * count, n1 = ns * count;
  auto prepare = [](bool on, std::vector<S>& v, size_t size) -> S* {
    if (!on) {
      v.clear();
      return nullptr;
    }
    v.assign(size, S(NAN));
    return v.data();
  };
  EnsembleWindow<Sys> f;
  f.sys = sys;
  f.opt = opt;
  f.count = count;
  f.save_times = save_times.data();
  f.n_saves = static_cast<int>(ns);
  f.trajectory_major = trajectory_major;
  out.trajectory_major = trajectory_major;
  f.arr.y = ens.y.data();
  f.arr.t = ens.t.data();
  f.arr.h = ens.h.data();
  f.arr.err_prev = ens.err_prev.data();
  f.arr.fail_time = ens.fail_time.data();
  f.arr.steps = ens.steps.data();
  f.arr.rejected = ens.rejected.data();
  f.arr.status = ens.status.data();
  f.arr.params = ens.params.empty() ? nullptr : ens.params.data();
  f.arr.q = prepare(sel.q, out.q, nq);
  f.arr.qdot = prepare(sel.qdot, out.qdot, nq);
  f.arr.qddot = prepare(sel.qddot, out.qddot, nq);
  f.arr.force_ideal = prepare(sel.force_ideal, out.force_ideal, nq);
  f.arr.force_nonideal = prepare(sel.force_nonideal, out.force_nonideal, nq);
  f.arr.multiplier = prepare(sel.multiplier, out.multiplier, nm);
  f.arr.constraint_residual = prepare(sel.constraint_residual, out.constraint_residual, n1);
  f.arr.energy = prepare(sel.energy, out.energy, n1);
  for_each_index(backend, threads, count, f);
}

}  // namespace nholo
