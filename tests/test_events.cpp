// Events inside one step (kernels/events.hpp): the cubic Hermite interpolant
// of a step, and the crossings of an event function on it, against closed
// forms: trajectories whose interpolant is exact (polynomials of degree <= 3)
// and event functions whose zeros are known.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <tuple>
#include <vector>

#include "kernels/events.hpp"
#include "kernels/trajectory_events.hpp"

namespace {

using nholo::EventCrossing;
using nholo::EventDirection;
using nholo::StepInterpolant;
using nholo::Vec;

constexpr double kPi = 3.14159265358979323846;

// The interpolant of the step [t0, t0 + h] of y(t) (one component), f = y'.
template <class Y, class F>
StepInterpolant<double, 1> step_of(Y y, F f, double t0, double h) {
  StepInterpolant<double, 1> u;
  u.t0 = t0;
  u.h = h;
  u.y0[0] = y(t0);
  u.f0[0] = f(t0);
  u.y1[0] = y(t0 + h);
  u.f1[0] = f(t0 + h);
  return u;
}

}  // namespace

// A cubic is reproduced (to rounding) at every theta; for sin(t) the error
// falls like h^4 (ratios near 16 when h halves).
TEST(Events, HermiteInterpolantIsExactForCubicsAndFourthOrder) {
  auto cubic = [](double t) { return t * t * t - 2 * t * t + 0.5; };
  auto dcubic = [](double t) { return 3 * t * t - 4 * t; };
  const StepInterpolant<double, 1> u = step_of(cubic, dcubic, 0.7, 1.9);
  for (double theta : {0.0, 0.13, 0.5, 0.77, 1.0})
    EXPECT_NEAR(u.at(0, theta), cubic(0.7 + theta * 1.9), 1e-14) << theta;
  double previous = 0;
  for (double h : {0.4, 0.2, 0.1, 0.05}) {
    auto y = [](double t) { return std::sin(t); };
    auto f = [](double t) { return std::cos(t); };
    double worst = 0;
    for (double theta = 0.05; theta < 1; theta += 0.05)
      worst = std::max(worst, std::fabs(step_of(y, f, 1.0, h).at(0, theta) - std::sin(1.0 + theta * h)));
    if (previous > 0) {
      std::printf("h %.3f: max error %.3e, ratio %.2f\n", h, worst, previous / worst);
      EXPECT_GT(previous / worst, 14.0);
      EXPECT_LT(previous / worst, 18.0);
    }
    previous = worst;
  }
}

// theta(t) = Omega t + theta0 (the rolling coin's spin angle), g = sin(theta)
// over one long step: every zero k pi found once, in order, at (k pi -
// theta0) / Omega, falling and rising in turn; direction filters; a cap
// smaller than the crossings stores the first ones and counts them all.
TEST(Events, CrossingsOfSinThetaAreFoundInOrderAtTheirTimes) {
  const double omega = 1.3, theta0 = 0.2, t0 = 0.0, h = 10.0;
  const StepInterpolant<double, 1> u =
      step_of([&](double t) { return omega * t + theta0; }, [&](double) { return omega; }, t0, h);
  auto g = [](double, const Vec<double, 1>& y) { return std::sin(y[0]); };
  EventCrossing x[8] = {};
  const int n = nholo::step_crossings(g, u, EventDirection::both, std::sin(theta0), 64, x, 8);
  ASSERT_EQ(n, 4);  // theta from 0.2 to 13.2: pi, 2 pi, 3 pi, 4 pi
  for (int k = 0; k < n; ++k) {
    const double exact = ((k + 1) * kPi - theta0) / omega;
    EXPECT_NEAR(x[k].t, exact, 1e-13) << k;
    EXPECT_EQ(x[k].up, k % 2 == 1) << k;  // sin falls through pi, rises through 2 pi
  }
  EventCrossing up[8] = {};
  ASSERT_EQ(nholo::step_crossings(g, u, EventDirection::up, std::sin(theta0), 64, up, 8), 2);
  EXPECT_NEAR(up[0].t, (2 * kPi - theta0) / omega, 1e-13);
  EXPECT_NEAR(up[1].t, (4 * kPi - theta0) / omega, 1e-13);
  EventCrossing two[2] = {};
  EXPECT_EQ(nholo::step_crossings(g, u, EventDirection::down, std::sin(theta0), 64, two, 1), 2);
  EXPECT_NEAR(two[0].t, (kPi - theta0) / omega, 1e-13);
  EXPECT_EQ(two[1].t, 0.0);  // beyond the cap: counted, not stored
}

// g = (y - c)^2 - eps^2 along y = t dips below zero between c - eps and
// c + eps: two crossings in one step, falling then rising, found when a
// sample (every 2 / samples) falls inside the dip, missed when none does.
TEST(Events, TwoCrossingsInOneStepAreFoundInOrder) {
  const double c = 1.03;
  const StepInterpolant<double, 1> u =
      step_of([](double t) { return t; }, [](double) { return 1.0; }, 0.0, 2.0);
  for (const auto& [eps, samples, found] :
       std::vector<std::tuple<double, int, int>>{{0.1, 16, 2}, {0.005, 256, 2}, {0.005, 16, 0}}) {
    auto g = [e = eps, c](double, const Vec<double, 1>& y) {
      return (y[0] - c) * (y[0] - c) - e * e;
    };
    EventCrossing x[4] = {};
    const int n = nholo::step_crossings(g, u, EventDirection::both, c * c - eps * eps, samples, x, 4);
    ASSERT_EQ(n, found) << eps << " " << samples;
    if (n == 2) {
      EXPECT_NEAR(x[0].t, c - eps, 1e-14);
      EXPECT_FALSE(x[0].up);
      EXPECT_NEAR(x[1].t, c + eps, 1e-14);
      EXPECT_TRUE(x[1].up);
    }
  }
}

// g = y - 1 along y = t, steps [0, 1] and [1, 2]: the zero at the shared end
// is a crossing once the sign after it is known: reported once, by the step
// that leaves it, at exactly t = 1 (the sign before it carried across the
// step end in the zero's sign bit).
TEST(Events, ACrossingAtAStepEndIsReportedOnce) {
  auto y = [](double t) { return t; };
  auto f = [](double) { return 1.0; };
  auto g = [](double, const Vec<double, 1>& v) { return v[0] - 1.0; };
  std::vector<double> times;
  std::vector<bool> up;
  auto keep = [&](double, double t, bool u) {
    times.push_back(t);
    up.push_back(u);
    return true;
  };
  double g_end = 0;
  EXPECT_EQ(nholo::for_each_crossing(g, step_of(y, f, 0.0, 1.0), EventDirection::both, -1.0, 8,
                                     keep, &g_end),
            0);
  EXPECT_EQ(g_end, 0.0);
  EXPECT_TRUE(std::signbit(g_end));  // came from below
  EXPECT_EQ(nholo::for_each_crossing(g, step_of(y, f, 1.0, 1.0), EventDirection::both, g_end, 8,
                                     keep, &g_end),
            1);
  ASSERT_EQ(times.size(), 1u);
  EXPECT_EQ(times[0], 1.0);
  EXPECT_TRUE(up[0]);
  // a start on the zero with no sign before it (NaN) is no crossing
  EXPECT_EQ(nholo::for_each_crossing(g, step_of(y, f, 1.0, 1.0), EventDirection::both, std::nan(""), 8,
                                     keep),
            0);
}

// The tangency rule (docs/events.md): g = (y - 1)^2 along y = t touches zero
// at t = 1 and keeps its sign: no crossing, whether a step ends on the zero
// ([0, 1] then [1, 2]), a sample inside a step falls on it ([0, 2] in 2 or 4
// parts) or none does (3 parts); g = y - 1 through the same exact zero at a
// sample inside the step is one crossing at t = 1 (it was counted twice when
// a zero took the sign it came from).
TEST(Events, ATangencyIsNoCrossingWhereverTheStepsEnd) {
  auto y = [](double t) { return t; };
  auto f = [](double) { return 1.0; };
  auto touch = [](double, const Vec<double, 1>& v) { return (v[0] - 1.0) * (v[0] - 1.0); };
  auto through = [](double, const Vec<double, 1>& v) { return v[0] - 1.0; };
  auto none = [](double, double, bool) { return true; };
  double g_end = 0;
  EXPECT_EQ(nholo::for_each_crossing(touch, step_of(y, f, 0.0, 1.0), EventDirection::both, 1.0,
                                     4, none, &g_end),
            0);
  EXPECT_EQ(g_end, 0.0);
  EXPECT_FALSE(std::signbit(g_end));  // came from above
  EXPECT_EQ(nholo::for_each_crossing(touch, step_of(y, f, 1.0, 1.0), EventDirection::both, g_end,
                                     4, none),
            0);
  for (int parts : {2, 3, 4})
    EXPECT_EQ(nholo::for_each_crossing(touch, step_of(y, f, 0.0, 2.0), EventDirection::both, 1.0,
                                       parts, none),
              0)
        << parts << " parts";
  for (int parts : {2, 4}) {
    EventCrossing x[3] = {};
    ASSERT_EQ(nholo::step_crossings(through, step_of(y, f, 0.0, 2.0), EventDirection::both, -1.0,
                                    parts, x, 3),
              1)
        << parts << " parts";
    EXPECT_EQ(x[0].t, 1.0);
    EXPECT_TRUE(x[0].up);
  }
}

// Where g is undefined (NaN) there is no crossing: y = t^2 - 1/2 (exact on
// the cubic interpolant) dips below 0 inside the step, so g = sqrt(y) - 0.3
// is NaN for |t| < 1/sqrt(2) and crosses zero only at t = -+sqrt(0.59),
// down then up. Before, entering the undefined stretch counted as a
// crossing (NaN took the sign of an exact zero); and g = sqrt(y) + 0.3,
// never zero where defined, has none.
TEST(Events, AnUndefinedStretchOfGIsNoCrossing) {
  auto y = [](double t) { return t * t - 0.5; };
  auto f = [](double t) { return 2 * t; };
  const auto u = step_of(y, f, -1.0, 2.0);
  auto below = [](double, const Vec<double, 1>& v) { return std::sqrt(v[0]) - 0.3; };
  auto above = [](double, const Vec<double, 1>& v) { return std::sqrt(v[0]) + 0.3; };
  const double root = std::sqrt(0.59);
  for (int samples : {1, 8, 16}) {
    SCOPED_TRACE(samples);
    EventCrossing x[4] = {};
    const int n =
        nholo::step_crossings(below, u, EventDirection::both, below(-1.0, {0.5}), samples, x, 4);
    if (samples == 1) {
      EXPECT_EQ(n, 0);  // both ends positive, the middle undefined: nothing seen
      continue;
    }
    ASSERT_EQ(n, 2);
    EXPECT_NEAR(x[0].t, -root, 1e-12);
    EXPECT_FALSE(x[0].up);
    EXPECT_NEAR(x[1].t, root, 1e-12);
    EXPECT_TRUE(x[1].up);
    EXPECT_EQ(
        nholo::step_crossings(above, u, EventDirection::both, above(-1.0, {0.5}), samples, x, 4),
        0);
  }
}

// A zero of a curved interpolant (y = sin t near pi, one step of 0.1) is
// located to within a few ulp of t of the interpolant's own zero, found
// here independently by bisection of its power form in long double, and
// within the interpolant's O(h^4) error of pi.
TEST(Events, TheCrossingTimeIsTheInterpolantsZeroToAFewUlp) {
  const double t0 = 3.08, h = 0.1;
  const StepInterpolant<double, 1> u =
      step_of([](double t) { return std::sin(t); }, [](double t) { return std::cos(t); }, t0, h);
  auto g = [](double, const Vec<double, 1>& v) { return v[0]; };
  EventCrossing x[1] = {};
  ASSERT_EQ(nholo::step_crossings(g, u, EventDirection::both, std::sin(t0), 4, x, 1), 1);
  // the same cubic in power form: p(s) = y0 + h f0 s + c2 s^2 + c3 s^3
  const long double y0 = u.y0[0], y1 = u.y1[0], f0 = u.f0[0] * h, f1 = u.f1[0] * h;
  const long double c2 = 3 * (y1 - y0) - 2 * f0 - f1, c3 = 2 * (y0 - y1) + f0 + f1;
  auto p = [&](long double s) { return y0 + s * (f0 + s * (c2 + s * c3)); };
  long double lo = 0, hi = 1;
  for (int i = 0; i < 200; ++i) {
    const long double mid = (lo + hi) / 2;
    (p(mid) > 0 ? lo : hi) = mid;
  }
  const double zero = static_cast<double>(t0 + h * lo);
  std::printf("crossing %.17g, the interpolant's zero %.17g, pi %.17g\n", x[0].t, zero, kPi);
  EXPECT_NEAR(x[0].t, zero, 8 * 2.2e-16 * zero);
  EXPECT_FALSE(x[0].up);
  EXPECT_NEAR(x[0].t, kPi, 1e-6);
}

// Where g is sampled besides the parts' ends: the stationary points inside
// the step of the cubic through g's values and rates (per unit theta) at its
// ends, for cubics whose p'(theta) = 3 (theta - r1)(theta - r2) is written
// out by hand: both roots inside (p' of one sign at the ends), one inside
// (p' changes sign), none inside with the vertex inside (p' > 0 throughout)
// or outside (g monotone: the usual step).
TEST(Events, GIsSampledWhereItsCubicIsStationaryInsideTheStep) {
  // p(theta) = theta^3 - 1.5 (r1 + r2) theta^2 + 3 r1 r2 theta + g0
  auto samples = [](double r1, double r2, double g0) {
    const double b = -1.5 * (r1 + r2), c = 3 * r1 * r2;
    const double g1 = 1 + b + c + g0, d0 = c, d1 = 3 + 2 * b + c;
    return nholo::detail::event_samples(1, g0, d0, g1, d1);
  };
  const auto both = samples(0.25, 0.75, 0.1);
  ASSERT_EQ(both.n_extra, 2);
  EXPECT_NEAR(both.extra[0], 0.25, 1e-15);
  EXPECT_NEAR(both.extra[1], 0.75, 1e-15);
  const auto one = samples(0.4, 1.7, -0.2);
  ASSERT_EQ(one.n_extra, 1);
  EXPECT_NEAR(one.extra[0], 0.4, 1e-15);
  const auto one_late = samples(-0.6, 0.9, 0.3);
  ASSERT_EQ(one_late.n_extra, 1);
  EXPECT_NEAR(one_late.extra[0], 0.9, 1e-15);
  EXPECT_EQ(samples(1.2, 1.9, 0.0).n_extra, 0);    // both after the step
  EXPECT_EQ(samples(-0.8, -0.1, 0.0).n_extra, 0);  // both before it
  // p' = 3 ((theta - 0.5)^2 + 0.01) > 0: the vertex inside, no root
  const double g0 = 0.0, d0 = 3 * 0.26, d1 = 3 * 0.26, g1 = 1 - 1.5 + d0 + g0;
  EXPECT_EQ(nholo::detail::event_samples(1, g0, d0, g1, d1).n_extra, 0);
  EXPECT_EQ(nholo::detail::event_samples(4, g0, d0, g1, d1).parts, 4);
}
