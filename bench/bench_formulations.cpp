// bench_formulations — cost of one right-hand side y' = f(t, y) of the rolling
// coin (and of Hamel's skate, which also has a conflated Lagrangian) under
// every formulation of kernels/formulations.hpp and system.hpp:
//   udwadia_kalaba        Cholesky of M + Jacobi SVD of A L^-T (pseudoinverse)
//   lagrange_multiplier   LU of the (n+m) x (n+m) saddle-point matrix
//   null_space            Jacobi SVD of A padded to n x n + Cholesky of S^T M S
//   vakonomic             nested AD of lambda . g + LU of the (n+m) system
//   conflated             (skate) Udwadia–Kalaba on the conflated Lagrangian
// The coin's M and F come from its hand-written hand_dynamics in every
// formulation; the constraint terms are AD.
// Run: build/bench_formulations [--benchmark_repetitions=5]
#include <benchmark/benchmark.h>

#include <cmath>

#include "kernels/formulations.hpp"
#include "models/rolling_coin.hpp"
#include "models/skate.hpp"

using namespace nholo;
using models::RollingCoin;
using models::Skate;

namespace {

const RollingCoin::Params kCoin{1.0, 0.5, 9.81, 0.3};
const Skate::Params kSkate{1.0, 0.4, 0.9, 9.81, 0.3};

// a consistent state (q, qd) and, for the vakonomic systems, lambda = (0.3, -0.7)
template <class Sys>
Vec<double, Sys::N> coin_state(const Sys& sys) {
  const double th = 0.7, phid = 1.3, R = kCoin.radius;
  const Vec<double, 4> q{{0.1, 0.2, 0.3, th}};
  const Vec<double, 4> qd{{R * phid * std::sin(th), R * phid * std::cos(th), phid, 2.0}};
  Vec<double, Sys::N> y;
  sys.pack(q, qd, Vec<double, 2>{{0.3, -0.7}}, y);
  return y;
}
template <class Sys>
Vec<double, Sys::N> skate_state(const Sys& sys) {
  const double th = 0.3, v = 1.2;
  const Vec<double, 3> q{{0.1, 0.2, th}}, qd{{v * std::cos(th), v * std::sin(th), 1.1}};
  Vec<double, Sys::N> y;
  sys.pack(q, qd, Vec<double, 1>{{0.4}}, y);
  return y;
}

template <class Sys>
void BM_Coin(benchmark::State& st) {
  const Sys sys{kCoin, EvalOptions()};
  Vec<double, Sys::N> y = coin_state(sys), dy;
  for (auto _ : st) {
    benchmark::DoNotOptimize(y);
    benchmark::DoNotOptimize(sys(0.0, y, dy));
    benchmark::DoNotOptimize(dy);
  }
}
template <class Sys>
void BM_Skate(benchmark::State& st) {
  const Sys sys{kSkate, EvalOptions()};
  Vec<double, Sys::N> y = skate_state(sys), dy;
  for (auto _ : st) {
    benchmark::DoNotOptimize(y);
    benchmark::DoNotOptimize(sys(0.0, y, dy));
    benchmark::DoNotOptimize(dy);
  }
}

BENCHMARK(BM_Coin<UdwadiaKalabaSystem<RollingCoin>>)->Name("coin_rhs/udwadia_kalaba");
BENCHMARK(BM_Coin<LagrangeMultiplierSystem<RollingCoin>>)->Name("coin_rhs/lagrange_multiplier");
BENCHMARK(BM_Coin<NullSpaceSystem<RollingCoin>>)->Name("coin_rhs/null_space");
BENCHMARK(BM_Coin<VakonomicSystem<RollingCoin>>)->Name("coin_rhs/vakonomic");
BENCHMARK(BM_Skate<UdwadiaKalabaSystem<Skate>>)->Name("skate_rhs/udwadia_kalaba");
BENCHMARK(BM_Skate<LagrangeMultiplierSystem<Skate>>)->Name("skate_rhs/lagrange_multiplier");
BENCHMARK(BM_Skate<NullSpaceSystem<Skate>>)->Name("skate_rhs/null_space");
BENCHMARK(BM_Skate<VakonomicSystem<Skate>>)->Name("skate_rhs/vakonomic");
BENCHMARK(BM_Skate<ConflatedSystem<Skate>>)->Name("skate_rhs/conflated");

}  // namespace

BENCHMARK_MAIN();
