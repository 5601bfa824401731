// nholo/host/cuda_ensemble.cu — the CUDA device of a run (streams, memory,
// save times, pair reductions) and the device queries. The ensembles
// themselves (host/cuda_ensemble_impl.cuh) are instantiated per model in the
// translation units CMakeLists.txt generates.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <stdexcept>
#include <string>

#include "host/cuda_ensemble_impl.cuh"

namespace nholo::cuda_backend {

namespace {
std::string version_string(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}
}  // namespace

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the "no driver" error
    return 0;
  }
  return n;
}

std::string describe_devices() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    // the runtime says "insufficient driver" also when there is no driver at all
    if (e == cudaErrorInsufficientDriver) {
      void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
      if (!lib) return "no usable CUDA device (no NVIDIA driver: libcuda.so.1 cannot be loaded)";
      dlclose(lib);
      int drv = 0;
      cudaDriverGetVersion(&drv);
      int rt = 0;
      cudaRuntimeGetVersion(&rt);
      return "no usable CUDA device (the NVIDIA driver supports CUDA " + version_string(drv) +
             ", older than the CUDA runtime " + version_string(rt) + " nholo was built with)";
    }
    return std::string("no usable CUDA device (") + cudaGetErrorName(e) + ": " +
           cudaGetErrorString(e) + ")";
  }
  if (n == 0) return "no CUDA device";
  std::string s;
  for (int d = 0; d < n; ++d) {
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) continue;
    s += (d ? "; " : "") + std::string("GPU ") + std::to_string(d) + ": " + prop.name +
         " (compute " + std::to_string(prop.major) + "." + std::to_string(prop.minor) + ", " +
         std::to_string(prop.totalGlobalMem >> 20) + " MiB)";
  }
  return s;
}

std::unique_ptr<Device> open_device(int gpu) {
  const int n = device_count();
  if (n == 0)
    throw std::runtime_error("backend cuda: " + describe_devices() +
                             "; accepted here: auto, omp, cpp");
  if (gpu < 0 || gpu >= n)
    throw std::runtime_error("backend.gpu = " + std::to_string(gpu) + ": there are " +
                             std::to_string(n) + " CUDA devices (" + describe_devices() +
                             "); accepted: 0.." + std::to_string(n - 1));
  return std::make_unique<CudaDevice>(gpu);
}

CudaDevice::CudaDevice(int gpu) {
  check(cudaSetDevice(gpu), "cudaSetDevice");
  cudaDeviceProp prop;
  check(cudaGetDeviceProperties(&prop, gpu), "cudaGetDeviceProperties");
  int drv = 0, rt = 0;
  check(cudaDriverGetVersion(&drv), "cudaDriverGetVersion");
  check(cudaRuntimeGetVersion(&rt), "cudaRuntimeGetVersion");
  info_.backend = Backend::cuda;
  info_.gpu = gpu;
  info_.name = prop.name;
  info_.compute_capability = std::to_string(prop.major) + "." + std::to_string(prop.minor);
  info_.driver_version = version_string(drv);
  info_.runtime_version = version_string(rt);
  info_.memory_bytes = prop.totalGlobalMem;
  check(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking), "cudaStreamCreate");
}

CudaDevice::~CudaDevice() {
  cudaSetDevice(info_.gpu);
  if (compute_) cudaStreamSynchronize(compute_);
  if (copy_) cudaStreamSynchronize(copy_);
  if (times_) cudaFree(times_);
  if (compute_) cudaStreamDestroy(compute_);
  if (copy_) cudaStreamDestroy(copy_);
}

std::size_t CudaDevice::usable_memory() const {
  make_current();
  std::size_t free_b = 0, total_b = 0;
  check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
  return free_b / 10 * 8;  // leave a fifth for the runtime and the kernels' local memory
}

void* CudaDevice::alloc_bytes(std::size_t bytes) {
  make_current();
  void* p = nullptr;
  check(cudaMalloc(&p, bytes), "cudaMalloc");
  return p;
}

void CudaDevice::release(void* p) noexcept {
  cudaSetDevice(info_.gpu);
  cudaFree(p);
}

namespace {
struct FillKernel {
  double* p;
  double v;
  __host__ __device__ void operator()(int64_t i) const { p[i] = v; }
};
}  // namespace

void CudaDevice::fill(double* p, double v, std::size_t n) {
  make_current();
  launch(FillKernel{p, v}, static_cast<int64_t>(n), compute_, "fill");
}

void CudaDevice::to_host(void* dst, const void* src, std::size_t bytes) {
  make_current();
  check(cudaStreamSynchronize(compute_), "cudaStreamSynchronize");
  if (bytes) check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
}

void CudaDevice::set_save_times(const std::vector<double>& t) {
  make_current();
  if (times_) check(cudaFree(times_), "cudaFree");
  times_ = nullptr;
  check(cudaMalloc(reinterpret_cast<void**>(&times_), t.size() * sizeof(double)),
        "cudaMalloc(save times)");
  check(cudaMemcpy(times_, t.data(), t.size() * sizeof(double), cudaMemcpyHostToDevice),
        "cudaMemcpy(save times)");
}

void CudaDevice::pair_distance(const PairDistanceKernel<double>& k, int64_t count) {
  make_current();
  launch(k, count, compute_, "pair distance");
}

void CudaDevice::synchronize() {
  make_current();
  check(cudaStreamSynchronize(compute_), "cudaStreamSynchronize(compute)");
  check(cudaStreamSynchronize(copy_), "cudaStreamSynchronize(copy)");
}

// CMakeLists.txt generates one instantiating translation unit per model of
// models/registry.hpp (NHOLO_CUDA_INSTANTIATE_MODEL, cuda_ensemble_impl.cuh).

}  // namespace nholo::cuda_backend
