// Tests of kernels/lane_tangent.hpp: the Lyapunov tangent system
// (TangentSystem<Sys, K>, with and without its constant-mass cache) evaluated
// for W trajectories at once against its scalar right-hand side and
// post_step, lane by lane. On models without sin, cos, ... of the state every
// value and tangent is the scalar code's to the bit; lanes the fast path does
// not hold for (a constraint's rank lost at rest, a state not finite) are
// the scalar code's; a lane's result does not depend on the width.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <type_traits>
#include <vector>

#include "kernels/formulations.hpp"
#include "kernels/lane_tangent.hpp"
#include "models/registry.hpp"
#include "tests/model_defaults.hpp"

using namespace nholo;

namespace {

using nholo_test::bits;
using nholo_test::default_params;

template <class Model, int K>
using Tangent = TangentSystem<UdwadiaKalabaSystem<Model>, K>;
template <class TS>
using PreparedTangent = std::decay_t<decltype(prepare_system(
    std::declval<const TS&>(), 0.0, std::declval<const Vec<double, TS::N>&>()))>;

// A tangent system of Model with its default parameters
template <class Model, int K>
Tangent<Model, K> tangent_system(DriftControl drift = DriftControl::none) {
  Tangent<Model, K> ts;
  if constexpr (Model::n_params > 0) ts.params = default_params<Model>();
  ts.eval.drift = drift;
  ts.renormalize_every = 0.5;
  return ts;
}

// count tangent states: random base states and deltas, log sums, tau in
// [0, 1) and T in [1, 2)
template <class TS>
std::vector<Vec<double, TS::N>> tangent_states(int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<Vec<double, TS::N>> ys(count);
  for (auto& y : ys) {
    for (int c = 0; c < TS::N; ++c) y[c] = u(rng);
    y[TS::tau_index] = 0.5 + 0.5 * u(rng);
    y[TS::elapsed_index] = 1.5 + 0.5 * u(rng);
  }
  return ys;
}

// The lane systems of the states ys[first .. first + W): each lane's scalar
// system (prepared at its state when Prepare) and the states as lanes
template <class TS, bool Prepare, int W>
struct LaneBatch {
  using RunSys = std::conditional_t<Prepare, PreparedTangent<TS>, TS>;
  LaneSystem<RunSys, W> ls;
  Vec<Lanes<W>, TS::N> y;
  LaneBatch(const TS& ts, const std::vector<Vec<double, TS::N>>& ys, int first, double t) {
    for (int i = 0; i < W; ++i) {
      if constexpr (Prepare) {
        ls.lane[i] = prepare_system(ts, t, ys[first + i]);
      } else {
        ls.lane[i] = ts;
      }
      for (int c = 0; c < TS::N; ++c) y[c].set(i, ys[first + i][c]);
    }
  }
};

// f and status of ys[first .. first + W) evaluated as W lanes
template <class TS, bool Prepare, int W>
void lanes_rhs(const TS& ts, const std::vector<Vec<double, TS::N>>& ys, int first, double t,
               Vec<double, TS::N>* f, Status* st) {
  LaneBatch<TS, Prepare, W> b(ts, ys, first, t);
  Vec<Lanes<W>, TS::N> dy;
  const LaneStatus<W> s = b.ls(Lanes<W>(t), b.y, dy);
  for (int i = 0; i < W; ++i) {
    st[i] = s[i];
    for (int c = 0; c < TS::N; ++c) f[i][c] = dy[c][i];
  }
}

// Every state's right-hand side in 8 lanes and alone (1 lane) against the
// scalar tangent system's: statuses equal, and the bits where `bitwise`
// (else within 1e-12 relative where the scalar status is ok); returns how
// many states the scalar system evaluated ok
template <class TS, bool Prepare>
int check_rhs(const TS& ts, const std::vector<Vec<double, TS::N>>& ys, bool bitwise) {
  constexpr int N = TS::N;
  const int count = static_cast<int>(ys.size());
  const double t = 0.3;
  std::vector<Vec<double, N>> f8(count), f1(count);
  std::vector<Status> s8(count), s1(count);
  for (int j = 0; j + 8 <= count; j += 8) lanes_rhs<TS, Prepare, 8>(ts, ys, j, t, &f8[j], &s8[j]);
  for (int j = 0; j < count; ++j) lanes_rhs<TS, Prepare, 1>(ts, ys, j, t, &f1[j], &s1[j]);
  int ok = 0;
  for (int j = 0; j < count; ++j) {
    Vec<double, N> fs;
    Status ss;
    if constexpr (Prepare) {
      ss = prepare_system(ts, t, ys[j])(t, ys[j], fs);
    } else {
      ss = ts(t, ys[j], fs);
    }
    EXPECT_EQ(s8[j], ss) << "state " << j;
    EXPECT_EQ(s1[j], ss) << "state " << j;
    if (ss == Status::ok) ++ok;
    for (int c = 0; c < N; ++c) {
      EXPECT_EQ(bits(f1[j][c]), bits(f8[j][c])) << "state " << j << " c " << c;
      if (bitwise) {
        EXPECT_EQ(bits(f8[j][c]), bits(fs[c])) << "state " << j << " c " << c;
      } else if (ss == Status::ok) {
        EXPECT_NEAR(f8[j][c], fs[c], 1e-12 * (1.0 + std::fabs(fs[c])))
            << "state " << j << " c " << c;
      }
    }
  }
  return ok;
}

// The fast path on Dual<Lanes<4>, K> holds for ys[0..4) (regular states):
// the mask is all true and the accelerations' values and tangents are those
// of the scalar dual system (Sys on Dual<double, K>), bit for bit
template <class Model, int K>
void expect_fast_path_holds(const std::vector<Vec<double, Tangent<Model, K>::N>>& ys) {
  using TS = Tangent<Model, K>;
  using D = Dual<Lanes<4>, K>;
  constexpr int n = Model::n, N0 = TS::N0;
  const TS ts = tangent_system<Model, K>();
  Vec<D, n> q, qd, qdd;
  for (int c = 0; c < n; ++c) {
    q[c] = D(Lanes<4>(0.0));
    qd[c] = D(Lanes<4>(0.0));
    for (int i = 0; i < 4; ++i) {
      q[c].v.set(i, ys[i][c]);
      qd[c].v.set(i, ys[i][n + c]);
      for (int j = 0; j < K; ++j) {
        q[c].d[j].set(i, ys[i][N0 + j * N0 + c]);
        qd[c].d[j].set(i, ys[i][N0 + j * N0 + n + c]);
      }
    }
  }
  const LaneMask<4> fast = lane_system_detail::udwadia_kalaba_lanes<Model>(
      ts.params, q, qd, D(Lanes<4>(0.3)), ts.eval, qdd);
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(fast[i]) << Model::name << " lane " << i;
    Vec<double, TS::N> fs;
    ASSERT_EQ(ts(0.3, ys[i], fs), Status::ok) << Model::name << " lane " << i;
    for (int c = 0; c < n; ++c) {
      EXPECT_EQ(bits(qdd[c].v[i]), bits(fs[n + c])) << Model::name << " lane " << i;
      for (int j = 0; j < K; ++j)
        EXPECT_EQ(bits(qdd[c].d[j][i]), bits(fs[N0 + j * N0 + n + c]))
            << Model::name << " lane " << i << " tangent " << j;
    }
  }
}

// A mass matrix that depends on the state (the built-in models' are
// constant, so their tangents of M vanish): a unit particle (q0, q1) carrying
// a rotor q2 whose inertia and coupling grow with q0, in a quadratic well,
// under the velocity constraint q2d = q1 q0d; arithmetic only.
//   L = (q0d^2 + q1d^2 + (1 + q0^2) q2d^2) / 2 + q0 q1d q2d / 2 - (q0^2 + q1^2) / 2
//   M = [[1, 0, 0], [0, 1, q0 / 2], [0, q0 / 2, 1 + q0^2]] (positive definite)
struct CoupledRotor {
  static constexpr const char* name = "coupled_rotor";
  static constexpr const char* description = "test model: a state-dependent mass matrix";
  static constexpr int n = 3;
  static constexpr int m_position = 0;
  static constexpr int m_velocity = 1;
  static constexpr int m_acceleration = 0;
  static constexpr int n_params = 0;
  static constexpr const char* coordinates[n] = {"q0", "q1", "q2"};
  static constexpr const char* coordinate_units[n] = {"1", "1", "1"};
  static constexpr const char* constraint_names[1] = {"rolling"};
  static constexpr ParamInfo param_info[1] = {{nullptr, 0.0, nullptr, nullptr}};
  struct Params {};
  static Params make_params(const double* /*v*/) { return Params{}; }
  template <class S>
  static S lagrangian(const Params& /*p*/, const Vec<S, n>& q, const Vec<S, n>& qd,
                      const S& /*t*/) {
    return 0.5 * (qd[0] * qd[0] + qd[1] * qd[1] + (1.0 + q[0] * q[0]) * qd[2] * qd[2]) +
           0.5 * q[0] * qd[1] * qd[2] - 0.5 * (q[0] * q[0] + q[1] * q[1]);
  }
  template <class S>
  static Vec<S, 1> velocity_constraints(const Params& /*p*/, const Vec<S, n>& q,
                                        const Vec<S, n>& qd, const S& /*t*/) {
    Vec<S, 1> g;
    g[0] = qd[2] - q[1] * qd[0];
    return g;
  }
};

TEST(LaneTangent, AStateDependentMassMatrixsTangentsAreTheScalarOnesBitForBit) {
  // M's factor on dual numbers with nonzero tangents (no cache: M is not
  // constant), one and two tangent vectors
  using Model = CoupledRotor;
  static_assert(std::is_same<PreparedTangent<Tangent<Model, 2>>, Tangent<Model, 2>>::value,
                "no cache");
  const auto ys1 = tangent_states<Tangent<Model, 1>>(16, 5);
  EXPECT_EQ((check_rhs<Tangent<Model, 1>, false>(tangent_system<Model, 1>(), ys1, true)), 16);
  const auto ys2 = tangent_states<Tangent<Model, 2>>(16, 6);
  EXPECT_EQ((check_rhs<Tangent<Model, 2>, false>(tangent_system<Model, 2>(), ys2, true)), 16);
  expect_fast_path_holds<Model, 2>(ys2);
}

TEST(LaneTangent, InclineBlocksTangentsAreTheScalarOnesBitForBit) {
  // Coulomb friction (sgn on the lanes), a position constraint, constant mass:
  // with its cache and without, one and two tangent vectors
  using Model = models::InclineBlock;
  auto ys1 = tangent_states<Tangent<Model, 1>>(24, 3);
  ys1[13][2] = NAN;  // a rate not finite: the scalar code's status
  EXPECT_EQ((check_rhs<Tangent<Model, 1>, true>(tangent_system<Model, 1>(), ys1, true)), 23);
  EXPECT_EQ((check_rhs<Tangent<Model, 1>, false>(tangent_system<Model, 1>(), ys1, true)), 23);
  const auto ys2 = tangent_states<Tangent<Model, 2>>(16, 4);
  EXPECT_EQ((check_rhs<Tangent<Model, 2>, true>(tangent_system<Model, 2>(), ys2, true)), 16);
  EXPECT_EQ((check_rhs<Tangent<Model, 2>, false>(tangent_system<Model, 2>(), ys2, true)), 16);
  expect_fast_path_holds<Model, 2>(ys2);
}

TEST(LaneTangent, RankLostAtRestFallsBackInItsLaneOnly) {
  // Udwadia & Wanichanon's example 3: the constraint nonlinear in the rates
  // loses its rank where yd = zd = 0 (states 2 and 11: the scalar
  // pseudoinverse, status singular); the other lanes run the fast path
  using Model = models::UdwadiaExample3;
  using TS = Tangent<Model, 2>;
  auto ys = tangent_states<TS>(16, 9);
  for (int j : {2, 11})
    for (int c = Model::n + 1; c < 2 * Model::n; ++c) ys[j][c] = 0.0;
  EXPECT_EQ((check_rhs<TS, true>(tangent_system<Model, 2>(), ys, true)), 14);
  EXPECT_EQ((check_rhs<TS, false>(tangent_system<Model, 2>(), ys, true)), 14);
  expect_fast_path_holds<Model, 2>({ys[0], ys[1], ys[3], ys[4]});  // (moving)
}

TEST(LaneTangent, SkatesTangentsAgreeWithTheScalarOnesToRounding) {
  // the skate: sin and cos of its heading (SLEEF's on the lanes), no cache
  using Model = models::Skate;
  using TS = Tangent<Model, 1>;
  static_assert(std::is_same<PreparedTangent<TS>, TS>::value, "the skate has no cache");
  const auto ys = tangent_states<TS>(16, 21);
  EXPECT_EQ((check_rhs<TS, false>(tangent_system<Model, 1>(), ys, false)), 16);
}

TEST(LaneTangent, PostStepProjectsAndReorthonormalisesAsTheScalarCode) {
  // the incline block with the projection: states 1e-6 off the plane; tau
  // below and above renormalize_every (0.5); lane 5's second delta longer
  // than 1e100 (reorthonormalised whatever tau says); lane 6 not accepted
  using Model = models::InclineBlock;
  using TS = Tangent<Model, 2>;
  constexpr int W = 8, N = TS::N;
  const TS ts = tangent_system<Model, 2>(DriftControl::project);
  auto ys = tangent_states<TS>(W, 15);
  const double a = ts.params.angle;
  for (int i = 0; i < W; ++i) {
    ys[i][1] = ys[i][0] * std::tan(a) + 1e-6 * (i + 1);
    ys[i][TS::tau_index] = i % 3 == 0 ? 0.7 : 0.2;
  }
  ys[5][TS::N0 + TS::N0 + 1] = 3e100;
  LaneBatch<TS, true, W> b(ts, ys, 0, 1.0);
  LaneMask<W> accepted(true);
  accepted.set(6, false);
  const LaneMask<W> moved = b.ls.post_step(Lanes<W>(1.0), b.y, accepted);
  int reorthonormalised = 0;
  for (int i = 0; i < W; ++i) {
    Vec<double, N> yi = ys[i];
    const bool scalar_moved = i != 6 && prepare_system(ts, 1.0, ys[i]).post_step(1.0, yi);
    EXPECT_EQ(moved[i], scalar_moved) << "lane " << i;
    if (yi[TS::tau_index] == 0.0) ++reorthonormalised;
    for (int c = 0; c < N; ++c)
      EXPECT_EQ(bits(b.y[c][i]), bits(yi[c])) << "lane " << i << " c " << c;
  }
  EXPECT_EQ(reorthonormalised, 3);  // lanes 0, 3 (tau 0.7) and 5 (the long delta)
}

}  // namespace
