// nholo/tests/model_cases.hpp — every model's test cases, for the tests of
// models/*.hpp (tests/test_model_terms.cpp, test_model_closed_forms.cpp):
// Case<Model> draws random parameters and random CONSISTENT states and
// writes out the model's M, F, A, b (and C) derived by hand; ad_terms and
// fd_terms compute them by automatic differentiation and by finite
// differences; `close` compares to a tolerance relative to the wanted
// values; solve applies the fundamental equation.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>

#include "kernels/dynamics.hpp"
#include "kernels/fundamental.hpp"
#include "models/registry.hpp"
#include "tests/random_values.hpp"

namespace nholo_test {

using namespace nholo;
using namespace nholo::models;

inline constexpr int kStates = 200;  // random consistent states per check

// FNV-1a of a model name: a per-model seed, the same on every platform
inline std::uint64_t seed_of(const char* name) {
  std::uint64_t h = 1469598103934665603ull;
  for (; *name != '\0'; ++name) h = (h ^ static_cast<unsigned char>(*name)) * 1099511628211ull;
  return h;
}

template <int R, int C>
using Mx = Mat<double, R, C>;

template <int N>
V<N> unit(int i) {
  V<N> e = V<N>::zero();
  e[i] = 1.0;
  return e;
}

// ---------------------------------------------------------------- comparisons

template <int R, int C>
double max_abs(const Mx<R, C>& a) {
  double s = 0.0;
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) s = std::max(s, std::abs(a(i, j)));
  return s;
}

template <int N>
::testing::AssertionResult close(const V<N>& got, const V<N>& want, double tol) {
  const double scale = 1.0 + max_abs(want);
  for (int i = 0; i < N; ++i) {
    if (!(std::abs(got[i] - want[i]) <= tol * scale)) {
      std::ostringstream msg;
      msg.precision(17);
      msg << "component " << i << ": got " << got[i] << ", want " << want[i] << ", diff "
          << got[i] - want[i] << " > " << tol * scale;
      return ::testing::AssertionFailure() << msg.str();
    }
  }
  return ::testing::AssertionSuccess();
}
template <int R, int C>
::testing::AssertionResult close(const Mx<R, C>& got, const Mx<R, C>& want, double tol) {
  const double scale = 1.0 + max_abs(want);
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) {
      if (!(std::abs(got(i, j) - want(i, j)) <= tol * scale)) {
        std::ostringstream msg;
        msg.precision(17);
        msg << "entry (" << i << "," << j << "): got " << got(i, j) << ", want " << want(i, j)
            << ", diff " << got(i, j) - want(i, j) << " > " << tol * scale;
        return ::testing::AssertionFailure() << msg.str();
      }
    }
  return ::testing::AssertionSuccess();
}
inline ::testing::AssertionResult close(double got, double want, double tol) {
  V<1> g, w;
  g[0] = got;
  w[0] = want;
  return close(g, w, tol);
}

// ------------------------------------------------------- M, F, A, b containers

template <int n, int m>
struct Terms {
  Mx<n, n> M;
  V<n> F;
  Mx<m, n> A;
  V<m> b;
};

template <class Model>
using TermsOf = Terms<Model::n, m_of<Model>>;

// M, F by AD (LM = Model or Conflated<Model>), A, b by AD
template <class LM>
TermsOf<LM> ad_terms(const typename LM::Params& p, const V<LM::n>& q, const V<LM::n>& qd,
                     double t) {
  TermsOf<LM> r;
  lagrangian_terms_ad<LM>(p, q, qd, t, r.M, r.F);
  constraint_terms<LM>(p, q, qd, t, r.A, r.b);
  return r;
}

// ------------------------------------------------------ finite differences
// Central differences with one Richardson step (truncation error O(h^4)).

// d/ds f(s) at s = 0
template <class Fn>
double d1(const Fn& f, double h = 1e-3) {
  const auto D = [&f](double k) { return (f(k) - f(-k)) / (2.0 * k); };
  return (4.0 * D(0.5 * h) - D(h)) / 3.0;
}
// d2/ds2 f(s) at s = 0
template <class Fn>
double d2(const Fn& f, double h = 1e-3) {
  const double f0 = f(0.0);
  const auto D = [&f, f0](double k) { return (f(k) - 2.0 * f0 + f(-k)) / (k * k); };
  return (4.0 * D(0.5 * h) - D(h)) / 3.0;
}

// M, F, A, b by finite differences, independent of AD:
//   M_ij = d2L/dqd_i dqd_j
//   F_i  = dL/dq_i - D_v dL/dqd_i + Q_np,   D_v = qd . d/dq + d/dt (qd held fixed)
//   velocity rows:  A_lj = dg_l/dqd_j,  b_l = -D_v g_l
//   position rows:  A_lj = dphi_l/dq_j, b_l = -d2/ds2 phi_l(q + s qd, t + s)
template <class LM>
TermsOf<LM> fd_terms(const typename LM::Params& p, const V<LM::n>& q, const V<LM::n>& qd,
                     double t) {
  constexpr int n = LM::n;
  constexpr int mp = LM::m_position;
  constexpr int mv = LM::m_velocity;
  static_assert(LM::m_acceleration == 0, "no model here has acceleration constraints");
  TermsOf<LM> r;
  const auto L = [&p](const V<n>& qq, const V<n>& vv, double tt) {
    return LM::lagrangian(p, qq, vv, tt);
  };
  // momentum p_i = dL/dqd_i
  const auto mom = [&L](int i, const V<n>& qq, const V<n>& vv, double tt) {
    return d1([&](double s) { return L(qq, vv + s * unit<n>(i), tt); });
  };
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j)
      r.M(i, j) = d1([&](double s) { return mom(i, q, qd + s * unit<n>(j), t); });
    const double dLdq = d1([&](double s) { return L(q + s * unit<n>(i), qd, t); });
    const double Dv_mom = d1([&](double s) { return mom(i, q + s * qd, qd, t + s); });
    r.F[i] = dLdq - Dv_mom;
  }
  if constexpr (has_nonpotential_force<LM>::value) r.F += LM::nonpotential_force(p, q, qd, t);
  if constexpr (mp > 0) {
    for (int l = 0; l < mp; ++l) {
      const auto phi = [&p, l](const V<n>& qq, double tt) {
        return LM::position_constraints(p, qq, tt)[l];
      };
      for (int j = 0; j < n; ++j)
        r.A(l, j) = d1([&](double s) { return phi(q + s * unit<n>(j), t); });
      r.b[l] = -d2([&](double s) { return phi(q + s * qd, t + s); });
    }
  }
  if constexpr (mv > 0) {
    for (int l = 0; l < mv; ++l) {
      const auto g = [&p, l](const V<n>& qq, const V<n>& vv, double tt) {
        return LM::velocity_constraints(p, qq, vv, tt)[l];
      };
      for (int j = 0; j < n; ++j)
        r.A(mp + l, j) = d1([&](double s) { return g(q, qd + s * unit<n>(j), t); });
      r.b[mp + l] = -d1([&](double s) { return g(q + s * qd, qd, t + s); });
    }
  }
  return r;
}

// ---------------------------------------------------------------- per model
// Case<Model>: random parameters, random CONSISTENT states (velocities on the
// velocity constraints, positions on the position constraints) and the hand
// derivation of M, F, A, b (and of the conflated M, F, and of C).

template <class Model>
struct State {
  V<Model::n> q, qd;
  double t;
};

template <class Model>
struct Case;

template <>
struct Case<RollingCoin> {
  using P = RollingCoin::Params;
  static P params(Rng& r) {
    return P{uni(r, 0.5, 2.0), uni(r, 0.3, 1.5), uni(r, 1.0, 10.0), uni(r, -0.6, 0.6)};
  }
  static State<RollingCoin> state(Rng& r, const P& p) {
    State<RollingCoin> s;
    for (int i = 0; i < 4; ++i) s.q[i] = uni(r, -3.0, 3.0);
    const double phid = uni(r, -2.0, 2.0), thd = uni(r, -2.0, 2.0);
    s.qd =
        V<4>{{p.radius * phid * std::sin(s.q[3]), p.radius * phid * std::cos(s.q[3]), phid, thd}};
    s.t = uni(r, -5.0, 5.0);
    return s;
  }
  // M = diag(m, m, m R^2/2, m R^2/4), F = (0, m g sin(alpha), 0, 0);
  // A = [[1, 0, -R sin th, 0], [0, 1, -R cos th, 0]],
  // b = (R phid thd cos th, -R phid thd sin th)
  static TermsOf<RollingCoin> hand(const P& p, const V<4>& q, const V<4>& qd, double) {
    TermsOf<RollingCoin> h;
    const double m = p.mass, R = p.radius, th = q[3];
    h.M = Mx<4, 4>::zero();
    h.M(0, 0) = m;
    h.M(1, 1) = m;
    h.M(2, 2) = 0.5 * m * R * R;
    h.M(3, 3) = 0.25 * m * R * R;
    h.F = V<4>{{0.0, m * p.g * std::sin(p.slope), 0.0, 0.0}};
    h.A = Mx<2, 4>::zero();
    h.A(0, 0) = 1.0;
    h.A(0, 2) = -R * std::sin(th);
    h.A(1, 1) = 1.0;
    h.A(1, 2) = -R * std::cos(th);
    h.b = V<2>{{R * qd[2] * qd[3] * std::cos(th), -R * qd[2] * qd[3] * std::sin(th)}};
    return h;
  }
};

template <>
struct Case<Skate> {
  using P = Skate::Params;
  static P params(Rng& r) {
    const double m = uni(r, 0.5, 2.0), s = uni(r, -0.8, 0.8);
    return P{m, s, m * s * s + uni(r, 0.2, 1.5), uni(r, 1.0, 10.0), uni(r, -0.6, 0.6)};
  }
  static State<Skate> state(Rng& r, const P&) {
    State<Skate> s;
    knife_edge_state(r, s.q, s.qd);
    s.t = uni(r, -5.0, 5.0);
    return s;
  }
  // M = [[m, 0, -m s sin th], [0, m, m s cos th], [-m s sin th, m s cos th, I_B]]
  // dL/dq = (m g sin(alpha), 0, -m s thd (yd sin th + xd cos th) - m g s sin(alpha) sin th)
  // D_v dL/dqd = (-m s thd^2 cos th, -m s thd^2 sin th, -m s thd (yd sin th + xd cos th))
  // F = (m g sin(alpha) + m s thd^2 cos th, m s thd^2 sin th, -m g s sin(alpha) sin th)
  // A = [-sin th, cos th, 0], b = thd (yd sin th + xd cos th)
  //                                        (Udwadia & Wanichanon 2010 eqs 2.4, 2.5)
  static TermsOf<Skate> hand(const P& p, const V<3>& q, const V<3>& qd, double) {
    TermsOf<Skate> h;
    const double m = p.mass, s = p.offset, c = std::cos(q[2]), sn = std::sin(q[2]);
    const double gs = p.g * std::sin(p.slope), thd = qd[2];
    h.M = Mx<3, 3>::zero();
    h.M(0, 0) = m;
    h.M(1, 1) = m;
    h.M(0, 2) = h.M(2, 0) = -m * s * sn;
    h.M(1, 2) = h.M(2, 1) = m * s * c;
    h.M(2, 2) = p.inertia;
    h.F = V<3>{{m * gs + m * s * thd * thd * c, m * s * thd * thd * sn, -m * gs * s * sn}};
    h.A = Mx<1, 3>::zero();
    h.A(0, 0) = -sn;
    h.A(0, 1) = c;
    h.b[0] = thd * (qd[1] * sn + qd[0] * c);
    return h;
  }
  // T+: M = diag(m, m, I_B), F = (m g sin(alpha), 0, -m g s sin(alpha) sin th)
  static TermsOf<Skate> hand_conflated(const P& p, const V<3>& q, const V<3>& qd, double t) {
    TermsOf<Skate> h = hand(p, q, qd, t);
    const double gs = p.g * std::sin(p.slope);
    h.M = Mx<3, 3>::zero();
    h.M(0, 0) = p.mass;
    h.M(1, 1) = p.mass;
    h.M(2, 2) = p.inertia;
    h.F = V<3>{{p.mass * gs, 0.0, -p.mass * gs * p.offset * std::sin(q[2])}};
    return h;
  }
};

// Wang & Gao's sleigh (eq 34 with the potential weight w): the skate's terms
// with I_B = m J, s = a, and the potential's offset (1 - w) a:
// M = [[m, 0, -m a sin th], [0, m, m a cos th], [-m a sin th, m a cos th, m J]],
// F = (m g sin(alpha) + m a thd^2 cos th, m a thd^2 sin th, -m g (1 - w) a sin(alpha) sin th),
// A = [-sin th, cos th, 0], b = thd (yd sin th + xd cos th)
template <>
struct Case<Sleigh> {
  using P = Sleigh::Params;
  static P params(Rng& r) {
    const double a = uni(r, 0.0, 0.8);
    return P{uni(r, 0.5, 2.0), a * a + uni(r, 0.2, 1.5), a, uni(r, 1.0, 10.0), uni(r, -0.6, 0.6),
             uni(r, 0.0, 1.0)};
  }
  static State<Sleigh> state(Rng& r, const P&) {
    State<Sleigh> s;
    knife_edge_state(r, s.q, s.qd);
    s.t = uni(r, -5.0, 5.0);
    return s;
  }
  static TermsOf<Sleigh> hand(const P& p, const V<3>& q, const V<3>& qd, double t) {
    TermsOf<Sleigh> h =
        Case<Skate>::hand(Skate::Params{p.mass, p.a, p.mass * p.J, p.g, p.slope}, q, qd, t);
    const double gs = p.g * std::sin(p.slope);
    h.F[2] = -p.mass * gs * (1.0 - p.paper_potential) * p.a * std::sin(q[2]);
    return h;
  }
};

template <>
struct Case<Appell> {
  using P = Appell::Params;
  static P params(Rng& r) {
    return P{uni(r, -0.5, 0.5), uni(r, 0.0, 1.0), uni(r, -3.0, 3.0), uni(r, -3.0, 3.0),
             uni(r, -3.0, 3.0), uni(r, 0.2, 1.5), uni(r, 0.3, 2.0)};
  }
  static double g_of_t(const P& p, double t) { return p.g_amplitude * std::sin(p.g_frequency * t); }
  static double gdot(const P& p, double t) {
    return p.g_amplitude * p.g_frequency * std::cos(p.g_frequency * t);
  }
  // zd^2 = xd^2 + yd^2 - 2 alpha g(t), kept away from 0
  static State<Appell> state(Rng& r, const P& p) {
    State<Appell> s;
    s.q = V<3>{{uni(r, -3.0, 3.0), uni(r, -3.0, 3.0), uni(r, -3.0, 3.0)}};
    for (;;) {
      const double xd = uni(r, -2.0, 2.0), yd = uni(r, -2.0, 2.0), t = uni(r, -5.0, 5.0);
      const double zd2 = xd * xd + yd * yd - 2.0 * p.alpha * g_of_t(p, t);
      if (zd2 < 0.2) continue;
      s.qd = V<3>{{xd, yd, (uni(r, 0.0, 1.0) < 0.5 ? -1.0 : 1.0) * std::sqrt(zd2)}};
      s.t = t;
      return s;
    }
  }
  // M = I, F = (Fx, Fy, Fz), A = [xd, yd, -zd], b = alpha gdot(t)
  static TermsOf<Appell> hand(const P& p, const V<3>&, const V<3>& qd, double t) {
    TermsOf<Appell> h;
    h.M = Mx<3, 3>::identity();
    h.F = V<3>{{p.force_x, p.force_y, p.force_z}};
    h.A(0, 0) = qd[0];
    h.A(0, 1) = qd[1];
    h.A(0, 2) = -qd[2];
    h.b[0] = p.alpha * gdot(p, t);
    return h;
  }
  // T+ = xd^2 + yd^2: M = diag(2, 2, 0), F unchanged
  static TermsOf<Appell> hand_conflated(const P& p, const V<3>& q, const V<3>& qd, double t) {
    TermsOf<Appell> h = hand(p, q, qd, t);
    h.M = Mx<3, 3>::zero();
    h.M(0, 0) = 2.0;
    h.M(1, 1) = 2.0;
    return h;
  }
  // C = -a0 |u| (xd, yd, zd)
  static V<3> hand_C(const P& p, const V<3>&, const V<3>& qd, double) {
    const double u = std::sqrt(qd[0] * qd[0] + qd[1] * qd[1] + qd[2] * qd[2]);
    return V<3>{{-p.drag * u * qd[0], -p.drag * u * qd[1], -p.drag * u * qd[2]}};
  }
};

template <>
struct Case<UdwadiaExample2> {
  using P = UdwadiaExample2::Params;
  static P params(Rng& r) { return P{uni(r, -2.0, 2.0), uni(r, 0.0, 0.95)}; }
  static State<UdwadiaExample2> state(Rng& r, const P& p) {
    State<UdwadiaExample2> s;
    s.q = V<3>{{uni(r, -2.0, 2.0), uni(r, -2.0, 2.0), uni(r, -2.0, 2.0)}};
    const double xd = uni(r, -2.0, 2.0), zd = uni(r, -2.0, 2.0);
    s.qd = V<3>{{xd, p.c * s.q[2] * xd, zd}};
    s.t = uni(r, -5.0, 5.0);
    return s;
  }
  // M = I, F = 0, A = [-c z, 1, 0], b = c xd zd        (Udwadia & Wanichanon 2010 eq 3.19)
  static TermsOf<UdwadiaExample2> hand(const P& p, const V<3>& q, const V<3>& qd, double) {
    TermsOf<UdwadiaExample2> h;
    h.M = Mx<3, 3>::identity();
    h.F = V<3>::zero();
    h.A(0, 0) = -p.c * q[2];
    h.A(0, 1) = 1.0;
    h.A(0, 2) = 0.0;
    h.b[0] = p.c * qd[0] * qd[2];
    return h;
  }
  // T+(alpha): M = diag(1 + c^2 alpha z^2, 1 - alpha, 1),
  // F = (-2 c^2 alpha xd z zd, 0, c^2 alpha xd^2 z)      (Udwadia & Wanichanon 2010 eq 3.23)
  static TermsOf<UdwadiaExample2> hand_conflated(const P& p, const V<3>& q, const V<3>& qd,
                                                 double t) {
    TermsOf<UdwadiaExample2> h = hand(p, q, qd, t);
    const double c2a = p.c * p.c * p.alpha, z = q[2];
    h.M = Mx<3, 3>::zero();
    h.M(0, 0) = 1.0 + c2a * z * z;
    h.M(1, 1) = 1.0 - p.alpha;
    h.M(2, 2) = 1.0;
    h.F = V<3>{{-2.0 * c2a * qd[0] * z * qd[2], 0.0, c2a * qd[0] * qd[0] * z}};
    return h;
  }
};

template <>
struct Case<UdwadiaExample3> {
  using P = UdwadiaExample3::Params;
  static P params(Rng& r) { return P{signed_uni(r, 0.3, 2.0)}; }
  // x = c yd zd, yd^2 + zd^2 kept away from 0
  static State<UdwadiaExample3> state(Rng& r, const P& p) {
    State<UdwadiaExample3> s;
    double yd = 0.0, zd = 0.0;
    do {
      yd = uni(r, -2.0, 2.0);
      zd = uni(r, -2.0, 2.0);
    } while (yd * yd + zd * zd < 0.2);
    s.q = V<3>{{p.c * yd * zd, uni(r, -2.0, 2.0), uni(r, -2.0, 2.0)}};
    s.qd = V<3>{{uni(r, -2.0, 2.0), yd, zd}};
    s.t = uni(r, -5.0, 5.0);
    return s;
  }
  // M = I, F = (-x, 0, 0), A = [0, c zd, c yd], b = xd    (Udwadia & Wanichanon 2010 eq 3.36)
  static TermsOf<UdwadiaExample3> hand(const P& p, const V<3>& q, const V<3>& qd, double) {
    TermsOf<UdwadiaExample3> h;
    h.M = Mx<3, 3>::identity();
    h.F = V<3>{{-q[0], 0.0, 0.0}};
    h.A(0, 0) = 0.0;
    h.A(0, 1) = p.c * qd[2];
    h.A(0, 2) = p.c * qd[1];
    h.b[0] = qd[0];
    return h;
  }
  // L+ = T - (c yd zd)^2/2: M = [[1, 0, 0], [0, 1 - c^2 zd^2, -2 c^2 yd zd],
  // [0, -2 c^2 yd zd, 1 - c^2 yd^2]] (Udwadia & Wanichanon 2010 eq 3.39), F = 0
  static TermsOf<UdwadiaExample3> hand_conflated(const P& p, const V<3>& q, const V<3>& qd,
                                                 double t) {
    TermsOf<UdwadiaExample3> h = hand(p, q, qd, t);
    const double c2 = p.c * p.c, yd = qd[1], zd = qd[2];
    h.M = Mx<3, 3>::zero();
    h.M(0, 0) = 1.0;
    h.M(1, 1) = 1.0 - c2 * zd * zd;
    h.M(1, 2) = h.M(2, 1) = -2.0 * c2 * yd * zd;
    h.M(2, 2) = 1.0 - c2 * yd * yd;
    h.F = V<3>::zero();
    return h;
  }
};

template <>
struct Case<UdwadiaExample4> {
  using P = UdwadiaExample4::Params;
  static P params(Rng& r) { return P{uni(r, -3.0, 3.0), uni(r, -3.0, 3.0), uni(r, -3.0, 3.0)}; }
  // y = z^2/2, yd = z zd
  static State<UdwadiaExample4> state(Rng& r, const P&) {
    State<UdwadiaExample4> s;
    const double z = uni(r, -2.0, 2.0), zd = uni(r, -2.0, 2.0);
    s.q = V<3>{{uni(r, -2.0, 2.0), 0.5 * z * z, z}};
    s.qd = V<3>{{uni(r, -2.0, 2.0), z * zd, zd}};
    s.t = uni(r, -5.0, 5.0);
    return s;
  }
  // M = I, F = (Fx, Fy, Fz), A = [0, 1, -z], b = zd^2     (Udwadia & Wanichanon 2010 eq 3.50)
  static TermsOf<UdwadiaExample4> hand(const P& p, const V<3>& q, const V<3>& qd, double) {
    TermsOf<UdwadiaExample4> h;
    h.M = Mx<3, 3>::identity();
    h.F = V<3>{{p.force_x, p.force_y, p.force_z}};
    h.A(0, 0) = 0.0;
    h.A(0, 1) = 1.0;
    h.A(0, 2) = -q[2];
    h.b[0] = qd[2] * qd[2];
    return h;
  }
  // T+ = xd^2/2 + (1 + z^2) zd^2/2: M = diag(1, 0, 1 + z^2),
  // F = (Fx, Fy, Fz - z zd^2)                           (Udwadia & Wanichanon 2010 eq 3.66)
  static TermsOf<UdwadiaExample4> hand_conflated(const P& p, const V<3>& q, const V<3>& qd,
                                                 double t) {
    TermsOf<UdwadiaExample4> h = hand(p, q, qd, t);
    h.M = Mx<3, 3>::zero();
    h.M(0, 0) = 1.0;
    h.M(2, 2) = 1.0 + q[2] * q[2];
    h.F[2] = p.force_z - q[2] * qd[2] * qd[2];
    return h;
  }
};

template <>
struct Case<InclineBlock> {
  using P = InclineBlock::Params;
  static P params(Rng& r) {
    return P{uni(r, 0.5, 2.0), uni(r, 1.0, 10.0), uni(r, 0.1, 1.4), uni(r, 0.0, 1.0)};
  }
  // y = x tan(theta); velocity along the plane
  static State<InclineBlock> state(Rng& r, const P& p) {
    State<InclineBlock> s;
    const double x = uni(r, -2.0, 2.0), sd = signed_uni(r, 0.05, 2.0);
    s.q = V<2>{{x, x * std::tan(p.angle)}};
    s.qd = V<2>{{sd * std::cos(p.angle), sd * std::sin(p.angle)}};
    s.t = uni(r, -5.0, 5.0);
    return s;
  }
  // M = m I, F = (0, -m g), A = [-tan theta, 1], b = 0   (Udwadia (2005) eqs 31, 34)
  static TermsOf<InclineBlock> hand(const P& p, const V<2>&, const V<2>&, double) {
    TermsOf<InclineBlock> h;
    h.M = p.mass * Mx<2, 2>::identity();
    h.F = V<2>{{0.0, -p.mass * p.g}};
    h.A(0, 0) = -std::tan(p.angle);
    h.A(0, 1) = 1.0;
    h.b[0] = 0.0;
    return h;
  }
  // C = -mu m g cos(theta) sgn(xd) (cos theta, sin theta)
  static V<2> hand_C(const P& p, const V<2>&, const V<2>& qd, double) {
    const double sg = qd[0] > 0.0 ? 1.0 : (qd[0] < 0.0 ? -1.0 : 0.0);
    const double k = -p.friction * p.mass * p.g * std::cos(p.angle) * sg;
    return V<2>{{k * std::cos(p.angle), k * std::sin(p.angle)}};
  }
};

template <>
struct Case<ParallelVelocities> {
  using P = ParallelVelocities::Params;
  static P params(Rng& r) { return P{uni(r, 0.5, 3.0), uni(r, 0.5, 3.0)}; }
  // velocities s1 e, s2 e along a common direction e
  static State<ParallelVelocities> state(Rng& r, const P&) {
    State<ParallelVelocities> s;
    for (int i = 0; i < 4; ++i) s.q[i] = uni(r, -3.0, 3.0);
    const double phi = uni(r, -3.2, 3.2), s1 = signed_uni(r, 0.1, 2.0),
                 s2 = signed_uni(r, 0.1, 2.0);
    s.qd = V<4>{{s1 * std::cos(phi), s1 * std::sin(phi), s2 * std::cos(phi), s2 * std::sin(phi)}};
    s.t = uni(r, -5.0, 5.0);
    return s;
  }
  // M = diag(m1, m1, m2, m2), F = 0, A = [yd2, -xd2, -yd1, xd1], b = 0
  static TermsOf<ParallelVelocities> hand(const P& p, const V<4>&, const V<4>& qd, double) {
    TermsOf<ParallelVelocities> h;
    h.M = Mx<4, 4>::zero();
    h.M(0, 0) = h.M(1, 1) = p.mass1;
    h.M(2, 2) = h.M(3, 3) = p.mass2;
    h.F = V<4>::zero();
    h.A(0, 0) = qd[3];
    h.A(0, 1) = -qd[2];
    h.A(0, 2) = -qd[1];
    h.A(0, 3) = qd[0];
    h.b[0] = 0.0;
    return h;
  }
};

template <>
struct Case<IntegrableConstraint> {
  using P = IntegrableConstraint::Params;
  static P params(Rng&) { return P{}; }
  // qd along the null space of A = [4 q1 + 3 q2^2, 2 q1 q2], |A| kept away from 0
  static State<IntegrableConstraint> state(Rng& r, const P&) {
    State<IntegrableConstraint> s;
    integrable_constraint_state(r, s.q, s.qd);
    s.t = uni(r, -5.0, 5.0);
    return s;
  }
  // M = I, F = 0, A = [4 q1 + 3 q2^2, 2 q1 q2],
  // b = -(dg/dq . qd) = -(4 q1d^2 + 8 q2 q1d q2d + 2 q1 q2d^2)
  static TermsOf<IntegrableConstraint> hand(const P&, const V<2>& q, const V<2>& qd, double) {
    TermsOf<IntegrableConstraint> h;
    h.M = Mx<2, 2>::identity();
    h.F = V<2>::zero();
    h.A(0, 0) = 4.0 * q[0] + 3.0 * q[1] * q[1];
    h.A(0, 1) = 2.0 * q[0] * q[1];
    h.b[0] = -(4.0 * qd[0] * qd[0] + 8.0 * q[1] * qd[0] * qd[1] + 2.0 * q[0] * qd[1] * qd[1]);
    return h;
  }
};

// The redundant variants: the base model's Case, with the redundant rows
// appended to the hand-derived A and b.
template <class Redundant, class BaseModel>
struct RedundantCase {
  using Base = Case<BaseModel>;
  using P = typename BaseModel::Params;
  static P params(Rng& r) { return Base::params(r); }
  static State<Redundant> state(Rng& r, const P& p) {
    const auto s = Base::state(r, p);
    return State<Redundant>{s.q, s.qd, s.t};
  }
};

template <>
struct Case<RollingCoinRedundant> : RedundantCase<RollingCoinRedundant, RollingCoin> {
  // the coin's M, F, A, b with the third row A1 + A2, b1 + b2
  static TermsOf<RollingCoinRedundant> hand(const P& p, const V<4>& q, const V<4>& qd, double t) {
    const auto h = Base::hand(p, q, qd, t);
    TermsOf<RollingCoinRedundant> r;
    r.M = h.M;
    r.F = h.F;
    for (int j = 0; j < 4; ++j) {
      r.A(0, j) = h.A(0, j);
      r.A(1, j) = h.A(1, j);
      r.A(2, j) = h.A(0, j) + h.A(1, j);
    }
    r.b = V<3>{{h.b[0], h.b[1], h.b[0] + h.b[1]}};
    return r;
  }
};

template <>
struct Case<SkateRedundant> : RedundantCase<SkateRedundant, Skate> {
  // the skate's rows with the second row 2 A, 2 b
  static TermsOf<SkateRedundant> doubled(const TermsOf<Skate>& h) {
    TermsOf<SkateRedundant> r;
    r.M = h.M;
    r.F = h.F;
    for (int j = 0; j < 3; ++j) {
      r.A(0, j) = h.A(0, j);
      r.A(1, j) = 2.0 * h.A(0, j);
    }
    r.b = V<2>{{h.b[0], 2.0 * h.b[0]}};
    return r;
  }
  static TermsOf<SkateRedundant> hand(const P& p, const V<3>& q, const V<3>& qd, double t) {
    return doubled(Base::hand(p, q, qd, t));
  }
  static TermsOf<SkateRedundant> hand_conflated(const P& p, const V<3>& q, const V<3>& qd,
                                                double t) {
    return doubled(Base::hand_conflated(p, q, qd, t));
  }
};

inline constexpr double kTolFd = 1e-6;     // finite differences (truncation ~1e-12, rounding ~1e-9)
inline constexpr double kTolHand = 1e-12;  // hand derivations, closed forms

// --------------------------------------------------- fundamental equation

template <class LM>
FundamentalResult<double, LM::n, m_of<LM>> solve(const typename LM::Params& p, const State<LM>& s) {
  const auto tr = ad_terms<LM>(p, s.q, s.qd, s.t);
  return udwadia_kalaba(tr.M, tr.F, tr.A, tr.b, nonideal_terms<LM>(p, s.q, s.qd, s.t));
}
template <class LM>
FundamentalResult<double, LM::n, m_of<LM>> solve_singular(const typename LM::Params& p,
                                                          const State<LM>& s) {
  const auto tr = ad_terms<LM>(p, s.q, s.qd, s.t);
  return udwadia_kalaba_singular(tr.M, tr.F, tr.A, tr.b);
}
// A State of Model viewed as one of Conflated<Model> (same q, qd, t)
template <class Model>
State<Conflated<Model>> as_conflated(const State<Model>& s) {
  return State<Conflated<Model>>{s.q, s.qd, s.t};
}
// A qdd = b holds
template <class LM>
void expect_on_constraint(const typename LM::Params& p, const State<LM>& s, const V<LM::n>& qdd) {
  const auto tr = ad_terms<LM>(p, s.q, s.qd, s.t);
  EXPECT_TRUE(close(tr.A * qdd, tr.b, kTolHand)) << "A qdd = b";
}

}  // namespace nholo_test
