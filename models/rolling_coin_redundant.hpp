// nholo/models/rolling_coin_redundant.hpp — the rolling coin (rolling_coin.hpp)
// with a redundant third constraint row: the sum of the two rolling
// conditions. Same Lagrangian, parameters, energy and hand-written M, F (all
// inherited); only the constraint list differs:
//   g1 = xd - R phid sin(theta),  g2 = yd - R phid cos(theta),  g3 = g1 + g2.
// A has rank 2 with three rows: the Udwadia–Kalaba equation (pseudoinverse)
// and the null-space method give the coin's motion, while the saddle-point
// (KKT) matrices of the multiplier and vakonomic formulations are singular
// (Status::singular): the multipliers are not unique.
#pragma once

#include "rolling_coin.hpp"

namespace nholo::models {

struct RollingCoinRedundant : RollingCoin {
  static constexpr const char* name = "rolling_coin_redundant";
  static constexpr const char* description =
      "the rolling coin with a redundant third constraint (the sum of the two rolling "
      "conditions): rank-deficient A";
  static constexpr int m_velocity = 3;
  // the redundant row makes A rank 2 at every state (host: degenerate-state check)
  static constexpr int constraint_rank = 2;
  static constexpr const char* constraint_names[3] = {"roll_x", "roll_y", "roll_sum"};

  // (g1, g2, g1 + g2)
  template <class S>
  NHOLO_HDI static Vec<S, 3> velocity_constraints(const Params& p, const Vec<S, n>& q,
                                                  const Vec<S, n>& qd, const S& t) {
    const Vec<S, 2> g = RollingCoin::velocity_constraints(p, q, qd, t);
    Vec<S, 3> r;
    r[0] = g[0];
    r[1] = g[1];
    r[2] = g[0] + g[1];
    return r;
  }
};

}  // namespace nholo::models
