// Tests of kernels/dual.hpp: forward-mode AD. First derivatives of every
// operator and math function against hand-written derivatives (to 1e-14
// relative) and fourth-order central finite differences; second derivatives
// from nested duals against hand-derived Hessians; constants, value_of and
// comparisons.
//
// Math calls are written nholo::sin(x) so that the double overloads of
// config.hpp, not <cmath>'s, are the ones compared; references use std::.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <type_traits>

#include "kernels/dual.hpp"
#include "kernels/jet2.hpp"

using namespace nholo;

namespace {

constexpr int K = 3;
using D = Dual<double, K>;

// Worst errors seen, printed when the binary ends (WorstErrorsReport, for the record).
struct Worst {
  double first = 0, fd = 0, second = 0, hessian = 0, hessian_fd = 0;
};
Worst g_worst;
void keep_max(double& w, double v) { w = v > w ? v : w; }

D make(double v, const std::array<double, K>& t) {
  D r(v);
  for (int k = 0; k < K; ++k) r.d[k] = t[k];
  return r;
}

// |actual - expected| <= rtol * scale, scale > 0 the size of the terms
void expect_close(double actual, double expected, double rtol, double scale, const char* what,
                  double* worst = nullptr) {
  const double err = std::fabs(actual - expected) / scale;
  EXPECT_LE(err, rtol) << what << ": actual " << actual << " expected " << expected;
  if (worst) keep_max(*worst, err);
}

// ---- arithmetic, first order

TEST(Dual, ConstructorsAndVariables) {
  const D a(3);  // int
  const D b(2.5f);
  const D c = D::variable(1.25, 1);
  EXPECT_EQ(a.v, 3.0);
  EXPECT_EQ(b.v, 2.5);
  EXPECT_EQ(c.v, 1.25);
  for (int k = 0; k < K; ++k) {
    EXPECT_EQ(a.d[k], 0.0);
    EXPECT_EQ(b.d[k], 0.0);
    EXPECT_EQ(c.d[k], k == 1 ? 1.0 : 0.0);
  }
  using D2 = Dual<Dual<double, 2>, 2>;
  const D2 n(7);
  EXPECT_EQ(n.v.v, 7.0);
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(n.v.d[k], 0.0);
    EXPECT_EQ(n.d[k].v, 0.0);
    EXPECT_EQ(n.d[k].d[0], 0.0);
    EXPECT_EQ(n.d[k].d[1], 0.0);
  }
  const D2 m(Dual<double, 2>::variable(0.5, 1));  // from the inner type
  EXPECT_EQ(m.v.d[1], 1.0);
  EXPECT_EQ(m.d[0].v, 0.0);
}

// seed() writes in place what the constructors and variable() build; the
// unused tangents and (for Jet2) every second derivative are zero, and the
// values written over are stale garbage that must not survive.
TEST(Dual, SeedInPlaceMatchesConstruction) {
  D x;
  x.v = -7.0;
  for (double& v : x.d) v = 99.0;
  seed(x, 1.25, 1, 1.0);
  const D c = D::variable(1.25, 1);
  EXPECT_EQ(x.v, c.v);
  for (int k = 0; k < K; ++k) EXPECT_EQ(x.d[k], c.d[k]) << k;
  seed(x, 2.0);
  EXPECT_EQ(x.v, 2.0);
  for (int k = 0; k < K; ++k) EXPECT_EQ(x.d[k], 0.0) << k;
  seed(x, 3.0, 0, 0.5, K - 1, -4.0);  // two directions with weights
  EXPECT_EQ(x.d[0], 0.5);
  EXPECT_EQ(x.d[K - 1], -4.0);
  for (int k = 1; k < K - 1; ++k) EXPECT_EQ(x.d[k], 0.0) << k;

  using J = Jet2<double, 7, 3, 1>;
  J j;
  j.v = 5.0;
  for (double& v : j.g) v = 99.0;
  for (double& v : j.h) v = 99.0;
  seed(j, 0.75, 4, 0.3, 6, 1.0);
  EXPECT_EQ(j.v, 0.75);
  for (int k = 0; k < 7; ++k) EXPECT_EQ(j.g[k], k == 4 ? 0.3 : k == 6 ? 1.0 : 0.0) << k;
  for (int e = 0; e < J::H; ++e) EXPECT_EQ(j.h[e], 0.0) << e;
  // the same as the constant constructor plus the tangents set afterwards
  J r(0.75);
  r.g[4] = 0.3;
  r.g[6] = 1.0;
  EXPECT_EQ(std::memcmp(&r, &j, sizeof(J)), 0);
}

TEST(Dual, ArithmeticFirstOrder) {
  std::mt19937_64 rng(101);
  std::uniform_real_distribution<double> u(-3.0, 3.0);
  for (int trial = 0; trial < 500; ++trial) {
    double av = u(rng), bv = u(rng);
    if (std::fabs(bv) < 0.1) bv += 0.5;
    if (std::fabs(av) < 0.1) av -= 0.5;
    const std::array<double, K> ta{{u(rng), u(rng), u(rng)}}, tb{{u(rng), u(rng), u(rng)}};
    const D a = make(av, ta), b = make(bv, tb);
    const double s = u(rng) + 4.0;  // != 0
    const int n = 3;
    const float f = 0.25f;
    for (int k = 0; k < K; ++k) {
      const double ak = ta[k], bk = tb[k];
      const double tt = std::fabs(ak * bv) + std::fabs(av * bk);
      // dual with dual
      EXPECT_EQ((a + b).d[k], ak + bk);
      EXPECT_EQ((a - b).d[k], ak - bk);
      EXPECT_EQ((-a).d[k], -ak);
      expect_close((a * b).d[k], ak * bv + av * bk, 1e-15, tt, "a*b", &g_worst.first);
      expect_close((a / b).d[k], (ak * bv - av * bk) / (bv * bv), 1e-14, tt / (bv * bv), "a/b",
                   &g_worst.first);
      // dual with the inner type (double)
      EXPECT_EQ((a + s).d[k], ak);
      EXPECT_EQ((s + a).d[k], ak);
      EXPECT_EQ((a - s).d[k], ak);
      EXPECT_EQ((s - a).d[k], -ak);
      EXPECT_EQ((a * s).d[k], ak * s);
      EXPECT_EQ((s * a).d[k], ak * s);
      expect_close((a / s).d[k], ak / s, 1e-15, std::fabs(ak / s) + 1e-300, "a/s");
      expect_close((s / b).d[k], -s * bk / (bv * bv), 1e-14, std::fabs(s * bk / (bv * bv)) + 1e-300,
                   "s/b", &g_worst.first);
      // dual with int and float constants
      EXPECT_EQ((a + n).d[k], ak);
      EXPECT_EQ((n + a).d[k], ak);
      EXPECT_EQ((a - n).d[k], ak);
      EXPECT_EQ((n - a).d[k], -ak);
      EXPECT_EQ((a * n).d[k], 3.0 * ak);
      EXPECT_EQ((n * a).d[k], 3.0 * ak);
      expect_close((a / n).d[k], ak / 3.0, 1e-15, std::fabs(ak / 3.0) + 1e-300, "a/n");
      expect_close((n / b).d[k], -3.0 * bk / (bv * bv), 1e-14, std::fabs(3.0 * bk / (bv * bv)) + 1e-300,
                   "n/b");
      EXPECT_EQ((f * a).d[k], 0.25 * ak);
      EXPECT_EQ((a * f).d[k], 0.25 * ak);
    }
    // values
    EXPECT_EQ((a + b).v, av + bv);
    EXPECT_EQ((a - b).v, av - bv);
    EXPECT_EQ((a * b).v, av * bv);
    EXPECT_DOUBLE_EQ((a / b).v, av / bv);
    EXPECT_EQ((a + n).v, av + 3.0);
    EXPECT_EQ((n - a).v, 3.0 - av);
    EXPECT_DOUBLE_EQ((n / b).v, 3.0 / bv);
    EXPECT_DOUBLE_EQ((s / b).v, s / bv);
    EXPECT_EQ((-a).v, -av);
    // compound assignment: c = ((a + b - 2) * b) / a
    D c = a;
    c += b;
    c -= 2;
    c *= b;
    c /= a;
    const double cv = (av + bv - 2.0) * bv / av;
    EXPECT_NEAR(c.v, cv, 1e-14 * (1.0 + std::fabs(cv)));
    for (int k = 0; k < K; ++k) {
      // d/dt [(a + b - 2) b / a]
      const double num = ((ta[k] + tb[k]) * bv + (av + bv - 2.0) * tb[k]) * av - (av + bv - 2.0) * bv * ta[k];
      const double scale = (std::fabs(ta[k]) + std::fabs(tb[k])) * (std::fabs(av) + std::fabs(bv) + 2.0) *
                           (std::fabs(av) + std::fabs(bv)) / (av * av);
      expect_close(c.d[k], num / (av * av), 1e-14, scale + 1e-300, "compound", &g_worst.first);
    }
  }
  static_assert(std::is_same<decltype(D(1.0) * 2), D>::value, "D * int is a D");
  static_assert(std::is_same<decltype(2.0 / D(1.0)), D>::value, "double / D is a D");
  static_assert(std::is_same<decltype(1.5f - D(1.0)), D>::value, "float - D is a D");
}

// Nested duals mixed with the inner type, double and int give the same result
// as promoting the scalar to a nested dual first.
TEST(Dual, NestedMixedOperandsMatchPromotion) {
  using I = Dual<double, 2>;
  using N = Dual<I, 2>;
  std::mt19937_64 rng(102);
  std::uniform_real_distribution<double> u(0.5, 2.0);
  // all 9 components agree to 1e-15 relative to the largest of them
  auto flat_close = [](const N& p, const N& q, const char* what) {
    double a[9], b[9], scale = 1.0;
    a[0] = p.v.v;
    b[0] = q.v.v;
    for (int i = 0; i < 2; ++i) {
      a[1 + i] = p.v.d[i];
      b[1 + i] = q.v.d[i];
      a[3 + i] = p.d[i].v;
      b[3 + i] = q.d[i].v;
      for (int j = 0; j < 2; ++j) {
        a[5 + 2 * i + j] = p.d[i].d[j];
        b[5 + 2 * i + j] = q.d[i].d[j];
      }
    }
    for (int i = 0; i < 9; ++i) scale = std::fmax(scale, std::fmax(std::fabs(a[i]), std::fabs(b[i])));
    for (int i = 0; i < 9; ++i) EXPECT_NEAR(a[i], b[i], 1e-15 * scale) << what << " component " << i;
  };
  for (int trial = 0; trial < 200; ++trial) {
    N x;
    x.v = I(u(rng));
    x.v.d[0] = u(rng);
    x.v.d[1] = u(rng);
    for (int i = 0; i < 2; ++i) {
      x.d[i] = I(u(rng));
      x.d[i].d[0] = u(rng);
      x.d[i].d[1] = u(rng);
    }
    I t(u(rng));  // an inner-type operand with its own tangents
    t.d[0] = u(rng);
    t.d[1] = u(rng);
    const double s = u(rng);
    const int n = 5;
    flat_close(x + t, x + N(t), "x+t");
    flat_close(t - x, N(t) - x, "t-x");
    flat_close(x * t, x * N(t), "x*t");
    flat_close(t * x, N(t) * x, "t*x");
    flat_close(x / t, x / N(t), "x/t");
    flat_close(t / x, N(t) / x, "t/x");
    flat_close(x + s, x + N(s), "x+s");
    flat_close(s - x, N(s) - x, "s-x");
    flat_close(x - s, x - N(s), "x-s");
    flat_close(s * x, N(s) * x, "s*x");
    flat_close(x / s, x / N(s), "x/s");
    flat_close(s / x, N(s) / x, "s/x");
    flat_close(x * n, x * N(n), "x*n");
    flat_close(n / x, N(n) / x, "n/x");
    flat_close(n + x, N(n) + x, "n+x");
    flat_close(x - n, x - N(n), "x-n");
    flat_close(0.5f * x, N(0.5) * x, "f*x");
  }
  static_assert(std::is_same<decltype(2 * N(1.0)), N>::value, "int * N is an N");
  static_assert(std::is_same<decltype(N(1.0) / I(2.0)), N>::value, "N / inner is an N");
}

// ---- math functions: f, f', f'' by hand

struct Unary {
  const char* name;
  double lo, hi;
};

// Checks f on D (first derivatives, all tangents), against hand-written f'
// and a fourth-order central difference of f on doubles, and on a nested
// dual against the hand-written f''.
template <class F, class DF, class D2F>
void check_unary(const Unary& info, F f, DF df, D2F d2f, unsigned long long seed) {
  SCOPED_TRACE(info.name);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> ux(info.lo, info.hi), ut(-2.0, 2.0);
  using I = Dual<double, 1>;
  using N = Dual<I, 1>;
  for (int trial = 0; trial < 300; ++trial) {
    const double x = ux(rng);
    const std::array<double, K> t{{ut(rng), ut(rng), 0.0}};
    const D y = f(make(x, t));
    const double fx = f(x), dfx = df(x), d2fx = d2f(x);
    EXPECT_EQ(y.v, fx) << "x = " << x;
    for (int k = 0; k < K; ++k)
      expect_close(y.d[k], dfx * t[k], 1e-14, std::fabs(dfx * t[k]) + 1e-300, "f'", &g_worst.first);
    // 4th-order central difference, h ~ 2e-4 |x|: truncation h^4 f^(5) / 30,
    // rounding ~ eps |f| / h
    const double h = 2e-4 * (std::fabs(x) > 1.0 ? std::fabs(x) : 1.0);
    if (x - 2 * h >= info.lo && x + 2 * h <= info.hi) {
      const double fd = (f(x - 2 * h) - 8.0 * f(x - h) + 8.0 * f(x + h) - f(x + 2 * h)) / (12.0 * h);
      expect_close(y.d[0], fd * t[0], 1e-8, std::fabs(t[0]) * (std::fabs(dfx) + std::fabs(fx) + 1.0),
                   "finite difference", &g_worst.fd);
    }
    // second derivative: x = x + eps_outer + eps_inner
    N X;
    X.v = I::variable(x, 0);
    X.d[0] = I(1.0);
    const N Y = f(X);
    EXPECT_EQ(Y.v.v, fx);
    expect_close(Y.v.d[0], dfx, 1e-14, std::fabs(dfx) + 1e-300, "f' (inner)");
    expect_close(Y.d[0].v, dfx, 1e-14, std::fabs(dfx) + 1e-300, "f' (outer)");
    expect_close(Y.d[0].d[0], d2fx, 1e-13, std::fabs(d2fx) + 1e-300, "f''", &g_worst.second);
    if (::testing::Test::HasFailure()) return;
  }
}

// Reference formulas deliberately differ from dual.hpp's where they can
// (1/cos^2 for tan', 1/sqrt((1-x)(1+x)) for asin', ...).
TEST(Dual, MathFunctions) {
  check_unary({"sin", -4.0, 4.0}, [](auto x) { return nholo::sin(x); },
              [](double x) { return std::cos(x); }, [](double x) { return -std::sin(x); }, 1);
  check_unary({"cos", -4.0, 4.0}, [](auto x) { return nholo::cos(x); },
              [](double x) { return -std::sin(x); }, [](double x) { return -std::cos(x); }, 2);
  check_unary({"tan", -1.3, 1.3}, [](auto x) { return nholo::tan(x); },
              [](double x) { return 1.0 / (std::cos(x) * std::cos(x)); },
              [](double x) { return 2.0 * std::sin(x) / std::pow(std::cos(x), 3); }, 3);
  check_unary({"sqrt", 0.1, 10.0}, [](auto x) { return nholo::sqrt(x); },
              [](double x) { return 0.5 / std::sqrt(x); },
              [](double x) { return -0.25 / (x * std::sqrt(x)); }, 4);
  check_unary({"exp", -5.0, 5.0}, [](auto x) { return nholo::exp(x); },
              [](double x) { return std::exp(x); }, [](double x) { return std::exp(x); }, 5);
  check_unary({"log", 0.1, 100.0}, [](auto x) { return nholo::log(x); },
              [](double x) { return 1.0 / x; }, [](double x) { return -1.0 / (x * x); }, 6);
  check_unary({"atan", -10.0, 10.0}, [](auto x) { return nholo::atan(x); },
              [](double x) { return 1.0 / (1.0 + x * x); },
              [](double x) { return -2.0 * x / ((1.0 + x * x) * (1.0 + x * x)); }, 7);
  check_unary({"asin", -0.95, 0.95}, [](auto x) { return nholo::asin(x); },
              [](double x) { return 1.0 / std::sqrt((1.0 - x) * (1.0 + x)); },
              [](double x) { return x / std::pow((1.0 - x) * (1.0 + x), 1.5); }, 8);
  check_unary({"acos", -0.95, 0.95}, [](auto x) { return nholo::acos(x); },
              [](double x) { return -1.0 / std::sqrt((1.0 - x) * (1.0 + x)); },
              [](double x) { return -x / std::pow((1.0 - x) * (1.0 + x), 1.5); }, 9);
  check_unary({"sinh", -3.0, 3.0}, [](auto x) { return nholo::sinh(x); },
              [](double x) { return std::cosh(x); }, [](double x) { return std::sinh(x); }, 10);
  check_unary({"cosh", -3.0, 3.0}, [](auto x) { return nholo::cosh(x); },
              [](double x) { return std::sinh(x); }, [](double x) { return std::cosh(x); }, 11);
  // |x| <= 2: dual.hpp's tanh' = 1 - tanh^2 loses relative accuracy as
  // e^(2|x|) eps / 4 (see TanhDerivativeAbsoluteAccuracy)
  check_unary({"tanh", -2.0, 2.0}, [](auto x) { return nholo::tanh(x); },
              [](double x) { return 1.0 / (std::cosh(x) * std::cosh(x)); },
              [](double x) { return -2.0 * std::sinh(x) / std::pow(std::cosh(x), 3); }, 12);
  check_unary({"fabs+", 0.01, 5.0}, [](auto x) { return nholo::fabs(x); }, [](double) { return 1.0; },
              [](double) { return 0.0; }, 13);
  check_unary({"fabs-", -5.0, -0.01}, [](auto x) { return nholo::fabs(x); },
              [](double) { return -1.0; }, [](double) { return 0.0; }, 14);
  // pow with constant exponents, positive base
  for (double p : {2.5, -1.5, 0.5, 1.0 / 3.0, 3.0, 1.0, -2.0}) {
    char name[32];
    std::snprintf(name, sizeof name, "pow p=%g", p);
    check_unary({name, 0.1, 5.0}, [p](auto x) { return nholo::pow(x, p); },
                [p](double x) { return p * std::pow(x, p - 1.0); },
                [p](double x) { return p * (p - 1.0) * std::pow(x, p - 2.0); }, 15);
  }
  // integer exponents on a negative base
  for (double p : {2.0, 3.0}) {
    check_unary({"pow, negative base", -5.0, -0.1}, [p](auto x) { return nholo::pow(x, p); },
                [p](double x) { return p * std::pow(x, p - 1.0); },
                [p](double x) { return p * (p - 1.0) * std::pow(x, p - 2.0); }, 16);
  }
}

TEST(Dual, FabsAtZeroHasZeroDerivative) {
  const D z = D::variable(0.0, 0);
  const D r = nholo::fabs(z);
  EXPECT_EQ(r.v, 0.0);
  for (int k = 0; k < K; ++k) EXPECT_EQ(r.d[k], 0.0);
  EXPECT_EQ(sgn(z), 0.0);
  EXPECT_EQ(sgn(D(-2.0)), -1.0);
  EXPECT_EQ(sgn(D(0.5)), 1.0);
}

// Regression (fixed in dual.hpp): pow(x, 0) had derivative 0 * x^-1 = NaN at
// x = 0, and so pow(x, 1) had a NaN second derivative there.
TEST(Dual, PowAtZeroBase) {
  const D z = D::variable(0.0, 0);
  const D p0 = nholo::pow(z, 0.0);
  EXPECT_EQ(p0.v, 1.0);
  for (int k = 0; k < K; ++k) EXPECT_EQ(p0.d[k], 0.0);
  const D p1 = nholo::pow(z, 1.0);
  EXPECT_EQ(p1.v, 0.0);
  EXPECT_EQ(p1.d[0], 1.0);
  const D p2 = nholo::pow(z, 2.0);
  EXPECT_EQ(p2.d[0], 0.0);
  using I = Dual<double, 1>;
  using N = Dual<I, 1>;
  N X;
  X.v = I::variable(0.0, 0);
  X.d[0] = I(1.0);
  for (int p = 0; p <= 3; ++p) {  // at x = 0: x^p = [p == 0], (x^p)' = [p == 1], (x^p)'' = 2 [p == 2]
    const N Y = nholo::pow(X, static_cast<double>(p));
    SCOPED_TRACE(p);
    EXPECT_EQ(Y.v.v, p == 0 ? 1.0 : 0.0);
    EXPECT_EQ(Y.d[0].v, p == 1 ? 1.0 : 0.0);
    EXPECT_EQ(Y.v.d[0], p == 1 ? 1.0 : 0.0);
    EXPECT_EQ(Y.d[0].d[0], p == 2 ? 2.0 : 0.0);
  }
}

// tanh' = 1 - tanh^2: accurate in absolute terms (the derivative is < 1) for
// any x; relative accuracy degrades for large |x|.
TEST(Dual, TanhDerivativeAbsoluteAccuracy) {
  for (double x = -25.0; x <= 25.0; x += 0.37) {
    const D y = nholo::tanh(D::variable(x, 0));
    const double c = std::cosh(x);
    EXPECT_NEAR(y.d[0], 1.0 / (c * c), 4e-16) << "x = " << x;
  }
}

// atan2(y, x) in all four quadrants: gradient (-y, x) / r^2, Hessian
//   f_xx = 2xy / r^4, f_yy = -2xy / r^4, f_xy = (y^2 - x^2) / r^4
TEST(Dual, Atan2) {
  std::mt19937_64 rng(103);
  std::uniform_real_distribution<double> u(-3.0, 3.0);
  using I = Dual<double, 2>;
  using N = Dual<I, 2>;
  for (int trial = 0; trial < 500; ++trial) {
    const double x = u(rng), y = u(rng);
    const double r2 = x * x + y * y;
    if (r2 < 0.01) continue;
    const std::array<double, K> tx{{1.0, 0.0, u(rng)}}, ty{{0.0, 1.0, u(rng)}};
    const D a = nholo::atan2(make(y, ty), make(x, tx));
    EXPECT_EQ(a.v, std::atan2(y, x));
    for (int k = 0; k < K; ++k) {
      const double expect = (x * ty[k] - y * tx[k]) / r2;
      expect_close(a.d[k], expect, 1e-14, (std::fabs(x * ty[k]) + std::fabs(y * tx[k])) / r2, "atan2'",
                   &g_worst.first);
    }
    // finite difference in x (away from the branch cut at x < 0, y = 0)
    if (!(x < 0 && std::fabs(y) < 0.1)) {
      const double h = 1e-3;
      auto g = [y](double xx) { return std::atan2(y, xx); };
      const double fd = (g(x - 2 * h) - 8.0 * g(x - h) + 8.0 * g(x + h) - g(x + 2 * h)) / (12.0 * h);
      expect_close(a.d[0], fd, 1e-7, 1.0 / std::sqrt(r2), "atan2 finite difference", &g_worst.fd);
    }
    // Hessian from nested duals: variables (x, y)
    N X, Y;
    X.v = I::variable(x, 0);
    Y.v = I::variable(y, 1);
    for (int k = 0; k < 2; ++k) {
      X.d[k] = I(k == 0 ? 1.0 : 0.0);
      Y.d[k] = I(k == 1 ? 1.0 : 0.0);
    }
    const N F = nholo::atan2(Y, X);
    const double r4 = r2 * r2;
    const double H[2][2] = {{2 * x * y / r4, (y * y - x * x) / r4}, {(y * y - x * x) / r4, -2 * x * y / r4}};
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j)
        expect_close(F.d[i].d[j], H[i][j], 1e-13, (x * x + y * y) / r4, "atan2''", &g_worst.second);
  }
}

// ---- second derivatives of functions of several variables

// Seeds nested duals for the Hessian of f(x_0..x_{n-1}): inner tangent p and
// outer tangent k of x_i are delta_ip, delta_ik; then
//   f.v.v = f,  f.d[k].v = f.v.d[k] = df/dx_k,  f.d[k].d[p] = d2f/dx_k dx_p
template <int Nv>
using Hd = Dual<Dual<double, Nv>, Nv>;

template <int Nv>
std::array<Hd<Nv>, Nv> seed_hessian(const std::array<double, Nv>& x) {
  using I = Dual<double, Nv>;
  std::array<Hd<Nv>, Nv> X;
  for (int i = 0; i < Nv; ++i) {
    X[i].v = I::variable(x[i], i);
    for (int k = 0; k < Nv; ++k) X[i].d[k] = I(k == i ? 1.0 : 0.0);
  }
  return X;
}

// Compares value, gradient (both copies) and Hessian of f at x with the hand
// results, and the Hessian with central differences of the first-order AD
// gradient.
template <int Nv, class F>
void check_hessian(const char* name, F f, const std::array<double, Nv>& x, double fv,
                   const std::array<double, Nv>& grad, const std::array<std::array<double, Nv>, Nv>& hess) {
  SCOPED_TRACE(name);
  const Hd<Nv> y = f(seed_hessian<Nv>(x));
  double scale = 1.0;
  for (int i = 0; i < Nv; ++i)
    for (int j = 0; j < Nv; ++j) scale = std::fmax(scale, std::fabs(hess[i][j]));
  EXPECT_NEAR(y.v.v, fv, 1e-14 * (1.0 + std::fabs(fv)));
  for (int k = 0; k < Nv; ++k) {
    EXPECT_NEAR(y.d[k].v, grad[k], 1e-14 * (1.0 + std::fabs(grad[k])));
    EXPECT_NEAR(y.v.d[k], grad[k], 1e-14 * (1.0 + std::fabs(grad[k])));
    for (int p = 0; p < Nv; ++p) {
      expect_close(y.d[k].d[p], hess[k][p], 1e-13, scale, "hessian", &g_worst.hessian);
      EXPECT_EQ(y.d[k].d[p], y.d[k].d[p]) << "NaN";
    }
  }
  // d/dx_p of the first-order gradient, 4th-order central differences
  using G = Dual<double, Nv>;
  auto gradient = [&f](std::array<double, Nv> xx) {
    std::array<G, Nv> X;
    for (int i = 0; i < Nv; ++i) X[i] = G::variable(xx[i], i);
    return f(X);
  };
  for (int p = 0; p < Nv; ++p) {
    const double h = 1e-3;
    std::array<double, Nv> xm2 = x, xm1 = x, xp1 = x, xp2 = x;
    xm2[p] -= 2 * h;
    xm1[p] -= h;
    xp1[p] += h;
    xp2[p] += 2 * h;
    const G gm2 = gradient(xm2), gm1 = gradient(xm1), gp1 = gradient(xp1), gp2 = gradient(xp2);
    for (int k = 0; k < Nv; ++k) {
      const double fd = (gm2.d[k] - 8.0 * gm1.d[k] + 8.0 * gp1.d[k] - gp2.d[k]) / (12.0 * h);
      expect_close(fd, y.d[k].d[p], 1e-8, scale, "hessian finite difference", &g_worst.hessian_fd);
    }
  }
}

TEST(Dual, NestedHessians) {
  std::mt19937_64 rng(104);
  std::uniform_real_distribution<double> u(-2.0, 2.0), pos(0.2, 3.0);
  using std::cos;
  using std::exp;
  using std::log;
  using std::sin;
  for (int trial = 0; trial < 100; ++trial) {
    // f1 = sin(x) e^y + x^2 y
    {
      const double x = u(rng), y = u(rng);
      check_hessian<2>(
          "sin(x) exp(y) + x^2 y",
          [](const auto& v) { return nholo::sin(v[0]) * nholo::exp(v[1]) + v[0] * v[0] * v[1]; }, {{x, y}},
          sin(x) * exp(y) + x * x * y, {{cos(x) * exp(y) + 2 * x * y, sin(x) * exp(y) + x * x}},
          {{{{-sin(x) * exp(y) + 2 * y, cos(x) * exp(y) + 2 * x}}, {{cos(x) * exp(y) + 2 * x, sin(x) * exp(y)}}}});
    }
    // f2 = x y z + log(x) y^2 - z / y
    {
      const double x = pos(rng), y = pos(rng), z = u(rng);
      check_hessian<3>(
          "x y z + log(x) y^2 - z / y",
          [](const auto& v) { return v[0] * v[1] * v[2] + nholo::log(v[0]) * v[1] * v[1] - v[2] / v[1]; },
          {{x, y, z}}, x * y * z + log(x) * y * y - z / y,
          {{y * z + y * y / x, x * z + 2 * y * log(x) + z / (y * y), x * y - 1 / y}},
          {{{{-y * y / (x * x), z + 2 * y / x, y}},
            {{z + 2 * y / x, 2 * log(x) - 2 * z / (y * y * y), x + 1 / (y * y)}},
            {{y, x + 1 / (y * y), 0.0}}}});
    }
    // f3 = r = sqrt(x^2 + y^2)
    {
      const double x = u(rng), y = u(rng) + 2.5;
      const double r = std::sqrt(x * x + y * y), r3 = r * r * r;
      check_hessian<2>(
          "sqrt(x^2 + y^2)", [](const auto& v) { return nholo::sqrt(v[0] * v[0] + v[1] * v[1]); }, {{x, y}}, r,
          {{x / r, y / r}}, {{{{y * y / r3, -x * y / r3}}, {{-x * y / r3, x * x / r3}}}});
    }
    // f4 = x^2.5 / (1 + y^2), with int and double constants
    {
      const double x = pos(rng), y = u(rng);
      const double q = 1 + y * y;
      check_hessian<2>(
          "x^2.5 / (1 + y^2)", [](const auto& v) { return nholo::pow(v[0], 2.5) / (1 + v[1] * v[1]); },
          {{x, y}}, std::pow(x, 2.5) / q, {{2.5 * std::pow(x, 1.5) / q, -2 * y * std::pow(x, 2.5) / (q * q)}},
          {{{{3.75 * std::sqrt(x) / q, -5 * y * std::pow(x, 1.5) / (q * q)}},
            {{-5 * y * std::pow(x, 1.5) / (q * q), std::pow(x, 2.5) * (6 * y * y - 2) / (q * q * q)}}}});
    }
    // f5: cart-pendulum Lagrangian in (x, th, xd, thd)
    //   L = (M + m) xd^2 / 2 + m l xd thd cos(th) + m l^2 thd^2 / 2 + m g l cos(th)
    // d2L/dqd2 is the mass matrix [[M + m, m l cos], [m l cos, m l^2]].
    {
      const double M = 1.7, m = 0.4, l = 0.8, g = 9.81;
      const double th = u(rng), xd = u(rng), thd = u(rng);
      const double c = cos(th), s = sin(th);
      check_hessian<4>(
          "cart-pendulum Lagrangian",
          [=](const auto& v) {
            return (M + m) * v[2] * v[2] / 2 + m * l * v[2] * v[3] * nholo::cos(v[1]) +
                   0.5 * m * l * l * v[3] * v[3] + m * g * l * nholo::cos(v[1]);
          },
          {{u(rng), th, xd, thd}}, (M + m) * xd * xd / 2 + m * l * xd * thd * c + 0.5 * m * l * l * thd * thd + m * g * l * c,
          {{0.0, -m * l * xd * thd * s - m * g * l * s, (M + m) * xd + m * l * thd * c, m * l * xd * c + m * l * l * thd}},
          {{{{0.0, 0.0, 0.0, 0.0}},
            {{0.0, -m * l * xd * thd * c - m * g * l * c, -m * l * thd * s, -m * l * xd * s}},
            {{0.0, -m * l * thd * s, M + m, m * l * c}},
            {{0.0, -m * l * xd * s, m * l * c, m * l * l}}}});
    }
    // f6 = tanh(x y) - |x - 2y| + atan(x) cosh(y) / 2: products of functions
    {
      const double x = u(rng), y = u(rng);
      const double w = x * y, t = std::tanh(w), s1 = 1 - t * t;  // sech^2(w)
      const double sg = (x - 2 * y) > 0 ? 1.0 : -1.0;
      const double a = std::atan(x), ch = std::cosh(y), sh = std::sinh(y), q = 1 + x * x;
      if (std::fabs(x - 2 * y) < 0.05) continue;  // keep |.| smooth for the differences
      check_hessian<2>(
          "tanh(x y) - |x - 2y| + atan(x) cosh(y) / 2",
          [](const auto& v) {
            return nholo::tanh(v[0] * v[1]) - nholo::fabs(v[0] - 2 * v[1]) + nholo::atan(v[0]) * nholo::cosh(v[1]) / 2;
          },
          {{x, y}}, t - std::fabs(x - 2 * y) + a * ch / 2,
          {{y * s1 - sg + ch / (2 * q), x * s1 + 2 * sg + a * sh / 2}},
          {{{{-2 * y * y * t * s1 - x * ch / (q * q), s1 - 2 * w * t * s1 + sh / (2 * q)}},
            {{s1 - 2 * w * t * s1 + sh / (2 * q), -2 * x * x * t * s1 + a * ch / 2}}}});
    }
    if (::testing::Test::HasFailure()) return;
  }
}

// ---- value_of and comparisons

TEST(Dual, ValueOf) {
  EXPECT_EQ(value_of(2.5), 2.5);
  EXPECT_EQ(value_of(1.5f), 1.5f);
  const D a = make(-1.25, {{3.0, 4.0, 5.0}});
  EXPECT_EQ(value_of(a), -1.25);
  using N = Dual<Dual<double, 2>, 3>;
  N n(Dual<double, 2>::variable(0.75, 1));
  n.d[2] = Dual<double, 2>(9.0);
  EXPECT_EQ(value_of(n), 0.75);
  static_assert(std::is_same<decltype(value_of(n)), double>::value, "value_of is the innermost value");
  static_assert(std::is_same<decltype(value_of(a)), double>::value, "value_of is the innermost value");
  static_assert(is_dual<D>::value && is_dual<N>::value && !is_dual<double>::value, "is_dual");
}

TEST(Dual, ComparisonsUseValuesOnly) {
  const D a = make(1.0, {{5.0, -1.0, 0.0}});
  const D b = make(1.0, {{-7.0, 2.0, 3.0}});  // same value, other tangents
  const D c = make(2.0, {{0.0, 0.0, 0.0}});
  EXPECT_TRUE(a == b);
  EXPECT_FALSE(a != b);
  EXPECT_TRUE(a <= b);
  EXPECT_TRUE(a >= b);
  EXPECT_FALSE(a < b);
  EXPECT_FALSE(a > b);
  EXPECT_TRUE(a < c);
  EXPECT_TRUE(c > a);
  EXPECT_TRUE(a <= c);
  EXPECT_FALSE(a >= c);
  EXPECT_TRUE(a != c);
  // with constants (promoted to duals)
  EXPECT_TRUE(a < 1.5);
  EXPECT_TRUE(a > 0);
  EXPECT_TRUE(a == 1);
  EXPECT_TRUE(2 > a);
  EXPECT_TRUE(0.5f < a);
  // max_of / min_of keep the tangents of the chosen argument
  EXPECT_EQ(max_of(a, c).v, 2.0);
  EXPECT_EQ(min_of(a, c).d[0], 5.0);
  // nested
  using N = Dual<Dual<double, 1>, 1>;
  N x(Dual<double, 1>::variable(0.5, 0)), y(0.75);
  x.d[0] = Dual<double, 1>(3.0);
  EXPECT_TRUE(x < y);
  EXPECT_TRUE(y > x);
  EXPECT_TRUE(x < 1);
  EXPECT_TRUE(x == 0.5);
  EXPECT_FALSE(x != 0.5);
  EXPECT_TRUE(x >= N(0.5));
}

// Regression (fixed in dual.hpp): Dual<float,K> with an int constant was an
// ambiguous overload (float and double versions), and pow was ambiguous
// between pow(float, float) and pow(double, double).
TEST(Dual, FloatInstantiation) {
  using Fd = Dual<float, 2>;
  using Dd = Dual<double, 2>;
  auto expr = [](const auto& x, const auto& y) {
    return 2 * x * y + x / 2 - 1 + nholo::pow(x, 2.5) + 3.0 * nholo::sin(y) + nholo::atan2(y, x) +
           nholo::sqrt(x) / y - 0.5f * nholo::exp(y);
  };
  const Fd rf = expr(Fd::variable(0.7f, 0), Fd::variable(1.3f, 1));
  const Dd rd = expr(Dd::variable(0.7f, 0), Dd::variable(1.3f, 1));
  EXPECT_NEAR(rf.v, rd.v, 1e-5 * std::fabs(rd.v));
  EXPECT_NEAR(rf.d[0], rd.d[0], 1e-5 * std::fabs(rd.d[0]));
  EXPECT_NEAR(rf.d[1], rd.d[1], 1e-5 * std::fabs(rd.d[1]));
  // nested float: (x^3)'' = 6 x
  using Nf = Dual<Dual<float, 1>, 1>;
  Nf X;
  X.v = Dual<float, 1>::variable(1.5f, 0);
  X.d[0] = Dual<float, 1>(1.0f);
  const Nf Y = nholo::pow(X, 3.0) + 2 * X;
  EXPECT_NEAR(Y.d[0].d[0], 9.0f, 1e-5f);
  EXPECT_NEAR(Y.d[0].v, 3 * 1.5f * 1.5f + 2, 1e-5f);
}

// The worst errors seen, printed for the record when the whole binary runs
// (under ctest each test runs alone, and there is nothing to print). Not a
// test: each error is bounded where it is measured (expect_close).
class WorstErrorsReport : public ::testing::Environment {
 public:
  void TearDown() override {
    if (g_worst.first == 0 && g_worst.fd == 0 && g_worst.second == 0 && g_worst.hessian == 0 &&
        g_worst.hessian_fd == 0)
      return;
    std::printf("first derivatives vs hand (relative): %.3g\n", g_worst.first);
    std::printf("first derivatives vs 4th-order finite differences: %.3g\n", g_worst.fd);
    std::printf("second derivatives of unary functions (relative): %.3g\n", g_worst.second);
    std::printf("Hessians vs hand (relative to max |H|): %.3g; vs finite differences %.3g\n",
                g_worst.hessian, g_worst.hessian_fd);
  }
};
::testing::Environment* const g_worst_report =
    ::testing::AddGlobalTestEnvironment(new WorstErrorsReport);

}  // namespace
