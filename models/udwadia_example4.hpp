// nholo/models/udwadia_example4.hpp — example 4 of Udwadia & Wanichanon (2010)
// (sec. 3.4; docs/physics.md, item 6): a holonomic constraint, for which
// substituting the constraint into the Lagrangian is a change of coordinates
// and gives the correct motion.
//
// q = (x, y, z), unit mass, constant impressed force (Fx, Fy, Fz) written as the
// potential V = -(Fx x + Fy y + Fz z):
//   L = (xd^2 + yd^2 + zd^2)/2 + Fx x + Fy y + Fz z
// Constraint (position level), eq (3.49):
//   y - z^2/2 = 0                A = [0, 1, -z],  b = zd^2        (eq 3.50)
// Conflated (eqs 3.56, 3.64, 3.66): yd = z zd substituted into T,
//   T+ = xd^2/2 + (1 + z^2) zd^2/2,
// the impressed force kept as it is (the F of eq 3.66, Fy included), so
//   M = diag(1, 0, 1 + z^2),  F = (Fx, Fy, Fz - z zd^2);
// M is singular and rank [M | A^T] = 3: eq (2.7) reproduces the correct (3.51).
#pragma once

#include "../kernels/linalg.hpp"
#include "../kernels/model.hpp"

namespace nholo::models {

struct UdwadiaExample4 {
  static constexpr const char* name = "udwadia_example4";
  static constexpr const char* description =
      "particle on the parabolic cylinder y = z^2/2 under a constant force; conflated = correct "
      "(Udwadia & Wanichanon 2010 sec. 3.4)";
  static constexpr int n = 3;
  static constexpr int m_position = 1;
  static constexpr int m_velocity = 0;
  static constexpr int m_acceleration = 0;
  // M and F depend on the parameters only (kernels/model.hpp)
  static constexpr bool constant_mass = true;
  static constexpr bool constant_force = true;
  static constexpr int n_params = 3;
  static constexpr const char* coordinates[n] = {"x", "y", "z"};
  static constexpr const char* coordinate_units[n] = {"m", "m", "m"};
  static constexpr const char* constraint_names[1] = {"parabola"};
  static constexpr ParamInfo param_info[n_params] = {
      {"force_x", 0.0, "N", "constant impressed force, x component"},
      {"force_y", -9.81, "N", "constant impressed force, y component"},
      {"force_z", 0.0, "N", "constant impressed force, z component"},
  };
  struct Params {
    double force_x, force_y, force_z;
  };
  NHOLO_HDI static Params make_params(const double* v) { return Params{v[0], v[1], v[2]}; }

  // L = T + F . q
  template <class S>
  NHOLO_HDI static S lagrangian(const Params& p, const Vec<S, n>& q, const Vec<S, n>& qd,
                                const S& /*t*/) {
    return 0.5 * (qd[0] * qd[0] + qd[1] * qd[1] + qd[2] * qd[2]) + p.force_x * q[0] +
           p.force_y * q[1] + p.force_z * q[2];
  }

  // y - z^2/2 = 0
  template <class S>
  NHOLO_HDI static Vec<S, 1> position_constraints(const Params& /*p*/, const Vec<S, n>& q,
                                                  const S& /*t*/) {
    Vec<S, 1> phi;
    phi[0] = q[1] - 0.5 * q[2] * q[2];
    return phi;
  }

  // T+ = xd^2/2 + (1 + z^2) zd^2/2 (eq 3.56) + F . q
  template <class S>
  NHOLO_HDI static S conflated_lagrangian(const Params& p, const Vec<S, n>& q, const Vec<S, n>& qd,
                                          const S& /*t*/) {
    return 0.5 * qd[0] * qd[0] + 0.5 * (1.0 + q[2] * q[2]) * qd[2] * qd[2] + p.force_x * q[0] +
           p.force_y * q[1] + p.force_z * q[2];
  }

  // E = T - F . q
  template <class S>
  NHOLO_HDI static S energy(const Params& p, const Vec<S, n>& q, const Vec<S, n>& qd,
                            const S& /*t*/) {
    return 0.5 * (qd[0] * qd[0] + qd[1] * qd[1] + qd[2] * qd[2]) - p.force_x * q[0] -
           p.force_y * q[1] - p.force_z * q[2];
  }
};

}  // namespace nholo::models
