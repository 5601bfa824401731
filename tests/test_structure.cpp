// Declared structure of a model's Lagrangian (kernels/model.hpp,
// separable_lagrangian) against the general AD of kernels/dynamics.hpp: the
// lean jet that the declaration selects must give the M and F of the full
// one, at random states (including the time argument).
#include <gtest/gtest.h>

#include <random>

#include "kernels/dynamics.hpp"
#include "models/appell.hpp"
#include "models/rolling_coin.hpp"
#include "models/skate.hpp"

using namespace nholo;

namespace {

static_assert(lagrangian_is_separable<models::RollingCoin>::value, "coin declares L = T(qd) + U(q)");
static_assert(lagrangian_is_separable<models::Appell>::value, "Appell declares L = T(qd) + U(q)");
static_assert(!lagrangian_is_separable<models::Skate>::value,
              "the skate's L couples thd with theta: not separable");
static_assert(!lagrangian_is_separable<Conflated<models::Appell>>::value,
              "a declaration belongs to the true Lagrangian, not the conflated one");

template <class Model>
void check_lean_equals_general(const typename Model::Params& p, int seed) {
  constexpr int n = Model::n;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-3.0, 3.0);
  for (int trial = 0; trial < 200; ++trial) {
    Vec<double, n> q, qd;
    for (int i = 0; i < n; ++i) {
      q[i] = u(rng);
      qd[i] = u(rng);
    }
    const double t = u(rng);
    Mat<double, n, n> M1, M2;
    Vec<double, n> F1, F2;
    lagrangian_terms_ad<Model, double, true>(p, q, qd, t, M1, F1);
    lagrangian_terms_ad<Model, double, false>(p, q, qd, t, M2, F2);
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) EXPECT_NEAR(M1(i, j), M2(i, j), 1e-13 * (1 + std::abs(M2(i, j))));
      EXPECT_NEAR(F1[i], F2[i], 1e-13 * (1 + std::abs(F2[i])));
    }
  }
}

TEST(DeclaredStructure, SeparableCoinLeanJetEqualsGeneral) {
  check_lean_equals_general<models::RollingCoin>({1.3, 0.7, 9.81, 0.4}, 1);
}

TEST(DeclaredStructure, SeparableAppellLeanJetEqualsGeneral) {
  check_lean_equals_general<models::Appell>({0.5, 0.2, 0.3, -0.4, -9.81, 1.0, 2.0}, 2);
}

// Independent values for the coin: M = diag(m, m, m R^2/2, m R^2/4),
// F = (0, m g sin(alpha), 0, 0) (docs/physics.md, item 10), from the lean jet.
TEST(DeclaredStructure, CoinLeanJetMatchesHandDerivedTerms) {
  const models::RollingCoin::Params p{1.3, 0.7, 9.81, 0.4};
  Vec<double, 4> q{{0.3, -1.2, 2.0, 0.9}}, qd{{0.4, 0.1, -2.0, 1.5}};
  Mat<double, 4, 4> M;
  Vec<double, 4> F;
  lagrangian_terms_ad<models::RollingCoin>(p, q, qd, 0.25, M, F);
  const double Md[4] = {1.3, 1.3, 0.5 * 1.3 * 0.49, 0.25 * 1.3 * 0.49};
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_NEAR(M(i, j), i == j ? Md[i] : 0.0, 1e-15);
  EXPECT_NEAR(F[0], 0.0, 1e-15);
  EXPECT_NEAR(F[1], 1.3 * 9.81 * std::sin(0.4), 1e-14);
  EXPECT_NEAR(F[2], 0.0, 1e-15);
  EXPECT_NEAR(F[3], 0.0, 1e-15);
}

}  // namespace
