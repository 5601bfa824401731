// Tests of models/*.hpp and models/registry.hpp.
//
//  1. Terms: for every registered model (and its conflated Lagrangian where it
//     has one) the AD matrices M, F (lagrangian_terms_ad) and A, b
//     (constraint_terms) agree with central finite differences of the
//     Lagrangian / constraints (1e-6) and with hand derivations written below
//     (1e-12); the nonideal vector C with its hand form; the rolling coin's
//     hand_dynamics with AD (1e-14).
//  2. Closed forms: every item 1-9 of docs/physics.md, section 2 (correct and
//     conflated), at >= 100 random consistent states, to 1e-12.
//  3. Energy balance dE/dt = qd . (Q_i + Q_ni) for every model; Appell at rest.
//  4. The misprints docs/physics.md lists really are misprints (the printed form
//     disagrees with the fundamental equation; the corrected one agrees).
//  5. Registry: all eleven models (nine systems of the papers, two redundant variants),
//     unique names, defaults -> make_params, float.
//
// "to tol" means |got_i - want_i| <= tol * (1 + max_j |want_j|) (as in
// test_fundamental.cpp); states and parameters are O(1), so this is a
// relative tolerance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/dynamics.hpp"
#include "kernels/fundamental.hpp"
#include "models/registry.hpp"

using namespace nholo;
using namespace nholo::models;

namespace {

using Rng = std::mt19937_64;
constexpr int kStates = 200;  // random consistent states per check

// FNV-1a of a model name: a per-model seed, the same on every platform
std::uint64_t seed_of(const char* name) {
  std::uint64_t h = 1469598103934665603ull;
  for (; *name != '\0'; ++name) h = (h ^ static_cast<unsigned char>(*name)) * 1099511628211ull;
  return h;
}

double uni(Rng& rng, double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(rng);
}
// uniform in [lo, hi] with a random sign
double signed_uni(Rng& rng, double lo, double hi) {
  const double v = uni(rng, lo, hi);
  return uni(rng, 0.0, 1.0) < 0.5 ? -v : v;
}

template <int N>
using V = Vec<double, N>;
template <int R, int C>
using Mx = Mat<double, R, C>;

template <int N>
V<N> unit(int i) {
  V<N> e = V<N>::zero();
  e[i] = 1.0;
  return e;
}

// ---------------------------------------------------------------- comparisons

template <int N>
double max_abs(const V<N>& v) {
  double s = 0.0;
  for (int i = 0; i < N; ++i) s = std::max(s, std::abs(v[i]));
  return s;
}
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
::testing::AssertionResult close(double got, double want, double tol) {
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
    s.q = V<3>{{uni(r, -3.0, 3.0), uni(r, -3.0, 3.0), uni(r, -3.1, 3.1)}};
    const double v = uni(r, -2.0, 2.0), thd = uni(r, -2.0, 2.0);
    s.qd = V<3>{{v * std::cos(s.q[2]), v * std::sin(s.q[2]), thd}};
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
    s.q = V<3>{{uni(r, -3.0, 3.0), uni(r, -3.0, 3.0), uni(r, -3.1, 3.1)}};
    const double v = uni(r, -2.0, 2.0), thd = uni(r, -2.0, 2.0);
    s.qd = V<3>{{v * std::cos(s.q[2]), v * std::sin(s.q[2]), thd}};
    s.t = uni(r, -5.0, 5.0);
    return s;
  }
  static TermsOf<Sleigh> hand(const P& p, const V<3>& q, const V<3>& qd, double) {
    TermsOf<Sleigh> h;
    const double m = p.mass, a = p.a, c = std::cos(q[2]), sn = std::sin(q[2]);
    const double gs = p.g * std::sin(p.slope), thd = qd[2];
    h.M = Mx<3, 3>::zero();
    h.M(0, 0) = m;
    h.M(1, 1) = m;
    h.M(0, 2) = h.M(2, 0) = -m * a * sn;
    h.M(1, 2) = h.M(2, 1) = m * a * c;
    h.M(2, 2) = m * p.J;
    h.F = V<3>{{m * gs + m * a * thd * thd * c, m * a * thd * thd * sn,
                -m * gs * (1.0 - p.paper_potential) * a * sn}};
    h.A = Mx<1, 3>::zero();
    h.A(0, 0) = -sn;
    h.A(0, 1) = c;
    h.b[0] = thd * (qd[1] * sn + qd[0] * c);
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
    double a1 = 0.0, a2 = 0.0;
    do {
      s.q = V<2>{{uni(r, -2.0, 2.0), uni(r, -2.0, 2.0)}};
      a1 = 4.0 * s.q[0] + 3.0 * s.q[1] * s.q[1];
      a2 = 2.0 * s.q[0] * s.q[1];
    } while (a1 * a1 + a2 * a2 < 0.25);
    const double w = uni(r, -1.0, 1.0) / std::sqrt(a1 * a1 + a2 * a2);
    s.qd = V<2>{{w * a2, -w * a1}};
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
template <>
struct Case<RollingCoinRedundant> {
  using Base = Case<RollingCoin>;
  using P = RollingCoin::Params;
  static P params(Rng& r) { return Base::params(r); }
  static State<RollingCoinRedundant> state(Rng& r, const P& p) {
    const auto s = Base::state(r, p);
    return State<RollingCoinRedundant>{s.q, s.qd, s.t};
  }
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
struct Case<SkateRedundant> {
  using Base = Case<Skate>;
  using P = Skate::Params;
  static P params(Rng& r) { return Base::params(r); }
  static State<SkateRedundant> state(Rng& r, const P& p) {
    const auto s = Base::state(r, p);
    return State<SkateRedundant>{s.q, s.qd, s.t};
  }
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

// ------------------------------------------------------------ 1. terms

template <class LM>
void expect_terms(const TermsOf<LM>& got, const TermsOf<LM>& want, double tol, const char* what) {
  EXPECT_TRUE(close(got.M, want.M, tol)) << what << ": M";
  EXPECT_TRUE(close(got.F, want.F, tol)) << what << ": F";
  EXPECT_TRUE(close(got.A, want.A, tol)) << what << ": A";
  EXPECT_TRUE(close(got.b, want.b, tol)) << what << ": b";
}

constexpr double kTolFd = 1e-6;     // finite differences (truncation ~1e-12, rounding ~1e-9)
constexpr double kTolHand = 1e-12;  // hand derivations, closed forms

template <class Model>
void check_terms(int states) {
  using C = Case<Model>;
  Rng rng(seed_of(Model::name));
  for (int k = 0; k < states; ++k) {
    const auto p = C::params(rng);
    const auto s = C::state(rng, p);
    // true Lagrangian
    const auto ad = ad_terms<Model>(p, s.q, s.qd, s.t);
    expect_terms<Model>(ad, fd_terms<Model>(p, s.q, s.qd, s.t), kTolFd, "AD vs FD");
    expect_terms<Model>(ad, C::hand(p, s.q, s.qd, s.t), kTolHand, "AD vs hand");
    // conflated Lagrangian
    if constexpr (has_conflated_lagrangian<Model>::value) {
      using CM = Conflated<Model>;
      const auto adc = ad_terms<CM>(p, s.q, s.qd, s.t);
      expect_terms<CM>(adc, fd_terms<CM>(p, s.q, s.qd, s.t), kTolFd, "conflated AD vs FD");
      expect_terms<CM>(adc, C::hand_conflated(p, s.q, s.qd, s.t), kTolHand, "conflated AD vs hand");
    }
    // nonideal vector
    if constexpr (has_nonideal_force<Model>::value) {
      EXPECT_TRUE(
          close(nonideal_terms<Model>(p, s.q, s.qd, s.t), C::hand_C(p, s.q, s.qd, s.t), kTolHand))
          << "C";
    }
    if (::testing::Test::HasFailure()) return;  // one failing state is enough
  }
}

#define NHOLO_TERMS_TEST(Model)  \
  TEST(ModelTerms, Model) {      \
    check_terms<Model>(kStates); \
  }
NHOLO_TERMS_TEST(RollingCoin)
NHOLO_TERMS_TEST(Skate)
NHOLO_TERMS_TEST(Appell)
NHOLO_TERMS_TEST(UdwadiaExample2)
NHOLO_TERMS_TEST(UdwadiaExample3)
NHOLO_TERMS_TEST(UdwadiaExample4)
NHOLO_TERMS_TEST(InclineBlock)
NHOLO_TERMS_TEST(ParallelVelocities)
NHOLO_TERMS_TEST(IntegrableConstraint)
NHOLO_TERMS_TEST(RollingCoinRedundant)
NHOLO_TERMS_TEST(SkateRedundant)
NHOLO_TERMS_TEST(Sleigh)
#undef NHOLO_TERMS_TEST

// models/*.hpp other than the registry: one model per header
int headers_in_models_folder() {
  int k = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::string(NHOLO_SOURCE_DIR) + "/models"))
    k += e.path().extension() == ".hpp" && e.path().stem() != "registry";
  return k;
}

// Every registered model has a Case (else this does not compile), i.e. is
// covered by the tests above.
TEST(ModelTerms, EveryRegisteredModelIsCovered) {
  int covered = 0;
  for_each_model([&covered](auto tag) {
    using M = typename decltype(tag)::type;
    static_assert(sizeof(Case<M>) > 0, "every registered model needs a Case in this test");
    ++covered;
  });
  EXPECT_EQ(covered, headers_in_models_folder());
}

TEST(ModelTerms, RollingCoinHandDynamicsEqualsAd) {
  Rng rng(11);
  for (int k = 0; k < kStates; ++k) {
    const auto p = Case<RollingCoin>::params(rng);
    const auto s = Case<RollingCoin>::state(rng, p);
    Mx<4, 4> Mh, Ma;
    V<4> Fh, Fa;
    RollingCoin::hand_dynamics(p, s.q, s.qd, s.t, Mh, Fh);
    lagrangian_terms_ad<RollingCoin>(p, s.q, s.qd, s.t, Ma, Fa);
    ASSERT_TRUE(close(Mh, Ma, 1e-14));
    ASSERT_TRUE(close(Fh, Fa, 1e-14));
    // lagrangian_terms dispatches to the hand-written form
    Mx<4, 4> Md;
    V<4> Fd;
    lagrangian_terms<RollingCoin>(p, s.q, s.qd, s.t, Md, Fd);
    ASSERT_TRUE(close(Md, Mh, 0.0));
    ASSERT_TRUE(close(Fd, Fh, 0.0));
  }
}

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

// ------------------------------- 2.1 Hamel's skate (docs/physics.md, item 1)

// m = 1, no forces (slope 0): correct motion (1.12) as printed
//   xdd = s thd^2 cos th - xd thd tan th,  ydd = s thd^2 sin th + xd thd,
//   I_B thdd = -s thd (yd sin th + xd cos th)
TEST(ClosedForm, SkateCorrect_1_12) {
  Rng rng(101);
  for (int k = 0, tested = 0; tested < kStates; ++k) {
    auto p = Case<Skate>::params(rng);
    p.mass = 1.0;
    p.inertia = p.offset * p.offset + uni(rng, 0.2, 1.5);
    p.slope = 0.0;
    auto s = Case<Skate>::state(rng, p);
    if (std::abs(std::cos(s.q[2])) < 0.05) continue;  // (1.12) is printed with tan th
    ++tested;
    const auto r = solve<Skate>(p, s);
    ASSERT_EQ(r.status, Status::ok);
    const double th = s.q[2], xd = s.qd[0], yd = s.qd[1], thd = s.qd[2], a = p.offset;
    const V<3> want{{a * thd * thd * std::cos(th) - xd * thd * std::tan(th),
                     a * thd * thd * std::sin(th) + xd * thd,
                     -a * thd * (yd * std::sin(th) + xd * std::cos(th)) / p.inertia}};
    ASSERT_TRUE(close(r.qdd, want, kTolHand)) << "state " << k;
    expect_on_constraint<Skate>(p, s, r.qdd);
  }
}

// General m, s, I_B on a slope (derived by hand from (1.9)-(1.11) with gravity,
// v = xd cos th + yd sin th the speed along the blade):
//   I_B thdd = -m s (thd v + g sin(alpha) sin th)
//   xdd cos th + ydd sin th = s thd^2 + g sin(alpha) cos th
//   -xdd sin th + ydd cos th = thd v
TEST(ClosedForm, SkateCorrectOnSlopeGeneralMass) {
  Rng rng(102);
  for (int k = 0; k < kStates; ++k) {
    const auto p = Case<Skate>::params(rng);
    const auto s = Case<Skate>::state(rng, p);
    const auto r = solve<Skate>(p, s);
    ASSERT_EQ(r.status, Status::ok);
    const double th = s.q[2], c = std::cos(th), sn = std::sin(th), thd = s.qd[2];
    const double v = s.qd[0] * c + s.qd[1] * sn, gs = p.g * std::sin(p.slope);
    const double along = p.offset * thd * thd + gs * c, normal = thd * v;
    const V<3> want{{along * c - normal * sn, along * sn + normal * c,
                     -p.mass * p.offset * (thd * v + gs * sn) / p.inertia}};
    ASSERT_TRUE(close(r.qdd, want, kTolHand)) << "state " << k;
  }
}

// Conflated T+, m = 1, no forces: the wrong (1.14)
//   xdd = -xd thd tan th, ydd = xd thd, thdd = 0
TEST(ClosedForm, SkateConflated_1_14) {
  Rng rng(103);
  for (int k = 0, tested = 0; tested < kStates; ++k) {
    auto p = Case<Skate>::params(rng);
    p.mass = 1.0;
    p.inertia = p.offset * p.offset + uni(rng, 0.2, 1.5);
    p.slope = 0.0;
    const auto s = Case<Skate>::state(rng, p);
    if (std::abs(std::cos(s.q[2])) < 0.05) continue;  // (1.14) too
    ++tested;
    const auto r = solve<Conflated<Skate>>(p, as_conflated(s));
    ASSERT_EQ(r.status, Status::ok);
    const double th = s.q[2], xd = s.qd[0], thd = s.qd[2];
    const V<3> want{{-xd * thd * std::tan(th), xd * thd, 0.0}};
    ASSERT_TRUE(close(r.qdd, want, kTolHand)) << "state " << k;
    // and it differs from the correct motion whenever s thd != 0
    const auto rc = solve<Skate>(p, s);
    if (std::abs(p.offset * thd) > 0.1) {
      EXPECT_FALSE(close(rc.qdd, r.qdd, 1e-6));
    }
  }
}

// ------------------------------- 2.2 sleigh, a = 0 (docs/physics.md, item 2)
// phi = Omega t + phi0, v = v0 + (g sin(alpha)/Omega)(sin(Omega t + phi0) - sin phi0),
// xd = v cos phi, yd = v sin phi. Differentiated at time t:
//   thdd = 0,  vdot = g sin(alpha) cos phi,
//   xdd = vdot cos phi - v Omega sin phi,  ydd = vdot sin phi + v Omega cos phi
TEST(ClosedForm, SleighZeroOffset) {
  Rng rng(104);
  for (int k = 0; k < kStates; ++k) {
    auto p = Case<Skate>::params(rng);
    p.offset = 0.0;
    const double Omega = signed_uni(rng, 0.2, 2.0), phi0 = uni(rng, -3.0, 3.0);
    const double v0 = uni(rng, -2.0, 2.0), t = uni(rng, 0.0, 10.0);
    const double gs = p.g * std::sin(p.slope), phi = Omega * t + phi0;
    const double v = v0 + gs / Omega * (std::sin(phi) - std::sin(phi0));
    State<Skate> s;
    s.q = V<3>{{uni(rng, -3.0, 3.0), uni(rng, -3.0, 3.0), phi}};
    s.qd = V<3>{{v * std::cos(phi), v * std::sin(phi), Omega}};
    s.t = t;
    const auto r = solve<Skate>(p, s);
    ASSERT_EQ(r.status, Status::ok);
    const double vdot = gs * std::cos(phi);
    const V<3> want{{vdot * std::cos(phi) - v * Omega * std::sin(phi),
                     vdot * std::sin(phi) + v * Omega * std::cos(phi), 0.0}};
    ASSERT_TRUE(close(r.qdd, want, kTolHand)) << "state " << k;
  }
}

// ------------------------------- 2.3 Appell (docs/physics.md, item 3)

// Ideal, alpha = 0: (3.7) as printed, both of its forms
TEST(ClosedForm, AppellIdeal_3_7) {
  Rng rng(201);
  for (int k = 0; k < kStates; ++k) {
    auto p = Case<Appell>::params(rng);
    p.alpha = 0.0;
    p.drag = 0.0;
    const auto s = Case<Appell>::state(rng, p);
    const auto r = solve<Appell>(p, s);
    ASSERT_EQ(r.status, Status::ok);
    const double xd = s.qd[0], yd = s.qd[1], zd = s.qd[2];
    const double Fx = p.force_x, Fy = p.force_y, Fz = p.force_z;
    const double u2 = xd * xd + yd * yd + zd * zd, k1 = (-xd * Fx - yd * Fy + zd * Fz) / u2;
    const V<3> want1{{Fx + xd * k1, Fy + yd * k1, Fz - zd * k1}};
    const double d = 2.0 * zd * zd;
    const V<3> want2{{((yd * yd + zd * zd) * Fx - xd * yd * Fy + xd * zd * Fz) / d,
                      (-xd * yd * Fx + (xd * xd + zd * zd) * Fy + yd * zd * Fz) / d,
                      (xd * zd * Fx + yd * zd * Fy + (xd * xd + yd * yd) * Fz) / d}};
    ASSERT_TRUE(close(r.qdd, want1, kTolHand)) << "state " << k;
    ASSERT_TRUE(close(r.qdd, want2, kTolHand)) << "state " << k;
    EXPECT_TRUE(close(r.force_nonideal, V<3>::zero(), kTolHand));
  }
}

// Nonideal drag, alpha != 0 (Udwadia (2005) eq 30 with x^2 -> xd^2):
//   qdd = F + (alpha gdot - xd Fx - yd Fy + zd Fz)/u^2 (xd, yd, -zd)
//         - a0/|u| (2 xd zd^2, 2 yd zd^2, 2 zd (xd^2 + yd^2))
// with the middle term the ideal force Q_i^c, the last Q_ni^c.
TEST(ClosedForm, AppellDrag_30) {
  Rng rng(202);
  for (int k = 0; k < kStates; ++k) {
    const auto p = Case<Appell>::params(rng);
    const auto s = Case<Appell>::state(rng, p);
    const auto r = solve<Appell>(p, s);
    ASSERT_EQ(r.status, Status::ok);
    const double xd = s.qd[0], yd = s.qd[1], zd = s.qd[2];
    const double Fx = p.force_x, Fy = p.force_y, Fz = p.force_z;
    const double u2 = xd * xd + yd * yd + zd * zd, u = std::sqrt(u2);
    const double k1 = (p.alpha * Case<Appell>::gdot(p, s.t) - xd * Fx - yd * Fy + zd * Fz) / u2;
    const V<3> Qi{{xd * k1, yd * k1, -zd * k1}};
    const V<3> Qni{{-p.drag / u * 2.0 * xd * zd * zd, -p.drag / u * 2.0 * yd * zd * zd,
                    -p.drag / u * 2.0 * zd * (xd * xd + yd * yd)}};
    const V<3> want{{Fx + Qi[0] + Qni[0], Fy + Qi[1] + Qni[1], Fz + Qi[2] + Qni[2]}};
    ASSERT_TRUE(close(r.qdd, want, kTolHand)) << "state " << k;
    ASSERT_TRUE(close(r.force_ideal, Qi, kTolHand)) << "state " << k;
    ASSERT_TRUE(close(r.force_nonideal, Qni, kTolHand)) << "state " << k;
    expect_on_constraint<Appell>(p, s, r.qdd);
  }
}

// Conflated T+ = xd^2 + yd^2, M = diag(2, 2, 0) singular: udwadia_kalaba
// refuses (status singular), eq 2.7 gives the wrong (3.11)-(3.13):
//   xdd = (zd Fx + xd Fz)/(2 zd), ydd = (zd Fy + yd Fz)/(2 zd),
//   zdd = (xd zd Fx + yd zd Fy + (xd^2 + yd^2) Fz)/(2 zd^2)
TEST(ClosedForm, AppellConflated_3_11_to_3_13) {
  Rng rng(203);
  for (int k = 0; k < kStates; ++k) {
    auto p = Case<Appell>::params(rng);
    p.alpha = 0.0;
    p.drag = 0.0;
    const auto s = as_conflated(Case<Appell>::state(rng, p));
    EXPECT_EQ(solve<Conflated<Appell>>(p, s).status, Status::singular);
    const auto r = solve_singular<Conflated<Appell>>(p, s);
    ASSERT_EQ(r.status, Status::ok);
    EXPECT_EQ(r.rank, 3);
    const double xd = s.qd[0], yd = s.qd[1], zd = s.qd[2];
    const double Fx = p.force_x, Fy = p.force_y, Fz = p.force_z;
    const V<3> want{{(zd * Fx + xd * Fz) / (2.0 * zd), (zd * Fy + yd * Fz) / (2.0 * zd),
                     (xd * zd * Fx + yd * zd * Fy + (xd * xd + yd * yd) * Fz) / (2.0 * zd * zd)}};
    ASSERT_TRUE(close(r.qdd, want, kTolHand)) << "state " << k;
  }
}

// At rest A = [xd, yd, -zd] = 0 (and C = 0): the pseudoinverse drops the
// vanishing row and the result is the unconstrained acceleration, finite.
TEST(ClosedForm, AppellAtRestIsUnconstrained) {
  Rng rng(204);
  for (int k = 0; k < kStates; ++k) {
    auto p = Case<Appell>::params(rng);
    p.alpha = 0.0;  // consistent at rest: 2 alpha g(t) = 0
    State<Appell> s;
    s.q = V<3>{{uni(rng, -3.0, 3.0), uni(rng, -3.0, 3.0), uni(rng, -3.0, 3.0)}};
    s.qd = V<3>::zero();
    s.t = uni(rng, -5.0, 5.0);
    const auto r = solve<Appell>(p, s);
    ASSERT_EQ(r.status, Status::ok);
    ASSERT_TRUE(all_finite(r.qdd));
    EXPECT_EQ(r.rank, 0);
    ASSERT_TRUE(close(r.qdd, V<3>{{p.force_x, p.force_y, p.force_z}}, kTolHand));
    EXPECT_TRUE(close(r.force_ideal, V<3>::zero(), kTolHand));
    EXPECT_TRUE(close(r.force_nonideal, V<3>::zero(), kTolHand));
  }
}

// ------------------------------- 2.4 example 2 (docs/physics.md, item 4)

// Correct: (3.20) with z zd and z^2 for the printed zd zd and zd^2
//   xdd = -c^2 z xd zd/(1 + c^2 z^2), ydd = c xd zd/(1 + c^2 z^2), zdd = 0
TEST(ClosedForm, Example2Correct_3_20_corrected) {
  Rng rng(301);
  for (int k = 0; k < kStates; ++k) {
    const auto p = Case<UdwadiaExample2>::params(rng);
    const auto s = Case<UdwadiaExample2>::state(rng, p);
    const auto r = solve<UdwadiaExample2>(p, s);
    ASSERT_EQ(r.status, Status::ok);
    const double c = p.c, z = s.q[2], xd = s.qd[0], zd = s.qd[2], d = 1.0 + c * c * z * z;
    const V<3> want{{-c * c * z * xd * zd / d, c * xd * zd / d, 0.0}};
    ASSERT_TRUE(close(r.qdd, want, kTolHand)) << "state " << k;
  }
}

// Partly conflated T+(alpha), 0 <= alpha < 1: (3.25) as printed
//   xdd = -c^2 (alpha + 1) xd z zd/(1 + c^2 z^2),
//   ydd = c (1 - c^2 alpha z^2) xd zd/(1 + c^2 z^2),  zdd = c^2 alpha xd^2 z
// (alpha = 0 is the correct motion); alpha = 1 (singular M) by eq 2.7 gives
// the same expressions at alpha = 1 ((3.32), Udwadia & Wanichanon (2010) sec. 3.2.2).
TEST(ClosedForm, Example2Conflated_3_25) {
  Rng rng(302);
  const double alphas[] = {0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0};
  for (double alpha : alphas) {
    for (int k = 0; k < kStates; ++k) {
      auto p = Case<UdwadiaExample2>::params(rng);
      p.alpha = alpha;
      const auto s = as_conflated(Case<UdwadiaExample2>::state(rng, p));
      const auto r = alpha < 1.0 ? solve<Conflated<UdwadiaExample2>>(p, s)
                                 : solve_singular<Conflated<UdwadiaExample2>>(p, s);
      ASSERT_EQ(r.status, Status::ok) << "alpha " << alpha;
      const double c = p.c, z = s.q[2], xd = s.qd[0], zd = s.qd[2], d = 1.0 + c * c * z * z;
      const V<3> want{{-c * c * (alpha + 1.0) * xd * z * zd / d,
                       c * (1.0 - c * c * alpha * z * z) * xd * zd / d,
                       c * c * alpha * xd * xd * z}};
      ASSERT_TRUE(close(r.qdd, want, kTolHand)) << "alpha " << alpha << " state " << k;
    }
  }
}

// ------------------------------- 2.5 example 3 (docs/physics.md, item 5)

// Correct: (3.37) as printed
//   xdd = -x, ydd = xd zd/(c (yd^2 + zd^2)), zdd = xd yd/(c (yd^2 + zd^2))
TEST(ClosedForm, Example3Correct_3_37) {
  Rng rng(401);
  for (int k = 0; k < kStates; ++k) {
    const auto p = Case<UdwadiaExample3>::params(rng);
    const auto s = Case<UdwadiaExample3>::state(rng, p);
    const auto r = solve<UdwadiaExample3>(p, s);
    ASSERT_EQ(r.status, Status::ok);
    const double c = p.c, xd = s.qd[0], yd = s.qd[1], zd = s.qd[2];
    const double d = c * (yd * yd + zd * zd);
    const V<3> want{{-s.q[0], xd * zd / d, xd * yd / d}};
    ASSERT_TRUE(close(r.qdd, want, kTolHand)) << "state " << k;
  }
}

// Conflated L+: (3.40) with the printed 2 xd^2 read as 2 x^2 = 2 c^2 yd^2 zd^2
//   xdd = 0, ydd = xd zd (1 + c^2 yd^2)/(c D), zdd = xd yd (1 + c^2 zd^2)/(c D),
//   D = yd^2 + zd^2 + 2 c^2 yd^2 zd^2.
// Where the conflated M is positive definite (c^2 (yd^2 + zd^2) + 3 c^4 yd^2 zd^2
// < 1) by eq 2.6; where it is indefinite udwadia_kalaba reports singular and
// eq 2.7 (valid for any M with rank [M | A^T] = 3) gives the same expression.
TEST(ClosedForm, Example3Conflated_3_40_corrected) {
  Rng rng(402);
  int definite = 0, indefinite = 0;
  while (definite < kStates || indefinite < kStates) {
    const auto p = Case<UdwadiaExample3>::params(rng);
    const auto s = as_conflated(Case<UdwadiaExample3>::state(rng, p));
    const double c = p.c, xd = s.qd[0], yd = s.qd[1], zd = s.qd[2];
    const double c2 = c * c,
                 detM = 1.0 - c2 * (yd * yd + zd * zd) - 3.0 * c2 * c2 * yd * yd * zd * zd;
    if (std::abs(detM) < 0.1) continue;
    const bool pd = detM > 0.0 && 1.0 - c2 * zd * zd > 0.0;
    if ((pd && definite >= kStates) || (!pd && indefinite >= kStates)) continue;
    const double D = yd * yd + zd * zd + 2.0 * c2 * yd * yd * zd * zd;
    const V<3> want{
        {0.0, xd * zd * (1.0 + c2 * yd * yd) / (c * D), xd * yd * (1.0 + c2 * zd * zd) / (c * D)}};
    if (pd) {
      const auto r = solve<Conflated<UdwadiaExample3>>(p, s);
      ASSERT_EQ(r.status, Status::ok);
      ASSERT_TRUE(close(r.qdd, want, kTolHand)) << "definite state " << definite;
      ++definite;
    } else {
      EXPECT_EQ(solve<Conflated<UdwadiaExample3>>(p, s).status, Status::singular);
      const auto r = solve_singular<Conflated<UdwadiaExample3>>(p, s);
      ASSERT_EQ(r.status, Status::ok);
      ASSERT_TRUE(close(r.qdd, want, kTolHand)) << "indefinite state " << indefinite;
      ++indefinite;
    }
  }
}

// ------------------------------- 2.6 example 4 (docs/physics.md, item 6)

// (3.51): xdd = Fx, ydd = (zd^2 + z^2 Fy + z Fz)/(1 + z^2),
//         zdd = (-z zd^2 + z Fy + Fz)/(1 + z^2);
// the conflated T+ (singular M = diag(1, 0, 1 + z^2)) by eq 2.7 gives the same.
TEST(ClosedForm, Example4CorrectAndConflated_3_51) {
  Rng rng(501);
  for (int k = 0; k < kStates; ++k) {
    const auto p = Case<UdwadiaExample4>::params(rng);
    const auto s = Case<UdwadiaExample4>::state(rng, p);
    const double z = s.q[2], zd = s.qd[2], d = 1.0 + z * z;
    const V<3> want{{p.force_x, (zd * zd + z * z * p.force_y + z * p.force_z) / d,
                     (-z * zd * zd + z * p.force_y + p.force_z) / d}};
    const auto r = solve<UdwadiaExample4>(p, s);
    ASSERT_EQ(r.status, Status::ok);
    ASSERT_TRUE(close(r.qdd, want, kTolHand)) << "state " << k;
    const auto sc = as_conflated(s);
    EXPECT_EQ(solve<Conflated<UdwadiaExample4>>(p, sc).status, Status::singular);
    const auto rc = solve_singular<Conflated<UdwadiaExample4>>(p, sc);
    ASSERT_EQ(rc.status, Status::ok);
    EXPECT_EQ(rc.rank, 3);
    ASSERT_TRUE(close(rc.qdd, want, kTolHand)) << "conflated state " << k;
  }
}

// ------------------------------- 2.7 incline block (docs/physics.md, item 7)

// s the distance up the slope (x = s cos theta, y = s sin theta):
//   sdd = -g sin theta - mu g cos theta sgn(sd), no acceleration normal to the plane,
// and Udwadia (2005) eq (39) term by term: Q_i^c = m g (-sin cos, cos^2),
// Q_ni^c = -mu m g (cos^2, cos sin) sgn(xd).
TEST(ClosedForm, InclineBlockCoulomb_39) {
  Rng rng(601);
  for (int k = 0; k < kStates; ++k) {
    const auto p = Case<InclineBlock>::params(rng);
    auto s = Case<InclineBlock>::state(rng, p);
    if (k % 10 == 0) s.qd = V<2>::zero();  // at rest: sgn = 0, no friction
    const auto r = solve<InclineBlock>(p, s);
    ASSERT_EQ(r.status, Status::ok);
    const double th = p.angle, c = std::cos(th), sn = std::sin(th);
    const double sd = s.qd[0] * c + s.qd[1] * sn;
    const double sg = sd > 0.0 ? 1.0 : (sd < 0.0 ? -1.0 : 0.0);
    const double sdd = -p.g * sn - p.friction * p.g * c * sg;
    ASSERT_TRUE(close(r.qdd[0] * c + r.qdd[1] * sn, sdd, kTolHand)) << "state " << k;
    ASSERT_TRUE(close(-r.qdd[0] * sn + r.qdd[1] * c, 0.0, kTolHand)) << "state " << k;
    const double m = p.mass, g = p.g, mu = p.friction;
    const V<2> Qi{{-m * g * sn * c, m * g * c * c}};
    const V<2> Qni{{-mu * m * g * c * c * sg, -mu * m * g * c * sn * sg}};
    const V<2> want{{(0.0 + Qi[0] + Qni[0]) / m, (-m * g + Qi[1] + Qni[1]) / m}};
    ASSERT_TRUE(close(r.qdd, want, kTolHand)) << "state " << k;
    ASSERT_TRUE(close(r.force_ideal, Qi, kTolHand)) << "state " << k;
    ASSERT_TRUE(close(r.force_nonideal, Qni, kTolHand)) << "state " << k;
  }
}

// ------------------------------------------ 2.8 parallel velocities (item 8)

// No forces, parallel velocities: free motion, no constraint force, lambda = 0
TEST(ClosedForm, ParallelVelocitiesFree) {
  Rng rng(701);
  for (int k = 0; k < kStates; ++k) {
    const auto p = Case<ParallelVelocities>::params(rng);
    const auto s = Case<ParallelVelocities>::state(rng, p);
    const auto r = solve<ParallelVelocities>(p, s);
    ASSERT_EQ(r.status, Status::ok);
    const double scale = max_abs(s.qd) * max_abs(s.qd);
    ASSERT_LE(max_abs(r.qdd), 1e-12 * scale) << "state " << k;
    ASSERT_LE(max_abs(r.force_ideal), 1e-12 * scale) << "state " << k;
    ASSERT_LE(std::abs(r.multiplier[0]), 1e-12 * scale) << "state " << k;
  }
}

// ------------------------------------------ 2.9 integrable constraint (item 9)

// Theta = q1^4 + q1^3 q2^2 with grad = (4 q1^3 + 3 q1^2 q2^2, 2 q1^3 q2) and
// Hessian [[12 q1^2 + 6 q1 q2^2, 6 q1^2 q2], [6 q1^2 q2, 2 q1^3]]: at consistent
// states dTheta/dt = grad . qd = 0 and, along the computed acceleration,
// d2Theta/dt2 = grad . qdd + qd^T H qd = 0. Also qdd = b A^T/|A|^2 (M = I, F = 0).
TEST(ClosedForm, IntegrableConstraintConservesTheta) {
  Rng rng(801);
  const IntegrableConstraint::Params p{};
  for (int k = 0; k < kStates; ++k) {
    const auto s = Case<IntegrableConstraint>::state(rng, p);
    const auto r = solve<IntegrableConstraint>(p, s);
    ASSERT_EQ(r.status, Status::ok);
    const double q1 = s.q[0], q2 = s.q[1];
    const V<2> grad{{4.0 * q1 * q1 * q1 + 3.0 * q1 * q1 * q2 * q2, 2.0 * q1 * q1 * q1 * q2}};
    const Mx<2, 2> H{{12.0 * q1 * q1 + 6.0 * q1 * q2 * q2, 6.0 * q1 * q1 * q2,  //
                      6.0 * q1 * q1 * q2, 2.0 * q1 * q1 * q1}};
    const double dtheta = dot(grad, s.qd);
    const double ddtheta = dot(grad, r.qdd) + dot(s.qd, H * s.qd);
    const double scale1 = max_abs(grad) * max_abs(s.qd);
    const double scale2 =
        max_abs(grad) * max_abs(r.qdd) + max_abs(H) * max_abs(s.qd) * max_abs(s.qd);
    ASSERT_LE(std::abs(dtheta), 1e-12 * (scale1 + 1e-300)) << "state " << k;
    ASSERT_LE(std::abs(ddtheta), 1e-12 * (scale2 + 1e-300)) << "state " << k;
    // closed form qdd = b A^T / |A|^2
    const auto h = Case<IntegrableConstraint>::hand(p, s.q, s.qd, s.t);
    const double a1 = h.A(0, 0), a2 = h.A(0, 1), k2 = h.b[0] / (a1 * a1 + a2 * a2);
    ASSERT_TRUE(close(r.qdd, V<2>{{k2 * a1, k2 * a2}}, kTolHand)) << "state " << k;
    // the model's invariant is Theta
    EXPECT_TRUE(close(IntegrableConstraint::invariant(p, s.q),
                      q1 * q1 * q1 * q1 + q1 * q1 * q1 * q2 * q2, 1e-14));
  }
}

// A short RK4 integration of the fundamental equation keeps Theta constant to
// the integrator's truncation error (dt = 1e-3 over t in [0, 1]: ~1e-12 per
// unit time for these smooth paths; the tolerance 1e-9 leaves margin).
TEST(ClosedForm, IntegrableConstraintThetaAlongRk4Path) {
  Rng rng(802);
  const IntegrableConstraint::Params p{};
  using S = State<IntegrableConstraint>;
  const auto accel = [&p](const V<2>& q, const V<2>& qd, double t) {
    return solve<IntegrableConstraint>(p, S{q, qd, t}).qdd;
  };
  for (int traj = 0; traj < 10; ++traj) {
    S s;
    do {
      s = Case<IntegrableConstraint>::state(rng, p);
    } while (std::abs(s.q[0]) < 0.5);  // stay away from the singular q1 = 0
    const double theta0 = IntegrableConstraint::invariant(p, s.q);
    const double dt = 1e-3;
    V<2> q = s.q, v = s.qd;
    double t = 0.0;
    for (int step = 0; step < 1000; ++step) {
      const V<2> k1q = v, k1v = accel(q, v, t);
      const V<2> k2q = v + (0.5 * dt) * k1v, k2v = accel(q + (0.5 * dt) * k1q, k2q, t + 0.5 * dt);
      const V<2> k3q = v + (0.5 * dt) * k2v, k3v = accel(q + (0.5 * dt) * k2q, k3q, t + 0.5 * dt);
      const V<2> k4q = v + dt * k3v, k4v = accel(q + dt * k3q, k4q, t + dt);
      q += (dt / 6.0) * (k1q + 2.0 * k2q + 2.0 * k3q + k4q);
      v += (dt / 6.0) * (k1v + 2.0 * k2v + 2.0 * k3v + k4v);
      t += dt;
    }
    const double theta1 = IntegrableConstraint::invariant(p, q);
    EXPECT_NEAR(theta1, theta0, 1e-9 * (1.0 + std::abs(theta0))) << "trajectory " << traj;
  }
}

// ------------------------------------------------------- 3. energy balance

// dE/dt along (qd, qdd) = qd . (Q_i^c + Q_ni^c) for every model (no L depends
// on t explicitly and E = T + V is the Jacobi integral), with dE/dt by
// forward AD in the direction (qd, qdd, 1).
template <class Model>
void check_energy_balance(int states) {
  using D = Dual<double, 1>;
  Rng rng(seed_of(Model::name) ^ 0x5eedu);
  for (int k = 0; k < states; ++k) {
    const auto p = Case<Model>::params(rng);
    const auto s = Case<Model>::state(rng, p);
    const auto r = solve<Model>(p, s);
    ASSERT_EQ(r.status, Status::ok);
    Vec<D, Model::n> qa, qda;
    for (int i = 0; i < Model::n; ++i) {
      qa[i] = D(s.q[i]);
      qa[i].d[0] = s.qd[i];
      qda[i] = D(s.qd[i]);
      qda[i].d[0] = r.qdd[i];
    }
    D ta(s.t);
    ta.d[0] = 1.0;
    const double dEdt = Model::energy(p, qa, qda, ta).d[0];
    const double power = dot(s.qd, r.force_ideal + r.force_nonideal);
    const double scale = max_abs(s.qd) * (max_abs(r.force_ideal) + max_abs(r.force_nonideal)) +
                         std::abs(dot(s.qd, r.qdd)) + max_abs(s.qd) * max_abs(r.qdd);
    ASSERT_LE(std::abs(dEdt - power), 1e-12 * (1.0 + scale)) << Model::name << " state " << k;
  }
}

TEST(EnergyBalance, EveryModel) {
  for_each_model([](auto tag) {
    using M = typename decltype(tag)::type;
    static_assert(has_energy<M>::value, "every model defines an energy");
    SCOPED_TRACE(M::name);
    check_energy_balance<M>(kStates);
  });
}

// ----------------------------------------------- 4. misprints of the papers

// Each printed form below disagrees with the fundamental equation at a generic
// consistent state, and the corrected form (tested above) agrees. The numbers
// at the fixed states are in the failure messages.
TEST(Misprints, Example2PrintedZdZd_3_20) {
  const UdwadiaExample2::Params p{1.3, 0.0};
  State<UdwadiaExample2> s{V<3>{{0.2, -0.4, 0.7}}, V<3>{{1.1, 1.3 * 0.7 * 1.1, -0.9}}, 0.0};
  const auto r = solve<UdwadiaExample2>(p, s);
  const double c = p.c, z = s.q[2], xd = s.qd[0], zd = s.qd[2];
  const double printed_x = -c * c * xd * zd * zd / (1.0 + c * c * zd * zd);
  const double printed_y = c * xd * zd / (1.0 + c * c * zd * zd);
  const double fixed_x = -c * c * z * xd * zd / (1.0 + c * c * z * z);
  EXPECT_TRUE(close(r.qdd[0], fixed_x, kTolHand));
  EXPECT_FALSE(close(r.qdd[0], printed_x, 1e-3)) << r.qdd[0] << " vs printed " << printed_x;
  EXPECT_FALSE(close(r.qdd[1], printed_y, 1e-3)) << r.qdd[1] << " vs printed " << printed_y;
}

TEST(Misprints, Example3PrintedDenominator_3_40) {
  const UdwadiaExample3::Params p{0.5};
  const double yd = 0.6, zd = -0.8;
  State<Conflated<UdwadiaExample3>> s{V<3>{{p.c * yd * zd, 0.3, 0.1}}, V<3>{{0.9, yd, zd}}, 0.0};
  const auto r = solve<Conflated<UdwadiaExample3>>(p, s);
  ASSERT_EQ(r.status, Status::ok);
  const double c = p.c, xd = s.qd[0];
  const double printed_y =
      xd * zd / c * (1.0 + c * c * yd * yd) / (2.0 * xd * xd + yd * yd + zd * zd);
  const double fixed_y =
      xd * zd / c * (1.0 + c * c * yd * yd) / (2.0 * s.q[0] * s.q[0] + yd * yd + zd * zd);
  EXPECT_TRUE(close(r.qdd[1], fixed_y, kTolHand));
  EXPECT_FALSE(close(r.qdd[1], printed_y, 1e-3)) << r.qdd[1] << " vs printed " << printed_y;
}

TEST(Misprints, AppellPositionsForVelocities_30) {
  const Appell::Params p{0.0, 0.7, 0.5, -1.0, -9.81, 1.0, 1.0};
  const double xd = 0.8, yd = -0.6, zd = 1.0;  // zd^2 = xd^2 + yd^2
  State<Appell> s{V<3>{{1.5, 2.0, -0.5}}, V<3>{{xd, yd, zd}}, 0.0};
  const auto r = solve<Appell>(p, s);
  ASSERT_EQ(r.status, Status::ok);
  // eq (30) as printed: 2 zd (x^2 + y^2) in the z row, with positions
  const double u = std::sqrt(xd * xd + yd * yd + zd * zd);
  const double printed_z = -p.drag / u * 2.0 * zd * (s.q[0] * s.q[0] + s.q[1] * s.q[1]);
  const double fixed_z = -p.drag / u * 2.0 * zd * (xd * xd + yd * yd);
  EXPECT_TRUE(close(r.force_nonideal[2], fixed_z, kTolHand));
  EXPECT_FALSE(close(r.force_nonideal[2], printed_z, 1e-3))
      << r.force_nonideal[2] << " vs printed " << printed_z;
}

// ------------------------------------------------------------ 5. registry

// The registry lists every model header of models/ (the file rolling_coin.hpp
// holds the model rolling_coin), once.
TEST(Registry, ListsEveryModelHeaderOnceWithUniqueNames) {
  std::vector<std::string> names;
  for_each_model([&names](auto tag) { names.emplace_back(decltype(tag)::type::name); });
  std::set<std::string> headers;
  for (const auto& e : std::filesystem::directory_iterator(std::string(NHOLO_SOURCE_DIR) + "/models"))
    if (e.path().extension() == ".hpp" && e.path().stem() != "registry") headers.insert(e.path().stem().string());
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()), headers);
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
  EXPECT_EQ(static_cast<int>(names.size()), AllModels::size);
  EXPECT_EQ(names.front(), "rolling_coin");  // the order of AllModels: the first model listed
}

TEST(Registry, VisitModelByName) {
  int n = 0;
  EXPECT_TRUE(visit_model("udwadia_example3", [&n](auto tag) {
    EXPECT_STREQ(decltype(tag)::type::name, "udwadia_example3");
    n = decltype(tag)::type::n;
  }));
  EXPECT_EQ(n, 3);
  for_each_model([](auto tag) {
    int calls = 0;
    EXPECT_TRUE(visit_model(decltype(tag)::type::name, [&calls](auto) { ++calls; }));
    EXPECT_EQ(calls, 1);
  });
  int calls = 0;
  EXPECT_FALSE(visit_model("rolling", [&calls](auto) { ++calls; }));
  EXPECT_FALSE(visit_model("rolling_coin_", [&calls](auto) { ++calls; }));
  EXPECT_FALSE(visit_model("", [&calls](auto) { ++calls; }));
  EXPECT_EQ(calls, 0);
}

// Params is a struct of doubles in param_info order: make_params(defaults)
// reproduces the defaults field by field.
TEST(Registry, DefaultsFeedMakeParams) {
  for_each_model([](auto tag) {
    using M = typename decltype(tag)::type;
    using P = typename M::Params;
    SCOPED_TRACE(M::name);
    static_assert(param_info_consistent<M>(), "param_info size");
    static_assert(std::is_trivially_copyable<P>::value && std::is_standard_layout<P>::value,
                  "Params is a plain struct");
    double defaults[M::n_params > 0 ? M::n_params : 1] = {0.0};
    for (int j = 0; j < M::n_params; ++j) {
      ASSERT_NE(M::param_info[j].name, nullptr);
      EXPECT_GT(std::strlen(M::param_info[j].name), 0u);
      ASSERT_NE(M::param_info[j].unit, nullptr);
      ASSERT_NE(M::param_info[j].doc, nullptr);
      defaults[j] = M::param_info[j].default_value;
    }
    const P p = M::make_params(defaults);
    if constexpr (M::n_params > 0) {
      static_assert(sizeof(P) == M::n_params * sizeof(double), "Params: n_params doubles");
      double fields[M::n_params];
      std::memcpy(fields, &p, sizeof(P));
      for (int j = 0; j < M::n_params; ++j) EXPECT_EQ(fields[j], defaults[j]) << j;
      // parameter names unique within the model
      std::set<std::string> pn;
      for (int j = 0; j < M::n_params; ++j) pn.insert(M::param_info[j].name);
      EXPECT_EQ(pn.size(), static_cast<size_t>(M::n_params));
    } else {
      EXPECT_EQ(M::param_info[0].name, nullptr);  // the sentinel
    }
    // names of coordinates and constraints
    for (int i = 0; i < M::n; ++i) ASSERT_NE(M::coordinates[i], nullptr);
    EXPECT_EQ(sizeof(M::constraint_names) / sizeof(const char*), static_cast<size_t>(m_of<M>));
    EXPECT_GT(std::strlen(M::description), 0u);
    // the default model evaluates to finite numbers at a consistent state
    Rng rng(5);
    const auto s = Case<M>::state(rng, p);
    const auto tr = ad_terms<M>(p, s.q, s.qd, s.t);
    EXPECT_TRUE(all_finite(tr.F) && all_finite(tr.b));
    const auto r = solve<M>(p, s);
    EXPECT_EQ(r.status, Status::ok);
  });
}

// Models compile for float (and the AD types over float) and agree with double.
TEST(Registry, FloatScalarAgreesWithDouble) {
  for_each_model([](auto tag) {
    using M = typename decltype(tag)::type;
    constexpr int n = M::n, m = m_of<M>;
    SCOPED_TRACE(M::name);
    Rng rng(7);
    const auto p = Case<M>::params(rng);
    const auto s = Case<M>::state(rng, p);
    Vec<float, n> qf, qdf;
    for (int i = 0; i < n; ++i) {
      qf[i] = static_cast<float>(s.q[i]);
      qdf[i] = static_cast<float>(s.qd[i]);
    }
    const float tf = static_cast<float>(s.t);
    Mat<float, n, n> Mf;
    Vec<float, n> Ff;
    Mat<float, m, n> Af;
    Vec<float, m> bf;
    lagrangian_terms_ad<M>(p, qf, qdf, tf, Mf, Ff);
    constraint_terms<M>(p, qf, qdf, tf, Af, bf);
    const float Lf = M::lagrangian(p, qf, qdf, tf);
    const float Ef = M::energy(p, qf, qdf, tf);
    const auto tr = ad_terms<M>(p, s.q, s.qd, s.t);
    const auto to_d = [](const auto& x) { return static_cast<double>(x); };
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j)
        EXPECT_NEAR(to_d(Mf(i, j)), tr.M(i, j), 1e-4 * (1 + max_abs(tr.M)));
      EXPECT_NEAR(to_d(Ff[i]), tr.F[i], 1e-4 * (1 + max_abs(tr.F)));
    }
    for (int l = 0; l < m; ++l) {
      for (int j = 0; j < n; ++j)
        EXPECT_NEAR(to_d(Af(l, j)), tr.A(l, j), 1e-4 * (1 + max_abs(tr.A)));
      EXPECT_NEAR(to_d(bf[l]), tr.b[l], 1e-4 * (1 + max_abs(tr.b)));
    }
    const double L = M::lagrangian(p, s.q, s.qd, s.t), E = M::energy(p, s.q, s.qd, s.t);
    EXPECT_NEAR(to_d(Lf), L, 1e-4 * (1 + std::abs(L)));
    EXPECT_NEAR(to_d(Ef), E, 1e-4 * (1 + std::abs(E)));
    if constexpr (has_nonideal_force<M>::value) {
      const Vec<float, n> Cf = nonideal_terms<M>(p, qf, qdf, tf);
      const V<n> Cd = nonideal_terms<M>(p, s.q, s.qd, s.t);
      for (int i = 0; i < n; ++i) EXPECT_NEAR(to_d(Cf[i]), Cd[i], 1e-4 * (1 + max_abs(Cd)));
    }
  });
}

// Optional parts each model declares
TEST(Registry, OptionalParts) {
  std::set<std::string> conflated, nonideal;
  for_each_model([&](auto tag) {
    using M = typename decltype(tag)::type;
    if (has_conflated_lagrangian<M>::value) conflated.insert(M::name);
    if (has_nonideal_force<M>::value) nonideal.insert(M::name);
  });
  EXPECT_EQ(conflated, (std::set<std::string>{"skate", "appell", "udwadia_example2",
                                              "udwadia_example3", "udwadia_example4",
                                              "skate_redundant"}));
  EXPECT_EQ(nonideal, (std::set<std::string>{"appell", "incline_block"}));
}

}  // namespace
