// nholo/kernels/execution_space.hpp — the execution-space annotations and
// inlining controls of every kernel. Everything in kernels/ and models/ is
// callable from host and device code: no allocation, no exceptions, no I/O,
// no virtual calls.
//
// Under nvcc `NHOLO_HD` is `__host__ __device__`; under a plain C++ compiler
// (the OMP and CPP Thrust backends) it expands to nothing.
#pragma once

#if defined(__CUDACC__)
#define NHOLO_HD __host__ __device__
#define NHOLO_FORCEINLINE __forceinline__
#else
#define NHOLO_HD
#define NHOLO_FORCEINLINE inline __attribute__((always_inline))
#endif

// NHOLO_RHS_NOINLINE marks a System's right-hand side. Under nvcc it is kept
// out of line (__noinline__): the integrators call it from every stage of
// every tableau (RK4, Dopri5, DOP853), and inlining a whole formulation (AD
// terms, SVD or LU) into each call site of each of the ~50 systems of the CUDA
// build multiplies device-code size and compile time many times over. Host
// builds leave the choice to the compiler (no change to CPU code).
#if !defined(NHOLO_RHS_NOINLINE)
#if defined(__CUDACC__)
#define NHOLO_RHS_NOINLINE __noinline__
#else
#define NHOLO_RHS_NOINLINE
#endif
#endif

#define NHOLO_HDI NHOLO_HD inline

// NHOLO_DEVICE_ROLLED_LOOP before a loop keeps it rolled in device code
// (`#pragma unroll 1`) and leaves host code to the compiler. For the loops
// over a state's components around a right-hand side (rk_step.hpp): unrolled,
// ptxas loads every stage's values ahead into registers (rolled, the DOP853
// kernels of the skate 182 -> 162 registers, the coin's lean one 238 -> 140:
// docs/BENCHMARKS.md, section 14); registers per thread decide how many warps
// share an SM, while the loops' few additions per component are not the cost.
#if defined(__CUDA_ARCH__)
#define NHOLO_DEVICE_ROLLED_LOOP _Pragma("unroll 1")
#else
#define NHOLO_DEVICE_ROLLED_LOOP
#endif

// NHOLO_NOINLINE keeps a function out of line on every compiler: for code
// that many kernels share and none needs inlined (the events' interpreter,
// kernels/trajectory_events.hpp), compiled once per scalar type rather than
// once per system, method and call site.
#if defined(__CUDACC__)
#define NHOLO_NOINLINE __noinline__
#elif defined(__GNUC__)
#define NHOLO_NOINLINE __attribute__((noinline))
#else
#define NHOLO_NOINLINE
#endif

// Host builds inline a whole right-hand side (the model's Lagrangian and
// constraints, every jet operation, the linear algebra) into one function
// (GCC/Clang `flatten`): only then can the compiler keep the jets and the
// small matrices in registers, drop the work on the seeds' constant ones
// (x * 1 = x) and share sin/cos of the same coordinate between the
// Lagrangian and the constraints; as separate functions the model's
// Lagrangian alone costs twice as much. Device code is inlined by nvcc anyway.
#if defined(__CUDACC__) || !defined(__GNUC__)
#define NHOLO_FLATTEN
#else
#define NHOLO_FLATTEN __attribute__((flatten))
#endif
