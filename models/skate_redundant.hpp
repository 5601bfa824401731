// nholo/models/skate_redundant.hpp — Hamel's skate / the sleigh (skate.hpp) with
// its knife-edge constraint listed twice, the second copy scaled by 2:
//   g1 = yd cos th - xd sin th,   g2 = 2 g1.
// Same Lagrangian, parameters, energy and conflated Lagrangian (inherited).
// A has rank 1 with two rows: Udwadia–Kalaba and the null-space method give
// the skate's motion; the multiplier and vakonomic saddle-point matrices are
// singular (Status::singular).
#pragma once

#include "skate.hpp"

namespace nholo::models {

struct SkateRedundant : Skate {
  static constexpr const char* name = "skate_redundant";
  static constexpr const char* description =
      "Hamel's skate / sleigh with its knife-edge constraint listed twice (second scaled by 2): "
      "rank-deficient A";
  static constexpr int m_velocity = 2;
  // the redundant row makes A rank 1 at every state (host: degenerate-state check)
  static constexpr int constraint_rank = 1;
  static constexpr const char* constraint_names[2] = {"knife_edge", "knife_edge_x2"};
  // the skate's embedded constraint is one row, not two: no embedded formulation
  static constexpr int m_embedded = 0;

  // (g, 2 g)
  template <class S>
  NHOLO_HDI static Vec<S, 2> velocity_constraints(const Params& p, const Vec<S, n>& q,
                                                  const Vec<S, n>& qd, const S& t) {
    const Vec<S, 1> g = Skate::velocity_constraints(p, q, qd, t);
    Vec<S, 2> r;
    r[0] = g[0];
    r[1] = 2.0 * g[0];
    return r;
  }
};

}  // namespace nholo::models
