// nholo/kernels/rk_step.hpp — one explicit Runge–Kutta step of any tableau
// (tableaus.hpp), with its embedded error estimate.
//
//   Status st = rk_step<Tab>(sys, t, y, k0, h, tol, y1, err, k_last);
//     k0      f(t, y) (given: FSAL or evaluated by the caller)
//     y1      the propagated solution at t + h
//     err     scaled RMS error norm (<= 1: acceptable); 0 for fixed-step tableaus
//     k_last  f(t + h, y1) when Tab::fsal; a fixed-step tableau's last
//             stage (RK4: f(t + h, y + h k3))
//   st != ok: a stage evaluation failed (non-finite or singular); y1 is unusable.
//
// Error norm, sc_i = atol + rtol max(|y_i|, |y1_i|):
//   one estimate:   err = sqrt( (1/N) sum_i (h sum_j e_j k_ji / sc_i)^2 )
//   DOP853 (Hairer): e5 = sum_i (sum_j e_j k_ji / sc_i)^2, e3 likewise with e3_j,
//                   err = |h| e5 / sqrt(N (e5 + 0.01 e3))   (0 when both vanish)
#pragma once

#include "linalg.hpp"
#include "status.hpp"
#include "tableaus.hpp"

namespace nholo {

struct StepTolerance {
  double rtol;
  double atol;
};

namespace detail {

// The stage loops below run over compile-time indices (template recursion),
// so that every Butcher coefficient Tab::a(I, J), b(I), e(I), c(I) is a
// constant in the generated code: indexed at run time, the tableau's local
// constexpr tables were rebuilt on the stack at every step (tableaus.hpp).
// The loops over the components stay rolled in device code
// (NHOLO_DEVICE_ROLLED_LOOP, execution_space.hpp: fewer registers).
// Each component is summed in a register, terms with a zero coefficient
// skipped, in the order of the plain loops (j = 0, 1, ...), so the results
// are the same bits.

// v + sum_{J0 <= J < I} h a_IJ k_J[c], added one term at a time
template <class Tab, int I, int J, class S, int N>
NHOLO_HDI S stage_sum(S v, const Vec<S, N>* k, S h, int c) {
  if constexpr (J < I) {
    constexpr double aij = Tab::a(I, J);
    if constexpr (aij != 0.0) v += h * S(aij) * k[J][c];
    return stage_sum<Tab, I, J + 1>(v, k, h, c);
  } else {
    return v;
  }
}

// k_I = f(t + c_I h, y + h sum_{J<I} a_IJ k_J) for I = I0 .. Last-1
template <class Tab, int I, int Last, class Sys, class S, int N>
NHOLO_HDI Status run_stages(const Sys& sys, S t, const Vec<S, N>& y, Vec<S, N>* k, S h) {
  if constexpr (I < Last) {
    Vec<S, N> yi;
    NHOLO_DEVICE_ROLLED_LOOP
    for (int c = 0; c < N; ++c) yi[c] = stage_sum<Tab, I, 0>(y[c], k, h, c);
    const Status st = sys(t + S(Tab::c(I)) * h, yi, k[I]);
    if (st != Status::ok) return st;
    return run_stages<Tab, I + 1, Last>(sys, t, y, k, h);
  } else {
    return Status::ok;
  }
}

// acc + sum_{I0 <= I < Last} w_I k_I[c], w = Tab::b (Which = 0), Tab::e (1), Tab::e3 (2)
template <class Tab, int Which, int I, int Last, class S, int N>
NHOLO_HDI S weighted_sum(S acc, const Vec<S, N>* k, int c) {
  if constexpr (I < Last) {
    constexpr double w = Which == 0 ? Tab::b(I) : Which == 1 ? Tab::e(I) : Tab::e3(I);
    if constexpr (w != 0.0) acc += S(w) * k[I][c];
    return weighted_sum<Tab, Which, I + 1, Last>(acc, k, c);
  } else {
    return acc;
  }
}

}  // namespace detail

template <class Tab, class Sys, class S, int N>
NHOLO_HDI Status rk_step(const Sys& sys, S t, const Vec<S, N>& y, const Vec<S, N>& k0, S h,
                         const StepTolerance& tol, Vec<S, N>& y1, S& err, Vec<S, N>& k_last,
                         S t1 = S(NAN)) {
  constexpr int s = Tab::stages;
  // FSAL: the last stage is f(t1, y1) evaluated at exactly the y1 returned and
  // at the step's end time t1 (t + h unless the caller lands on an output
  // time), so that continuing with k_last or re-evaluating f(t1, y1) later
  // (e.g. at the start of the next output window) gives the same bits.
  constexpr int explicit_stages = Tab::fsal ? s - 1 : s;
  Vec<S, N> k[s];
  k[0] = k0;
  // stages: k_i = f(t + c_i h, y + h sum_j a_ij k_j)
  const Status stage_status = detail::run_stages<Tab, 1, explicit_stages>(sys, t, y, k, h);
  if (stage_status != Status::ok) return stage_status;
  // y1 = y + h sum_i b_i k_i   (b_{s-1} = 0 for FSAL tableaus)
  NHOLO_DEVICE_ROLLED_LOOP
  for (int c = 0; c < N; ++c)
    y1[c] = y[c] + h * detail::weighted_sum<Tab, 0, 0, explicit_stages>(S(0), k, c);
  if constexpr (Tab::fsal) {
    if (!all_finite(y1)) return Status::non_finite;
    const Status st = sys(is_finite(t1) ? t1 : t + h, y1, k[s - 1]);
    if (st != Status::ok) return st;
    k_last = k[s - 1];
  } else if constexpr (Tab::error_order == 0) {
    // a fixed-step tableau's last stage (RK4: k4 = f(t + h, y + h k3), f at
    // the step's end to O(h^3): the end slope of the events' interpolant,
    // integrate.hpp)
    k_last = k[s - 1];
  }
  if constexpr (Tab::error_order == 0) {
    err = S(0);
  } else if constexpr (!Tab::two_estimates) {
    S sum = S(0);
    NHOLO_DEVICE_ROLLED_LOOP
    for (int c = 0; c < N; ++c) {
      const S e = detail::weighted_sum<Tab, 1, 0, s>(S(0), k, c);
      const S sc = S(tol.atol) + S(tol.rtol) * max_of(S(fabs(y[c])), S(fabs(y1[c])));
      const S r = h * e / sc;
      sum += r * r;
    }
    err = sqrt(sum / S(N));
  } else {
    S e5 = S(0), e3 = S(0);
    NHOLO_DEVICE_ROLLED_LOOP
    for (int c = 0; c < N; ++c) {
      const S a5 = detail::weighted_sum<Tab, 1, 0, s>(S(0), k, c);
      const S a3 = detail::weighted_sum<Tab, 2, 0, s>(S(0), k, c);
      const S sc = S(tol.atol) + S(tol.rtol) * max_of(S(fabs(y[c])), S(fabs(y1[c])));
      e5 += (a5 / sc) * (a5 / sc);
      e3 += (a3 / sc) * (a3 / sc);
    }
    const S deno = e5 + S(0.01) * e3;
    err = deno > S(0) ? S(fabs(h)) * e5 / sqrt(S(N) * deno) : S(0);
  }
  // (an FSAL step checked y1 before its last stage)
  if constexpr (Tab::fsal) {
    return Status::ok;
  } else {
    return all_finite(y1) ? Status::ok : Status::non_finite;
  }
}

}  // namespace nholo
