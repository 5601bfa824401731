// nholo/kernels/tableaus.hpp — Butcher tableaus of the explicit Runge–Kutta
// methods, kept apart from the step code (rk_step.hpp).
//
// Tableau concept (valid expressions), Tab a struct:
//   Tab::stages                 number of stages s
//   Tab::order                  order p of the propagated solution
//   Tab::error_order            order of the embedded estimate (0: none, fixed step)
//   Tab::control_order          q in the step-size law fac = err^(-1/q): the power
//                               of h that the error norm scales with
//   Tab::fsal                   last stage equals f(t+h, y_new) (first same as last)
//   Tab::c(i), Tab::a(i, j), Tab::b(i)         i, j in [0, s), a(i, j) = 0 for j >= i
//   Tab::e(i)                   b_i - bhat_i: error estimate err = h sum_i e(i) k_i
//   Tab::two_estimates          if true, also Tab::e3(i) and the combined
//                               estimate of Hairer's DOP853 (rk_step.hpp)
// Coefficients are returned by constexpr __host__ __device__ functions (local
// constexpr tables), so that device code can use them: static member arrays
// are not addressable from device code.
#pragma once

#include "scalar_math.hpp"

namespace nholo {

// Classical Runge–Kutta, order 4, fixed step.
struct TableauRK4 {
  static constexpr int stages = 4;
  static constexpr int order = 4;
  static constexpr int error_order = 0;
  static constexpr int control_order = 0;
  static constexpr bool fsal = false;
  static constexpr bool two_estimates = false;
  NHOLO_HD static constexpr double c(int i) {
    constexpr double t[4] = {0.0, 0.5, 0.5, 1.0};
    return t[i];
  }
  NHOLO_HD static constexpr double a(int i, int j) {
    constexpr double t[4][4] = {{0, 0, 0, 0}, {0.5, 0, 0, 0}, {0, 0.5, 0, 0}, {0, 0, 1.0, 0}};
    return t[i][j];
  }
  NHOLO_HD static constexpr double b(int i) {
    constexpr double t[4] = {1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0};
    return t[i];
  }
  NHOLO_HD static constexpr double e(int /*i*/) { return 0.0; }
  NHOLO_HD static constexpr double e3(int /*i*/) { return 0.0; }
};

// Dormand–Prince 5(4) (Dormand & Prince 1980), FSAL, 7 stages.
struct TableauDopri5 {
  static constexpr int stages = 7;
  static constexpr int order = 5;
  static constexpr int error_order = 4;
  static constexpr int control_order = 5;
  static constexpr bool fsal = true;
  static constexpr bool two_estimates = false;
  NHOLO_HD static constexpr double c(int i) {
    constexpr double t[7] = {0.0, 1.0 / 5.0, 3.0 / 10.0, 4.0 / 5.0, 8.0 / 9.0, 1.0, 1.0};
    return t[i];
  }
  NHOLO_HD static constexpr double a(int i, int j) {
    constexpr double t[7][7] = {
        {0, 0, 0, 0, 0, 0, 0},
        {1.0 / 5.0, 0, 0, 0, 0, 0, 0},
        {3.0 / 40.0, 9.0 / 40.0, 0, 0, 0, 0, 0},
        {44.0 / 45.0, -56.0 / 15.0, 32.0 / 9.0, 0, 0, 0, 0},
        {19372.0 / 6561.0, -25360.0 / 2187.0, 64448.0 / 6561.0, -212.0 / 729.0, 0, 0, 0},
        {9017.0 / 3168.0, -355.0 / 33.0, 46732.0 / 5247.0, 49.0 / 176.0, -5103.0 / 18656.0, 0, 0},
        {35.0 / 384.0, 0.0, 500.0 / 1113.0, 125.0 / 192.0, -2187.0 / 6784.0, 11.0 / 84.0, 0}};
    return t[i][j];
  }
  NHOLO_HD static constexpr double b(int i) {
    constexpr double t[7] = {35.0 / 384.0,     0.0,         500.0 / 1113.0, 125.0 / 192.0,
                             -2187.0 / 6784.0, 11.0 / 84.0, 0.0};
    return t[i];
  }
  // b - bhat, bhat the 4th-order weights
  NHOLO_HD static constexpr double e(int i) {
    constexpr double bhat[7] = {5179.0 / 57600.0,     0.0,          7571.0 / 16695.0, 393.0 / 640.0,
                                -92097.0 / 339200.0, 187.0 / 2100.0, 1.0 / 40.0};
    return b(i) - bhat[i];
  }
  NHOLO_HD static constexpr double e3(int /*i*/) { return 0.0; }
};

}  // namespace nholo
