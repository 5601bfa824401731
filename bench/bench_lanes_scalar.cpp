// The scalar side of bench_lanes, compiled without -m flags (the x86-64
// baseline of nholo's scalar kernels): glibc's math over an array and the
// scalar integrator over the Kepler ensemble.
#include <cmath>

#include "bench/lanes_kepler.hpp"

namespace nholo_bench {

double kepler_ensemble_scalar() {
  const nholo::IntegratorOptions opt = kepler_options();
  double sum = 0.0;
  for (int j = 0; j < kKeplerOrbits; ++j) {
    auto ts = nholo::start_trajectory<double, 4>(0.0, kepler_start(j, kKeplerOrbits), opt);
    nholo::StepBudget b = nholo::whole_interval(ts);
    nholo::advance_to_method<nholo::Method::dopri5>(KeplerSystem<double>{}, ts, kKeplerEnd, opt, b);
    sum += ts.y[0];
  }
  return sum;
}

double libm_sum(int fn, const double* x, const double* y, int n) {
  double s = 0.0;
  for (int j = 0; j < n; ++j) {
    switch (fn) {
      case 0: s += std::sin(x[j]); break;
      case 1: s += std::exp(x[j]); break;
      case 2: s += std::atan2(x[j], y[j]); break;
      default: s += std::pow(x[j], y[j]); break;
    }
  }
  return s;
}

}  // namespace nholo_bench
