// nholo/kernels/dual.hpp — forward-mode automatic differentiation.
//
// Dual<T,K> carries a value and K directional derivatives (tangents):
//   x = x.v + sum_k x.d[k] eps_k,   eps_j eps_k = 0.
// Nesting gives higher derivatives: in Dual<Dual<double,P>,K> the outer
// tangents are themselves duals, so the inner tangents of the outer tangents
// are second derivatives d2 f / (dw_k dz_p). This is how the engine gets the
// mass matrix d2L/dqd2 and the terms (d2L/dqd dq) qd + d2L/dqd dt of the
// Euler–Lagrange equations from one evaluation of a model's Lagrangian
// (dynamics.hpp).
//
// Concept (valid expressions), D = Dual<T,K>:
//   D(c)                   constant (all tangents 0), c arithmetic or T
//   x + y, x - y, x * y, x / y, -x   (any mix of D, T and arithmetic scalars)
//   sin cos tan sqrt exp log atan asin acos sinh cosh tanh fabs atan2 pow
//   x < y, x > y, ...      compare values (derivatives ignored)
//   value_of(x)            innermost plain value
//
// Jet2 (jet2.hpp) is the same concept with exactly the second derivatives
// the Euler–Lagrange equations need.
#pragma once

#include <type_traits>

#include "scalar_math.hpp"

namespace nholo {

namespace detail {
struct NotAScalar {};
}  // namespace detail

template <class T, int K>
struct Dual {
  static_assert(K >= 1, "a dual number needs at least one tangent");
  // A second scalar type accepted by the mixed operators: double when T is an
  // AD type itself (so that `2.0 * x` works at every nesting level), a dummy
  // type when T already is a plain scalar (double or float: for T = float,
  // Other = double made `2 * x` ambiguous between the float and the double
  // overload).
  using Other = std::conditional_t<std::is_arithmetic<T>::value, detail::NotAScalar, double>;

  T v;     // value
  T d[K];  // tangents

  Dual() = default;
  template <class A, std::enable_if_t<std::is_arithmetic<A>::value, int> = 0>
  NHOLO_HD Dual(A c) : v(T(c)) {  // NOLINT(google-explicit-constructor): constants
    for (int k = 0; k < K; ++k) d[k] = T(0);
  }
  template <class U = T, std::enable_if_t<!std::is_arithmetic<U>::value, int> = 0>
  NHOLO_HD Dual(const T& c) : v(c) {  // NOLINT(google-explicit-constructor)
    for (int k = 0; k < K; ++k) d[k] = T(0);
  }

  // x = value + eps_k (seed tangent k with 1)
  NHOLO_HDI static Dual variable(const T& value, int k) {
    Dual r(value);
    r.d[k] = T(1);
    return r;
  }

  // ---- arithmetic between duals
  NHOLO_HDI friend Dual operator+(const Dual& a, const Dual& b) {
    Dual r;
    r.v = a.v + b.v;
    for (int k = 0; k < K; ++k) r.d[k] = a.d[k] + b.d[k];
    return r;
  }
  NHOLO_HDI friend Dual operator-(const Dual& a, const Dual& b) {
    Dual r;
    r.v = a.v - b.v;
    for (int k = 0; k < K; ++k) r.d[k] = a.d[k] - b.d[k];
    return r;
  }
  NHOLO_HDI friend Dual operator-(const Dual& a) {
    Dual r;
    r.v = -a.v;
    for (int k = 0; k < K; ++k) r.d[k] = -a.d[k];
    return r;
  }
  // (a b)' = a' b + a b'
  NHOLO_HDI friend Dual operator*(const Dual& a, const Dual& b) {
    Dual r;
    r.v = a.v * b.v;
    for (int k = 0; k < K; ++k) r.d[k] = a.d[k] * b.v + a.v * b.d[k];
    return r;
  }
  // (a / b)' = (a' - (a/b) b') / b
  NHOLO_HDI friend Dual operator/(const Dual& a, const Dual& b) {
    Dual r;
    const T inv = T(1) / b.v;
    r.v = a.v * inv;
    for (int k = 0; k < K; ++k) r.d[k] = (a.d[k] - r.v * b.d[k]) * inv;
    return r;
  }

  // ---- with the inner type T (cheaper than promoting it to a dual)
  NHOLO_HDI friend Dual operator+(const Dual& a, const T& s) {
    Dual r = a;
    r.v = a.v + s;
    return r;
  }
  NHOLO_HDI friend Dual operator+(const T& s, const Dual& a) { return a + s; }
  NHOLO_HDI friend Dual operator-(const Dual& a, const T& s) {
    Dual r = a;
    r.v = a.v - s;
    return r;
  }
  NHOLO_HDI friend Dual operator-(const T& s, const Dual& a) {
    Dual r = -a;
    r.v = s - a.v;
    return r;
  }
  NHOLO_HDI friend Dual operator*(const Dual& a, const T& s) {
    Dual r;
    r.v = a.v * s;
    for (int k = 0; k < K; ++k) r.d[k] = a.d[k] * s;
    return r;
  }
  NHOLO_HDI friend Dual operator*(const T& s, const Dual& a) { return a * s; }
  NHOLO_HDI friend Dual operator/(const Dual& a, const T& s) {
    const T inv = T(1) / s;
    return a * inv;
  }
  NHOLO_HDI friend Dual operator/(const T& s, const Dual& b) {
    Dual r;
    const T inv = T(1) / b.v;
    r.v = s * inv;
    const T c = -r.v * inv;
    for (int k = 0; k < K; ++k) r.d[k] = c * b.d[k];
    return r;
  }

  // ---- with a plain double when T is itself an AD type
  NHOLO_HDI friend Dual operator+(const Dual& a, const Other& s) { return a + T(s); }
  NHOLO_HDI friend Dual operator+(const Other& s, const Dual& a) { return a + T(s); }
  NHOLO_HDI friend Dual operator-(const Dual& a, const Other& s) { return a - T(s); }
  NHOLO_HDI friend Dual operator-(const Other& s, const Dual& a) { return T(s) - a; }
  NHOLO_HDI friend Dual operator*(const Dual& a, const Other& s) { return a * T(s); }
  NHOLO_HDI friend Dual operator*(const Other& s, const Dual& a) { return a * T(s); }
  NHOLO_HDI friend Dual operator/(const Dual& a, const Other& s) { return a / T(s); }
  NHOLO_HDI friend Dual operator/(const Other& s, const Dual& a) { return T(s) / a; }

  NHOLO_HDI Dual& operator+=(const Dual& b) { return *this = *this + b; }
  NHOLO_HDI Dual& operator-=(const Dual& b) { return *this = *this - b; }
  NHOLO_HDI Dual& operator*=(const Dual& b) { return *this = *this * b; }
  NHOLO_HDI Dual& operator/=(const Dual& b) { return *this = *this / b; }

  // ---- comparisons act on values only
  NHOLO_HDI friend bool operator<(const Dual& a, const Dual& b) { return a.v < b.v; }
  NHOLO_HDI friend bool operator>(const Dual& a, const Dual& b) { return a.v > b.v; }
  NHOLO_HDI friend bool operator<=(const Dual& a, const Dual& b) { return a.v <= b.v; }
  NHOLO_HDI friend bool operator>=(const Dual& a, const Dual& b) { return a.v >= b.v; }
  NHOLO_HDI friend bool operator==(const Dual& a, const Dual& b) { return a.v == b.v; }
  NHOLO_HDI friend bool operator!=(const Dual& a, const Dual& b) { return a.v != b.v; }
};

template <class T>
struct is_dual : std::false_type {};
template <class T, int K>
struct is_dual<Dual<T, K>> : std::true_type {};

template <class T, int K>
NHOLO_HDI auto value_of(const Dual<T, K>& x) {
  return value_of(x.v);
}
// per lane of a mask c (kernels/lanes.hpp): c ? a : b for value and tangents
// (a plain bool takes scalar_math.hpp's select)
template <class C, class T, int K, std::enable_if_t<!std::is_same<C, bool>::value, int> = 0>
NHOLO_HDI Dual<T, K> select(const C& c, const Dual<T, K>& a, const Dual<T, K>& b) {
  Dual<T, K> r;
  r.v = select(c, a.v, b.v);
  for (int k = 0; k < K; ++k) r.d[k] = select(c, a.d[k], b.d[k]);
  return r;
}
// finite value and tangents (all nesting levels)
template <class T, int K>
NHOLO_HDI bool is_finite(const Dual<T, K>& x) {
  bool ok = is_finite(x.v);
  for (int k = 0; k < K; ++k) ok = ok && is_finite(x.d[k]);
  return ok;
}

namespace detail {
// f(x) with f(x.v) = fv and f'(x.v) = dfv: chain rule on every tangent.
template <class T, int K>
NHOLO_HDI Dual<T, K> chain(const Dual<T, K>& x, const T& fv, const T& dfv) {
  Dual<T, K> r;
  r.v = fv;
  for (int k = 0; k < K; ++k) r.d[k] = dfv * x.d[k];
  return r;
}
}  // namespace detail

template <class T, int K>
NHOLO_HDI Dual<T, K> sin(const Dual<T, K>& x) {
  return detail::chain(x, sin(x.v), cos(x.v));
}
template <class T, int K>
NHOLO_HDI Dual<T, K> cos(const Dual<T, K>& x) {
  return detail::chain(x, cos(x.v), T(-sin(x.v)));
}
template <class T, int K>
NHOLO_HDI Dual<T, K> tan(const Dual<T, K>& x) {
  const T t = tan(x.v);
  return detail::chain(x, t, T(1.0 + t * t));
}
template <class T, int K>
NHOLO_HDI Dual<T, K> sqrt(const Dual<T, K>& x) {
  const T s = sqrt(x.v);
  return detail::chain(x, s, T(0.5 / s));
}
template <class T, int K>
NHOLO_HDI Dual<T, K> exp(const Dual<T, K>& x) {
  const T e = exp(x.v);
  return detail::chain(x, e, e);
}
template <class T, int K>
NHOLO_HDI Dual<T, K> log(const Dual<T, K>& x) {
  return detail::chain(x, log(x.v), T(1.0 / x.v));
}
template <class T, int K>
NHOLO_HDI Dual<T, K> atan(const Dual<T, K>& x) {
  return detail::chain(x, atan(x.v), T(1.0 / (1.0 + x.v * x.v)));
}
template <class T, int K>
NHOLO_HDI Dual<T, K> asin(const Dual<T, K>& x) {
  return detail::chain(x, asin(x.v), T(1.0 / sqrt(1.0 - x.v * x.v)));
}
template <class T, int K>
NHOLO_HDI Dual<T, K> acos(const Dual<T, K>& x) {
  return detail::chain(x, acos(x.v), T(-1.0 / sqrt(1.0 - x.v * x.v)));
}
template <class T, int K>
NHOLO_HDI Dual<T, K> sinh(const Dual<T, K>& x) {
  return detail::chain(x, sinh(x.v), cosh(x.v));
}
template <class T, int K>
NHOLO_HDI Dual<T, K> cosh(const Dual<T, K>& x) {
  return detail::chain(x, cosh(x.v), sinh(x.v));
}
template <class T, int K>
NHOLO_HDI Dual<T, K> tanh(const Dual<T, K>& x) {
  const T t = tanh(x.v);
  return detail::chain(x, t, T(1.0 - t * t));
}
// |x|' = sgn(x) (0 at x = 0)
template <class T, int K>
NHOLO_HDI Dual<T, K> fabs(const Dual<T, K>& x) {
  return detail::chain(x, fabs(x.v), T(sgn(x.v)));
}
// x^p for a constant exponent p; (x^0)' = 0 also at x = 0, where
// p x^(p-1) would be 0 * inf = NaN (and so would (x^1)'' at x = 0). The
// exponent is passed as the innermost scalar type V: pow(float, double) is
// ambiguous between pow(float, float) and pow(double, double).
template <class T, int K>
NHOLO_HDI Dual<T, K> pow(const Dual<T, K>& x, double p) {
  using V = decltype(value_of(x.v));
  return detail::chain(x, T(pow(x.v, V(p))), p == 0.0 ? T(0) : T(p * pow(x.v, V(p - 1.0))));
}
// atan2(y, x)' = (x y' - y x') / (x^2 + y^2)
template <class T, int K>
NHOLO_HDI Dual<T, K> atan2(const Dual<T, K>& y, const Dual<T, K>& x) {
  Dual<T, K> r;
  r.v = atan2(y.v, x.v);
  const T inv = T(1.0) / (x.v * x.v + y.v * y.v);
  for (int k = 0; k < K; ++k) r.d[k] = (x.v * y.d[k] - y.v * x.d[k]) * inv;
  return r;
}

// Seeding in place. x = c + w1 eps_k1 + w2 eps_k2 (k < 0: no such tangent),
// written element by element into the jet that the model will read. Building
// a temporary (`D::variable(...)`, `D(c)` then `.d[k] = ...`) and copying it
// into the array made GCC store the parts 8 bytes at a time and reload them
// 16 bytes at a time, which the CPU cannot forward from its store buffer: a
// stall of some ten cycles per seed, about a third of the rolling coin's
// right-hand side time (docs/BENCHMARKS.md, section 9.7).
template <class T, int K>
NHOLO_HDI void seed(Dual<T, K>& x, const T& c, int k1 = -1, const T& w1 = T(0), int k2 = -1,
                    const T& w2 = T(0)) {
  x.v = c;
  for (int k = 0; k < K; ++k) x.d[k] = k == k1 ? w1 : k == k2 ? w2 : T(0);
}

}  // namespace nholo
