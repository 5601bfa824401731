// nholo/models/rolling_coin.hpp — a coin (thin disk) rolling without slipping
// on an inclined plane (Lemos (2022) sec. IV; Flannery (2011) App. B;
// docs/physics.md, item 10).
//
// q = (x, y, phi, theta): contact point (x horizontal, y down the slope), phi
// the rolling angle, theta the heading. Vertical disk of mass m, radius R:
//   L = m/2 (xd^2 + yd^2) + m R^2/4 phid^2 + m R^2/8 thd^2 + m g y sin(alpha)
// Rolling without slipping (velocity level, linear in qd):
//   xd - R phid sin(theta) = 0,   yd - R phid cos(theta) = 0
#pragma once

#include "../kernels/linalg.hpp"
#include "../kernels/model.hpp"

namespace nholo::models {

struct RollingCoin {
  static constexpr const char* name = "rolling_coin";
  static constexpr const char* description =
      "vertical coin rolling without slipping on an inclined plane "
      "(Lemos 2022 sec. IV, Flannery 2011 App. B)";
  static constexpr int n = 4;
  static constexpr int m_position = 0;
  static constexpr int m_velocity = 2;
  static constexpr int m_acceleration = 0;
  // L = T(qd) + U(q): no term couples the rates with q or t (kernels/model.hpp)
  static constexpr bool separable_lagrangian = true;
  // M = diag(m, m, m R^2/2, m R^2/4) and F = (0, m g sin(alpha), 0, 0) depend on the
  // parameters only: factored and solved once per trajectory (kernels/model.hpp)
  static constexpr bool constant_mass = true;
  static constexpr bool constant_force = true;
  static constexpr int n_params = 4;
  static constexpr const char* coordinates[n] = {"x", "y", "phi", "theta"};
  static constexpr const char* coordinate_units[n] = {"m", "m", "rad", "rad"};
  static constexpr const char* constraint_names[2] = {"roll_x", "roll_y"};
  static constexpr ParamInfo param_info[] = {
      {"mass", 1.0, "kg", "coin mass m", positive()},
      {"radius", 1.0, "m", "coin radius R", positive()},
      {"g", 9.81, "m/s^2", "gravitational acceleration", nonnegative()},
      {"slope", 0.3, "rad", "inclination alpha of the plane", inclination()},
  };
  struct Params {
    double mass, radius, g, slope;
  };
  NHOLO_HDI static Params make_params(const double* v) { return Params{v[0], v[1], v[2], v[3]}; }

  // L = T + m g y sin(alpha)  (y points down the slope)
  template <class S>
  NHOLO_HDI static S lagrangian(const Params& p, const Vec<S, n>& q, const Vec<S, n>& qd,
                                const S& /*t*/) {
    const double m = p.mass, R = p.radius;
    return 0.5 * m * (qd[0] * qd[0] + qd[1] * qd[1]) + 0.25 * m * R * R * qd[2] * qd[2] +
           0.125 * m * R * R * qd[3] * qd[3] + m * p.g * sin(p.slope) * q[1];
  }

  // rolling without slipping
  template <class S>
  NHOLO_HDI static Vec<S, 2> velocity_constraints(const Params& p, const Vec<S, n>& q,
                                                  const Vec<S, n>& qd, const S& /*t*/) {
    Vec<S, 2> g;
    g[0] = qd[0] - p.radius * qd[2] * sin(q[3]);
    g[1] = qd[1] - p.radius * qd[2] * cos(q[3]);
    return g;
  }

  // E = T - m g y sin(alpha)
  template <class S>
  NHOLO_HDI static S energy(const Params& p, const Vec<S, n>& q, const Vec<S, n>& qd,
                            const S& t) {
    return lagrangian(p, q, qd, t) - 2.0 * p.mass * p.g * sin(p.slope) * q[1];
  }

  // The coin's "bounded drift" as an ensemble statistic: the least-squares
  // velocity of x(t) against the closed form g sin(alpha) / (3 theta_dot) of
  // the nonholonomic motion (Lemos 2022, eqs. 31-40), and the band of y(t).
  struct DriftStatistic {
    static constexpr int drift_coordinate = 0;  // x: drifts sideways
    static constexpr int band_coordinate = 1;   // y: stays in a band down the slope
    static constexpr const char* prediction_doc =
        "g sin(slope) / (3 theta_dot)  (Lemos 2022, nonholonomic rolling coin, eqs. 31-40)";
    NHOLO_HDI static double prediction(const Params& p, const double* /*q0*/, const double* qd0) {
      return p.g * sin(p.slope) / (3.0 * qd0[3]);
    }
  };

  // Hand-written M = diag(m, m, m R^2/2, m R^2/4), F = (0, m g sin(alpha), 0, 0);
  // tested equal to the AD result, used for speed.
  template <class S>
  NHOLO_HDI static void hand_dynamics(const Params& p, const Vec<S, n>& /*q*/,
                                      const Vec<S, n>& /*qd*/, const S& /*t*/, Mat<S, n, n>& M,
                                      Vec<S, n>& F) {
    const double m = p.mass, R = p.radius;
    M = Mat<S, n, n>::zero();
    M(0, 0) = S(m);
    M(1, 1) = S(m);
    M(2, 2) = S(0.5 * m * R * R);
    M(3, 3) = S(0.25 * m * R * R);
    F = Vec<S, n>::zero();
    F[1] = S(m * p.g * sin(p.slope));
  }
};

}  // namespace nholo::models
