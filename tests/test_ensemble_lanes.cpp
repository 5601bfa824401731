// Tests of kernels/ensemble_lanes.hpp: a window's trajectories integrated W
// at a time in SIMD lanes against the scalar functor (EnsembleWindow::run),
// launch by launch as the CPU backend's scheduler runs them. On models whose
// right-hand side uses no sin, cos, ... of the state, every array is the
// scalar one's to the bit, whatever the width and the order in which lanes
// are refilled, with and without the drift projection and events; on the
// coin (SLEEF's sin and cos) within rounding, as event functions with sin,
// exp or pow (the same bits at every width).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <random>
#include <vector>

#include "host/backends/ensemble_data.hpp"
#include "kernels/ensemble_lanes.hpp"
#include "kernels/formulations.hpp"
#include "models/registry.hpp"
#include "tests/model_defaults.hpp"

using namespace nholo;

namespace {

using nholo_test::bits;

using nholo_test::default_params;

// One slice's state and one window's outputs (q, qdot, qddot, energy),
// trajectory-major as on a CPU backend, integrated over the saves in
// launches of launch_steps (0: whole windows) by the scalar functor or the
// lanes.
template <class Sys>
struct Slice {
  static constexpr int n = Sys::n;
  HostEnsemble<Sys> h;
  std::vector<double> q, qdot, qddot, energy;
  std::vector<int32_t> save_k;
  std::vector<int64_t> interval_start;
  // events (null: none): the table, the slice's crossings counted, records
  // kept and g at the last step's end
  const EventTable* events = nullptr;
  std::vector<int64_t> event_count;
  std::vector<double> event_records, event_g;
  // a tangent system's running estimates of its exponents at the saves
  std::vector<double> lyapunov;

  Slice(const Sys& sys, const IntegratorOptions& opt, const std::vector<double>& q0,
        const std::vector<double>& qd0) {
    const int64_t count = static_cast<int64_t>(q0.size() / n);
    const std::vector<double> l0(static_cast<size_t>(Sys::m > 0 ? Sys::m : 1) * count, 0.0);
    const std::vector<uint8_t> rejected(static_cast<size_t>(count), 0);
    h.start_from_states(sys, count, q0.data(), qd0.data(), l0.data(), rejected.data(), 0.0, opt);
  }

  void add_events(const EventTable* table) {
    events = table;
    const int64_t count = h.count;
    event_count.assign(2 * table->n_events * count, 0);
    event_records.assign(table->records_per_trajectory * count * (1 + 2 * n), NAN);
    event_g.assign(2 * table->n_events * count, NAN);
  }

  // saves [0, ns) of times; W = 0: the scalar functor, else W lanes, the
  // trajectories taken in `order`
  template <Method M, int W>
  void window(const Sys& sys, const IntegratorOptions& opt, const std::vector<double>& times,
              int64_t launch_steps, const std::vector<int64_t>& order) {
    const int64_t count = h.count;
    const int ns = static_cast<int>(times.size());
    q.assign(count * ns * n, 0.0);
    qdot = q;
    qddot = q;
    energy.assign(count * ns, 0.0);
    lyapunov.assign(count * ns * running_exponents<Sys>::value, 0.0);
    save_k.assign(count, 0);
    interval_start.assign(count, -1);
    EnsembleArrays<double> a;
    a.y = h.y.data();
    a.t = h.t.data();
    a.h = h.h.data();
    a.err_prev = h.err_prev.data();
    a.fail_time = h.fail_time.data();
    a.steps = h.steps.data();
    a.rejected = h.rejected.data();
    a.status = h.status.data();
    a.q = q.data();
    a.qdot = qdot.data();
    a.qddot = qddot.data();
    a.energy = energy.data();
    if (!lyapunov.empty()) a.lyapunov_estimate = lyapunov.data();
    if (launch_steps > 0) {
      a.save_k = save_k.data();
      a.interval_start = interval_start.data();
    }
    if (events) {
      a.events = events;
      a.event_count = event_count.data();
      a.event_records = event_records.data();
      a.event_g = event_g.data();
    }
    EnsembleWindow<Sys> w;
    w.sys = sys;
    w.opt = opt;
    w.arr = a;
    w.count = count;
    w.save_times = times.data();
    w.n_saves = ns;
    w.trajectory_major = true;
    std::vector<int64_t> active = order;
    std::vector<uint8_t> finished;
    while (!active.empty()) {
      finished.assign(active.size(), 0);
      if constexpr (W == 0) {
        for (size_t j = 0; j < active.size(); ++j)
          finished[j] = w.template run<M>(active[j], launch_steps);
      } else {
        run_window_lanes<M, W>(w, active.data(), static_cast<int64_t>(active.size()), launch_steps,
                               finished.data());
      }
      size_t kept = 0;
      for (size_t j = 0; j < active.size(); ++j)
        if (!finished[j]) active[kept++] = active[j];
      active.resize(kept);
    }
  }
};

template <class T>
void expect_same_bits(const std::vector<T>& a, const std::vector<T>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t k = 0; k < a.size(); ++k) {
    if constexpr (std::is_same<T, double>::value) {
      ASSERT_EQ(bits(a[k]), bits(b[k])) << what << "[" << k << "]";
    } else {
      ASSERT_EQ(a[k], b[k]) << what << "[" << k << "]";
    }
  }
}

template <class Sys>
void expect_same_slices(const Slice<Sys>& a, const Slice<Sys>& b) {
  expect_same_bits(a.h.y, b.h.y, "y");
  expect_same_bits(a.h.t, b.h.t, "t");
  expect_same_bits(a.h.h, b.h.h, "h");
  expect_same_bits(a.h.err_prev, b.h.err_prev, "err_prev");
  expect_same_bits(a.h.fail_time, b.h.fail_time, "fail_time");
  expect_same_bits(a.h.steps, b.h.steps, "steps");
  expect_same_bits(a.h.rejected, b.h.rejected, "rejected");
  expect_same_bits(a.h.status, b.h.status, "status");
  expect_same_bits(a.q, b.q, "q");
  expect_same_bits(a.qdot, b.qdot, "qdot");
  expect_same_bits(a.qddot, b.qddot, "qddot");
  expect_same_bits(a.energy, b.energy, "energy");
  expect_same_bits(a.lyapunov, b.lyapunov, "lyapunov");
  expect_same_bits(a.event_count, b.event_count, "event_count");
  expect_same_bits(a.event_records, b.event_records, "event_records");
  expect_same_bits(a.event_g, b.event_g, "event_g");
}

// Udwadia & Wanichanon's example 3 (a constraint nonlinear in the rates,
// rank lost where yd = zd = 0): random states, some at rest in y and z
// (singular there: the scalar fallback), one not finite.
struct Example3Ensemble {
  using Model = models::UdwadiaExample3;
  using Sys = UdwadiaKalabaSystem<Model>;
  static constexpr int count = 37;
  Sys sys;
  std::vector<double> q0, qd0;
  explicit Example3Ensemble(DriftControl drift = DriftControl::none) {
    sys.params = default_params<Model>();
    sys.eval.drift = drift;
    std::mt19937_64 rng(17);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (int i = 0; i < count; ++i) {
      for (int c = 0; c < 3; ++c) q0.push_back(u(rng));
      for (int c = 0; c < 3; ++c) qd0.push_back(i % 9 == 4 && c > 0 ? 0.0 : 3.0 * u(rng));
    }
    q0[3 * 20] = NAN;  // trajectory 20: not finite from the start
  }
};

// A block sliding on an inclined plane with Coulomb friction (a position
// constraint, a nonideal force; no sin, cos, ... of the state), each state
// 1e-6 off the plane and its rate off the plane's direction, so that the
// projection moves every trajectory; some slide up and come to rest (the
// friction's sign switches), some start at rest.
struct InclineEnsemble {
  using Model = models::InclineBlock;
  using Sys = UdwadiaKalabaSystem<Model>;
  static constexpr int count = 29;
  Sys sys;
  std::vector<double> q0, qd0;
  explicit InclineEnsemble(DriftControl drift) {
    sys.params = default_params<Model>();
    sys.eval.drift = drift;
    const double a = sys.params.angle;
    std::mt19937_64 rng(5);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (int i = 0; i < count; ++i) {
      const double x = u(rng), s = i % 7 == 3 ? 0.0 : 2.0 * u(rng);
      q0.insert(q0.end(), {x, x * std::tan(a) + 1e-6 * u(rng)});
      qd0.insert(qd0.end(), {s * std::cos(a) + 1e-7 * u(rng), s * std::sin(a)});
    }
  }
};

// The ensemble of Ens with the Lyapunov tangent (kernels/lyapunov.hpp): K
// tangent vectors, reorthonormalised every renormalize_every
template <class Ens, int K>
struct TangentEnsemble {
  using Sys = TangentSystem<typename Ens::Sys, K>;
  static constexpr int count = Ens::count;
  Sys sys;
  std::vector<double> q0, qd0;
  TangentEnsemble(const Ens& e, double renormalize_every) : q0(e.q0), qd0(e.qd0) {
    sys.params = e.sys.params;
    sys.eval = e.sys.eval;
    sys.renormalize_every = renormalize_every;
  }
};

// The ensemble e integrated over 6 saves to t = 3 by the scalar functor (W =
// 0) or in W lanes (the trajectories in reversed order when `reversed`),
// with the events of `events` (null: none).
template <Method M, int W, class Ens>
Slice<typename Ens::Sys> integrate(const Ens& e, int64_t launch_steps, int64_t max_steps,
                                   bool reversed, const EventTable* events = nullptr) {
  IntegratorOptions opt;
  opt.method = M;
  opt.rtol = 1e-9;
  opt.atol = 1e-11;
  opt.max_steps = max_steps;
  if (M == Method::rk4) opt.dt = 0.02;  // 25 steps per save interval
  std::vector<double> times;
  for (int k = 1; k <= 6; ++k) times.push_back(0.5 * k);
  std::vector<int64_t> order(e.count);
  for (int i = 0; i < e.count; ++i) order[i] = i;
  if (reversed) std::reverse(order.begin(), order.end());
  Slice<typename Ens::Sys> slice(e.sys, opt, e.q0, e.qd0);
  if (events) slice.add_events(events);
  slice.template window<M, W>(e.sys, opt, times, launch_steps, order);
  return slice;
}

// The ensemble e integrated by the scalar functor and in W lanes: every
// array the same bits. Returns the lanes' slice.
template <Method M, int W, class Ens>
Slice<typename Ens::Sys> compare_lanes(const Ens& e, int64_t launch_steps, int64_t max_steps,
                                       bool reversed, const EventTable* events = nullptr) {
  const auto scalar = integrate<M, 0>(e, launch_steps, max_steps, false, events);
  auto lanes = integrate<M, W>(e, launch_steps, max_steps, reversed, events);
  expect_same_slices(scalar, lanes);
  return lanes;
}

// An event function from its postfix program (kernels/event_program.hpp)
EventFunction event_function(std::initializer_list<EventInstr> program, EventDirection direction,
                             EventAction action, int max_records) {
  EventFunction f{};
  for (const EventInstr& in : program) f.instr[f.n_instr++] = in;
  f.direction = static_cast<int32_t>(direction);
  f.action = static_cast<int32_t>(action);
  f.max_records = max_records;
  f.subdivisions = 1;
  return f;
}

EventTable event_table(std::initializer_list<EventFunction> functions) {
  EventTable t{};
  for (EventFunction f : functions) {
    f.record_offset = t.records_per_trajectory;
    t.records_per_trajectory += f.max_records;
    t.events[t.n_events++] = f;
  }
  return t;
}

constexpr EventInstr x_{EventOp::coord, 0, 0.0};  // the block's x
constexpr EventInstr xd_{EventOp::rate, 0, 0.0};  // its rate
EventInstr constant(double c) {
  return {EventOp::constant, 0, c};
}
EventInstr op(EventOp o) {
  return {o, 0, 0.0};
}

// The block's events for every lane at once: a stop where x passes -10
// downwards (the blocks slide down: about half get there before t = 3), and records where x^2
// passes 1/4 and where sign(xd) (x - 0.2) changes sign (at x = 0.2, and where a block sliding up
// comes to rest)
EventTable arithmetic_events() {
  return event_table({
      event_function({x_, x_, op(EventOp::mul), constant(0.25), op(EventOp::sub)},
                     EventDirection::both, EventAction::record, 3),
      event_function(
          {xd_, op(EventOp::sign), x_, constant(0.2), op(EventOp::sub), op(EventOp::mul)},
          EventDirection::both, EventAction::record, 2),
      event_function({x_, constant(10.0), op(EventOp::add)}, EventDirection::down,
                     EventAction::stop, 1),
  });
}

// ... and with sin, exp and pow: sin(6 x) exp(xd / 10), (x^2 + 1)^1.5 - 1.2,
// the stop where x passes -10
EventTable transcendental_events() {
  return event_table({
      event_function({constant(6.0), x_, op(EventOp::mul), op(EventOp::sin), constant(0.1), xd_,
                      op(EventOp::mul), op(EventOp::exp), op(EventOp::mul)},
                     EventDirection::both, EventAction::record, 4),
      event_function({x_, x_, op(EventOp::mul), constant(1.0), op(EventOp::add), constant(1.5),
                      op(EventOp::pow), constant(1.2), op(EventOp::sub)},
                     EventDirection::both, EventAction::record, 2),
      event_function({x_, constant(10.0), op(EventOp::add)}, EventDirection::down,
                     EventAction::stop, 1),
  });
}

template <Method M, int W>
void compare_example3(int64_t launch_steps, int64_t max_steps, bool reversed,
                      DriftControl drift = DriftControl::none) {
  const auto lanes =
      compare_lanes<M, W>(Example3Ensemble(drift), launch_steps, max_steps, reversed);
  // the ensemble is heterogeneous: some trajectories ended early
  int ok = 0, ended = 0;
  for (int32_t s : lanes.h.status) (s == 0 ? ok : ended) += 1;
  EXPECT_GT(ok, 0);
  EXPECT_GT(ended, 0);
}

TEST(EnsembleLanes, WholeWindowsGiveTheScalarFunctorsBits) {
  compare_example3<Method::dopri5, 8>(0, 100000, false);
  compare_example3<Method::dop853, 8>(0, 100000, false);
  compare_example3<Method::dopri5, 4>(0, 100000, true);
}

TEST(EnsembleLanes, LaunchesOfAFewStepsAndTrajectoriesOutOfStepsGiveTheScalarBits) {
  // launches of 7 steps (lanes leave and are refilled mid-interval) and a
  // step limit per interval that some trajectories reach (status max_steps)
  compare_example3<Method::dopri5, 8>(7, 60, false);
  compare_example3<Method::dop853, 8>(5, 40, true);
  compare_example3<Method::dopri5, 1>(7, 60, true);
}

TEST(EnsembleLanes, TheDriftProjectionInLanesGivesTheScalarFunctorsBits) {
  // example 3: velocity rows only, whose Gram matrix loses rank at rest in y
  // and z (those lanes' corrections by the scalar pseudoinverse)
  compare_example3<Method::dopri5, 8>(0, 100000, false, DriftControl::project);
  compare_example3<Method::dop853, 4>(7, 60, true, DriftControl::project);
  // the block on the plane: position and velocity rows
  const auto projected =
      compare_lanes<Method::dopri5, 8>(InclineEnsemble(DriftControl::project), 0, 100000, false);
  compare_lanes<Method::dop853, 4>(InclineEnsemble(DriftControl::project), 5, 40, true);
  // the projection moved the states: the plane holds to rounding with it,
  // not without it
  const auto free =
      compare_lanes<Method::dopri5, 8>(InclineEnsemble(DriftControl::none), 0, 100000, false);
  const double tan_a = std::tan(InclineEnsemble(DriftControl::none).sys.params.angle);
  double worst_projected = 0, worst_free = 0;
  constexpr int count = InclineEnsemble::count;  // the state: y[c count + i], c = x, y, xd, yd
  for (int i = 0; i < count; ++i) {
    const auto& y = projected.h.y;
    const auto& yf = free.h.y;
    EXPECT_EQ(projected.h.status[i], 0) << i;
    worst_projected = std::max(worst_projected, std::fabs(y[count + i] - tan_a * y[i]));
    worst_free = std::max(worst_free, std::fabs(yf[count + i] - tan_a * yf[i]));
  }
  EXPECT_LT(worst_projected, 1e-13);
  EXPECT_GT(worst_free, 1e-7);
}

TEST(EnsembleLanes, FixedStepRk4InLanesGivesTheScalarFunctorsBits) {
  // whole windows; launches of a few steps with a step limit per interval
  // below the interval's 25 steps (every trajectory still going at the
  // limit ends with max_steps)
  compare_example3<Method::rk4, 8>(0, 100000, false);
  const auto limited = compare_lanes<Method::rk4, 4>(Example3Ensemble(), 7, 20, true);
  int at_limit = 0;
  for (int32_t s : limited.h.status) at_limit += s == static_cast<int32_t>(Status::max_steps);
  EXPECT_GT(at_limit, Example3Ensemble::count / 2);
  // the drift projection after each step: example 3's velocity rows, the
  // block's position and velocity rows
  compare_example3<Method::rk4, 8>(5, 100000, true, DriftControl::project);
  compare_lanes<Method::rk4, 4>(InclineEnsemble(DriftControl::project), 3, 100000, false);
}

// Events in the lanes: the end values of the event functions evaluated on
// the lanes (kernels/lane_events.hpp), the rest of each step's events lane by
// lane. Arithmetic and sign: the scalar functor's bits, counts, records and
// end values included, for every method, with and without the projection,
// in launches of a few steps with a step limit.
TEST(EnsembleLanes, EventsInLanesGiveTheScalarFunctorsBits) {
  const EventTable events = arithmetic_events();
  const InclineEnsemble free(DriftControl::none), projected(DriftControl::project);
  const auto a = compare_lanes<Method::dopri5, 4>(free, 0, 100000, false, &events);
  compare_lanes<Method::dop853, 8>(free, 7, 60, true, &events);
  compare_lanes<Method::rk4, 4>(free, 5, 100000, true, &events);
  compare_lanes<Method::dopri5, 8>(projected, 7, 60, false, &events);
  compare_lanes<Method::dop853, 2>(projected, 0, 100000, true, &events);
  compare_lanes<Method::rk4, 1>(projected, 0, 100000, false, &events);
  // the ensemble is heterogeneous: stopped (x = -10), whole, with records
  int stopped = 0, whole = 0;
  for (int32_t st : a.h.status) (st == static_cast<int32_t>(Status::event) ? stopped : whole) += 1;
  EXPECT_GT(stopped, 0);
  EXPECT_GT(whole, 0);
  constexpr int count = InclineEnsemble::count;
  for (int e = 0; e < 2; ++e)
    EXPECT_GT(*std::max_element(a.event_count.begin() + e * count,
                                a.event_count.begin() + (e + 1) * count),
              0)
        << "event " << e;
}

// With sin, exp and pow in the event functions (SLEEF's on the lanes,
// glibc's in the scalar functor): the same bits at every width and lane
// order, and the scalar functor's crossings to rounding.
TEST(EnsembleLanes, EventFunctionsOfSinExpAndPowGiveTheSameBitsAtEveryWidth) {
  const EventTable events = transcendental_events();
  const InclineEnsemble e(DriftControl::project);
  const auto one = integrate<Method::dopri5, 1>(e, 0, 100000, false, &events);
  expect_same_slices(one, integrate<Method::dopri5, 2>(e, 7, 100000, true, &events));
  expect_same_slices(one, integrate<Method::dopri5, 4>(e, 0, 100000, true, &events));
  expect_same_slices(one, integrate<Method::dopri5, 8>(e, 5, 100000, false, &events));
  const auto scalar = integrate<Method::dopri5, 0>(e, 0, 100000, false, &events);
  expect_same_bits(one.h.status, scalar.h.status, "status");
  expect_same_bits(one.event_count, scalar.event_count, "event_count");
  int64_t crossings = 0;
  for (int64_t c : one.event_count) crossings += c;
  EXPECT_GT(crossings, InclineEnsemble::count);
  for (size_t k = 0; k < one.event_records.size(); ++k) {
    if (std::isnan(scalar.event_records[k])) {
      EXPECT_TRUE(std::isnan(one.event_records[k])) << k;
      continue;
    }
    EXPECT_NEAR(one.event_records[k], scalar.event_records[k],
                1e-9 * (1.0 + std::fabs(scalar.event_records[k])))
        << k;
  }
}

TEST(EnsembleLanes, TheRollingCoinInLanesAgreesWithTheScalarFunctorToRounding) {
  using Model = models::RollingCoin;
  using Sys = UdwadiaKalabaSystem<Model>;
  Sys sys;
  sys.params = default_params<Model>();
  constexpr int count = 20;
  std::mt19937_64 rng(23);
  std::uniform_real_distribution<double> u(0.5, 2.0);
  std::vector<double> q0, qd0;
  for (int i = 0; i < count; ++i) {
    const double th = u(rng), phid = u(rng), R = sys.params.radius;
    q0.insert(q0.end(), {0.0, 0.0, 0.0, th});
    qd0.insert(qd0.end(), {R * phid * std::sin(th), R * phid * std::cos(th), phid, u(rng)});
  }
  IntegratorOptions opt;
  opt.rtol = 1e-10;
  opt.atol = 1e-12;
  const std::vector<double> times = {1.0, 2.0, 3.0};
  std::vector<int64_t> order(count);
  for (int i = 0; i < count; ++i) order[i] = i;
  Slice<Sys> scalar(sys, opt, q0, qd0), lanes(sys, opt, q0, qd0);
  scalar.window<Method::dopri5, 0>(sys, opt, times, 0, order);
  lanes.window<Method::dopri5, 8>(sys, opt, times, 0, order);
  for (size_t k = 0; k < scalar.q.size(); ++k)
    EXPECT_NEAR(lanes.q[k], scalar.q[k], 1e-9 * (1.0 + std::fabs(scalar.q[k]))) << k;
  for (int i = 0; i < count; ++i) {
    EXPECT_EQ(lanes.h.status[i], 0) << i;
    EXPECT_NEAR(double(lanes.h.steps[i]), double(scalar.h.steps[i]), 2.0) << i;
  }
}

// The Lyapunov tangent in the lanes (kernels/lane_tangent.hpp): the state
// and K tangent vectors on dual numbers over the lanes, reorthonormalised
// every 0.25 (about every few steps). Every array the scalar functor's bits,
// the running estimates included: example 3 (some trajectories lose the
// constraint's rank at rest: the scalar fallback; one not finite) and the
// block with the projection, every method, whole windows and launches of a
// few steps with a step limit.
TEST(EnsembleLanes, LyapunovTangentsInLanesGiveTheScalarFunctorsBits) {
  const TangentEnsemble<Example3Ensemble, 2> ex3(Example3Ensemble(), 0.25);
  const auto a = compare_lanes<Method::dopri5, 8>(ex3, 0, 100000, false);
  compare_lanes<Method::dop853, 4>(ex3, 7, 60, true);
  const TangentEnsemble<InclineEnsemble, 1> block(InclineEnsemble(DriftControl::project), 0.25);
  const auto b = compare_lanes<Method::dopri5, 4>(block, 5, 100000, true);
  compare_lanes<Method::rk4, 8>(block, 0, 100000, false);
  // the estimates are numbers where the trajectories went on, NaN where not
  int estimates = 0, ended = 0;
  for (double l : a.lyapunov) (std::isfinite(l) ? estimates : ended) += 1;
  EXPECT_GT(estimates, Example3Ensemble::count);
  EXPECT_GT(ended, 0);
  for (double l : b.lyapunov) EXPECT_TRUE(std::isfinite(l));
}

}  // namespace
