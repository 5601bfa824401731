// The ensemble of bench_lanes: Kepler orbits of eccentricity 0 .. 0.7, one
// source for S = double and S = Lanes<W> (arithmetic and sqrt only: every
// lane computes the scalar code's bits, tests/test_lanes.cpp).
#pragma once

#include <cmath>

#include "kernels/integrate.hpp"

namespace nholo_bench {

inline nholo::Status kepler_status(const nholo::Vec<double, 4>& f) {
  return nholo::all_finite(f) ? nholo::Status::ok : nholo::Status::non_finite;
}
template <class F>
auto kepler_status(const F& f) {
  return finite_status(f);  // kernels/lanes.hpp, found through the lane type
}

template <class S>
struct KeplerSystem {
  auto operator()(S /*t*/, const nholo::Vec<S, 4>& y, nholo::Vec<S, 4>& f) const {
    using nholo::sqrt;  // and the lanes' sqrt, found through their type
    const S r = sqrt(y[0] * y[0] + y[1] * y[1]);
    const S r3 = r * r * r;
    f[0] = y[2];
    f[1] = y[3];
    f[2] = -y[0] / r3;
    f[3] = -y[1] / r3;
    return kepler_status(f);
  }
  bool post_step(S /*t*/, nholo::Vec<S, 4>& /*y*/) const { return false; }
};

// orbit j of an ensemble of n: perihelion (1 - e, 0), e = 0.7 j / n
inline nholo::Vec<double, 4> kepler_start(int j, int n) {
  const double e = 0.7 * j / n;
  nholo::Vec<double, 4> y;
  y[0] = 1.0 - e;
  y[1] = 0.0;
  y[2] = 0.0;
  y[3] = std::sqrt((1.0 + e) / (1.0 - e));
  return y;
}

inline nholo::IntegratorOptions kepler_options() {
  nholo::IntegratorOptions opt;
  opt.rtol = 1e-10;
  opt.atol = 1e-12;
  return opt;
}

constexpr int kKeplerOrbits = 256;
constexpr double kKeplerEnd = 20.0;

// the scalar integrator over the ensemble (bench_lanes_scalar.cpp, compiled
// for the x86-64 baseline as nholo's own scalar kernels are); returns the sum
// of the final x (kept, so that nothing is optimised away)
double kepler_ensemble_scalar();

}  // namespace nholo_bench
