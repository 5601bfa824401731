// nholo/tests/random_values.hpp — what the case headers of the model and
// formulation tests (tests/model_cases.hpp, tests/formulation_cases.hpp)
// share: the random draws of parameters and states, and the largest
// component of a vector.
#pragma once

#include <algorithm>
#include <cmath>
#include <random>

#include "kernels/linalg.hpp"

namespace nholo_test {

using Rng = std::mt19937_64;

inline double uni(Rng& rng, double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(rng);
}
// uniform in [lo, hi] with a random sign
inline double signed_uni(Rng& rng, double lo, double hi) {
  const double v = uni(rng, lo, hi);
  return uni(rng, 0.0, 1.0) < 0.5 ? -v : v;
}

template <int N>
using V = nholo::Vec<double, N>;

template <int N>
double max_abs(const V<N>& v) {
  double s = 0.0;
  for (int i = 0; i < N; ++i) s = std::max(s, std::abs(v[i]));
  return s;
}

}  // namespace nholo_test
