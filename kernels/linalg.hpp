// nholo/kernels/linalg.hpp — fixed-size vectors and matrices that live in
// registers / on the stack, usable from host and device code.
//
// Concept (valid expressions), T a scalar or AD type:
//   Vec<T,N> v;           v[i]                 element i (0-based)
//   Mat<T,R,C> a;         a(i,j)               element (i,j), row-major storage
//   Vec<T,N>::zero()      Mat<T,R,C>::zero()   all elements T(0)
//   Mat<T,N,N>::identity()
//   a * v, a * b, transpose(a), dot(u,v), u + v, u - v, s * v, norm(v)
// Sizes of 0 are allowed (a model without constraints has m = 0); the storage
// then holds one unused element so that the arrays are valid C++.
#pragma once

#include <type_traits>

#include "scalar_math.hpp"

namespace nholo {

template <class T, int N>
struct Vec {
  static_assert(N >= 0, "vector size must be non-negative");
  T v[N > 0 ? N : 1];

  NHOLO_HDI T& operator[](int i) { return v[i]; }
  NHOLO_HDI const T& operator[](int i) const { return v[i]; }
  static constexpr int size = N;

  NHOLO_HDI static Vec zero() {
    Vec r;
    for (int i = 0; i < (N > 0 ? N : 1); ++i) r.v[i] = T(0);
    return r;
  }
  NHOLO_HDI static Vec constant(const T& c) {
    Vec r = zero();
    for (int i = 0; i < N; ++i) r.v[i] = c;
    return r;
  }
};

template <class T, int R, int C>
struct Mat {
  static_assert(R >= 0 && C >= 0, "matrix sizes must be non-negative");
  T a[(R > 0 ? R : 1) * (C > 0 ? C : 1)];
  static constexpr int rows = R;
  static constexpr int cols = C;

  NHOLO_HDI T& operator()(int i, int j) { return a[i * (C > 0 ? C : 1) + j]; }
  NHOLO_HDI const T& operator()(int i, int j) const { return a[i * (C > 0 ? C : 1) + j]; }

  NHOLO_HDI static Mat zero() {
    Mat r;
    for (int i = 0; i < (R > 0 ? R : 1) * (C > 0 ? C : 1); ++i) r.a[i] = T(0);
    return r;
  }
  NHOLO_HDI static Mat identity() {
    Mat r = zero();
    for (int i = 0; i < (R < C ? R : C); ++i) r(i, i) = T(1);
    return r;
  }
};

// u + v
template <class T, int N>
NHOLO_HDI Vec<T, N> operator+(const Vec<T, N>& u, const Vec<T, N>& v) {
  Vec<T, N> r = Vec<T, N>::zero();
  for (int i = 0; i < N; ++i) r[i] = u[i] + v[i];
  return r;
}
// u - v
template <class T, int N>
NHOLO_HDI Vec<T, N> operator-(const Vec<T, N>& u, const Vec<T, N>& v) {
  Vec<T, N> r = Vec<T, N>::zero();
  for (int i = 0; i < N; ++i) r[i] = u[i] - v[i];
  return r;
}
// -u
template <class T, int N>
NHOLO_HDI Vec<T, N> operator-(const Vec<T, N>& u) {
  Vec<T, N> r = Vec<T, N>::zero();
  for (int i = 0; i < N; ++i) r[i] = -u[i];
  return r;
}
// s u
template <class T, int N>
NHOLO_HDI Vec<T, N> operator*(const T& s, const Vec<T, N>& u) {
  Vec<T, N> r = Vec<T, N>::zero();
  for (int i = 0; i < N; ++i) r[i] = s * u[i];
  return r;
}
template <class T, int N>
NHOLO_HDI Vec<T, N>& operator+=(Vec<T, N>& u, const Vec<T, N>& v) {
  for (int i = 0; i < N; ++i) u[i] += v[i];
  return u;
}
template <class T, int N>
NHOLO_HDI Vec<T, N>& operator-=(Vec<T, N>& u, const Vec<T, N>& v) {
  for (int i = 0; i < N; ++i) u[i] -= v[i];
  return u;
}

// u . v
template <class T, int N>
NHOLO_HDI T dot(const Vec<T, N>& u, const Vec<T, N>& v) {
  T s = T(0);
  for (int i = 0; i < N; ++i) s += u[i] * v[i];
  return s;
}
// |u|_2
template <class T, int N>
NHOLO_HDI T norm(const Vec<T, N>& u) {
  return sqrt(dot(u, u));
}
// max_i |u_i|
template <class T, int N>
NHOLO_HDI T norm_inf(const Vec<T, N>& u) {
  T s = T(0);
  for (int i = 0; i < N; ++i) s = max_of(s, T(fabs(u[i])));
  return s;
}

// a v
template <class T, int R, int C>
NHOLO_HDI Vec<T, R> operator*(const Mat<T, R, C>& a, const Vec<T, C>& v) {
  Vec<T, R> r = Vec<T, R>::zero();
  if constexpr (C > 0) {
    // each sum from its first product (not 0 + ...: the compiler may not drop
    // an addition of +0, which turns a -0 into +0)
    for (int i = 0; i < R; ++i) {
      T s = a(i, 0) * v[0];
      for (int j = 1; j < C; ++j) s += a(i, j) * v[j];
      r[i] = s;
    }
  }
  return r;
}
// a^T v
template <class T, int R, int C>
NHOLO_HDI Vec<T, C> mul_transposed(const Mat<T, R, C>& a, const Vec<T, R>& v) {
  Vec<T, C> r = Vec<T, C>::zero();
  if constexpr (R > 0) {
    // from the first row's products, as a v
    for (int j = 0; j < C; ++j) r[j] = a(0, j) * v[0];
    for (int i = 1; i < R; ++i)
      for (int j = 0; j < C; ++j) r[j] += a(i, j) * v[i];
  }
  return r;
}
// a b
template <class T, int R, int K, int C>
NHOLO_HDI Mat<T, R, C> operator*(const Mat<T, R, K>& a, const Mat<T, K, C>& b) {
  Mat<T, R, C> r = Mat<T, R, C>::zero();
  for (int i = 0; i < R; ++i)
    for (int k = 0; k < K; ++k) {
      const T aik = a(i, k);
      for (int j = 0; j < C; ++j) r(i, j) += aik * b(k, j);
    }
  return r;
}
// a + b
template <class T, int R, int C>
NHOLO_HDI Mat<T, R, C> operator+(const Mat<T, R, C>& a, const Mat<T, R, C>& b) {
  Mat<T, R, C> r = Mat<T, R, C>::zero();
  for (int i = 0; i < R * C; ++i) r.a[i] = a.a[i] + b.a[i];
  return r;
}
// a - b
template <class T, int R, int C>
NHOLO_HDI Mat<T, R, C> operator-(const Mat<T, R, C>& a, const Mat<T, R, C>& b) {
  Mat<T, R, C> r = Mat<T, R, C>::zero();
  for (int i = 0; i < R * C; ++i) r.a[i] = a.a[i] - b.a[i];
  return r;
}
// s a
template <class T, int R, int C>
NHOLO_HDI Mat<T, R, C> operator*(const T& s, const Mat<T, R, C>& a) {
  Mat<T, R, C> r = Mat<T, R, C>::zero();
  for (int i = 0; i < R * C; ++i) r.a[i] = s * a.a[i];
  return r;
}
// a^T
template <class T, int R, int C>
NHOLO_HDI Mat<T, C, R> transpose(const Mat<T, R, C>& a) {
  Mat<T, C, R> r = Mat<T, C, R>::zero();
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) r(j, i) = a(i, j);
  return r;
}
// max_ij |a_ij|
template <class T, int R, int C>
NHOLO_HDI T norm_max(const Mat<T, R, C>& a) {
  T s = T(0);
  for (int i = 0; i < R * C; ++i) s = max_of(s, T(fabs(a.a[i])));
  return s;
}
// Frobenius norm
template <class T, int R, int C>
NHOLO_HDI T norm_frobenius(const Mat<T, R, C>& a) {
  T s = T(0);
  for (int i = 0; i < R * C; ++i) s += a.a[i] * a.a[i];
  return sqrt(s);
}

// Every element finite (a test and a branch per element; the compiler shares
// the |u_i| with nearby code that needs them, e.g. an error norm).
template <class T, int N>
NHOLO_HDI bool all_finite(const Vec<T, N>& u) {
  for (int i = 0; i < N; ++i)
    if (!is_finite(u[i])) return false;
  return true;
}

// The same answer as all_finite, without a branch per element, for the
// right-hand sides' status tests: x * 0 is +-0 for finite x and NaN for an
// infinite or NaN x (IEEE arithmetic; nothing here is built with
// -ffinite-math-only or fast-math), so the sum of the products is 0 exactly
// when every element is finite (and cannot overflow); two partial sums.
// Elements that are not plain floating-point numbers (the AD types) go to
// all_finite.
template <class T, int N>
NHOLO_HDI bool all_finite_branchless(const Vec<T, N>& u) {
  if constexpr (std::is_floating_point<T>::value) {
    if constexpr (N == 0) {
      return true;
    } else if constexpr (N == 1) {
      return u[0] * T(0) == T(0);
    } else {
      T z0 = u[0] * T(0), z1 = u[1] * T(0);
      for (int i = 2; i + 1 < N; i += 2) {
        z0 += u[i] * T(0);
        z1 += u[i + 1] * T(0);
      }
      if constexpr (N % 2 == 1) z0 += u[N - 1] * T(0);
      return z0 + z1 == T(0);
    }
  } else {
    return all_finite(u);
  }
}

}  // namespace nholo
