// Tests of kernels/rk_step.hpp, kernels/integrate.hpp, kernels/ensemble.hpp
// and the CPU backend (host/backends/cpu_ensemble.hpp) on the rolling coin,
// whose motion is known in closed form (docs/physics.md, item 10):
//   theta = Omega t + theta0
//   phid  = omega + 2 g sin(alpha)/(3 R Omega) sin(theta)
//   x = x0 + g sin(alpha)/(3 Omega) t - [omega R/Omega + g sin(alpha)/(3 Omega^2) sin(theta)] cos(theta)
//   y = y0 + [omega R/Omega + g sin(alpha)/(3 Omega^2) sin(theta)] sin(theta)
//   phi = phi0 + omega t - 2 g sin(alpha)/(3 R Omega^2) (cos(theta) - cos(theta0))
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "host/backends/backend.hpp"
#include "host/backends/device_ensemble.hpp"
#include "kernels/formulations.hpp"
#include "kernels/integrate.hpp"
#include "models/rolling_coin.hpp"
#include "tests/coin_closed_form.hpp"
#include "tests/cpu_ensemble_run.hpp"
#include "tests/integrator_options.hpp"

using namespace nholo;
using models::RollingCoin;
using CoinSystem = UdwadiaKalabaSystem<RollingCoin>;
using nholo_test::CoinMotion;
using nholo_test::CpuEnsembleRun;

namespace {

// The kernel's arrays of a slice's integration state hs (the fields' arrays
// left null, for the caller to point).
EnsembleArrays<double> state_arrays(HostStates& hs) {
  EnsembleArrays<double> arr;
  arr.y = hs.y.data();
  arr.t = hs.t.data();
  arr.h = hs.h.data();
  arr.err_prev = hs.err_prev.data();
  arr.fail_time = hs.fail_time.data();
  arr.steps = hs.steps.data();
  arr.rejected = hs.rejected.data();
  arr.status = hs.status.data();
  return arr;
}

CoinMotion example_coin() {
  return CoinMotion{RollingCoin::Params{1.0, 0.5, 9.81, 0.3}, 2.0, 1.5, 0.4, 0.1, -0.2, 0.3};
}

// Integrate a single trajectory with the per-trajectory integrator.
template <class Sys>
TrajectoryState<double, Sys::N> integrate_one(const Sys& sys, Vec<double, Sys::N> y0, double t_end,
                                              const IntegratorOptions& opt) {
  auto ts = start_trajectory<double, Sys::N>(0.0, y0, opt);
  advance_to(sys, ts, t_end, opt);
  return ts;
}

TEST(Integrate, CoinMatchesClosedFormOver50PeriodsWithDop853) {
  const CoinMotion cm = example_coin();
  CoinSystem sys{cm.p, EvalOptions()};
  IntegratorOptions opt = nholo_test::tolerance_options(Method::dop853, 1e-13);
  const double period = 2 * M_PI / cm.Omega;
  auto ts = start_trajectory<double, 8>(0.0, cm.state(0.0), opt);
  double worst = 0;
  for (int k = 1; k <= 50 * 8; ++k) {
    const double t = k * period / 8;
    advance_to(sys, ts, t, opt);
    ASSERT_EQ(ts.status, Status::ok);
    ASSERT_EQ(ts.t, t);  // exact landing on output times
    const auto ref = cm.state(t);
    for (int c = 0; c < 8; ++c)
      worst = std::max(worst, std::abs(ts.y[c] - ref[c]) / (1.0 + std::abs(ref[c])));
  }
  EXPECT_LT(worst, 1e-8);
  RecordProperty("worst_relative_error", std::to_string(worst));
  std::printf("coin vs closed form over 50 periods (DOP853, rtol 1e-13): worst relative error %.3e, "
              "%lld steps\n", worst, static_cast<long long>(ts.steps));
}

TEST(Integrate, Dopri5AdaptiveMeetsTolerance) {
  const CoinMotion cm = example_coin();
  CoinSystem sys{cm.p, EvalOptions()};
  for (double rtol : {1e-6, 1e-8, 1e-10}) {
    IntegratorOptions opt = nholo_test::tolerance_options(Method::dopri5, rtol);
    const auto ts = integrate_one(sys, cm.state(0.0), 10.0, opt);
    ASSERT_EQ(ts.status, Status::ok);
    const auto ref = cm.state(10.0);
    double err = 0;
    for (int c = 0; c < 8; ++c) err = std::max(err, std::abs(ts.y[c] - ref[c]) / (1 + std::abs(ref[c])));
    // global error of a locally controlled method: within a modest factor of tol x time
    EXPECT_LT(err, 100 * rtol * 10.0) << "rtol " << rtol;
    EXPECT_GT(ts.rejected + ts.steps, 0);
  }
}

// Fixed-step error of a tableau at t = 2 with step h.
template <class Tab>
double fixed_step_error(double h) {
  const CoinMotion cm = example_coin();
  CoinSystem sys{cm.p, EvalOptions()};
  Vec<double, 8> y = cm.state(0.0);
  const int steps = static_cast<int>(std::lround(2.0 / h));
  double t = 0;
  for (int s = 0; s < steps; ++s) {
    Vec<double, 8> k0, y1, kl;
    double err;
    EXPECT_EQ(sys(t, y, k0), Status::ok);
    EXPECT_EQ(rk_step<Tab>(sys, t, y, k0, h, StepTolerance{1, 1}, y1, err, kl), Status::ok);
    y = y1;
    t = (s + 1) * h;
  }
  const auto ref = cm.state(2.0);
  double e = 0;
  for (int c = 0; c < 8; ++c) e = std::max(e, std::abs(y[c] - ref[c]));
  return e;
}

TEST(Integrate, ConvergenceOrdersByStepHalving) {
  // RK4: error ~ h^4; Dormand–Prince 5(4) propagates the 5th-order solution.
  const double e4a = fixed_step_error<TableauRK4>(0.02), e4b = fixed_step_error<TableauRK4>(0.01);
  const double e5a = fixed_step_error<TableauDopri5>(0.04),
               e5b = fixed_step_error<TableauDopri5>(0.02);
  const double p4 = std::log2(e4a / e4b), p5 = std::log2(e5a / e5b);
  std::printf("measured orders: RK4 %.3f, Dopri5 %.3f\n", p4, p5);
  EXPECT_NEAR(p4, 4.0, 0.25);
  EXPECT_NEAR(p5, 5.0, 0.3);
}

TEST(Integrate, RK4FixedStepLandsOnOutputTimes) {
  const CoinMotion cm = example_coin();
  CoinSystem sys{cm.p, EvalOptions()};
  IntegratorOptions opt;
  opt.method = Method::rk4;
  opt.dt = 0.003;  // does not divide the output interval
  auto ts = start_trajectory<double, 8>(0.0, cm.state(0.0), opt);
  for (int k = 1; k <= 10; ++k) {
    advance_to(sys, ts, 0.1 * k, opt);
    ASSERT_EQ(ts.status, Status::ok);
    EXPECT_EQ(ts.t, 0.1 * k);
  }
  const auto ref = cm.state(1.0);
  for (int c = 0; c < 8; ++c) EXPECT_NEAR(ts.y[c], ref[c], 1e-8 * (1 + std::abs(ref[c])));
}

TEST(Integrate, MaxStepsAndUnderflowGuards) {
  const CoinMotion cm = example_coin();
  CoinSystem sys{cm.p, EvalOptions()};
  IntegratorOptions opt;
  opt.max_steps = 5;
  auto ts = integrate_one(sys, cm.state(0.0), 100.0, opt);
  EXPECT_EQ(ts.status, Status::max_steps);
  EXPECT_TRUE(std::isfinite(ts.fail_time));
  EXPECT_LT(ts.fail_time, 100.0);
  // an impossible tolerance drives the step below dt_min
  IntegratorOptions tight;
  tight.rtol = 1e-30;
  tight.atol = 1e-30;
  tight.dt_min = 1e-6;
  ts = integrate_one(sys, cm.state(0.0), 1.0, tight);
  EXPECT_EQ(ts.status, Status::step_underflow);
  // a non-finite initial state is flagged, not integrated
  auto bad = cm.state(0.0);
  bad[2] = NAN;
  ts = integrate_one(sys, bad, 1.0, opt);
  EXPECT_EQ(ts.status, Status::non_finite);
  EXPECT_EQ(ts.fail_time, 0.0);
}

TEST(Integrate, ProjectionKeepsResidualBelow1e12OverLongRuns) {
  const CoinMotion cm = example_coin();
  IntegratorOptions opt = nholo_test::tolerance_options(Method::dopri5, 1e-7);
  for (DriftControl drift : {DriftControl::project, DriftControl::none}) {
    EvalOptions eo;
    eo.drift = drift;
    CoinSystem sys{cm.p, eo};
    auto ts = start_trajectory<double, 8>(0.0, cm.state(0.0), opt);
    double worst = 0;
    for (int k = 1; k <= 1000; ++k) {
      advance_to(sys, ts, 1.0 * k, opt);
      ASSERT_EQ(ts.status, Status::ok);
      Observation<double, 4, 2> obs;
      sys.observe(ts.t, ts.y, obs);
      // the reported residual is |g(q, qd)|, recomputed here independently
      const double gx = ts.y[4] - cm.p.radius * ts.y[6] * std::sin(ts.y[3]);
      const double gy = ts.y[5] - cm.p.radius * ts.y[6] * std::cos(ts.y[3]);
      EXPECT_NEAR(obs.constraint_residual, std::max(std::abs(gx), std::abs(gy)), 1e-15);
      worst = std::max(worst, obs.constraint_residual);
    }
    std::printf("drift %s: worst constraint residual over 1000 time units %.3e\n",
                drift == DriftControl::project ? "project" : "none", worst);
    if (drift == DriftControl::project) {
      EXPECT_LT(worst, 1e-12);
    } else {
      EXPECT_GT(worst, 1e-12);  // loose tolerance: drift is there, and reported
    }
  }
}

TEST(Integrate, BaumgarteReducesDrift) {
  const CoinMotion cm = example_coin();
  IntegratorOptions opt = nholo_test::tolerance_options(Method::dopri5, 1e-6);
  double worst[2] = {0, 0};
  int idx = 0;
  for (DriftControl drift : {DriftControl::none, DriftControl::baumgarte}) {
    EvalOptions eo;
    eo.drift = drift;
    eo.baumgarte_alpha = 5.0;
    CoinSystem sys{cm.p, eo};
    auto ts = start_trajectory<double, 8>(0.0, cm.state(0.0), opt);
    for (int k = 1; k <= 200; ++k) {
      advance_to(sys, ts, 1.0 * k, opt);
      ASSERT_EQ(ts.status, Status::ok);
      Observation<double, 4, 2> obs;
      sys.observe(ts.t, ts.y, obs);
      worst[idx] = std::max(worst[idx], obs.constraint_residual);
    }
    ++idx;
  }
  std::printf("worst residual: none %.3e, baumgarte %.3e\n", worst[0], worst[1]);
  EXPECT_LT(worst[1], 0.25 * worst[0]);
}

// Row-major initial states (q0[i n + c], qd0[i n + c]) of coins in closed-form motion.
void coin_states(const std::vector<CoinMotion>& motions, std::vector<double>& q0,
                 std::vector<double>& qd0) {
  const size_t count = motions.size();
  q0.assign(4 * count, 0.0);
  qd0.assign(4 * count, 0.0);
  for (size_t i = 0; i < count; ++i) {
    const auto s = motions[i].state(0.0);
    for (int c = 0; c < 4; ++c) {
      q0[i * 4 + c] = s[c];
      qd0[i * 4 + c] = s[4 + c];
    }
  }
}

// The ensemble through the production CPU backend (CpuEnsemble, as the run
// pipeline drives it): OMP with 1 and 2 threads and the serial CPP system
// give bitwise-identical trajectories, observables, block moments and
// per-trajectory counts over two windows.
TEST(Ensemble, BackendsAndThreadCountsAreBitwiseIdentical) {
  const CoinMotion base = example_coin();
  const int64_t count = 257;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0.5, 3.0), a(0.0, 2 * M_PI);
  std::vector<CoinMotion> motions;
  for (int64_t i = 0; i < count; ++i) {
    CoinMotion cm = base;
    cm.Omega = u(rng);
    cm.omega = u(rng) - 1.5;
    cm.theta0 = a(rng);
    motions.push_back(cm);
  }
  std::vector<double> q0, qd0;
  coin_states(motions, q0, qd0);
  CoinSystem sys{base.p, EvalOptions()};
  sys.eval.drift = DriftControl::project;
  IntegratorOptions opt;
  opt.rtol = 1e-9;
  opt.atol = 1e-9;
  const std::vector<std::string> fields = {"q",           "qdot",       "energy",
                                           "force_ideal", "multiplier", "constraint_residual"};
  const std::vector<double> saves = {0.5, 1.0, 1.5, 2.0, 2.5};  // windows of 3 and 2 saves
  const int64_t blocks = (count + kStatBlock - 1) / kStatBlock;
  struct Run {
    Backend b;
    int threads;
  };
  std::vector<std::vector<double>> results;
  std::vector<std::vector<int64_t>> counts;
  for (Run r : {Run{Backend::omp, 1}, Run{Backend::omp, 2}, Run{Backend::cpp, 0}}) {
    CpuEnsembleRun<CoinSystem> run(r.b, r.threads, sys, opt, saves, count, 3, fields);
    run.start(q0, qd0);
    std::vector<double> all;
    for (const auto& [k0, ns] : {std::pair<int64_t, int>{0, 3}, std::pair<int64_t, int>{3, 2}}) {
      const int slot = run.window(k0, ns);
      for (const auto& f : fields) {
        const std::vector<double> v = run.field(slot, f, ns);
        all.insert(all.end(), v.begin(), v.end());
      }
      for (int fi = 0; fi < 2; ++fi)  // block moments of q and qdot
        for (int qi = 0; qi < 5; ++qi) {
          const double* mo = run.slot(slot).moments[fi][qi];
          all.insert(all.end(), mo, mo + blocks * ns * 4);
        }
    }
    const SliceResults res = run.finish();
    for (int64_t i = 0; i < count; ++i) ASSERT_EQ(res.status()[i], 0);
    results.push_back(all);
    std::vector<int64_t> c = res.steps();
    c.insert(c.end(), res.rejected().begin(), res.rejected().end());
    counts.push_back(c);
  }
  ASSERT_EQ(results[0].size(), results[1].size());
  ASSERT_EQ(results[0].size(), results[2].size());
  EXPECT_EQ(0, std::memcmp(results[0].data(), results[1].data(), results[0].size() * sizeof(double)));
  EXPECT_EQ(0, std::memcmp(results[0].data(), results[2].data(), results[0].size() * sizeof(double)));
  EXPECT_EQ(counts[0], counts[1]);
  EXPECT_EQ(counts[0], counts[2]);
}

// The trajectory-major output layout of the CPU backend (the file's order)
// holds the same numbers as the structure-of-arrays layout of the window a
// GPU kernel runs (gpu_window, run here on the host index by index),
// permuted; both leave the same final states.
TEST(Ensemble, TrajectoryMajorLayoutIsThePermutedSoALayout) {
  const CoinMotion base = example_coin();
  const int64_t count = 37;
  std::vector<CoinMotion> motions;
  for (int64_t i = 0; i < count; ++i) {
    CoinMotion cm = base;
    cm.Omega = 0.7 + 0.05 * static_cast<double>(i);
    motions.push_back(cm);
  }
  std::vector<double> q0, qd0, l0(2 * count, 0.0);
  coin_states(motions, q0, qd0);
  CoinSystem sys{base.p, EvalOptions()};
  IntegratorOptions opt;
  const std::vector<double> saves = {0.5, 1.0, 1.5};
  const int ns = 3;
  // trajectory-major: the CPU backend
  CpuEnsembleRun<CoinSystem> run(Backend::omp, 2, sys, opt, saves, count, ns,
                                 {"q", "qdot", "multiplier", "energy"});
  run.start(q0, qd0, l0);
  const int slot = run.window(0, ns);
  const std::vector<double> tq = run.field(slot, "q", ns), tqd = run.field(slot, "qdot", ns),
                            tmul = run.field(slot, "multiplier", ns),
                            ten = run.field(slot, "energy", ns);
  // structure of arrays: the GPU kernel's window
  const std::vector<uint8_t> rej(count, 0);
  HostStates hs;
  start_host_states(sys, opt, count, q0.data(), qd0.data(), l0.data(), rej.data(), 0.0, hs);
  std::vector<double> sq(ns * 4 * count), sqd(ns * 4 * count), smul(ns * 2 * count),
      sen(ns * count);
  EnsembleArrays<double> arr = state_arrays(hs);
  arr.q = sq.data();
  arr.qdot = sqd.data();
  arr.multiplier = smul.data();
  arr.energy = sen.data();
  const EnsembleWindow<CoinSystem> w =
      ensemble_window(sys, opt, arr, count, saves.data(), ns, false);
  ASSERT_FALSE(w.trajectory_major);
  for_each_index(Backend::omp, 2, count, w);
  int64_t checked = 0;
  for (int64_t i = 0; i < count; ++i)
    for (int64_t k = 0; k < ns; ++k) {
      for (int c = 0; c < 4; ++c) {
        EXPECT_EQ(sq[(k * 4 + c) * count + i], tq[(i * ns + k) * 4 + c]);
        EXPECT_EQ(sqd[window_index(false, k, c, 4, i, ns, count)],
                  tqd[window_index(true, k, c, 4, i, ns, count)]);
        ++checked;
      }
      for (int l = 0; l < 2; ++l)
        EXPECT_EQ(smul[(k * 2 + l) * count + i], tmul[(i * ns + k) * 2 + l]);
      EXPECT_EQ(sen[k * count + i], ten[i * ns + k]);
    }
  EXPECT_EQ(checked, count * ns * 4);
  // the final states: the SoA window's y, the CPU backend's last save
  const SliceResults res = run.finish();
  for (int64_t i = 0; i < count; ++i) {
    EXPECT_EQ(hs.status[i], res.status()[i]);
    EXPECT_EQ(hs.steps[i], res.steps()[i]);
    for (int c = 0; c < 4; ++c) {
      EXPECT_EQ(hs.y[c * count + i], tq[(i * ns + ns - 1) * 4 + c]);
      EXPECT_EQ(hs.y[(4 + c) * count + i], tqd[(i * ns + ns - 1) * 4 + c]);
    }
  }
}

// The production CPU backend's outputs (trajectory-major) follow the closed
// form. (The structure-of-arrays layout against the closed form:
// GpuModuleHooks below.)
TEST(Ensemble, CpuBackendMatchesClosedForm) {
  const CoinMotion cm = example_coin();
  const int64_t count = 3;
  const std::vector<CoinMotion> motions(count, cm);
  std::vector<double> q0, qd0;
  coin_states(motions, q0, qd0);
  CoinSystem sys{cm.p, EvalOptions()};
  IntegratorOptions opt = nholo_test::tolerance_options(Method::dop853, 1e-12);
  const int ns = 2;
  CpuEnsembleRun<CoinSystem> run(Backend::omp, 0, sys, opt, {1.0, 2.0}, count, ns, {"q", "qdot"});
  run.start(q0, qd0);
  const int slot = run.window(0, ns);
  const std::vector<double> q = run.field(slot, "q", ns), qd = run.field(slot, "qdot", ns);
  for (int k = 0; k < ns; ++k) {
    const auto ref = cm.state(1.0 + k);
    for (int c = 0; c < 4; ++c)
      for (int64_t i = 0; i < count; ++i) {
        EXPECT_NEAR(q[(i * ns + k) * 4 + c], ref[c], 1e-9);
        EXPECT_NEAR(qd[(i * ns + k) * 4 + c], ref[4 + c], 1e-9);
      }
  }
}

}  // namespace

// The host-side hooks of a GPU module (host/backends/device_ensemble.hpp,
// FormulationSystem: what a model plugin hands the CUDA backend for a system it
// was not compiled with). The slice's initial states are HostEnsemble's; the
// window's bytes, read back as the typed window and run as the GPU kernel
// runs it (one trajectory per index, run<Method>), follow the coin's closed
// form. (The kernel itself runs only on a GPU: tests/test_model_file_runs.cpp.)
TEST(GpuModuleHooks, StartAndWindowBytesDriveTheTypedKernel) {
  const CoinMotion base = example_coin();
  const int64_t count = 5;
  std::vector<double> q0(4 * count), qd0(4 * count), l0(2 * count, 0.0);
  std::vector<uint8_t> rej(count, 0);
  std::vector<CoinMotion> motions;
  for (int64_t i = 0; i < count; ++i) {
    CoinMotion cm = base;
    cm.Omega = 0.8 + 0.3 * static_cast<double>(i);
    motions.push_back(cm);
    const auto s = cm.state(0.0);
    for (int c = 0; c < 4; ++c) {
      q0[i * 4 + c] = s[c];
      qd0[i * 4 + c] = s[4 + c];
    }
  }
  CoinSystem sys{base.p, EvalOptions()};
  IntegratorOptions opt;
  opt.method = Method::dopri5;
  opt.rtol = 1e-11;
  opt.atol = 1e-12;
  const FormulationSystem ms = formulation_system(sys, opt);
  EXPECT_EQ(ms.n, 4);
  EXPECT_EQ(ms.m, 2);
  EXPECT_EQ(ms.N, 8);
  EXPECT_EQ(ms.n_params, RollingCoin::n_params);
  EXPECT_EQ(ms.path_residual_index, -1);
  ASSERT_EQ(ms.window_bytes, sizeof(EnsembleWindow<CoinSystem>));
  // start: HostEnsemble's arrays
  HostStates hs;
  ms.start(count, q0.data(), qd0.data(), l0.data(), rej.data(), 0.0, hs);
  HostEnsemble<CoinSystem> ref;
  ref.start_from_states(sys, count, q0.data(), qd0.data(), l0.data(), rej.data(), 0.0, opt);
  EXPECT_EQ(hs.y, ref.y);
  EXPECT_EQ(hs.t, ref.t);
  EXPECT_EQ(hs.h, ref.h);
  EXPECT_EQ(hs.err_prev, ref.err_prev);
  ASSERT_EQ(hs.fail_time.size(), ref.fail_time.size());  // NaN until a failure: compare bits
  EXPECT_EQ(
      std::memcmp(hs.fail_time.data(), ref.fail_time.data(), hs.fail_time.size() * sizeof(double)),
      0);
  EXPECT_EQ(hs.steps, ref.steps);
  EXPECT_EQ(hs.rejected, ref.rejected);
  EXPECT_EQ(hs.status, ref.status);
  // window: the bytes the kernel receives
  const std::vector<double> saves = {0.5, 1.0, 2.0};
  const int ns = 3;
  std::vector<double> q(static_cast<size_t>(ns) * 4 * count, 0.0);
  EnsembleArrays<double> arr = state_arrays(hs);
  arr.q = q.data();
  std::vector<unsigned char> bytes(ms.window_bytes);
  // trajectory-major (a lane add-on's window) where asked, else coalesced (a GPU's)
  ms.window(bytes.data(), arr, count, saves.data(), ns, true);
  EnsembleWindow<CoinSystem> w;
  std::memcpy(static_cast<void*>(&w), bytes.data(), sizeof w);
  EXPECT_TRUE(w.trajectory_major);
  ms.window(bytes.data(), arr, count, saves.data(), ns, false);
  std::memcpy(static_cast<void*>(&w), bytes.data(), sizeof w);
  EXPECT_EQ(w.count, count);
  EXPECT_EQ(w.n_saves, ns);
  EXPECT_EQ(w.save_times, saves.data());
  EXPECT_FALSE(w.trajectory_major);
  EXPECT_EQ(w.opt.method, Method::dopri5);
  for (int64_t i = 0; i < count; ++i) w.run<Method::dopri5>(i);
  for (int64_t i = 0; i < count; ++i) {
    EXPECT_EQ(hs.status[i], static_cast<int32_t>(Status::ok));
    for (int k = 0; k < ns; ++k) {
      const auto exact = motions[static_cast<size_t>(i)].state(saves[static_cast<size_t>(k)]);
      for (int c = 0; c < 4; ++c)  // structure of arrays: [(k n + c) count + i]
        EXPECT_NEAR(q[(static_cast<size_t>(k) * 4 + c) * count + i], exact[c], 1e-8)
            << "trajectory " << i << " save " << k << " q" << c;
    }
    EXPECT_EQ(hs.t[i], 2.0);
  }
}
