// nholo/tests/coin_closed_form.hpp — the nonholonomic rolling coin in closed
// form (docs/physics.md, item 10), what the tests of the integrator
// (tests/test_integrate.cpp) and of the vakonomic coin
// (test_formulation_trajectories.cpp) compare with: theta = Omega t + theta0,
// the drift gs/(3 Omega) down the slope and the circle of w about it, from
// (x0, y0, phi0) at t = 0.
#pragma once

#include <cmath>

#include "kernels/linalg.hpp"
#include "models/rolling_coin.hpp"

namespace nholo_test {

struct CoinMotion {
  nholo::models::RollingCoin::Params p;
  double Omega, omega, theta0;
  double x0 = 0.0, y0 = 0.0, phi0 = 0.0;
  double gs() const { return p.g * std::sin(p.slope); }
  // (x, y, phi, theta, and their rates) at time t
  nholo::Vec<double, 8> state(double t) const {
    const double th = Omega * t + theta0;
    const double R = p.radius;
    const double w = omega * R / Omega + gs() / (3 * Omega * Omega) * std::sin(th);
    const double phid = omega + 2 * gs() / (3 * R * Omega) * std::sin(th);
    nholo::Vec<double, 8> y;
    y[0] = x0 + gs() / (3 * Omega) * t - w * std::cos(th);
    y[1] = y0 + w * std::sin(th);
    y[2] =
        phi0 + omega * t - 2 * gs() / (3 * R * Omega * Omega) * (std::cos(th) - std::cos(theta0));
    y[3] = th;
    y[4] = R * phid * std::sin(th);
    y[5] = R * phid * std::cos(th);
    y[6] = phid;
    y[7] = Omega;
    return y;
  }
};

}  // namespace nholo_test
