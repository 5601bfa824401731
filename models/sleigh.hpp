// nholo/models/sleigh.hpp — the sleigh on an inclined plane of Wang & Gao,
// "Hamilton's principle with constraints embedded in the Lagrangian", sec. 4
// (Neimark & Fufaev's example), with its constraint both as a nonholonomic
// (knife-edge) constraint and embedded, theta = atan2(yd, xd) (docs/physics.md,
// items 2 and 4; docs/formulations.md, "Embedded constraints").
//
// q = (x, y, theta): (x, y) the contact point of the runner, x pointing down
// the slope, theta the heading of the runner from the x axis. The centre of
// mass is a distance a ahead of the contact point, on the runner. Parameters
// as in the paper's eq (34): mass m, and J the squared radius of gyration
// ABOUT THE CONTACT POINT (units m^2): the moment of inertia about the
// contact point is I_B = m J, about the centre of mass I_C = m (J - a^2)
// (parallel axes), so J > a^2 is required.
//
//   L = m/2 [xd^2 + yd^2 + J thd^2 + 2 a thd (yd cos th - xd sin th)]
//       + m g sin(alpha) (x + (1 - w) a cos th)
//
// The potential is -m g times the height of the centre of mass, -(x + a cos th)
// sin(alpha), for w = 0 (default, physical); w = 1 gives the paper's printed
// eq (34), m g x sin(alpha), the height of the contact point (the centre of
// mass only for a = 0). Parameter "paper_potential" = w in [0, 1].
//
// Nonholonomic constraint (the formulations udwadia_kalaba, lagrange_multiplier,
// null_space, vakonomic):      yd cos th - xd sin th = 0          (eq 33)
// Embedded constraint (formulation embedded, Wang & Gao eq 20 with k = 1):
//   theta = Phi(xd, yd) = arctan(yd / xd)                         (eq 33)
// i.e. the heading is along the line of motion, forward or backward: Phi
// is atan2(yd, xd) and the residual theta - Phi is taken modulo pi (sliding
// backwards, theta = atan2 + pi, is on the constraint). Phi has no
// derivative at rest (v = 0); the embedded formulation carries the motion
// through rest in its rest chart (kernels/formulations/embedded_rest_chart.hpp).
//
// With w = 1 the substituted Lagrangian Theta (eq 36) does not contain a: the
// embedded motions do not depend on a (for fixed heading acceleration); with
// the physical potential they do, through m g a sin(alpha) cos(theta).
#pragma once

#include "../kernels/linalg.hpp"
#include "../kernels/model.hpp"

namespace nholo::models {

struct Sleigh {
  static constexpr const char* name = "sleigh";
  static constexpr const char* description =
      "Wang & Gao's sleigh on an inclined plane (sec. 4): knife-edge constraint, or embedded as "
      "theta = atan2(yd, xd)";
  static constexpr int n = 3;
  static constexpr int m_position = 0;
  static constexpr int m_velocity = 1;
  static constexpr int m_acceleration = 0;
  static constexpr int n_params = 6;
  static constexpr const char* coordinates[n] = {"x", "y", "theta"};
  static constexpr const char* coordinate_units[n] = {"m", "m", "rad"};
  static constexpr const char* constraint_names[1] = {"knife_edge"};
  static constexpr ParamInfo param_info[n_params] = {
      {"mass", 1.0, "kg", "sleigh mass m", positive()},
      {"J", 0.5, "m^2",
       "squared radius of gyration about the contact point (inertia about it m J, about the "
       "centre of mass m (J - a^2); must exceed a^2)",
       positive()},
      {"a", 0.5, "m", "distance of the centre of mass ahead of the contact point", nonnegative()},
      {"g", 9.81, "m/s^2", "gravitational acceleration", nonnegative()},
      {"slope", 0.3, "rad", "inclination alpha of the plane (0: level)", inclination()},
      {"paper_potential", 0.0, "1",
       "weight w of Wang & Gao's printed potential m g x sin(alpha): 0 = height of the centre of "
       "mass (physical), 1 = height of the contact point (eq 34 as printed)",
       closed(0.0, 1.0)},
  };
  struct Params {
    double mass, J, a, g, slope, paper_potential;
  };
  NHOLO_HDI static Params make_params(const double* v) {
    return Params{v[0], v[1], v[2], v[3], v[4], v[5]};
  }
  // the inertia about the centre of mass, m (J - a^2), must be positive
  static const char* check_params(const Params& p) {
    return p.J > p.a * p.a ? nullptr
                           : "J (squared radius of gyration about the contact point) must exceed "
                             "a^2 (the inertia about the centre of mass is m (J - a^2))";
  }

  // height term: x + (1 - w) a cos(theta)
  template <class S>
  NHOLO_HDI static S fall(const Params& p, const Vec<S, n>& q) {
    return q[0] + (1.0 - p.paper_potential) * p.a * cos(q[2]);
  }

  template <class S>
  NHOLO_HDI static S lagrangian(const Params& p, const Vec<S, n>& q, const Vec<S, n>& qd,
                                const S& /*t*/) {
    const double m = p.mass;
    return 0.5 * m *
               (qd[0] * qd[0] + qd[1] * qd[1] + p.J * qd[2] * qd[2] +
                2.0 * p.a * qd[2] * (qd[1] * cos(q[2]) - qd[0] * sin(q[2]))) +
           m * p.g * sin(p.slope) * fall(p, q);
  }

  // knife edge: the contact point moves along the runner
  template <class S>
  NHOLO_HDI static Vec<S, 1> velocity_constraints(const Params& /*p*/, const Vec<S, n>& q,
                                                  const Vec<S, n>& qd, const S& /*t*/) {
    Vec<S, 1> g;
    g[0] = qd[1] * cos(q[2]) - qd[0] * sin(q[2]);
    return g;
  }

  // ---- embedded constraint (kernels/formulations/embedded.hpp): q_dep = phi(q_ind, qd_ind, t)
  static constexpr int m_embedded = 1;
  NHOLO_HDI static constexpr int embedded_coordinate(int /*l*/) { return 2; }  // theta
  NHOLO_HDI static constexpr double embedded_period(int /*l*/) {
    return 3.141592653589793;
  }  // arctan: pi
  // theta = atan2(yd, xd) (modulo pi): reads xd, yd only
  template <class S>
  NHOLO_HDI static Vec<S, m_embedded> embedded_constraints(const Params& /*p*/,
                                                           const Vec<S, n>& /*q*/,
                                                           const Vec<S, n>& qd, const S& /*t*/) {
    Vec<S, m_embedded> phi;
    phi[0] = atan2(qd[1], qd[0]);
    return phi;
  }

  template <class S>
  NHOLO_HDI static S energy(const Params& p, const Vec<S, n>& q, const Vec<S, n>& qd, const S& t) {
    return lagrangian(p, q, qd, t) - 2.0 * p.mass * p.g * sin(p.slope) * fall(p, q);
  }
};

}  // namespace nholo::models
