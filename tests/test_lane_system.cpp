// Tests of kernels/lane_system.hpp: every built-in model under the
// Udwadia–Kalaba formulation evaluated for 8 trajectories at once against
// its scalar right-hand side, lane by lane; a lane's result depends on its
// own state only (any width, any neighbours: the same bits); lanes the fast
// path does not hold for are the scalar code's to the bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>

#include "kernels/formulations.hpp"
#include "kernels/lane_system.hpp"
#include "models/registry.hpp"
#include "tests/model_defaults.hpp"

using namespace nholo;

namespace {

using nholo_test::bits;

using nholo_test::default_params;

// The scalar system a trajectory is integrated with (its cache prepared at
// its state, as the ensemble does) and the lane system of W of them.
template <class Model>
using UKSys = UdwadiaKalabaSystem<Model>;
template <class Model>
using Prepared = std::decay_t<decltype(prepare_system(
    std::declval<const UKSys<Model>&>(), 0.0, std::declval<const Vec<double, 2 * Model::n>&>()))>;

template <class Model>
std::vector<Vec<double, 2 * Model::n>> random_states(int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<Vec<double, 2 * Model::n>> ys(count);
  for (auto& y : ys)
    for (int c = 0; c < 2 * Model::n; ++c) y[c] = u(rng);
  return ys;
}

// f and status of the states ys[first .. first + W) evaluated as W lanes
template <class Model, int W>
void lanes_rhs(const std::vector<Vec<double, 2 * Model::n>>& ys, int first, double t,
               Vec<double, 2 * Model::n>* f, Status* st) {
  constexpr int N = 2 * Model::n;
  UKSys<Model> sys;
  sys.params = default_params<Model>();
  LaneSystem<Prepared<Model>, W> ls;
  Vec<Lanes<W>, N> y, dy;
  for (int i = 0; i < W; ++i) {
    ls.lane[i] = prepare_system(sys, t, ys[first + i]);
    for (int c = 0; c < N; ++c) y[c].set(i, ys[first + i][c]);
  }
  const LaneStatus<W> s = ls(Lanes<W>(t), y, dy);
  for (int i = 0; i < W; ++i) {
    st[i] = s[i];
    for (int c = 0; c < N; ++c) f[i][c] = dy[c][i];
  }
}

// with_width_one: also each state alone (Lanes<1>), the same bits as in 8 lanes
template <class Model, bool with_width_one = false>
void check_model(bool all_fallback) {
  constexpr int N = 2 * Model::n;
  constexpr int count = 16;
  const double t = 0.3;
  const auto ys = random_states<Model>(count, 11);
  UKSys<Model> sys;
  sys.params = default_params<Model>();
  Vec<double, N> f8[count], f1[count];
  Status s8[count], s1[count];
  for (int j = 0; j < count; j += 8) lanes_rhs<Model, 8>(ys, j, t, f8 + j, s8 + j);
  if constexpr (with_width_one)
    for (int j = 0; j < count; ++j) lanes_rhs<Model, 1>(ys, j, t, f1 + j, s1 + j);
  // the states 1 .. 8 as one group: each lane now has other neighbours
  Vec<double, N> g8[8];
  Status gs8[8];
  lanes_rhs<Model, 8>(ys, 1, t, g8, gs8);
  int fast_ok = 0;
  for (int j = 0; j < count; ++j) {
    const auto& ps = prepare_system(sys, t, ys[j]);
    Vec<double, N> fs;
    const Status ss = ps(t, ys[j], fs);
    EXPECT_EQ(s8[j], ss) << Model::name << " state " << j;
    if (j >= 1 && j <= 8) {
      EXPECT_EQ(gs8[j - 1], s8[j]) << Model::name << " state " << j;
    }
    if constexpr (with_width_one) {
      EXPECT_EQ(s1[j], s8[j]) << Model::name << " state " << j;
    }
    for (int c = 0; c < N; ++c) {
      if constexpr (with_width_one) {
        EXPECT_EQ(bits(f1[j][c]), bits(f8[j][c])) << Model::name << " state " << j << " c " << c;
      }
      if (j >= 1 && j <= 8) {
        EXPECT_EQ(bits(g8[j - 1][c]), bits(f8[j][c])) << Model::name << " state " << j;
      }
      if (ss != Status::ok) continue;
      if (all_fallback) {
        EXPECT_EQ(bits(f8[j][c]), bits(fs[c])) << Model::name << " state " << j << " c " << c;
        continue;
      }
      // SLEEF's sin, cos, ... against glibc's: each within 1 ulp
      EXPECT_NEAR(f8[j][c], fs[c], 1e-12 * (1.0 + std::fabs(fs[c])))
          << Model::name << " state " << j << " c " << c;
    }
    if (ss == Status::ok) ++fast_ok;
  }
  EXPECT_GT(fast_ok, 0) << Model::name << ": no state evaluated ok";
  // the fast path itself holds in every lane whose scalar evaluation is ok
  // (else the comparisons above would only compare the fallback); never
  // where the constraints are redundant
  Vec<Lanes<8>, Model::n> q, qd, qdd;
  for (int i = 0; i < 8; ++i)
    for (int c = 0; c < Model::n; ++c) {
      q[c].set(i, ys[i][c]);
      qd[c].set(i, ys[i][Model::n + c]);
    }
  const LaneMask<8> fast = lane_system_detail::udwadia_kalaba_lanes<Model>(
      sys.params, q, qd, Lanes<8>(t), sys.eval, qdd);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(fast[i], !all_fallback && s8[i] == Status::ok) << Model::name << " lane " << i;
  }
}

TEST(LaneSystem, EveryBuiltInModelUnderUdwadiaKalabaMatchesItsScalarRightHandSide) {
  check_model<models::RollingCoin, true>(false);
  check_model<models::Skate>(false);
  check_model<models::Appell, true>(false);
  check_model<models::UdwadiaExample3>(false);  // a constraint nonlinear in the rates
  check_model<models::InclineBlock>(false);     // Coulomb friction: sgn on lanes
  check_model<models::Sleigh>(false);
  // (the other built-in models take the same code paths as one of these; left
  // out to keep this test's compile time small)
}

TEST(LaneSystem, RedundantConstraintsFallBackToTheScalarCodeBitForBit) {
  // K = A M^-1 A^T is rank-deficient in every state: every lane is its
  // scalar System's evaluation (the pseudoinverse)
  check_model<models::RollingCoinRedundant>(true);
}

TEST(LaneSystem, AppellsParticleAtRestFallsBackInItsLaneOnly) {
  // Appell's constraint loses its rank at rest (docs/physics.md): lane 2 at
  // rest, the others moving
  using Model = models::Appell;
  constexpr int N = 2 * Model::n;
  auto ys = random_states<Model>(8, 5);
  for (int c = Model::n; c < N; ++c) ys[2][c] = 0.0;
  Vec<double, N> f[8];
  Status st[8];
  lanes_rhs<Model, 8>(ys, 0, 0.0, f, st);
  UKSys<Model> sys;
  sys.params = default_params<Model>();
  for (int j = 0; j < 8; ++j) {
    Vec<double, N> fs;
    const Status ss = sys(0.0, ys[j], fs);
    EXPECT_EQ(st[j], ss) << j;
    if (j == 2) {
      EXPECT_EQ(ss, Status::singular);
      for (int c = 0; c < N; ++c) EXPECT_EQ(bits(f[j][c]), bits(fs[c])) << c;
    } else {
      EXPECT_EQ(ss, Status::ok) << j;
    }
  }
}

}  // namespace
