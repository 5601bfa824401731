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
// Jet2<S,K,P,Q> (below) is the same concept with exactly the second
// derivatives the Euler–Lagrange equations need and nothing more: value, K
// first derivatives, and d2/(dw_i dw_j) for i, j < P (symmetric, stored once)
// and d2/(dw_i dw_{P+c}) for i < P, c < Q. dynamics.hpp differentiates
// Lagrangians with it (P = n velocity directions, Q = 1 direction v, n more
// first-order directions q): the n x n mass matrix, D_v dL/dqd and dL/dq in
// one evaluation, about half the work of Dual<Dual<S,2n>,n+1>, whose qd-q
// and v-q second derivatives and duplicated M entries are never used.
#pragma once

#include <type_traits>

#include "config.hpp"

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

// ---------------------------------------------------------------------------
// Every Jet2 operation is forced inline: a Lagrangian is a few dozen of them
// on the same handful of jets, which the compiler keeps in registers only
// when it sees the whole expression (out-of-line, each product returned a
// 17-double struct through memory and doubled the cost of an evaluation).
#define NHOLO_JET_INLINE NHOLO_HD NHOLO_FORCEINLINE

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


// Jet2<S, K, P, Q>: a value x, its first derivatives x_k = dx/dw_k in K
// directions, and a block of its second derivatives x_ij = d2x/(dw_i dw_j):
//   h[0 .. P(P+1)/2)          x_ij for j <= i < P, packed row by row
//                             (entry i(i+1)/2 + j)
//   h[P(P+1)/2 + i Q + c]     x_i,P+c for i < P, c < Q
// (P + Q <= K; directions P+Q .. K-1 are first order only). Every rule below
// only needs the second derivatives it produces:
//   (ab)_ij = a_ij b + a b_ij + a_i b_j + a_j b_i,   (a/b) = r: r_ij =
//   (a_ij - r b_ij - r_i b_j - r_j b_i) / b,   f(x)_ij = f' x_ij + f'' x_i x_j.
// Scalars are the plain type S (double or float); values of other arithmetic
// types convert to it. Same valid expressions as Dual (top of this file).
template <class S, int K, int P, int Q>
struct Jet2 {
  static_assert(P >= 1 && Q >= 0 && P + Q <= K, "Jet2: need 1 <= P, P + Q <= K");
  static constexpr int HS = P * (P + 1) / 2;  // symmetric block
  static constexpr int H = HS + P * Q;        // all second-order entries

  S v;     // value
  S g[K];  // first derivatives
  S h[H];  // second derivatives (layout above)

  Jet2() = default;
  template <class A, std::enable_if_t<std::is_arithmetic<A>::value, int> = 0>
  NHOLO_HD Jet2(A c) : v(S(c)) {  // NOLINT(google-explicit-constructor): constants
    for (int k = 0; k < K; ++k) g[k] = S(0);
    for (int e = 0; e < H; ++e) h[e] = S(0);
  }

  // ---- between jets
  NHOLO_JET_INLINE friend Jet2 operator+(const Jet2& a, const Jet2& b) {
    Jet2 r;
    r.v = a.v + b.v;
    for (int k = 0; k < K; ++k) r.g[k] = a.g[k] + b.g[k];
    for (int e = 0; e < H; ++e) r.h[e] = a.h[e] + b.h[e];
    return r;
  }
  NHOLO_JET_INLINE friend Jet2 operator-(const Jet2& a, const Jet2& b) {
    Jet2 r;
    r.v = a.v - b.v;
    for (int k = 0; k < K; ++k) r.g[k] = a.g[k] - b.g[k];
    for (int e = 0; e < H; ++e) r.h[e] = a.h[e] - b.h[e];
    return r;
  }
  NHOLO_JET_INLINE friend Jet2 operator-(const Jet2& a) {
    Jet2 r;
    r.v = -a.v;
    for (int k = 0; k < K; ++k) r.g[k] = -a.g[k];
    for (int e = 0; e < H; ++e) r.h[e] = -a.h[e];
    return r;
  }
  // (ab)_ij = a_ij b + a b_ij + a_i b_j + a_j b_i
  NHOLO_JET_INLINE friend Jet2 operator*(const Jet2& a, const Jet2& b) {
    Jet2 r;
    r.v = a.v * b.v;
    for (int k = 0; k < K; ++k) r.g[k] = a.g[k] * b.v + a.v * b.g[k];
    int e = 0;
    for (int i = 0; i < P; ++i)
      for (int j = 0; j <= i; ++j, ++e)
        r.h[e] = a.h[e] * b.v + a.v * b.h[e] + (a.g[i] * b.g[j] + a.g[j] * b.g[i]);
    for (int i = 0; i < P; ++i)
      for (int c = P; c < P + Q; ++c, ++e)
        r.h[e] = a.h[e] * b.v + a.v * b.h[e] + (a.g[i] * b.g[c] + a.g[c] * b.g[i]);
    return r;
  }
  // r = a / b: r_k = (a_k - r b_k) / b, r_ij = (a_ij - r b_ij - r_i b_j - r_j b_i) / b
  NHOLO_JET_INLINE friend Jet2 operator/(const Jet2& a, const Jet2& b) {
    Jet2 r;
    const S inv = S(1) / b.v;
    r.v = a.v * inv;
    for (int k = 0; k < K; ++k) r.g[k] = (a.g[k] - r.v * b.g[k]) * inv;
    int e = 0;
    for (int i = 0; i < P; ++i)
      for (int j = 0; j <= i; ++j, ++e)
        r.h[e] = (a.h[e] - r.v * b.h[e] - (r.g[i] * b.g[j] + r.g[j] * b.g[i])) * inv;
    for (int i = 0; i < P; ++i)
      for (int c = P; c < P + Q; ++c, ++e)
        r.h[e] = (a.h[e] - r.v * b.h[e] - (r.g[i] * b.g[c] + r.g[c] * b.g[i])) * inv;
    return r;
  }

  // ---- with a plain scalar
  NHOLO_JET_INLINE friend Jet2 operator+(const Jet2& a, const S& s) {
    Jet2 r = a;
    r.v = a.v + s;
    return r;
  }
  NHOLO_JET_INLINE friend Jet2 operator+(const S& s, const Jet2& a) {
    Jet2 r = a;
    r.v = s + a.v;
    return r;
  }
  NHOLO_JET_INLINE friend Jet2 operator-(const Jet2& a, const S& s) {
    Jet2 r = a;
    r.v = a.v - s;
    return r;
  }
  NHOLO_JET_INLINE friend Jet2 operator-(const S& s, const Jet2& a) {
    Jet2 r = -a;
    r.v = s - a.v;
    return r;
  }
  NHOLO_JET_INLINE friend Jet2 operator*(const Jet2& a, const S& s) {
    Jet2 r;
    r.v = a.v * s;
    for (int k = 0; k < K; ++k) r.g[k] = a.g[k] * s;
    for (int e = 0; e < H; ++e) r.h[e] = a.h[e] * s;
    return r;
  }
  NHOLO_JET_INLINE friend Jet2 operator*(const S& s, const Jet2& a) {
    Jet2 r;
    r.v = s * a.v;
    for (int k = 0; k < K; ++k) r.g[k] = s * a.g[k];
    for (int e = 0; e < H; ++e) r.h[e] = s * a.h[e];
    return r;
  }
  NHOLO_JET_INLINE friend Jet2 operator/(const Jet2& a, const S& s) {
    const S inv = S(1) / s;
    return a * inv;
  }
  // (s / b)_k = -r b_k / b, (s / b)_ij = -(r b_ij + r_i b_j + r_j b_i) / b
  NHOLO_JET_INLINE friend Jet2 operator/(const S& s, const Jet2& b) { return Jet2(s) / b; }

  NHOLO_JET_INLINE Jet2& operator+=(const Jet2& b) { return *this = *this + b; }
  NHOLO_JET_INLINE Jet2& operator-=(const Jet2& b) { return *this = *this - b; }
  NHOLO_JET_INLINE Jet2& operator*=(const Jet2& b) { return *this = *this * b; }
  NHOLO_JET_INLINE Jet2& operator/=(const Jet2& b) { return *this = *this / b; }

  // ---- comparisons act on values only
  NHOLO_JET_INLINE friend bool operator<(const Jet2& a, const Jet2& b) { return a.v < b.v; }
  NHOLO_JET_INLINE friend bool operator>(const Jet2& a, const Jet2& b) { return a.v > b.v; }
  NHOLO_JET_INLINE friend bool operator<=(const Jet2& a, const Jet2& b) { return a.v <= b.v; }
  NHOLO_JET_INLINE friend bool operator>=(const Jet2& a, const Jet2& b) { return a.v >= b.v; }
  NHOLO_JET_INLINE friend bool operator==(const Jet2& a, const Jet2& b) { return a.v == b.v; }
  NHOLO_JET_INLINE friend bool operator!=(const Jet2& a, const Jet2& b) { return a.v != b.v; }
};

template <class S, int K, int P, int Q>
NHOLO_JET_INLINE S value_of(const Jet2<S, K, P, Q>& x) {
  return x.v;
}

// x = c + w1 eps_k1 + w2 eps_k2 with no second derivatives, in place (see
// seed for Dual above)
template <class S, int K, int P, int Q>
NHOLO_JET_INLINE void seed(Jet2<S, K, P, Q>& x, S c, int k1 = -1, S w1 = S(0), int k2 = -1,
                           S w2 = S(0)) {
  x.v = c;
  for (int k = 0; k < K; ++k) x.g[k] = k == k1 ? w1 : k == k2 ? w2 : S(0);
  for (int e = 0; e < Jet2<S, K, P, Q>::H; ++e) x.h[e] = S(0);
}

namespace detail {
// f(x) with f(x.v) = f0, f'(x.v) = f1, f''(x.v) = f2:
//   f_k = f1 x_k,  f_ij = f1 x_ij + f2 x_i x_j
template <class S, int K, int P, int Q>
NHOLO_JET_INLINE Jet2<S, K, P, Q> chain2(const Jet2<S, K, P, Q>& x, S f0, S f1, S f2) {
  Jet2<S, K, P, Q> r;
  r.v = f0;
  for (int k = 0; k < K; ++k) r.g[k] = f1 * x.g[k];
  int e = 0;
  for (int i = 0; i < P; ++i)
    for (int j = 0; j <= i; ++j, ++e) r.h[e] = f1 * x.h[e] + f2 * (x.g[i] * x.g[j]);
  for (int i = 0; i < P; ++i)
    for (int c = P; c < P + Q; ++c, ++e) r.h[e] = f1 * x.h[e] + f2 * (x.g[i] * x.g[c]);
  return r;
}
}  // namespace detail

template <class S, int K, int P, int Q>
NHOLO_JET_INLINE Jet2<S, K, P, Q> sin(const Jet2<S, K, P, Q>& x) {
  const S s = sin(x.v);
  return detail::chain2(x, s, S(cos(x.v)), S(-s));
}
template <class S, int K, int P, int Q>
NHOLO_JET_INLINE Jet2<S, K, P, Q> cos(const Jet2<S, K, P, Q>& x) {
  const S c = cos(x.v);
  return detail::chain2(x, c, S(-sin(x.v)), S(-c));
}
template <class S, int K, int P, int Q>
NHOLO_JET_INLINE Jet2<S, K, P, Q> tan(const Jet2<S, K, P, Q>& x) {
  const S t = tan(x.v);
  const S d = S(1) + t * t;
  return detail::chain2(x, t, d, S(S(2) * t * d));
}
template <class S, int K, int P, int Q>
NHOLO_JET_INLINE Jet2<S, K, P, Q> sqrt(const Jet2<S, K, P, Q>& x) {
  const S s = sqrt(x.v);
  const S d = S(0.5) / s;
  return detail::chain2(x, s, d, S(-S(0.5) * d / x.v));
}
template <class S, int K, int P, int Q>
NHOLO_JET_INLINE Jet2<S, K, P, Q> exp(const Jet2<S, K, P, Q>& x) {
  const S e = exp(x.v);
  return detail::chain2(x, e, e, e);
}
template <class S, int K, int P, int Q>
NHOLO_JET_INLINE Jet2<S, K, P, Q> log(const Jet2<S, K, P, Q>& x) {
  const S d = S(1) / x.v;
  return detail::chain2(x, S(log(x.v)), d, S(-d * d));
}
template <class S, int K, int P, int Q>
NHOLO_JET_INLINE Jet2<S, K, P, Q> atan(const Jet2<S, K, P, Q>& x) {
  const S d = S(1) / (S(1) + x.v * x.v);
  return detail::chain2(x, S(atan(x.v)), d, S(-S(2) * x.v * d * d));
}
template <class S, int K, int P, int Q>
NHOLO_JET_INLINE Jet2<S, K, P, Q> asin(const Jet2<S, K, P, Q>& x) {
  const S d = S(1) / sqrt(S(1) - x.v * x.v);
  return detail::chain2(x, S(asin(x.v)), d, S(x.v * d * d * d));
}
template <class S, int K, int P, int Q>
NHOLO_JET_INLINE Jet2<S, K, P, Q> acos(const Jet2<S, K, P, Q>& x) {
  const S d = S(1) / sqrt(S(1) - x.v * x.v);
  return detail::chain2(x, S(acos(x.v)), S(-d), S(-x.v * d * d * d));
}
template <class S, int K, int P, int Q>
NHOLO_JET_INLINE Jet2<S, K, P, Q> sinh(const Jet2<S, K, P, Q>& x) {
  const S s = sinh(x.v);
  return detail::chain2(x, s, S(cosh(x.v)), s);
}
template <class S, int K, int P, int Q>
NHOLO_JET_INLINE Jet2<S, K, P, Q> cosh(const Jet2<S, K, P, Q>& x) {
  const S c = cosh(x.v);
  return detail::chain2(x, c, S(sinh(x.v)), c);
}
template <class S, int K, int P, int Q>
NHOLO_JET_INLINE Jet2<S, K, P, Q> tanh(const Jet2<S, K, P, Q>& x) {
  const S t = tanh(x.v);
  const S d = S(1) - t * t;
  return detail::chain2(x, t, d, S(-S(2) * t * d));
}
// |x|' = sgn(x) (0 at x = 0), |x|'' = 0
template <class S, int K, int P, int Q>
NHOLO_JET_INLINE Jet2<S, K, P, Q> fabs(const Jet2<S, K, P, Q>& x) {
  return detail::chain2(x, S(fabs(x.v)), S(sgn(x.v)), S(0));
}
// x^p, constant p: (x^0)' = 0 and (x^1)'' = (x^0)'' = 0 also at x = 0
template <class S, int K, int P, int Q>
NHOLO_JET_INLINE Jet2<S, K, P, Q> pow(const Jet2<S, K, P, Q>& x, double p) {
  const S f1 = p == 0.0 ? S(0) : S(S(p) * pow(x.v, S(p - 1.0)));
  const S f2 = (p == 0.0 || p == 1.0) ? S(0) : S(S(p * (p - 1.0)) * pow(x.v, S(p - 2.0)));
  return detail::chain2(x, S(pow(x.v, S(p))), f1, f2);
}
// atan2(y, x), r2 = x^2 + y^2: gradient (x, -y) / r2 in (y, x), Hessian
//   f_yy = -2xy / r2^2, f_xx = 2xy / r2^2, f_xy = (y^2 - x^2) / r2^2
template <class S, int K, int P, int Q>
NHOLO_JET_INLINE Jet2<S, K, P, Q> atan2(const Jet2<S, K, P, Q>& y, const Jet2<S, K, P, Q>& x) {
  Jet2<S, K, P, Q> r;
  const S inv = S(1) / (x.v * x.v + y.v * y.v);
  const S fy = x.v * inv, fx = -y.v * inv;
  const S fyy = S(-2) * x.v * y.v * inv * inv, fxx = -fyy,
          fxy = (y.v * y.v - x.v * x.v) * inv * inv;
  r.v = atan2(y.v, x.v);
  for (int k = 0; k < K; ++k) r.g[k] = fy * y.g[k] + fx * x.g[k];
  int e = 0;
  for (int i = 0; i < P; ++i)
    for (int j = 0; j <= i; ++j, ++e)
      r.h[e] = fy * y.h[e] + fx * x.h[e] + fyy * (y.g[i] * y.g[j]) + fxx * (x.g[i] * x.g[j]) +
               fxy * (y.g[i] * x.g[j] + x.g[i] * y.g[j]);
  for (int i = 0; i < P; ++i)
    for (int c = P; c < P + Q; ++c, ++e)
      r.h[e] = fy * y.h[e] + fx * x.h[e] + fyy * (y.g[i] * y.g[c]) + fxx * (x.g[i] * x.g[c]) +
               fxy * (y.g[i] * x.g[c] + x.g[i] * y.g[c]);
  return r;
}

#undef NHOLO_JET_INLINE

}  // namespace nholo
