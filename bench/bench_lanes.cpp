// bench_lanes — what the CPU's SIMD lanes (kernels/lanes.hpp) buy, one core,
// side by side in one run: built twice, bench_lanes_avx512 (W = 8) and
// bench_lanes_avx2 (W = 4); each refuses to run on a CPU without its ISA.
//   Math/<fn>/libm        glibc's scalar function (the scalar kernels' math)
//   Math/<fn>/sleef       SLEEF's deterministic function on Lanes<W> (nholo's choice)
//   Math/<fn>/libmvec     glibc's vector function (_ZGV*, 4 ulp, not bitwise across widths)
//   Kepler/scalar         256 Kepler orbits, DOPRI5 to t = 20, one at a time (integrate.hpp)
//   Kepler/lanes          the same ensemble W orbits at a time (integrate_lanes.hpp)
// Items per second: function values, or trajectories.
// Run: cmake --build build --target bench_lanes_avx512 bench_lanes_avx2
//      build/bench_lanes_avx512 --benchmark_repetitions=5
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "bench/lanes_kepler.hpp"
#include "kernels/integrate_lanes.hpp"
#include "kernels/lanes.hpp"

#if defined(__AVX512F__)
constexpr int W = 8;
using NativeVec = __m512d;
extern "C" __m512d _ZGVeN8v_sin(__m512d);
extern "C" __m512d _ZGVeN8v_exp(__m512d);
extern "C" __m512d _ZGVeN8vv_atan2(__m512d, __m512d);
extern "C" __m512d _ZGVeN8vv_pow(__m512d, __m512d);
#define NHOLO_MVEC(fn) _ZGVeN8v_##fn
#define NHOLO_MVEC2(fn) _ZGVeN8vv_##fn
static const char* kIsa = "avx512f";
#else
constexpr int W = 4;
using NativeVec = __m256d;
extern "C" __m256d _ZGVdN4v_sin(__m256d);
extern "C" __m256d _ZGVdN4v_exp(__m256d);
extern "C" __m256d _ZGVdN4vv_atan2(__m256d, __m256d);
extern "C" __m256d _ZGVdN4vv_pow(__m256d, __m256d);
#define NHOLO_MVEC(fn) _ZGVdN4v_##fn
#define NHOLO_MVEC2(fn) _ZGVdN4vv_##fn
static const char* kIsa = "avx2";
#endif

namespace nholo_bench {
double libm_sum(int fn, const double* x, const double* y, int n);
}

using namespace nholo;
using L = Lanes<W>;

namespace {

constexpr int kValues = 4096;
const char* kFnNames[4] = {"sin", "exp", "atan2", "pow"};

struct Args {
  std::vector<double> x, y;
  Args() : x(kValues), y(kValues) {
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<double> ux(0.05, 3.0), uy(-2.0, 2.0);
    for (int j = 0; j < kValues; ++j) {
      x[j] = ux(rng);
      y[j] = uy(rng);
    }
  }
};
const Args& args() {
  static const Args a;
  return a;
}

void BM_MathLibm(benchmark::State& st, int fn) {
  const Args& a = args();
  for (auto _ : st)
    benchmark::DoNotOptimize(nholo_bench::libm_sum(fn, a.x.data(), a.y.data(), kValues));
  st.SetItemsProcessed(st.iterations() * kValues);
}

L load(const double* p) {
  L r;
  for (int i = 0; i < W; ++i) r.set(i, p[i]);
  return r;
}

void BM_MathSleef(benchmark::State& st, int fn) {
  const Args& a = args();
  for (auto _ : st) {
    L s(0.0);
    for (int j = 0; j < kValues; j += W) {
      const L x = load(&a.x[j]), y = load(&a.y[j]);
      s += fn == 0 ? sin(x) : fn == 1 ? exp(x) : fn == 2 ? atan2(x, y) : pow(x, y);
    }
    benchmark::DoNotOptimize(s);
  }
  st.SetItemsProcessed(st.iterations() * kValues);
}

void BM_MathLibmvec(benchmark::State& st, int fn) {
  const Args& a = args();
  for (auto _ : st) {
    L s(0.0);
    for (int j = 0; j < kValues; j += W) {
      const L x = load(&a.x[j]), y = load(&a.y[j]);
      NativeVec r = fn == 0   ? NHOLO_MVEC(sin)(x.v)
                    : fn == 1 ? NHOLO_MVEC(exp)(x.v)
                    : fn == 2 ? NHOLO_MVEC2(atan2)(x.v, y.v)
                              : NHOLO_MVEC2(pow)(x.v, y.v);
      s += L(r);
    }
    benchmark::DoNotOptimize(s);
  }
  st.SetItemsProcessed(st.iterations() * kValues);
}

void BM_KeplerScalar(benchmark::State& st) {
  for (auto _ : st) benchmark::DoNotOptimize(nholo_bench::kepler_ensemble_scalar());
  st.SetItemsProcessed(st.iterations() * nholo_bench::kKeplerOrbits);
}

void BM_KeplerLanes(benchmark::State& st) {
  const IntegratorOptions opt = nholo_bench::kepler_options();
  const bool every_lane[W] = {true, true, true, true};
  for (auto _ : st) {
    double sum = 0.0;
    for (int j0 = 0; j0 < nholo_bench::kKeplerOrbits; j0 += W) {
      Vec<L, 4> y0;
      for (int i = 0; i < W; ++i) {
        const Vec<double, 4> yi = nholo_bench::kepler_start(j0 + i, nholo_bench::kKeplerOrbits);
        for (int c = 0; c < 4; ++c) y0[c].set(i, yi[c]);
      }
      LaneTrajectories<W, 4> lt = start_lanes<W, 4>(L(0.0), y0, opt);
      advance_lanes<TableauDopri5>(nholo_bench::KeplerSystem<L>{}, lt, L(nholo_bench::kKeplerEnd),
                                   opt, every_lane);
      for (int i = 0; i < W; ++i) sum += lt.y[0][i];
    }
    benchmark::DoNotOptimize(sum);
  }
  st.SetItemsProcessed(st.iterations() * nholo_bench::kKeplerOrbits);
}

}  // namespace

int main(int argc, char** argv) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports(W == 8 ? "avx512f" : "avx2") || !__builtin_cpu_supports("fma")) {
    std::fprintf(stderr, "bench_lanes: this CPU has no %s + FMA; nothing measured\n", kIsa);
    return 2;
  }
  for (int fn = 0; fn < 4; ++fn) {
    const std::string name = std::string("Math/") + kFnNames[fn];
    benchmark::RegisterBenchmark((name + "/libm").c_str(), BM_MathLibm, fn);
    benchmark::RegisterBenchmark((name + "/sleef").c_str(), BM_MathSleef, fn);
    benchmark::RegisterBenchmark((name + "/libmvec").c_str(), BM_MathLibmvec, fn);
  }
  benchmark::RegisterBenchmark("Kepler/scalar", BM_KeplerScalar);
  benchmark::RegisterBenchmark("Kepler/lanes", BM_KeplerLanes);
  benchmark::AddCustomContext("isa", kIsa);
  benchmark::AddCustomContext("lanes", std::to_string(W));
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
