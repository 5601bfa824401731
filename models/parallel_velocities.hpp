// nholo/models/parallel_velocities.hpp — two planar particles whose velocities
// are kept parallel, a homogeneous quadratic nonholonomic constraint
// (Flannery (2011) ex. 1, eq 3.8; docs/physics.md, item 8).
//
// q = (x1, y1, x2, y2), masses m1, m2, no impressed force:
//   L = m1/2 (xd1^2 + yd1^2) + m2/2 (xd2^2 + yd2^2)
// Constraint (velocity level, quadratic in qd):
//   xd1 yd2 - xd2 yd1 = 0         A = [yd2, -xd2, -yd1, xd1],  b = 0
// With parallel initial velocities the motion is free: qdd = 0, no constraint
// force (multiplier 0).
#pragma once

#include "../kernels/linalg.hpp"
#include "../kernels/model.hpp"

namespace nholo::models {

struct ParallelVelocities {
  static constexpr const char* name = "parallel_velocities";
  static constexpr const char* description =
      "two planar particles with parallel velocities, xd1 yd2 - xd2 yd1 = 0 "
      "(Flannery 2011 ex. 1)";
  static constexpr int n = 4;
  static constexpr int m_position = 0;
  static constexpr int m_velocity = 1;
  static constexpr int m_acceleration = 0;
  // M and F depend on the parameters only (kernels/model.hpp)
  static constexpr bool constant_mass = true;
  static constexpr bool constant_force = true;
  static constexpr int n_params = 2;
  static constexpr const char* coordinates[n] = {"x1", "y1", "x2", "y2"};
  static constexpr const char* coordinate_units[n] = {"m", "m", "m", "m"};
  static constexpr const char* constraint_names[1] = {"parallel"};
  static constexpr ParamInfo param_info[n_params] = {
      {"mass1", 1.0, "kg", "mass of particle 1", positive()},
      {"mass2", 2.0, "kg", "mass of particle 2", positive()},
  };
  struct Params {
    double mass1, mass2;
  };
  NHOLO_HDI static Params make_params(const double* v) { return Params{v[0], v[1]}; }

  // L = T
  template <class S>
  NHOLO_HDI static S lagrangian(const Params& p, const Vec<S, n>& /*q*/, const Vec<S, n>& qd,
                                const S& /*t*/) {
    return 0.5 * p.mass1 * (qd[0] * qd[0] + qd[1] * qd[1]) +
           0.5 * p.mass2 * (qd[2] * qd[2] + qd[3] * qd[3]);
  }

  // xd1 yd2 - xd2 yd1 = 0
  template <class S>
  NHOLO_HDI static Vec<S, 1> velocity_constraints(const Params& /*p*/, const Vec<S, n>& /*q*/,
                                                  const Vec<S, n>& qd, const S& /*t*/) {
    Vec<S, 1> g;
    g[0] = qd[0] * qd[3] - qd[2] * qd[1];
    return g;
  }

  // E = T
  template <class S>
  NHOLO_HDI static S energy(const Params& p, const Vec<S, n>& q, const Vec<S, n>& qd, const S& t) {
    return lagrangian(p, q, qd, t);
  }
};

}  // namespace nholo::models
