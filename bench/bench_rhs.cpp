// bench_rhs — cost of one rolling-coin right-hand side, three ways:
//   generic_ad     M, F, A, b all by automatic differentiation + fundamental equation
//   hand_MF        hand-written M, F (the model's hand_dynamics), AD constraints
//   closed_form    the closed-form accelerations (docs/physics.md, item 10), no linear algebra
// Run: build/release/bench_rhs [--benchmark_repetitions=5]
#include <benchmark/benchmark.h>

#include <cmath>

#include "kernels/formulations/udwadia_kalaba.hpp"
#include "models/rolling_coin.hpp"

using namespace nholo;
using models::RollingCoin;

namespace {

// The coin with its hand-written M, F hidden: every derivative by AD.
struct CoinAD : RollingCoin {
  static void hand_dynamics() = delete;
};

const RollingCoin::Params kParams{1.0, 0.5, 9.81, 0.3};

Vec<double, 8> state() {
  Vec<double, 8> y;
  const double th = 0.7, phid = 1.3, R = kParams.radius;
  y[0] = 0.1; y[1] = 0.2; y[2] = 0.3; y[3] = th;
  y[4] = R * phid * std::sin(th); y[5] = R * phid * std::cos(th); y[6] = phid; y[7] = 2.0;
  return y;
}

template <class Model>
void BM_UdwadiaKalaba(benchmark::State& st) {
  UdwadiaKalabaSystem<Model> sys{kParams, EvalOptions()};
  Vec<double, 8> y = state(), dy;
  for (auto _ : st) {
    benchmark::DoNotOptimize(y);
    sys(0.0, y, dy);
    benchmark::DoNotOptimize(dy);
  }
}

// phi'' = 2 g sin(alpha) cos(theta) / (3R); x'', y'' from the rolling constraints
void BM_ClosedForm(benchmark::State& st) {
  Vec<double, 8> y = state(), dy;
  const double R = kParams.radius, gs = kParams.g * std::sin(kParams.slope);
  for (auto _ : st) {
    benchmark::DoNotOptimize(y);
    const double s = std::sin(y[3]), c = std::cos(y[3]);
    const double phidd = 2.0 * gs * c / (3.0 * R);
    for (int i = 0; i < 4; ++i) dy[i] = y[4 + i];
    dy[4] = R * phidd * s + R * y[6] * y[7] * c;
    dy[5] = R * phidd * c - R * y[6] * y[7] * s;
    dy[6] = phidd;
    dy[7] = 0.0;
    benchmark::DoNotOptimize(dy);
  }
}

BENCHMARK(BM_UdwadiaKalaba<CoinAD>)->Name("coin_rhs/generic_ad");
BENCHMARK(BM_UdwadiaKalaba<RollingCoin>)->Name("coin_rhs/hand_MF");
BENCHMARK(BM_ClosedForm)->Name("coin_rhs/closed_form");

}  // namespace

BENCHMARK_MAIN();
