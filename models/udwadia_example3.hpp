// nholo/models/udwadia_example3.hpp — example 3 of Udwadia & Wanichanon (2010)
// (sec. 3.3; docs/physics.md, item 5): a constraint that ties a coordinate to
// a product of velocities, and the conflated Lagrangian L+ that substitutes it
// into the potential.
//
// q = (x, y, z), unit mass, potential x^2/2:
//   L = (xd^2 + yd^2 + zd^2)/2 - x^2/2                              (eq 3.33)
// Constraint (velocity level, nonlinear in qd), x = c yd zd (eq 3.35), stored
// as c yd zd - x = 0 so that
//   A = [0, c zd, c yd],  b = xd                                    (eq 3.36)
// Conflated (eq 3.38): L+ = T - (c yd zd)^2/2, whose mass matrix
//   [[1, 0, 0], [0, 1 - c^2 zd^2, -2 c^2 yd zd], [0, -2 c^2 yd zd, 1 - c^2 yd^2]]
// (eq 3.39) is positive definite only while c^2 (yd^2 + zd^2) + 3 c^4 yd^2 zd^2 < 1
// (= 1 - c^2 (3 x^2 + yd^2 + zd^2) > 0 on the constraint; the paper prints xd^2
// for x^2); elsewhere it is indefinite or singular.
#pragma once

#include "../kernels/linalg.hpp"
#include "../kernels/model.hpp"

namespace nholo::models {

struct UdwadiaExample3 {
  static constexpr const char* name = "udwadia_example3";
  static constexpr const char* description =
      "particle in the potential x^2/2 with x = c yd zd, correct and conflated L+ "
      "(Udwadia & Wanichanon 2010 sec. 3.3)";
  static constexpr int n = 3;
  static constexpr int m_position = 0;
  static constexpr int m_velocity = 1;
  static constexpr int m_acceleration = 0;
  // M = I (kernels/model.hpp); F = -x is not constant
  static constexpr bool constant_mass = true;
  static constexpr int n_params = 1;
  static constexpr const char* coordinates[n] = {"x", "y", "z"};
  static constexpr const char* coordinate_units[n] = {"m", "m", "m"};
  static constexpr const char* constraint_names[1] = {"x_eq_cydzd"};
  static constexpr ParamInfo param_info[n_params] = {
      {"c", 1.0, "s^2/m", "constraint constant c in x = c yd zd (c != 0)"},
  };
  struct Params {
    double c;
  };
  NHOLO_HDI static Params make_params(const double* v) { return Params{v[0]}; }
  // c = 0 turns the constraint x = c yd zd into x = 0 (holonomic, not the example)
  static const char* check_params(const Params& p) {
    return p.c != 0.0 ? nullptr : "c must be nonzero (x = c yd zd)";
  }

  // L = T - x^2/2
  template <class S>
  NHOLO_HDI static S lagrangian(const Params& /*p*/, const Vec<S, n>& q, const Vec<S, n>& qd,
                                const S& /*t*/) {
    return 0.5 * (qd[0] * qd[0] + qd[1] * qd[1] + qd[2] * qd[2]) - 0.5 * q[0] * q[0];
  }

  // c yd zd - x = 0
  template <class S>
  NHOLO_HDI static Vec<S, 1> velocity_constraints(const Params& p, const Vec<S, n>& q,
                                                  const Vec<S, n>& qd, const S& /*t*/) {
    Vec<S, 1> g;
    g[0] = p.c * qd[1] * qd[2] - q[0];
    return g;
  }

  // L+ = T - (c yd zd)^2/2, eq (3.38)
  template <class S>
  NHOLO_HDI static S conflated_lagrangian(const Params& p, const Vec<S, n>& /*q*/,
                                          const Vec<S, n>& qd, const S& /*t*/) {
    const S cyz = p.c * qd[1] * qd[2];
    return 0.5 * (qd[0] * qd[0] + qd[1] * qd[1] + qd[2] * qd[2]) - 0.5 * cyz * cyz;
  }

  // E = T + x^2/2
  template <class S>
  NHOLO_HDI static S energy(const Params& /*p*/, const Vec<S, n>& q, const Vec<S, n>& qd,
                            const S& /*t*/) {
    return 0.5 * (qd[0] * qd[0] + qd[1] * qd[1] + qd[2] * qd[2]) + 0.5 * q[0] * q[0];
  }
};

}  // namespace nholo::models
