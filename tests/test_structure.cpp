// Declared structure of a model's Lagrangian (kernels/model.hpp,
// separable_lagrangian) against the general AD of kernels/dynamics.hpp: the
// lean jet that the declaration selects must give the M and F of the full
// one, at random states (including the time argument).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "host/backends/window_tail.hpp"
#include "kernels/dynamics.hpp"
#include "models/appell.hpp"
#include "models/rolling_coin.hpp"
#include "models/skate.hpp"
#include "tests/model_defaults.hpp"

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

// ---------------------------------------------------------------------------
// Declared constant mass (and force): the per-trajectory cache of the
// Udwadia–Kalaba system (kernels/formulations/udwadia_kalaba.hpp, ConstantMassCache) against the
// general path, which factors M from the full jet at every evaluation.
#include "host/backends/formulation_system.hpp"
#include "kernels/ensemble.hpp"
#include "kernels/formulations.hpp"
#include "models/registry.hpp"

namespace {

using models::Appell;
using models::RollingCoin;
using models::Skate;

// the coin with its hand-written M, F hidden: the cache from AD
struct CoinAD : RollingCoin {
  static void hand_dynamics() = delete;
};

static_assert(mass_is_constant<RollingCoin>::value && force_is_constant<RollingCoin>::value, "");
static_assert(mass_is_constant<Appell>::value && force_is_constant<Appell>::value, "");
static_assert(mass_is_constant<models::UdwadiaExample3>::value &&
                  !force_is_constant<models::UdwadiaExample3>::value,
              "example 3: M = I, F = -x");
static_assert(!mass_is_constant<Skate>::value && !mass_is_constant<models::Sleigh>::value, "");
static_assert(!mass_is_constant<Conflated<Appell>>::value, "a declaration belongs to the true L");
static_assert(has_prepare<UdwadiaKalabaSystem<RollingCoin>>::value, "");
static_assert(has_prepare<UdwadiaKalabaSystem<CoinAD>>::value, "");
static_assert(!has_prepare<UdwadiaKalabaSystem<Skate>>::value, "no declaration, no cache");
static_assert(!has_prepare<ConflatedSystem<Appell>>::value, "");
static_assert(!has_prepare<LagrangeMultiplierSystem<RollingCoin>>::value,
              "only the Udwadia–Kalaba formulation has the cache");
// systems without a cache pay nothing: prepare_system hands back the system itself
static_assert(std::is_same<decltype(prepare_system(std::declval<const UdwadiaKalabaSystem<Skate>&>(),
                                                   0.0, std::declval<const Vec<double, 6>&>())),
                           const UdwadiaKalabaSystem<Skate>&>::value,
              "");

using nholo_test::default_params;

// Largest difference of the general jet's M (and of its F without the
// nonpotential force) between random states and a reference state, relative
// to the entries: zero (to rounding) exactly when M (F) does not depend on
// q, qd, t.
template <class Model>
void declaration_deviation(const typename Model::Params& p, int seed, double& dM, double& dF) {
  constexpr int n = Model::n;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  Vec<double, n> q0, qd0;
  for (int i = 0; i < n; ++i) {
    q0[i] = u(rng);
    qd0[i] = u(rng);
  }
  Mat<double, n, n> M0, M;
  Vec<double, n> F0, F;
  lagrangian_terms_ad<Model, double, false, false>(p, q0, qd0, 0.3, M0, F0);
  dM = dF = 0;
  for (int trial = 0; trial < 100; ++trial) {
    Vec<double, n> q, qd;
    for (int i = 0; i < n; ++i) {
      q[i] = u(rng);
      qd[i] = u(rng);
    }
    lagrangian_terms_ad<Model, double, false, false>(p, q, qd, u(rng), M, F);
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j)
        dM = std::max(dM, std::abs(M(i, j) - M0(i, j)) / (1 + std::abs(M0(i, j))));
      dF = std::max(dF, std::abs(F[i] - F0[i]) / (1 + std::abs(F0[i])));
    }
  }
}

TEST(DeclaredStructure, ConstantMassAndForceDeclarationsHold) {
  int checked = 0;
  models::for_each_model([&](auto tag) {
    using Model = typename decltype(tag)::type;
    if constexpr (mass_is_constant<Model>::value) {
      double dM, dF;
      declaration_deviation<Model>(default_params<Model>(), 7 + checked, dM, dF);
      EXPECT_LT(dM, 1e-14) << Model::name << " declares constant_mass";
      if (force_is_constant<Model>::value) {
        EXPECT_LT(dF, 1e-14) << Model::name;
      }
      ++checked;
    }
  });
  EXPECT_GE(checked, 8);  // coin, redundant coin, Appell, incline, ... (model.hpp)
}

// The check above can fail: the skate's M depends on theta, its F on q and qd.
TEST(DeclaredStructure, ConstantMassCheckDetectsTheSkate) {
  double dM, dF;
  declaration_deviation<Skate>(default_params<Skate>(), 3, dM, dF);
  EXPECT_GT(dM, 1e-2);
  EXPECT_GT(dF, 1e-2);
}

// F alone (lagrangian_force: first-order duals for a separable L, the full
// jet otherwise) against F of the general jet.
template <class Model>
void check_lagrangian_force(const typename Model::Params& p, int seed) {
  constexpr int n = Model::n;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  for (int trial = 0; trial < 50; ++trial) {
    Vec<double, n> q, qd;
    for (int i = 0; i < n; ++i) {
      q[i] = u(rng);
      qd[i] = u(rng);
    }
    const double t = u(rng);
    Mat<double, n, n> M;
    Vec<double, n> F;
    lagrangian_terms_ad<Model, double, false>(p, q, qd, t, M, F);
    const Vec<double, n> Fl = lagrangian_force<Model>(p, q, qd, t);
    for (int i = 0; i < n; ++i) EXPECT_NEAR(Fl[i], F[i], 1e-13 * (1 + std::abs(F[i])));
  }
}

TEST(DeclaredStructure, LeanForceEqualsGeneralJet) {
  check_lagrangian_force<CoinAD>({1.3, 0.7, 9.81, 0.4}, 11);
  check_lagrangian_force<Appell>({0.5, 0.2, 0.3, -0.4, -9.81, 1.0, 2.0}, 12);
  check_lagrangian_force<models::UdwadiaExample3>(default_params<models::UdwadiaExample3>(), 13);
  check_lagrangian_force<Skate>(default_params<Skate>(), 14);
}

// The prepared system (cache taken at one state) against the unprepared one
// (M factored at every evaluation) at random states: right-hand side,
// status and every observable.
template <class Model>
int check_prepared_equals_general(const typename Model::Params& p, int seed) {
  using Sys = UdwadiaKalabaSystem<Model>;
  constexpr int n = Model::n, N = Sys::N;
  Sys sys{p, EvalOptions()};
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  Vec<double, N> y0;
  for (int c = 0; c < N; ++c) y0[c] = u(rng);
  const auto ps = sys.prepare(0.1, y0);
  EXPECT_TRUE(ps.cache.ok) << Model::name;
  int compared = 0;
  for (int trial = 0; trial < 100; ++trial) {
    Vec<double, N> y, d1, d2;
    for (int c = 0; c < N; ++c) y[c] = u(rng);
    const double t = u(rng);
    const Status s1 = ps(t, y, d1), s2 = sys(t, y, d2);
    EXPECT_EQ(s1, s2) << Model::name;
    if (s2 != Status::ok) continue;
    ++compared;
    for (int c = 0; c < N; ++c) EXPECT_NEAR(d1[c], d2[c], 1e-12 * (1 + std::abs(d2[c]))) << Model::name;
    Observation<double, n, Sys::m> o1{}, o2{};
    ps.observe(t, y, o1);
    sys.observe(t, y, o2);
    EXPECT_EQ(o1.status, o2.status);
    for (int i = 0; i < n; ++i) {
      EXPECT_NEAR(o1.qdd[i], o2.qdd[i], 1e-12 * (1 + std::abs(o2.qdd[i])));
      EXPECT_NEAR(o1.force_ideal[i], o2.force_ideal[i], 1e-12 * (1 + std::abs(o2.force_ideal[i])));
      EXPECT_NEAR(o1.force_nonideal[i], o2.force_nonideal[i],
                  1e-12 * (1 + std::abs(o2.force_nonideal[i])));
    }
    for (int l = 0; l < Sys::m; ++l)
      EXPECT_NEAR(o1.multiplier[l], o2.multiplier[l], 1e-12 * (1 + std::abs(o2.multiplier[l])));
    EXPECT_NEAR(o1.constraint_residual, o2.constraint_residual, 1e-12);
  }
  return compared;
}

TEST(DeclaredStructure, PreparedSystemEqualsGeneralPath) {
  EXPECT_GT(check_prepared_equals_general<CoinAD>({1.3, 0.7, 9.81, 0.4}, 21), 50);
  EXPECT_GT(check_prepared_equals_general<RollingCoin>({1.3, 0.7, 9.81, 0.4}, 22), 50);
  // nonideal (drag) and a time-dependent constraint
  EXPECT_GT(check_prepared_equals_general<Appell>({0.5, 0.2, 0.3, -0.4, -9.81, 1.0, 2.0}, 23), 50);
  int checked = 0;
  models::for_each_model([&](auto tag) {
    using Model = typename decltype(tag)::type;
    if constexpr (mass_is_constant<Model>::value) {
      EXPECT_GT(check_prepared_equals_general<Model>(default_params<Model>(), 30 + checked), 0)
          << Model::name;
      ++checked;
    }
  });
}

// A mass matrix that is not positive definite leaves the cache unusable and
// the prepared system takes the general path (here: the singular-mass form).
struct SingularMassAppell : Appell {
  template <class S>
  NHOLO_HDI static S lagrangian(const Params& p, const Vec<S, n>& q, const Vec<S, n>& qd,
                                const S& t) {
    return Appell::conflated_lagrangian(p, q, qd, t);  // M = diag(2, 2, 0)
  }
  static void conflated_lagrangian() = delete;
};

TEST(DeclaredStructure, SingularConstantMassFallsBackToGeneralPath) {
  using Sys = UdwadiaKalabaSystem<SingularMassAppell>;
  Sys sys{{0.0, 0.0, 0.0, 0.0, -9.81, 1.0, 1.0}, EvalOptions()};
  const Vec<double, 6> y{{0.0, 0.0, 10.0, 0.6, 0.8, -1.0}};
  const auto ps = sys.prepare(0.0, y);
  EXPECT_FALSE(ps.cache.ok);
  Vec<double, 6> d1, d2;
  EXPECT_EQ(ps(0.0, y, d1), sys(0.0, y, d2));
  for (int c = 0; c < 6; ++c) EXPECT_EQ(d1[c], d2[c]);
  EXPECT_TRUE(ps.acceleration(0.0, Vec<double, 3>{{0, 0, 10}}, Vec<double, 3>{{0.6, 0.8, -1}})
                  .singular_mass);
}

// The diagonal view of a diagonal factor gives the dense solves' bits.
TEST(DeclaredStructure, DiagonalFactorEqualsDenseSolves) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(0.1, 3.0), v(-3.0, 3.0);
  for (int trial = 0; trial < 50; ++trial) {
    Mat<double, 4, 4> M = Mat<double, 4, 4>::zero();
    for (int i = 0; i < 4; ++i) M(i, i) = u(rng);
    CholeskyFactor<double, 4> f;
    ASSERT_TRUE(cholesky_factor(M, f));
    ASSERT_TRUE(is_diagonal(f));
    const DiagonalFactor<double, 4> d{f};
    Vec<double, 4> b;
    for (int i = 0; i < 4; ++i) b[i] = v(rng);
    const auto x1 = f.solve_lower(b), x2 = d.solve_lower(b);
    const auto y1 = f.solve_upper(b), y2 = d.solve_upper(b);
    const auto z1 = f.solve(b), z2 = d.solve(b);
    const auto w1 = f.mul_lower(b), w2 = d.mul_lower(b);
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(x1[i], x2[i]);
      EXPECT_EQ(y1[i], y2[i]);
      EXPECT_EQ(z1[i], z2[i]);
      EXPECT_EQ(w1[i], w2[i]);
    }
  }
  Mat<double, 2, 2> K{{2.0, 0.5, 0.5, 1.0}};
  CholeskyFactor<double, 2> k;
  ASSERT_TRUE(cholesky_factor(K, k));
  EXPECT_FALSE(is_diagonal(k));
}

// The ensemble functor prepares each trajectory with its own parameters:
// two coins of different mass, radius and slope in one slice, against each
// integrated alone by the unprepared system.
TEST(DeclaredStructure, EnsemblePreparesPerTrajectoryParameters) {
  using Sys = UdwadiaKalabaSystem<CoinAD>;
  constexpr int N = Sys::N, count = 2;
  const double pv[2][4] = {{1.0, 0.5, 9.81, 0.3}, {2.5, 1.2, 9.81, -0.7}};
  double params[4 * count];
  for (int j = 0; j < 4; ++j)
    for (int i = 0; i < count; ++i) params[j * count + i] = pv[i][j];
  double y[N * count], t[count], h[count], err[count], ft[count];
  int64_t steps[count], rej[count];
  int32_t status[count];
  IntegratorOptions opt;
  Vec<double, N> y0[count];
  for (int i = 0; i < count; ++i) {
    const double th = 0.4 + i, phid = 1.5 - 2 * i, R = pv[i][1];
    y0[i] = Vec<double, N>{{0, 0, 0, th, R * phid * std::sin(th), R * phid * std::cos(th), phid, 1.7}};
    const auto ts = start_trajectory<double, N>(0.0, y0[i], opt);
    for (int c = 0; c < N; ++c) y[c * count + i] = ts.y[c];
    t[i] = ts.t;
    h[i] = ts.h;
    err[i] = ts.err_prev;
    ft[i] = ts.fail_time;
    steps[i] = ts.steps;
    rej[i] = ts.rejected;
    status[i] = static_cast<int32_t>(ts.status);
  }
  const double saves[2] = {1.0, 2.0};
  EnsembleWindow<Sys> w;
  w.sys = Sys{CoinAD::make_params(pv[0]), EvalOptions()};
  w.opt = opt;
  w.arr.y = y;
  w.arr.t = t;
  w.arr.h = h;
  w.arr.err_prev = err;
  w.arr.fail_time = ft;
  w.arr.steps = steps;
  w.arr.rejected = rej;
  w.arr.status = status;
  w.arr.params = params;
  w.count = count;
  w.save_times = saves;
  w.n_saves = 2;
  for (int i = 0; i < count; ++i) w(i);
  for (int i = 0; i < count; ++i) {
    const Sys alone{CoinAD::make_params(pv[i]), EvalOptions()};
    auto ts = start_trajectory<double, N>(0.0, y0[i], opt);
    advance_to(alone, ts, 1.0, opt);
    advance_to(alone, ts, 2.0, opt);
    EXPECT_EQ(ts.steps, steps[i]);
    EXPECT_EQ(ts.rejected, rej[i]);
    for (int c = 0; c < N; ++c) EXPECT_NEAR(ts.y[c], y[c * count + i], 1e-13 * (1 + std::abs(ts.y[c])));
  }
  // and the two trajectories did differ (different parameters)
  EXPECT_GT(std::abs(y[1 * count + 0] - y[1 * count + 1]), 1e-3);
}

// ---------------------------------------------------------------------------
// Lean launches (kernels/ensemble.hpp, EnsembleWindow::run_part with Lean: the
// CUDA backend's lean kernels, which leave out the general path of a system
// with a checked cache). Here on the CPU, the same code: a lean launch must
// give a usable trajectory the general code's bits, and leave a trajectory
// whose cache is unusable untouched, for the general code to integrate as if
// the lean launch had not been.

// Appell's particle with a z mass of its own, the parameter g_amplitude
// (unused by the constraint, alpha = 0): M = diag(1, 1, g_amplitude), constant
// as Appell declares; at g_amplitude = 0 the cache is unusable and the general
// path takes the singular-mass form (rank [M | A^T] = 3 while zd != 0).
struct ZMassAppell : Appell {
  template <class S>
  NHOLO_HDI static S lagrangian(const Params& p, const Vec<S, n>& q, const Vec<S, n>& qd,
                                const S& /*t*/) {
    return 0.5 * (qd[0] * qd[0] + qd[1] * qd[1] + p.g_amplitude * qd[2] * qd[2]) +
           p.force_x * q[0] + p.force_y * q[1] + p.force_z * q[2];
  }
  static void conflated_lagrangian() = delete;
};

static_assert(has_checked_prepare<UdwadiaKalabaSystem<RollingCoin>>::value, "");
static_assert(has_checked_prepare<UdwadiaKalabaSystem<ZMassAppell>>::value, "");
static_assert(!has_checked_prepare<UdwadiaKalabaSystem<Skate>>::value, "no cache, no lean code");
static_assert(!has_checked_prepare<LagrangeMultiplierSystem<RollingCoin>>::value, "");

// A slice's arrays on the host, as the CUDA backend keeps them (SoA, outputs
// [(k n + c) count + i]), every entry of the outputs set to a sentinel.
template <class Sys>
struct HostSlice {
  static constexpr int n = Sys::n, N = Sys::N, n_params = Sys::model_type::n_params;
  int64_t count;
  std::vector<double> y, t, h, err, ft, params, q, qdot, energy;
  std::vector<int64_t> steps, rej, interval_start;
  std::vector<int32_t> status, save_k;

  HostSlice(const std::vector<Vec<double, N>>& y0, const std::vector<double>& p, int ns,
            const IntegratorOptions& opt)
      : count(static_cast<int64_t>(y0.size())), params(p) {
    y.resize(N * count);
    for (int64_t i = 0; i < count; ++i) {
      const auto ts = start_trajectory<double, N>(0.0, y0[i], opt);
      for (int c = 0; c < N; ++c) y[c * count + i] = ts.y[c];
      t.push_back(ts.t);
      h.push_back(ts.h);
      err.push_back(ts.err_prev);
      ft.push_back(ts.fail_time);
      steps.push_back(ts.steps);
      rej.push_back(ts.rejected);
      status.push_back(static_cast<int32_t>(ts.status));
    }
    q.assign(static_cast<std::size_t>(ns) * n * count, -7.0);
    qdot = q;
    energy.assign(static_cast<std::size_t>(ns) * count, -7.0);
    save_k.assign(count, 0);
    interval_start.assign(count, -1);
  }
  // in parts of at most a budget of steps (save_k, interval_start) or whole
  EnsembleWindow<Sys> window(const Sys& sys, const IntegratorOptions& opt, const double* saves,
                             int ns, bool in_parts) {
    EnsembleArrays<double> arr;
    arr.y = y.data();
    arr.t = t.data();
    arr.h = h.data();
    arr.err_prev = err.data();
    arr.fail_time = ft.data();
    arr.steps = steps.data();
    arr.rejected = rej.data();
    arr.status = status.data();
    arr.params = params.data();
    arr.q = q.data();
    arr.qdot = qdot.data();
    arr.energy = energy.data();
    if (in_parts) {
      arr.save_k = save_k.data();
      arr.interval_start = interval_start.data();
    }
    return ensemble_window(sys, opt, arr, count, saves, ns, false);
  }
  // trajectory i's entries of every array, as bytes
  std::vector<unsigned char> bytes_of(int64_t i) const {
    std::vector<unsigned char> b;
    auto add = [&](const auto& v, int per) {
      for (int c = 0; c < per; ++c) {
        const auto* p = reinterpret_cast<const unsigned char*>(&v[c * count + i]);
        b.insert(b.end(), p, p + sizeof v[0]);
      }
    };
    add(y, N);
    for (const auto* v : {&t, &h, &err, &ft}) add(*v, 1);
    add(steps, 1);
    add(rej, 1);
    add(status, 1);
    add(save_k, 1);
    add(interval_start, 1);
    add(q, static_cast<int>(q.size() / count));
    add(qdot, static_cast<int>(qdot.size() / count));
    add(energy, static_cast<int>(energy.size() / count));
    return b;
  }
};

// launches of at most budget steps (0: whole) until every trajectory of
// `indices` finished the window; Lean: the lean code, the trajectories it
// leaves returned
template <bool Lean, class Sys>
std::vector<int64_t> launch_until_done(const EnsembleWindow<Sys>& w, std::vector<int64_t> indices,
                                       int64_t budget) {
  std::vector<int64_t> general;
  int launches = 0;
  while (!indices.empty()) {
    std::vector<int64_t> unfinished;
    for (const int64_t i : indices) {
      const LaunchOutcome r = w.template run_part<Method::dopri5, false, Lean>(i, budget);
      if (r == LaunchOutcome::unfinished) unfinished.push_back(i);
      if (r == LaunchOutcome::general) general.push_back(i);
      EXPECT_TRUE(budget > 0 || r != LaunchOutcome::unfinished);
    }
    indices = unfinished;
    EXPECT_LT(++launches, 100000) << "the launches do not end";
    if (launches >= 100000) break;
  }
  return general;
}

// A slice of Appell particles, every other one with a singular M (z mass 0),
// all on the constraint xd^2 + yd^2 = zd^2, integrated by the general code
// alone and by lean launches first: the same bits, whole windows and
// windows in launches of 7 steps.
TEST(LeanLaunch, GivesTheGeneralCodesBitsAndLeavesUnusableCachesUntouched) {
  using Sys = UdwadiaKalabaSystem<ZMassAppell>;
  constexpr int N = Sys::N, np = Sys::model_type::n_params;
  constexpr int64_t count = 8;
  std::vector<Vec<double, N>> y0;
  std::vector<double> params(np * count);
  for (int64_t i = 0; i < count; ++i) {
    // speeds of 3-4: far from rest (where Appell's particle needs tiny steps) until t = 0.3
    const double xd = 1.5 + 0.1 * i, yd = 3.0 - 0.05 * i, zd = std::sqrt(xd * xd + yd * yd);
    y0.push_back(Vec<double, N>{{0.0, 0.0, 10.0, xd, yd, zd}});
    // alpha, drag, force_x, force_y, force_z, g_amplitude (the z mass), g_frequency
    const double v[np] = {0.0, 0.0, 0.2, -0.1, -9.81, i % 2 == 0 ? 1.0 + 0.1 * i : 0.0, 1.0};
    for (int j = 0; j < np; ++j) params[j * count + i] = v[j];
  }
  const Sys sys{ZMassAppell::make_params(&params[0]), EvalOptions()};
  IntegratorOptions opt;
  opt.rtol = 1e-10;
  const double saves[3] = {0.1, 0.2, 0.3};
  std::vector<int64_t> all(count);
  for (int64_t i = 0; i < count; ++i) all[i] = i;
  for (const int64_t budget : {int64_t(0), int64_t(7)}) {
    SCOPED_TRACE(budget);
    HostSlice<Sys> general(y0, params, 3, opt), lean(y0, params, 3, opt);
    const auto wg = general.window(sys, opt, saves, 3, budget > 0);
    const auto wl = lean.window(sys, opt, saves, 3, budget > 0);
    EXPECT_TRUE(launch_until_done<false>(wg, all, budget).empty());
    std::vector<std::vector<unsigned char>> before;
    for (int64_t i = 0; i < count; ++i) before.push_back(lean.bytes_of(i));
    const std::vector<int64_t> left = launch_until_done<true>(wl, all, budget);
    EXPECT_EQ(left, (std::vector<int64_t>{1, 3, 5, 7})) << "the singular ones, and only those";
    for (const int64_t i : left) EXPECT_EQ(lean.bytes_of(i), before[i]) << "trajectory " << i;
    EXPECT_TRUE(launch_until_done<false>(wl, left, budget).empty());
    for (int64_t i = 0; i < count; ++i) {
      EXPECT_EQ(lean.bytes_of(i), general.bytes_of(i)) << "trajectory " << i;
      EXPECT_EQ(general.status[i], static_cast<int32_t>(Status::ok)) << "trajectory " << i;
      EXPECT_GT(general.steps[i], 10) << "trajectory " << i;
    }
    // the two kinds of trajectory moved differently (a singular M is another motion)
    EXPECT_GT(std::abs(general.y[2 * count + 1] - general.y[2 * count + 0]), 1e-6);
  }
}

// The checked cache's code for an unusable cache (which a lean launch never
// reaches) gives NaN and status singular, never the wrong motion.
TEST(LeanLaunch, CheckedCacheRefusesWhatItCannotIntegrate) {
  using Sys = UdwadiaKalabaSystem<ZMassAppell>;
  ZMassAppell::Params p{0.0, 0.0, 0.2, -0.1, -9.81, 0.0, 1.0};
  const Sys sys{p, EvalOptions()};
  const Vec<double, 6> y{{0.0, 0.0, 10.0, 0.6, 0.8, 1.0}};
  const auto ps = sys.prepare_checked(0.0, y);
  EXPECT_FALSE(ps.cache.usable());
  Vec<double, 6> d;
  EXPECT_EQ(ps(0.0, y, d), Status::singular);
  EXPECT_TRUE(std::isnan(d[3]) && std::isnan(d[4]) && std::isnan(d[5]));
  // usable: the checked form's right-hand side is the cache's own
  p.g_amplitude = 2.0;
  const Sys usable{p, EvalOptions()};
  const auto pc = usable.prepare_checked(0.0, y);
  const auto pu = usable.prepare(0.0, y);
  ASSERT_TRUE(pc.cache.usable());
  Vec<double, 6> d1, d2;
  EXPECT_EQ(pc(0.0, y, d1), Status::ok);
  EXPECT_EQ(pu(0.0, y, d2), Status::ok);
  for (int c = 0; c < 6; ++c) EXPECT_EQ(d1[c], d2[c]) << c;
}

// ---------------------------------------------------------------------------
// The CPU tail (host/backends/window_tail.hpp): the CUDA backend's last few
// trajectories of a window gathered into a compact window, finished on host
// threads by the formulation's CPU window, and scattered back. Here the
// "device" arrays are host memory and the moves run as loops; the same code
// and the same integration must give every byte that launches alone give.

// The slice of the lean-launch test, every z mass usable, speeds from 3.5 to
// 9 (far from rest until t = 0.3; the faster particles take more steps)
template <class Sys>
void tail_slice(std::vector<Vec<double, Sys::N>>& y0, std::vector<double>& params, int64_t count) {
  constexpr int np = Sys::model_type::n_params;
  params.assign(np * count, 0.0);
  for (int64_t i = 0; i < count; ++i) {
    const double s = 3.5 + 0.5 * i, xd = 0.6 * s, yd = 0.8 * s;
    y0.push_back(Vec<double, Sys::N>{{0.0, 0.0, 10.0, xd, yd, std::sqrt(xd * xd + yd * yd)}});
    const double v[np] = {0.0, 0.05 * (i % 3), 0.2, -0.1, -9.81, 1.0 + 0.1 * i, 1.0};
    for (int j = 0; j < np; ++j) params[j * count + i] = v[j];
  }
}

// the parts of plan between `slice`'s arrays and compact, as the CUDA
// backend's gather and scatter kernels move them
void move_parts(const TailPlan& plan, std::vector<double>& compact, const int64_t* idx,
                bool scatter) {
  for (const TailPart& p : plan.parts()) {
    if (scatter && p.read_only) continue;
    const TailMove mv = plan.move(p, reinterpret_cast<char*>(compact.data()), idx, scatter);
    for (int64_t e = 0; e < p.rows * plan.n_tail(); ++e) mv(e);
  }
}

TEST(WindowTail, FinishesTheLastTrajectoriesOnHostThreadsWithTheLaunchesBits) {
  using Sys = UdwadiaKalabaSystem<ZMassAppell>;
  constexpr int N = Sys::N, np = Sys::model_type::n_params;
  constexpr int64_t count = 12, budget = 9;
  std::vector<Vec<double, N>> y0;
  std::vector<double> params;
  tail_slice<Sys>(y0, params, count);
  const Sys sys{ZMassAppell::make_params(&params[0]), EvalOptions()};
  IntegratorOptions opt;
  opt.rtol = 1e-10;
  opt.method = Method::dopri5;  // the CPU window's run-time choice, the launches' method
  const int ns = 3;
  const double saves[ns] = {0.1, 0.2, 0.3};
  std::vector<int64_t> all(count);
  for (int64_t i = 0; i < count; ++i) all[i] = i;
  // the reference: launches of at most `budget` steps until all finished
  HostSlice<Sys> ref(y0, params, ns, opt);
  launch_until_done<false>(ref.window(sys, opt, saves, ns, true), all, budget);
  // launches until at most 5 are left, then the CPU tail
  HostSlice<Sys> dev(y0, params, ns, opt);
  const EnsembleWindow<Sys> w = dev.window(sys, opt, saves, ns, true);
  std::vector<int64_t> active = all;
  while (active.size() > 5) {
    std::vector<int64_t> unfinished;
    for (const int64_t i : active)
      if (!w.template run<Method::dopri5, false>(i, budget)) unfinished.push_back(i);
    active = unfinished;
  }
  ASSERT_FALSE(active.empty()) << "the slow particles must still be running";
  int partly = 0;  // tail trajectories with saves of the window done: the gather keeps them
  for (const int64_t i : active) partly += dev.save_k[i] > 0;
  EXPECT_GT(partly, 0);
  const int64_t n_tail = static_cast<int64_t>(active.size());
  const TailPlan plan(w.arr, count, N, np, ns, Sys::n, Sys::m, n_tail);
  std::vector<double> compact(plan.bytes() / sizeof(double), -1.0);
  move_parts(plan, compact, active.data(), false);
  const EnsembleArrays<double> h = plan.host_arrays(w.arr, reinterpret_cast<char*>(compact.data()));
  EXPECT_EQ(h.params[0], params[active[0]]) << "the tail's parameters, gathered";
  const auto window = formulation_system(sys, opt).cpu_window(h, n_tail, saves, ns);
  EXPECT_TRUE(finish_on_host(*window, n_tail, budget, 3, nullptr));
  move_parts(plan, compact, active.data(), true);
  for (int64_t i = 0; i < count; ++i) {
    EXPECT_EQ(dev.bytes_of(i), ref.bytes_of(i)) << "trajectory " << i;
    EXPECT_EQ(dev.save_k[i], ns) << "trajectory " << i;
  }
  EXPECT_EQ(dev.params, params) << "the parameters are not scattered back";
}

// A CPU window that sets *stop after its second call (an interrupt arriving
// while the tail runs).
struct InterruptedWindow final : CpuWindow {
  InterruptedWindow(const CpuWindow& w, std::atomic<bool>& stop) : w_(w), stop_(stop) {}
  bool run(int64_t i, int64_t launch_steps) const override {
    const bool r = w_.run(i, launch_steps);
    if (++calls >= 2) stop_ = true;
    return r;
  }
  const CpuWindow& w_;
  std::atomic<bool>& stop_;
  mutable std::atomic<int> calls{0};
};

// An interrupt stops the host's threads between calls of at most `budget`
// steps: the tail reports the window incomplete.
TEST(WindowTail, AnInterruptStopsTheHostThreads) {
  using Sys = UdwadiaKalabaSystem<ZMassAppell>;
  constexpr int N = Sys::N;
  constexpr int64_t count = 4;
  std::vector<Vec<double, N>> y0;
  std::vector<double> params;
  tail_slice<Sys>(y0, params, count);
  const Sys sys{ZMassAppell::make_params(&params[0]), EvalOptions()};
  IntegratorOptions opt;
  const double saves[1] = {5.0};
  HostSlice<Sys> s(y0, params, 1, opt);
  const EnsembleWindow<Sys> w = s.window(sys, opt, saves, 1, true);
  const auto window = formulation_system(sys, opt).cpu_window(w.arr, count, saves, 1);
  std::atomic<bool> stop{false};
  const InterruptedWindow interrupted(*window, stop);
  EXPECT_FALSE(finish_on_host(interrupted, count, 5, 2, &stop));
  // the second call sets stop; each of the 2 threads ends the call it is in
  EXPECT_LE(interrupted.calls.load(), 3);
  int64_t steps = 0;
  for (int64_t i = 0; i < count; ++i) {
    steps += s.steps[i] + s.rej[i];
    EXPECT_EQ(s.save_k[i], 0) << "trajectory " << i;
  }
  EXPECT_LE(steps, 3 * 5) << "at most 5 steps per call";
  EXPECT_GE(steps, 2 * 5);
}
}  // namespace
