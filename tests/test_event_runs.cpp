// Events in a run ([[events]], kernels/trajectory_events.hpp), checked
// against the rolling coin's closed form: its heading turns uniformly,
// theta(t) = theta0 + Omega t with Omega = theta_dot(0) (docs/physics.md),
// so sin(theta) crosses zero exactly at t_k = (k pi - theta0) / Omega, and
// theta reaches a value c at (c - theta0) / Omega. The expected times come
// from the initial states in the file, not from the integration.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "host/io/h5.hpp"
#include "tests/coin_config.hpp"
#include "tests/nholo_cli.hpp"

namespace fs = std::filesystem;

namespace {

using nholo_test::run_nholo;
using nholo_test::write_file;

constexpr double kPi = 3.14159265358979323846;
constexpr int kTheta = 3;  // the coin's coordinates: x, y, phi, theta
constexpr int kN = 4;

fs::path temp_dir(const std::string& name) {
  return nholo_test::temp_dir("nholo_events", name);
}

// Coins with headings theta0 ~ U(0, 2 pi) turning at Omega ~ U(1, 3), t in
// [0, 20]; RK4 with dt = 0.01 under the drift projection (its interpolant's
// end slope is its last stage, not f at the projected end: integrate.hpp).
nholo_test::CoinConfig turning_coins(const std::string& method, const std::string& events) {
  nholo_test::CoinConfig c = nholo_test::spinning_coins();
  c.formulations = {"udwadia_kalaba"};
  c.t_end = 20.0;
  c.save_every = 5.0;
  c.use_integrator(method, 1e-10, 1e-12);
  c.size = 200;
  c.seed = 7;
  c.fields = std::vector<std::string>{"q"};
  c.extra = events;
  if (method == "rk4") {
    c.dt = 0.01;
    c.drift = "project";
  }
  return c;
}

struct EventData {
  std::vector<int64_t> count, undersampled;
  std::vector<double> time, q;  // [i][r], [i][r][c]
  int64_t max_records = 0;
};

struct RunData {
  std::vector<double> theta0, omega, fail_time;
  std::vector<int32_t> status;
  EventData ev;
};

// The turning coins (method, events) run in dir, writing out.h5; a failure
// with the run's output when it fails.
::testing::AssertionResult ran_turning_coins(const fs::path& dir, const std::string& method,
                                             const std::string& events) {
  write_file(dir / "c.toml", turning_coins(method, events).text());
  const auto r = run_nholo("run c.toml -q", dir);
  if (r.code == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "exit status " << r.code << ":\n" << r.output;
}

RunData read_run(const fs::path& file, const std::string& event) {
  const auto f = nholo::h5::File::open_ro(file.string());
  const auto r = f.root();
  RunData d;
  const auto q0 = r.open_dataset("initial/q0").read<double>();
  const auto qd0 = r.open_dataset("initial/qdot0").read<double>();
  for (size_t i = 0; i < q0.size() / kN; ++i) {
    d.theta0.push_back(q0[i * kN + kTheta]);
    d.omega.push_back(qd0[i * kN + kTheta]);
  }
  d.status = r.open_dataset("udwadia_kalaba/status").read<int32_t>();
  d.fail_time = r.open_dataset("udwadia_kalaba/fail_time").read<double>();
  const std::string g = "udwadia_kalaba/events/" + event + "/";
  d.ev.count = r.open_dataset(g + "count").read<int64_t>();
  d.ev.undersampled = r.open_dataset(g + "undersampled_steps").read<int64_t>();
  const auto td = r.open_dataset(g + "time");
  d.ev.time = td.read<double>();
  d.ev.max_records = static_cast<int64_t>(td.dims()[1]);
  d.ev.q = r.open_dataset(g + "q").read<double>();
  return d;
}

// The zeros of sin(theta0 + Omega t) in (0, t_end], in order.
std::vector<double> sine_zeros(double theta0, double omega, double t_end) {
  std::vector<double> t;
  for (int k = static_cast<int>(std::ceil(theta0 / kPi)); (k * kPi - theta0) / omega <= t_end; ++k)
    if (k * kPi - theta0 > 0) t.push_back((k * kPi - theta0) / omega);
  return t;
}

std::string sine_event(int max_records) {
  return "[[events]]\nname = \"half_turn\"\nexpr = \"sin(theta)\"\nmax_records = " +
         std::to_string(max_records) + "\n";
}

// Every crossing of sin(theta) found once, in order, at (k pi - theta0) /
// Omega within 1e-10, its state there on the crossing (sin(theta) ~ 0).
void expect_every_half_turn(const RunData& d, double t_end) {
  int64_t total = 0;
  double worst = 0;
  for (size_t i = 0; i < d.theta0.size(); ++i) {
    const std::vector<double> want = sine_zeros(d.theta0[i], d.omega[i], t_end);
    ASSERT_EQ(d.ev.count[i], static_cast<int64_t>(want.size())) << "trajectory " << i;
    EXPECT_EQ(d.ev.undersampled[i], 0) << "trajectory " << i;  // no warning where all are found
    const int64_t stored = std::min<int64_t>(d.ev.count[i], d.ev.max_records);
    for (int64_t r = 0; r < d.ev.max_records; ++r) {
      const double t = d.ev.time[i * d.ev.max_records + r];
      if (r >= stored) {
        EXPECT_TRUE(std::isnan(t)) << "trajectory " << i << " record " << r;
        continue;
      }
      EXPECT_NEAR(t, want[r], 1e-10) << "trajectory " << i << " record " << r;
      worst = std::max(worst, std::fabs(t - want[r]));
      const double theta = d.ev.q[(i * d.ev.max_records + r) * kN + kTheta];
      EXPECT_NEAR(std::sin(theta), 0.0, 1e-9) << "trajectory " << i << " record " << r;
    }
    total += d.ev.count[i];
  }
  std::printf("%zu coins: %lld crossings of sin(theta) in t <= %g, worst time error %.2e\n",
              d.theta0.size(), static_cast<long long>(total), t_end, worst);
  EXPECT_GT(total, static_cast<int64_t>(5 * d.theta0.size()));
}

}  // namespace

TEST(EventRuns, EveryHalfTurnOfTheCoinIsFoundOnceAtItsTimeWithDopri5Dop853AndRk4) {
  for (const std::string method : {"dopri5", "dop853", "rk4"}) {
    const fs::path dir = temp_dir(method);
    ASSERT_TRUE(ran_turning_coins(dir, method, sine_event(100)));
    SCOPED_TRACE(method);
    const RunData d = read_run(dir / "out.h5", "half_turn");
    expect_every_half_turn(d, 20.0);
    for (int32_t s : d.status) EXPECT_EQ(s, 0);
    fs::remove_all(dir);
  }
}

// A tangency pair: sin(theta) - c with c = 0.9999 crosses zero twice within
// 2 acos(c) / Omega (0.009-0.03 s) around each maximum of sin(theta), inside
// one DOP853 step, where g is negative at both ends of the step. With no
// subdivision of the step, the pair is found from the cubic through g's
// values and rates at the step's ends (sampled where it is stationary): every
// crossing, in order, at (asin(c) + 2 pi k - theta0) / Omega and
// (pi - asin(c) + 2 pi k - theta0) / Omega.
// With RK4 (turning_coins: dt = 0.01, projected) the same pairs, 0.009 s
// apart or more: some inside one step, found from its last stage as the end
// slope.
TEST(EventRuns, TangencyPairsInsideOneStepAreFoundWithoutSubdivisions) {
  const double c = 0.9999;
  for (const std::string method : {"dop853", "rk4"}) {
    SCOPED_TRACE(method);
    const fs::path dir = temp_dir("tangency_" + method);
    ASSERT_TRUE(ran_turning_coins(dir, method,
                                  "[[events]]\nname = \"near_top\"\nexpr = "
                                  "\"sin(theta) - 0.9999\"\nsubdivisions = 1\n"));
    const RunData d = read_run(dir / "out.h5", "near_top");
    int64_t total = 0;
    double worst = 0, closest = 1e300;
    for (size_t i = 0; i < d.theta0.size(); ++i) {
      std::vector<double> want;
      for (int k = -2; k < 20; ++k)
        for (const double a : {std::asin(c), kPi - std::asin(c)}) {
          const double t = (a + 2 * kPi * k - d.theta0[i]) / d.omega[i];
          if (t > 0 && t <= 20.0) want.push_back(t);
        }
      std::sort(want.begin(), want.end());
      ASSERT_EQ(d.ev.count[i], static_cast<int64_t>(want.size())) << "trajectory " << i;
      // the pairs' dips are where the cubic holds: not taken for undersampling
      EXPECT_EQ(d.ev.undersampled[i], 0) << "trajectory " << i;
      for (size_t k = 0; k < want.size() && k < static_cast<size_t>(d.ev.max_records); ++k) {
        const double t = d.ev.time[i * d.ev.max_records + k];
        EXPECT_NEAR(t, want[k], 1e-9) << "trajectory " << i << " record " << k;
        worst = std::max(worst, std::fabs(t - want[k]));
        if (k % 2 == 1) closest = std::min(closest, want[k] - want[k - 1]);
      }
      total += d.ev.count[i];
    }
    std::printf(
        "%zu coins: %lld crossings of sin(theta) - %g (pairs %.3g s apart or more), worst "
        "time error %.2e\n",
        d.theta0.size(), static_cast<long long>(total), c, closest, worst);
    EXPECT_GT(total, static_cast<int64_t>(2 * d.theta0.size()));
    fs::remove_all(dir);
  }
}

// g = sin(1000 t) changes far faster than the coins' DOPRI5 steps: one
// sample per step finds 756 to 1426 of its 6366 crossings in (0, 20] (the
// zeros k pi / 1000) on 8 coins; the steps across which it changed
// faster than its samples are counted per trajectory and the run's log and
// `nholo stats` warn. With enough subdivisions to follow it, every crossing
// is found and nothing is said.
TEST(EventRuns, CrossingsLikelyMissedAreCountedAndWarnedAbout) {
  const fs::path dir = temp_dir("undersampled");
  const int64_t zeros = static_cast<int64_t>(std::floor(20.0 * 1000.0 / kPi));
  for (const int parts : {1, 64}) {
    SCOPED_TRACE(parts);
    nholo_test::CoinConfig c = turning_coins("dopri5", "[[events]]\nname = \"fast\"\nexpr = "
                                                       "\"sin(1000 * t)\"\nmax_records = 1\n"
                                                       "subdivisions = " +
                                                           std::to_string(parts) + "\n");
    c.size = 8;
    fs::remove(dir / "out.h5");
    write_file(dir / "c.toml", c.text());
    const auto r = run_nholo("run c.toml", dir);
    ASSERT_EQ(r.code, 0) << r.output;
    const RunData d = read_run(dir / "out.h5", "fast");
    const auto st = run_nholo("stats out.h5", dir);
    ASSERT_EQ(st.code, 0) << st.output;
    const bool warned_run = r.output.find("warning: event fast") != std::string::npos;
    const bool warned_stats = st.output.find("warning: event fast") != std::string::npos;
    for (size_t i = 0; i < d.ev.count.size(); ++i) {
      if (parts == 1) {
        EXPECT_LT(d.ev.count[i], zeros / 2) << i;
        EXPECT_GT(d.ev.undersampled[i], 0) << i;
      } else {
        EXPECT_EQ(d.ev.count[i], zeros) << i;
        EXPECT_EQ(d.ev.undersampled[i], 0) << i;
      }
    }
    EXPECT_EQ(warned_run, parts == 1) << r.output;
    EXPECT_EQ(warned_stats, parts == 1) << st.output;
  }
  fs::remove_all(dir);
}

// max_records smaller than the crossings: count is the true number, the
// first ones are stored, the rest is NaN; the same records as a run that
// keeps them all.
TEST(EventRuns, CrossingsPastMaxRecordsAreCountedNotStored) {
  const fs::path dir = temp_dir("max_records");
  ASSERT_TRUE(ran_turning_coins(dir, "dopri5", sine_event(3)));
  const RunData d = read_run(dir / "out.h5", "half_turn");
  ASSERT_EQ(d.ev.max_records, 3);
  expect_every_half_turn(d, 20.0);
  fs::remove_all(dir);
}

// action = "stop": theta rising through 4 ends the trajectory there
// (status event, fail_time the crossing time within 1e-10, the state there
// recorded); coins that start past 4 never cross it and run to the end.
TEST(EventRuns, AStopEventEndsItsTrajectoryAtTheCrossingAndTheOthersGoOn) {
  const fs::path dir = temp_dir("stop");
  const std::string ev =
      "[[events]]\nname = \"heading_four\"\nexpr = \"theta - 4\"\ndirection = \"up\"\n"
      "action = \"stop\"\nmax_records = 1\n";
  ASSERT_TRUE(ran_turning_coins(dir, "dopri5", ev));
  const RunData d = read_run(dir / "out.h5", "heading_four");
  int stopped = 0, ran = 0;
  for (size_t i = 0; i < d.theta0.size(); ++i) {
    const double t_hit = (4.0 - d.theta0[i]) / d.omega[i];
    if (d.theta0[i] < 4.0 && t_hit <= 20.0) {
      ++stopped;
      EXPECT_EQ(d.status[i], 7) << i;  // Status::event
      EXPECT_NEAR(d.fail_time[i], t_hit, 1e-10) << i;
      EXPECT_EQ(d.ev.count[i], 1) << i;
      EXPECT_NEAR(d.ev.time[i], t_hit, 1e-10) << i;
      EXPECT_NEAR(d.ev.q[i * kN + kTheta], 4.0, 1e-10) << i;
    } else {
      ++ran;
      EXPECT_EQ(d.status[i], 0) << i;
      EXPECT_EQ(d.ev.count[i], 0) << i;
      EXPECT_TRUE(std::isnan(d.ev.time[i])) << i;
    }
  }
  std::printf("%d coins stopped at theta = 4, %d ran to t = 20\n", stopped, ran);
  EXPECT_GT(stopped, 50);
  EXPECT_GT(ran, 20);
  fs::remove_all(dir);
}

// A stop event exactly at a save's time (t = 10, saves every 5) keeps that
// save: the state there, the event's record; the saves after it are NaN.
// Before, the save at the event's time was NaN too (a stop at t_end lost
// every trajectory's last save).
TEST(EventRuns, AStopAtASaveTimeKeepsThatSave) {
  const fs::path dir = temp_dir("stop_at_save");
  const std::string ev =
      "[[events]]\nname = \"at_ten\"\nexpr = \"t - 10\"\naction = \"stop\"\n"
      "max_records = 1\n";
  ASSERT_TRUE(ran_turning_coins(dir, "dopri5", ev));
  const RunData d = read_run(dir / "out.h5", "at_ten");
  const auto q = nholo::h5::File::open_ro((dir / "out.h5").string())
                     .root()
                     .open_dataset("udwadia_kalaba/q")
                     .read<double>();
  const size_t n_saves = 5;  // t = 0, 5, 10, 15, 20
  ASSERT_EQ(q.size(), d.status.size() * n_saves * kN);
  for (size_t i = 0; i < d.status.size(); ++i) {
    EXPECT_EQ(d.status[i], 7) << i;  // Status::event
    EXPECT_EQ(d.fail_time[i], 10.0) << i;
    ASSERT_EQ(d.ev.count[i], 1) << i;
    for (size_t k = 0; k < n_saves; ++k)
      for (size_t c = 0; c < static_cast<size_t>(kN); ++c) {
        const double v = q[(i * n_saves + k) * kN + c];
        if (k <= 2)
          EXPECT_TRUE(std::isfinite(v)) << i << " save " << k;
        else
          EXPECT_TRUE(std::isnan(v)) << i << " save " << k;
      }
    for (size_t c = 0; c < static_cast<size_t>(kN); ++c)
      EXPECT_EQ(q[(i * n_saves + 2) * kN + c], d.ev.q[i * kN + c]) << i;
  }
  // stats at the last save (t = 20, after every stop) says there is nothing
  // there (it printed "mean nan std nan min nan max nan")
  const auto st = run_nholo("stats out.h5", dir);
  EXPECT_EQ(st.code, 0) << st.output;
  EXPECT_NE(st.output.find("no trajectory has a value there"), std::string::npos) << st.output;
  EXPECT_EQ(st.output.find("mean nan"), std::string::npos) << st.output;
  fs::remove_all(dir);
}

// The tangency rule in runs (docs/events.md "How crossings are found"):
// (t - 10)^2, whose zero is a save time that every trajectory's steps land
// on, and (t - 0.5)^2, whose zero falls inside steps, touch zero without
// changing sign: no trajectory counts a crossing (before, 53 of 256 skates
// counted (t - 0.5)^2 twice where a step landed on 0.5 and the cubic's
// stationary sample fell on it too). t - 10 crosses at the landed step end:
// once, at exactly t = 10, for every trajectory.
TEST(EventRuns, ATangencyIsCountedTheSameWayForEveryTrajectory) {
  const fs::path dir = temp_dir("tangency");
  const std::string ev =
      "[[events]]\nname = \"touch_at_save\"\nexpr = \"(t - 10)^2\"\nmax_records = 2\n"
      "[[events]]\nname = \"touch\"\nexpr = \"(t - 0.5)^2\"\nmax_records = 2\n"
      "[[events]]\nname = \"through\"\nexpr = \"t - 10\"\nmax_records = 2\n";
  for (const char* method : {"dopri5", "dop853", "rk4"}) {
    SCOPED_TRACE(method);
    fs::remove(dir / "out.h5");
    ASSERT_TRUE(ran_turning_coins(dir, method, ev));
    for (const char* name : {"touch_at_save", "touch"}) {
      const RunData d = read_run(dir / "out.h5", name);
      for (size_t i = 0; i < d.ev.count.size(); ++i) EXPECT_EQ(d.ev.count[i], 0) << name << " " << i;
    }
    const RunData d = read_run(dir / "out.h5", "through");
    for (size_t i = 0; i < d.ev.count.size(); ++i) {
      ASSERT_EQ(d.ev.count[i], 1) << i;
      EXPECT_EQ(d.ev.time[i * d.ev.max_records], 10.0) << i;
    }
  }
  fs::remove_all(dir);
}

// The records do not depend on how the work is cut: one thread or two,
// slices of 1024 or the whole ensemble, launches of 1 step or the default.
TEST(EventRuns, RecordsAreTheSameBitsHoweverTheRunIsCut) {
  const fs::path dir = temp_dir("cuts");
  nholo_test::CoinConfig c = turning_coins("dopri5", sine_event(8));
  c.size = 2500;
  c.t_end = 6.0;
  c.save_every = 1.0;
  write_file(dir / "c.toml", c.text());
  const std::vector<std::string> runs = {
      "run c.toml -q --set output.path=a.h5 --set backend.threads=1",
      "run c.toml -q --set output.path=b.h5 --set backend.threads=2 --set "
      "backend.steps_per_launch=1 "
      "--set output.memory_budget_mb=2"};
  for (const auto& args : runs) {
    const auto r = run_nholo(args, dir);
    ASSERT_EQ(r.code, 0) << args << "\n" << r.output;
  }
  const auto fa = nholo::h5::File::open_ro((dir / "a.h5").string());
  const auto fb = nholo::h5::File::open_ro((dir / "b.h5").string());
  const std::string g = "udwadia_kalaba/events/half_turn/";
  EXPECT_EQ(fa.root().open_dataset(g + "count").read<int64_t>(),
            fb.root().open_dataset(g + "count").read<int64_t>());
  for (const char* name : {"time", "q", "qdot"}) {
    const auto a = fa.root().open_dataset(g + name).read<double>();
    const auto b = fb.root().open_dataset(g + name).read<double>();
    ASSERT_EQ(a.size(), b.size()) << name;
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(double)), 0) << name;
  }
  EXPECT_GT(fa.root().open_dataset("udwadia_kalaba/events/half_turn/count").dims()[0], 2048u);
  fs::remove_all(dir);
}

// A model file's events (examples/models/rolling_disk: the heading phi turns
// uniformly, the rolling angle theta accelerates uniformly, theta'' = tau /
// (I + m R^2)), through the plugin's C interface, on two formulations: the
// zeros of sin(phi) at (k pi - phi0) / phi_dot; the zeros of x_dot = R
// theta_dot cos(phi), at phi = pi/2 + k pi, where the state is not a cubic
// of t along a step (the interpolant alone is off by about 2e-8 with the
// example's DOP853 steps: the crossings are refined on the method's
// solution); and a stop where theta reaches theta0 + 2 (the root of a
// quadratic in t); all within 1e-10.
TEST(EventRuns, AModelFilesEventsAreFoundThroughItsPlugin) {
  const fs::path dir = temp_dir("model_file");
  const fs::path src = fs::path(NHOLO_SOURCE_DIR) / "examples" / "models";
  // "heading" declared by the model file (its plugin is the example's: the
  // events are not part of the compiled model), the others by the run
  std::ifstream model_in(src / "rolling_disk.model.toml");
  std::stringstream model_text;
  model_text << model_in.rdbuf();
  write_file(dir / "rolling_disk.model.toml",
             model_text.str() +
                 "\n[[events]]\nname = \"heading\"\nexpr = \"sin(phi)\"\nmax_records = 4\n");
  std::ifstream in(src / "rolling_disk.toml");
  std::stringstream text;
  text << in.rdbuf();
  write_file(dir / "disk.toml",
             text.str() +
                 "\n[[events]]\nname = \"across\"\nexpr = \"x_dot\"\nmax_records = 4\n"
                 "[[events]]\nname = \"two_radians\"\nexpr = \"theta - 2\"\n"
                 "direction = \"up\"\naction = \"stop\"\n");
  // the ensemble's theta0 = 0 (the example's), so "theta - 2" is theta0 + 2
  const std::string env = "NHOLO_CACHE_DIR='" + std::string(NHOLO_TEST_PLUGIN_CACHE) + "'";
  const auto r = run_nholo("run disk.toml -q --set output.path=disk.h5", dir, env);
  ASSERT_EQ(r.code, 0) << r.output;
  const double m = 1.0, R = 0.3, I = m * R * R / 2, tau = 0.05, alpha = tau / (I + m * R * R);
  const auto f = nholo::h5::File::open_ro((dir / "disk.h5").string());
  const auto root = f.root();
  const auto q0 = root.open_dataset("initial/q0").read<double>();
  const auto qd0 = root.open_dataset("initial/qdot0").read<double>();
  const size_t n_traj = q0.size() / kN;
  double worst = 0;
  int stopped = 0;
  for (const char* form : {"udwadia_kalaba", "lagrange_multiplier"}) {
    const std::string g = std::string(form) + "/events/";
    const auto count = root.open_dataset(g + "heading/count").read<int64_t>();
    const auto time = root.open_dataset(g + "heading/time").read<double>();
    const auto across_count = root.open_dataset(g + "across/count").read<int64_t>();
    const auto across = root.open_dataset(g + "across/time").read<double>();
    const auto stop_set = root.open_dataset(g + "two_radians/time");
    const auto stop_time = stop_set.read<double>();
    const size_t stop_records = stop_set.dims()[1];  // the default max_records
    ASSERT_EQ(stop_records, 100u);
    const auto status = root.open_dataset(std::string(form) + "/status").read<int32_t>();
    for (size_t i = 0; i < n_traj; ++i) {
      const double p0 = q0[i * kN + 2], w = qd0[i * kN + 2];
      const double th0 = q0[i * kN + 3], s0 = qd0[i * kN + 3];
      ASSERT_EQ(th0, 0.0);
      // theta0 + s0 t + alpha t^2 / 2 = 2
      const double t_stop = (-s0 + std::sqrt(s0 * s0 + 2 * alpha * 2.0)) / alpha;
      const double t_end = std::min(4.0, t_stop);
      std::vector<double> want = sine_zeros(p0, w, t_end);
      ASSERT_EQ(count[i], static_cast<int64_t>(want.size())) << form << " " << i;
      for (size_t k = 0; k < want.size() && k < 4; ++k) {
        EXPECT_NEAR(time[i * 4 + k], want[k], 1e-10) << form << " " << i << " " << k;
        worst = std::max(worst, std::fabs(time[i * 4 + k] - want[k]));
      }
      want.clear();  // cos(p0 + w t) = 0
      for (int k = -10; k < 20; ++k) {
        const double t = (kPi / 2 + k * kPi - p0) / w;
        if (t > 0 && t <= t_end) want.push_back(t);
      }
      std::sort(want.begin(), want.end());
      ASSERT_EQ(across_count[i], static_cast<int64_t>(want.size())) << form << " " << i;
      for (size_t k = 0; k < want.size() && k < 4; ++k) {
        EXPECT_NEAR(across[i * 4 + k], want[k], 1e-10) << form << " " << i << " " << k;
        worst = std::max(worst, std::fabs(across[i * 4 + k] - want[k]));
      }
      if (t_stop <= 4.0) {
        ++stopped;
        EXPECT_EQ(status[i], 7) << form << " " << i;
        EXPECT_NEAR(stop_time[i * stop_records], t_stop, 1e-10) << form << " " << i;
        worst = std::max(worst, std::fabs(stop_time[i * stop_records] - t_stop));
      } else {
        EXPECT_EQ(status[i], 0) << form << " " << i;
      }
    }
  }
  std::printf("rolling disk model file: %d stops, worst time error %.2e\n", stopped, worst);
  EXPECT_GT(stopped, 10);
  fs::remove_all(dir);
}

// Records that cannot fit the memory budget for even one block of
// trajectories are refused before anything is written.
TEST(EventRuns, RecordsBeyondTheMemoryBudgetAreRefusedAndNothingIsWritten) {
  const fs::path dir = temp_dir("budget");
  nholo_test::CoinConfig c = turning_coins("dopri5", sine_event(1000000));
  c.memory_budget_mb = 64;
  write_file(dir / "c.toml", c.text());
  const auto r = run_nholo("run c.toml -q", dir);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("events"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("output.memory_budget_mb"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "out.h5"));
  EXPECT_FALSE(fs::exists(dir / "out.h5.partial"));
  fs::remove_all(dir);
}

// Events in shards merged (virtually and copied) and in a run resumed after a
// device fault are the same bits as in one uninterrupted run: every dataset
// of the files compared by tests/python/fault_check.py.
TEST(EventRuns, ShardsMergedAndAResumedRunHoldTheSameEvents) {
  const fs::path dir = temp_dir("shards");
  // records small enough for slices of 1024 in a budget of 1 MB
  nholo_test::CoinConfig c = turning_coins("dopri5", sine_event(2));
  c.size = 2500;
  c.t_end = 6.0;
  c.save_every = 0.5;
  c.window = 4;
  c.extra +=
      "[[events]]\nname = \"stop_at_7\"\nexpr = \"theta - 7\"\naction = \"stop\"\n"
      "max_records = 1\n";
  write_file(dir / "c.toml", c.text());
  ASSERT_EQ(run_nholo("run -q c.toml --set output.path=single.h5", dir).code, 0);
  for (int r = 0; r < 2; ++r) {
    const auto res = run_nholo("run -q c.toml --set output.path=s.h5 --shard " + std::to_string(r) +
                                   "/2 --set output.memory_budget_mb=" + std::to_string(1 + 3 * r),
                               dir);
    ASSERT_EQ(res.code, 0) << res.output;
  }
  const std::string shards = nholo_test::shard_files(dir, "s");
  for (const char* how : {"", "--copy "}) {
    fs::remove(dir / "merged.h5");
    const auto m = run_nholo(std::string("merge ") + how + "merged.h5" + shards, dir);
    ASSERT_EQ(m.code, 0) << m.output;
    const auto same = nholo_test::fault_check("same", dir / "single.h5", dir / "merged.h5");
    EXPECT_EQ(same.code, 0) << how << same.output;
  }
  // a fault in the second slice's third window (slices of 1024), then --resume
  const auto f = run_nholo("run -q c.toml --set output.path=r.h5 --set output.memory_budget_mb=1",
                           dir, "NHOLO_FAILPOINT_DEVICE_FAULT=6");
  ASSERT_EQ(f.code, 3) << f.output;
  ASSERT_TRUE(fs::exists(dir / "r.h5.partial"));
  const auto res = run_nholo(
      "run -q c.toml --set output.path=r.h5 --set output.memory_budget_mb=1 --resume", dir);
  ASSERT_EQ(res.code, 0) << res.output;
  const auto same = nholo_test::fault_check("same", dir / "single.h5", dir / "r.h5");
  EXPECT_EQ(same.code, 0) << same.output;
  fs::remove_all(dir);
}

// A model file's GPU module with the events' hook (what a run with [[events]]
// on the CUDA backend compiles): NVRTC compiles it (no GPU needed), under
// its own name next to the module without the hook.
TEST(EventRuns, AModelFilesGpuModuleWithTheEventsHookCompiles) {
#if defined(__SANITIZE_ADDRESS__)
  std::printf("SKIPPED in the sanitizer build: NVRTC compiles the kernel source here and is not "
              "instrumented; the product build's run of this test checks it\n");
  GTEST_SKIP() << "sanitizer build: NVRTC's compile is checked by the product build";
#endif
  const fs::path dir = temp_dir("gpu_module");
  const fs::path src = fs::path(NHOLO_SOURCE_DIR) / "examples" / "models";
  fs::copy_file(src / "rolling_disk.model.toml", dir / "rolling_disk.model.toml");
  // the module is what is checked: the plugin (its layout) unoptimized, 3x faster to build
  const std::string env =
      "NHOLO_CACHE_DIR='" + (dir / "cache").string() + "' NHOLO_PLUGIN_CXXFLAGS=-O0";
  const auto r = run_nholo(
      "model build rolling_disk.model.toml --gpu-arch sm_90 --formulations udwadia_kalaba --events",
      dir, env);
  if (r.code != 0 && r.output.find("cannot be loaded") != std::string::npos) {
    std::printf("SKIPPED: NVRTC is not available here: %s\n", r.output.c_str());
    GTEST_SKIP() << r.output;
  }
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("GPU module udwadia_kalaba dopri5 (events) sm_90: "), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find(" registers, "), std::string::npos) << r.output;
  int events_modules = 0;
  for (const auto& e : fs::directory_iterator(dir / "cache"))
    if (e.path().extension() == ".cubin" &&
        e.path().filename().string().find("-gpu-udwadia_kalaba-dopri5-events-sm_90-") !=
            std::string::npos)
      ++events_modules;
  EXPECT_EQ(events_modules, 1) << r.output;
  std::printf("%s", r.output.substr(r.output.find("GPU module")).c_str());
  fs::remove_all(dir);
}
