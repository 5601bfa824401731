// nholo/models/integrable_constraint.hpp — a linear velocity constraint that is
// integrable through the integrating factor q1^2 (Flannery (2011) ex. 2,
// eqs 4.20-4.23; docs/physics.md, item 9).
//
// q = (q1, q2); the paper gives no Lagrangian, so a free particle of unit mass:
//   L = (q1d^2 + q2d^2)/2
// Constraint (velocity level, linear in qd), eq (4.20):
//   (4 q1 + 3 q2^2) q1d + 2 q1 q2 q2d = 0
//   A = [4 q1 + 3 q2^2, 2 q1 q2],  b = -(4 q1d^2 + 8 q2 q1d q2d + 2 q1 q2d^2)
// q1^2 times it is d/dt (q1^4 + q1^3 q2^2) (eq 4.23), so q1^4 + q1^3 q2^2 is
// conserved along every motion.
//
// No parameters: n_params = 0, Params is empty and param_info holds a single
// sentinel entry (a zero-length array is not valid C++). Consumers iterate
// param_info[i] for i < n_params only, as for every model.
#pragma once

#include "../kernels/linalg.hpp"
#include "../kernels/model.hpp"

namespace nholo::models {

struct IntegrableConstraint {
  static constexpr const char* name = "integrable_constraint";
  static constexpr const char* description =
      "free particle under the integrable constraint (4 q1 + 3 q2^2) q1d + 2 q1 q2 q2d = 0 "
      "(Flannery 2011 ex. 2)";
  static constexpr int n = 2;
  static constexpr int m_position = 0;
  static constexpr int m_velocity = 1;
  static constexpr int m_acceleration = 0;
  // M and F depend on the parameters only (kernels/model.hpp)
  static constexpr bool constant_mass = true;
  static constexpr bool constant_force = true;
  static constexpr int n_params = 0;
  static constexpr const char* coordinates[n] = {"q1", "q2"};
  static constexpr const char* coordinate_units[n] = {"1", "1"};
  static constexpr const char* constraint_names[1] = {"integrable"};
  // sentinel only: n_params = 0
  static constexpr ParamInfo param_info[1] = {{nullptr, 0.0, nullptr, nullptr}};
  struct Params {};
  NHOLO_HDI static Params make_params(const double* /*v*/) { return Params{}; }

  // L = T
  template <class S>
  NHOLO_HDI static S lagrangian(const Params& /*p*/, const Vec<S, n>& /*q*/, const Vec<S, n>& qd,
                                const S& /*t*/) {
    return 0.5 * (qd[0] * qd[0] + qd[1] * qd[1]);
  }

  // (4 q1 + 3 q2^2) q1d + 2 q1 q2 q2d = 0
  template <class S>
  NHOLO_HDI static Vec<S, 1> velocity_constraints(const Params& /*p*/, const Vec<S, n>& q,
                                                  const Vec<S, n>& qd, const S& /*t*/) {
    Vec<S, 1> g;
    g[0] = (4.0 * q[0] + 3.0 * q[1] * q[1]) * qd[0] + 2.0 * q[0] * q[1] * qd[1];
    return g;
  }

  // the first integral q1^4 + q1^3 q2^2 (eq 4.23)
  template <class S>
  NHOLO_HDI static S invariant(const Params& /*p*/, const Vec<S, n>& q) {
    const S q1sq = q[0] * q[0];
    return q1sq * q1sq + q1sq * q[0] * q[1] * q[1];
  }

  // E = T
  template <class S>
  NHOLO_HDI static S energy(const Params& p, const Vec<S, n>& q, const Vec<S, n>& qd, const S& t) {
    return lagrangian(p, q, qd, t);
  }
};

}  // namespace nholo::models
