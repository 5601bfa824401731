// nholo/kernels/lyapunov.hpp — the largest Lyapunov exponent of a trajectory,
// from the variational equation of the formulation's own right-hand side.
//
// TangentSystem<Sys> is a System (system.hpp) whose state carries, after the
// state y0 of Sys (N0 components), a tangent vector delta (N0 components), the
// sum of the logarithms of delta's norms at the renormalisations, the time
// since the last renormalisation and the time since the start:
//
//   y = (y0, delta, log_sum, tau, T),   N = 2 N0 + 3
//   y0' = f(t, y0),   delta' = J(t, y0) delta,   log_sum' = 0,   tau' = T' = 1
//
// J delta comes with f from one evaluation of Sys's right-hand side on dual
// numbers (dual.hpp: Dual<S, 1> seeded with delta), so the tangent flow is
// exactly the linearisation of what the stepper integrates, projection and
// all the formulation's branches included; the stepper controls the error of
// delta with that of y0. tau and T grow linearly, which every Runge-Kutta
// method integrates exactly (up to the rounding of the steps' sum). After each accepted step
// (post_step) with tau >= renormalize_every, or with |delta| > 1e100 (whatever
// renormalize_every says: delta stays representable), delta is divided by its
// norm |delta| and log(|delta|) is added to log_sum, tau set to 0. The
// estimate at any time is
//
//   lambda = (log_sum + log |delta|) / T
//
// (lyapunov_estimate): the renormalisations only keep delta representable;
// the variational equation is linear, so where they happen does not change the
// estimate (up to rounding). The initial delta is a fixed direction with no
// zero component (initial_tangent), the same for every trajectory and backend.
//
// Sys's own post_step (drift projection) moves y0 only: delta follows the
// flow of the unprojected equations. The norm is the Euclidean norm of all N0
// components. Systems with a non-smooth state of their own (the embedded
// formulation's running maximum) are not accepted (has_tangent_system).
#pragma once

#include "dual.hpp"
#include "formulations/vakonomic.hpp"
#include "second_order_system.hpp"
#include "system.hpp"

namespace nholo {

// Sys with scalar T in place of its own (params and evaluation options kept):
// rebind_scalar<Sys, T>::type, for the systems that have one.
template <class Sys, class T>
struct rebind_scalar {};
template <class Model, class S, class Formulation, class T>
struct rebind_scalar<SecondOrderSystem<Model, S, Formulation>, T> {
  using type = SecondOrderSystem<Model, T, Formulation>;
};
template <class Model, class S, class T>
struct rebind_scalar<VakonomicSystem<Model, S>, T> {
  using type = VakonomicSystem<Model, T>;
};

template <class Sys, class = void>
struct has_tangent_system : std::false_type {};
template <class Sys>
struct has_tangent_system<
    Sys, std::void_t<typename rebind_scalar<Sys, Dual<typename Sys::scalar, 1>>::type>>
    : std::true_type {};

// The estimate (log_sum + log |delta|) / T; NaN before any time passed.
template <class S>
NHOLO_HDI S lyapunov_from(S log_sum, S tangent_norm, S elapsed) {
  return elapsed > S(0) ? (log_sum + log(tangent_norm)) / elapsed : S(NAN);
}

// The estimate of trajectory i of `count` from a slice's states in structure-
// of-arrays layout (component c of trajectory i at [c count + i]), given from
// component N0 on: the tangent's N0 rows, then log_sum, tau, T (a run reads
// the final states so, host/backends/).
NHOLO_HDI double lyapunov_of_states(const double* from_tangent, int64_t count, int64_t i, int N0) {
  double s = 0;
  for (int c = 0; c < N0; ++c) s += from_tangent[c * count + i] * from_tangent[c * count + i];
  return lyapunov_from(from_tangent[N0 * count + i], sqrt(s), from_tangent[(N0 + 2) * count + i]);
}

// Component c of the initial tangent direction (before normalisation): no
// component zero, no two alike, none a simple multiple of another.
NHOLO_HDI double initial_tangent(int c) {
  return 1.0 + 0.5 * sin(1.7 * c + 0.3);
}

template <class Sys>
struct TangentSystem {
  static_assert(has_tangent_system<Sys>::value,
                "Lyapunov exponents need a formulation whose right-hand side can be evaluated "
                "on dual numbers (not the embedded formulation)");
  using model_type = typename Sys::model_type;
  using scalar = typename Sys::scalar;
  using S = scalar;
  using Params = typename Sys::Params;
  using D = Dual<S, 1>;
  using DualSys = typename rebind_scalar<Sys, D>::type;
  static constexpr int N0 = Sys::N;
  static constexpr int n = Sys::n;
  static constexpr int m = Sys::m;
  static constexpr int N = 2 * N0 + 3;
  static constexpr int n_extra = N - 2 * n;
  static constexpr int log_sum_index = 2 * N0;
  static constexpr int tau_index = 2 * N0 + 1;
  static constexpr int elapsed_index = 2 * N0 + 2;
  static constexpr const char* formulation_name = Sys::formulation_name;
  // |delta| beyond which it is renormalised whatever the schedule
  static constexpr double kTangentCeiling = 1e100;

  Params params;
  EvalOptions eval;
  S renormalize_every = S(1);

  // Sys (or its dual twin) with these parameters and options
  template <class System = Sys>
  NHOLO_HDI System system() const {
    System s;
    s.params = params;
    s.eval = eval;
    return s;
  }

  NHOLO_HD Status operator()(S t, const Vec<S, N>& y, Vec<S, N>& dydt) const {
    const DualSys ds = system<DualSys>();
    Vec<D, N0> yd, fd;
    for (int c = 0; c < N0; ++c) {
      yd[c] = D(y[c]);
      yd[c].d[0] = y[N0 + c];
    }
    const Status st = ds(D(t), yd, fd);
    for (int c = 0; c < N0; ++c) {
      dydt[c] = fd[c].v;
      dydt[N0 + c] = fd[c].d[0];
    }
    dydt[log_sum_index] = S(0);
    dydt[tau_index] = S(1);
    dydt[elapsed_index] = S(1);
    if (st != Status::ok) return st;
    for (int c = N0; c < 2 * N0; ++c)
      if (!is_finite(dydt[c])) return Status::non_finite;
    return Status::ok;
  }

  NHOLO_HDI bool post_step(S t, Vec<S, N>& y) const {
    Vec<S, N0> y0 = base_state(y);
    bool moved = system().post_step(t, y0);
    if (moved)
      for (int c = 0; c < N0; ++c) y[c] = y0[c];
    // on schedule, or sooner where delta has grown past 1e100 (its squares
    // would overflow near 1e154): a renormalize_every long against 1 / lambda
    // ended the trajectory as non_finite
    const S norm = tangent_norm(y);
    if (y[tau_index] >= renormalize_every || norm > S(kTangentCeiling)) {
      if (norm > S(0) && is_finite(norm)) {
        for (int c = N0; c < 2 * N0; ++c) y[c] /= norm;
        y[log_sum_index] += log(norm);
      }
      y[tau_index] = S(0);
      moved = true;  // delta' scales with delta: the derivative at the step's end is stale
    }
    return moved;
  }

  NHOLO_HDI void observe(S t, const Vec<S, N>& y, Observation<S, n, m>& obs) const {
    system().observe(t, base_state(y), obs);
  }

  // Sys's state, then the initial tangent (unit norm) and zero sums and times
  NHOLO_HDI void pack(const Vec<S, n>& q, const Vec<S, n>& qd, const Vec<S, m>& lambda0,
                      Vec<S, N>& y) const {
    Vec<S, N0> y0;
    system().pack(q, qd, lambda0, y0);
    S sum = S(0);
    for (int c = 0; c < N0; ++c) sum += initial_tangent(c) * initial_tangent(c);
    const S scale = S(1) / sqrt(sum);
    for (int c = 0; c < N0; ++c) {
      y[c] = y0[c];
      y[N0 + c] = S(initial_tangent(c)) * scale;
    }
    y[log_sum_index] = S(0);
    y[tau_index] = S(0);
    y[elapsed_index] = S(0);
  }

  NHOLO_HDI static void split(const Vec<S, N>& y, Vec<S, n>& q, Vec<S, n>& qd) {
    split_state(y, q, qd);
  }

  NHOLO_HDI static Vec<S, N0> base_state(const Vec<S, N>& y) {
    Vec<S, N0> y0;
    for (int c = 0; c < N0; ++c) y0[c] = y[c];
    return y0;
  }
  NHOLO_HDI static S tangent_norm(const Vec<S, N>& y) {
    S s = S(0);
    for (int c = N0; c < 2 * N0; ++c) s += y[c] * y[c];
    return sqrt(s);
  }
  // the running estimate of the largest exponent (NaN before any time passed)
  NHOLO_HDI static S lyapunov_estimate(const Vec<S, N>& y) {
    return lyapunov_from(y[log_sum_index], tangent_norm(y), y[elapsed_index]);
  }
};

// N0 of a tangent system (its base system's state size: where its tangent
// starts in the state), -1 for any other system.
template <class Sys>
struct tangent_base_size : std::integral_constant<int, -1> {};
template <class Sys>
struct tangent_base_size<TangentSystem<Sys>> : std::integral_constant<int, Sys::N> {};

}  // namespace nholo
