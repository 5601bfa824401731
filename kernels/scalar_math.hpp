// nholo/kernels/scalar_math.hpp — the scalar math every kernel and model
// calls (sin, sqrt, fabs, atan2, pow, ... for double and float), as overloads
// inside namespace nholo, and the small scalar helpers (value_of, sgn,
// max_of, min_of, is_finite) that the AD types overload too.
#pragma once

#include <math.h>

#include <type_traits>

#include "execution_space.hpp"

namespace nholo {

// Scalar math as overloads inside namespace nholo, so that model code written
// as `sin(x)` resolves to the same functions for double, float and the AD
// number types (which add their own overloads in dual.hpp and jet2.hpp).
#define NHOLO_UNARY_MATH(fn)      \
  NHOLO_HDI double fn(double x) { \
    return ::fn(x);               \
  }                               \
  NHOLO_HDI float fn(float x) {   \
    return ::fn##f(x);            \
  }
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

NHOLO_HDI double fabs(double x) {
  return ::fabs(x);
}
NHOLO_HDI float fabs(float x) {
  return ::fabsf(x);
}
NHOLO_HDI double atan2(double y, double x) {
  return ::atan2(y, x);
}
NHOLO_HDI float atan2(float y, float x) {
  return ::atan2f(y, x);
}
NHOLO_HDI double pow(double x, double y) {
  return ::pow(x, y);
}
NHOLO_HDI float pow(float x, float y) {
  return ::powf(x, y);
}

// A scalar without derivative parts: double, float, and the CPU's SIMD lanes
// of doubles (kernels/lanes.hpp specialises it); the AD types are not.
// Where the kernels choose between a plain scalar's path (hand-written M, F;
// one level of automatic differentiation) and an AD type's (nested).
template <class S>
struct is_plain_scalar : std::is_floating_point<S> {};

// Value of a scalar with every derivative part dropped (identity for plain
// scalars; the AD types overload it).
NHOLO_HDI double value_of(double x) {
  return x;
}
NHOLO_HDI float value_of(float x) {
  return x;
}

// Sign with sgn(0) = 0, as in Coulomb friction laws, of x's value (an AD
// number's derivative parts dropped): a double, or per lane for the CPU's
// SIMD lanes (kernels/lanes.hpp overloads sign_of_value).
NHOLO_HDI double sign_of_value(double v) {
  return (v > 0.0) - (v < 0.0);
}
NHOLO_HDI double sign_of_value(float v) {
  return (v > 0.0f) - (v < 0.0f);
}
template <class T>
NHOLO_HDI auto sgn(const T& x) {
  return sign_of_value(value_of(x));
}

// c ? a : b, written as a function so that model code with a value-dependent
// choice also runs on the CPU's SIMD lanes, where c is a mask and the choice
// is made per lane (kernels/lanes.hpp; AD numbers: kernels/dual.hpp). Both
// a and b are evaluated.
template <class T>
NHOLO_HDI T select(bool c, const T& a, const T& b) {
  return c ? a : b;
}

template <class T>
NHOLO_HDI T max_of(T a, T b) {
  return a > b ? a : b;
}
template <class T>
NHOLO_HDI T min_of(T a, T b) {
  return a < b ? a : b;
}

NHOLO_HDI bool is_finite(double x) {
  return isfinite(x);
}
NHOLO_HDI bool is_finite(float x) {
  return isfinite(x);
}

}  // namespace nholo
