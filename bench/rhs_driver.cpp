// rhs_driver — calls one right-hand side N times; the program that callgrind
// counts (bench/run.sh) and a plain timer of the same loop.
//
//   rhs_driver SYSTEM IMPL N          N evaluations, prints a checksum
//   rhs_driver SYSTEM IMPL time       ns per evaluation: best of 7 runs of ~0.2 s
//   rhs_driver SYSTEM IMPL steps K    integrates trajectories 0 .. K-1 serially
//                                     (DOPRI5, rtol 1e-10, atol 1e-12, 20 saves to
//                                     t = 10, as bench_ensemble), prints the steps
//   rhs_driver list                   the SYSTEM IMPL pairs
// SYSTEM: coin | skate | appell;  IMPL: nholo_ad | nholo_hand | closed | eigen,
// or the generic path under another formulation: nholo_lm (Lagrange
// multipliers), nholo_ns (null space), nholo_vk (vakonomic; multipliers start
// at 0.1), nholo_cf (conflated; skate and appell only); nholo_sym: the
// Udwadia–Kalaba system of the system's twin model file (tests/model_files/,
// the same Lagrangian and constraints) through the header nholo generates
// from it: symbolic M and F, parameter-only terms once per trajectory (built
// with NHOLO_BENCH_SYMBOLIC; CMakeLists.txt writes the headers).
// The states cycle through 64 consistent initial states of the ensemble
// benchmark (bench_systems.hpp), so branches see realistic data. Instructions
// per evaluation = (Ir(N2) - Ir(N1)) / (N2 - N1): setup and teardown cancel;
// per step likewise from two `steps` runs. bench/flops.py counts the
// floating-point operations of the same runs (callgrind --dump-instr=yes).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "bench_systems.hpp"
#include "eigen_direct.hpp"
#include "kernels/formulations.hpp"
#include "kernels/integrate.hpp"

#ifndef NHOLO_BENCH_SYMBOLIC
#define NHOLO_BENCH_SYMBOLIC 0
#endif
#if NHOLO_BENCH_SYMBOLIC
// the three generated headers each define nholo::user_models::UserModel
#define UserModel SymCoin
#include "sym_rolling_coin.hpp"
#undef UserModel
#define UserModel SymSkate
#include "sym_skate.hpp"
#undef UserModel
#define UserModel SymAppell
#include "sym_appell.hpp"
#undef UserModel
#endif

using namespace nholo;
using namespace nholo::bench;

namespace {

long g_count = 0;  // trajectories of the `steps` mode

// The generic path under the other formulations (the coin with its
// hand-written M, F hidden, as for nholo_ad).
template <class Model>
using LmSystem = LagrangeMultiplierSystem<typename Generic<Model>::type>;
template <class Model>
using NsSystem = NullSpaceSystem<typename Generic<Model>::type>;
template <class Model>
using VkSystem = VakonomicSystem<typename Generic<Model>::type>;
template <class Model>
using CfSystem = ConflatedSystem<Model>;

#if NHOLO_BENCH_SYMBOLIC
template <class Model>
struct Sym;
template <>
struct Sym<RollingCoin> {
  using type = user_models::SymCoin;
};
template <>
struct Sym<Skate> {
  using type = user_models::SymSkate;
};
template <>
struct Sym<Appell> {
  using type = user_models::SymAppell;
};
template <class Model>
using SymSystem = UdwadiaKalabaSystem<typename Sym<Model>::type>;
#endif

// the benchmark parameters of Model as Sys's model takes them (a twin model
// file's Params: the same values in the same order, through make_params)
template <class Model, class Sys>
typename Sys::model_type::Params system_params() {
  using P = typename Sys::model_type::Params;
  const typename Model::Params p = bench_params<Model>();
  if constexpr (std::is_same<P, typename Model::Params>::value) {
    return p;
  } else {
    static_assert(sizeof(p) == Model::n_params * sizeof(double), "Params of doubles only");
    double v[Model::n_params];
    std::memcpy(v, &p, sizeof p);
    return Sys::model_type::make_params(v);
  }
}

// y0 of trajectory i: (q, qd) of the ensemble, vakonomic multipliers 0.1
template <class Model, class Sys>
Vec<double, Sys::N> state_of(const Sys& sys, int64_t i) {
  Vec<double, Model::n> q, qd;
  initial_state<Model>(i, q, qd);
  Vec<double, Sys::N> y = Vec<double, Sys::N>::zero();
  if constexpr (Sys::n_extra > 0) {
    sys.pack(q, qd, Vec<double, Sys::m>::constant(0.1), y);
  } else {
    store_state(q, qd, y);
  }
  return y;
}

template <class Sys>
double loop(const Sys& sys, const std::vector<Vec<double, Sys::N>>& states, long n) {
  Vec<double, Sys::N> dy;
  double sum = 0.0;
  for (long k = 0; k < n; ++k) {
    const auto& y = states[k & 63];
    double t = 0.1;  // opaque: the compiler must not hoist time-only terms out of the loop
    asm volatile("" : "+g"(t) : "g"(&y) : "memory");
    sys(t, y, dy);
    asm volatile("" : : "g"(&dy) : "memory");
    sum += dy[Sys::N - 1];
  }
  return sum;
}

template <class Model, template <class> class SysT>
int run(const std::string& mode) {
  using Sys = SysT<Model>;
  Sys sys;
  sys.params = system_params<Model, Sys>();
  sys.eval = EvalOptions();
  std::vector<Vec<double, Sys::N>> states(64);
  for (int i = 0; i < 64; ++i) states[i] = state_of<Model>(sys, i);
  if (mode == "steps") {
    IntegratorOptions opt;
    opt.rtol = 1e-10;
    opt.atol = 1e-12;
    int64_t steps = 0, rejected = 0;
    double sum = 0.0;
    for (long i = 0; i < g_count; ++i) {
      const Vec<double, Sys::N> y = state_of<Model>(sys, i);
      auto ts = start_trajectory<double, Sys::N>(0.0, y, opt);
      // per-trajectory cache (prepare_system, kernels/system.hpp), as the ensemble functor
      const auto& psys = prepare_system(sys, 0.0, y);
      for (int k = 1; k <= 20; ++k) advance_to(psys, ts, 0.5 * k, opt);
      steps += ts.steps;
      rejected += ts.rejected;
      sum += ts.y[0];
    }
    std::printf("steps %lld rejected %lld checksum %.17g\n", static_cast<long long>(steps),
                static_cast<long long>(rejected), sum);
    return 0;
  }
  // the right-hand side with its per-trajectory cache, prepared once (the
  // ensemble prepares once per trajectory and output window)
  const auto& psys = prepare_system(sys, 0.0, states[0]);
  if (mode == "time") {
    long n = 1000;
    for (;;) {
      const auto t0 = std::chrono::steady_clock::now();
      loop(psys, states, n);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (s > 0.05) break;
      n *= 4;
    }
    n = n * 4;  // ~0.2 s per run
    double best = 1e300;
    for (int r = 0; r < 7; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      loop(psys, states, n);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (s < best) best = s;
    }
    std::printf("%.3f\n", best / static_cast<double>(n) * 1e9);
  } else {
    const long n = std::atol(mode.c_str());
    std::printf("checksum %.17g\n", loop(psys, states, n));
  }
  return 0;
}

template <class Model>
int dispatch(const std::string& impl, const std::string& mode) {
  if (impl == "nholo_ad") return run<Model, GenericSystem>(mode);
  if (impl == "nholo_hand") return run<Model, HandSystem>(mode);
  if (impl == "closed") return run<Model, ClosedSystem>(mode);
  if (impl == "eigen") return run<Model, EigenSystem>(mode);
  if (impl == "nholo_lm") return run<Model, LmSystem>(mode);
  if (impl == "nholo_ns") return run<Model, NsSystem>(mode);
  if (impl == "nholo_vk") return run<Model, VkSystem>(mode);
  if constexpr (has_conflated_lagrangian<Model>::value) {
    if (impl == "nholo_cf") return run<Model, CfSystem>(mode);
  }
#if NHOLO_BENCH_SYMBOLIC
  if (impl == "nholo_sym") return run<Model, SymSystem>(mode);
#endif
  std::fprintf(stderr,
               "unknown IMPL '%s' (accepted: nholo_ad, nholo_hand, closed, eigen, nholo_lm, "
               "nholo_ns, nholo_vk, nholo_cf (skate, appell), nholo_sym (when built with "
               "NHOLO_BENCH_SYMBOLIC))\n",
               impl.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "list") == 0) {
    for (const char* s : {"coin", "skate", "appell"}) {
      for (const char* i :
           {"nholo_ad", "nholo_hand", "closed", "eigen", "nholo_lm", "nholo_ns", "nholo_vk"})
        std::printf("%s %s\n", s, i);
      if (std::strcmp(s, "coin") != 0) std::printf("%s nholo_cf\n", s);
      if (NHOLO_BENCH_SYMBOLIC) std::printf("%s nholo_sym\n", s);
    }
    return 0;
  }
  if (argc == 5 && std::strcmp(argv[3], "steps") == 0) g_count = std::atol(argv[4]);
  if (argc != 4 && !(argc == 5 && g_count > 0)) {
    std::fprintf(stderr, "usage: rhs_driver SYSTEM IMPL N|time|steps K   (or: rhs_driver list)\n");
    return 2;
  }
  const std::string sys = argv[1], impl = argv[2], mode = argv[3];
  if (sys == "coin") return dispatch<RollingCoin>(impl, mode);
  if (sys == "skate") return dispatch<Skate>(impl, mode);
  if (sys == "appell") return dispatch<Appell>(impl, mode);
  std::fprintf(stderr, "unknown SYSTEM '%s' (accepted: coin, skate, appell)\n", sys.c_str());
  return 2;
}
