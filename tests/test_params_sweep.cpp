// Per-trajectory parameters (issue: a phase-space survey over a model
// parameter in one run), through the nholo command: a sweep of the rolling
// coin's slope over 1000 values x 10 initial states equals, bitwise, separate
// runs at the individual slopes; /initial/params holds each trajectory's
// values with their names and units; bad [ensemble.params] entries are
// ConfigErrors naming the key and what is accepted, and write nothing;
// sampled parameters that break the model's relation are rejected per
// trajectory; shards of a sweep merge to the single run; --resume continues a
// sweep.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "host/io/h5.hpp"
#include "tests/nholo_cli.hpp"
#include "tests/coin_config.hpp"

namespace fs = std::filesystem;

namespace {

using nholo_test::Result;
using nholo_test::run_nholo;
using nholo_test::write_file;

fs::path temp_dir(const std::string& name) { return nholo_test::temp_dir("nholo_params", name); }

// 10 initial states (5 headings x 2 spin rates) on 1000 slopes: 10 000
// trajectories; the slope, the last grid entry, varies fastest.
constexpr int kStates = 10, kSlopes = 1000;
constexpr double kSlope0 = 0.0, kSlope1 = 0.5;
const std::string kSweep = [] {
  nholo_test::CoinConfig c;
  c.params = {{"radius", 0.5}};
  c.t_end = 0.5;
  c.save_every = 0.25;
  c.use_integrator("dopri5", 1e-8, 1e-8);
  c.sampler = "grid";
  c.q0 = {{"theta", "{ linspace = [0.0, 2.0, 5] }"}};
  c.qd0 = {{"theta", "{ values = [1.5, 2.5] }"}, {"phi", "0.7"}};
  c.ensemble_params = {{"slope", "{ linspace = [0.0, 0.5, 1000] }"}};
  c.path = "sweep.h5";
  c.fields = std::vector<std::string>{"q", "qdot"};
  return c.text();
}();

// The same initial states at one fixed slope (written with 17 digits: the
// double the sweep used, exactly).
std::string single_config(double slope, const std::string& out) {
  std::string text = kSweep;
  const size_t a = text.find("[ensemble.params]");
  const size_t b = text.find("[output]");
  text.erase(a, b - a);
  char line[64];
  std::snprintf(line, sizeof line, "slope = %.17g\n", slope);
  text.insert(text.find("radius = 0.5\n") + 13, line);
  text.replace(text.find("sweep.h5"), 8, out);
  return text;
}

std::vector<double> read_f64(const nholo::h5::Group& r, const std::string& name) {
  return r.open_dataset(name).read<double>();
}

bool same_bits(const double* a, const double* b, size_t n) { return std::memcmp(a, b, n * sizeof(double)) == 0; }

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Nothing of a refused run is left in dir: no result, no .partial, no pieces.
void expect_nothing_written(const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    EXPECT_TRUE(e.path().extension() == ".toml" || e.path().extension() == ".csv" || name == "nholo.log")
        << "left behind: " << name;
  }
}

}  // namespace

// (a) The acceptance test: the sweep (one run, 10 000 trajectories) equals
// separate runs at 25 of the 1000 slopes (the first, the last and evenly
// spaced between), bitwise in q, qdot, status and the initial states.
TEST(ParamsSweep, SweepEqualsSeparateRunsBitwise) {
  const fs::path dir = temp_dir("acceptance");
  write_file(dir / "sweep.toml", kSweep);
  const auto t0 = std::chrono::steady_clock::now();
  const Result r = run_nholo("run -q sweep.toml", dir);
  const double sweep_seconds = seconds_since(t0);
  ASSERT_EQ(r.code, 0) << r.output;
  const auto file = nholo::h5::File::open_ro((dir / "sweep.h5").string());
  const auto root = file.root();
  const auto q = read_f64(root, "udwadia_kalaba/q"), qd = read_f64(root, "udwadia_kalaba/qdot");
  const auto status = root.open_dataset("udwadia_kalaba/status").read<int32_t>();
  const auto q0 = read_f64(root, "initial/q0"), qd0 = read_f64(root, "initial/qdot0");
  const auto slopes = read_f64(root, "initial/params");
  const size_t N = static_cast<size_t>(kStates) * kSlopes, T = 3, n = 4;
  ASSERT_EQ(status.size(), N);
  ASSERT_EQ(slopes.size(), N);
  ASSERT_EQ(q.size(), N * T * n);
  for (size_t i = 0; i < N; ++i) ASSERT_EQ(status[i], 0) << "trajectory " << i;
  // the slope changes the motion: the last save differs between the ends
  EXPECT_NE(q[((kSlopes - 1) * T + 2) * n + 1], q[(0 * T + 2) * n + 1]);

  std::vector<int> ks;
  for (int j = 0; j < 25; ++j) ks.push_back(static_cast<int>(std::lround(j * (kSlopes - 1) / 24.0)));
  const auto t1 = std::chrono::steady_clock::now();
  int compared = 0;
  for (int k : ks) {
    SCOPED_TRACE("slope number " + std::to_string(k));
    const double slope = slopes[k];  // trajectory k: state 0, slope k
    EXPECT_EQ(slope, kSlope0 + (kSlope1 - kSlope0) * static_cast<double>(k) / (kSlopes - 1));
    const std::string out = "single_" + std::to_string(k) + ".h5";
    write_file(dir / ("single_" + std::to_string(k) + ".toml"), single_config(slope, out));
    const Result s = run_nholo("run -q single_" + std::to_string(k) + ".toml", dir);
    ASSERT_EQ(s.code, 0) << s.output;
    const auto sf = nholo::h5::File::open_ro((dir / out).string());
    const auto sr = sf.root();
    EXPECT_EQ(sr.attr_double("param_slope"), slope);
    const auto sq = read_f64(sr, "udwadia_kalaba/q"), sqd = read_f64(sr, "udwadia_kalaba/qdot");
    const auto sst = sr.open_dataset("udwadia_kalaba/status").read<int32_t>();
    const auto sq0 = read_f64(sr, "initial/q0"), sqd0 = read_f64(sr, "initial/qdot0");
    ASSERT_EQ(sst.size(), static_cast<size_t>(kStates));
    for (int st = 0; st < kStates; ++st) {
      const size_t i = static_cast<size_t>(st) * kSlopes + k;  // the sweep's trajectory
      EXPECT_EQ(slopes[i], slope);
      EXPECT_EQ(status[i], sst[st]);
      EXPECT_TRUE(same_bits(&q[i * T * n], &sq[st * T * n], T * n)) << "q of state " << st;
      EXPECT_TRUE(same_bits(&qd[i * T * n], &sqd[st * T * n], T * n)) << "qdot of state " << st;
      EXPECT_TRUE(same_bits(&q0[i * n], &sq0[st * n], n)) << "q0 of state " << st;
      EXPECT_TRUE(same_bits(&qd0[i * n], &sqd0[st * n], n)) << "qdot0 of state " << st;
      ++compared;
    }
  }
  const double single_seconds = seconds_since(t1);
  std::printf("sweep: %d slopes x %d initial states = %zu trajectories, %zu saves, in %.2f s (one run); "
              "%zu single-slope runs of %d trajectories in %.2f s; %d trajectories compared, all bitwise "
              "equal (q, qdot, status, q0, qdot0)\n",
              kSlopes, kStates, N, T, sweep_seconds, ks.size(), kStates, single_seconds, compared);
  EXPECT_EQ(compared, 25 * kStates);
}

// (b) /initial/params: one column per varied parameter in the model's order
// (mass, radius, g, slope), names and units; the grid order q0, qd0, then the
// parameters, the last varying fastest; the root attributes; `nholo stats`.
TEST(ParamsSweep, InitialParamsDatasetAndAttributes) {
  const fs::path dir = temp_dir("dataset");
  write_file(dir / "sweep.toml", R"(
model = "rolling_coin"
[params]
mass = 2.0
[time]
t_end = 0.2
save_every = 0.1
[ensemble]
sampler = "grid"
[ensemble.q0]
theta = { values = [0.0, 1.0] }
[ensemble.qd0]
theta = 2.0
# listed slope first: the columns still follow the model's order
[ensemble.params]
slope = { values = [0.1, 0.2] }
radius = { linspace = [0.5, 2.0, 3] }
[output]
path = "sweep.h5"
)");
  const Result r = run_nholo("run -q sweep.toml", dir);
  ASSERT_EQ(r.code, 0) << r.output;
  const auto file = nholo::h5::File::open_ro((dir / "sweep.h5").string());
  const auto root = file.root();
  const auto d = root.open_dataset("initial/params");
  EXPECT_EQ(d.dims(), (std::vector<hsize_t>{12, 2}));
  EXPECT_EQ(d.attr_strings("names"), (std::vector<std::string>{"radius", "slope"}));
  EXPECT_EQ(d.attr_strings("units"), (std::vector<std::string>{"m", "rad"}));
  EXPECT_EQ(root.open_dataset("initial/parameter").read_strings(), (std::vector<std::string>{"radius", "slope"}));
  const auto p = d.read<double>();
  const auto q0 = read_f64(root, "initial/q0");
  const double radius[] = {0.5, 1.25, 2.0}, slope[] = {0.1, 0.2};
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(q0[i * 4 + 3], i / 6 == 0 ? 0.0 : 1.0) << i;  // theta: slowest
    EXPECT_EQ(p[i * 2 + 0], radius[(i / 2) % 3]) << i;      // radius
    EXPECT_EQ(p[i * 2 + 1], slope[i % 2]) << i;             // slope: fastest
  }
  // the varied parameters' root attributes say where they are; the fixed keep their value
  EXPECT_EQ(root.attr_string("param_slope"), "varies per trajectory (/initial/params)");
  EXPECT_EQ(root.attr_string("param_radius"), "varies per trajectory (/initial/params)");
  EXPECT_EQ(root.attr_double("param_mass"), 2.0);
  EXPECT_EQ(root.attr_double("param_g"), 9.81);
  EXPECT_EQ(root.attr_strings("varied_parameters"), (std::vector<std::string>{"radius", "slope"}));
  const auto pv = root.attr_doubles("parameter_values");
  ASSERT_EQ(pv.size(), 4u);
  EXPECT_EQ(pv[0], 2.0);
  EXPECT_TRUE(std::isnan(pv[1]) && std::isnan(pv[3]));
  EXPECT_EQ(root.attr_int64("initial_states_params_rejected"), 0);
  // stats: the varied parameters' ranges
  const Result st = run_nholo("stats sweep.h5", dir);
  ASSERT_EQ(st.code, 0) << st.output;
  EXPECT_NE(st.output.find("parameters varied per trajectory"), std::string::npos) << st.output;
  for (const char* line : {"radius     min 0.5          max 2            [m] over 12 trajectories",
                           "slope      min 0.1          max 0.2          [rad] over 12 trajectories"})
    EXPECT_NE(st.output.find(line), std::string::npos) << line << "\n" << st.output;
  // a run without [ensemble.params] has neither the dataset nor the attribute
  const Result plain = run_nholo("run -q sweep.toml --set 'ensemble.params={}' --set output.path=plain.h5", dir);
  ASSERT_EQ(plain.code, 0) << plain.output;
  const auto pf = nholo::h5::File::open_ro((dir / "plain.h5").string());
  EXPECT_FALSE(pf.root().exists("initial/params"));
  EXPECT_FALSE(pf.root().has_attr("varied_parameters"));
  EXPECT_EQ(pf.root().attr_double("param_slope"), 0.3);
}

// Random and Sobol draws of the parameters are counter-based like q0: the
// same values whatever the slicing, and inside the distribution's support.
TEST(ParamsSweep, RandomAndSobolParametersDoNotDependOnSlicing) {
  const fs::path dir = temp_dir("random");
  for (const char* sampler : {"random", "sobol"}) {
    SCOPED_TRACE(sampler);
    write_file(dir / "r.toml", std::string(R"(
model = "rolling_coin"
[time]
t_end = 0.2
save_every = 0.1
[ensemble]
size = 3000
seed = 5
sampler = ")") + sampler + R"("
[ensemble.qd0]
theta = { uniform = [1.0, 2.0] }
[ensemble.params]
slope = { uniform = [0.1, 0.4] }
radius = { uniform = [0.5, 1.0] }
[output]
path = "a.h5"
fields = []
)");
    ASSERT_EQ(run_nholo("run -q r.toml --overwrite", dir).code, 0);
    ASSERT_EQ(run_nholo("run -q r.toml --overwrite --set output.path=b.h5 --set output.memory_budget_mb=1 "
                        "--threads 1",
                        dir)
                  .code,
              0);
    const auto a = read_f64(nholo::h5::File::open_ro((dir / "a.h5").string()).root(), "initial/params");
    const auto b = read_f64(nholo::h5::File::open_ro((dir / "b.h5").string()).root(), "initial/params");
    ASSERT_EQ(a.size(), 6000u);
    EXPECT_TRUE(same_bits(a.data(), b.data(), a.size()));
    double mean_slope = 0;
    for (size_t i = 0; i < 3000; ++i) {
      EXPECT_TRUE(a[2 * i] >= 0.5 && a[2 * i] <= 1.0) << a[2 * i];
      EXPECT_TRUE(a[2 * i + 1] >= 0.1 && a[2 * i + 1] <= 0.4) << a[2 * i + 1];
      mean_slope += a[2 * i + 1] / 3000;
    }
    EXPECT_NEAR(mean_slope, 0.25, 0.01);
  }
}

// (c) Bad inputs: a ConfigError (exit 2) naming the key and what is
// accepted, and nothing written.
TEST(ParamsSweep, BadParameterDistributionsAreConfigErrorsAndWriteNothing) {
  struct Case {
    const char* what;
    std::string config, set;
    std::vector<std::string> expect;
  };
  const std::string coin = R"(
model = "rolling_coin"
[params]
radius = 0.5
[time]
t_end = 0.2
save_every = 0.1
[ensemble]
size = 20
[ensemble.qd0]
theta = { uniform = [1.0, 2.0] }
[ensemble.params]
slope = { uniform = [0.0, 0.5] }
[output]
path = "out.h5"
)";
  const std::string skate = R"(
model = "skate"
[params]
mass = 1.0
offset = 0.5
[time]
t_end = 0.2
save_every = 0.1
[ensemble]
sampler = "grid"
[ensemble.qd0]
theta = 1.0
[ensemble.params]
inertia = { linspace = [0.1, 1.0, 10] }
[output]
path = "out.h5"
)";
  const std::vector<Case> cases = {
      {"in [params] and [ensemble.params]",
       coin,
       "--set params.slope=0.2",
       {"ensemble.params.slope", "also given in [params]", "params.slope = 0.2"}},
      {"unknown parameter",
       coin,
       "--set ensemble.params.friction=0.1",
       {"ensemble.params.friction", "unknown parameter of model 'rolling_coin'",
        "accepted: mass, radius, g, slope"}},
      {"uniform leaving a positive range",
       coin,
       "--set 'ensemble.params.mass={uniform=[-1, 1]}'",
       {"ensemble.params.mass", "[-1, 1]", "mass > 0",
        "accepted: a number, uniform, linspace or values"}},
      {"normal for a bounded parameter",
       coin,
       "--set 'ensemble.params.g={normal=[9.81, 0.1]}'",
       {"ensemble.params.g", "normal(9.81, 0.1)", "g >= 0", "accepted for a bounded parameter"}},
      {"linspace reaching the inclination's bound",
       coin,
       "--set ensemble.sampler=grid --set ensemble.size=2 --set ensemble.qd0.theta=1 "
       "--set 'ensemble.params.slope={linspace=[0, 1.5707963267948966, 2]}'",
       {"ensemble.params.slope", "slope in (-1.5707963267948966, 1.5707963267948966)"}},
      {"skate inertia sweep crossing mass * offset^2",
       skate,
       "",
       {"ensemble.params", "inertia (in [0.1, 1])", "must exceed mass * offset^2", "inertia = 0.1",
        "accepted: distributions whose every combination satisfies it"}},
      {"skate inertia uniform reaching mass * offset^2",
       skate,
       "--set ensemble.sampler=random --set ensemble.size=10 "
       "--set 'ensemble.params.inertia={uniform=[0.25, 2.0]}'",
       {"ensemble.params", "must exceed mass * offset^2", "inertia = 0.25"}},
      {"not a table", coin, "--set ensemble.params=3", {"ensemble.params", "expected a table"}},
      {"linspace with the random sampler",
       coin,
       "--set 'ensemble.params.slope={linspace=[0, 0.5, 3]}'",
       {"sampler 'random' takes numbers, uniform or normal", "slope"}},
  };
  int k = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const fs::path dir = temp_dir("bad_" + std::to_string(k++));
    write_file(dir / "c.toml", c.config);
    const Result r = run_nholo("run -q c.toml " + c.set, dir);
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.output.find("config error"), std::string::npos) << r.output;
    for (const auto& e : c.expect) EXPECT_NE(r.output.find(e), std::string::npos) << e << "\n" << r.output;
    expect_nothing_written(dir);
    // `check` says the same
    const Result ch = run_nholo("check c.toml " + c.set, dir);
    EXPECT_EQ(ch.code, 2) << ch.output;
    std::printf("%-48s -> %s", c.what, r.output.substr(r.output.find("config error")).c_str());
  }
  // the same skate sweep inside the relation runs
  const fs::path dir = temp_dir("skate_ok");
  write_file(dir / "c.toml", skate);
  const Result ok = run_nholo("run -q c.toml --set 'ensemble.params.inertia={linspace=[0.26, 1.0, 10]}'", dir);
  EXPECT_EQ(ok.code, 0) << ok.output;
}

// What the config cannot decide (a normal offset of the skate): each
// trajectory whose sampled parameters break inertia > mass * offset^2 gets
// status rejected in every formulation and is not integrated; the others run.
TEST(ParamsSweep, SampledParametersBreakingTheRelationAreRejectedPerTrajectory) {
  const fs::path dir = temp_dir("relation");
  write_file(dir / "c.toml", R"(
model = "skate"
formulations = ["udwadia_kalaba", "null_space"]
[params]
mass = 1.0
inertia = 1.0
[time]
t_end = 0.2
save_every = 0.1
[ensemble]
size = 500
seed = 2
[ensemble.qd0]
theta = 1.0
[ensemble.params]
offset = { normal = [0.5, 0.4] }
[output]
path = "out.h5"
)");
  const Result r = run_nholo("run c.toml", dir);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("rejected (status rejected, not integrated): their sampled parameters break"),
            std::string::npos)
      << r.output;
  const auto file = nholo::h5::File::open_ro((dir / "out.h5").string());
  const auto root = file.root();
  EXPECT_EQ(root.open_dataset("initial/params").attr_strings("names"), (std::vector<std::string>{"offset"}));
  const auto offset = read_f64(root, "initial/params");
  int64_t broken = 0;
  for (const char* form : {"udwadia_kalaba", "null_space"}) {
    const auto st = root.open_dataset(std::string(form) + "/status").read<int32_t>();
    const auto steps = root.open_dataset(std::string(form) + "/steps").read<int64_t>();
    broken = 0;
    for (size_t i = 0; i < st.size(); ++i) {
      const bool bad = !(1.0 > 1.0 * offset[i] * offset[i]);
      broken += bad;
      EXPECT_EQ(st[i], bad ? 6 : 0) << form << " trajectory " << i << " offset " << offset[i];
      if (bad) {
        EXPECT_EQ(steps[i], 0);
      }
    }
  }
  std::printf("skate, offset ~ normal(0.5, 0.4): %lld of 500 trajectories rejected (|offset| >= 1)\n",
              static_cast<long long>(broken));
  EXPECT_GT(broken, 5);
  EXPECT_LT(broken, 90);
  EXPECT_EQ(root.attr_int64("initial_states_params_rejected"), broken);
  EXPECT_EQ(root.attr_int64("initial_states_rejected"), 0);
}

// A state file may give parameters per row (columns params.<name>); each
// value is checked against the range, each row against the relation.
TEST(ParamsSweep, StateFileParameterColumns) {
  // the coins of states.csv, in the folders of the good and of the bad files
  const std::string from_file = R"(
model = "rolling_coin"
[time]
t_end = 0.2
save_every = 0.1
[ensemble]
sampler = "file"
file = "states.csv"
[output]
path = "out.h5"
)";
  const fs::path dir = temp_dir("file");
  write_file(dir / "c.toml", from_file);
  write_file(dir / "states.csv", "qd0.theta, params.slope, params.radius\n1.0, 0.1, 0.5\n2.0, 0.2, 1.5\n");
  const Result r = run_nholo("run -q c.toml", dir);
  ASSERT_EQ(r.code, 0) << r.output;
  const auto root = nholo::h5::File::open_ro((dir / "out.h5").string()).root();
  EXPECT_EQ(root.open_dataset("initial/params").attr_strings("names"),
            (std::vector<std::string>{"radius", "slope"}));
  EXPECT_EQ(read_f64(root, "initial/params"), (std::vector<double>{0.5, 0.1, 1.5, 0.2}));
  // a value out of range, a fixed parameter also a column, an unknown parameter column
  const fs::path bad = temp_dir("file_bad");
  write_file(bad / "c.toml", from_file);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"qd0.theta, params.slope\n1.0, 0.1\n1.0, 2.0\n", "states.csv line 3: params.slope = 2 is outside"},
      {"qd0.theta, params.friction\n1.0, 0.1\n", "column 'params.friction' is not a parameter of model"},
  };
  for (const auto& [text, expect] : cases) {
    write_file(bad / "states.csv", text);
    const Result e = run_nholo("run -q c.toml", bad);
    EXPECT_EQ(e.code, 2) << e.output;
    EXPECT_NE(e.output.find(expect), std::string::npos) << e.output;
    expect_nothing_written(bad);
  }
  write_file(bad / "states.csv", "qd0.theta, params.slope\n1.0, 0.1\n");
  const Result both = run_nholo("run -q c.toml --set params.slope=0.3", bad);
  EXPECT_EQ(both.code, 2) << both.output;
  EXPECT_NE(both.output.find("varies the parameter that [params] fixes"), std::string::npos) << both.output;
  expect_nothing_written(bad);
}

namespace {

// 3 x 1000 trajectories (three blocks of 1024, the last partial), two
// formulations (the comparison datasets too).
const std::string kShardSweep = [] {
  nholo_test::CoinConfig c;
  c.formulations = {"udwadia_kalaba", "null_space"};
  c.params = {{"radius", 0.5}};
  c.t_end = 1.0;
  c.save_every = 0.25;
  c.use_integrator("dopri5", 1e-8, 1e-8);
  c.sampler = "grid";
  c.qd0 = {{"theta", "{ values = [1.0, 2.0, 3.0] }"}, {"phi", "0.5"}};
  c.ensemble_params = {{"slope", "{ linspace = [0.0, 0.5, 1000] }"}};
  c.window = 2;
  return c.text();
}();

}  // namespace

// (d) Shards of a sweep merged (virtual datasets and --copy) equal the single
// run in every dataset, /initial/params included.
TEST(ParamsSweep, MergedShardsOfASweepEqualTheSingleRun) {
  const fs::path dir = temp_dir("shards");
  write_file(dir / "c.toml", kShardSweep);
  ASSERT_EQ(run_nholo("run -q c.toml --set output.path=single.h5", dir).code, 0);
  const fs::path sub = dir / "R3";
  fs::create_directories(sub);
  write_file(sub / "c.toml", kShardSweep);
  for (int r = 0; r < 3; ++r) {
    const Result res = run_nholo("run -q c.toml --shard " + std::to_string(r) + "/3 --threads " +
                                     std::to_string(1 + r % 2) + " --set output.memory_budget_mb=1",
                                 sub);
    ASSERT_EQ(res.code, 0) << res.output;
  }
  for (const char* how : {"", "--copy "}) {
    fs::remove(sub / "merged.h5");
    const Result m = run_nholo(std::string("merge ") + how +
                                   "merged.h5 out.shard-0-1024.h5 out.shard-1024-2048.h5 out.shard-2048-3000.h5",
                               sub);
    ASSERT_EQ(m.code, 0) << m.output;
    const Result same = nholo_test::fault_check("same", dir / "single.h5", sub / "merged.h5");
    EXPECT_EQ(same.code, 0) << how << same.output;
    const auto root = nholo::h5::File::open_ro((sub / "merged.h5").string()).root();
    EXPECT_EQ(root.open_dataset("initial/params").dims(), (std::vector<hsize_t>{3000, 1}));
    EXPECT_EQ(root.attr_string("param_slope"), "varies per trajectory (/initial/params)");
  }
}

// (e) --resume of a sweep: a run that fails part-way (an injected device
// fault at window 4: the first slice finished) resumes to the uninterrupted
// run's file.
TEST(ParamsSweep, ResumedSweepEqualsTheUninterruptedRun) {
  const fs::path dir = temp_dir("resume");
  write_file(dir / "c.toml", kShardSweep);
  ASSERT_EQ(run_nholo("run -q c.toml --set output.path=ref.h5 --threads 1", dir).code, 0);
  const Result failed =
      run_nholo("run -q c.toml --threads 1 --set output.memory_budget_mb=1", dir, "NHOLO_FAILPOINT_DEVICE_FAULT=4");
  ASSERT_EQ(failed.code, 3) << failed.output;
  ASSERT_TRUE(fs::exists(dir / "out.h5.partial"));
  const Result partial = nholo_test::fault_check("partial", dir / "ref.h5", dir / "out.h5.partial");
  EXPECT_EQ(partial.code, 0) << partial.output;
  EXPECT_EQ(partial.output.find("finished 0 "), std::string::npos) << "no slice finished: " << partial.output;
  const Result resumed = run_nholo("run -q c.toml --resume --threads 2 --set output.memory_budget_mb=1", dir);
  ASSERT_EQ(resumed.code, 0) << resumed.output;
  const Result same = nholo_test::fault_check("same", dir / "ref.h5", dir / "out.h5");
  EXPECT_EQ(same.code, 0) << same.output;
  std::printf("resume: %s", partial.output.c_str());
}
