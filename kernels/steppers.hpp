// nholo/kernels/steppers.hpp — one explicit Runge–Kutta step of any tableau
// (tableaus.hpp), with its embedded error estimate.
//
//   Status st = rk_step<Tab>(sys, t, y, k0, h, tol, y1, err, k_last);
//     k0      f(t, y) (given: FSAL or evaluated by the caller)
//     y1      the propagated solution at t + h
//     err     scaled RMS error norm (<= 1: acceptable); 0 for fixed-step tableaus
//     k_last  f(t + h, y1) when Tab::fsal
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
  for (int i = 1; i < explicit_stages; ++i) {
    Vec<S, N> yi = y;
    for (int j = 0; j < i; ++j) {
      const S aij = S(Tab::a(i, j));
      if (aij == S(0)) continue;
      for (int c = 0; c < N; ++c) yi[c] += h * aij * k[j][c];
    }
    const Status st = sys(t + S(Tab::c(i)) * h, yi, k[i]);
    if (st != Status::ok) return st;
  }
  // y1 = y + h sum_i b_i k_i   (b_{s-1} = 0 for FSAL tableaus)
  for (int c = 0; c < N; ++c) {
    S acc = S(0);
    for (int i = 0; i < explicit_stages; ++i) acc += S(Tab::b(i)) * k[i][c];
    y1[c] = y[c] + h * acc;
  }
  if constexpr (Tab::fsal) {
    if (!all_finite(y1)) return Status::non_finite;
    const Status st = sys(is_finite(t1) ? t1 : t + h, y1, k[s - 1]);
    if (st != Status::ok) return st;
  }
  if constexpr (Tab::fsal) k_last = k[s - 1];
  if constexpr (Tab::error_order == 0) {
    err = S(0);
  } else if constexpr (!Tab::two_estimates) {
    S sum = S(0);
    for (int c = 0; c < N; ++c) {
      S e = S(0);
      for (int i = 0; i < s; ++i) e += S(Tab::e(i)) * k[i][c];
      const S sc = S(tol.atol) + S(tol.rtol) * max_of(S(fabs(y[c])), S(fabs(y1[c])));
      const S r = h * e / sc;
      sum += r * r;
    }
    err = sqrt(sum / S(N));
  } else {
    S e5 = S(0), e3 = S(0);
    for (int c = 0; c < N; ++c) {
      S a5 = S(0), a3 = S(0);
      for (int i = 0; i < s; ++i) {
        a5 += S(Tab::e(i)) * k[i][c];
        a3 += S(Tab::e3(i)) * k[i][c];
      }
      const S sc = S(tol.atol) + S(tol.rtol) * max_of(S(fabs(y[c])), S(fabs(y1[c])));
      e5 += (a5 / sc) * (a5 / sc);
      e3 += (a3 / sc) * (a3 / sc);
    }
    const S deno = e5 + S(0.01) * e3;
    err = deno > S(0) ? S(fabs(h)) * e5 / sqrt(S(N) * deno) : S(0);
  }
  return all_finite(y1) ? Status::ok : Status::non_finite;
}

}  // namespace nholo
