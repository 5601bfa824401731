// nholo/host/cuda_ensemble.cu — the ensemble functor on the GPU.
//
// One CUDA thread integrates one trajectory over a whole output window
// (kernels/ensemble.hpp), launched by thrust::for_each on thrust::cuda::par.
// Compiled with `--Werror cross-execution-space-call`, so a host-only function
// reached from kernels/ or models/ fails the build.
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

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return n;
}

std::string describe_device() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return std::string("no CUDA device: ") + cudaGetErrorString(e);
  }
  if (n == 0) return "no CUDA device";
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) +
         std::to_string(prop.minor) + ", " + std::to_string(prop.totalGlobalMem >> 20) + " MiB)";
}

namespace {
template <class T>
T* maybe(bool on, thrust::device_vector<T>& v, size_t size) {
  if (!on) return nullptr;
  v.assign(size, T(NAN));
  return thrust::raw_pointer_cast(v.data());
}
template <class T>
void fetch(bool on, const thrust::device_vector<T>& d, std::vector<T>& h) {
  if (!on) {
    h.clear();
    return;
  }
  h.resize(d.size());
  thrust::copy(d.begin(), d.end(), h.begin());
}
}  // namespace

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
  f.arr.y = thrust::raw_pointer_cast(y.data());
  f.arr.t = thrust::raw_pointer_cast(t.data());
  f.arr.h = thrust::raw_pointer_cast(h.data());
  f.arr.err_prev = thrust::raw_pointer_cast(err.data());
  f.arr.fail_time = thrust::raw_pointer_cast(ft.data());
  f.arr.steps = thrust::raw_pointer_cast(steps.data());
  f.arr.rejected = thrust::raw_pointer_cast(rej.data());
  f.arr.status = thrust::raw_pointer_cast(status.data());
  f.arr.params = ens.params.empty() ? nullptr : thrust::raw_pointer_cast(params.data());
  f.arr.q = maybe(sel.q, q, nq);
  f.arr.qdot = maybe(sel.qdot, qd, nq);
  f.arr.qddot = maybe(sel.qddot, qdd, nq);
  f.arr.force_ideal = maybe(sel.force_ideal, fi, nq);
  f.arr.force_nonideal = maybe(sel.force_nonideal, fni, nq);
  f.arr.multiplier = maybe(sel.multiplier, mult, nm);
  f.arr.constraint_residual = maybe(sel.constraint_residual, res, n1);
  f.arr.energy = maybe(sel.energy, en, n1);
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
  fetch(sel.q, q, out.q);
  fetch(sel.qdot, qd, out.qdot);
  fetch(sel.qddot, qdd, out.qddot);
  fetch(sel.force_ideal, fi, out.force_ideal);
  fetch(sel.force_nonideal, fni, out.force_nonideal);
  fetch(sel.multiplier, mult, out.multiplier);
  fetch(sel.constraint_residual, res, out.constraint_residual);
  fetch(sel.energy, en, out.energy);
}

// Every registered model under every formulation of this build. The lists
// must follow models/registry.hpp (checked below). udwadia_kalaba,
// lagrange_multiplier, null_space and vakonomic apply to every model (none
// has acceleration-level constraints, which the vakonomic form rejects at
// compile time); conflated to the models with a conflated Lagrangian.
#define NHOLO_FOR_EACH_MODEL(X)                                                  \
  X(RollingCoin) X(Skate) X(Appell) X(UdwadiaExample2) X(UdwadiaExample3)       \
  X(UdwadiaExample4) X(InclineBlock) X(ParallelVelocities) X(IntegrableConstraint) \
  X(RollingCoinRedundant) X(SkateRedundant)
#define NHOLO_FOR_EACH_CONFLATED_MODEL(X) \
  X(Skate) X(Appell) X(UdwadiaExample2) X(UdwadiaExample3) X(UdwadiaExample4) X(SkateRedundant)
static_assert(models::AllModels::size == 11, "NHOLO_FOR_EACH_MODEL must list every registered model");

#define NHOLO_INSTANTIATE_SYSTEM(Sys)                                                         \
  template void run_window<Sys>(const Sys&, const IntegratorOptions&, HostEnsemble<Sys>&,     \
                                const std::vector<double>&, const OutputSelection&,           \
                                WindowOutputs<Sys>&);
#define NHOLO_INSTANTIATE(Model)                                           \
  NHOLO_INSTANTIATE_SYSTEM(UdwadiaKalabaSystem<models::Model>)             \
  NHOLO_INSTANTIATE_SYSTEM(LagrangeMultiplierSystem<models::Model>)        \
  NHOLO_INSTANTIATE_SYSTEM(NullSpaceSystem<models::Model>)                 \
  NHOLO_INSTANTIATE_SYSTEM(VakonomicSystem<models::Model>)
NHOLO_FOR_EACH_MODEL(NHOLO_INSTANTIATE)
#undef NHOLO_INSTANTIATE

#define NHOLO_INSTANTIATE_CONFLATED(Model) \
  NHOLO_INSTANTIATE_SYSTEM(ConflatedSystem<models::Model>)
NHOLO_FOR_EACH_CONFLATED_MODEL(NHOLO_INSTANTIATE_CONFLATED)
#undef NHOLO_INSTANTIATE_CONFLATED
#undef NHOLO_INSTANTIATE_SYSTEM

}  // namespace nholo::cuda_backend
