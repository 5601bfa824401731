// Tests of kernels/tableaus.hpp and kernels/tableau_dop853.hpp: structure of
// the Butcher tableaus, every Runge–Kutta order condition (one per rooted
// tree) for the propagated and the embedded weights, and the order measured
// on a scalar ODE by step halving.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <vector>

#include "kernels/tableau_dop853.hpp"
#include "kernels/tableaus.hpp"

using namespace nholo;

namespace {

using Real = long double;
constexpr int kMaxStages = 12;
using StageVec = std::array<Real, kMaxStages>;

// ---------------------------------------------------------------------------
// Rooted trees. A tree is the multiset of its root's subtrees, stored as a
// non-decreasing list of tree ids; trees are generated order by order, so ids
// are sorted by order and every multiset is produced exactly once.
struct Tree {
  int order;
  Real gamma;                 // density: gamma(t) = |t| prod gamma(children)
  std::vector<int> children;  // ids into the forest
};

class Forest {
 public:
  explicit Forest(int max_order) {
    trees_.push_back({1, 1.0L, {}});
    first_.push_back(0);  // first_[n-1]: id of the first tree of order n
    first_.push_back(1);
    for (int n = 2; n <= max_order; ++n) {
      std::vector<int> kids;
      grow(n, n - 1, 0, kids);
      first_.push_back(static_cast<int>(trees_.size()));
    }
  }
  const Tree& operator[](int id) const { return trees_[static_cast<size_t>(id)]; }
  int begin_of(int n) const { return first_[static_cast<size_t>(n - 1)]; }
  int end_of(int n) const { return first_[static_cast<size_t>(n)]; }
  int count(int n) const { return end_of(n) - begin_of(n); }

 private:
  // Append every tree of order n whose remaining subtrees (total order rem)
  // have ids >= min_id, given the subtrees chosen so far.
  void grow(int n, int rem, int min_id, std::vector<int>& kids) {
    if (rem == 0) {
      Real g = static_cast<Real>(n);
      for (int k : kids) g *= trees_[static_cast<size_t>(k)].gamma;
      trees_.push_back({n, g, kids});
      return;
    }
    const int limit = first_[static_cast<size_t>(n - 1)];  // trees of order < n
    for (int id = min_id; id < limit; ++id) {
      const int o = trees_[static_cast<size_t>(id)].order;
      if (o > rem) break;
      kids.push_back(id);
      grow(n, rem - o, id, kids);
      kids.pop_back();
    }
  }
  std::vector<Tree> trees_;
  std::vector<int> first_;
};

// Tableau entries in long double.
struct Coeffs {
  int s = 0;
  Real a[kMaxStages][kMaxStages] = {};
  Real c[kMaxStages] = {};
  Real b[kMaxStages] = {};
  Real e[kMaxStages] = {};
  Real e3[kMaxStages] = {};
};

template <class Tab>
Coeffs load() {
  static_assert(Tab::stages <= kMaxStages, "enlarge kMaxStages");
  Coeffs k;
  k.s = Tab::stages;
  for (int i = 0; i < k.s; ++i) {
    k.c[i] = Tab::c(i);
    k.b[i] = Tab::b(i);
    k.e[i] = Tab::e(i);
    k.e3[i] = Tab::e3(i);
    for (int j = 0; j < k.s; ++j) k.a[i][j] = Tab::a(i, j);
  }
  return k;
}

// Stage vectors of the elementary weights: Phi(t) = w . v(t) with
// v(leaf) = 1 and v(t)_i = prod over subtrees u of (A v(u))_i.
std::vector<StageVec> stage_vectors(const Coeffs& k, const Forest& f, int max_order) {
  std::vector<StageVec> v(static_cast<size_t>(f.end_of(max_order)));
  for (int id = 0; id < f.end_of(max_order); ++id) {
    StageVec x;
    x.fill(0.0L);
    for (int i = 0; i < k.s; ++i) x[static_cast<size_t>(i)] = 1.0L;
    for (int u : f[id].children) {
      const StageVec& vu = v[static_cast<size_t>(u)];
      for (int i = 0; i < k.s; ++i) {
        Real av = 0.0L;
        for (int j = 0; j < k.s; ++j) av += k.a[i][j] * vu[static_cast<size_t>(j)];
        x[static_cast<size_t>(i)] *= av;
      }
    }
    v[static_cast<size_t>(id)] = x;
  }
  return v;
}

// Largest residual |Phi(t) - 1/gamma(t)| over the trees of order n, for the
// weights w.
Real max_residual(const Real* w, const Coeffs& k, const Forest& f, const std::vector<StageVec>& v,
                  int n) {
  Real worst = 0.0L;
  for (int id = f.begin_of(n); id < f.end_of(n); ++id) {
    Real phi = 0.0L;
    for (int i = 0; i < k.s; ++i) phi += w[i] * v[static_cast<size_t>(id)][static_cast<size_t>(i)];
    worst = std::fmax(worst, std::fabs(phi - 1.0L / f[id].gamma));
  }
  return worst;
}

constexpr int kTreeOrder = 9;  // one beyond DOP853's order
constexpr Real kOrderTol = 1e-13L;
constexpr Real kFailTol = 1e-7L;  // a "violated" condition is off by more than this

const Forest& forest() {
  static const Forest f(kTreeOrder);
  return f;
}

// Weights w satisfy all conditions of orders 1..p and violate one of order p+1.
void expect_exact_order(const char* what, const Real* w, const Coeffs& k, int p) {
  const Forest& f = forest();
  const auto v = stage_vectors(k, f, p + 1);
  Real largest = 0.0L;
  for (int n = 1; n <= p; ++n) {
    const Real r = max_residual(w, k, f, v, n);
    largest = std::fmax(largest, r);
    EXPECT_LT(r, kOrderTol) << what << ": order condition(s) of order " << n
                            << " violated, residual " << static_cast<double>(r);
  }
  const Real r_next = max_residual(w, k, f, v, p + 1);
  EXPECT_GT(r_next, kFailTol) << what << ": also satisfies all conditions of order " << p + 1
                              << " (wrong weights?)";
  std::printf("  %-16s order %d: largest residual %.3e (orders 1..%d), %.3e (order %d)\n", what, p,
              static_cast<double>(largest), p, static_cast<double>(r_next), p + 1);
}

TEST(Tableaus, TreeCountsMatchOEIS) {
  // A000081: number of rooted trees with n nodes.
  const int expected[kTreeOrder] = {1, 1, 2, 4, 9, 20, 48, 115, 286};
  for (int n = 1; n <= kTreeOrder; ++n)
    EXPECT_EQ(forest().count(n), expected[n - 1]) << "order " << n;
  // gamma of the bushy tree of order n is n, of the tall tree n!.
  EXPECT_EQ(forest()[forest().begin_of(4)].gamma, 4.0L);     // bushy: root with 3 leaves
  EXPECT_EQ(forest()[forest().end_of(4) - 1].gamma, 24.0L);  // tall: a path of 4 nodes
}

// The coefficient functions are usable in constant expressions.
static_assert(TableauDop853::c(11) == 1.0 && TableauDop853::a(11, 11) == 0.0, "");
static_assert(TableauDop853::e3(3) == 0.0 && TableauDopri5::e(6) == -1.0 / 40.0, "");

// ---------------------------------------------------------------------------
// (a) structure
template <class Tab>
void check_structure() {
  const int s = Tab::stages;
  EXPECT_EQ(Tab::c(0), 0.0);
  for (int i = 0; i < s; ++i) {
    Real row = 0.0L;
    for (int j = 0; j < s; ++j) {
      row += Tab::a(i, j);
      if (j >= i) {
        EXPECT_EQ(Tab::a(i, j), 0.0) << "a(" << i << "," << j << ") on or above the diagonal";
      }
    }
    EXPECT_NEAR(static_cast<double>(row), Tab::c(i), 1e-14) << "row " << i;
  }
  // fsal: the last row is b, at c = 1, so that the last stage is f(t+h, y_new).
  bool last_row_is_b = Tab::c(s - 1) == 1.0;
  for (int j = 0; j < s; ++j) last_row_is_b = last_row_is_b && Tab::a(s - 1, j) == Tab::b(j);
  EXPECT_EQ(Tab::fsal, last_row_is_b);
  for (int i = 0; i < s; ++i) {
    if (Tab::error_order == 0) {
      EXPECT_EQ(Tab::e(i), 0.0);
    }
    if (!Tab::two_estimates) {
      EXPECT_EQ(Tab::e3(i), 0.0);
    }
  }
}

TEST(Tableaus, StructureRK4) {
  check_structure<TableauRK4>();
}
TEST(Tableaus, StructureDopri5) {
  check_structure<TableauDopri5>();
}
TEST(Tableaus, StructureDop853) {
  check_structure<TableauDop853>();
}

// ---------------------------------------------------------------------------
// (b) order conditions
template <class Tab>
void check_orders() {
  const Coeffs k = load<Tab>();
  expect_exact_order("b", k.b, k, Tab::order);
  if (Tab::error_order > 0) {
    Real bhat[kMaxStages] = {};
    for (int i = 0; i < k.s; ++i) bhat[i] = k.b[i] - k.e[i];
    expect_exact_order("bhat = b - e", bhat, k, Tab::error_order);
  }
}

TEST(Tableaus, OrderConditionsRK4) {
  check_orders<TableauRK4>();
}
TEST(Tableaus, OrderConditionsDopri5) {
  check_orders<TableauDopri5>();
}
TEST(Tableaus, OrderConditionsDop853) {
  check_orders<TableauDop853>();
  // The second estimator: bhat3 = b - e3 is of order 3 exactly.
  const Coeffs k = load<TableauDop853>();
  Real bhat3[kMaxStages] = {};
  for (int i = 0; i < k.s; ++i) bhat3[i] = k.b[i] - k.e3[i];
  expect_exact_order("bhat3 = b - e3", bhat3, k, 3);
}

// DOP853's combined error: r5^2 / sqrt(r5^2 + 0.01 r3^2), 0 for 0.
TEST(Tableaus, Dop853CombinedError) {
  EXPECT_EQ(TableauDop853::combined_error(0.0, 0.0), 0.0);
  EXPECT_DOUBLE_EQ(TableauDop853::combined_error(2.0, 0.0), 2.0);
  EXPECT_DOUBLE_EQ(TableauDop853::combined_error(0.3, 4.0), 0.09 / std::sqrt(0.09 + 0.16));
  EXPECT_EQ(TableauDop853::combined_error(0.0, 5.0), 0.0);
}

// ---------------------------------------------------------------------------
// (c) convergence on y' = -y + sin t, y(0) = 1, exact
//     y(t) = (sin t - cos t)/2 + (3/2) e^{-t},
// error = max over the grid points of [0, t_end] (the error at one fixed time
// can pass through zero as h changes and fake the order),
// with a plain fixed-step loop in long double (the tableau entries themselves
// are doubles; their rounding leaves residuals ~1e-16, far below the errors
// measured here).
Real rhs(Real t, Real y) {
  return -y + std::sin(t);
}
Real exact(Real t) {
  return 0.5L * (std::sin(t) - std::cos(t)) + 1.5L * std::exp(-t);
}

template <class Tab>
Real global_error(Real t_end, int steps) {
  const int s = Tab::stages;
  const Real h = t_end / static_cast<Real>(steps);
  Real y = 1.0L;
  Real worst = 0.0L;
  for (int n = 0; n < steps; ++n) {
    const Real t = static_cast<Real>(n) * h;
    Real k[kMaxStages] = {};
    for (int i = 0; i < s; ++i) {
      Real yi = y;
      for (int j = 0; j < i; ++j) yi += h * static_cast<Real>(Tab::a(i, j)) * k[j];
      k[i] = rhs(t + static_cast<Real>(Tab::c(i)) * h, yi);
    }
    for (int i = 0; i < s; ++i) y += h * static_cast<Real>(Tab::b(i)) * k[i];
    worst = std::fmax(worst, std::fabs(y - exact(t + h)));
  }
  return worst;
}

template <class Tab>
void check_convergence(int steps0, int halvings) {
  constexpr Real t_end = 8.0L;
  Real err = global_error<Tab>(t_end, steps0);
  for (int m = 1; m <= halvings; ++m) {
    const int steps = steps0 << m;
    const Real err_half = global_error<Tab>(t_end, steps);
    const double measured = static_cast<double>(std::log2(err / err_half));
    std::printf("  order %d: N = %4d -> %4d steps, err %.3e -> %.3e, measured order %.3f\n",
                Tab::order, steps / 2, steps, static_cast<double>(err),
                static_cast<double>(err_half), measured);
    EXPECT_GT(err_half, 1e-13L) << "error near the round-off floor: measurement meaningless";
    EXPECT_NEAR(measured, Tab::order, 0.3) << "N = " << steps / 2 << " -> " << steps;
    err = err_half;
  }
}

// DOP853's local estimates on one step from (0, 1): err5 = O(h^6), err3 =
// O(h^4), and the combined error O(h^8) -- hence the controller exponent
// 1/control_order = 1/8, not 1/(error_order + 1).
TEST(Tableaus, Dop853EstimateExponents) {
  using Tab = TableauDop853;
  auto estimates = [](Real h, Real out[3]) {
    Real k[kMaxStages] = {};
    Real e5 = 0.0L, e3 = 0.0L;
    for (int i = 0; i < Tab::stages; ++i) {
      Real yi = 1.0L;
      for (int j = 0; j < i; ++j) yi += h * static_cast<Real>(Tab::a(i, j)) * k[j];
      k[i] = rhs(static_cast<Real>(Tab::c(i)) * h, yi);
      e5 += h * static_cast<Real>(Tab::e(i)) * k[i];
      e3 += h * static_cast<Real>(Tab::e3(i)) * k[i];
    }
    out[0] = std::fabs(e5);
    out[1] = std::fabs(e3);
    out[2] = static_cast<Real>(
        Tab::combined_error(static_cast<double>(out[0]), static_cast<double>(out[1])));
  };
  const double expected[3] = {6.0, 4.0, static_cast<double>(Tab::control_order)};
  const char* names[3] = {"err5", "err3", "combined"};
  Real coarse[3], fine[3];
  estimates(0.1L, coarse);
  estimates(0.05L, fine);
  for (int m = 0; m < 3; ++m) {
    const double measured = static_cast<double>(std::log2(coarse[m] / fine[m]));
    std::printf("  %-8s h = 0.1 -> 0.05: %.3e -> %.3e, exponent %.3f\n", names[m],
                static_cast<double>(coarse[m]), static_cast<double>(fine[m]), measured);
    EXPECT_NEAR(measured, expected[m], 0.3) << names[m];
  }
}

TEST(Tableaus, ConvergenceRK4) {
  check_convergence<TableauRK4>(32, 3);
}
TEST(Tableaus, ConvergenceDopri5) {
  check_convergence<TableauDopri5>(64, 2);
}
TEST(Tableaus, ConvergenceDop853) {
  check_convergence<TableauDop853>(8, 2);
}

}  // namespace
