// Tests of kernels/lanes.hpp (W doubles per operation: masks, selects, the
// math functions at every width and instruction set) and of
// kernels/integrate_lanes.hpp (W trajectories advanced together, each lane
// taking the scalar integrator's steps).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/integrate.hpp"
#include "kernels/integrate_lanes.hpp"
#include "kernels/lanes.hpp"
#include "tests/model_defaults.hpp"

namespace nholo_test {
void lane_math_probe_baseline(int width, const double* x, const double* y, int n, double* out);
void lane_math_probe_avx2(int width, const double* x, const double* y, int n, double* out);
void lane_math_probe_avx512(int width, const double* x, const double* y, int n, double* out);
}  // namespace nholo_test

using namespace nholo;

namespace {

using nholo_test::bits;

// distance in units in the last place between two finite doubles of one sign
int64_t ulp_distance(double a, double b) {
  return std::llabs(static_cast<long long>(bits(a)) - static_cast<long long>(bits(b)));
}

TEST(Lanes, ArithmeticMasksAndSelectsActPerLane) {
  Lanes<4> a, b;
  const double av[4] = {1.0, -2.0, 3.0, -0.0};
  const double bv[4] = {0.5, -3.0, 4.0, 0.0};
  for (int i = 0; i < 4; ++i) {
    a.set(i, av[i]);
    b.set(i, bv[i]);
  }
  const Lanes<4> s = a * b + 2.0 - a / b;
  const LaneMask<4> gt = a > b;
  const Lanes<4> mx = max_of(a, b), mn = min_of(a, b), sel = select(gt, a, b), ab = fabs(a);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(bits(s[i]), bits(av[i] * bv[i] + 2.0 - av[i] / bv[i])) << i;
    EXPECT_EQ(gt[i], av[i] > bv[i]) << i;
    EXPECT_EQ(bits(mx[i]), bits(av[i] > bv[i] ? av[i] : bv[i])) << i;
    EXPECT_EQ(bits(mn[i]), bits(av[i] < bv[i] ? av[i] : bv[i])) << i;
    EXPECT_EQ(bits(sel[i]), bits(gt[i] ? av[i] : bv[i])) << i;
    EXPECT_EQ(bits(ab[i]), bits(std::fabs(av[i]))) << i;
  }
  EXPECT_TRUE(any(gt));
  EXPECT_FALSE(all(gt));
  EXPECT_TRUE(all(gt || !gt));
  EXPECT_FALSE(any(gt && !gt));
  Lanes<4> f(1.0);
  f.set(1, std::nan(""));
  f.set(2, -INFINITY);
  const LaneMask<4> fin = is_finite(f);
  EXPECT_TRUE(fin[0]);
  EXPECT_FALSE(fin[1]);
  EXPECT_FALSE(fin[2]);
  EXPECT_TRUE(fin[3]);
  const Lanes<4> r = sqrt(Lanes<4>(2.0));
  EXPECT_EQ(bits(r[3]), bits(std::sqrt(2.0)));
}

// the arguments of the probe: x in (0.05, 0.95) (the domain of log, asin,
// acos), y in (-2, 2)
struct ProbeTable {
  static constexpr int n = 64;
  std::vector<double> x, y;
  ProbeTable() : x(n), y(n) {
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> ux(0.05, 0.95), uy(-2.0, 2.0);
    for (int j = 0; j < n; ++j) {
      x[j] = ux(rng);
      y[j] = uy(rng);
    }
  }
  template <class Probe>
  std::vector<double> run(Probe probe, int width) const {
    std::vector<double> out(13 * n);
    probe(width, x.data(), y.data(), n, out.data());
    return out;
  }
};

void expect_same_bits(const std::vector<double>& a, const std::vector<double>& b,
                      const char* what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k)
    ASSERT_EQ(bits(a[k]), bits(b[k]))
        << what << ": function " << k / ProbeTable::n << " argument " << k % ProbeTable::n;
}

TEST(Lanes, MathGivesTheSameBitsAtEveryWidthAndInstructionSet) {
  const ProbeTable t;
  const std::vector<double> ref = t.run(nholo_test::lane_math_probe_baseline, 1);
  for (int w : {2, 4, 8})
    expect_same_bits(ref, t.run(nholo_test::lane_math_probe_baseline, w), "baseline");
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    for (int w : {1, 4, 8})
      expect_same_bits(ref, t.run(nholo_test::lane_math_probe_avx2, w), "avx2");
  } else {
    std::printf("[ note ] this CPU has no AVX2 + FMA: the AVX2 lanes are not compared\n");
  }
  if (__builtin_cpu_supports("avx512f")) {
    for (int w : {1, 4, 8})
      expect_same_bits(ref, t.run(nholo_test::lane_math_probe_avx512, w), "avx512");
  } else {
    std::printf("[ note ] this CPU has no AVX-512: the AVX-512 lanes are not compared\n");
  }
}

TEST(Lanes, MathAgreesWithTheCLibraryToTwoUlp) {
  // SLEEF's and glibc's functions are each within 1 ulp of the exact value
  const ProbeTable t;
  const std::vector<double> r = t.run(nholo_test::lane_math_probe_baseline, 8);
  const int n = ProbeTable::n;
  for (int j = 0; j < n; ++j) {
    const double x = t.x[j], y = t.y[j];
    const double want[13] = {std::sin(x),   std::cos(x),  std::tan(x),  std::exp(x),
                             std::log(x),   std::atan(x), std::asin(x), std::acos(x),
                             std::sinh(x),  std::cosh(x), std::tanh(x), std::atan2(x, y),
                             std::pow(x, y)};
    for (int f = 0; f < 13; ++f)
      EXPECT_LE(ulp_distance(r[f * n + j], want[f]), 2) << "function " << f << " at x = " << x;
  }
}

// sin and cos share one sincos call per argument: the second of the pair
// is read back from the thread's last call, only for the same bits
TEST(Lanes, SinAndCosReadBackTheLastCallOnlyForTheSameArgumentBits) {
  Lanes<4> x;
  const double xv[4] = {0.0, 1.25, 40.5, -3.0};
  for (int i = 0; i < 4; ++i) x.set(i, xv[i]);
  Lanes<4> neg = x;
  neg.set(0, -0.0);  // equal to 0.0 as a number, not as bits
  const Lanes<4> c = cos(x), s = sin(x), s_neg = sin(neg), c_neg = cos(neg);
  const Lanes<4> c_again = cos(x), s_again = sin(x);
  for (int i = 0; i < 4; ++i) {
    EXPECT_LE(ulp_distance(s[i], std::sin(xv[i])), 1) << i;
    EXPECT_LE(ulp_distance(c[i], std::cos(xv[i])), 1) << i;
    EXPECT_EQ(bits(s_again[i]), bits(s[i])) << i;
    EXPECT_EQ(bits(c_again[i]), bits(c[i])) << i;
    EXPECT_EQ(bits(c_neg[i]), bits(c[i])) << i;
  }
  // sin(-0) = -0: not the +0 of the call before, whose argument was +0
  EXPECT_TRUE(std::signbit(s_neg[0]));
  EXPECT_FALSE(std::signbit(s[0]));
  for (int i = 1; i < 4; ++i) EXPECT_EQ(bits(s_neg[i]), bits(s[i])) << i;
}

// Test systems written once for S = double and S = Lanes<W> (arithmetic and
// sqrt only, so that lanes and scalar compute the same bits).
Status status_of(const Vec<double, 2>& f) {
  return all_finite(f) ? Status::ok : Status::non_finite;
}
Status status_of(const Vec<double, 4>& f) {
  return all_finite(f) ? Status::ok : Status::non_finite;
}
template <int W, int N>
LaneStatus<W> status_of(const Vec<Lanes<W>, N>& f) {
  return finite_status(f);
}

// Van der Pol, x'' = mu (1 - x^2) x' - x: stiffer (more steps, more
// rejections) as mu grows
template <class S>
struct VanDerPol {
  S mu;
  auto operator()(S /*t*/, const Vec<S, 2>& y, Vec<S, 2>& f) const {
    f[0] = y[1];
    f[1] = mu * (1.0 - y[0] * y[0]) * y[1] - y[0];
    return status_of(f);
  }
  bool post_step(S /*t*/, Vec<S, 2>& /*y*/) const { return false; }
};

// Kepler's problem (a sqrt in the right-hand side); eccentric orbits make
// the step size swing over orders of magnitude
template <class S>
struct Kepler {
  auto operator()(S /*t*/, const Vec<S, 4>& y, Vec<S, 4>& f) const {
    const S r = nholo::sqrt(y[0] * y[0] + y[1] * y[1]);
    const S r3 = r * r * r;
    f[0] = y[2];
    f[1] = y[3];
    f[2] = -y[0] / r3;
    f[3] = -y[1] / r3;
    return status_of(f);
  }
  bool post_step(S /*t*/, Vec<S, 4>& /*y*/) const { return false; }
};

// y' = c y^2, y(0) = 1: blows up at t = 1/c
template <class S>
struct BlowUp {
  S c;
  auto operator()(S /*t*/, const Vec<S, 2>& y, Vec<S, 2>& f) const {
    f[0] = c * y[0] * y[0];
    f[1] = -y[1];
    return status_of(f);
  }
  bool post_step(S /*t*/, Vec<S, 2>& /*y*/) const { return false; }
};

// y' = -sqrt(y): y = (sqrt(y0) - t/2)^2 reaches 0 at t = 2 sqrt(y0), where
// the stages step into y < 0 (NaN): quarter steps until the step underflows
template <class S>
struct SqrtDecay {
  auto operator()(S /*t*/, const Vec<S, 2>& y, Vec<S, 2>& f) const {
    f[0] = -nholo::sqrt(y[0]);
    f[1] = y[1];
    return status_of(f);
  }
  bool post_step(S /*t*/, Vec<S, 2>& /*y*/) const { return false; }
};

template <int N>
void expect_lane_equals_scalar(const TrajectoryState<double, N>& lane,
                               const TrajectoryState<double, N>& scalar, int i) {
  EXPECT_EQ(lane.status, scalar.status) << "lane " << i;
  EXPECT_EQ(lane.steps, scalar.steps) << "lane " << i;
  EXPECT_EQ(lane.rejected, scalar.rejected) << "lane " << i;
  EXPECT_EQ(bits(lane.t), bits(scalar.t)) << "lane " << i;
  EXPECT_EQ(bits(lane.h), bits(scalar.h)) << "lane " << i;
  EXPECT_EQ(bits(lane.err_prev), bits(scalar.err_prev)) << "lane " << i;
  EXPECT_EQ(bits(lane.fail_time), bits(scalar.fail_time)) << "lane " << i;
  for (int c = 0; c < N; ++c)
    EXPECT_EQ(bits(lane.y[c]), bits(scalar.y[c])) << "lane " << i << " y" << c;
}

// Each lane of advance_lanes against the scalar integrator (integrate.hpp)
// on the same system and state, over several output intervals with their
// own end times per lane; the lanes in `skip` sit out the second interval.
template <Method M, class Tab, int W, int N, class LaneSys, class ScalarSysOf>
void compare_with_scalar(const LaneSys& lane_sys, ScalarSysOf scalar_sys,
                         const Vec<Lanes<W>, N>& y0, const double (&t_outs)[3][W],
                         const IntegratorOptions& opt, const bool (&skip)[W]) {
  LaneTrajectories<W, N> lt = start_lanes<W, N>(Lanes<W>(0.0), y0, opt);
  std::vector<TrajectoryState<double, N>> ref;
  for (int i = 0; i < W; ++i) ref.push_back(lane_state(lt, i));
  for (int k = 0; k < 3; ++k) {
    Lanes<W> t_out;
    bool active[W];
    for (int i = 0; i < W; ++i) {
      t_out.set(i, t_outs[k][i]);
      active[i] = !(k == 1 && skip[i]);
      if (!active[i]) continue;
      StepBudget b = whole_interval(ref[i]);
      advance_to_method<M>(scalar_sys(i), ref[i], t_outs[k][i], opt, b);
    }
    advance_lanes<Tab>(lane_sys, lt, t_out, opt, active);
    for (int i = 0; i < W; ++i) expect_lane_equals_scalar<N>(lane_state(lt, i), ref[i], i);
  }
}

template <Method M, class Tab, int W>
void van_der_pol_lanes() {
  IntegratorOptions opt;
  opt.method = M;
  opt.rtol = 1e-9;
  opt.atol = 1e-11;
  opt.max_steps = 4000;  // the stiffest lanes run out of steps in an interval
  VanDerPol<Lanes<W>> sys;
  Vec<Lanes<W>, 2> y0;
  double t_outs[3][W];
  bool skip[W];
  for (int i = 0; i < W; ++i) {
    sys.mu.set(i, 0.5 + 9.0 * i * i);
    y0[0].set(i, 2.0 - 0.1 * i);
    y0[1].set(i, 0.0);
    for (int k = 0; k < 3; ++k) t_outs[k][i] = (k + 1) * (1.5 + 0.25 * i);
    skip[i] = i % 3 == 1;
  }
  compare_with_scalar<M, Tab>(
      sys, [&](int i) { return VanDerPol<double>{sys.mu[i]}; }, y0, t_outs, opt, skip);
}

TEST(IntegrateLanes, EachLaneTakesTheScalarStepsDopri5) {
  van_der_pol_lanes<Method::dopri5, TableauDopri5, 1>();
  van_der_pol_lanes<Method::dopri5, TableauDopri5, 4>();
  van_der_pol_lanes<Method::dopri5, TableauDopri5, 8>();
}

TEST(IntegrateLanes, EachLaneTakesTheScalarStepsDop853) {
  van_der_pol_lanes<Method::dop853, TableauDop853, 4>();
  van_der_pol_lanes<Method::dop853, TableauDop853, 8>();
}

TEST(IntegrateLanes, EccentricOrbitsInLanesMatchTheScalarIntegrator) {
  constexpr int W = 8;
  IntegratorOptions opt;
  opt.rtol = 1e-10;
  opt.atol = 1e-12;
  opt.dt_max = 0.5;
  Vec<Lanes<W>, 4> y0;
  double t_outs[3][W];
  bool skip[W];
  for (int i = 0; i < W; ++i) {
    const double e = 0.1 * i;  // eccentricity 0 .. 0.7, perihelion at (1 - e, 0)
    y0[0].set(i, 1.0 - e);
    y0[1].set(i, 0.0);
    y0[2].set(i, 0.0);
    y0[3].set(i, std::sqrt((1.0 + e) / (1.0 - e)));
    for (int k = 0; k < 3; ++k) t_outs[k][i] = (k + 1) * 3.0 + 0.5 * i;
    skip[i] = i == 5;
  }
  const auto scalar = [](int) { return Kepler<double>{}; };
  compare_with_scalar<Method::dopri5, TableauDopri5>(Kepler<Lanes<W>>{}, scalar, y0, t_outs, opt,
                                                     skip);
  compare_with_scalar<Method::dop853, TableauDop853>(Kepler<Lanes<W>>{}, scalar, y0, t_outs, opt,
                                                     skip);
}

TEST(IntegrateLanes, LanesThatFailEndAsTheScalarIntegratorEndsThemWhileTheOthersGoOn) {
  constexpr int W = 4;
  IntegratorOptions opt;
  opt.rtol = 1e-9;
  opt.atol = 1e-12;
  BlowUp<Lanes<W>> sys;
  Vec<Lanes<W>, 2> y0;
  double t_outs[3][W];
  bool skip[W] = {false, false, false, false};
  const double c[W] = {0.2, 0.9, 1.6, 2.5};  // lanes 2 and 3 blow up before t = 1
  for (int i = 0; i < W; ++i) {
    sys.c.set(i, c[i]);
    y0[0].set(i, 1.0);
    y0[1].set(i, 1.0);
    for (int k = 0; k < 3; ++k) t_outs[k][i] = 0.4 * (k + 1);
  }
  compare_with_scalar<Method::dopri5, TableauDopri5>(
      sys, [&](int i) { return BlowUp<double>{c[i]}; }, y0, t_outs, opt, skip);
  // a right-hand side that fails in a stage (NaN) in lanes 0 and 2 only
  Vec<Lanes<W>, 2> z0;
  const double root[W] = {0.5, 2.0, 0.7, 3.0};  // the lanes reach y = 0 at t = 2 root
  for (int i = 0; i < W; ++i) {
    z0[0].set(i, root[i] * root[i]);
    z0[1].set(i, 0.0);
  }
  compare_with_scalar<Method::dopri5, TableauDopri5>(
      SqrtDecay<Lanes<W>>{}, [](int) { return SqrtDecay<double>{}; }, z0, t_outs, opt, skip);
  LaneTrajectories<W, 2> zt = start_lanes<W, 2>(Lanes<W>(0.0), z0, opt);
  const bool every_lane[W] = {true, true, true, true};
  advance_lanes<TableauDopri5>(SqrtDecay<Lanes<W>>{}, zt, Lanes<W>(1.2), opt, every_lane);
  for (int i = 0; i < W; ++i) {
    EXPECT_EQ(zt.status[i], 2 * root[i] < 1.2 ? Status::non_finite : Status::ok) << i;
    if (2 * root[i] < 1.2) {
      EXPECT_NEAR(zt.fail_time[i], 2 * root[i], 1e-3) << i;
    }
  }
  // and the independent facts: the lanes past 1/c failed there, the others landed
  LaneTrajectories<W, 2> lt = start_lanes<W, 2>(Lanes<W>(0.0), y0, opt);
  const bool all_active[W] = {true, true, true, true};
  advance_lanes<TableauDopri5>(sys, lt, Lanes<W>(1.2), opt, all_active);
  for (int i = 0; i < W; ++i) {
    if (1.0 / c[i] > 1.2) {
      EXPECT_EQ(lt.status[i], Status::ok) << i;
      EXPECT_NEAR(lt.y[0][i], 1.0 / (1.0 - c[i] * 1.2), 1e-7) << i;
    } else {
      EXPECT_NE(lt.status[i], Status::ok) << i;
      EXPECT_NEAR(lt.fail_time[i], 1.0 / c[i], 1e-3) << i;
    }
  }
}

}  // namespace
