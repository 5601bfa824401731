// nholo/tests/random_values.hpp — what the case headers of the model and
// formulation tests (tests/model_cases.hpp, tests/formulation_cases.hpp)
// share: the random draws of parameters and states (the knife edge's and the
// integrable constraint's, drawn alike by both), and the largest component
// of a vector.
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

// A consistent state of a knife edge (the skate's and the sleigh's blade,
// models/skate.hpp, models/sleigh.hpp): (x, y) uniform in [-3, 3]^2, the
// heading theta in [-3.1, 3.1], a speed v along the blade and a turning rate
// theta_dot uniform in [-2, 2].
inline void knife_edge_state(Rng& r, V<3>& q, V<3>& qd) {
  q = V<3>{{uni(r, -3.0, 3.0), uni(r, -3.0, 3.0), uni(r, -3.1, 3.1)}};
  const double v = uni(r, -2.0, 2.0), thd = uni(r, -2.0, 2.0);
  qd = V<3>{{v * std::cos(q[2]), v * std::sin(q[2]), thd}};
}

// A consistent state of the integrable constraint
// (models/integrable_constraint.hpp): q uniform in [-2, 2]^2 with the row
// A = [4 q1 + 3 q2^2, 2 q1 q2] kept away from 0 (|A| >= 0.5), qd along A's
// null space with |qd| uniform in [0, 1].
inline void integrable_constraint_state(Rng& r, V<2>& q, V<2>& qd) {
  double a1 = 0.0, a2 = 0.0;
  do {
    q = V<2>{{uni(r, -2.0, 2.0), uni(r, -2.0, 2.0)}};
    a1 = 4.0 * q[0] + 3.0 * q[1] * q[1];
    a2 = 2.0 * q[0] * q[1];
  } while (a1 * a1 + a2 * a2 < 0.25);
  const double w = uni(r, -1.0, 1.0) / std::sqrt(a1 * a1 + a2 * a2);
  qd = V<2>{{w * a2, -w * a1}};
}

}  // namespace nholo_test
