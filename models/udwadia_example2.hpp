// nholo/models/udwadia_example2.hpp — example 2 of Udwadia & Wanichanon (2010)
// (sec. 3.2; docs/physics.md, item 4): a free particle under a linear
// nonholonomic constraint, and the partly conflated kinetic energy T+(alpha).
//
// q = (x, y, z), unit mass, no impressed force:
//   L = T = (xd^2 + yd^2 + zd^2)/2
// Constraint (velocity level, linear in qd), eq (3.17):
//   yd - c z xd = 0             A = [-c z, 1, 0],  b = c xd zd      (eq 3.19)
// Conflated (eq 3.22): the fraction alpha of the yd^2/2 term replaced through
// the constraint,
//   T+(alpha) = xd^2/2 + alpha (c z xd)^2/2 + (1 - alpha) yd^2/2 + zd^2/2,
// M = diag(1 + c^2 alpha z^2, 1 - alpha, 1) (eq 3.23). alpha = 0 is the
// correct T; 0 < alpha < 1 gives the wrong (3.25); alpha = 1 makes M singular
// (eq 2.7 then gives (3.32) at alpha = 1).
#pragma once

#include "../kernels/linalg.hpp"
#include "../kernels/model.hpp"

namespace nholo::models {

struct UdwadiaExample2 {
  static constexpr const char* name = "udwadia_example2";
  static constexpr const char* description =
      "free particle with yd = c z xd, correct and partly conflated T+(alpha) "
      "(Udwadia & Wanichanon 2010 sec. 3.2)";
  static constexpr int n = 3;
  static constexpr int m_position = 0;
  static constexpr int m_velocity = 1;
  static constexpr int m_acceleration = 0;
  // M and F depend on the parameters only (kernels/model.hpp)
  static constexpr bool constant_mass = true;
  static constexpr bool constant_force = true;
  static constexpr int n_params = 2;
  static constexpr const char* coordinates[n] = {"x", "y", "z"};
  static constexpr const char* coordinate_units[n] = {"m", "m", "m"};
  static constexpr const char* constraint_names[1] = {"yd_eq_czxd"};
  static constexpr ParamInfo param_info[n_params] = {
      {"c", 1.0, "1/m", "constraint constant c in yd = c z xd"},
      {"alpha", 0.5, "1", "conflation fraction of T+(alpha), 0 <= alpha <= 1 (conflated only)", closed(0.0, 1.0)},
  };
  struct Params {
    double c, alpha;
  };
  NHOLO_HDI static Params make_params(const double* v) { return Params{v[0], v[1]}; }

  // L = T
  template <class S>
  NHOLO_HDI static S lagrangian(const Params& /*p*/, const Vec<S, n>& /*q*/, const Vec<S, n>& qd,
                                const S& /*t*/) {
    return 0.5 * (qd[0] * qd[0] + qd[1] * qd[1] + qd[2] * qd[2]);
  }

  // yd - c z xd = 0
  template <class S>
  NHOLO_HDI static Vec<S, 1> velocity_constraints(const Params& p, const Vec<S, n>& q,
                                                  const Vec<S, n>& qd, const S& /*t*/) {
    Vec<S, 1> g;
    g[0] = qd[1] - p.c * q[2] * qd[0];
    return g;
  }

  // T+(alpha), eq (3.22)
  template <class S>
  NHOLO_HDI static S conflated_lagrangian(const Params& p, const Vec<S, n>& q, const Vec<S, n>& qd,
                                          const S& /*t*/) {
    const S czx = p.c * q[2] * qd[0];
    return 0.5 * qd[0] * qd[0] + 0.5 * p.alpha * czx * czx + 0.5 * (1.0 - p.alpha) * qd[1] * qd[1] +
           0.5 * qd[2] * qd[2];
  }

  // E = T
  template <class S>
  NHOLO_HDI static S energy(const Params& p, const Vec<S, n>& q, const Vec<S, n>& qd, const S& t) {
    return lagrangian(p, q, qd, t);
  }
};

}  // namespace nholo::models
