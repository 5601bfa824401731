// nholo/bench/bench_systems.hpp — the systems the benchmarks integrate, each in
// several implementations of the SAME equations of motion, so that timings
// differ only in how the right-hand side is computed.
//
// Benchmark systems (parameters fixed below, all O(1)):
//   coin    models::RollingCoin (n = 4, m = 2, ideal, velocity constraints)
//   skate   models::Skate       (n = 3, m = 1, ideal; sleigh on a slope)
//   appell  models::Appell      (n = 3, m = 1, constraint quadratic in qd,
//                                nonideal: drag 0.2)
//
// Right-hand-side implementations (each a System in the sense of
// kernels/system.hpp, so nholo's integrator and ensemble functor run them):
//   nholo_ad   UdwadiaKalabaSystem<GenericModel>: M, F, A, b by nholo's AD
//              (the coin's hand-written M, F hidden), the fundamental
//              equation of kernels/fundamental.hpp — the generic path a user
//              gets by writing a Lagrangian and constraints
//   nholo_hand HandSystem: hand-written M, F, A, b, C (Hand::terms below)
//              into the same kernels/fundamental.hpp solver
//   closed     ClosedSystem: the closed-form accelerations (Hand::qdd), no
//              linear algebra at all — what one writes by hand for one model
//   eigen      EigenSystem (eigen_direct.hpp): the same hand M, F, A, b, C in
//              Eigen dynamic-size matrices, fundamental equation with a
//              JacobiSVD pseudoinverse per evaluation
//
// Hand<Sys>::terms(p, q, qd, t, M, F, A, b, C)   hand-written matrices
// Hand<Sys>::qdd(p, q, qd, t, qdd)              closed-form accelerations
// initial_state<Model>(i, q, qd)                deterministic consistent
//                                               initial state of trajectory i
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "kernels/formulations/udwadia_kalaba.hpp"
#include "models/appell.hpp"
#include "models/rolling_coin.hpp"
#include "models/skate.hpp"

namespace nholo::bench {

using models::Appell;
using models::RollingCoin;
using models::Skate;

// The coin with its hand-written M, F hidden: every derivative by AD.
struct CoinAD : RollingCoin {
  static void hand_dynamics() = delete;
};

// The model the generic path uses for each benchmark system.
template <class Model>
struct Generic {
  using type = Model;
};
template <>
struct Generic<RollingCoin> {
  using type = CoinAD;
};

// Benchmark parameters.
inline RollingCoin::Params coin_params() { return {1.0, 0.5, 9.81, 0.3}; }
inline Skate::Params skate_params() { return {1.0, 0.5, 0.8, 9.81, 0.3}; }
inline Appell::Params appell_params() { return {0.0, 0.2, 0.0, 0.0, -9.81, 1.0, 1.0}; }
template <class Model>
typename Model::Params bench_params();
template <>
inline RollingCoin::Params bench_params<RollingCoin>() { return coin_params(); }
template <>
inline Skate::Params bench_params<Skate>() { return skate_params(); }
template <>
inline Appell::Params bench_params<Appell>() { return appell_params(); }

// Low-discrepancy numbers in [0, 1) for trajectory i, dimension d
// (additive recurrence with irrational steps): deterministic, no RNG state.
inline double unit(int64_t i, int d) {
  static const double alpha[4] = {0.6180339887498949, 0.7548776662466927, 0.5698402909980532,
                                  0.4142135623730950};
  const double v = 0.5 + static_cast<double>(i + 1) * alpha[d & 3] + 0.1 * d;
  return v - std::floor(v);
}

// Consistent initial states (the constraints hold exactly).
template <class Model>
void initial_state(int64_t i, Vec<double, Model::n>& q, Vec<double, Model::n>& qd);

// coin: x = y = phi = 0, theta in [0, 2 pi), omega = phid in [-3, 3],
// Omega = thetad in [1, 3]; xd, yd from rolling without slipping
template <>
inline void initial_state<RollingCoin>(int64_t i, Vec<double, 4>& q, Vec<double, 4>& qd) {
  const double R = coin_params().radius;
  const double th = 2.0 * M_PI * unit(i, 0), phid = -3.0 + 6.0 * unit(i, 1),
               thd = 1.0 + 2.0 * unit(i, 2);
  q[0] = 0.0; q[1] = 0.0; q[2] = 0.0; q[3] = th;
  qd[0] = R * phid * std::sin(th);
  qd[1] = R * phid * std::cos(th);
  qd[2] = phid;
  qd[3] = thd;
}
// skate: at the origin, heading in [0, 2 pi), speed along the blade in
// [0.5, 1.5], thetad in [-2, 2]
template <>
inline void initial_state<Skate>(int64_t i, Vec<double, 3>& q, Vec<double, 3>& qd) {
  const double th = 2.0 * M_PI * unit(i, 0), v = 0.5 + unit(i, 1), thd = -2.0 + 4.0 * unit(i, 2);
  q[0] = 0.0; q[1] = 0.0; q[2] = th;
  qd[0] = v * std::cos(th);
  qd[1] = v * std::sin(th);
  qd[2] = thd;
}
// appell: at (0, 0, 10), xd, yd in [-1, 1], zd = -sqrt(xd^2 + yd^2) (alpha = 0):
// moving down the cone, so the speed never passes through 0, where A = 0 and
// the motion is not unique (rising, it would stop at the top and could leave
// the apex in any direction: no reference solution to compare with)
template <>
inline void initial_state<Appell>(int64_t i, Vec<double, 3>& q, Vec<double, 3>& qd) {
  const double xd = -1.0 + 2.0 * unit(i, 0), yd = -1.0 + 2.0 * unit(i, 1);
  q[0] = 0.0; q[1] = 0.0; q[2] = 10.0;
  qd[0] = xd;
  qd[1] = yd;
  qd[2] = -std::sqrt(xd * xd + yd * yd);
}

// the generic coin (CoinAD) is the coin
template <>
inline void initial_state<CoinAD>(int64_t i, Vec<double, 4>& q, Vec<double, 4>& qd) {
  initial_state<RollingCoin>(i, q, qd);
}
template <>
inline RollingCoin::Params bench_params<CoinAD>() { return coin_params(); }

// ---------------------------------------------------------------------------
// Hand-written matrices and closed-form accelerations.
template <class Model>
struct Hand;

// Rolling coin. M = diag(m, m, m R^2/2, m R^2/4), F = (0, m g sin a, 0, 0),
//   A = [1 0 -R sin th 0; 0 1 -R cos th 0],
//   b = (R phid thd cos th, -R phid thd sin th), C = 0.
// Closed form: phidd = 2 g sin(a) cos(th) / (3 R), thdd = 0, and xdd, ydd the
// time derivatives of the rolling constraints.
template <>
struct Hand<RollingCoin> {
  static constexpr int n = 4, m = 2;
  using P = RollingCoin::Params;
  NHOLO_HDI static void terms(const P& p, const Vec<double, n>& q, const Vec<double, n>& qd,
                              double /*t*/, Mat<double, n, n>& M, Vec<double, n>& F,
                              Mat<double, m, n>& A, Vec<double, m>& b, Vec<double, n>& C) {
    const double R = p.radius, s = ::sin(q[3]), c = ::cos(q[3]);
    M = Mat<double, n, n>::zero();
    M(0, 0) = p.mass;
    M(1, 1) = p.mass;
    M(2, 2) = 0.5 * p.mass * R * R;
    M(3, 3) = 0.25 * p.mass * R * R;
    F = Vec<double, n>::zero();
    F[1] = p.mass * p.g * ::sin(p.slope);
    A = Mat<double, m, n>::zero();
    A(0, 0) = 1.0;
    A(0, 2) = -R * s;
    A(1, 1) = 1.0;
    A(1, 2) = -R * c;
    b[0] = R * qd[2] * qd[3] * c;
    b[1] = -R * qd[2] * qd[3] * s;
    C = Vec<double, n>::zero();
  }
  NHOLO_HDI static void qdd(const P& p, const Vec<double, n>& q, const Vec<double, n>& qd,
                            double /*t*/, Vec<double, n>& a) {
    const double R = p.radius, s = ::sin(q[3]), c = ::cos(q[3]);
    const double phidd = 2.0 * p.g * ::sin(p.slope) * c / (3.0 * R);
    a[0] = R * phidd * s + R * qd[2] * qd[3] * c;
    a[1] = R * phidd * c - R * qd[2] * qd[3] * s;
    a[2] = phidd;
    a[3] = 0.0;
  }
};

// Skate (Chaplygin sleigh on a slope). With e = (cos th, sin th):
//   M = [m 0 -m s sin th; 0 m m s cos th; -m s sin th  m s cos th  I_B],
//   F = (m g sin a + m s thd^2 cos th, m s thd^2 sin th, -m g s sin a sin th),
//   A = [-sin th, cos th, 0], b = thd (xd cos th + yd sin th), C = 0.
// Closed form, v = xd cos th + yd sin th the speed along the blade:
//   vdot = s thd^2 + g sin a cos th,  thdd = -(m s v thd + m g s sin a sin th) / I_B,
//   xdd = vdot cos th - v thd sin th,  ydd = vdot sin th + v thd cos th.
template <>
struct Hand<Skate> {
  static constexpr int n = 3, m = 1;
  using P = Skate::Params;
  NHOLO_HDI static void terms(const P& p, const Vec<double, n>& q, const Vec<double, n>& qd,
                              double /*t*/, Mat<double, n, n>& M, Vec<double, n>& F,
                              Mat<double, m, n>& A, Vec<double, m>& b, Vec<double, n>& C) {
    const double s = ::sin(q[2]), c = ::cos(q[2]), ms = p.mass * p.offset, gs = p.g * ::sin(p.slope);
    M(0, 0) = p.mass; M(0, 1) = 0.0;    M(0, 2) = -ms * s;
    M(1, 0) = 0.0;    M(1, 1) = p.mass; M(1, 2) = ms * c;
    M(2, 0) = -ms * s; M(2, 1) = ms * c; M(2, 2) = p.inertia;
    F[0] = p.mass * gs + ms * qd[2] * qd[2] * c;
    F[1] = ms * qd[2] * qd[2] * s;
    F[2] = -ms * gs * s;
    A(0, 0) = -s;
    A(0, 1) = c;
    A(0, 2) = 0.0;
    b[0] = qd[2] * (qd[0] * c + qd[1] * s);
    C = Vec<double, n>::zero();
  }
  NHOLO_HDI static void qdd(const P& p, const Vec<double, n>& q, const Vec<double, n>& qd,
                            double /*t*/, Vec<double, n>& a) {
    const double s = ::sin(q[2]), c = ::cos(q[2]), gs = p.g * ::sin(p.slope);
    const double v = qd[0] * c + qd[1] * s, w = qd[2];
    const double vdot = p.offset * w * w + gs * c;
    const double wdot = -p.mass * p.offset * (v * w + gs * s) / p.inertia;
    a[0] = vdot * c - v * w * s;
    a[1] = vdot * s + v * w * c;
    a[2] = wdot;
  }
};

// Appell with drag: M = I, F = (Fx, Fy, Fz), A = [xd, yd, -zd],
// b = alpha g'(t), C = -drag |u| qd. Closed form (M = I):
//   qdd = F + C + A^T (b - A (F + C)) / |A|^2   (qdd = F + C when A = 0)
template <>
struct Hand<Appell> {
  static constexpr int n = 3, m = 1;
  using P = Appell::Params;
  NHOLO_HDI static void terms(const P& p, const Vec<double, n>& /*q*/, const Vec<double, n>& qd,
                              double t, Mat<double, n, n>& M, Vec<double, n>& F,
                              Mat<double, m, n>& A, Vec<double, m>& b, Vec<double, n>& C) {
    M = Mat<double, n, n>::identity();
    F[0] = p.force_x;
    F[1] = p.force_y;
    F[2] = p.force_z;
    A(0, 0) = qd[0];
    A(0, 1) = qd[1];
    A(0, 2) = -qd[2];
    b[0] = p.alpha * p.g_amplitude * p.g_frequency * ::cos(p.g_frequency * t);
    const double u2 = qd[0] * qd[0] + qd[1] * qd[1] + qd[2] * qd[2];
    const double k = u2 > 0.0 ? -p.drag * ::sqrt(u2) : 0.0;
    for (int i = 0; i < n; ++i) C[i] = k * qd[i];
  }
  NHOLO_HDI static void qdd(const P& p, const Vec<double, n>& /*q*/, const Vec<double, n>& qd,
                            double t, Vec<double, n>& a) {
    const double u2 = qd[0] * qd[0] + qd[1] * qd[1] + qd[2] * qd[2];
    const double k = u2 > 0.0 ? -p.drag * ::sqrt(u2) : 0.0;
    const double f[3] = {p.force_x + k * qd[0], p.force_y + k * qd[1], p.force_z + k * qd[2]};
    const double A[3] = {qd[0], qd[1], -qd[2]};
    const double b = p.alpha * p.g_amplitude * p.g_frequency * ::cos(p.g_frequency * t);
    const double aa = A[0] * A[0] + A[1] * A[1] + A[2] * A[2];
    const double lam = aa > 0.0 ? (b - (A[0] * f[0] + A[1] * f[1] + A[2] * f[2])) / aa : 0.0;
    for (int i = 0; i < 3; ++i) a[i] = f[i] + A[i] * lam;
  }
};

// ---------------------------------------------------------------------------
// Systems (kernels/system.hpp concept) around the hand-written forms.

// Common parts: state layout (q, qd), no drift projection, observe = qdd only.
template <class Model, class Derived>
struct BenchSystemBase {
  using model_type = Model;
  using scalar = double;
  using Params = typename Model::Params;
  static constexpr int n = Model::n;
  static constexpr int m = constraint_count<Model>();
  static constexpr int n_extra = 0;
  static constexpr int N = 2 * n;
  Params params;
  EvalOptions eval;

  NHOLO_HDI bool post_step(double, Vec<double, N>&) const { return false; }
  NHOLO_HDI void observe(double t, const Vec<double, N>& y, Observation<double, n, m>& obs) const {
    Vec<double, N> dy;
    obs = Observation<double, n, m>{};
    obs.status = static_cast<const Derived&>(*this)(t, y, dy);
    for (int i = 0; i < n; ++i) obs.qdd[i] = dy[n + i];
    obs.energy = NAN;
    obs.constraint_residual = NAN;
  }
  NHOLO_HDI static void split(const Vec<double, N>& y, Vec<double, n>& q, Vec<double, n>& qd) {
    split_state(y, q, qd);
  }
};

// Closed-form accelerations in nholo's integrator.
template <class Model>
struct ClosedSystem : BenchSystemBase<Model, ClosedSystem<Model>> {
  using Base = BenchSystemBase<Model, ClosedSystem<Model>>;
  using Base::N;
  using Base::n;
  NHOLO_HDI Status operator()(double t, const Vec<double, N>& y, Vec<double, N>& dydt) const {
    Vec<double, n> q, qd, a;
    split_state(y, q, qd);
    Hand<Model>::qdd(this->params, q, qd, t, a);
    for (int i = 0; i < n; ++i) {
      dydt[i] = qd[i];
      dydt[n + i] = a[i];
    }
    // no finiteness check, like the odeint functor: the stepper checks y1
    return Status::ok;
  }
};

// Hand-written M, F, A, b, C into nholo's fundamental-equation solver.
template <class Model>
struct HandSystem : BenchSystemBase<Model, HandSystem<Model>> {
  using Base = BenchSystemBase<Model, HandSystem<Model>>;
  using Base::m;
  using Base::N;
  using Base::n;
  NHOLO_HDI Status operator()(double t, const Vec<double, N>& y, Vec<double, N>& dydt) const {
    Vec<double, n> q, qd, F, C;
    Mat<double, n, n> M;
    Mat<double, m, n> A;
    Vec<double, m> b;
    split_state(y, q, qd);
    Hand<Model>::terms(this->params, q, qd, t, M, F, A, b, C);
    const auto r =
        udwadia_kalaba<false, has_nonideal_force<Model>::value>(M, F, A, b, C, this->eval.pinv);
    for (int i = 0; i < n; ++i) {
      dydt[i] = qd[i];
      dydt[n + i] = r.qdd[i];
    }
    if (r.status != Status::ok) return r.status;
    return all_finite(dydt) ? Status::ok : Status::non_finite;
  }
};

// The generic path.
template <class Model>
using GenericSystem = UdwadiaKalabaSystem<typename Generic<Model>::type>;

}  // namespace nholo::bench
