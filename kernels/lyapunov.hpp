// nholo/kernels/lyapunov.hpp — the K largest Lyapunov exponents of a
// trajectory (K = 1: the largest), from the variational equation of the
// formulation's own right-hand side.
//
// TangentSystem<Sys, K> is a System (system.hpp) whose state carries, after
// the state y0 of Sys (N0 components), K tangent vectors delta_1..delta_K (N0
// components each), for each the sum of the logarithms of its lengths at the
// reorthonormalisations, the time since the last one and the time since the
// start:
//
//   y = (y0, delta_1, ..., delta_K, log_sum_1, ..., log_sum_K, tau, T),
//   N = N0 + K N0 + K + 2 (K = 1: 2 N0 + 3)
//   y0' = f(t, y0),   delta_j' = J(t, y0) delta_j,   log_sum_j' = 0,   tau' = T' = 1
//
// J delta_j comes with f from one evaluation of Sys's right-hand side on dual
// numbers (dual.hpp: Dual<S, K>, tangent j seeded with delta_j), so the
// tangent flow is exactly the linearisation of what the stepper integrates,
// projection and all the formulation's branches included; the stepper
// controls the error of the deltas with that of y0. tau and T grow linearly,
// which every Runge-Kutta method integrates exactly (up to the rounding of
// the steps' sum). After each accepted step (post_step) with tau >=
// renormalize_every, or with any |delta_j| > 1e100 (whatever
// renormalize_every says: the deltas stay representable), the deltas are
// reorthonormalised by modified Gram-Schmidt (the QR step of Benettin et al.:
// delta_j minus its projections on the delta_i, i < j, already made unit, then
// divided by its length r_j) and log(r_j) is added to log_sum_j, tau set to 0.
// The estimates at any time are
//
//   lambda_j = (log_sum_j + log r_j(t)) / T
//
// with r_j(t) the diagonal of the QR factorisation of the current deltas
// (lyapunov_spectrum_from; K = 1: r_1 = |delta|): the reorthonormalisations
// only keep the deltas representable and apart; the variational equation is
// linear, so where they happen does not change the estimates (up to
// rounding). The initial deltas are fixed directions (initial_tangent), the
// same for every trajectory and backend, made orthonormal by the same
// Gram-Schmidt. For a linear flow y' = A y the estimates are exactly
// (1 / T) log of the diagonal of R in e^(A T) Q0 = Q R, Q0 the initial deltas.
//
// Sys's own post_step (drift projection) moves y0 only: the deltas follow the
// flow of the unprojected equations. The norm is the Euclidean norm of all N0
// components; the observed exponent (observed_spectrum_from, below) measures
// the same deltas in the norm of chosen expressions of the state, and for it
// the initial deltas start tangent to the constraint manifold (admissible:
// constraint_gradients). Systems with a non-smooth state of their own (the embedded
// formulation's running maximum) are not accepted (has_tangent_system).
#pragma once

#include "dual.hpp"
#include "event_program.hpp"
#include "formulations/udwadia_kalaba.hpp"
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

// Component c of initial tangent direction j (before Gram-Schmidt): for j = 0
// no component zero, no two alike, none a simple multiple of another; for
// j > 0 the unit vector e_j tilted by a smooth pattern, so that any K <= N0
// of them are independent and well conditioned.
NHOLO_HDI double initial_tangent(int c, int j = 0) {
  if (j == 0) return 1.0 + 0.5 * sin(1.7 * c + 0.3);
  return (c == j ? 1.0 : 0.0) + 0.25 * sin(1.3 * c + 0.7 * j + 0.1);
}

// Modified Gram-Schmidt of the K vectors of length N0 at v[j * N0 + c] (QR
// with the vectors as the columns): each made unit after its projections on
// the earlier ones are removed; r[j] its length before (the diagonal of R).
// A vector of length zero or not finite is left as it is (r[j] says so).
// K = 1: v / |v|, |v| summed in component order.
template <class S, int K, int N0>
NHOLO_HDI void orthonormalize(S* v, S* r) {
  for (int j = 0; j < K; ++j) {
    S* vj = v + j * N0;
    for (int i = 0; i < j; ++i) {
      const S* vi = v + i * N0;
      S p = S(0);
      for (int c = 0; c < N0; ++c) p += vi[c] * vj[c];
      for (int c = 0; c < N0; ++c) vj[c] -= p * vi[c];
    }
    S s = S(0);
    for (int c = 0; c < N0; ++c) s += vj[c] * vj[c];
    r[j] = sqrt(s);
    if (r[j] > S(0) && is_finite(r[j]))
      for (int c = 0; c < N0; ++c) vj[c] /= r[j];
  }
}

// The K estimates lambda_j = (log_sum_j + log r_j) / T from the deltas (at
// delta[j * stride + c * delta_step]), their log sums and T: a QR of a copy
// of the deltas; NaN before any time passed.
template <class S, int K, int N0>
NHOLO_HDI void lyapunov_spectrum_from(const S* delta, int64_t stride, int64_t delta_step,
                                      const S* log_sum, int64_t log_sum_step, S elapsed, S* out) {
  S v[K * N0], r[K];
  for (int j = 0; j < K; ++j)
    for (int c = 0; c < N0; ++c) v[j * N0 + c] = delta[j * stride + c * delta_step];
  orthonormalize<S, K, N0>(v, r);
  for (int j = 0; j < K; ++j) out[j] = lyapunov_from(log_sum[j * log_sum_step], r[j], elapsed);
}

// Observed exponents ([lyapunov] observables): the exponents measured in the
// norm of chosen expressions of the state, those of the reduced motion of a
// system with symmetries.
//
// With Phi(t) the tangent flow, Q0 the initial deltas and h(t, q, qd) the
// observables (m_o expressions, kernels/event_program.hpp's programs), G(t) =
// dh/dy at the state, the observed exponents are the growth rates of the
// diagonal of R in the QR factorisation of G(t) Phi(t) Q0 (m_o x K, K <=
// m_o). The tangent system (below) keeps Phi(t) Q0 = Delta(t)
// R_acc, Delta the current deltas and R_acc upper triangular with diagonal
// exp(log_sum_j) (the reorthonormalisations), so that
//
//   G Phi Q0 = (G Delta) R_acc,   G Delta = Q'' R'',
//   lambda_obs_j = (log_sum_j + log R''_jj) / T.
//
// G Delta_j comes from the programs evaluated on dual numbers: the gradient
// of each observable, component by component (seeded with the unit vector
// e_c, the same arithmetic on every backend and on the host), contracted
// with the deltas in component order. Where the reduced motion's exponents
// lie below the whole state's (a symmetry's directions grow like t: the
// full-state estimate reads about log T / T), the observed part of the
// deltas shrinks against the deltas themselves like exp(-(difference) t),
// and rounding in the cancellation G Delta_j injects about 1e-16 of the
// whole at every step: where R''_jj falls below kObservedPrecision times
// the scale of that cancellation, sum over o and c of |G_oc Delta_jc|, the
// estimate is NaN (no digits left), not a number from rounding noise.
// R''_jj below this fraction of G Delta_j's cancellation scale: NaN
constexpr double kObservedPrecision = 1e-8;

namespace detail {

// The state of an observable's program on dual numbers: component c of y
// (stride step) with the derivative 1 along component `seed`, 0 elsewhere.
template <class S>
struct SeededState {
  const S* y;
  int64_t step;
  int n;
  int seed;
  NHOLO_HDI Dual<S, 1> component(int c) const {
    Dual<S, 1> r;
    r.v = y[c * step];
    r.d[0] = c == seed ? S(1) : S(0);
    return r;
  }
  NHOLO_HDI Dual<S, 1> coord(int i) const { return component(i); }
  NHOLO_HDI Dual<S, 1> rate(int i) const { return component(n + i); }
};

}  // namespace detail

// The K observed exponents out[0..K) of a state (y[c * y_step], c < 2n: q
// then qd) with deltas delta[j * stride + c * delta_step] (c < N0), their
// log sums log_sum[j * log_sum_step] and elapsed time T, at time t, the
// trajectory's varied parameters varied[j * varied_stride] (null: none).
// work: K (m_o + 1) values. NaN before any time passed and where an
// estimate has no digits left (kObservedPrecision).
template <class S>
NHOLO_HDI void observed_spectrum_from(const ObservableTable& table, S t, const S* y, int64_t y_step,
                                      int n, const S* delta, int64_t stride, int64_t delta_step,
                                      int N0, const S* log_sum, int64_t log_sum_step, S elapsed,
                                      int K, const double* varied, int64_t varied_stride, S* work,
                                      S* out) {
  const int mo = table.n_observables;
  S* v = work;               // column j: G Delta_j, at v[j * mo + o]
  S* scale = work + K * mo;  // sum over o, c of |G_oc Delta_jc|
  for (int j = 0; j < K * mo; ++j) v[j] = S(0);
  for (int j = 0; j < K; ++j) scale[j] = S(0);
  for (int o = 0; o < mo; ++o)
    for (int c = 0; c < 2 * n && c < N0; ++c) {
      const Dual<S, 1> g =
          event_value_of(table.programs[o], Dual<S, 1>(t), detail::SeededState<S>{y, y_step, n, c},
                         varied, varied_stride);
      for (int j = 0; j < K; ++j) {
        const S term = g.d[0] * delta[j * stride + c * delta_step];
        v[j * mo + o] += term;
        scale[j] += fabs(term);
      }
    }
  // modified Gram-Schmidt of the K columns (orthonormalize's order)
  bool lost = false;
  for (int j = 0; j < K; ++j) {
    S* vj = v + j * mo;
    for (int i = 0; i < j; ++i) {
      const S* vi = v + i * mo;
      S p = S(0);
      for (int o = 0; o < mo; ++o) p += vi[o] * vj[o];
      for (int o = 0; o < mo; ++o) vj[o] -= p * vi[o];
    }
    S s = S(0);
    for (int o = 0; o < mo; ++o) s += vj[o] * vj[o];
    const S r = sqrt(s);
    // a column without digits leaves the later ones without a basis
    lost = lost || !(r > S(kObservedPrecision) * scale[j] && is_finite(r));
    if (!lost)
      for (int o = 0; o < mo; ++o) vj[o] /= r;
    out[j] = lost ? S(NAN) : lyapunov_from(log_sum[j * log_sum_step], r, elapsed);
  }
}

template <class TS, class Cache>
struct TangentPrepared;

template <class Sys, int K = 1>
struct TangentSystem {
  static_assert(has_tangent_system<Sys>::value,
                "Lyapunov exponents need a formulation whose right-hand side can be evaluated "
                "on dual numbers (not the embedded formulation)");
  static_assert(K >= 1 && K <= Sys::N, "1 <= exponents <= the state's size");
  using model_type = typename Sys::model_type;
  using scalar = typename Sys::scalar;
  using S = scalar;
  using Params = typename Sys::Params;
  using D = Dual<S, K>;
  using DualSys = typename rebind_scalar<Sys, D>::type;
  static constexpr int N0 = Sys::N;
  static constexpr int exponents = K;
  static constexpr int n = Sys::n;
  static constexpr int m = Sys::m;
  static constexpr int N = N0 + K * N0 + K + 2;
  static constexpr int n_extra = N - 2 * n;
  static constexpr int log_sum_index = N0 + K * N0;  // of the first; then one per delta
  static constexpr int tau_index = log_sum_index + K;
  static constexpr int elapsed_index = tau_index + 1;
  static constexpr const char* formulation_name = Sys::formulation_name;
  // |delta_j| beyond which the deltas are reorthonormalised whatever the schedule
  static constexpr double kTangentCeiling = 1e100;

  Params params;
  EvalOptions eval;
  S renormalize_every = S(1);
  // the initial deltas projected onto the tangent space of the constraint
  // manifold at the start (t_start): admissible_directions ([lyapunov]
  // observables: the reduced motion is the constrained one's)
  bool admissible = false;
  S t_start = S(0);

  // Sys (or its dual twin) with these parameters and options
  template <class System = Sys>
  NHOLO_HDI System system() const {
    System s;
    s.params = params;
    s.eval = eval;
    return s;
  }

  NHOLO_HD Status operator()(S t, const Vec<S, N>& y, Vec<S, N>& dydt) const {
    return evaluate(t, y, dydt, detail::NoCache{});
  }

  // Sys's per-trajectory cache, where it has one that its dual twin can
  // evaluate with (constant_mass under Udwadia–Kalaba: M's factor, and F and
  // M^-1 F with constant_force; TangentPrepared below): the state's cache,
  // taken at the state's part of y.
  template <class Base = Sys, std::enable_if_t<has_prepare<Base>::value &&
                                                   constant_mass_cache_takes<model_type, D>::value,
                                               int> = 0>
  NHOLO_HDI auto prepare(S t, const Vec<S, N>& y) const {
    const auto prepared = system().prepare(t, base_state(y));
    TangentPrepared<TangentSystem, decltype(prepared.cache)> ps;
    static_cast<TangentSystem&>(ps) = *this;
    ps.cache = prepared.cache;
    return ps;
  }

  // The right-hand side with the dual twin of Sys evaluated with Cache (on
  // D), or without one (detail::NoCache)
  template <class Cache>
  NHOLO_HDI Status evaluate(S t, const Vec<S, N>& y, Vec<S, N>& dydt, const Cache& cache) const {
    const DualSys ds = system<DualSys>();
    Vec<D, N0> yd, fd;
    for (int c = 0; c < N0; ++c) {
      yd[c] = D(y[c]);
      for (int j = 0; j < K; ++j) yd[c].d[j] = y[N0 + j * N0 + c];
    }
    Status st;
    if constexpr (std::is_same<Cache, detail::NoCache>::value) {
      st = ds(D(t), yd, fd);
    } else {
      st = ds.rhs_with(D(t), yd, fd, cache);
    }
    for (int c = 0; c < N0; ++c) {
      dydt[c] = fd[c].v;
      for (int j = 0; j < K; ++j) dydt[N0 + j * N0 + c] = fd[c].d[j];
    }
    for (int j = 0; j < K; ++j) dydt[log_sum_index + j] = S(0);
    dydt[tau_index] = S(1);
    dydt[elapsed_index] = S(1);
    if (st != Status::ok) return st;
    for (int c = N0; c < N0 + K * N0; ++c)
      if (!is_finite(dydt[c])) return Status::non_finite;
    return Status::ok;
  }

  NHOLO_HDI bool post_step(S t, Vec<S, N>& y) const {
    Vec<S, N0> y0 = base_state(y);
    bool moved = system().post_step(t, y0);
    if (moved)
      for (int c = 0; c < N0; ++c) y[c] = y0[c];
    // on schedule, or sooner where a delta has grown past 1e100 (its squares
    // would overflow near 1e154): a renormalize_every long against 1 / lambda
    // ended the trajectory as non_finite
    bool too_long = false;
    for (int j = 0; j < K; ++j) too_long = too_long || tangent_norm(y, j) > S(kTangentCeiling);
    if (y[tau_index] >= renormalize_every || too_long) {
      reorthonormalize(y);
      moved = true;  // delta' scales with delta: the derivative at the step's end is stale
    }
    return moved;
  }
  // The deltas made orthonormal, the logarithms of their lengths added to
  // the log sums, tau set to 0 (post_step's, when it is due)
  NHOLO_HDI void reorthonormalize(Vec<S, N>& y) const {
    S r[K];
    orthonormalize<S, K, N0>(&y[N0], r);
    for (int j = 0; j < K; ++j)
      if (r[j] > S(0) && is_finite(r[j])) y[log_sum_index + j] += log(r[j]);
    y[tau_index] = S(0);
  }

  NHOLO_HDI void observe(S t, const Vec<S, N>& y, Observation<S, n, m>& obs) const {
    system().observe(t, base_state(y), obs);
  }

  // Sys's state, then the initial deltas (orthonormal) and zero sums and times
  NHOLO_HDI void pack(const Vec<S, n>& q, const Vec<S, n>& qd, const Vec<S, m>& lambda0,
                      Vec<S, N>& y) const {
    Vec<S, N0> y0;
    system().pack(q, qd, lambda0, y0);
    for (int c = 0; c < N0; ++c) y[c] = y0[c];
    // the constraint rows' gradients, orthonormal (admissible only)
    S rows[2 * (m > 0 ? m : 1) * 2 * n];
    const int n_rows = admissible ? constraint_gradients(q, qd, rows) : 0;
    // Gram-Schmidt, each delta scaled by the reciprocal of its length
    for (int j = 0; j < K; ++j) {
      S* dj = &y[N0 + j * N0];
      for (int c = 0; c < N0; ++c) dj[c] = S(initial_tangent(c, j));
      for (int r = 0; r < n_rows; ++r) {  // minus its part across the manifold
        const S* u = rows + r * 2 * n;
        S p = S(0);
        for (int c = 0; c < 2 * n; ++c) p += u[c] * dj[c];
        for (int c = 0; c < 2 * n; ++c) dj[c] -= p * u[c];
      }
      for (int i = 0; i < j; ++i) {
        const S* di = &y[N0 + i * N0];
        S p = S(0);
        for (int c = 0; c < N0; ++c) p += di[c] * dj[c];
        for (int c = 0; c < N0; ++c) dj[c] -= p * di[c];
      }
      S sum = S(0);
      for (int c = 0; c < N0; ++c) sum += dj[c] * dj[c];
      const S scale = S(1) / sqrt(sum);
      for (int c = 0; c < N0; ++c) dj[c] *= scale;
    }
    for (int j = 0; j < K; ++j) y[log_sum_index + j] = S(0);
    y[tau_index] = S(0);
    y[elapsed_index] = S(0);
  }

  // The gradients along (q, qd) of the constraints' rows at (t_start, q,
  // qd) (position rows: phi and its rate; velocity rows: g; by forward AD of
  // the model's constraints, one direction at a time), made orthonormal by
  // modified Gram-Schmidt, a row whose remainder falls below 1e-10 of its
  // length dropped (a velocity row's second copy, an acceleration row, a
  // redundant constraint): into rows[r * 2n + c]; how many are kept.
  NHOLO_HDI int constraint_gradients(const Vec<S, n>& q, const Vec<S, n>& qd, S* rows) const {
    if constexpr (m == 0) {
      return 0;
    } else {
      using D1 = Dual<S, 1>;
      using Model = model_type;
      for (int c = 0; c < 2 * n; ++c) {
        Vec<D1, n> qa, qda;
        for (int i = 0; i < n; ++i) {
          qa[i] = D1(q[i]);
          qda[i] = D1(qd[i]);
        }
        if (c < n)
          qa[c].d[0] = S(1);
        else
          qda[c - n].d[0] = S(1);
        Mat<D1, m, n> A;
        Vec<D1, m> b, res, vres;
        constraint_terms<Model>(params, qa, qda, D1(t_start), A, b, &res, &vres);
        for (int l = 0; l < m; ++l) {
          rows[(2 * l) * 2 * n + c] = res[l].d[0];
          rows[(2 * l + 1) * 2 * n + c] = vres[l].d[0];
        }
      }
      int kept = 0;
      for (int r = 0; r < 2 * m; ++r) {
        S* u = rows + kept * 2 * n;
        if (kept != r)
          for (int c = 0; c < 2 * n; ++c) u[c] = rows[r * 2 * n + c];
        S before = S(0);
        for (int c = 0; c < 2 * n; ++c) before += u[c] * u[c];
        for (int i = 0; i < kept; ++i) {
          const S* w = rows + i * 2 * n;
          S p = S(0);
          for (int c = 0; c < 2 * n; ++c) p += w[c] * u[c];
          for (int c = 0; c < 2 * n; ++c) u[c] -= p * w[c];
        }
        S after = S(0);
        for (int c = 0; c < 2 * n; ++c) after += u[c] * u[c];
        if (!(after > S(1e-20) * before)) continue;
        const S len = sqrt(after);
        for (int c = 0; c < 2 * n; ++c) u[c] /= len;
        ++kept;
      }
      return kept;
    }
  }

  NHOLO_HDI static void split(const Vec<S, N>& y, Vec<S, n>& q, Vec<S, n>& qd) {
    split_state(y, q, qd);
  }

  NHOLO_HDI static Vec<S, N0> base_state(const Vec<S, N>& y) {
    Vec<S, N0> y0;
    for (int c = 0; c < N0; ++c) y0[c] = y[c];
    return y0;
  }
  // |delta_j|
  NHOLO_HDI static S tangent_norm(const Vec<S, N>& y, int j = 0) {
    S s = S(0);
    for (int c = N0 + j * N0; c < N0 + (j + 1) * N0; ++c) s += y[c] * y[c];
    return sqrt(s);
  }
  // the running estimate of the largest exponent (NaN before any time passed)
  NHOLO_HDI static S lyapunov_estimate(const Vec<S, N>& y) {
    return lyapunov_from(y[log_sum_index], tangent_norm(y), y[elapsed_index]);
  }
  // the running estimates of the K exponents (NaN before any time passed)
  // (the window's saves: the same arithmetic as spectrum_of_states, so the
  // last save's estimates are the per-trajectory result's bits)
  NHOLO_HDI static void spectrum_estimate(const Vec<S, N>& y, S* out) {
    lyapunov_spectrum_from<S, K, N0>(&y[N0], N0, 1, &y[log_sum_index], 1, y[elapsed_index], out);
  }
  // the running estimates of the K observed exponents at (t, y), the
  // trajectory's varied parameters varied[j * varied_stride] (null: none):
  // observed_spectrum_from, as observed_exponent_of_states reads the final
  // rows (the last save's estimates are the per-trajectory result's bits)
  NHOLO_HDI static void observed_estimate(const ObservableTable& table, S t, const Vec<S, N>& y,
                                          const double* varied, int64_t varied_stride, S* out) {
    S work[K * (kMaxObservables + 1)];
    observed_spectrum_from<S>(table, t, &y[0], 1, n, &y[N0], N0, 1, N0, &y[log_sum_index], 1,
                              y[elapsed_index], K, varied, varied_stride, work, out);
  }
};

// TangentSystem with Sys's per-trajectory cache (TangentSystem::prepare). The
// cache holds what the model declares the same at every state (M's factor,
// and with constant_force F and M^-1 F), so along any tangent its derivatives
// are zero: each evaluation takes it on the duals with zero tangents
// (ConstantMassCache::on_scalar) instead of factoring M on duals, and the
// values are those of the state's own cached evaluation.
template <class TS, class Cache>
struct TangentPrepared : TS {
  using S = typename TS::scalar;
  static constexpr int N = TS::N;
  Cache cache;  // Sys's, on S

  NHOLO_HD Status operator()(S t, const Vec<S, N>& y, Vec<S, N>& dydt) const {
    return this->evaluate(t, y, dydt, cache.template on_scalar<typename TS::D>());
  }
};

// N0 of a tangent system (its base system's state size: where its tangents
// start in the state), -1 for any other system; and its K.
template <class Sys>
struct tangent_base_size : std::integral_constant<int, -1> {};
template <class Sys, int K>
struct tangent_base_size<TangentSystem<Sys, K>> : std::integral_constant<int, Sys::N> {};
template <class Sys>
struct tangent_exponents : std::integral_constant<int, 0> {};
template <class Sys, int K>
struct tangent_exponents<TangentSystem<Sys, K>> : std::integral_constant<int, K> {};

// What a run reads of a slice's final tangent states, in structure-of-arrays
// layout (component c of trajectory i at [c count + i]), given from
// component N0 on: the K deltas' K N0 rows, then the K log sums, tau, T;
// with room for the readers' work, K N0 + K doubles.
// For the observed exponents also the state's rows (from component 0), the
// times, the model's n, the observables (null: none) and the varied
// parameters' rows the observables read (null: none).
struct TangentRows {
  const double* from_tangent;
  int64_t count;
  int N0, K;
  double* work;  // K (N0 + kMaxObservables + 1) values
  const double* state = nullptr;
  const double* t = nullptr;
  int n = 0;
  const ObservableTable* observables = nullptr;
  const double* varied = nullptr;
  const double* delta(int64_t i, int j) const { return from_tangent + j * N0 * count + i; }
  const double* log_sum(int64_t i) const { return from_tangent + K * N0 * count + i; }
  double elapsed(int64_t i) const { return from_tangent[(K * N0 + K + 1) * count + i]; }
};

// The estimates of trajectory i's K exponents (out[0..K)) from a slice's
// rows (host code: a run's K is a value, up to kMaxTangentExponents).
inline constexpr int kMaxTangentExponents = 64;
inline void spectrum_of_states(const TangentRows& rows, int64_t i, double* out) {
  const int N0 = rows.N0, K = rows.K;
  double *v = rows.work, *r = rows.work + K * N0;
  // modified Gram-Schmidt as orthonormalize<double, K, N0> (same order)
  for (int j = 0; j < K; ++j) {
    double* vj = v + j * N0;
    for (int c = 0; c < N0; ++c) vj[c] = rows.delta(i, j)[c * rows.count];
    for (int l = 0; l < j; ++l) {
      const double* vl = v + l * N0;
      double p = 0;
      for (int c = 0; c < N0; ++c) p += vl[c] * vj[c];
      for (int c = 0; c < N0; ++c) vj[c] -= p * vl[c];
    }
    double s = 0;
    for (int c = 0; c < N0; ++c) s += vj[c] * vj[c];
    r[j] = sqrt(s);
    if (r[j] > 0 && is_finite(r[j]))
      for (int c = 0; c < N0; ++c) vj[c] /= r[j];
    out[j] = lyapunov_from(rows.log_sum(i)[j * rows.count], r[j], rows.elapsed(i));
  }
}

// The observed largest exponent of trajectory i (out[0], the first delta's;
// kernels' arithmetic: TangentSystem::observed_estimate, a run with
// observables has K = 1); NaN without observables.
inline void observed_exponent_of_states(const TangentRows& rows, int64_t i, double* out) {
  if (!rows.observables || !rows.state || !rows.t) {
    out[0] = NAN;
    return;
  }
  const int64_t c = rows.count;
  observed_spectrum_from<double>(*rows.observables, rows.t[i], rows.state + i, c, rows.n,
                                 rows.delta(i, 0), rows.N0 * c, c, rows.N0, rows.log_sum(i), c,
                                 rows.elapsed(i), 1, rows.varied ? rows.varied + i : nullptr, c,
                                 rows.work, out);
}

// The sum of the exponents lambda[0..K).
inline double spectrum_sum(const double* lambda, int K) {
  double s = 0;
  for (int j = 0; j < K; ++j) s += lambda[j];
  return s;
}

// The Kaplan-Yorke (Lyapunov) dimension of the exponents lambda[0..K) of a
// state space of dimension N0: with the exponents in decreasing order and j
// the largest count whose partial sum is >= 0, D = j + (lambda_1 + ... +
// lambda_j) / |lambda_(j+1)|; 0 where lambda_1 < 0; N0 where every partial
// sum of all N0 exponents is >= 0; NaN where the K < N0 exponents known all
// have partial sums >= 0 (the dimension is at least K, not determined) or
// one is NaN.
inline double kaplan_yorke_dimension(const double* lambda, int K, int N0) {
  double l[kMaxTangentExponents];
  if (K > kMaxTangentExponents) return NAN;
  for (int j = 0; j < K; ++j) {
    if (!(lambda[j] == lambda[j])) return NAN;
    l[j] = lambda[j];
  }
  for (int a = 1; a < K; ++a)  // insertion sort, decreasing
    for (int b = a; b > 0 && l[b] > l[b - 1]; --b) {
      const double x = l[b];
      l[b] = l[b - 1];
      l[b - 1] = x;
    }
  double partial = 0;
  for (int j = 0; j < K; ++j) {
    if (partial + l[j] < 0) return j + partial / -l[j];
    partial += l[j];
  }
  return K == N0 ? static_cast<double>(K) : NAN;
}

// The readers of the table of per-trajectory results
// (host/config/trajectory_results.hpp): trajectory i's values from a slice's
// final tangent rows.
inline void largest_exponent_of_states(const TangentRows& rows, int64_t i, double* out) {
  double lambda[kMaxTangentExponents];
  if (rows.K > kMaxTangentExponents) {
    out[0] = NAN;
    return;
  }
  spectrum_of_states(rows, i, lambda);
  out[0] = lambda[0];
}
inline void spectrum_sum_of_states(const TangentRows& rows, int64_t i, double* out) {
  double lambda[kMaxTangentExponents];
  if (rows.K > kMaxTangentExponents) {
    out[0] = NAN;
    return;
  }
  spectrum_of_states(rows, i, lambda);
  out[0] = spectrum_sum(lambda, rows.K);
}
inline void kaplan_yorke_of_states(const TangentRows& rows, int64_t i, double* out) {
  double lambda[kMaxTangentExponents];
  if (rows.K > kMaxTangentExponents) {
    out[0] = NAN;
    return;
  }
  spectrum_of_states(rows, i, lambda);
  out[0] = kaplan_yorke_dimension(lambda, rows.K, rows.N0);
}

}  // namespace nholo
