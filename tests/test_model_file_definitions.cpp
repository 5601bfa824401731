// Tests of [definitions] and energy = "auto" in model files
// (host/model_language/model_file.cpp, expr/parser.cpp, expr/derivative.cpp,
// model_header.cpp): a model written with definitions and the same model
// expanded by hand compute the same bits; errors for cycles, taken names,
// accelerations and rates out of their place; a definition is one shared tree
// (the node limit counts it once, the generated code computes it once); the
// derived energy against energies written out here by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "host/model_language/config_error.hpp"
#include "host/model_language/event_compile.hpp"
#include "host/model_language/model_file.hpp"
#include "tests/compiled_program.hpp"
#include "tests/model_file_cases.hpp"
#include "tests/nholo_cli.hpp"

using nholo::ModelFileError;
using nholo::ModelSpec;
using namespace nholo_test;

namespace {

// A rolling coin on an incline (heading theta, rolling angle phi) with a
// state-dependent mass matrix, drag and an energy, written with definitions
// (kCoinDefinitions) and expanded by hand (kCoinExpanded): the same trees.
const std::string kCoinHead = R"~(
description = "a rolling coin on an incline"
coordinates = [ { name = "x", unit = "m" }, { name = "y", unit = "m" },
                { name = "theta", unit = "rad" }, { name = "phi", unit = "rad" } ]
parameters = [ { name = "m", default = 1.3, unit = "kg" }, { name = "R", default = 0.4, unit = "m" },
               { name = "grav", default = 9.81, unit = "m/s^2" },
               { name = "alpha", default = 0.2, unit = "rad" }, { name = "k", default = 0.05, unit = "1" } ]
)~";

const std::string kCoinDefinitions = "name = \"coin_defs\"" + kCoinHead + R"~(
lagrangian = "T - V"
constraints = [ { name = "roll_x", kind = "velocity", expr = "x_dot - vroll*c" },
                { name = "roll_y", kind = "velocity", expr = "y_dot - vroll*s" } ]
forces = { phi = "-k*vroll*R", theta = "-k*theta_dot*c^2" }
energy = "T + V"
[definitions]
V = "m*grav*sin(alpha)*x + m*grav*R/10*c"
T = "m/2*(x_dot^2 + y_dot^2) + m*R^2/4*theta_dot^2 + m*R^2/2*phi_dot^2 + m*R/8*x_dot*theta_dot*c*s"
c = "cos(theta)"
s = "sin(theta)"
vroll = "R*phi_dot"
unused = "x_ddot + c"
)~";

const std::string kCoinExpanded = "name = \"coin_flat\"" + kCoinHead + R"~(
lagrangian = """(m/2*(x_dot^2 + y_dot^2) + m*R^2/4*theta_dot^2 + m*R^2/2*phi_dot^2
  + m*R/8*x_dot*theta_dot*cos(theta)*sin(theta)) - (m*grav*sin(alpha)*x + m*grav*R/10*cos(theta))"""
constraints = [ { name = "roll_x", kind = "velocity", expr = "x_dot - R*phi_dot*cos(theta)" },
                { name = "roll_y", kind = "velocity", expr = "y_dot - R*phi_dot*sin(theta)" } ]
forces = { phi = "-k*(R*phi_dot)*R", theta = "-k*theta_dot*cos(theta)^2" }
energy = """(m/2*(x_dot^2 + y_dot^2) + m*R^2/4*theta_dot^2 + m*R^2/2*phi_dot^2
  + m*R/8*x_dot*theta_dot*cos(theta)*sin(theta)) + (m*grav*sin(alpha)*x + m*grav*R/10*cos(theta))"""
)~";

// the header of spec with its struct renamed (two models in one program)
std::string renamed_header(const ModelSpec& spec, const std::string& name) {
  std::string h = nholo::generate_model_header(spec);
  for (size_t at = h.find("UserModel"); at != std::string::npos; at = h.find("UserModel", at))
    h.replace(at, 9, name);
  return h;
}

// the body of generated function `fname` in header h (from its name to the
// closing brace of the function)
std::string function_text(const std::string& h, const std::string& fname) {
  const size_t at = h.find(" " + fname + "(");
  EXPECT_NE(at, std::string::npos) << fname;
  if (at == std::string::npos) return "";
  return h.substr(at, h.find("\n  }\n", at) - at);
}

int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(ModelFileDefinitions, SameBitsAsTheModelExpandedByHand) {
  const ModelSpec defs = parse(kCoinDefinitions, "coin_defs.toml");
  const ModelSpec flat = parse(kCoinExpanded, "coin_flat.toml");
  ASSERT_EQ(defs.definitions.size(), 6u);
  // each after the ones it uses
  std::map<std::string, size_t> at;
  for (size_t i = 0; i < defs.definitions.size(); ++i) at[defs.definitions[i].name] = i;
  EXPECT_LT(at["c"], at["V"]);
  EXPECT_LT(at["c"], at["T"]);
  EXPECT_LT(at["s"], at["T"]);
  const std::string program = R"~(#include <cstdio>
#include "kernels/formulations.hpp"
#include "kernels/system.hpp"
#include "defs.hpp"
#include "flat.hpp"
using namespace nholo;
using A = user_models::DefsModel;
using B = user_models::FlatModel;
double worst = 0.0;
void diff(const char* what, double a, double b) {
  const double d = a == b ? 0.0 : std::fabs(a - b) / (1.0 + std::fabs(b));
  if (!(d <= worst)) worst = d;
  if (a != b) std::printf("differ_%s 1\n", what);
}
template <class SA, class SB>
void compare(const char* key, const double* y0) {
  double v[5];
  for (int j = 0; j < 5; ++j) v[j] = A::param_info[j].default_value;
  SA a{};
  SB b{};
  a.params = A::make_params(v);
  b.params = B::make_params(v);
  Vec<double, SA::N> y, da, db;
  for (int i = 0; i < SA::N; ++i) y[i] = y0[i % 8];
  const Status sa = a(0.3, y, da), sb = b(0.3, y, db);
  diff(key, double(sa), double(sb));
  for (int i = 0; i < SA::N; ++i) diff(key, da[i], db[i]);
}
int main() {
  std::mt19937_64 rng(52);
  std::uniform_real_distribution<double> u(-1.5, 1.5);
  double v[5];
  for (int j = 0; j < 5; ++j) v[j] = A::param_info[j].default_value;
  const A::Params pa = A::make_params(v);
  const B::Params pb = B::make_params(v);
  for (int trial = 0; trial < 6; ++trial) {
    double y0[8];
    for (double& x : y0) x = u(rng);
    Vec<double, 4> q, qd;
    for (int i = 0; i < 4; ++i) { q[i] = y0[i]; qd[i] = y0[4 + i]; }
    diff("L", A::lagrangian(pa, q, qd, 0.3), B::lagrangian(pb, q, qd, 0.3));
    diff("E", A::energy(pa, q, qd, 0.3), B::energy(pb, q, qd, 0.3));
    for (int l = 0; l < 2; ++l)
      diff("g", A::velocity_constraints(pa, q, qd, 0.3)[l], B::velocity_constraints(pb, q, qd, 0.3)[l]);
    for (int i = 0; i < 4; ++i)
      diff("Q", A::nonpotential_force(pa, q, qd, 0.3)[i], B::nonpotential_force(pb, q, qd, 0.3)[i]);
    Mat<double, 4, 4> Ma, Mb;
    Vec<double, 4> Fa, Fb;
    A::hand_dynamics(pa, q, qd, 0.3, Ma, Fa);
    B::hand_dynamics(pb, q, qd, 0.3, Mb, Fb);
    for (int i = 0; i < 4; ++i) {
      diff("F", Fa[i], Fb[i]);
      for (int j = 0; j < 4; ++j) diff("M", Ma(i, j), Mb(i, j));
    }
    compare<UdwadiaKalabaSystem<A>, UdwadiaKalabaSystem<B>>("uk", y0);
    compare<LagrangeMultiplierSystem<A>, LagrangeMultiplierSystem<B>>("lm", y0);
    compare<NullSpaceSystem<A>, NullSpaceSystem<B>>("ns", y0);
  }
  std::printf("worst %.17g\n", worst);
  return 0;
}
)~";
  std::string skip;
  const auto got = compile_and_run_files("definitions",
                                         {{"defs.hpp", renamed_header(defs, "DefsModel")},
                                          {"flat.hpp", renamed_header(flat, "FlatModel")}},
                                         "#include <cmath>\n#include <random>\n" + program, &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_TRUE(got.count("worst"));
  // every value of every function and formulation: the same bits
  EXPECT_EQ(got.at("worst"), 0.0);
  for (const auto& [key, value] : got) EXPECT_EQ(key.rfind("differ_", 0), std::string::npos) << key;
}

TEST(ModelFileDefinitions, SharedNodesArePrintedOnce) {
  const ModelSpec s = parse(R"~(
name = "shared"
description = "a definition used five times"
coordinates = [ { name = "x", unit = "m" }, { name = "y", unit = "m" } ]
lagrangian = "x_dot^2/2 + y_dot^2/2 + d + d*x_dot + d^2 + y_dot*d + d/2"
constraints = [ { name = "c1", kind = "velocity", expr = "x_dot - d*y_dot" } ]
energy = "x_dot^2/2 + y_dot^2/2 - d - d^2 - d/2"
definitions = { d = "sin(x)*y" }
)~");
  const std::string h = nholo::generate_model_header(s);
  const std::string lag = function_text(h, "lagrangian");
  EXPECT_EQ(count_of(lag, "sin(q[0])"), 1) << lag;
  EXPECT_EQ(count_of(lag, "const S c"), 1) << lag;  // d, once
  EXPECT_EQ(count_of(lag, "c0"), 6) << lag;         // defined, then used five times
  const std::string en = function_text(h, "energy");
  EXPECT_EQ(count_of(en, "sin(q[0])"), 1) << en;
  // used once in the constraint: printed in place, no temporary
  const std::string g = function_text(h, "velocity_constraints");
  EXPECT_EQ(count_of(g, "sin(q[0])"), 1) << g;
  EXPECT_EQ(count_of(g, "const S c"), 0) << g;
}

// Without definitions too, a subexpression written twice is one node of
// the model's shared graph (expr/graph.*), printed once: the skate's cos
// and sin of theta in each function, once each
TEST(ModelFileDefinitions, ModelsWithoutDefinitionsShareRepeatedSubexpressionsToo) {
  const std::string h = nholo::generate_model_header(parse(kSkate, "skate.toml"));
  for (const char* f : {"lagrangian", "energy", "velocity_constraints", "conflated_lagrangian"}) {
    const std::string text = function_text(h, f);
    EXPECT_LE(count_of(text, "cos(q[2])"), 1) << f << "\n" << text;
    EXPECT_LE(count_of(text, "sin(q[2])"), 1) << f << "\n" << text;
  }
  EXPECT_EQ(count_of(function_text(h, "lagrangian"), "const S c0 = S(cos(q[2]));"), 1) << h;
}

TEST(ModelFileDefinitions, ADefinitionCountsOnceTowardTheNodeLimit) {
  // 1,201 nodes, named eight times: 9,608 nodes expanded plus the rest would
  // pass the limit of 10,000 twice over with a second such definition
  std::string big = "x";
  for (int i = 0; i < 300; ++i) big += " + " + std::to_string(i) + "*x*y";
  std::string text = R"~(
name = "big"
description = "two large definitions, each named eight times"
coordinates = [ { name = "x", unit = "m" }, { name = "y", unit = "m" } ]
lagrangian = "x_dot^2/2 + y_dot^2/2 + a + a + a + a + a + a + a + a + b + b + b + b + b + b + b + b"
[definitions]
)~";
  text += "a = \"" + big + "\"\nb = \"2*(" + big + ")\"\n";
  EXPECT_NO_THROW(parse(text));
}

TEST(ModelFileDefinitions, AChainOfDefinitionsIsNotExpanded) {
  // d_k uses d_(k-1) three times: expanded, d_60 would have 3^60 nodes
  std::string text = R"~(
name = "chain"
description = "definitions nested 60 deep"
coordinates = [ { name = "x", unit = "m" } ]
lagrangian = "x_dot^2/2*(1 + d60^2)"
constraints = [ ]
[definitions]
d0 = "sin(x)"
)~";
  for (int k = 1; k <= 60; ++k) {
    const std::string p = "d" + std::to_string(k - 1);
    text += "d" + std::to_string(k) + " = \"" + p + "*" + p + "/2 + cos(" + p + ")\"\n";
  }
  const ModelSpec s = parse(text);
  const std::string h = nholo::generate_model_header(s);
  EXPECT_LT(h.size(), 200000u);
  const double v = nholo::model_file::evaluate(s, s.lagrangian, {0.3}, {0.7}, {}, 0.0);
  double d = std::sin(0.3);
  for (int k = 1; k <= 60; ++k) d = d * d / 2 + std::cos(d);
  EXPECT_EQ(v, 0.7 * 0.7 / 2 * (1 + d * d));
}

TEST(ModelFileDefinitions, AChainOfParameterDefinitionsIsComputedOnceByMakeParams) {
  // parameter-only definitions are hoisted into Params::k, each its own slot
  std::string text = R"~(
name = "param_chain"
description = "parameter definitions nested 40 deep"
coordinates = [ { name = "x", unit = "m" } ]
parameters = [ { name = "lam", default = 0.3, unit = "rad" } ]
lagrangian = "x_dot^2/2*(1 + e40^2) - e40*x"
[definitions]
e0 = "sin(lam)"
)~";
  for (int k = 1; k <= 40; ++k) {
    const std::string p = "e" + std::to_string(k - 1);
    text += "e" + std::to_string(k) + " = \"" + p + "*" + p + "/2 + cos(" + p + ")\"\n";
  }
  const ModelSpec s = parse(text);
  const std::string h = nholo::generate_model_header(s);
  EXPECT_LT(h.size(), 100000u);
  const std::string mp = function_text(h, "make_params");
  EXPECT_EQ(count_of(mp, "sin(p.v[0])"), 1) << mp;
  const double v = nholo::model_file::evaluate(s, s.lagrangian, {0.5}, {0.7}, {}, 0.0);
  double e = std::sin(0.3);
  for (int k = 1; k <= 40; ++k) e = e * e / 2 + std::cos(e);
  EXPECT_EQ(v, 0.7 * 0.7 / 2 * (1 + e * e) - e * 0.5);
}

// ---------------------------------------------------------------------------
// Errors

TEST(ModelFileDefinitions, ACycleIsRefusedNamingIt) {
  Model md;
  md.add("[definitions]");
  const int la = md.add(R"~(a = "b + x")~");
  md.add(R"~(b = "2*a")~");
  md.add(R"~(c = "x_dot")~");
  expect_error(md, {md.at(la, "\"b + x\"") + ": definitions: a -> b -> a: ", "in a cycle"});
  Model self;
  self.add("[definitions]");
  const int ls = self.add(R"~(e = "e + 1")~");
  expect_error(self, {self.at(ls, "\"e + 1\"") + ": definitions: e -> e: "});
  Model three;
  three.add("[definitions]");
  three.add(R"~(k = "u*2")~");
  three.add(R"~(u = "v + w")~");
  three.add(R"~(v = "theta")~");
  three.add(R"~(w = "k - 1")~");
  expect_error(three, {": definitions: k -> u -> w -> k: "});
}

TEST(ModelFileDefinitions, ANameTakenIsRefusedWithTheNamesTaken) {
  for (const char* name :
       {"x", "x_dot", "theta_ddot", "m", "J", "sin", "atan2", "t", "pi", "v_dot"}) {
    Model md;
    md.add("[definitions]");
    const int l = md.add(std::string(name) + " = \"x + 1\"");
    expect_error(md, {md.at(l, name) + ": definitions." + name + ": '" + name + "' is taken",
                      "coordinates (x, y, theta)", "parameters (m, J)", "_dot or _ddot", "t, pi",
                      "a function (sin, cos"});
  }
  Model bad;
  bad.add("[definitions]");
  bad.add(R"~("2v" = "x")~");
  expect_error(bad, {": definitions.2v: invalid definition name '2v'"});
  Model not_table;
  not_table.add(R"~(definitions = "x")~");
  expect_error(not_table, {": definitions: expected a table"});
}

TEST(ModelFileDefinitions, AccelerationsAndRatesOnlyWhereAllowed) {
  Model acc;
  acc.set(Model::kLagrangian,
          R"~(lagrangian = "m/2*(x_dot^2 + y_dot^2) + J/2*theta_dot^2 + jerk")~");
  acc.add("[definitions]");
  acc.add(R"~(jerk = "x_ddot*y")~");
  expect_error(acc, {": lagrangian: ",
                     "position 45: 'jerk' is a definition that uses "
                     "accelerations: accelerations may appear only in "
                     "acceleration constraints"});
  Model ok;
  ok.set(Model::kConstraints,
         R"~(constraints = [ { name = "a", kind = "acceleration", expr = "jerk + theta_dot" } ])~");
  ok.add("[definitions]");
  ok.add(R"~(jerk = "x_ddot*cos(theta) + y_ddot*sin(theta)")~");
  EXPECT_NO_THROW(parse(ok.text()));
  // not linear through a definition: the position is the constraint's start
  Model square;
  square.set(
      Model::kConstraints,
      R"~(constraints = [ { name = "a", kind = "acceleration", expr = "theta_dot + jerk" } ])~");
  square.add("[definitions]");
  square.add(R"~(jerk = "x_ddot*x_ddot")~");
  expect_error(square, {expr_part("constraints[0].expr", "theta_dot + jerk", 1) +
                        "an acceleration constraint must be linear in the accelerations"});
  Model rate;
  rate.set(Model::kConstraints,
           R"~(constraints = [ { name = "p", kind = "position", expr = "x - v" } ])~");
  rate.add("[definitions]");
  rate.add(R"~(v = "y*theta_dot")~");
  expect_error(rate, {": constraints[0].expr: \"x - v\": position 5: 'v' is a definition that "
                      "uses rates"});
}

TEST(ModelFileDefinitions, AnErrorInsideADefinitionNamesItsKey) {
  Model md;
  md.add("[definitions]");
  const int l = md.add(R"~(v = "x_dot +* 2")~");
  expect_error(md, {md.at(l, "\"x_dot") + expr_part("definitions.v", "x_dot +* 2", 8)});
  Model unknown;
  unknown.add("[definitions]");
  unknown.add(R"~(w = "x + z")~");
  expect_error(unknown, {expr_part("definitions.w", "x + z", 5) + "unknown name 'z'",
                         "accelerations: x_ddot"});
}

// ---------------------------------------------------------------------------
// Events

TEST(ModelFileDefinitions, EventsUseTheModelsDefinitions) {
  const ModelSpec s = parse(kCoinDefinitions + R"~(
[[events]]
name = "downhill"
expr = "c*vroll"
)~");
  ASSERT_EQ(s.events.size(), 1u);
  const std::vector<std::string> coords = {"x", "y", "theta", "phi"};
  const std::vector<std::string> params = {"m", "R", "grav", "alpha", "k"};
  const std::vector<double> values = {1.3, 0.4, 9.81, 0.2, 0.05};
  // a run's own event too, and the program is the expanded expression's
  nholo::EventConfig own = s.events[0];
  own.name = "own";
  own.expr = "vroll - s";
  const nholo::EventTable with =
      nholo::compile_event_table({s.events[0], own}, coords, params, values, {}, &s);
  nholo::EventConfig e1 = s.events[0], e2 = own;
  e1.expr = "cos(theta)*(R*phi_dot)";
  e2.expr = "R*phi_dot - sin(theta)";
  const nholo::EventTable flat = nholo::compile_event_table({e1, e2}, coords, params, values, {});
  for (int k = 0; k < 2; ++k) {
    ASSERT_EQ(with.events[k].n_instr, flat.events[k].n_instr);
    for (int i = 0; i < flat.events[k].n_instr; ++i) {
      EXPECT_EQ(with.events[k].instr[i].op, flat.events[k].instr[i].op);
      EXPECT_EQ(with.events[k].instr[i].index, flat.events[k].instr[i].index);
      EXPECT_EQ(with.events[k].instr[i].value, flat.events[k].instr[i].value);
    }
  }
  // without the model's definitions the name is unknown
  EXPECT_THROW(nholo::compile_event_table({own}, coords, params, values, {}), nholo::ConfigError);
}

// ---------------------------------------------------------------------------
// energy = "auto"

struct State {
  std::vector<double> q, qd;
  double t;
};

std::vector<State> random_states(size_t n, int count) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  std::vector<State> v;
  for (int k = 0; k < count; ++k) {
    State s{std::vector<double>(n), std::vector<double>(n), u(rng)};
    for (size_t i = 0; i < n; ++i) {
      s.q[i] = u(rng);
      s.qd[i] = u(rng);
    }
    v.push_back(s);
  }
  return v;
}

TEST(ModelFileEnergyAuto, CartPendulumWithDefinitions) {
  const ModelSpec s = parse(R"~(
name = "cart_pendulum"
description = "a pendulum hanging from a cart"
coordinates = [ { name = "x", unit = "m" }, { name = "th", unit = "rad" } ]
parameters = [ { name = "M", default = 2.0, unit = "kg" }, { name = "m", default = 0.5, unit = "kg" },
               { name = "l", default = 0.7, unit = "m" }, { name = "g", default = 9.81, unit = "m/s^2" } ]
lagrangian = "T - V"
energy = "auto"
[definitions]
vx = "x_dot + l*th_dot*cos(th)"
vy = "l*th_dot*sin(th)"
T = "M/2*x_dot^2 + m/2*(vx^2 + vy^2)"
V = "-m*g*l*cos(th)"
)~");
  EXPECT_TRUE(s.energy_derived);
  EXPECT_TRUE(nholo::model_file::energy_not_conserved(s).empty());
  const double M = 2.0, m = 0.5, l = 0.7, g = 9.81;
  for (const State& st : random_states(2, 20)) {
    const double xd = st.qd[0], th = st.q[1], thd = st.qd[1];
    // T2 + V: the kinetic energy is quadratic in the rates
    const double want = (M + m) / 2 * xd * xd + m * l * xd * thd * std::cos(th) +
                        m * l * l / 2 * thd * thd - m * g * l * std::cos(th);
    const double got = nholo::model_file::evaluate(s, s.energy, st.q, st.qd, {}, st.t);
    EXPECT_NEAR(got, want, 1e-13 * (1 + std::fabs(want)));
  }
}

TEST(ModelFileEnergyAuto, RotatingFrameGivesT2MinusT0PlusV) {
  // a particle in a frame turning at W: L = T2 + T1 + T0 - V, h = T2 - T0 + V
  const ModelSpec s = parse(R"~(
name = "rotating"
description = "a particle on a spring in a rotating frame"
coordinates = [ { name = "x", unit = "m" }, { name = "y", unit = "m" } ]
parameters = [ { name = "m", default = 1.4, unit = "kg" }, { name = "W", default = 0.8, unit = "1/s" },
               { name = "k", default = 3.0, unit = "N/m" } ]
lagrangian = "m/2*((x_dot - W*y)^2 + (y_dot + W*x)^2) - k/2*(x^2 + y^2)"
energy = "auto"
)~");
  const double m = 1.4, W = 0.8, k = 3.0;
  for (const State& st : random_states(2, 20)) {
    const double x = st.q[0], y = st.q[1], xd = st.qd[0], yd = st.qd[1];
    const double want =
        m / 2 * (xd * xd + yd * yd) - m * W * W / 2 * (x * x + y * y) + k / 2 * (x * x + y * y);
    const double got = nholo::model_file::evaluate(s, s.energy, st.q, st.qd, {}, st.t);
    EXPECT_NEAR(got, want, 1e-13 * (1 + std::fabs(want)));
  }
}

TEST(ModelFileEnergyAuto, TheCoinsEnergyAsWrittenByHand) {
  std::string text = kCoinDefinitions;
  text.replace(text.find("energy = \"T + V\""), 16, "energy = \"auto\"");
  const ModelSpec s = parse(text);
  const ModelSpec hand = parse(kCoinDefinitions);
  for (const State& st : random_states(4, 20)) {
    const double want = nholo::model_file::evaluate(hand, hand.energy, st.q, st.qd, {}, st.t);
    const double got = nholo::model_file::evaluate(s, s.energy, st.q, st.qd, {}, st.t);
    EXPECT_NEAR(got, want, 1e-13 * (1 + std::fabs(want)));
  }
  // its drag does work
  const std::vector<std::string> why = nholo::model_file::energy_not_conserved(s);
  ASSERT_EQ(why.size(), 1u);
  EXPECT_EQ(why[0], "the model has non-potential forces");
}

TEST(ModelFileEnergyAuto, SaysWhyItIsNotConserved) {
  using nholo::model_file::energy_not_conserved;
  // the block: forces, non-ideal forces, a plane moving with t
  const std::vector<std::string> block = energy_not_conserved(parse(kBlock));
  ASSERT_EQ(block.size(), 3u);
  EXPECT_EQ(block[2], "constraint plane depends on t (rheonomic)");
  Model driven;
  driven.set(Model::kLagrangian,
             R"~(lagrangian = "m/2*(x_dot^2 + y_dot^2) + J/2*theta_dot^2 + x*sin(t)")~");
  driven.set(Model::kConstraints,
             R"~(constraints = [ { name = "push", kind = "velocity", expr = "x_dot - y" } ])~");
  const std::vector<std::string> why = energy_not_conserved(parse(driven.text()));
  ASSERT_EQ(why.size(), 2u);
  EXPECT_EQ(why[0], "the Lagrangian depends on t explicitly");
  EXPECT_EQ(why[1],
            "constraint push is not homogeneous of degree 1 in the rates (its force does work)");
  // the knife edge (linear, homogeneous in the rates) does no work
  EXPECT_TRUE(energy_not_conserved(parse(Model().text())).empty());
}

// `nholo model check` lists the definitions and says whether the energy is
// derived and expected to be conserved
TEST(ModelFileEnergyAuto, ModelCheckSaysWhetherTheEnergyIsConserved) {
  const auto dir = nholo_test::temp_dir("nholo_model_definitions", "check");
  std::string text = kCoinDefinitions;
  text.replace(text.find("energy = \"T + V\""), 16, "energy = \"auto\"");
  nholo_test::write_file(dir / "coin.model.toml", text);
  const nholo_test::Result r = nholo_test::run_nholo("model check coin.model.toml", dir);
  ASSERT_EQ(r.code, 0) << r.output;
  for (const char* line :
       {"  definitions (shared in the generated code): c s T V unused vroll\n",
        "  energy: derived, the Jacobi integral sum_i qd_i dL/dqd_i - L; not expected to be "
        "conserved: the model has non-potential forces\n"})
    EXPECT_NE(r.output.find(line), std::string::npos) << r.output;
  nholo_test::write_file(dir / "free.model.toml", std::string(kFree) + "energy = \"auto\"\n");
  const nholo_test::Result f = nholo_test::run_nholo("model check free.model.toml", dir);
  EXPECT_NE(f.output.find("  energy: derived, the Jacobi integral sum_i qd_i dL/dqd_i - L; "
                          "expected to be conserved\n"),
            std::string::npos)
      << f.output;
}

TEST(ModelFileEnergyAuto, OmittedMeansNoEnergy) {
  const ModelSpec s = parse(Model().text());
  EXPECT_FALSE(s.energy_derived);
  EXPECT_TRUE(s.energy.text.empty());
  EXPECT_FALSE(s.energy.tree);
}

}  // namespace
