// nholo/models/appell.hpp — Appell's particle: a nonholonomic constraint
// quadratic in the velocities, optionally nonideal (Udwadia & Wanichanon (2010)
// ex. 1, Udwadia (2005) ex. 1; docs/physics.md, item 3).
//
// q = (x, y, z), unit mass, a constant impressed force (Fx, Fy, Fz) written as
// the potential V = -(Fx x + Fy y + Fz z) in the Lagrangian:
//   L = (xd^2 + yd^2 + zd^2)/2 + Fx x + Fy y + Fz z
// Constraint (velocity level, nonlinear in qd), Udwadia (2005):
//   xd^2 + yd^2 - zd^2 = 2 alpha g(t),
// stored halved, (xd^2 + yd^2 - zd^2)/2 - alpha g(t) = 0, so that
//   A = [xd, yd, -zd],  b = alpha gdot(t)             (Udwadia (2005) eq 28)
// alpha = 0 is Appell's (and Udwadia & Wanichanon's) constraint zd^2 = xd^2 + yd^2.
// Udwadia (2005) leaves g(t) "a given, known function of time"; this model uses the
// smooth
//   g(t) = g_amplitude sin(g_frequency t),   gdot = g_amplitude g_frequency cos(g_frequency t).
// Nonideal constraint (Udwadia (2005) eq 27): the constraint force does the work
// v^T C with C = -drag |u| (xd, yd, zd), u the speed (drag = the paper's a0);
// drag = 0 makes the constraint ideal.
// Conflated (Udwadia & Wanichanon (2010) eq 3.8): zd^2 substituted from the
// constraint (alpha = 0) gives T+ = xd^2 + yd^2 with the singular mass matrix
// diag(2, 2, 0) (eq 3.14);
// the same impressed force is kept. The fundamental equation in its
// singular-mass form (eq 2.7) then gives the wrong (3.11)-(3.13).
// At rest (u = 0) A = 0: the constraint row vanishes and the pseudoinverse
// returns the unconstrained motion.
#pragma once

#include "../kernels/linalg.hpp"
#include "../kernels/model.hpp"

namespace nholo::models {

struct Appell {
  static constexpr const char* name = "appell";
  static constexpr const char* description =
      "Appell's particle, xd^2 + yd^2 - zd^2 = 2 alpha g(t), with optional velocity-squared "
      "constraint drag (Udwadia & Wanichanon 2010 ex. 1, Udwadia 2005 ex. 1)";
  static constexpr int n = 3;
  static constexpr int m_position = 0;
  static constexpr int m_velocity = 1;
  static constexpr int m_acceleration = 0;
  // L = T(qd) + U(q): no term couples the rates with q or t (kernels/model.hpp)
  static constexpr bool separable_lagrangian = true;
  // M = I and F = (Fx, Fy, Fz): constant, cached per trajectory (kernels/model.hpp);
  // the nonideal C is evaluated every time
  static constexpr bool constant_mass = true;
  static constexpr bool constant_force = true;
  static constexpr int n_params = 7;
  static constexpr const char* coordinates[n] = {"x", "y", "z"};
  static constexpr const char* coordinate_units[n] = {"m", "m", "m"};
  static constexpr const char* constraint_names[1] = {"appell"};
  static constexpr ParamInfo param_info[n_params] = {
      {"alpha", 0.0, "m^2/s^2", "constraint right-hand side scale: xd^2+yd^2-zd^2 = 2 alpha g(t)"},
      {"drag", 0.0, "1/m", "a0: nonideal constraint force C = -a0 |u| (xd, yd, zd)", nonnegative()},
      {"force_x", 0.0, "N", "constant impressed force, x component"},
      {"force_y", 0.0, "N", "constant impressed force, y component"},
      {"force_z", -9.81, "N", "constant impressed force, z component"},
      {"g_amplitude", 1.0, "1", "g(t) = g_amplitude sin(g_frequency t)"},
      {"g_frequency", 1.0, "1/s", "angular frequency of g(t)"},
  };
  struct Params {
    double alpha, drag, force_x, force_y, force_z, g_amplitude, g_frequency;
  };
  NHOLO_HDI static Params make_params(const double* v) {
    return Params{v[0], v[1], v[2], v[3], v[4], v[5], v[6]};
  }

  // g(t) of the constraint
  template <class S>
  NHOLO_HDI static S g_of_t(const Params& p, const S& t) {
    return p.g_amplitude * sin(p.g_frequency * t);
  }

  // L = T + F . q
  template <class S>
  NHOLO_HDI static S lagrangian(const Params& p, const Vec<S, n>& q, const Vec<S, n>& qd,
                                const S& /*t*/) {
    return 0.5 * (qd[0] * qd[0] + qd[1] * qd[1] + qd[2] * qd[2]) + p.force_x * q[0] +
           p.force_y * q[1] + p.force_z * q[2];
  }

  // (xd^2 + yd^2 - zd^2)/2 - alpha g(t) = 0
  template <class S>
  NHOLO_HDI static Vec<S, 1> velocity_constraints(const Params& p, const Vec<S, n>& /*q*/,
                                                  const Vec<S, n>& qd, const S& t) {
    Vec<S, 1> g;
    g[0] = 0.5 * (qd[0] * qd[0] + qd[1] * qd[1] - qd[2] * qd[2]) - p.alpha * g_of_t(p, t);
    return g;
  }

  // C = -drag |u| qd  (zero at rest)
  template <class S>
  NHOLO_HDI static Vec<S, n> nonideal_force(const Params& p, const Vec<S, n>& /*q*/,
                                            const Vec<S, n>& qd, const S& /*t*/) {
    const S u2 = qd[0] * qd[0] + qd[1] * qd[1] + qd[2] * qd[2];
    const auto moving = value_of(u2) > 0.0;  // a bool, or a mask on SIMD lanes
    const S k = -p.drag * sqrt(u2);
    Vec<S, n> C;
    for (int i = 0; i < n; ++i) C[i] = select(moving, S(k * qd[i]), S(0.0));
    return C;
  }

  // Udwadia & Wanichanon's T+ = xd^2 + yd^2 (eq 3.8), same impressed force
  template <class S>
  NHOLO_HDI static S conflated_lagrangian(const Params& p, const Vec<S, n>& q, const Vec<S, n>& qd,
                                          const S& /*t*/) {
    return qd[0] * qd[0] + qd[1] * qd[1] + p.force_x * q[0] + p.force_y * q[1] + p.force_z * q[2];
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
