// nholo/tests/test_rk_step.cpp — one explicit Runge–Kutta step (rk_step,
// kernels/integrate.hpp) against values derived independently of the code:
//   y' = lambda y: one step multiplies y by the method's stability
//     polynomial R(h lambda), written out by hand: RK4's is the Taylor
//     polynomial of exp to degree 4; Dormand–Prince 5(4)'s propagated
//     solution has 1 + z + z^2/2 + z^3/6 + z^4/24 + z^5/120 + z^6/600
//     (Hairer, Norsett & Wanner, Solving ODEs I, section IV.2);
//   y' = t^k: a step is a quadrature, exact for k < order (RK4 4, DOPRI5 5,
//     DOP853 8); the embedded estimates of DOPRI5 and DOP853 vanish with it
//     while their lower-order solutions are exact too;
//   FSAL: k_last is f(t + h, y1) itself; a failing stage's status is returned;
//   RK4's k_last is its last stage k4 = f(t + h, y + h k3), for y' = lambda y
//     lambda y (1 + z + z^2/2 + z^3/4) (z = h lambda, the stages written out
//     by hand), f(t + h, y1) to O(h^3), so that the cubic Hermite
//     interpolant with it as its end slope (the events' interpolant of an
//     RK4 step) is off the exact solution by O(h^4) at mid-step.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/integrate.hpp"

using namespace nholo;

namespace {

using V1 = Vec<double, 1>;

struct Linear {  // y' = lambda y
  double lambda;
  Status operator()(double, const V1& y, V1& dy) const {
    dy[0] = lambda * y[0];
    return Status::ok;
  }
};

struct Power {  // y' = t^k
  int k;
  Status operator()(double t, const V1&, V1& dy) const {
    dy[0] = std::pow(t, k);
    return Status::ok;
  }
};

struct FailsLate {  // y' = 1, singular after the step's midpoint
  double t_fail;
  Status operator()(double t, const V1&, V1& dy) const {
    dy[0] = 1.0;
    return t > t_fail ? Status::singular : Status::ok;
  }
};

template <class Tab, class Sys>
Status one_step(const Sys& sys, double t, double y, double h, double& y1, double& err,
                double& k_last) {
  const V1 y0{{y}};
  V1 k0{{NAN}}, y1v{{NAN}}, kl{{NAN}};
  err = NAN;
  EXPECT_EQ(sys(t, y0, k0), Status::ok);
  const Status st = rk_step<Tab>(sys, t, y0, k0, h, StepTolerance{1e-6, 1e-6}, y1v, err, kl);
  y1 = y1v[0];
  k_last = kl[0];
  return st;
}

double rk4_polynomial(double z) {
  return 1 + z + z * z / 2 + z * z * z / 6 + z * z * z * z / 24;
}
double dopri5_polynomial(double z) {
  return rk4_polynomial(z) + std::pow(z, 5) / 120 + std::pow(z, 6) / 600;
}

TEST(RkStep, LinearEquationGivesTheStabilityPolynomial) {
  for (double lambda : {-1.0, -2.5, 0.7, 3.0})
    for (double h : {0.01, 0.3, 1.0}) {
      const double z = h * lambda, y0 = 1.7;
      double y1, err, kl;
      ASSERT_EQ(one_step<TableauRK4>(Linear{lambda}, 0.2, y0, h, y1, err, kl), Status::ok);
      EXPECT_NEAR(y1, rk4_polynomial(z) * y0, 1e-14 * std::abs(y1)) << "RK4, z = " << z;
      EXPECT_EQ(err, 0.0);  // no embedded estimate
      ASSERT_EQ(one_step<TableauDopri5>(Linear{lambda}, 0.2, y0, h, y1, err, kl), Status::ok);
      EXPECT_NEAR(y1, dopri5_polynomial(z) * y0, 1e-14 * std::abs(y1)) << "DOPRI5, z = " << z;
      EXPECT_EQ(kl, lambda * y1);  // FSAL: f(t + h, y1), the same bits
      // DOP853 is of order 8: R(z) = exp(z) + O(z^9)
      ASSERT_EQ(one_step<TableauDop853>(Linear{lambda}, 0.2, y0, h, y1, err, kl), Status::ok);
      if (std::abs(z) <= 0.3) {
        EXPECT_NEAR(y1, std::exp(z) * y0, 2e-14 * std::abs(y1) + std::pow(std::abs(z), 9))
            << "DOP853, z = " << z;
      }
    }
}

// y(t0 + h) = y0 + ((t0 + h)^(k+1) - t0^(k+1)) / (k + 1), exact for k < order.
template <class Tab>
void quadrature_exactness(int order, bool embedded) {
  const double t0 = 0.5, h = 0.75, y0 = 2.0;
  for (int k = 0; k < order; ++k) {
    double y1, err, kl;
    ASSERT_EQ(one_step<Tab>(Power{k}, t0, y0, h, y1, err, kl), Status::ok);
    const double exact = y0 + (std::pow(t0 + h, k + 1) - std::pow(t0, k + 1)) / (k + 1);
    EXPECT_NEAR(y1, exact, 1e-14 * std::abs(exact)) << "order " << order << ", t^" << k;
    // the embedded solution is of order >= 4: exact too for k < 4, no error
    if (embedded && k < 4) {
      EXPECT_LT(err, 1e-9) << "order " << order << ", t^" << k;
    }
  }
}

TEST(RkStep, PolynomialsBelowTheOrderAreIntegratedExactly) {
  quadrature_exactness<TableauRK4>(4, false);
  quadrature_exactness<TableauDopri5>(5, true);
  quadrature_exactness<TableauDop853>(8, true);
}

TEST(RkStep, Rk4sLastStageIsAnEndSlopeThatKeepsTheInterpolantFourthOrder) {
  const double lambda = -1.3, y0 = 0.7;
  double mid_error[3];
  for (int r = 0; r < 3; ++r) {
    const double h = 0.2 / (1 << r), z = h * lambda;
    double y1, err, k4;
    ASSERT_EQ(one_step<TableauRK4>(Linear{lambda}, 0.0, y0, h, y1, err, k4), Status::ok);
    const double want = lambda * y0 * (1 + z + z * z / 2 + z * z * z / 4);
    EXPECT_NEAR(k4, want, 1e-15 * std::fabs(want)) << "h " << h;
    // its distance to f(t + h, y1): lambda^4 y0 h^3 / 12 to leading order
    EXPECT_NEAR(k4 - lambda * y1, lambda * y0 * (z * z * z / 12),
                0.3 * std::fabs(lambda * y0 * z * z * z / 12));
    const double mid = hermite(y0, lambda * y0, y1, k4, h, 0.5);
    mid_error[r] = std::fabs(mid - y0 * std::exp(lambda * h / 2));
  }
  // halving h divides the error by 2^4 (order 4: 16), not 2^3
  for (int r = 0; r < 2; ++r) {
    const double ratio = mid_error[r] / mid_error[r + 1];
    EXPECT_GT(ratio, 14.0) << "h " << 0.2 / (1 << r);
    EXPECT_LT(ratio, 18.0) << "h " << 0.2 / (1 << r);
  }
}

TEST(RkStep, FailingStageStatusIsReturned) {
  double y1, err, kl;
  // every stage after t = 0.5 fails; the step [0, 1] has stages there
  EXPECT_EQ(one_step<TableauRK4>(FailsLate{0.5}, 0.0, 0.0, 1.0, y1, err, kl), Status::singular);
  EXPECT_EQ(one_step<TableauDopri5>(FailsLate{0.5}, 0.0, 0.0, 1.0, y1, err, kl), Status::singular);
  EXPECT_EQ(one_step<TableauDop853>(FailsLate{0.5}, 0.0, 0.0, 1.0, y1, err, kl), Status::singular);
  // the same system on a step before t_fail succeeds: y' = 1 is integrated exactly
  EXPECT_EQ(one_step<TableauDopri5>(FailsLate{0.5}, 0.0, 0.0, 0.4, y1, err, kl), Status::ok);
  EXPECT_NEAR(y1, 0.4, 1e-15);
}

}  // namespace
