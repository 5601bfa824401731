// Tests of models/*.hpp and models/registry.hpp (the closed forms and the
// misprints of the papers: test_model_closed_forms.cpp).
//
//  1. Terms: for every registered model (and its conflated Lagrangian where it
//     has one) the AD matrices M, F (lagrangian_terms_ad) and A, b
//     (constraint_terms) agree with central finite differences of the
//     Lagrangian / constraints (1e-6) and with hand derivations written in
//     tests/model_cases.hpp (1e-12); the nonideal vector C with its hand form;
//     the rolling coin's hand_dynamics with AD (1e-14).
//  2. Energy balance dE/dt = qd . (Q_i + Q_ni) for every model; Appell at rest.
//  3. Registry: all eleven models (nine systems of the papers, two redundant variants),
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
#include "tests/model_cases.hpp"

using namespace nholo;
using namespace nholo::models;
using namespace nholo_test;

namespace {

// ------------------------------------------------------------ 1. terms

template <class LM>
void expect_terms(const TermsOf<LM>& got, const TermsOf<LM>& want, double tol, const char* what) {
  EXPECT_TRUE(close(got.M, want.M, tol)) << what << ": M";
  EXPECT_TRUE(close(got.F, want.F, tol)) << what << ": F";
  EXPECT_TRUE(close(got.A, want.A, tol)) << what << ": A";
  EXPECT_TRUE(close(got.b, want.b, tol)) << what << ": b";
}

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

// ------------------------------------------------------- 2. energy balance

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

// ------------------------------------------------------------ 3. registry

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
