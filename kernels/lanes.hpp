// nholo/kernels/lanes.hpp — Lanes<W>: W doubles that every arithmetic
// operation and math function treats element by element, so that the
// kernels' scalar source (templated on S) integrates W trajectories at once
// in one core's vector unit (AVX2: W = 4, AVX-512: W = 8). CPU only: the GPU
// runs one trajectory per thread with S = double.
//
//   Lanes<8> x = ..., y = ...;
//   LaneMask<8> big = x > y;          // comparisons give masks, not bools
//   Lanes<8> z = select(big, x, y);   // per lane: big ? x : y
//   if (any(big)) { ... }             // a branch taken when one lane needs it
//
// Arithmetic (+ - * /, sqrt) is IEEE per element, the same bits as double
// code compiled with the same contraction rules (nholo builds with
// -ffp-contract=off where lanes are compiled, docs/usage.md "SIMD lanes").
// sin, cos, ..., pow come from SLEEF's deterministic functions (Sleef_finz_*,
// 1 ulp), which return the same bits at every width on machines with FMA:
// a trajectory's result does not depend on W or on the lane it ran in. They
// are not glibc's scalar functions: lanes and S = double differ by rounding.
#pragma once

#if defined(__CUDACC__)
#error "kernels/lanes.hpp is CPU-only: the GPU runs one trajectory per thread"
#endif

#include <math.h>
// (GCC 12's _mm512_undefined_pd initialises a variable with itself, which
// -Wuninitialized reports where an intrinsic using it is inlined)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#include <sleef.h>
#include <stdint.h>

#include "dual.hpp"
#include "linalg.hpp"
#include "scalar_math.hpp"
#include "status.hpp"

// sleef.h declares its functions with a const-qualified return type only,
// so the compiler must assume that each call may have side effects and keeps
// every one: sin(theta) in a constraint, again in its derivative, again in
// the next constraint. They are pure functions of their arguments; declared
// so (GCC's `const`), repeated calls on the same lanes within one inlined
// right-hand side are made once (the coin: 4 sin and 4 cos calls per
// evaluation became 1 and 1). The same bits: the same function, called less.
// (sin and cos of lanes are one sincos, whose pair comes back through memory
// and is not merged so: it is remembered instead, below.)
// The scalar FMA variants (d1 purecfma) are declared by sleef.h only where
// it is compiled with AVX2; the library exports them on every x86-64
// (software fma() on machines without FMA: slower, the same bits), so they
// are declared here for every translation unit.
extern "C" {
// (the same declarations as sleef.h's, const return type included, which
// GCC otherwise reports as ignored)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wignored-qualifiers"
#define NHOLO_SLEEF_PURE_1(fn, T, v) const T Sleef_finz_##fn##v(T) __attribute__((const));
#define NHOLO_SLEEF_PURE_2(fn, T, v) const T Sleef_finz_##fn##v(T, T) __attribute__((const));
#define NHOLO_SLEEF_PURE(T, v)                                                                     \
  NHOLO_SLEEF_PURE_1(tan, T, v)                                                                    \
  NHOLO_SLEEF_PURE_1(exp, T, v) NHOLO_SLEEF_PURE_1(log, T, v) NHOLO_SLEEF_PURE_1(atan, T, v)       \
      NHOLO_SLEEF_PURE_1(asin, T, v) NHOLO_SLEEF_PURE_1(acos, T, v) NHOLO_SLEEF_PURE_1(sinh, T, v) \
          NHOLO_SLEEF_PURE_1(cosh, T, v) NHOLO_SLEEF_PURE_1(tanh, T, v)                            \
              NHOLO_SLEEF_PURE_2(atan2, T, v) NHOLO_SLEEF_PURE_2(pow, T, v)
#define NHOLO_SLEEF_PURE_SINCOS(T2, T, v) const T2 Sleef_finz_sincos##v(T) __attribute__((const));
NHOLO_SLEEF_PURE(double, d1_u10purecfma)
NHOLO_SLEEF_PURE_SINCOS(Sleef_double_2, double, d1_u10purecfma)
#if defined(__AVX2__) && defined(__FMA__)
NHOLO_SLEEF_PURE(__m256d, d4_u10avx2)
NHOLO_SLEEF_PURE_SINCOS(Sleef___m256d_2, __m256d, d4_u10avx2)
#endif
#if defined(__AVX512F__)
NHOLO_SLEEF_PURE(__m512d, d8_u10avx512f)
NHOLO_SLEEF_PURE_SINCOS(Sleef___m512d_2, __m512d, d8_u10avx512f)
#endif
#undef NHOLO_SLEEF_PURE_SINCOS
#undef NHOLO_SLEEF_PURE
#undef NHOLO_SLEEF_PURE_2
#undef NHOLO_SLEEF_PURE_1
#pragma GCC diagnostic pop
}

// Lanes compiled for different instruction sets are different types (an
// inline namespace per ISA), so that the kernels instantiated on them in an
// AVX-512, an AVX2 and a baseline translation unit never share a symbol: the
// linker cannot hand AVX-512 code to a machine without it.
#if defined(__AVX512F__)
#define NHOLO_LANE_ISA lanes_avx512
#elif defined(__AVX2__) && defined(__FMA__)
#define NHOLO_LANE_ISA lanes_avx2
#else
#define NHOLO_LANE_ISA lanes_baseline
#endif

namespace nholo {
inline namespace NHOLO_LANE_ISA {

namespace lanes_detail {
template <int W>
struct LaneNative {
  typedef double f64 __attribute__((vector_size(8 * W)));
  typedef int64_t i64 __attribute__((vector_size(8 * W)));
};
}  // namespace lanes_detail

// Per-lane truth: all bits set (-1) or none (0) in each element.
template <int W>
struct LaneMask {
  using native = typename lanes_detail::LaneNative<W>::i64;
  native m;

  LaneMask() = default;
  explicit LaneMask(native x) : m(x) {}
  explicit LaneMask(bool b) : m(native{} + (b ? int64_t(-1) : int64_t(0))) {}
  bool operator[](int i) const { return m[i] != 0; }
  void set(int i, bool b) { m[i] = b ? -1 : 0; }

  friend LaneMask operator&&(LaneMask a, LaneMask b) { return LaneMask(a.m & b.m); }
  friend LaneMask operator||(LaneMask a, LaneMask b) { return LaneMask(a.m | b.m); }
  friend LaneMask operator!(LaneMask a) { return LaneMask(~a.m); }
};

template <int W>
inline bool any(const LaneMask<W>& k) {
  int64_t r = 0;
  for (int i = 0; i < W; ++i) r |= k.m[i];
  return r != 0;
}
template <int W>
inline bool all(const LaneMask<W>& k) {
  int64_t r = -1;
  for (int i = 0; i < W; ++i) r &= k.m[i];
  return r != 0;
}
inline bool any(bool b) {
  return b;
}
inline bool all(bool b) {
  return b;
}

template <int W>
struct Lanes {
  static_assert(W == 1 || W == 2 || W == 4 || W == 8, "lane width must be 1, 2, 4 or 8");
  using native = typename lanes_detail::LaneNative<W>::f64;
  static constexpr int width = W;
  native v;

  Lanes() = default;
  // a double is the same value in every lane (as double converts to S in the kernels)
  // (x - 0 is x for every x, -0 included, so the compiler drops the
  // subtraction: a broadcast, where x + 0 would be an add first)
  Lanes(double x) : v(x - native{}) {}  // NOLINT: implicit like a scalar's conversions
  explicit Lanes(native x) : v(x) {}

  double operator[](int i) const { return v[i]; }
  void set(int i, double x) { v[i] = x; }

  Lanes& operator+=(const Lanes& b) {
    v += b.v;
    return *this;
  }
  Lanes& operator-=(const Lanes& b) {
    v -= b.v;
    return *this;
  }
  Lanes& operator*=(const Lanes& b) {
    v *= b.v;
    return *this;
  }
  Lanes& operator/=(const Lanes& b) {
    v /= b.v;
    return *this;
  }
};

template <int W>
inline Lanes<W> operator-(const Lanes<W>& a) {
  return Lanes<W>(-a.v);
}
#define NHOLO_LANES_BINARY(op)                                        \
  template <int W>                                                    \
  inline Lanes<W> operator op(const Lanes<W>& a, const Lanes<W>& b) { \
    return Lanes<W>(a.v op b.v);                                      \
  }                                                                   \
  template <int W>                                                    \
  inline Lanes<W> operator op(const Lanes<W>& a, double b) {          \
    return Lanes<W>(a.v op b);                                        \
  }                                                                   \
  template <int W>                                                    \
  inline Lanes<W> operator op(double a, const Lanes<W>& b) {          \
    return Lanes<W>(a op b.v);                                        \
  }
NHOLO_LANES_BINARY(+)
NHOLO_LANES_BINARY(-)
NHOLO_LANES_BINARY(*)
NHOLO_LANES_BINARY(/)
#undef NHOLO_LANES_BINARY

#define NHOLO_LANES_COMPARE(op)                                          \
  template <int W>                                                       \
  inline LaneMask<W> operator op(const Lanes<W>& a, const Lanes<W>& b) { \
    return LaneMask<W>(a.v op b.v);                                      \
  }                                                                      \
  template <int W>                                                       \
  inline LaneMask<W> operator op(const Lanes<W>& a, double b) {          \
    return LaneMask<W>(a.v op b);                                        \
  }                                                                      \
  template <int W>                                                       \
  inline LaneMask<W> operator op(double a, const Lanes<W>& b) {          \
    return LaneMask<W>(a op b.v);                                        \
  }
NHOLO_LANES_COMPARE(<)
NHOLO_LANES_COMPARE(<=)
NHOLO_LANES_COMPARE(>)
NHOLO_LANES_COMPARE(>=)
NHOLO_LANES_COMPARE(==)
NHOLO_LANES_COMPARE(!=)
#undef NHOLO_LANES_COMPARE

// per lane: k ? a : b
template <int W>
inline Lanes<W> select(const LaneMask<W>& k, const Lanes<W>& a, const Lanes<W>& b) {
  return Lanes<W>(k.m ? a.v : b.v);
}
inline double select(bool k, double a, double b) {
  return k ? a : b;
}

template <int W>
inline Lanes<W> max_of(Lanes<W> a, Lanes<W> b) {
  return select(a > b, a, b);
}
template <int W>
inline Lanes<W> min_of(Lanes<W> a, Lanes<W> b) {
  return select(a < b, a, b);
}
template <int W>
inline Lanes<W> value_of(const Lanes<W>& x) {
  return x;
}
// per lane: 1, 0 or -1 (scalar_math.hpp's sgn)
template <int W>
inline Lanes<W> sign_of_value(const Lanes<W>& x) {
  return select(x > 0.0, Lanes<W>(1.0), Lanes<W>(0.0)) -
         select(x < 0.0, Lanes<W>(1.0), Lanes<W>(0.0));
}
template <int W>
inline Lanes<W> fabs(const Lanes<W>& x) {
  // a cast between vector types of one size keeps the bits (GCC vector extension)
  using I = typename LaneMask<W>::native;
  using F = typename Lanes<W>::native;
  return Lanes<W>((F)((I)x.v & (I{} + INT64_MAX)));
}
// per lane: finite (not NaN, not +-inf)
template <int W>
inline LaneMask<W> is_finite(const Lanes<W>& x) {
  return fabs(x) <= Lanes<W>(1.7976931348623157e308);
}
// correctly rounded, as the scalar sqrt: the same bits
template <int W>
inline Lanes<W> sqrt(const Lanes<W>& x) {
#if defined(__AVX512F__)
  if constexpr (W == 8) return Lanes<8>(_mm512_sqrt_pd(x.v));
#endif
#if defined(__AVX2__)
  if constexpr (W == 4) return Lanes<4>(_mm256_sqrt_pd(x.v));
#endif
  Lanes<W> r;
  for (int i = 0; i < W; ++i) r.v[i] = __builtin_sqrt(x.v[i]);
  return r;
}

// Per-lane status of one evaluation of a lane system (kernels/status.hpp's
// codes, one a lane).
template <int W>
struct LaneStatus {
  Status s[W];
  Status operator[](int i) const { return s[i]; }
  static LaneStatus all(Status st) {
    LaneStatus r;
    for (int i = 0; i < W; ++i) r.s[i] = st;
    return r;
  }
};

// per lane: every component finite
template <int W, int N>
inline LaneMask<W> finite_lanes(const Vec<Lanes<W>, N>& u) {
  LaneMask<W> ok(true);
  for (int i = 0; i < N; ++i) ok = ok && is_finite(u[i]);
  return ok;
}
// per lane: ok where every component is finite, else non_finite
template <int W, int N>
inline LaneStatus<W> finite_status(const Vec<Lanes<W>, N>& u) {
  const LaneMask<W> ok = finite_lanes(u);
  LaneStatus<W> r;
  for (int i = 0; i < W; ++i) r.s[i] = ok[i] ? Status::ok : Status::non_finite;
  return r;
}

// The math functions: SLEEF's deterministic 1-ulp functions (Sleef_finz_*)
// at the width the translation unit was compiled for (AVX-512: 8 lanes a
// call, AVX2 + FMA: 4, else one lane at a time with the scalar FMA variant).
// Each returns the same bits for the same argument at every width.
namespace lanes_detail {
template <int W, class F>
inline Lanes<W> each_lane(F f, const Lanes<W>& x) {
  Lanes<W> r;
  for (int i = 0; i < W; ++i) r.v[i] = f(x.v[i]);
  return r;
}
template <int W, class F>
inline Lanes<W> each_lane(F f, const Lanes<W>& x, const Lanes<W>& y) {
  Lanes<W> r;
  for (int i = 0; i < W; ++i) r.v[i] = f(x.v[i], y.v[i]);
  return r;
}
template <int W>
inline Lanes<W / 2> half(const Lanes<W>& x, int which) {
  Lanes<W / 2> r;
  for (int i = 0; i < W / 2; ++i) r.v[i] = x.v[which * (W / 2) + i];
  return r;
}
template <int W>
inline Lanes<2 * W> join(const Lanes<W>& lo, const Lanes<W>& hi) {
  Lanes<2 * W> r;
  for (int i = 0; i < W; ++i) {
    r.v[i] = lo.v[i];
    r.v[W + i] = hi.v[i];
  }
  return r;
}
}  // namespace lanes_detail

#if defined(__AVX512F__)
#define NHOLO_LANES_AVX512(...) __VA_ARGS__
#else
#define NHOLO_LANES_AVX512(...)
#endif
#if defined(__AVX2__) && defined(__FMA__)
#define NHOLO_LANES_AVX2(...) __VA_ARGS__
#else
#define NHOLO_LANES_AVX2(...)
#endif

#define NHOLO_LANES_UNARY(fn, u)                                                                 \
  template <int W>                                                                               \
  inline Lanes<W> fn(const Lanes<W>& x) {                                                        \
    NHOLO_LANES_AVX512(                                                                          \
        if constexpr (W == 8) { return Lanes<8>(Sleef_finz_##fn##d8_##u##avx512f(x.v)); })       \
    NHOLO_LANES_AVX2(                                                                            \
        if constexpr (W == 4) {                                                                  \
          return Lanes<4>(Sleef_finz_##fn##d4_##u##avx2(x.v));                                   \
        } else if constexpr (W == 8) {                                                           \
          return lanes_detail::join(fn(lanes_detail::half(x, 0)), fn(lanes_detail::half(x, 1))); \
        })                                                                                       \
    return lanes_detail::each_lane<W>(Sleef_finz_##fn##d1_##u##purecfma, x);                     \
  }
#define NHOLO_LANES_BINARY_MATH(fn, u)                                                          \
  template <int W>                                                                              \
  inline Lanes<W> fn(const Lanes<W>& x, const Lanes<W>& y) {                                    \
    NHOLO_LANES_AVX512(                                                                         \
        if constexpr (W == 8) { return Lanes<8>(Sleef_finz_##fn##d8_##u##avx512f(x.v, y.v)); }) \
    NHOLO_LANES_AVX2(                                                                           \
        if constexpr (W == 4) {                                                                 \
          return Lanes<4>(Sleef_finz_##fn##d4_##u##avx2(x.v, y.v));                             \
        } else if constexpr (W == 8) {                                                          \
          return lanes_detail::join(fn(lanes_detail::half(x, 0), lanes_detail::half(y, 0)),     \
                                    fn(lanes_detail::half(x, 1), lanes_detail::half(y, 1)));    \
        })                                                                                      \
    return lanes_detail::each_lane<W>(Sleef_finz_##fn##d1_##u##purecfma, x, y);                 \
  }
// sin and cos are the two halves of one sincos evaluation, which costs
// 0.56-0.64 of a sin and a cos (AVX2; the lower figure for arguments past
// 15, whose range reduction sincos does once). A right-hand side takes sin
// and cos of the same angle (a rolling constraint, or sin of a dual number,
// whose derivative is the cos), and the compiler cannot merge two calls
// that return a pair through memory as it merges two calls of one
// `const` function, so each thread keeps its last argument and result: the
// second of sin(x), cos(x) is read back. The argument is compared bit for
// bit (-0.0 is not 0.0), so a value read back is the value a call returns.
// sincos's halves are not always the bits of Sleef_finz_sin and _cos (both
// are within 1 ulp); they are the same at every width, as every function here.
namespace lanes_detail {
template <int W>
struct SinCos {
  Lanes<W> sin, cos;
};
template <int W>
inline SinCos<W> sleef_sincos(const Lanes<W>& x) {
  NHOLO_LANES_AVX512(if constexpr (W == 8) {
    const Sleef___m512d_2 r = Sleef_finz_sincosd8_u10avx512f(x.v);
    return {Lanes<8>(r.x), Lanes<8>(r.y)};
  })
  NHOLO_LANES_AVX2(
      if constexpr (W == 4) {
        const Sleef___m256d_2 r = Sleef_finz_sincosd4_u10avx2(x.v);
        return {Lanes<4>(r.x), Lanes<4>(r.y)};
      } else if constexpr (W == 8) {
        const SinCos<4> lo = sleef_sincos(half(x, 0)), hi = sleef_sincos(half(x, 1));
        return {join(lo.sin, hi.sin), join(lo.cos, hi.cos)};
      })
  SinCos<W> r;
  for (int i = 0; i < W; ++i) {
    const Sleef_double_2 one = Sleef_finz_sincosd1_u10purecfma(x.v[i]);
    r.sin.v[i] = one.x;
    r.cos.v[i] = one.y;
  }
  return r;
}
template <int W>
struct SinCosMemo {
  typename LaneNative<W>::i64 argument_bits;
  SinCos<W> value;
  bool filled;  // (thread storage starts zeroed: empty)
};
template <int W>
inline const SinCos<W>& sincos(const Lanes<W>& x) {
  static thread_local SinCosMemo<W> last;
  typename LaneNative<W>::i64 bits;
  __builtin_memcpy(&bits, &x.v, sizeof bits);
  const typename LaneNative<W>::i64 differ_bits = bits ^ last.argument_bits;
  int64_t differ = last.filled ? 0 : 1;
  for (int i = 0; i < W; ++i) differ |= differ_bits[i];
  if (differ != 0) {
    last.value = sleef_sincos(x);
    last.argument_bits = bits;
    last.filled = true;
  }
  return last.value;
}
}  // namespace lanes_detail
// (out of line and `const`: the memory of the last call is not seen by the
// caller, so that repeated calls on the same lanes merge, as the other
// functions' calls do, and values stay in registers across a call)
template <int W>
__attribute__((const, noinline)) Lanes<W> sin(Lanes<W> x) {
  return lanes_detail::sincos(x).sin;
}
template <int W>
__attribute__((const, noinline)) Lanes<W> cos(Lanes<W> x) {
  return lanes_detail::sincos(x).cos;
}
// A dual number's sin and cos (the models' AD, the tangent system's duals):
// dual.hpp's chain rule with the value and the derivative from one look-up
// of the memory above, where the generic form calls sin and cos (two); the
// same values.
template <int W, int K>
inline Dual<Lanes<W>, K> sin(const Dual<Lanes<W>, K>& x) {
  const lanes_detail::SinCos<W> sc = lanes_detail::sincos(x.v);
  return detail::chain(x, sc.sin, sc.cos);
}
template <int W, int K>
inline Dual<Lanes<W>, K> cos(const Dual<Lanes<W>, K>& x) {
  const lanes_detail::SinCos<W> sc = lanes_detail::sincos(x.v);
  return detail::chain(x, sc.cos, Lanes<W>(-sc.sin));
}

NHOLO_LANES_UNARY(tan, u10)
NHOLO_LANES_UNARY(exp, u10)
NHOLO_LANES_UNARY(log, u10)
NHOLO_LANES_UNARY(atan, u10)
NHOLO_LANES_UNARY(asin, u10)
NHOLO_LANES_UNARY(acos, u10)
NHOLO_LANES_UNARY(sinh, u10)
NHOLO_LANES_UNARY(cosh, u10)
NHOLO_LANES_UNARY(tanh, u10)
NHOLO_LANES_BINARY_MATH(atan2, u10)
NHOLO_LANES_BINARY_MATH(pow, u10)
#undef NHOLO_LANES_UNARY
#undef NHOLO_LANES_BINARY_MATH
#undef NHOLO_LANES_AVX2
#undef NHOLO_LANES_AVX512

}  // namespace NHOLO_LANE_ISA
}  // namespace nholo

namespace nholo {
// Lanes are plain scalars, W at a time (scalar_math.hpp)
template <int W>
struct is_plain_scalar<Lanes<W>> : std::true_type {};
}  // namespace nholo
