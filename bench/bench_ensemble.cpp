// bench_ensemble — one ensemble, several implementations of the same equations
// of motion, side by side in one process (bench/run.sh, docs/BENCHMARKS.md).
//
//   bench_ensemble --system coin|skate|appell --n N --threads T
//                  [--impls nholo_ad,nholo_hand,closed,odeint,eigen] [--eigen-n M]
//                  [--t-end 10] [--saves 20] [--window 5] [--rtol 1e-10] [--atol 1e-12]
//                  [--reps R] [--ref-n 200] [--dump FILE.json] [--dump-n K]
//
// Implementations (bench_systems.hpp, eigen_direct.hpp):
//   nholo_ad    nholo's generic path: AD-derived M, F, A, b + fundamental equation
//   nholo_hand  hand-written M, F, A, b, C + the same fundamental-equation solver
//   closed      closed-form accelerations
//   eigen       Eigen dynamic-size matrices + JacobiSVD pseudoinverse per evaluation
//     all four in nholo's integrator (DOPRI5, PI control, exact landing on the
//     save times) and CPU backend (host/backends/cpu_ensemble.hpp, Thrust OMP)
//   odeint      Boost.odeint runge_kutta_dopri5, controlled + dense output
//               (make_dense_output), integrate_times over the same save times,
//               one trajectory per OpenMP iteration, closed-form right-hand side
// Every implementation integrates the same initial states with the same
// rtol/atol and stores q, qdot at every save (in memory: "output off"). eigen
// runs on the first M trajectories only (it is slow); its rates are per
// trajectory like the others'.
//
// Accuracy: the end states of the first R trajectories are compared with a
// reference (closed-form right-hand side, nholo's DOP853 at rtol 1e-13, atol
// 1e-15) and with nholo_ad's end states; "agree" requires both below 1e-6
// (relative to 1 + |y|). The exit status is 3 when any implementation
// disagrees.
//
// Output: one JSON object per implementation and line, on stdout:
//   system impl n threads seconds steps rejected rhs_evals traj_steps_per_s
//   rhs_per_s ns_per_traj err_ref diff_nholo_ad agree maxrss_kb
// With --reps R each implementation runs R times (interleaved with the others)
// and the fastest run is reported.
#include <omp.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bench_systems.hpp"
#include "eigen_direct.hpp"
#include "host/backends/cpu_ensemble.hpp"

#ifndef NHOLO_BENCH_ODEINT
#define NHOLO_BENCH_ODEINT 0
#endif
#if NHOLO_BENCH_ODEINT
#include <boost/numeric/odeint.hpp>
#endif

using namespace nholo;
using namespace nholo::bench;

namespace {

struct Options {
  std::string system = "coin";
  int64_t n = 1000;
  int threads = 1;
  std::vector<std::string> impls = {"nholo_ad", "nholo_hand", "closed", "odeint", "eigen"};
  int64_t eigen_n = 200;
  double t_end = 10.0;
  int saves = 20;
  int window = 5;
  double rtol = 1e-10, atol = 1e-12;
  int reps = 1;
  int64_t ref_n = 200;
  std::string dump;
  int64_t dump_n = 20;
};

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
long maxrss_kb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

// What one implementation produced.
struct Result {
  std::string impl;
  int64_t n = 0;             // trajectories integrated
  double seconds = 1e300;    // fastest repetition
  int64_t steps = 0, rejected = 0, rhs_evals = 0;
  std::vector<double> y_end;  // [i * N + c], all n trajectories
  int64_t failed = 0;         // status != ok
};

std::vector<double> save_times(const Options& o) {
  std::vector<double> t(o.saves);
  for (int k = 0; k < o.saves; ++k) t[k] = o.t_end * (k + 1) / o.saves;
  return t;
}

template <class Model>
void initial_states(int64_t count, std::vector<double>& y0_soa) {
  constexpr int n = Model::n, N = 2 * n;
  y0_soa.assign(static_cast<size_t>(N) * count, 0.0);
  for (int64_t i = 0; i < count; ++i) {
    Vec<double, n> q, qd;
    initial_state<Model>(i, q, qd);
    for (int c = 0; c < n; ++c) {
      y0_soa[c * count + i] = q[c];
      y0_soa[(n + c) * count + i] = qd[c];
    }
  }
}

// The CPU backend starts a slice from (q, qd, lambda) through Sys::pack; the
// benchmark's own systems (bench_systems.hpp) hold y = (q, qd) and have none.
template <class Sys>
struct Packed : Sys {
  static_assert(Sys::N == 2 * Sys::n, "the benchmark's states are (q, qd)");
  NHOLO_HDI void pack(const Vec<double, Sys::n>& q, const Vec<double, Sys::n>& qd,
                      const Vec<double, Sys::m>& /*lambda0*/, Vec<double, Sys::N>& y) const {
    store_state(q, qd, y);
  }
};

// One run of a nholo System through the run pipeline's CPU backend
// (host/backends/cpu_ensemble.hpp: CpuDevice, CpuEnsemble), window by window;
// q and qdot of every save reach the host slots (in memory: "output off").
template <class Sys>
Result run_nholo_once(const Sys& sys, const IntegratorOptions& opt, int64_t count, int threads,
                      const Options& o) {
  using Model = typename Sys::model_type;
  constexpr int n = Sys::n, m = Sys::m, N = Sys::N;
  std::vector<double> y0;
  initial_states<Model>(count, y0);
  std::vector<double> q0(static_cast<size_t>(n) * count), qd0(q0.size()),
      l0(static_cast<size_t>(m > 0 ? m : 1) * count, 0.0);
  for (int64_t i = 0; i < count; ++i)
    for (int c = 0; c < n; ++c) {
      q0[i * n + c] = y0[c * count + i];
      qd0[i * n + c] = y0[(n + c) * count + i];
    }
  const std::vector<uint8_t> rejected(static_cast<size_t>(count), 0);
  CpuDevice dev(Backend::omp, threads);
  dev.set_save_times(save_times(o));
  EnsembleLayout layout;
  layout.max_count = count;
  layout.window = o.window;
  layout.fields = {"q", "qdot"};
  layout.components = {n, n};
  Packed<Sys> ps;
  static_cast<Sys&>(ps) = sys;
  CpuEnsemble ens("bench", dev, formulation_system(ps, opt), layout);
  ens.start_slice(count, q0.data(), qd0.data(), l0.data(), nullptr, rejected.data(), 0.0);
  int windows = 0, slot = 0, ns = 0;
  const double t0 = now();
  for (int k0 = 0; k0 < o.saves; k0 += o.window, ++windows) {
    slot = windows % 2;
    ns = std::min(o.saves, k0 + o.window) - k0;
    ens.run_window(k0, ns, slot);
    ens.wait(slot);
  }
  Result r;
  r.seconds = now() - t0;
  r.n = count;
  SliceResults res;
  ens.finish_slice(res);
  // the end state: the last save's q and qdot (trajectory-major [(i ns + k) n + c])
  const double* q = ens.slot(slot).fields[0];
  const double* qd = ens.slot(slot).fields[1];
  r.y_end.resize(static_cast<size_t>(N) * count);
  for (int64_t i = 0; i < count; ++i) {
    for (int c = 0; c < n; ++c) {
      r.y_end[i * N + c] = q[(i * ns + ns - 1) * n + c];
      r.y_end[i * N + n + c] = qd[(i * ns + ns - 1) * n + c];
    }
    r.steps += res.steps()[i];
    r.rejected += res.rejected()[i];
    if (res.status()[i] != static_cast<int32_t>(Status::ok)) ++r.failed;
  }
  // DOPRI5 (FSAL): 6 evaluations per attempted step, plus f(t, y) once per
  // trajectory at the start of each window (checked by count_check below)
  r.rhs_evals = 6 * (r.steps + r.rejected) + static_cast<int64_t>(windows) * count;
  return r;
}

// The evaluation-count formula above, checked on a few trajectories with a
// counting wrapper (one thread).
int64_t g_counted = 0;
template <class Sys>
struct Counting : Sys {
  NHOLO_HDI Status operator()(double t, const Vec<double, Sys::N>& y,
                              Vec<double, Sys::N>& dy) const {
    ++g_counted;
    return Sys::operator()(t, y, dy);
  }
  // a system with a per-trajectory cache (prepare_system, kernels/system.hpp) is integrated
  // as its prepared form: count that one's evaluations
  template <class T = Sys, class = std::enable_if_t<has_prepare<T>::value>>
  auto prepare(double t, const Vec<double, Sys::N>& y) const {
    using P = std::decay_t<decltype(std::declval<const T&>().prepare(t, y))>;
    Counting<P> c;
    static_cast<P&>(c) = T::prepare(t, y);
    return c;
  }
};
template <class Sys>
bool count_check(const Sys& sys, const IntegratorOptions& opt, const Options& o) {
  Counting<Sys> cs;
  static_cast<Sys&>(cs) = sys;
  g_counted = 0;
  const Result r = run_nholo_once(cs, opt, std::min<int64_t>(o.n, 16), 1, o);
  return r.rhs_evals == g_counted;
}

#if NHOLO_BENCH_ODEINT
// Boost.odeint: dense-output DOPRI5 per trajectory, closed-form RHS.
template <class Model>
struct OdeintRhs {
  static constexpr int n = Model::n, N = 2 * n;
  using state = std::array<double, N>;
  typename Model::Params p;
  int64_t* evals;
  void operator()(const state& x, state& dxdt, double t) const {
    ++*evals;
    Vec<double, n> q, qd, a;
    for (int c = 0; c < n; ++c) {
      q[c] = x[c];
      qd[c] = x[n + c];
    }
    Hand<Model>::qdd(p, q, qd, t, a);
    for (int c = 0; c < n; ++c) {
      dxdt[c] = qd[c];
      dxdt[n + c] = a[c];
    }
  }
};

template <class Model>
Result run_odeint_once(int64_t count, int threads, const Options& o) {
  namespace ode = boost::numeric::odeint;
  constexpr int n = Model::n, N = 2 * n;
  using state = std::array<double, N>;
  std::vector<double> times = {0.0};
  for (double t : save_times(o)) times.push_back(t);
  std::vector<double> y0;
  initial_states<Model>(count, y0);
  // outputs, as nholo stores them: q, qdot per save, trajectory fastest
  std::vector<double> outq(static_cast<size_t>(o.saves) * n * count),
      outqd(static_cast<size_t>(o.saves) * n * count);
  Result r;
  r.n = count;
  r.y_end.resize(static_cast<size_t>(N) * count);
  int64_t steps = 0, evals = 0;
  const auto p = bench_params<Model>();
  const double t0 = now();
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : steps, evals)
  for (int64_t i = 0; i < count; ++i) {
    state x;
    for (int c = 0; c < N; ++c) x[c] = y0[c * count + i];
    int64_t ev = 0;
    OdeintRhs<Model> rhs{p, &ev};
    auto stepper = ode::make_dense_output(o.atol, o.rtol, ode::runge_kutta_dopri5<state>());
    int k = -1;
    auto observer = [&](const state& s, double) {
      if (k >= 0)
        for (int c = 0; c < n; ++c) {
          outq[(k * n + c) * count + i] = s[c];
          outqd[(k * n + c) * count + i] = s[n + c];
        }
      ++k;
    };
    steps += static_cast<int64_t>(
        ode::integrate_times(stepper, rhs, x, times.begin(), times.end(), 1e-3, observer));
    evals += ev;
    for (int c = 0; c < N; ++c) r.y_end[i * N + c] = x[c];
  }
  r.seconds = now() - t0;
  r.steps = steps;
  r.rhs_evals = evals;
  return r;
}
#endif

// Reference end states: closed form, DOP853, tight tolerances, serial.
template <class Model>
std::vector<double> reference(int64_t count, const Options& o) {
  IntegratorOptions opt;
  opt.method = Method::dop853;
  opt.rtol = 1e-13;
  opt.atol = 1e-15;
  ClosedSystem<Model> sys;
  sys.params = bench_params<Model>();
  Options oo = o;
  return run_nholo_once(sys, opt, count, 1, oo).y_end;
}

// a number for JSON: null when not finite
std::string json_number(double x) {
  if (!std::isfinite(x)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", x);
  return buf;
}

// max over trajectories < count and components of |a - b| / (1 + |b|)
double max_rel_diff(const std::vector<double>& a, const std::vector<double>& b, int64_t count, int N) {
  double m = 0.0;
  for (int64_t i = 0; i < count; ++i)
    for (int c = 0; c < N; ++c) {
      const double d = std::fabs(a[i * N + c] - b[i * N + c]) / (1.0 + std::fabs(b[i * N + c]));
      m = std::isnan(d) ? INFINITY : std::max(m, d);
    }
  return m;
}

template <class Model>
int bench_system(const Options& o) {
  constexpr int n = Model::n, N = 2 * n;
  IntegratorOptions opt;
  opt.method = Method::dopri5;
  opt.rtol = o.rtol;
  opt.atol = o.atol;
  opt.dt = 1e-3;
  const auto p = bench_params<Model>();
  GenericSystem<Model> s_ad;
  s_ad.params = p;
  HandSystem<Model> s_hand;
  s_hand.params = p;
  ClosedSystem<Model> s_closed;
  s_closed.params = p;
  EigenSystem<Model> s_eigen;
  s_eigen.params = p;

  // the evaluation-count formula, checked once per implementation kind
  if (!count_check(s_ad, opt, o) || !count_check(s_closed, opt, o)) {
    std::fprintf(stderr, "bench_ensemble: RHS evaluation count formula does not match the counted calls\n");
    return 4;
  }

  std::map<std::string, Result> best;
  for (int rep = 0; rep < o.reps; ++rep) {
    for (const auto& impl : o.impls) {
      Result r;
      if (impl == "nholo_ad") r = run_nholo_once(s_ad, opt, o.n, o.threads, o);
      else if (impl == "nholo_hand") r = run_nholo_once(s_hand, opt, o.n, o.threads, o);
      else if (impl == "closed") r = run_nholo_once(s_closed, opt, o.n, o.threads, o);
      else if (impl == "eigen") r = run_nholo_once(s_eigen, opt, std::min(o.n, o.eigen_n), o.threads, o);
#if NHOLO_BENCH_ODEINT
      else if (impl == "odeint") r = run_odeint_once<Model>(o.n, o.threads, o);
#endif
      else {
        std::fprintf(stderr, "bench_ensemble: implementation '%s' not available "
                     "(accepted: nholo_ad, nholo_hand, closed, eigen%s)\n", impl.c_str(),
                     NHOLO_BENCH_ODEINT ? ", odeint" : "");
        return 2;
      }
      r.impl = impl;
      auto it = best.find(impl);
      if (it == best.end() || r.seconds < it->second.seconds) best[impl] = std::move(r);
    }
  }

  // accuracy: reference and pairwise agreement on the first trajectories
  const int64_t nref = std::min(o.n, o.ref_n);
  const std::vector<double> ref = reference<Model>(nref, o);
  const Result* ad = best.count("nholo_ad") ? &best["nholo_ad"] : nullptr;
  bool all_agree = true;
  for (const auto& impl : o.impls) {
    const Result& r = best[impl];
    const int64_t k = std::min(nref, r.n);
    const double err = max_rel_diff(r.y_end, ref, k, N);
    const double diff = ad ? max_rel_diff(r.y_end, ad->y_end, std::min(r.n, ad->n), N) : NAN;
    const bool agree = err < 1e-6 && (!ad || diff < 1e-6) && r.failed == 0;
    all_agree = all_agree && agree;
    std::printf(
        "{\"system\": \"%s\", \"impl\": \"%s\", \"n\": %lld, \"threads\": %d, \"t_end\": %g, "
        "\"saves\": %d, \"rtol\": %g, \"atol\": %g, \"seconds\": %.6g, \"steps\": %lld, "
        "\"rejected\": %lld, \"rhs_evals\": %lld, \"traj_steps_per_s\": %.6g, \"rhs_per_s\": %.6g, "
        "\"ns_per_traj\": %.6g, \"ns_per_rhs\": %.6g, \"err_ref\": %s, \"diff_nholo_ad\": %s, "
        "\"agree\": %s, \"failed\": %lld, \"maxrss_kb\": %ld}\n",
        o.system.c_str(), impl.c_str(), static_cast<long long>(r.n), o.threads, o.t_end, o.saves,
        o.rtol, o.atol, r.seconds, static_cast<long long>(r.steps), static_cast<long long>(r.rejected),
        static_cast<long long>(r.rhs_evals), r.steps / r.seconds, r.rhs_evals / r.seconds,
        r.seconds / r.n * 1e9, r.seconds * o.threads / r.rhs_evals * 1e9, json_number(err).c_str(),
        json_number(diff).c_str(),
        agree ? "true" : "false", static_cast<long long>(r.failed), maxrss_kb());
    if (!agree)
      std::fprintf(stderr, "bench_ensemble: %s %s DISAGREES: err_ref %.3g, diff to nholo_ad %.3g, failed %lld\n",
                   o.system.c_str(), impl.c_str(), err, diff, static_cast<long long>(r.failed));
  }
  std::fflush(stdout);

  // initial and end states of the first trajectories, for the scipy baseline
  if (!o.dump.empty() && ad) {
    const int64_t k = std::min({o.dump_n, o.n, nref});
    FILE* f = std::fopen(o.dump.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "bench_ensemble: cannot write %s\n", o.dump.c_str());
      return 2;
    }
    auto vec = [&](const double* v, int len) {
      std::string s = "[";
      char buf[32];
      for (int c = 0; c < len; ++c) {
        std::snprintf(buf, sizeof buf, "%s%.17g", c ? ", " : "", v[c]);
        s += buf;
      }
      return s + "]";
    };
    std::fprintf(f, "{\"system\": \"%s\", \"t_end\": %.17g, \"saves\": %d, \"rtol\": %g, \"atol\": %g,\n",
                 o.system.c_str(), o.t_end, o.saves, o.rtol, o.atol);
    std::fprintf(f, " \"nholo_ad_ns_per_traj_1thread\": %.6g,\n",
                 ad->seconds * o.threads / ad->n * 1e9);
    std::fprintf(f, " \"trajectories\": [\n");
    for (int64_t i = 0; i < k; ++i) {
      Vec<double, n> q, qd;
      initial_state<Model>(i, q, qd);
      double y0[N];
      for (int c = 0; c < n; ++c) {
        y0[c] = q[c];
        y0[n + c] = qd[c];
      }
      std::fprintf(f, "  {\"y0\": %s, \"y_ref\": %s, \"y_nholo\": %s}%s\n", vec(y0, N).c_str(),
                   vec(&ref[i * N], N).c_str(), vec(&ad->y_end[i * N], N).c_str(),
                   i + 1 < k ? "," : "");
    }
    std::fprintf(f, " ]}\n");
    std::fclose(f);
  }
  return all_agree ? 0 : 3;
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) v.push_back(item);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int a = 1; a < argc; ++a) {
    const std::string k = argv[a];
    auto val = [&]() -> std::string {
      if (a + 1 >= argc) {
        std::fprintf(stderr, "bench_ensemble: %s needs a value\n", k.c_str());
        std::exit(2);
      }
      return argv[++a];
    };
    if (k == "--system") o.system = val();
    else if (k == "--n") o.n = std::atoll(val().c_str());
    else if (k == "--threads") o.threads = std::atoi(val().c_str());
    else if (k == "--impls") o.impls = split_commas(val());
    else if (k == "--eigen-n") o.eigen_n = std::atoll(val().c_str());
    else if (k == "--t-end") o.t_end = std::atof(val().c_str());
    else if (k == "--saves") o.saves = std::atoi(val().c_str());
    else if (k == "--window") o.window = std::atoi(val().c_str());
    else if (k == "--rtol") o.rtol = std::atof(val().c_str());
    else if (k == "--atol") o.atol = std::atof(val().c_str());
    else if (k == "--reps") o.reps = std::atoi(val().c_str());
    else if (k == "--ref-n") o.ref_n = std::atoll(val().c_str());
    else if (k == "--dump") o.dump = val();
    else if (k == "--dump-n") o.dump_n = std::atoll(val().c_str());
    else {
      std::fprintf(stderr, "bench_ensemble: unknown option %s (see the comment at the top of "
                   "bench/bench_ensemble.cpp)\n", k.c_str());
      return 2;
    }
  }
  if (o.n < 1 || o.threads < 1 || o.saves < 1 || o.window < 1 || o.reps < 1) {
    std::fprintf(stderr, "bench_ensemble: --n, --threads, --saves, --window, --reps must be >= 1\n");
    return 2;
  }
  if (o.system == "coin") return bench_system<RollingCoin>(o);
  if (o.system == "skate") return bench_system<Skate>(o);
  if (o.system == "appell") return bench_system<Appell>(o);
  std::fprintf(stderr, "bench_ensemble: unknown --system %s (accepted: coin, skate, appell)\n",
               o.system.c_str());
  return 2;
}
