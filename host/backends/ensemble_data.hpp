// nholo/host/backends/ensemble_data.hpp — host-side containers of an ensemble slice
// (structure of arrays, trajectory index fastest).
// Plain C++: no Thrust, no device types, so every backend can share it.
#pragma once

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "host/io/device_info.hpp"
#include "kernels/ensemble.hpp"

namespace nholo {

// Host-side ensemble state (structure of arrays) for a slice of trajectories.
template <class Sys>
struct HostEnsemble {
  using S = typename Sys::scalar;
  static constexpr int N = Sys::N;
  int64_t count = 0;
  std::vector<S> y, t, h, err_prev, fail_time;
  std::vector<int64_t> steps, rejected;
  std::vector<int32_t> status;
  // per-trajectory parameters [j * count + i] (kernels/ensemble.hpp); empty:
  // the system's parameters for all
  std::vector<double> params;

  // A slice's initial states as the run pipeline holds them (row-major host
  // arrays q0[i n + c], qd0[i n + c], l0[i m + l]), packed into the system's
  // state (Sys::pack) in SoA layout; rejected[i] != 0 marks trajectory i
  // not integrated: status singular when rejected[i] is that status' code,
  // else rejected.
  void start_from_states(const Sys& sys, int64_t n_traj, const double* q0, const double* qd0,
                         const double* l0, const uint8_t* rejected_states, S t0,
                         const IntegratorOptions& opt) {
    constexpr int n = Sys::n, m = Sys::m;
    std::vector<S> y0(static_cast<size_t>(N) * n_traj);
    for (int64_t i = 0; i < n_traj; ++i) {
      Vec<S, n> q, qd;
      Vec<S, m> lam = Vec<S, m>::zero();
      for (int c = 0; c < n; ++c) {
        q[c] = S(q0[i * n + c]);
        qd[c] = S(qd0[i * n + c]);
      }
      for (int l = 0; l < m; ++l) lam[l] = S(l0[i * m + l]);
      Vec<S, N> yi;
      sys.pack(q, qd, lam, yi);
      for (int c = 0; c < N; ++c) y0[c * n_traj + i] = yi[c];
    }
    start(y0, n_traj, t0, opt);
    for (int64_t i = 0; i < n_traj; ++i)
      if (rejected_states[i]) {
        // the initial state's verdict: rejected, or singular (not integrated)
        status[i] = rejected_states[i] == static_cast<uint8_t>(Status::singular)
                        ? static_cast<int32_t>(Status::singular)
                        : static_cast<int32_t>(Status::rejected);
        if (status[i] == static_cast<int32_t>(Status::singular)) fail_time[i] = t0;
      }
  }

  // y0 in SoA layout: y0[c * count + i], c < N (q then qd)
  void start(const std::vector<S>& y0, int64_t n_traj, S t0, const IntegratorOptions& opt) {
    if (static_cast<int64_t>(y0.size()) != n_traj * N)
      throw std::invalid_argument("initial states: expected " + std::to_string(n_traj * N) +
                                  " values (N x count), got " + std::to_string(y0.size()));
    count = n_traj;
    y = y0;
    t.assign(count, t0);
    h.assign(count, S(opt.dt));
    err_prev.assign(count, S(1e-4));
    fail_time.assign(count, S(NAN));
    steps.assign(count, 0);
    rejected.assign(count, 0);
    status.assign(count, static_cast<int32_t>(Status::ok));
    for (int64_t i = 0; i < count; ++i) {
      for (int c = 0; c < N; ++c) {
        if (!std::isfinite(static_cast<double>(y[c * count + i]))) {
          status[i] = static_cast<int32_t>(Status::non_finite);
          fail_time[i] = t0;
        }
      }
    }
  }
};

}  // namespace nholo
