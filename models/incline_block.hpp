// nholo/models/incline_block.hpp — a block sliding on an inclined plane with
// Coulomb friction, a nonideal holonomic constraint (Udwadia (2005) ex. 2;
// docs/physics.md, item 7).
//
// q = (x, y): x horizontal, y up; mass m under gravity:
//   L = m/2 (xd^2 + yd^2) - m g y
// Constraint (position level), eq (32):
//   y - x tan(theta) = 0          A = [-tan theta, 1],  b = 0      (eq 34)
// Coulomb friction as the nonideal vector (Udwadia (2005) eq 36/37; sign as in
// docs/physics.md, item 7, opposing the motion):
//   C = -mu m g cos(theta) sgn(xd) (cos theta, sin theta)
// With s the distance up the slope: sdd = -g sin(theta) - mu g cos(theta) sgn(sd).
// sgn(0) = 0: a block at rest feels no friction (no static-friction model).
#pragma once

#include "../kernels/linalg.hpp"
#include "../kernels/model.hpp"

namespace nholo::models {

struct InclineBlock {
  static constexpr const char* name = "incline_block";
  static constexpr const char* description =
      "block on an inclined plane with Coulomb friction as a nonideal constraint "
      "(Udwadia 2005 ex. 2)";
  static constexpr int n = 2;
  static constexpr int m_position = 1;
  static constexpr int m_velocity = 0;
  static constexpr int m_acceleration = 0;
  // M and F depend on the parameters only (kernels/model.hpp)
  static constexpr bool constant_mass = true;
  static constexpr bool constant_force = true;
  static constexpr int n_params = 4;
  static constexpr const char* coordinates[n] = {"x", "y"};
  static constexpr const char* coordinate_units[n] = {"m", "m"};
  static constexpr const char* constraint_names[1] = {"plane"};
  static constexpr ParamInfo param_info[n_params] = {
      {"mass", 1.0, "kg", "block mass m", positive()},
      {"g", 9.81, "m/s^2", "gravitational acceleration", nonnegative()},
      {"angle", 0.5, "rad", "inclination theta of the plane, 0 < theta < pi/2",
       open_interval(0.0, 1.5707963267948966)},
      {"friction", 0.3, "1", "Coulomb friction coefficient mu", nonnegative()},
  };
  struct Params {
    double mass, g, angle, friction;
  };
  NHOLO_HDI static Params make_params(const double* v) { return Params{v[0], v[1], v[2], v[3]}; }

  // L = T - m g y
  template <class S>
  NHOLO_HDI static S lagrangian(const Params& p, const Vec<S, n>& q, const Vec<S, n>& qd,
                                const S& /*t*/) {
    return 0.5 * p.mass * (qd[0] * qd[0] + qd[1] * qd[1]) - p.mass * p.g * q[1];
  }

  // y - x tan(theta) = 0
  template <class S>
  NHOLO_HDI static Vec<S, 1> position_constraints(const Params& p, const Vec<S, n>& q,
                                                  const S& /*t*/) {
    Vec<S, 1> phi;
    phi[0] = q[1] - tan(p.angle) * q[0];
    return phi;
  }

  // C = -mu m g cos(theta) sgn(xd) (cos theta, sin theta)
  template <class S>
  NHOLO_HDI static Vec<S, n> nonideal_force(const Params& p, const Vec<S, n>& /*q*/,
                                            const Vec<S, n>& qd, const S& /*t*/) {
    const auto k = -p.friction * p.mass * p.g * cos(p.angle) * sgn(qd[0]);  // per lane on lanes
    Vec<S, n> C;
    C[0] = S(k * cos(p.angle));
    C[1] = S(k * sin(p.angle));
    return C;
  }

  // E = T + m g y
  template <class S>
  NHOLO_HDI static S energy(const Params& p, const Vec<S, n>& q, const Vec<S, n>& qd,
                            const S& /*t*/) {
    return 0.5 * p.mass * (qd[0] * qd[0] + qd[1] * qd[1]) + p.mass * p.g * q[1];
  }
};

}  // namespace nholo::models
