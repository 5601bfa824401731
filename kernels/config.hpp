// nholo/kernels/config.hpp — execution-space annotations and scalar math shared
// by every kernel. Everything in kernels/ and models/ is callable from host and
// device code: no allocation, no exceptions, no I/O, no virtual calls.
//
// Under nvcc `NHOLO_HD` is `__host__ __device__`; under a plain C++ compiler
// (the OMP and CPP Thrust backends) it expands to nothing.
#pragma once

#include <math.h>

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

namespace nholo {

// Scalar math as overloads inside namespace nholo, so that model code written
// as `sin(x)` resolves to the same functions for double, float and the AD
// number types (which add their own overloads in dual.hpp).
#define NHOLO_UNARY_MATH(fn)                              \
  NHOLO_HDI double fn(double x) { return ::fn(x); }       \
  NHOLO_HDI float fn(float x) { return ::fn##f(x); }
NHOLO_UNARY_MATH(sin)
NHOLO_UNARY_MATH(cos)
NHOLO_UNARY_MATH(tan)
NHOLO_UNARY_MATH(sqrt)
NHOLO_UNARY_MATH(exp)
NHOLO_UNARY_MATH(log)
NHOLO_UNARY_MATH(atan)
NHOLO_UNARY_MATH(asin)
NHOLO_UNARY_MATH(acos)
NHOLO_UNARY_MATH(sinh)
NHOLO_UNARY_MATH(cosh)
NHOLO_UNARY_MATH(tanh)
#undef NHOLO_UNARY_MATH

NHOLO_HDI double fabs(double x) { return ::fabs(x); }
NHOLO_HDI float fabs(float x) { return ::fabsf(x); }
NHOLO_HDI double atan2(double y, double x) { return ::atan2(y, x); }
NHOLO_HDI float atan2(float y, float x) { return ::atan2f(y, x); }
NHOLO_HDI double pow(double x, double y) { return ::pow(x, y); }
NHOLO_HDI float pow(float x, float y) { return ::powf(x, y); }

// Value of a scalar with every derivative part dropped (identity for plain
// scalars; the AD types overload it).
NHOLO_HDI double value_of(double x) { return x; }
NHOLO_HDI float value_of(float x) { return x; }

// Sign with sgn(0) = 0, as in Coulomb friction laws.
template <class T>
NHOLO_HDI double sgn(const T& x) {
  const double v = static_cast<double>(value_of(x));
  return (v > 0.0) - (v < 0.0);
}

template <class T>
NHOLO_HDI T max_of(T a, T b) {
  return a > b ? a : b;
}
template <class T>
NHOLO_HDI T min_of(T a, T b) {
  return a < b ? a : b;
}

NHOLO_HDI bool is_finite(double x) { return isfinite(x); }
NHOLO_HDI bool is_finite(float x) { return isfinite(x); }

}  // namespace nholo
