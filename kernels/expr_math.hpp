// nholo/kernels/expr_math.hpp — the few functions of the model-file grammar
// (host/model_language/model_file.hpp) that dual.hpp does not have under the same name, for
// the headers generate_model_header prints. Host and device code (nvcc,
// NVRTC): only what dual.hpp already uses.
//
// Concept (valid expressions), x, y of a scalar type S (double, float, Dual,
// nested Dual, Jet2), c a double:
//   nholo::expr::sign(x)      -> S   sgn of the value (sign(0) = 0), every
//                                    derivative 0 (a step, not differentiated)
//   nholo::expr::abs(x)       -> S   |x| (fabs, derivative sgn(x))
//   nholo::expr::ipow<k>(x)   -> S   x^k, k = 2, 3, 4, as products (x
//                                    evaluated once)
//   nholo::expr::pow(x, c)    -> S   x^c, constant exponent (dual.hpp's pow)
//   nholo::expr::pow(c, y)    -> S   exp(y log c)
//   nholo::expr::pow(x, y)    -> S   exp(y log x)
//   nholo::expr::pow(c, c)    -> double
// pow with a variable exponent needs a positive base (log); its derivatives
// at a base 0 are NaN.
#pragma once

#include <type_traits>

#include "dual.hpp"
#include "jet2.hpp"

namespace nholo::expr {

namespace detail {
template <class S>
using if_ad_t = std::enable_if_t<!std::is_arithmetic<S>::value, int>;
}  // namespace detail

template <class S>
NHOLO_HDI S sign(const S& x) {
  return S(nholo::sgn(x));
}

template <class S>
NHOLO_HDI S abs(const S& x) {
  return fabs(x);
}

template <int K, class S>
NHOLO_HDI S ipow(const S& x) {
  static_assert(K >= 2 && K <= 4, "ipow: exponents 2, 3 and 4");
  if constexpr (K == 2) {
    return x * x;
  } else if constexpr (K == 3) {
    return x * x * x;
  } else {
    const S x2 = x * x;
    return x2 * x2;
  }
}

// (no float overload: pow(float, double) would be ambiguous; float promotes)
NHOLO_HDI double pow(double a, double b) {
  return nholo::pow(a, b);
}

template <class S, detail::if_ad_t<S> = 0>
NHOLO_HDI S pow(const S& a, double b) {
  return nholo::pow(a, b);
}
template <class S, detail::if_ad_t<S> = 0>
NHOLO_HDI S pow(double a, const S& b) {
  return exp(b * log(a));
}
template <class S, detail::if_ad_t<S> = 0>
NHOLO_HDI S pow(const S& a, const S& b) {
  return exp(b * log(a));
}

}  // namespace nholo::expr
