// Lyapunov exponents from the tangent flow (kernels/lyapunov.hpp), against
// closed forms: a saddle point whose unstable eigenvalue is sqrt(k) (the
// largest exponent, and the whole spectrum of this linear flow from its exact
// flow map), the integrable rolling coin, whose exponent decays like
// log(t)/t, and the Kaplan-Yorke dimension of given exponents.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "kernels/formulations.hpp"
#include "kernels/integrate.hpp"
#include "kernels/lyapunov.hpp"
#include "kernels/model.hpp"
#include "models/rolling_coin.hpp"

namespace {

using namespace nholo;

// A particle in space held on the plane z = 0 in the potential
// V = -k x^2 / 2 + w^2 y^2 / 2: at rest at the origin it stays there, and the
// linearised flow there has the exponents +-sqrt(k) (x), 0 (y: a centre) and
// 0 (z: the constraint's direction, neutral under Udwadia-Kalaba).
struct SaddleOnPlane {
  static constexpr const char* name = "saddle_on_plane";
  static constexpr const char* description = "a particle at a saddle point, held on z = 0";
  static constexpr int n = 3;
  static constexpr int m_position = 1;
  static constexpr int m_velocity = 0;
  static constexpr int m_acceleration = 0;
  static constexpr int n_params = 2;
  static constexpr const char* coordinates[n] = {"x", "y", "z"};
  static constexpr const char* coordinate_units[n] = {"m", "m", "m"};
  static constexpr const char* constraint_names[1] = {"plane"};
  static constexpr ParamInfo param_info[n_params] = {
      {"k", 1.0, "1/s^2", "curvature of the unstable direction", positive()},
      {"w", 2.0, "1/s", "frequency of the stable direction", positive()},
  };
  struct Params {
    double k, w;
  };
  NHOLO_HDI static Params make_params(const double* v) { return Params{v[0], v[1]}; }
  template <class S>
  NHOLO_HDI static S lagrangian(const Params& p, const Vec<S, n>& q, const Vec<S, n>& qd,
                                const S& /*t*/) {
    return 0.5 * (qd[0] * qd[0] + qd[1] * qd[1] + qd[2] * qd[2]) + 0.5 * p.k * q[0] * q[0] -
           0.5 * p.w * p.w * q[1] * q[1];
  }
  template <class S>
  NHOLO_HDI static Vec<S, 1> position_constraints(const Params& /*p*/, const Vec<S, n>& q,
                                                  const S& /*t*/) {
    Vec<S, 1> phi;
    phi[0] = q[2];
    return phi;
  }
  template <class S>
  NHOLO_HDI static S energy(const Params& p, const Vec<S, n>& q, const Vec<S, n>& qd, const S& t) {
    return 0.5 * (qd[0] * qd[0] + qd[1] * qd[1] + qd[2] * qd[2]) - 0.5 * p.k * q[0] * q[0] +
           0.5 * p.w * p.w * q[1] * q[1] + 0 * t;
  }
};

template <class Sys>
double exponent_at(const TangentSystem<Sys>& ts_sys, const Vec<double, Sys::n>& q0,
                   const Vec<double, Sys::n>& qd0, double t_end, Method method) {
  using T = TangentSystem<Sys>;
  IntegratorOptions opt;
  opt.method = method;
  opt.rtol = 1e-10;
  opt.atol = 1e-12;
  opt.dt = 1e-3;
  Vec<double, T::N> y;
  ts_sys.pack(q0, qd0, Vec<double, Sys::m>::zero(), y);
  auto st = start_trajectory<double, T::N>(0.0, y, opt);
  advance_to(ts_sys, st, t_end, opt);
  EXPECT_EQ(st.status, Status::ok);
  EXPECT_NEAR(st.y[T::elapsed_index], t_end, 1e-12 * t_end);  // T' = 1: exact up to rounding
  return T::lyapunov_estimate(st.y);
}

using SaddleUK = SecondOrderSystem<SaddleOnPlane, double, UdwadiaKalabaFormulation>;

// The sanitizer build (tests at -O0 under ASan, ~35x slower) integrates over
// shorter times; the closed forms hold for any T, and T = 800 still passes
// the point (lambda T ~ 709) where an unrenormalised tangent overflows.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kShort = true;
#else
constexpr bool kShort = false;
#endif
const double kSaddleT = kShort ? 100.0 : 400.0;
const double kLongT = kShort ? 800.0 : 2000.0;

TangentSystem<SaddleUK> saddle(double k, double renormalize_every) {
  TangentSystem<SaddleUK> s;
  s.params = SaddleOnPlane::Params{k, 2.0};
  s.renormalize_every = renormalize_every;
  return s;
}

// At the saddle the tangent's x part solves dx'' = k dx: dx(T) = a e^(sqrt(k) T)
// + b e^(-sqrt(k) T), a = (dx0 + dxdot0 / sqrt(k)) / 2 from the initial
// direction, and |delta(T)| -> |a| sqrt(1 + k) e^(sqrt(k) T) (y oscillates, z
// grows linearly): lambda(T) = sqrt(k) + log(|a| sqrt(1 + k)) / T up to
// O(T e^(-sqrt(k) T)).
double saddle_exponent(double k, double T) {
  double norm2 = 0;
  for (int c = 0; c < 6; ++c) norm2 += initial_tangent(c) * initial_tangent(c);
  const double a =
      0.5 * (initial_tangent(0) + initial_tangent(3) / std::sqrt(k)) / std::sqrt(norm2);
  return std::sqrt(k) + std::log(std::fabs(a) * std::sqrt(1 + k)) / T;
}

TEST(Lyapunov, ASaddlesExponentIsTheSquareRootOfItsCurvature) {
  const Vec<double, 3> zero = Vec<double, 3>::zero();
  for (const double k : {1.0, 2.25}) {
    for (const Method method : {Method::dopri5, Method::dop853}) {
      const double lambda = exponent_at(saddle(k, 1.0), zero, zero, kSaddleT, method);
      EXPECT_NEAR(lambda, saddle_exponent(k, kSaddleT), 1e-7) << "k " << k;
      EXPECT_NEAR(lambda, std::sqrt(k), (kShort ? 0.04 : 0.01) * std::sqrt(k)) << "k " << k;
      std::printf("saddle k %g, %s: lambda(%g) = %.8f, closed form %.8f, sqrt(k) = %g\n", k,
                  method == Method::dopri5 ? "dopri5" : "dop853", kSaddleT, lambda,
                  saddle_exponent(k, kSaddleT), std::sqrt(k));
    }
  }
}

TEST(Lyapunov, WhereTheTangentIsRenormalisedDoesNotChangeTheEstimate) {
  const Vec<double, 3> zero = Vec<double, 3>::zero();
  const double a = exponent_at(saddle(1.0, 0.5), zero, zero, 100.0, Method::dopri5);
  const double b = exponent_at(saddle(1.0, 7.0), zero, zero, 100.0, Method::dopri5);
  EXPECT_NEAR(a, b, 1e-9);
  // without renormalisation delta grows like e^t and overflows by t = 710
  const double never = exponent_at(saddle(1.0, 1e300), zero, zero, 100.0, Method::dopri5);
  EXPECT_NEAR(never, a, 1e-9);
}

TEST(Lyapunov, TheRenormalisationKeepsTheTangentRepresentableOverLongTimes) {
  const Vec<double, 3> zero = Vec<double, 3>::zero();
  const double lambda = exponent_at(saddle(1.0, 1.0), zero, zero, kLongT, Method::dopri5);
  EXPECT_TRUE(std::isfinite(lambda));
  EXPECT_NEAR(lambda, saddle_exponent(1.0, kLongT), 1e-7);
  // a schedule longer than the run: delta (~ e^t) is renormalised past 1e100
  // anyway (before, it overflowed at t ~ 709 and the trajectory ended non_finite)
  const double unscheduled = exponent_at(saddle(1.0, 1e300), zero, zero, kLongT, Method::dopri5);
  EXPECT_NEAR(unscheduled, saddle_exponent(1.0, kLongT), 1e-7);
}

TEST(Lyapunov, TheIntegrableCoinsExponentDecaysLikeLogTOverT) {
  using Coin = models::RollingCoin;
  using CoinUK = SecondOrderSystem<Coin, double, UdwadiaKalabaFormulation>;
  TangentSystem<CoinUK> s;
  s.params = Coin::Params{1.0, 1.0, 9.81, 0.3};
  s.renormalize_every = 1.0;
  // theta = 0.3 + 1.5 t, phi' = 2: x' and y' from the rolling constraints
  Vec<double, 4> q0{{0.0, 0.0, 0.0, 0.3}};
  Vec<double, 4> qd0{{2.0 * std::sin(0.3), 2.0 * std::cos(0.3), 2.0, 1.5}};
  if (kShort) std::printf("sanitizer build: the coin to t = 100 only\n");
  for (const double t : {100.0, 500.0}) {
    if (kShort && t > 100.0) continue;
    const double lambda = exponent_at(s, q0, qd0, t, Method::dopri5);
    // the coin's tangent grows polynomially (like t), so lambda(t) ~ c log(t) / t
    EXPECT_GT(lambda, 0.0) << "t " << t;
    EXPECT_LT(lambda, 2.0 * std::log(t) / t) << "t " << t;
    std::printf("coin: lambda(%g) = %.5f, log(t)/t = %.5f\n", t, lambda, std::log(t) / t);
  }
  if (!kShort) {
    EXPECT_LT(exponent_at(s, q0, qd0, 500.0, Method::dop853), 0.05);
  }
}

// The saddle's flow is linear, y' = A y, for any state (x'' = k x, y'' =
// -w^2 y, z'' = 0: the constraint's acceleration), with the exact flow map
// Phi(dt) per block. Benettin's estimates are (1 / T) log of the diagonal
// of R in Phi(T) Q0 = Q R: computed here with Phi(dt) and this test's own
// Gram-Schmidt after each dt (Phi(T) = Phi(dt)^(T/dt), and the QR of a
// product is the product of the steps' R), in long double.
std::vector<double> saddle_spectrum(double k, double w, double T, int K) {
  const long double s = std::sqrt(static_cast<long double>(k)), dt = 0.5L;
  std::vector<std::vector<long double>> v(K, std::vector<long double>(6));
  for (int j = 0; j < K; ++j)
    for (int c = 0; c < 6; ++c) v[j][c] = initial_tangent(c, j);
  std::vector<long double> log_sum(K, 0.0L);
  auto gram_schmidt = [&](bool accumulate) {
    for (int j = 0; j < K; ++j) {
      for (int i = 0; i < j; ++i) {
        long double p = 0;
        for (int c = 0; c < 6; ++c) p += v[i][c] * v[j][c];
        for (int c = 0; c < 6; ++c) v[j][c] -= p * v[i][c];
      }
      long double r = 0;
      for (int c = 0; c < 6; ++c) r += v[j][c] * v[j][c];
      r = std::sqrt(r);
      for (int c = 0; c < 6; ++c) v[j][c] /= r;
      if (accumulate) log_sum[j] += std::log(r);
    }
  };
  gram_schmidt(false);
  const long double ch = std::cosh(s * dt), sh = std::sinh(s * dt);
  const long double co = std::cos(w * dt), si = std::sin(w * dt);
  const int steps = static_cast<int>(std::lround(T / static_cast<double>(dt)));
  for (int step = 0; step < steps; ++step) {
    for (auto& u : v) {  // (x, y, z, x', y', z')
      const long double x = u[0], y = u[1], z = u[2], xd = u[3], yd = u[4], zd = u[5];
      u[0] = ch * x + sh / s * xd;
      u[3] = s * sh * x + ch * xd;
      u[1] = co * y + si / w * yd;
      u[4] = -w * si * y + co * yd;
      u[2] = z + dt * zd;
      u[5] = zd;
    }
    gram_schmidt(true);
  }
  std::vector<double> lambda(K);
  for (int j = 0; j < K; ++j) lambda[j] = static_cast<double>(log_sum[j] / T);
  return lambda;
}

template <int K>
std::vector<double> saddle_spectrum_integrated(double k, double T, double renormalize_every) {
  using Sys = TangentSystem<SaddleUK, K>;
  Sys ts;
  ts.params = SaddleOnPlane::Params{k, 2.0};
  ts.renormalize_every = renormalize_every;
  IntegratorOptions opt;
  opt.method = Method::dop853;
  opt.rtol = 1e-11;
  opt.atol = 1e-13;
  opt.dt = 1e-3;
  const Vec<double, 3> zero = Vec<double, 3>::zero();
  Vec<double, Sys::N> y;
  ts.pack(zero, zero, Vec<double, 1>::zero(), y);
  auto st = start_trajectory<double, Sys::N>(0.0, y, opt);
  advance_to(ts, st, T, opt);
  EXPECT_EQ(st.status, Status::ok);
  std::vector<double> lambda(K);
  Sys::spectrum_estimate(st.y, lambda.data());
  return lambda;
}

TEST(LyapunovSpectrum, TheSaddlesSpectrumIsItsFlowMapsQRAtEveryK) {
  const double k = 2.25, T = kShort ? 20.0 : 60.0;
  const std::vector<double> exact = saddle_spectrum(k, 2.0, T, 6);
  const std::vector<double> all = saddle_spectrum_integrated<6>(k, T, 1.0);
  for (int j = 0; j < 6; ++j) {
    EXPECT_NEAR(all[j], exact[j], 1e-7) << "exponent " << j;
    std::printf("saddle k %g: lambda_%d(%g) = %+.9f, exact flow map %+.9f\n", k, j + 1, T, all[j],
                exact[j]);
  }
  // the limits: +-sqrt(k) (x), 0 for the centre (y) and the constraint's
  // direction (z, growing linearly): the finite-T values are log-like
  // transients away from them
  EXPECT_NEAR(all[0], std::sqrt(k), 0.1);
  EXPECT_NEAR(all[5], -std::sqrt(k), 0.1);
  for (int j = 1; j < 5; ++j) EXPECT_NEAR(all[j], 0.0, 0.15) << "exponent " << j;
  // a volume-preserving flow (tr A = 0): the six sum to zero at any T
  double sum = 0;
  for (double l : all) sum += l;
  EXPECT_NEAR(sum, 0.0, 1e-9);
  // fewer vectors: the first K of the spectrum (Gram-Schmidt takes them in
  // order), and where they are reorthonormalised does not change them
  const std::vector<double> two = saddle_spectrum_integrated<2>(k, T, 0.25);
  const std::vector<double> exact2 = saddle_spectrum(k, 2.0, T, 2);
  for (int j = 0; j < 2; ++j) {
    EXPECT_NEAR(two[j], exact[j], 1e-7) << "exponent " << j;
    EXPECT_NEAR(exact2[j], exact[j], 1e-12) << "exponent " << j;
  }
}

TEST(LyapunovSpectrum, OneVectorIsTheLargestExponentsTangentSystem) {
  // K = 1 is the largest exponent's system as it was: the same state layout
  static_assert(TangentSystem<SaddleUK, 1>::N == 2 * SaddleUK::N + 3);
  static_assert(TangentSystem<SaddleUK, 1>::elapsed_index == 2 * SaddleUK::N + 2);
  const std::vector<double> one = saddle_spectrum_integrated<1>(2.25, 30.0, 1.0);
  EXPECT_NEAR(one[0], saddle_exponent(2.25, 30.0), 1e-7);
}

TEST(LyapunovSpectrum, KaplanYorkeDimensionOfGivenExponents) {
  const double chaotic[3] = {0.2, 0.0, -0.5};
  EXPECT_DOUBLE_EQ(kaplan_yorke_dimension(chaotic, 3, 3), 2.0 + 0.2 / 0.5);
  const double unordered[3] = {-0.5, 0.2, 0.0};  // sorted first
  EXPECT_DOUBLE_EQ(kaplan_yorke_dimension(unordered, 3, 3), 2.4);
  const double stable[2] = {-0.1, -0.3};
  EXPECT_EQ(kaplan_yorke_dimension(stable, 2, 4), 0.0);
  const double growing[2] = {0.3, 0.1};
  EXPECT_TRUE(std::isnan(kaplan_yorke_dimension(growing, 2, 4)));  // at least 2: not known
  EXPECT_EQ(kaplan_yorke_dimension(growing, 2, 2), 2.0);
  const double limit_cycle[3] = {0.0, -0.2, -1.0};
  EXPECT_DOUBLE_EQ(kaplan_yorke_dimension(limit_cycle, 3, 3), 1.0);
  const double with_nan[2] = {0.3, NAN};
  EXPECT_TRUE(std::isnan(kaplan_yorke_dimension(with_nan, 2, 2)));
  EXPECT_DOUBLE_EQ(spectrum_sum(chaotic, 3), -0.3);
}

// The largest exponent's system as it was before the spectrum (one tangent
// vector: its pack, renormalisation and estimate restated here from the
// former kernels/lyapunov.hpp), to show that TangentSystem<Sys, 1> gives the
// same bits: results of runs with exponents = 1 are unchanged.
template <class Sys>
struct FormerTangent : TangentSystem<Sys, 1> {
  using Base = TangentSystem<Sys, 1>;
  using Base::N;
  using Base::N0;
  bool post_step(double t, Vec<double, N>& y) const {
    Vec<double, N0> y0 = Base::base_state(y);
    bool moved = this->system().post_step(t, y0);
    if (moved)
      for (int c = 0; c < N0; ++c) y[c] = y0[c];
    double s = 0;
    for (int c = N0; c < 2 * N0; ++c) s += y[c] * y[c];
    const double norm = std::sqrt(s);
    if (y[Base::tau_index] >= this->renormalize_every || norm > 1e100) {
      if (norm > 0 && std::isfinite(norm)) {
        for (int c = N0; c < 2 * N0; ++c) y[c] /= norm;
        y[Base::log_sum_index] += std::log(norm);
      }
      y[Base::tau_index] = 0;
      moved = true;
    }
    return moved;
  }
  void pack(const Vec<double, Sys::n>& q, const Vec<double, Sys::n>& qd,
            const Vec<double, Sys::m>& l0, Vec<double, N>& y) const {
    Vec<double, N0> y0;
    this->system().pack(q, qd, l0, y0);
    double sum = 0;
    for (int c = 0; c < N0; ++c) sum += initial_tangent(c) * initial_tangent(c);
    const double scale = 1 / std::sqrt(sum);
    for (int c = 0; c < N0; ++c) {
      y[c] = y0[c];
      y[N0 + c] = initial_tangent(c) * scale;
    }
    y[Base::log_sum_index] = y[Base::tau_index] = y[Base::elapsed_index] = 0;
  }
};

TEST(LyapunovSpectrum, OneVectorGivesTheFormerLargestExponentsBits) {
  using Coin = models::RollingCoin;
  using CoinUK = SecondOrderSystem<Coin, double, UdwadiaKalabaFormulation>;
  FormerTangent<CoinUK> former;
  TangentSystem<CoinUK, 1> now;
  former.params = now.params = Coin::Params{1.0, 1.0, 9.81, 0.3};
  former.renormalize_every = now.renormalize_every = 0.7;
  IntegratorOptions opt;
  opt.method = Method::dopri5;
  opt.rtol = 1e-10;
  opt.atol = 1e-12;
  opt.dt = 1e-3;
  Vec<double, 4> q0{{0.1, -0.2, 0.4, 0.3}};
  Vec<double, 4> qd0{{2.0 * std::sin(0.3), 2.0 * std::cos(0.3), 2.0, 1.5}};
  using Y = Vec<double, TangentSystem<CoinUK, 1>::N>;
  Y a, b;
  former.pack(q0, qd0, Vec<double, CoinUK::m>::zero(), a);
  now.pack(q0, qd0, Vec<double, CoinUK::m>::zero(), b);
  for (int c = 0; c < Y::size; ++c) ASSERT_EQ(a[c], b[c]) << c;
  auto sa = start_trajectory<double, TangentSystem<CoinUK, 1>::N>(0.0, a, opt);
  auto sb = start_trajectory<double, TangentSystem<CoinUK, 1>::N>(0.0, b, opt);
  advance_to(former, sa, 60.0, opt);
  advance_to(now, sb, 60.0, opt);
  EXPECT_EQ(sa.steps, sb.steps);
  for (int c = 0; c < Y::size; ++c) EXPECT_EQ(sa.y[c], sb.y[c]) << c;
  // the estimate: (log_sum + log |delta|) / T as before
  double s = 0;
  for (int c = CoinUK::N; c < 2 * CoinUK::N; ++c) s += sb.y[c] * sb.y[c];
  const double before = (sb.y[2 * CoinUK::N] + std::log(std::sqrt(s))) / sb.y[2 * CoinUK::N + 2];
  using NowSys = TangentSystem<CoinUK, 1>;
  double lambda[1];
  NowSys::spectrum_estimate(sb.y, lambda);
  EXPECT_EQ(lambda[0], before);
  EXPECT_EQ(NowSys::lyapunov_estimate(sb.y), before);
}

// A model that declares constant_mass and constant_force (the coin) gets the
// state's per-trajectory cache in its tangent system too (TangentPrepared: M's
// factor and M^-1 F as duals with zero tangents, not M factored on duals at
// each evaluation). Its tangents of those are zero either way, so the
// integration is the same, bit for bit, for two tangent vectors here; a
// model without the declarations (the saddle) has no such cache.
TEST(LyapunovSpectrum, TheConstantMassCacheGivesTheTangentItsBits) {
  using Coin = models::RollingCoin;
  using CoinUK = SecondOrderSystem<Coin, double, UdwadiaKalabaFormulation>;
  using T = TangentSystem<CoinUK, 2>;
  static_assert(has_prepare<T>::value, "the coin's tangent system has the state's cache");
  static_assert(!has_prepare<TangentSystem<SaddleUK, 2>>::value, "the saddle has none");
  T plain;
  plain.params = Coin::Params{1.0, 1.0, 9.81, 0.3};
  plain.renormalize_every = 0.7;
  IntegratorOptions opt;
  opt.method = Method::dopri5;
  opt.rtol = 1e-10;
  opt.atol = 1e-12;
  opt.dt = 1e-3;
  Vec<double, 4> q0{{0.1, -0.2, 0.4, 0.3}};
  Vec<double, 4> qd0{{2.0 * std::sin(0.3), 2.0 * std::cos(0.3), 2.0, 1.5}};
  Vec<double, T::N> y;
  plain.pack(q0, qd0, Vec<double, CoinUK::m>::zero(), y);
  const auto cached = prepare_system(plain, 0.0, y);
  static_assert(!std::is_same<std::decay_t<decltype(cached)>, T>::value, "a prepared system");
  ASSERT_TRUE(cached.cache.ok);
  auto sa = start_trajectory<double, T::N>(0.0, y, opt);
  auto sb = start_trajectory<double, T::N>(0.0, y, opt);
  advance_to(plain, sa, 40.0, opt);
  advance_to(cached, sb, 40.0, opt);
  ASSERT_EQ(sa.status, Status::ok);
  ASSERT_EQ(sb.status, Status::ok);
  EXPECT_EQ(sa.steps, sb.steps);
  for (int c = 0; c < T::N; ++c) EXPECT_EQ(sa.y[c], sb.y[c]) << c;
}

}  // namespace
