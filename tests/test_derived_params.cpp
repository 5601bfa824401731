// Derived parameters (docs/models.md, "Derived parameters"): a model file's
// parameter given as an expression of other parameters (`derived`), re-
// evaluated per trajectory from the values in force.
//
//  1. The model file: the order among derived parameters resolved, their
//     values at the defaults, the refusals (a cycle, the parameter itself, a
//     default using a derived parameter, default and derived both, no
//     parameter used, a coordinate).
//  2. The configuration (no plugin compiled): [params] and --set of a base
//     parameter move the derived ones; setting a derived parameter directly
//     ([params], --set, [ensemble.params], a state file's column) is refused;
//     a sweep of a base parameter varies its derived parameters, which the
//     sampler computes per trajectory; a derived value outside its range is
//     refused.
//  3. Runs of the nholo command: /initial/params of a sweep holds the
//     derived columns (cl == std::cos(lam), computed here); a run with an
//     override gives the same bits as the model with the derived values
//     written as literals.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "host/config/config.hpp"
#include "host/config/model_catalog.hpp"
#include "host/config/model_info.hpp"
#include "host/config/sampling.hpp"
#include "host/io/h5.hpp"
#include "host/model_language/model_file.hpp"
#include "host/model_language/number_text.hpp"
#include "tests/nholo_cli.hpp"

namespace {

namespace fs = std::filesystem;
using nholo::ConfigError;
using nholo::ModelFileError;
using nholo::ModelSpec;
using nholo::RunConfig;

// A knife-edge skate on an incline of tilt lam: gravity along the slope
// gs = g sin(lam) (derived from a derived parameter declared after it), a
// spin damping that scales with cl = cos(lam) (derived, with a range).
std::string parameters_line(const std::string& derived_ones) {
  return "parameters = [\n" + derived_ones +
         "  { name = \"m\", default = 1.0, unit = \"kg\", positive = true },\n"
         "  { name = \"g\", default = 9.81, unit = \"m/s^2\" },\n"
         "  { name = \"lam\", default = 0.3, unit = \"rad\" },\n"
         "  { name = \"c\", default = 0.05, unit = \"kg m^2/s\" },\n"
         "]\n";
}

const char* kDerivedOnes =
    "  { name = \"gs\", derived = \"g*sl\", unit = \"m/s^2\", description = \"downhill\" },\n"
    "  { name = \"sl\", derived = \"sin(lam)\", unit = \"1\" },\n"
    "  { name = \"cl\", derived = \"cos(lam)\", unit = \"1\", positive = true },\n";

std::string incline_model(const std::string& name, const std::string& derived_ones) {
  return "name = \"" + name +
         "\"\n"
         "description = \"a knife-edge skate on an incline of tilt lam\"\n"
         "coordinates = [ { name = \"x\", unit = \"m\" }, { name = \"y\", unit = \"m\" }, "
         "{ name = \"theta\", unit = \"rad\" } ]\n" +
         parameters_line(derived_ones) +
         "lagrangian = \"m/2*(x_dot^2 + y_dot^2) + m/8*theta_dot^2 - m*gs*x\"\n"
         "constraints = [ { name = \"knife_edge\", kind = \"velocity\", "
         "expr = \"y_dot*cos(theta) - x_dot*sin(theta)\" } ]\n"
         "forces = { theta = \"-c*cl*theta_dot\" }\n";
}

ModelSpec load(const std::string& text) {
  return nholo::load_model_text(text, "incline.toml", {});
}

std::string model_error(const std::string& derived_ones) {
  try {
    load(incline_model("incline", derived_ones));
  } catch (const ModelFileError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for\n" << derived_ones;
  return "";
}

void expect_has(const std::string& text, const std::vector<std::string>& parts) {
  for (const auto& p : parts)
    EXPECT_NE(text.find(p), std::string::npos) << "'" << p << "' not in: " << text;
}

int index_of(const ModelSpec& s, const std::string& name) {
  for (size_t j = 0; j < s.parameters.size(); ++j)
    if (s.parameters[j].name == name) return static_cast<int>(j);
  return -1;
}

// ---------------------------------------------------------------------------
// 1. The model file

TEST(DerivedParams, OrderResolvedAndValuesAtTheDefaults) {
  const ModelSpec s = load(incline_model("incline", kDerivedOnes));
  ASSERT_EQ(s.parameters.size(), 7u);
  const int gs = index_of(s, "gs"), sl = index_of(s, "sl"), cl = index_of(s, "cl");
  // gs uses sl, declared after it: sl comes first
  ASSERT_EQ(s.derived_order.size(), 3u);
  const auto pos = [&](int j) {
    return std::find(s.derived_order.begin(), s.derived_order.end(), j) - s.derived_order.begin();
  };
  EXPECT_LT(pos(sl), pos(gs));
  EXPECT_EQ(s.parameters[static_cast<size_t>(sl)].default_value, std::sin(0.3));
  EXPECT_EQ(s.parameters[static_cast<size_t>(cl)].default_value, std::cos(0.3));
  EXPECT_EQ(s.parameters[static_cast<size_t>(gs)].default_value, 9.81 * std::sin(0.3));
  EXPECT_EQ(s.parameters[static_cast<size_t>(gs)].derived.text, "g*sl");
  // re-evaluated from other values
  std::vector<double> p;
  for (const auto& par : s.parameters) p.push_back(par.default_value);
  p[static_cast<size_t>(index_of(s, "lam"))] = 1.1;
  p[static_cast<size_t>(index_of(s, "g"))] = 3.7;
  nholo::model_file::derive_parameters(s, p);
  EXPECT_EQ(p[static_cast<size_t>(cl)], std::cos(1.1));
  EXPECT_EQ(p[static_cast<size_t>(gs)], 3.7 * std::sin(1.1));
  // the description the host learns it from; plain parameters have none
  const nholo::ModelInfo mi = nholo::model_info_from_spec(s);
  ASSERT_TRUE(mi.has_derived_params());
  EXPECT_EQ(mi.params[static_cast<size_t>(gs)].derived, "g*sl");
  EXPECT_EQ(mi.params[static_cast<size_t>(gs)].derived_from, (std::vector<std::string>{"sl", "g"}));
  EXPECT_TRUE(mi.params[static_cast<size_t>(index_of(s, "m"))].derived.empty());
  EXPECT_FALSE(nholo::find_model("rolling_coin")->has_derived_params());
}

TEST(DerivedParams, BadDerivationsAreRefused) {
  // a cycle, named
  expect_has(model_error("  { name = \"a\", derived = \"2*b\", unit = \"1\" },\n"
                         "  { name = \"b\", derived = \"lam + a\", unit = \"1\" },\n"),
             {"incline.toml:", "parameters[0].derived", "cycle (a -> b -> a)"});
  expect_has(model_error("  { name = \"a\", derived = \"lam*a\", unit = \"1\" },\n"),
             {"parameters[0].derived", "position 5", "'a' is this parameter itself"});
  // a default may not follow a derived parameter
  expect_has(model_error("  { name = \"a\", derived = \"2*lam\", unit = \"1\" },\n"
                         "  { name = \"b\", default = \"a/2\", unit = \"1\" },\n"),
             {"parameters[1].default", "'a' is a derived parameter", "derived = \"a/2\""});
  expect_has(model_error("  { name = \"a\", derived = \"2*lam\", default = 1, unit = \"1\" },\n"),
             {"parameters[0].derived", "not both"});
  expect_has(model_error("  { name = \"a\", derived = \"2*pi\", unit = \"1\" },\n"),
             {"uses no parameter", "default = \"2*pi\""});
  expect_has(model_error("  { name = \"a\", derived = \"theta*lam\", unit = \"1\" },\n"),
             {"'theta' is a coordinate", "a function of the other parameters"});
  expect_has(model_error("  { name = \"a\", unit = \"1\" },\n"),
             {"parameters[0].default: missing (required: name, default or derived, unit)"});
  // undefined or out of range at the defaults
  expect_has(model_error("  { name = \"a\", derived = \"log(lam - 0.3)\", unit = \"1\" },\n"),
             {"parameters[0].derived", "at the defaults"});
  expect_has(
      model_error("  { name = \"a\", derived = \"-lam\", unit = \"1\", positive = true },\n"),
      {"parameters[0].derived", "its value at the defaults, -0.3, is outside the declared range"});
}

// ---------------------------------------------------------------------------
// 2. The configuration

std::string config_text(const std::string& more) {
  return "[model]\n" + incline_model("incline_cfg", kDerivedOnes) +
         "[time]\nt_end = 1.0\nsave_every = 0.5\n[ensemble]\nsize = 2\n[ensemble.q0]\ntheta = 0.2\n"
         "[ensemble.qd0]\nx = 0.5\ntheta = 1.0\n[output]\npath = \"o.h5\"\n" +
         more;
}

std::string sweep_text(const std::string& name, const std::string& path) {
  std::string t = "[model]\n" + incline_model(name, kDerivedOnes) +
                  "[time]\nt_end = 1.0\nsave_every = 0.5\n"
                  "[integrator]\nmethod = \"dopri5\"\nrtol = 1e-10\natol = 1e-10\n"
                  "[ensemble]\nsampler = \"grid\"\n[ensemble.q0]\ntheta = 0.2\n"
                  "[ensemble.qd0]\nx = { values = [0.5, -0.25] }\ntheta = 1.0\n"
                  "[ensemble.params]\nlam = { linspace = [0.1, 1.4, 6] }\n"
                  "[output]\npath = \"" +
                  path + "\"\nfields = [\"q\"]\n";
  return t;
}

std::string config_error(const std::string& text, const std::vector<std::string>& overrides,
                         std::string* key = nullptr) {
  try {
    nholo::parse_config(text, overrides);
  } catch (const ConfigError& e) {
    if (key) *key = e.key();
    return e.what();
  }
  ADD_FAILURE() << "no ConfigError";
  return "";
}

TEST(DerivedParams, OverridesOfABaseParameterMoveItsDerivedOnes) {
  const RunConfig d = nholo::parse_config(config_text(""), {});
  EXPECT_EQ(d.params.at("cl"), std::cos(0.3));
  EXPECT_TRUE(d.varied_params.empty());
  EXPECT_EQ(d.derived_params, (std::vector<std::string>{"gs", "sl", "cl"}));
  const RunConfig p = nholo::parse_config(config_text("[params]\nlam = 0.9\ng = 2.5\n"), {});
  EXPECT_EQ(p.params.at("cl"), std::cos(0.9));
  EXPECT_EQ(p.params.at("sl"), std::sin(0.9));
  EXPECT_EQ(p.params.at("gs"), 2.5 * std::sin(0.9));
  const RunConfig s = nholo::parse_config(config_text(""), {"params.lam=1.2"});
  EXPECT_EQ(s.params.at("cl"), std::cos(1.2));
  EXPECT_EQ(s.params.at("gs"), 9.81 * std::sin(1.2));
}

TEST(DerivedParams, SettingADerivedParameterIsRefused) {
  std::string key;
  std::string e = config_error(config_text("[params]\ncl = 0.5\n"), {}, &key);
  EXPECT_EQ(key, "params.cl");
  expect_has(e, {"cl is derived from lam (cl = cos(lam)): set lam"});
  e = config_error(config_text(""), {"params.gs=1.0"}, &key);
  EXPECT_EQ(key, "params.gs");
  expect_has(e, {"gs is derived from sl, g (gs = g*sl): set those parameters"});
  e = config_error(config_text("[ensemble.params]\ncl = { values = [0.1, 0.2] }\n"), {}, &key);
  EXPECT_EQ(key, "ensemble.params.cl");
  expect_has(e, {"cl is derived from lam"});
}

TEST(DerivedParams, ADerivedValueOutsideItsRangeIsRefused) {
  // cl = cos(lam) > 0: lam = 2 gives cos(2) < 0
  std::string key;
  std::string e = config_error(config_text("[params]\nlam = 2.0\n"), {}, &key);
  EXPECT_EQ(key, "params");
  expect_has(e, {"cl = cos(lam) is " + nholo::short_number(std::cos(2.0)), "lam = 2", "> 0"});
  // a sweep whose end gives one: refused at the corner
  std::string sweep = sweep_text("incline_range", "r.h5");
  sweep.replace(sweep.find("[0.1, 1.4, 6]"), 13, "[0.5, 2.0, 4]");
  e = config_error(sweep, {}, &key);
  EXPECT_EQ(key, "ensemble.params");
  expect_has(e, {"cl = cos(lam) is"});
}

TEST(DerivedParams, ASweptBaseParameterVariesItsDerivedOnesPerTrajectory) {
  const RunConfig cfg = nholo::parse_config(sweep_text("incline_sweep", "s.h5"), {});
  // in the model's order: gs, sl, cl (derived), then lam
  EXPECT_EQ(cfg.varied_params, (std::vector<std::string>{"gs", "sl", "cl", "lam"}));
  const nholo::ModelInfo& mi = *nholo::find_model("incline_sweep");
  const nholo::Sampler smp(cfg, mi);
  ASSERT_EQ(smp.size(), 12);
  std::vector<double> q, qd, l, p;
  smp.fill(0, 12, q, qd, l, &p);
  ASSERT_EQ(p.size(), 12u * 4u);
  for (int i = 0; i < 12; ++i) {
    const double lam = p[i * 4 + 3];
    EXPECT_NEAR(lam, 0.1 + (1.4 - 0.1) * (i % 6) / 5.0, 1e-15) << i;
    EXPECT_EQ(p[i * 4 + 2], std::cos(lam)) << i;
    EXPECT_EQ(p[i * 4 + 1], std::sin(lam)) << i;
    EXPECT_EQ(p[i * 4 + 0], 9.81 * std::sin(lam)) << i;
  }
}

TEST(DerivedParams, AStateFileColumnOfABaseParameterVariesItsDerivedOnes) {
  const fs::path dir = nholo_test::temp_dir("nholo_derived", "state_file");
  nholo_test::write_file(dir / "states.txt",
                         "q0.theta qd0.x params.lam\n0.2 0.5 0.25\n0.1 0.5 1.3\n");
  const std::string text = "[model]\n" + incline_model("incline_file", kDerivedOnes) +
                           "[time]\nt_end = 1.0\n[ensemble]\nsampler = \"file\"\nfile = \"" +
                           (dir / "states.txt").string() + "\"\n[output]\npath = \"o.h5\"\n";
  const RunConfig cfg = nholo::parse_config(text, {});
  EXPECT_EQ(cfg.varied_params, (std::vector<std::string>{"gs", "sl", "cl", "lam"}));
  const nholo::Sampler smp(cfg, *nholo::find_model("incline_file"));
  std::vector<double> q, qd, l, p;
  smp.fill(0, 2, q, qd, l, &p);
  ASSERT_EQ(p.size(), 8u);
  EXPECT_EQ(p[3], 0.25);
  EXPECT_EQ(p[7], 1.3);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(p[i * 4 + 2], std::cos(p[i * 4 + 3])) << i;
    EXPECT_EQ(p[i * 4 + 0], 9.81 * std::sin(p[i * 4 + 3])) << i;
  }
  // a column of a derived parameter is refused
  nholo_test::write_file(dir / "bad.txt", "q0.theta params.cl\n0.2 0.5\n");
  std::string bad = text;
  bad.replace(bad.find("states.txt"), 10, "bad.txt");
  std::string key;
  expect_has(config_error(bad, {}, &key), {"column 'params.cl'", "cl is derived from lam"});
  EXPECT_EQ(key, "ensemble.file");
}

// ---------------------------------------------------------------------------
// 3. Runs

fs::path temp_dir(const std::string& name) {
  return nholo_test::temp_dir("nholo_derived", name);
}

std::string cache_env() {
  return "NHOLO_CACHE_DIR='" + std::string(NHOLO_TEST_PLUGIN_CACHE) + "'";
}

std::vector<double> read_f64(const fs::path& file, const std::string& dataset) {
  return nholo::h5::File::open_ro(file.string()).root().open_dataset(dataset).read<double>();
}

std::string literal(double v) {
  char b[40];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

TEST(DerivedParams, RunsRecordTheDerivedColumnsAndMatchLiteralValuesBitForBit) {
  const fs::path dir = temp_dir("runs");
  // (a) a sweep of lam: /initial/params holds gs, sl, lam, cl per trajectory
  nholo_test::write_file(dir / "sweep.toml", sweep_text("incline_run", "sweep.h5"));
  const nholo_test::Result r = nholo_test::run_nholo("run -q sweep.toml", dir, cache_env());
  ASSERT_EQ(r.code, 0) << r.output;
  {
    const auto f = nholo::h5::File::open_ro((dir / "sweep.h5").string());
    const auto d = f.root().open_dataset("initial/params");
    EXPECT_EQ(d.attr_strings("names"), (std::vector<std::string>{"gs", "sl", "cl", "lam"}));
    const std::vector<double> p = d.read<double>();
    ASSERT_EQ(p.size(), 12u * 4u);
    for (size_t i = 0; i < 12; ++i) {
      EXPECT_EQ(p[i * 4 + 2], std::cos(p[i * 4 + 3])) << i;
      EXPECT_EQ(p[i * 4 + 1], std::sin(p[i * 4 + 3])) << i;
      EXPECT_EQ(p[i * 4 + 0], 9.81 * std::sin(p[i * 4 + 3])) << i;
    }
    const auto status = f.root().open_dataset("udwadia_kalaba/status").read<int32_t>();
    for (size_t i = 0; i < status.size(); ++i) EXPECT_EQ(status[i], 0) << i;
  }
  // (b) lam overridden (--set) against the model with the derived values as
  // literals: the same bits
  const double lam = 0.7;
  std::string single = sweep_text("incline_run", "derived.h5");
  const std::string sweep_entry = "[ensemble.params]\nlam = { linspace = [0.1, 1.4, 6] }\n";
  single.erase(single.find(sweep_entry), sweep_entry.size());
  nholo_test::write_file(dir / "derived.toml", single);
  const nholo_test::Result rd =
      nholo_test::run_nholo("run -q derived.toml --set params.lam=0.7", dir, cache_env());
  ASSERT_EQ(rd.code, 0) << rd.output;
  const std::string literals =
      "  { name = \"gs\", default = " + literal(9.81 * std::sin(lam)) + ", unit = \"m/s^2\" },\n" +
      "  { name = \"sl\", default = " + literal(std::sin(lam)) + ", unit = \"1\" },\n" +
      "  { name = \"cl\", default = " + literal(std::cos(lam)) + ", unit = \"1\" },\n";
  std::string lit = single;
  const std::string derived_model = incline_model("incline_run", kDerivedOnes);
  lit.replace(lit.find(derived_model), derived_model.size(),
              incline_model("incline_literal", literals));
  lit.replace(lit.find("derived.h5"), 10, "literal.h5");
  nholo_test::write_file(dir / "literal.toml", lit);
  const nholo_test::Result rl =
      nholo_test::run_nholo("run -q literal.toml --set params.lam=0.7", dir, cache_env());
  ASSERT_EQ(rl.code, 0) << rl.output;
  const std::vector<double> a = read_f64(dir / "derived.h5", "udwadia_kalaba/q");
  const std::vector<double> b = read_f64(dir / "literal.h5", "udwadia_kalaba/q");
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(double)), 0);
  // (c) a sweep whose corners keep cl = cos(lam) > 0 but whose middle value
  // does not: those trajectories are rejected, not integrated
  std::string mid = sweep_text("incline_run", "mid.h5");
  mid.replace(mid.find("{ linspace = [0.1, 1.4, 6] }"), 28, "{ values = [0.5, 3.0, 6.0] }");
  nholo_test::write_file(dir / "mid.toml", mid);
  const nholo_test::Result rm = nholo_test::run_nholo("run -q mid.toml", dir, cache_env());
  ASSERT_EQ(rm.code, 0) << rm.output;
  {
    const auto f = nholo::h5::File::open_ro((dir / "mid.h5").string());
    const std::vector<double> p = f.root().open_dataset("initial/params").read<double>();
    const auto status = f.root().open_dataset("udwadia_kalaba/status").read<int32_t>();
    ASSERT_EQ(status.size(), 6u);
    for (size_t i = 0; i < 6; ++i)
      EXPECT_EQ(status[i], std::cos(p[i * 4 + 3]) > 0 ? 0 : 6) << "lam = " << p[i * 4 + 3];
    EXPECT_EQ(f.root().attr_int64("initial_states_params_rejected"), 2);
  }
  // and they differ from the defaults' motion (lam = 0.3): the override took
  std::string at_defaults = single;
  at_defaults.replace(at_defaults.find("derived.h5"), 10, "default.h5");
  nholo_test::write_file(dir / "default.toml", at_defaults);
  const nholo_test::Result r0 = nholo_test::run_nholo("run -q default.toml", dir, cache_env());
  ASSERT_EQ(r0.code, 0) << r0.output;
  const std::vector<double> c = read_f64(dir / "default.h5", "udwadia_kalaba/q");
  ASSERT_EQ(c.size(), a.size());
  EXPECT_NE(std::memcmp(a.data(), c.data(), a.size() * sizeof(double)), 0);
}

}  // namespace
