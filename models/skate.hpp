// nholo/models/skate.hpp — Hamel's skate (Udwadia & Wanichanon (2010) sec. 1)
// and, with gravity along an inclined plane, the sleigh of Wang & Gao sec. 4
// (docs/physics.md, items 1, 2).
//
// q = (x, y, theta): (x, y) the contact point B of the blade, x pointing down
// the slope, theta the heading of the blade measured from the x axis. Mass m,
// centre of mass a distance s ahead of B along the blade, I_B the moment of
// inertia about B (I_B > m s^2: I_B = I_cm + m s^2). The unconstrained
// Lagrangian (kinetic energy (1.1) of Udwadia & Wanichanon (2010), potential
// of the centre of mass, whose height is -(x + s cos theta) sin(alpha)):
//   L = m/2 (xd^2 + yd^2) + m s thd (yd cos th - xd sin th) + I_B/2 thd^2
//       + m g (x + s cos th) sin(alpha)
// Knife-edge constraint (velocity level, linear in qd), eq (1.2):
//   yd cos th - xd sin th = 0        A = [-sin th, cos th, 0],
//                                    b = thd (yd sin th + xd cos th)  (eqs 2.4, 2.5)
// slope = 0 is Hamel's skate on level ice; Wang & Gao's potential m g x sin(alpha)
// is the centre of mass's height only for s = 0, the physical one is used here.
// Conflated (Hamel's T+, eq 1.13): the constraint substituted into L, i.e. the
// m s thd (...) term removed; gives the wrong equations (1.14).
#pragma once

#include "../kernels/linalg.hpp"
#include "../kernels/model.hpp"

namespace nholo::models {

struct Skate {
  static constexpr const char* name = "skate";
  static constexpr const char* description =
      "Hamel's skate / sleigh with a knife-edge constraint on an inclined plane "
      "(Udwadia & Wanichanon 2010 sec. 1, Wang & Gao sec. 4)";
  static constexpr int n = 3;
  static constexpr int m_position = 0;
  static constexpr int m_velocity = 1;
  static constexpr int m_acceleration = 0;
  static constexpr int n_params = 5;
  static constexpr const char* coordinates[n] = {"x", "y", "theta"};
  static constexpr const char* coordinate_units[n] = {"m", "m", "rad"};
  static constexpr const char* constraint_names[1] = {"knife_edge"};
  static constexpr ParamInfo param_info[n_params] = {
      {"mass", 1.0, "kg", "skate mass m", positive()},
      {"offset", 0.5, "m", "distance s (= a) of the centre of mass ahead of the contact point B"},
      {"inertia", 1.0, "kg m^2", "moment of inertia I_B about B (must exceed mass * offset^2)",
       positive()},
      {"g", 9.81, "m/s^2", "gravitational acceleration", nonnegative()},
      {"slope", 0.3, "rad", "inclination alpha of the plane (0: Hamel's level ice)", inclination()},
  };
  struct Params {
    double mass, offset, inertia, g, slope;
  };
  NHOLO_HDI static Params make_params(const double* v) {
    return Params{v[0], v[1], v[2], v[3], v[4]};
  }
  // the inertia about the contact point includes m s^2 (parallel axes): the
  // mass matrix is positive definite only if I_B > m s^2
  static const char* check_params(const Params& p) {
    return p.inertia > p.mass * p.offset * p.offset
               ? nullptr
               : "inertia (I_B, about the contact point) must exceed mass * offset^2";
  }

  // L = T + m g (x + s cos th) sin(alpha)
  template <class S>
  NHOLO_HDI static S lagrangian(const Params& p, const Vec<S, n>& q, const Vec<S, n>& qd,
                                const S& /*t*/) {
    const double m = p.mass, s = p.offset;
    return 0.5 * m * (qd[0] * qd[0] + qd[1] * qd[1]) +
           m * s * qd[2] * (qd[1] * cos(q[2]) - qd[0] * sin(q[2])) +
           0.5 * p.inertia * qd[2] * qd[2] + m * p.g * sin(p.slope) * (q[0] + s * cos(q[2]));
  }

  // knife edge: the velocity of B is along the blade
  template <class S>
  NHOLO_HDI static Vec<S, 1> velocity_constraints(const Params& /*p*/, const Vec<S, n>& q,
                                                  const Vec<S, n>& qd, const S& /*t*/) {
    Vec<S, 1> g;
    g[0] = qd[1] * cos(q[2]) - qd[0] * sin(q[2]);
    return g;
  }

  // Embedded form of the knife edge (formulation embedded,
  // kernels/formulations/embedded.hpp; Wang & Gao eq 33): theta = atan2(yd,
  // xd) modulo pi, the blade along the line of motion (forward or backward);
  // no derivative at rest, which the formulation's rest chart passes.
  static constexpr int m_embedded = 1;
  NHOLO_HDI static constexpr int embedded_coordinate(int /*l*/) { return 2; }  // theta
  NHOLO_HDI static constexpr double embedded_period(int /*l*/) {
    return 3.141592653589793;
  }  // arctan: pi
  template <class S>
  NHOLO_HDI static Vec<S, m_embedded> embedded_constraints(const Params& /*p*/,
                                                           const Vec<S, n>& /*q*/,
                                                           const Vec<S, n>& qd, const S& /*t*/) {
    Vec<S, m_embedded> phi;
    phi[0] = atan2(qd[1], qd[0]);
    return phi;
  }

  // Hamel's L+ = m/2 (xd^2 + yd^2) + I_B/2 thd^2 + m g (x + s cos th) sin(alpha)
  template <class S>
  NHOLO_HDI static S conflated_lagrangian(const Params& p, const Vec<S, n>& q, const Vec<S, n>& qd,
                                          const S& /*t*/) {
    const double m = p.mass, s = p.offset;
    return 0.5 * m * (qd[0] * qd[0] + qd[1] * qd[1]) + 0.5 * p.inertia * qd[2] * qd[2] +
           m * p.g * sin(p.slope) * (q[0] + s * cos(q[2]));
  }

  // E = T - m g (x + s cos th) sin(alpha)
  template <class S>
  NHOLO_HDI static S energy(const Params& p, const Vec<S, n>& q, const Vec<S, n>& qd, const S& t) {
    return lagrangian(p, q, qd, t) -
           2.0 * p.mass * p.g * sin(p.slope) * (q[0] + p.offset * cos(q[2]));
  }
};

}  // namespace nholo::models
