// Tests of host/config/sampling.hpp: Sobol points, the normal quantile, and the
// counter-based sampler (same values whatever the slicing).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

#include "host/config/config.hpp"
#include "host/config/model_info.hpp"
#include "host/config/sampling.hpp"
#include "tests/config_error_check.hpp"

using namespace nholo;

namespace {

// The first 2^k Sobol points put exactly one point in each of the 2^k
// intervals [j/2^k, (j+1)/2^k), in every dimension.
TEST(Sobol, OneDimensionalStratification) {
  for (int d = 0; d < kSobolMaxDims; ++d)
    for (int k : {4, 8, 10}) {
      std::vector<int> hits(1 << k, 0);
      for (uint64_t i = 0; i < (uint64_t(1) << k); ++i) {
        const double x = sobol(i, d);
        ASSERT_GE(x, 0.0);
        ASSERT_LT(x, 1.0);
        ++hits[static_cast<int>(x * (1 << k))];
      }
      for (int h : hits) ASSERT_EQ(h, 1) << "dimension " << d << ", 2^" << k << " points";
    }
}

// Dimensions 1 and 2 form a (0, m, 2)-net: every elementary box of area 2^-m
// holds exactly one of the first 2^m points.
TEST(Sobol, FirstTwoDimensionsFormA0m2Net) {
  const int m = 8;
  for (int a = 0; a <= m; ++a) {
    const int b = m - a;
    std::vector<int> hits(1 << m, 0);
    for (uint64_t i = 0; i < (uint64_t(1) << m); ++i) {
      const int ix = static_cast<int>(sobol(i, 0) * (1 << a));
      const int iy = static_cast<int>(sobol(i, 1) * (1 << b));
      ++hits[(ix << b) | iy];
    }
    for (int h : hits) ASSERT_EQ(h, 1) << "boxes 2^-" << a << " x 2^-" << b;
  }
}

TEST(Sobol, AllDimensionsAreEquidistributedAndDistinct) {
  const int N = 4096;
  for (int d = 0; d < kSobolMaxDims; ++d) {
    double mean = 0, m2 = 0;
    for (int i = 1; i <= N; ++i) {
      const double x = sobol(i, d);
      mean += x;
      m2 += x * x;
    }
    mean /= N;
    m2 /= N;
    EXPECT_NEAR(mean, 0.5, 2e-3) << d;
    EXPECT_NEAR(m2 - mean * mean, 1.0 / 12.0, 2e-3) << d;
  }
  // no two dimensions are the same sequence
  for (int d = 0; d < kSobolMaxDims; ++d)
    for (int e = d + 1; e < kSobolMaxDims; ++e) {
      bool same = true;
      for (int i = 1; i < 64 && same; ++i) same = sobol(i, d) == sobol(i, e);
      EXPECT_FALSE(same) << d << " " << e;
    }
}

TEST(NormalQuantile, KnownValues) {
  EXPECT_NEAR(normal_quantile(0.5), 0.0, 1e-15);
  EXPECT_NEAR(normal_quantile(0.975), 1.959963984540054, 1e-12);
  EXPECT_NEAR(normal_quantile(0.001), -3.090232306167813, 1e-12);
  EXPECT_NEAR(normal_quantile(1e-10), -6.361340902404056, 1e-10);
  for (double p : {0.01, 0.2, 0.7, 0.99}) EXPECT_NEAR(normal_quantile(p), -normal_quantile(1 - p), 1e-12);
}

RunConfig coin_config(const std::string& sampler, const std::string& extra = "") {
  const std::string text = R"(
model = "rolling_coin"
[time]
t_end = 1.0
[ensemble]
size = 1000
seed = 99
sampler = ")" + sampler + R"("
[ensemble.q0]
theta = { uniform = [0.0, 6.0] }
x = { normal = [1.0, 2.0] }
[ensemble.qd0]
theta = { uniform = [1.0, 3.0] }
[output]
path = "x.h5"
)" + extra;
  return parse_config(text, {});
}

TEST(Sampler, SameValuesWhateverTheSlicing) {
  for (const char* s : {"random", "sobol"}) {
    const RunConfig cfg = coin_config(s);
    Sampler smp(cfg, *find_model("rolling_coin"));
    std::vector<double> qa, qda, la, qb, qdb, lb, qc, qdc, lc;
    smp.fill(0, 1000, qa, qda, la);
    smp.fill(0, 371, qb, qdb, lb);
    smp.fill(371, 1000, qc, qdc, lc);
    qb.insert(qb.end(), qc.begin(), qc.end());
    qdb.insert(qdb.end(), qdc.begin(), qdc.end());
    EXPECT_EQ(qa, qb) << s;
    EXPECT_EQ(qda, qdb) << s;
    // given components: x, theta, theta_dot; the rest are solved later
    EXPECT_TRUE(smp.q_given[0] && smp.q_given[3] && !smp.q_given[1]);
    EXPECT_TRUE(smp.qd_given[3] && !smp.qd_given[0]);
    // distributions: ranges and moments
    double mx = 0, vx = 0;
    for (int i = 0; i < 1000; ++i) {
      EXPECT_GE(qa[i * 4 + 3], 0.0);
      EXPECT_LE(qa[i * 4 + 3], 6.0);
      EXPECT_GE(qda[i * 4 + 3], 1.0);
      EXPECT_LE(qda[i * 4 + 3], 3.0);
      mx += qa[i * 4 + 0] / 1000;
    }
    for (int i = 0; i < 1000; ++i) vx += (qa[i * 4] - mx) * (qa[i * 4] - mx) / 999;
    EXPECT_NEAR(mx, 1.0, 0.2) << s;
    EXPECT_NEAR(std::sqrt(vx), 2.0, 0.2) << s;
  }
  // another seed gives other values
  const RunConfig c1 = coin_config("random"), c2 = parse_config(c1.text, {"ensemble.seed=100"});
  std::vector<double> a, b, x, y, l1, l2;
  Sampler(c1, *find_model("rolling_coin")).fill(0, 10, a, x, l1);
  Sampler(c2, *find_model("rolling_coin")).fill(0, 10, b, y, l2);
  EXPECT_NE(a, b);
}

// The values drawn are a function of their trajectory and column alone, so
// threads give the same bits: 50,000 trajectories (12 parts of 4096 at least)
// on 1 and on 3 threads.
TEST(Sampler, SameValuesOnAnyNumberOfThreads) {
  for (const char* s : {"random", "sobol"}) {
    const RunConfig cfg = coin_config(s);
    const Sampler smp(cfg, *find_model("rolling_coin"));
    std::vector<double> q1, qd1, l1, q3, qd3, l3;
    smp.fill(1000, 51000, q1, qd1, l1, nullptr, nullptr, 1);
    smp.fill(1000, 51000, q3, qd3, l3, nullptr, nullptr, 3);
    ASSERT_EQ(q1.size(), 50000u * 4) << s;
    EXPECT_EQ(q1, q3) << s;
    EXPECT_EQ(qd1, qd3) << s;
    EXPECT_EQ(l1, l3) << s;
    EXPECT_NE(q1[4 * 49999 + 3], 0.0) << s << ": the last trajectory was not drawn";
  }
}

// the coin on a grid of the axes in `tables` ([ensemble.q0], ... with their keys)
std::string grid_coin_text(const std::string& tables) {
  return R"(
model = "rolling_coin"
[time]
t_end = 1.0
[ensemble]
sampler = "grid"
)" + tables +
         R"([output]
path = "x.h5"
)";
}

TEST(Sampler, GridIsACartesianProductLastFastest) {
  const std::string text = grid_coin_text(R"([ensemble.q0]
theta = { linspace = [0.0, 1.0, 3] }
[ensemble.qd0]
phi = { values = [5.0, 7.0] }
)");
  const RunConfig cfg = parse_config(text, {});
  EXPECT_EQ(cfg.size, 6);
  Sampler smp(cfg, *find_model("rolling_coin"));
  std::vector<double> q, qd, l;
  smp.fill(0, 6, q, qd, l);
  const double th[] = {0, 0, 0.5, 0.5, 1, 1}, ph[] = {5, 7, 5, 7, 5, 7};
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(q[i * 4 + 3], th[i]);
    EXPECT_EQ(qd[i * 4 + 2], ph[i]);
  }
  EXPECT_THROW(parse_config(text, {"ensemble.size=5"}), ConfigError);
}

// [ensemble.params] entries come after q0, qd0 and lambda0: they add random /
// Sobol dimensions after those (the initial states of a config without them
// do not change), and grid axes that vary fastest, in the model's parameter
// order; distribution_bounds covers every draw.
TEST(Sampler, ParametersComeLastInDimensionsAndGrids) {
  for (const char* s : {"random", "sobol"}) {
    const RunConfig plain = coin_config(s);
    const RunConfig swept = coin_config(s, "[ensemble.params]\nslope = { uniform = [0.1, 0.2] }\n"
                                           "radius = { uniform = [0.5, 0.7] }\n");
    EXPECT_EQ(swept.varied_params, (std::vector<std::string>{"radius", "slope"}));
    const Sampler a(plain, *find_model("rolling_coin")), b(swept, *find_model("rolling_coin"));
    EXPECT_TRUE(a.varied_params().empty());
    EXPECT_EQ(b.varied_params(), (std::vector<int>{1, 3}));  // radius, slope
    std::vector<double> qa, qda, la, qb, qdb, lb, pb, pc, q, qd, l;
    a.fill(0, 500, qa, qda, la);
    b.fill(0, 500, qb, qdb, lb, &pb);
    EXPECT_EQ(qa, qb) << s;
    EXPECT_EQ(qda, qdb) << s;
    ASSERT_EQ(pb.size(), 1000u);
    b.fill(123, 500, q, qd, l, &pc);  // a slice alone
    EXPECT_TRUE(std::equal(pc.begin(), pc.end(), pb.begin() + 2 * 123)) << s;
    const auto rb = distribution_bounds(swept.param_dists.at("radius"));
    for (int i = 0; i < 500; ++i) {
      EXPECT_TRUE(pb[2 * i] >= rb.first && pb[2 * i] <= rb.second) << pb[2 * i];
      EXPECT_TRUE(pb[2 * i + 1] >= 0.1 && pb[2 * i + 1] <= 0.2) << pb[2 * i + 1];
    }
  }
  const std::string text = grid_coin_text(R"([ensemble.qd0]
phi = { values = [5.0, 7.0] }
[ensemble.params]
slope = { linspace = [0.0, 0.4, 3] }
mass = { values = [1.0, 2.0] }
)");
  const RunConfig cfg = parse_config(text, {});
  EXPECT_EQ(cfg.size, 12);
  Sampler smp(cfg, *find_model("rolling_coin"));
  std::vector<double> q, qd, l, p;
  smp.fill(0, 12, q, qd, l, &p);
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(qd[i * 4 + 2], i < 6 ? 5.0 : 7.0);              // phi_dot: slowest
    EXPECT_EQ(p[i * 2 + 0], (i / 3) % 2 == 0 ? 1.0 : 2.0);   // mass
    EXPECT_EQ(p[i * 2 + 1], grid_value(cfg.param_dists.at("slope"), i % 3));  // slope: fastest
  }
  EXPECT_EQ(p[1 * 2 + 1], 0.2);
  // bounds: exact for grids, the closed interval for uniform, unbounded for normal
  EXPECT_EQ(distribution_bounds(cfg.param_dists.at("slope")), (std::pair<double, double>{0.0, 0.4}));
  Distribution nd;
  nd.kind = Distribution::Kind::normal;
  nd.a = 1;
  nd.b = 2;
  EXPECT_TRUE(std::isinf(distribution_bounds(nd).first) && std::isinf(distribution_bounds(nd).second));
}

// ---- configuration errors (issue 31's warts): each names its key and what
// is wrong; the valid neighbours still pass.

const char* const kCoinText = R"(
model = "rolling_coin"
[time]
t_end = 1.0
[ensemble]
size = 4
[output]
path = "x.h5"
)";

using nholo_test::expect_config_error;

void expect_override_error(const std::vector<std::string>& overrides, const std::string& key,
                           const std::vector<std::string>& words) {
  expect_config_error([&] { parse_config(kCoinText, overrides); }, key, words);
}

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("nholo_test_sampling_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream(p) << text;
}

TEST(ConfigErrors, ToleranceBoundsAndStepLimits) {
  expect_override_error({"integrator.rtol=1e300"}, "integrator.rtol", {"1e+300", "> 0 and < 1"});
  expect_override_error({"integrator.rtol=1"}, "integrator.rtol", {"> 0 and < 1"});
  expect_override_error({"integrator.atol=1.0"}, "integrator.atol", {"> 0 and < 1"});
  expect_override_error({"integrator.atol=0"}, "integrator.atol", {"> 0 and < 1"});
  expect_override_error(
      {"integrator.dt_min=0.1", "integrator.dt_max=0.01"}, "integrator.dt_min",
      {"0.1", "greater than integrator.dt_max = 0.01", "step underflow", "dt_max = 0"});
  // the default dt_min (1e-13) above a given dt_max
  expect_override_error({"integrator.dt_max=1e-14"}, "integrator.dt_max",
                        {"below integrator.dt_min = 1e-13 (the default)"});
  const RunConfig ok =
      parse_config(kCoinText, {"integrator.rtol=0.5", "integrator.atol=1e-3",
                               "integrator.dt_min=0.01", "integrator.dt_max=0.01"});
  EXPECT_EQ(ok.integrator.rtol, 0.5);
  EXPECT_EQ(ok.integrator.atol, 1e-3);
  EXPECT_EQ(ok.integrator.dt_min, ok.integrator.dt_max);
  // dt_max = 0: no cap, whatever dt_min
  EXPECT_EQ(
      parse_config(kCoinText, {"integrator.dt_min=0.1", "integrator.dt_max=0"}).integrator.dt_min,
      0.1);
}

TEST(ConfigErrors, SetValueIsTomlOrABareWordOnOneLine) {
  expect_override_error({"time.t_end=[1,"}, "--set time.t_end",
                        {"'[1,'", "not a valid TOML value", "bare word"});
  // refused as bad TOML, before the save_every / saveat conflict is looked at
  expect_override_error({"time.saveat=[0.1, 0.2"}, "--set time.saveat",
                        {"'[0.1, 0.2'", "not a valid TOML value"});
  expect_override_error({"formulations=[\"udwadia_kalaba\","}, "--set formulations",
                        {"not a valid TOML value"});
  expect_override_error({"output.path=my file.h5"}, "--set output.path",
                        {"not a valid TOML value", "\"a string\""});
  // a newline or carriage return would end the value there (the rest dropped)
  expect_override_error({"time.t_end=2\nfoo=3"}, "--set time.t_end", {"newline", "one line"});
  expect_override_error({"time.t_end=2\r[integrator]\rrtol=1e300"}, "--set time.t_end",
                        {"carriage return"});
  expect_override_error({"output.path=x.h5\nbar=1"}, "--set output.path", {"newline"});
  // bare words are strings, TOML values are TOML
  const RunConfig ok =
      parse_config(kCoinText, {"integrator.method=rk4", "output.path=runs/a-b_1.2+x.h5",
                               "ensemble.sampler=sobol", "time.t_end=2", "time.saveat=[0.5, 2.0]",
                               "output.fields=[\"q\"]"});
  EXPECT_EQ(ok.integrator.method,
            parse_config(kCoinText, {"integrator.method=\"rk4\""}).integrator.method);
  EXPECT_EQ(ok.output_path, "runs/a-b_1.2+x.h5");
  EXPECT_EQ(ok.sampler, SamplerKind::sobol);
  EXPECT_EQ(ok.t_end, 2.0);
  EXPECT_EQ(ok.save_times, (std::vector<double>{0.0, 0.5, 2.0}));
  EXPECT_EQ(ok.fields, (std::vector<std::string>{"q"}));
  // a list that names t_start (always the first save) means the same
  EXPECT_EQ(parse_config(kCoinText, {"time.t_end=2", "time.saveat=[0.0, 0.5, 2.0]"}).save_times,
            ok.save_times);
  // an entry out of order is named, with the rule
  expect_override_error({"time.t_end=2", "time.saveat=[0.5, 0.5, 2.0]"}, "time.saveat",
                        {"entry 2 (0.5) is not after the entry before it (0.5)", "increase"});
  expect_override_error({"time.t_end=2", "time.saveat=[0.5, 3.0]"}, "time.saveat",
                        {"entry 2 (3) is after time.t_end (2)"});
  // the command line's saveat replaces the file's save_every, and back
  EXPECT_EQ(parse_config(kCoinText, {"time.t_end=2", "time.save_every=0.5", "time.saveat=[1.0]"})
                .save_times,
            (std::vector<double>{0.0, 1.0}));
  EXPECT_EQ(parse_config(kCoinText, {"time.t_end=2", "time.saveat=[1.0]", "time.save_every=1.0"})
                .save_times,
            (std::vector<double>{0.0, 1.0, 2.0}));
  // t_start alone integrates nothing
  expect_override_error({"time.t_end=2", "time.saveat=[0.0]"}, "time.saveat",
                        {"lists only time.t_start", "nothing would be integrated"});
}

// rk4's step that does not divide a save interval is said (the interval
// ends with a shorter step); one that divides it, and the adaptive methods, not
TEST(ConfigNotes, Rk4StepNotDividingASaveInterval) {
  const std::vector<std::string> rk4 = {"integrator.method=rk4", "time.t_end=1",
                                        "time.save_every=0.1"};
  auto with = [&](std::vector<std::string> v, const std::string& extra) {
    v.push_back(extra);
    return config_notes(parse_config(kCoinText, v));
  };
  const std::string note = with(rk4, "integrator.dt=0.04");
  EXPECT_NE(note.find("integrator.dt = 0.04 does not divide the save interval 0.1"),
            std::string::npos)
      << note;
  EXPECT_NE(note.find("rk4 takes 2 steps of dt and one of 0.02"), std::string::npos) << note;
  EXPECT_EQ(with(rk4, "integrator.dt=0.02"), "");
  EXPECT_EQ(with(rk4, "integrator.dt=0.001"), "");
  EXPECT_EQ(with({"time.t_end=1", "time.save_every=0.1"}, "integrator.dt=0.04"), "");
}

const char* const kFileConfig = R"(
model = "rolling_coin"
[time]
t_end = 1.0
[ensemble]
sampler = "file"
file = "states.txt"
[output]
path = "x.h5"
)";

TEST(ConfigErrors, StateFileColumnsOnceAndLambda0OnlyWhereTaken) {
  const fs::path dir = fresh_dir("columns");
  const std::string cfg = (dir / "c.toml").string();
  write_text(dir / "c.toml", kFileConfig);
  write_text(dir / "states.txt",
             "q0.theta qd0.theta qd0.phi q0.theta\n0.1 1.0 0.5 0.7\n0.2 2.0 0.5 0.8\n");
  expect_config_error([&] { load_config(cfg, {}); }, "ensemble.file",
                      {"states.txt", "column 'q0.theta' appears twice", "columns 1 and 4", "once"});
  write_text(dir / "states.txt",
             "q0.theta qd0.theta qd0.phi lambda0.roll_x\n0.1 1.0 0.5 3.0\n0.2 2.0 0.5 4.0\n");
  expect_config_error([&] { load_config(cfg, {}); }, "ensemble.file",
                      {"column 'lambda0.roll_x'", "neither a vakonomic nor an embedded"});
  // with a formulation that takes lambda0 the column is the initial multiplier
  const RunConfig v = load_config(cfg, {"formulations=[\"vakonomic\"]"});
  const ModelInfo& mi = *find_model("rolling_coin");
  std::vector<double> q, qd, l;
  Sampler(v, mi).fill(0, 2, q, qd, l);
  ASSERT_EQ(l.size(), 2u * mi.m);
  EXPECT_EQ(l[0], 3.0);
  EXPECT_EQ(l[mi.m], 4.0);
  EXPECT_EQ(q[3], 0.1);  // theta
  fs::remove_all(dir);
}

TEST(ConfigErrors, StateFileIsRelativeToTheConfigFolder) {
  const fs::path dir = fresh_dir("relative");
  fs::create_directories(dir / "sub");
  write_text(dir / "sub" / "c.toml", kFileConfig);
  write_text(dir / "sub" / "states.txt", "q0.theta qd0.theta qd0.phi\n0.1 1.0 0.5\n0.2 2.0 0.5\n");
  // the current folder holds no states.txt: the config's folder does
  ASSERT_FALSE(fs::exists("states.txt"));
  const std::string cfg = (dir / "sub" / "c.toml").string();
  const RunConfig c = load_config(cfg, {});
  EXPECT_EQ(c.size, 2);
  EXPECT_EQ(fs::path(c.file), dir / "sub" / "states.txt");
  std::vector<double> q, qd, l;
  Sampler(c, *find_model("rolling_coin")).fill(0, 2, q, qd, l);
  EXPECT_EQ(q[4 + 3], 0.2);
  // comments: on lines of their own and after the values (the latter were
  // read as a value: "'#' is not a finite number")
  write_text(dir / "sub" / "commented.txt",
             "# two coins\nq0.theta qd0.theta qd0.phi  # header\n0.1 1.0 0.5\n"
             "  # the second:\n0.2 2.0 0.5 # tilted more\n");
  const RunConfig cc = load_config(cfg, {"ensemble.file=commented.txt"});
  EXPECT_EQ(cc.size, 2);
  Sampler(cc, *find_model("rolling_coin")).fill(0, 2, q, qd, l);
  EXPECT_EQ(q[4 + 3], 0.2);
  EXPECT_EQ(qd[4 + 3], 2.0);
  // --set ensemble.file too; an absolute path stays as it is
  EXPECT_EQ(load_config(cfg, {"ensemble.file=states.txt"}).size, 2);
  EXPECT_EQ(
      load_config(cfg, {"ensemble.file=\"" + (dir / "sub" / "states.txt").string() + "\""}).size,
      2);
  // unreadable: the full path and the system's reason
  expect_config_error(
      [&] { load_config(cfg, {"ensemble.file=absent.txt"}); }, "ensemble.file",
      {"cannot read '" + (dir / "sub" / "absent.txt").string() + "'", std::strerror(ENOENT)});
  fs::create_directories(dir / "sub" / "folder.txt");
  expect_config_error([&] { load_config(cfg, {"ensemble.file=folder.txt"}); }, "ensemble.file",
                      {(dir / "sub" / "folder.txt").string(), "a folder, not a file"});
  fs::remove_all(dir);
}

TEST(ConfigErrors, ConfigFileSymlinkLoopGivesTheSystemsReason) {
  const fs::path dir = fresh_dir("loop");
  fs::create_symlink(dir / "b.toml", dir / "a.toml");
  fs::create_symlink(dir / "a.toml", dir / "b.toml");
  const std::string a = (dir / "a.toml").string();
  expect_config_error([&] { load_config(a, {}); }, "", {"'" + a + "'", std::strerror(ELOOP)});
  try {
    load_config(a, {});
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).find("no such file"), std::string::npos) << e.what();
  }
  const std::string missing = (dir / "missing.toml").string();
  expect_config_error([&] { load_config(missing, {}); }, "", {missing, std::strerror(ENOENT)});
  write_text(dir / "ok.toml", kCoinText);
  EXPECT_EQ(load_config((dir / "ok.toml").string(), {}).size, 4);
  fs::remove_all(dir);
}

}  // namespace
