// nholo/kernels/jet2.hpp — forward-mode automatic differentiation to second
// order, with only the second derivatives the Euler–Lagrange equations use.
//
// Jet2<S,K,P,Q> has the valid expressions of Dual (dual.hpp) with exactly the
// second derivatives the Euler–Lagrange equations need and nothing more: value, K
// first derivatives, and d2/(dw_i dw_j) for i, j < P (symmetric, stored once)
// and d2/(dw_i dw_{P+c}) for i < P, c < Q. dynamics.hpp differentiates
// Lagrangians with it (P = n velocity directions, Q = 1 direction v, n more
// first-order directions q): the n x n mass matrix, D_v dL/dqd and dL/dq in
// one evaluation, about half the work of Dual<Dual<S,2n>,n+1>, whose qd-q
// and v-q second derivatives and duplicated M entries are never used.
#pragma once

#include <type_traits>

#include "scalar_math.hpp"

namespace nholo {

// Every Jet2 operation is forced inline: a Lagrangian is a few dozen of them
// on the same handful of jets, which the compiler keeps in registers only
// when it sees the whole expression (out-of-line, each product returned a
// 17-double struct through memory and doubled the cost of an evaluation).
#define NHOLO_JET_INLINE NHOLO_HD NHOLO_FORCEINLINE

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
// types convert to it. Same valid expressions as Dual (dual.hpp).
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
  // a constant of a scalar type that is not built in (the CPU's SIMD lanes)
  template <class U = S, std::enable_if_t<!std::is_arithmetic<U>::value, int> = 0>
  NHOLO_HD Jet2(const S& c) : v(c) {  // NOLINT(google-explicit-constructor): constants
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

  // A double where S is not itself a built-in type (the CPU's SIMD lanes,
  // kernels/lanes.hpp): the operators above with S(s), which `2.0 * x` would
  // otherwise reach by two conversions at once; a dummy type for double and
  // float, where they are the ones above.
  struct NotAScalar {};
  using Other = std::conditional_t<std::is_arithmetic<S>::value, NotAScalar, double>;
  NHOLO_JET_INLINE friend Jet2 operator+(const Jet2& a, Other s) { return a + S(s); }
  NHOLO_JET_INLINE friend Jet2 operator+(Other s, const Jet2& a) { return S(s) + a; }
  NHOLO_JET_INLINE friend Jet2 operator-(const Jet2& a, Other s) { return a - S(s); }
  NHOLO_JET_INLINE friend Jet2 operator-(Other s, const Jet2& a) { return S(s) - a; }
  NHOLO_JET_INLINE friend Jet2 operator*(const Jet2& a, Other s) { return a * S(s); }
  NHOLO_JET_INLINE friend Jet2 operator*(Other s, const Jet2& a) { return S(s) * a; }
  NHOLO_JET_INLINE friend Jet2 operator/(const Jet2& a, Other s) { return a / S(s); }
  NHOLO_JET_INLINE friend Jet2 operator/(Other s, const Jet2& a) { return S(s) / a; }

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
// seed for Dual in dual.hpp)
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
