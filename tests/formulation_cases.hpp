// nholo/tests/formulation_cases.hpp — what the tests of the formulations
// (tests/test_formulations.cpp, test_formulation_trajectories.cpp) feed them:
// Gen<Model> draws random parameters and CONSISTENT states of every model;
// accel evaluates one formulation's acceleration; trajectory integrates a
// system (DOP853 at the tight() tolerances) and trajectory_gap compares two
// trajectories; `close` compares vectors to a tolerance relative to the
// wanted one.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/formulations.hpp"
#include "models/registry.hpp"
#include "tests/integrator_options.hpp"
#include "tests/random_values.hpp"

namespace nholo_test {

using namespace nholo;
using namespace nholo::models;

template <int N>
double max_diff(const V<N>& a, const V<N>& b) {
  double s = 0.0;
  for (int i = 0; i < N; ++i) s = std::max(s, std::abs(a[i] - b[i]));
  return s;
}
// |a - b|_inf <= tol (1 + |b|_inf)
template <int N>
::testing::AssertionResult close(const V<N>& a, const V<N>& b, double tol) {
  const double d = max_diff(a, b), lim = tol * (1.0 + max_abs(b));
  if (d <= lim) return ::testing::AssertionSuccess();
  ::testing::AssertionResult r = ::testing::AssertionFailure();
  r << "max difference " << d << " > " << lim << " (got";
  for (int i = 0; i < N; ++i) r << " " << a[i];
  r << "; want";
  for (int i = 0; i < N; ++i) r << " " << b[i];
  return r << ")";
}

// ------------------------------------------------------------------ states
// Random parameters and CONSISTENT states (on the position and velocity
// constraints) for every model; parameters kept where the formulations are
// all regular (M positive definite, A of full row rank).

template <class Model>
struct State {
  typename Model::Params p;
  V<Model::n> q, qd;
  double t;
};

template <class Model>
struct Gen;

template <>
struct Gen<RollingCoin> {
  static State<RollingCoin> draw(Rng& r) {
    State<RollingCoin> s;
    s.p = {uni(r, 0.5, 2.0), uni(r, 0.3, 1.5), uni(r, 1.0, 10.0), uni(r, -0.6, 0.6)};
    for (int i = 0; i < 4; ++i) s.q[i] = uni(r, -3.0, 3.0);
    const double phid = uni(r, -2.0, 2.0), thd = signed_uni(r, 0.2, 2.0), R = s.p.radius;
    s.qd = V<4>{{R * phid * std::sin(s.q[3]), R * phid * std::cos(s.q[3]), phid, thd}};
    s.t = uni(r, 0.0, 5.0);
    return s;
  }
};
template <>
struct Gen<RollingCoinRedundant> {
  static State<RollingCoinRedundant> draw(Rng& r) {
    const auto s = Gen<RollingCoin>::draw(r);
    return {s.p, s.q, s.qd, s.t};
  }
};
template <>
struct Gen<Skate> {
  static State<Skate> draw(Rng& r) {
    State<Skate> s;
    const double m = uni(r, 0.5, 2.0), a = uni(r, -0.8, 0.8);
    s.p = {m, a, m * a * a + uni(r, 0.2, 1.5), uni(r, 1.0, 10.0), uni(r, -0.6, 0.6)};
    knife_edge_state(r, s.q, s.qd);
    s.t = uni(r, 0.0, 5.0);
    return s;
  }
};
template <>
struct Gen<Sleigh> {
  static State<Sleigh> draw(Rng& r) {
    State<Sleigh> s;
    const double a = uni(r, 0.0, 0.8);
    s.p = {uni(r, 0.5, 2.0), a * a + uni(r, 0.2, 1.5), a, uni(r, 1.0, 10.0), uni(r, -0.6, 0.6),
           uni(r, 0.0, 1.0)};
    knife_edge_state(r, s.q, s.qd);
    s.t = uni(r, 0.0, 5.0);
    return s;
  }
};
template <>
struct Gen<SkateRedundant> {
  static State<SkateRedundant> draw(Rng& r) {
    const auto s = Gen<Skate>::draw(r);
    return {s.p, s.q, s.qd, s.t};
  }
};
template <>
struct Gen<Appell> {
  // xd^2 + yd^2 - zd^2 = 2 alpha g(t), zd^2 kept away from 0
  static State<Appell> draw(Rng& r) {
    State<Appell> s;
    s.p = {uni(r, -0.5, 0.5), uni(r, 0.0, 1.0), uni(r, -3.0, 3.0), uni(r, -3.0, 3.0),
           uni(r, -3.0, 3.0), uni(r, 0.2, 1.5), uni(r, 0.3, 2.0)};
    s.q = V<3>{{uni(r, -3.0, 3.0), uni(r, -3.0, 3.0), uni(r, -3.0, 3.0)}};
    for (;;) {
      const double xd = uni(r, -2.0, 2.0), yd = uni(r, -2.0, 2.0), t = uni(r, 0.0, 5.0);
      const double zd2 = xd * xd + yd * yd - 2.0 * s.p.alpha * Appell::g_of_t(s.p, t);
      if (zd2 < 0.2) continue;
      s.qd = V<3>{{xd, yd, (uni(r, 0.0, 1.0) < 0.5 ? -1.0 : 1.0) * std::sqrt(zd2)}};
      s.t = t;
      return s;
    }
  }
};
template <>
struct Gen<UdwadiaExample2> {
  static State<UdwadiaExample2> draw(Rng& r) {
    State<UdwadiaExample2> s;
    s.p = {uni(r, -2.0, 2.0), uni(r, 0.0, 0.95)};
    s.q = V<3>{{uni(r, -2.0, 2.0), uni(r, -2.0, 2.0), uni(r, -2.0, 2.0)}};
    const double xd = uni(r, -2.0, 2.0), zd = uni(r, -2.0, 2.0);
    s.qd = V<3>{{xd, s.p.c * s.q[2] * xd, zd}};
    s.t = uni(r, 0.0, 5.0);
    return s;
  }
};
template <>
struct Gen<UdwadiaExample3> {
  // x = c yd zd, yd^2 + zd^2 kept away from 0
  static State<UdwadiaExample3> draw(Rng& r) {
    State<UdwadiaExample3> s;
    s.p = {signed_uni(r, 0.3, 2.0)};
    double yd = 0.0, zd = 0.0;
    do {
      yd = uni(r, -2.0, 2.0);
      zd = uni(r, -2.0, 2.0);
    } while (yd * yd + zd * zd < 0.2);
    s.q = V<3>{{s.p.c * yd * zd, uni(r, -2.0, 2.0), uni(r, -2.0, 2.0)}};
    s.qd = V<3>{{uni(r, -2.0, 2.0), yd, zd}};
    s.t = uni(r, 0.0, 5.0);
    return s;
  }
};
template <>
struct Gen<UdwadiaExample4> {
  // y = z^2/2, yd = z zd
  static State<UdwadiaExample4> draw(Rng& r) {
    State<UdwadiaExample4> s;
    s.p = {uni(r, -3.0, 3.0), uni(r, -3.0, 3.0), uni(r, -3.0, 3.0)};
    const double z = uni(r, -2.0, 2.0), zd = uni(r, -2.0, 2.0);
    s.q = V<3>{{uni(r, -2.0, 2.0), 0.5 * z * z, z}};
    s.qd = V<3>{{uni(r, -2.0, 2.0), z * zd, zd}};
    s.t = uni(r, 0.0, 5.0);
    return s;
  }
};
template <>
struct Gen<InclineBlock> {
  // y = x tan(theta), velocity along the plane, nonzero (Coulomb friction)
  static State<InclineBlock> draw(Rng& r) {
    State<InclineBlock> s;
    s.p = {uni(r, 0.5, 2.0), uni(r, 1.0, 10.0), uni(r, 0.1, 1.4), uni(r, 0.0, 1.0)};
    const double x = uni(r, -2.0, 2.0), sd = signed_uni(r, 0.05, 2.0);
    s.q = V<2>{{x, x * std::tan(s.p.angle)}};
    s.qd = V<2>{{sd * std::cos(s.p.angle), sd * std::sin(s.p.angle)}};
    s.t = uni(r, 0.0, 5.0);
    return s;
  }
};
template <>
struct Gen<ParallelVelocities> {
  static State<ParallelVelocities> draw(Rng& r) {
    State<ParallelVelocities> s;
    s.p = {uni(r, 0.5, 3.0), uni(r, 0.5, 3.0)};
    for (int i = 0; i < 4; ++i) s.q[i] = uni(r, -3.0, 3.0);
    const double phi = uni(r, -3.2, 3.2), s1 = signed_uni(r, 0.1, 2.0),
                 s2 = signed_uni(r, 0.1, 2.0);
    s.qd = V<4>{{s1 * std::cos(phi), s1 * std::sin(phi), s2 * std::cos(phi), s2 * std::sin(phi)}};
    s.t = uni(r, 0.0, 5.0);
    return s;
  }
};
template <>
struct Gen<IntegrableConstraint> {
  // qd along the null space of A = [4 q1 + 3 q2^2, 2 q1 q2], |A| away from 0
  static State<IntegrableConstraint> draw(Rng& r) {
    State<IntegrableConstraint> s;
    integrable_constraint_state(r, s.q, s.qd);
    s.t = uni(r, 0.0, 5.0);
    return s;
  }
};

template <class Sys>
Acceleration<double, Sys::n, Sys::m> accel(const typename Sys::Params& p, const V<Sys::n>& q,
                                           const V<Sys::n>& qd, double t,
                                           const EvalOptions& eo = EvalOptions()) {
  Sys sys{p, eo};
  return sys.acceleration(t, q, qd);
}

// ------------------------------------------------------ trajectories

inline IntegratorOptions tight() {
  return tolerance_options(Method::dop853, 1e-13);
}

// q, qd at t = 1, 2, ..., t_end (the first 2n components of the state)
template <class Sys>
std::vector<V<2 * Sys::n>> trajectory(const Sys& sys, const V<Sys::n>& q0, const V<Sys::n>& qd0,
                                      double t_end, const IntegratorOptions& opt,
                                      const V<Sys::m>& lambda0 = V<Sys::m>::zero(),
                                      double dt_save = 1.0) {
  V<Sys::N> y0;
  sys.pack(q0, qd0, lambda0, y0);
  auto ts = start_trajectory<double, Sys::N>(0.0, y0, opt);
  std::vector<V<2 * Sys::n>> out;
  const int saves = static_cast<int>(std::lround(t_end / dt_save));
  for (int k = 1; k <= saves; ++k) {
    advance_to(sys, ts, k * dt_save, opt);
    EXPECT_EQ(ts.status, Status::ok)
        << Sys::model_type::name << " " << Sys::formulation_name << " at t = " << ts.t;
    if (ts.status != Status::ok) return out;
    V<2 * Sys::n> qq;
    for (int c = 0; c < 2 * Sys::n; ++c) qq[c] = ts.y[c];
    out.push_back(qq);
  }
  return out;
}

// largest |a - b| / (1 + |b|) over a pair of trajectories
template <int N>
double trajectory_gap(const std::vector<V<N>>& a, const std::vector<V<N>>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0.0;
  for (size_t k = 0; k < std::min(a.size(), b.size()); ++k)
    worst = std::max(worst, max_diff(a[k], b[k]) / (1.0 + max_abs(b[k])));
  return a.size() == b.size() ? worst : INFINITY;
}

inline constexpr double kTolTraj = 1e-10;

}  // namespace nholo_test
