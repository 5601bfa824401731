// A hand-written C++ model kept out of nholo's tree (docs/models.md, "C++
// models out of tree"): a planar pendulum of length l in Cartesian
// coordinates, the rod a position constraint x^2 + y^2 - l^2 = 0.
// tests/out_of_tree/check.sh builds it with nholo_add_model against an
// installed nholo and checks it against the same system as a model file.
#pragma once

#include "kernels/linalg.hpp"
#include "kernels/model.hpp"

namespace lab {

struct CartesianPendulum {
  static constexpr const char* name = "cartesian_pendulum";
  static constexpr const char* description = "planar pendulum in Cartesian coordinates (C++ plugin)";
  static constexpr int n = 2;
  static constexpr int m_position = 1;
  static constexpr int m_velocity = 0;
  static constexpr int m_acceleration = 0;
  static constexpr int n_params = 3;
  static constexpr const char* coordinates[n] = {"x", "y"};
  static constexpr const char* coordinate_units[n] = {"m", "m"};
  static constexpr const char* constraint_names[1] = {"rod"};
  static constexpr nholo::ParamInfo param_info[n_params] = {
      {"m", 1.0, "kg", "bob mass", nholo::positive()},
      {"l", 1.0, "m", "rod length", nholo::positive()},
      {"g", 9.81, "m/s^2", "gravitational acceleration", nholo::nonnegative()},
  };
  struct Params {
    double m, l, g;
  };
  NHOLO_HDI static Params make_params(const double* v) { return Params{v[0], v[1], v[2]}; }
  template <class S>
  NHOLO_HDI static S lagrangian(const Params& p, const nholo::Vec<S, n>& q, const nholo::Vec<S, n>& qd,
                                const S& /*t*/) {
    return 0.5 * p.m * (qd[0] * qd[0] + qd[1] * qd[1]) - p.m * p.g * q[1];
  }
  template <class S>
  NHOLO_HDI static nholo::Vec<S, 1> position_constraints(const Params& p, const nholo::Vec<S, n>& q,
                                                         const S& /*t*/) {
    nholo::Vec<S, 1> phi;
    phi[0] = q[0] * q[0] + q[1] * q[1] - p.l * p.l;
    return phi;
  }
};

}  // namespace lab
