// nholo_cuda_smoke — links the CUDA ensemble integrator and, where a GPU is
// present, integrates a rolling-coin ensemble on it and checks it against the
// closed form (PHYSICS.md item 10). Without a GPU it says so and exits 0: on
// such machines the CUDA build is a compile-and-link check.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "host/cuda_ensemble.hpp"
#include "models/rolling_coin.hpp"

using namespace nholo;
using models::RollingCoin;

int main(int argc, char** argv) {
  const int64_t count = argc > 1 ? std::atoll(argv[1]) : 100000;
  std::printf("nholo CUDA build: %s\n", cuda_backend::describe_device().c_str());
  if (cuda_backend::device_count() == 0) {
    std::printf("no GPU here: the CUDA build compiled and linked; nothing to run\n");
    return 0;
  }
  const RollingCoin::Params p{1.0, 0.5, 9.81, 0.3};
  const double gs = p.g * std::sin(p.slope);
  // theta = Omega t + theta0 with Omega spread over the ensemble, x0 = y0 = 0
  auto exact = [&](double Omega, double omega, double th0, double t, double* y) {
    const double th = Omega * t + th0, R = p.radius;
    const double w = omega * R / Omega + gs / (3 * Omega * Omega) * std::sin(th);
    const double phid = omega + 2 * gs / (3 * R * Omega) * std::sin(th);
    y[0] = gs / (3 * Omega) * t - w * std::cos(th);
    y[1] = w * std::sin(th);
    y[2] = omega * t - 2 * gs / (3 * R * Omega * Omega) * (std::cos(th) - std::cos(th0));
    y[3] = th;
    y[4] = R * phid * std::sin(th);
    y[5] = R * phid * std::cos(th);
    y[6] = phid;
    y[7] = Omega;
  };
  std::vector<double> y0(8 * count), Om(count), om(count), th0(count);
  for (int64_t i = 0; i < count; ++i) {
    Om[i] = 0.5 + 2.5 * (i + 0.5) / count;
    om[i] = -1.0 + 2.0 * std::fmod(i * 0.618033988749895, 1.0);
    th0[i] = 6.283185307179586 * std::fmod(i * 0.414213562373095, 1.0);
    double y[8];
    exact(Om[i], om[i], th0[i], 0.0, y);
    for (int c = 0; c < 8; ++c) y0[c * count + i] = y[c];
  }
  UdwadiaKalabaSystem<RollingCoin> sys{p, EvalOptions()};
  IntegratorOptions opt;
  opt.method = Method::dop853;
  opt.rtol = 1e-12;
  opt.atol = 1e-12;
  HostEnsemble<UdwadiaKalabaSystem<RollingCoin>> ens;
  ens.start(y0, count, 0.0, opt);
  WindowOutputs<UdwadiaKalabaSystem<RollingCoin>> out;
  OutputSelection sel;
  const auto t0 = std::chrono::steady_clock::now();
  cuda_backend::run_window(sys, opt, ens, std::vector<double>{5.0, 10.0}, sel, out);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double worst = 0;
  long long steps = 0;
  for (int64_t i = 0; i < count; ++i) {
    double y[8];
    exact(Om[i], om[i], th0[i], 10.0, y);
    for (int c = 0; c < 4; ++c)
      worst = std::max(worst, std::abs(out.q[(1 * 4 + c) * count + i] - y[c]) / (1 + std::abs(y[c])));
    steps += ens.steps[i];
  }
  std::printf("%lld coins to t = 10 on the GPU: %.3f s, %.3e trajectory-steps/s, worst relative "
              "error vs closed form %.3e\n",
              static_cast<long long>(count), secs, steps / secs, worst);
  return worst < 1e-8 ? 0 : 1;
}
