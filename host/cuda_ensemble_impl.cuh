// nholo/host/cuda_ensemble_impl.cuh — the body of cuda_backend::run_window,
// included by the per-model translation units that CMakeLists.txt generates
// in the CUDA build (build/generated/cuda_<Model>.cu: one model under every
// formulation each, so that nvcc compiles the models in parallel).
//
// One CUDA thread integrates one trajectory over a whole output window
// (kernels/ensemble.hpp), launched by thrust::for_each on thrust::cuda::par.
// Compiled with `--Werror cross-execution-space-call`, so a host-only function
// reached from kernels/ or models/ fails the build.
#pragma once

#include <cuda_runtime.h>
#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <stdexcept>
#include <string>

#include "host/cuda_ensemble.hpp"
#include "kernels/formulations.hpp"
#include "models/registry.hpp"

namespace nholo::cuda_backend {

namespace cuda_detail {
template <class T>
inline T* maybe(bool on, thrust::device_vector<T>& v, size_t size) {
  if (!on) return nullptr;
  v.assign(size, T(NAN));
  return thrust::raw_pointer_cast(v.data());
}
template <class T>
inline void fetch(bool on, const thrust::device_vector<T>& d, std::vector<T>& h) {
  if (!on) {
    h.clear();
    return;
  }
  h.resize(d.size());
  thrust::copy(d.begin(), d.end(), h.begin());
}
}  // namespace cuda_detail

template <class Sys>
void run_window(const Sys& sys, const IntegratorOptions& opt, HostEnsemble<Sys>& ens,
                const std::vector<typename Sys::scalar>& save_times, const OutputSelection& sel,
                WindowOutputs<Sys>& out) {
  using S = typename Sys::scalar;
  if (device_count() == 0)
    throw std::runtime_error("backend 'cuda': " + describe_device() + "; accepted here: omp, cpp");
  const int64_t count = ens.count;
  const size_t ns = save_times.size();
  const size_t nq = ns * Sys::n * count, nm = ns * Sys::m * count, n1 = ns * count;
  // slice state to the device
  thrust::device_vector<S> y(ens.y), t(ens.t), h(ens.h), err(ens.err_prev), ft(ens.fail_time);
  thrust::device_vector<int64_t> steps(ens.steps), rej(ens.rejected);
  thrust::device_vector<int32_t> status(ens.status);
  thrust::device_vector<double> params(ens.params);
  thrust::device_vector<S> saves(save_times);
  thrust::device_vector<S> q, qd, qdd, fi, fni, mult, res, en;
  EnsembleWindow<Sys> f;
  f.sys = sys;
  f.opt = opt;
  f.count = count;
  f.save_times = thrust::raw_pointer_cast(saves.data());
  f.n_saves = static_cast<int>(ns);
  f.trajectory_major = false;  // coalesced stores; the host transposes for the file
  out.trajectory_major = false;
  f.arr.y = thrust::raw_pointer_cast(y.data());
  f.arr.t = thrust::raw_pointer_cast(t.data());
  f.arr.h = thrust::raw_pointer_cast(h.data());
  f.arr.err_prev = thrust::raw_pointer_cast(err.data());
  f.arr.fail_time = thrust::raw_pointer_cast(ft.data());
  f.arr.steps = thrust::raw_pointer_cast(steps.data());
  f.arr.rejected = thrust::raw_pointer_cast(rej.data());
  f.arr.status = thrust::raw_pointer_cast(status.data());
  f.arr.params = ens.params.empty() ? nullptr : thrust::raw_pointer_cast(params.data());
  f.arr.q = cuda_detail::maybe(sel.q, q, nq);
  f.arr.qdot = cuda_detail::maybe(sel.qdot, qd, nq);
  f.arr.qddot = cuda_detail::maybe(sel.qddot, qdd, nq);
  f.arr.force_ideal = cuda_detail::maybe(sel.force_ideal, fi, nq);
  f.arr.force_nonideal = cuda_detail::maybe(sel.force_nonideal, fni, nq);
  f.arr.multiplier = cuda_detail::maybe(sel.multiplier, mult, nm);
  f.arr.constraint_residual = cuda_detail::maybe(sel.constraint_residual, res, n1);
  f.arr.energy = cuda_detail::maybe(sel.energy, en, n1);
  thrust::for_each(thrust::cuda::par, thrust::counting_iterator<int64_t>(0),
                   thrust::counting_iterator<int64_t>(count), f);
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA: ") + cudaGetErrorString(e));
  // state and outputs back to the host
  thrust::copy(y.begin(), y.end(), ens.y.begin());
  thrust::copy(t.begin(), t.end(), ens.t.begin());
  thrust::copy(h.begin(), h.end(), ens.h.begin());
  thrust::copy(err.begin(), err.end(), ens.err_prev.begin());
  thrust::copy(ft.begin(), ft.end(), ens.fail_time.begin());
  thrust::copy(steps.begin(), steps.end(), ens.steps.begin());
  thrust::copy(rej.begin(), rej.end(), ens.rejected.begin());
  thrust::copy(status.begin(), status.end(), ens.status.begin());
  cuda_detail::fetch(sel.q, q, out.q);
  cuda_detail::fetch(sel.qdot, qd, out.qdot);
  cuda_detail::fetch(sel.qddot, qdd, out.qddot);
  cuda_detail::fetch(sel.force_ideal, fi, out.force_ideal);
  cuda_detail::fetch(sel.force_nonideal, fni, out.force_nonideal);
  cuda_detail::fetch(sel.multiplier, mult, out.multiplier);
  cuda_detail::fetch(sel.constraint_residual, res, out.constraint_residual);
  cuda_detail::fetch(sel.energy, en, out.energy);
}

// Explicit instantiations for one model: Udwadia–Kalaba, Lagrange
// multipliers, null space and vakonomic apply to every model (none has
// acceleration-level constraints, which the vakonomic form rejects at compile
// time); conflated only where the model has a conflated Lagrangian (the
// generated file says which, and checks it with has_conflated_lagrangian).
#define NHOLO_CUDA_INSTANTIATE_SYSTEM(Sys)                                                \
  template void run_window<Sys>(const Sys&, const IntegratorOptions&, HostEnsemble<Sys>&, \
                                const std::vector<double>&, const OutputSelection&,       \
                                WindowOutputs<Sys>&);
#define NHOLO_CUDA_INSTANTIATE_MODEL(Model)                      \
  NHOLO_CUDA_INSTANTIATE_SYSTEM(UdwadiaKalabaSystem<Model>)      \
  NHOLO_CUDA_INSTANTIATE_SYSTEM(LagrangeMultiplierSystem<Model>) \
  NHOLO_CUDA_INSTANTIATE_SYSTEM(NullSpaceSystem<Model>)          \
  NHOLO_CUDA_INSTANTIATE_SYSTEM(VakonomicSystem<Model>)
#define NHOLO_CUDA_INSTANTIATE_CONFLATED(Model) \
  NHOLO_CUDA_INSTANTIATE_SYSTEM(ConflatedSystem<Model>)

}  // namespace nholo::cuda_backend
