// Tests of the [[events]] of a run configuration (host/config/parse_events.cpp)
// and their compilation for the kernels (host/config/event_table.hpp,
// host/model_language/event_compile.cpp):
// every bad entry refused with its key and what is accepted, a good entry read
// with its values, the events part of the configuration's hash, and the
// compiled program (kernels/event_program.hpp's interpreter) equal to the same
// function written in C++ at random states.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "host/config/config.hpp"
#include "host/config/event_table.hpp"
#include "host/config/model_info.hpp"
#include "host/model_language/model_file.hpp"
#include "kernels/event_program.hpp"
#include "tests/config_error_check.hpp"

using namespace nholo;

namespace {

// the rolling coin (coordinates x, y, phi, theta; parameters mass, radius,
// g, slope), with `extra` appended (the [[events]] tables)
std::string coin_text(const std::string& extra, const std::string& ensemble = "") {
  return R"(
model = "rolling_coin"
[time]
t_end = 1.0
[ensemble]
size = 4
)" + ensemble +
         R"(
[output]
path = "x.h5"
)" + extra;
}

std::string one_event(const std::string& body) {
  return "[[events]]\n" + body + "\n";
}

using nholo_test::expect_config_error;

// the fields of an [[events]] table, to compare at once
auto fields(const EventConfig& e) {
  return std::tie(e.name, e.expr, e.direction, e.action, e.max_records, e.subdivisions);
}

// the coin's config with these [[events]] refused at `key`
void expect_refused(const std::string& events, const std::string& key,
                    const std::vector<std::string>& words) {
  expect_config_error([&] { parse_config(coin_text(events), {}); }, key, words);
}

const std::vector<std::string> kCoords = {"x", "y", "phi", "theta"};
const std::vector<std::string> kParams = {"mass", "radius", "g", "slope"};
const std::vector<double> kValues = {1.5, 0.7, 9.81, 0.3};

EventConfig event(const std::string& name, const std::string& expr) {
  EventConfig e;
  e.name = name;
  e.expr = expr;
  return e;
}

EventTable compile(const std::vector<EventConfig>& events,
                   const std::vector<std::string>& varied = {}) {
  return compile_event_table(events, kCoords, kParams, kValues, varied);
}

void expect_compile_error(const std::string& expr, const std::vector<std::string>& words) {
  expect_config_error([&] { compile({event("e", expr)}); }, "events[0].expr", words);
}

// ---------------------------------------------------------------------------
// Reading [[events]]

TEST(EventConfig, ReadsEveryKeyAndTheDefaults) {
  const RunConfig cfg = parse_config(coin_text(R"toml(
[[events]]
name = "half_turn"
expr = "sin(theta)"
direction = "up"
action = "stop"
max_records = 7
subdivisions = 16

[[events]]
name = "x_crosses"
expr = "x - 0.5*t"
)toml"),
                                     {});
  ASSERT_EQ(cfg.events.size(), 2u);
  EXPECT_EQ(fields(cfg.events[0]),
            fields(EventConfig{"half_turn", "sin(theta)", "up", "stop", 7, 16}));
  EXPECT_EQ(fields(cfg.events[1]),
            fields(EventConfig{"x_crosses", "x - 0.5*t", "both", "record", 100, 1}));
  // no [[events]]: none; max_records = 0 (count only) and the limits accepted
  EXPECT_TRUE(parse_config(coin_text(""), {}).events.empty());
  const RunConfig edge = parse_config(
      coin_text(one_event("name = \"a\"\nexpr = \"x\"\nmax_records = 0\nsubdivisions = 1") +
                one_event("name = \"b\"\nexpr = \"y\"\nmax_records = 1000000\nsubdivisions = 64")),
      {});
  EXPECT_EQ(edge.events[0].max_records, 0);
  EXPECT_EQ(edge.events[0].subdivisions, 1);
  EXPECT_EQ(edge.events[1].max_records, 1000000);
  EXPECT_EQ(edge.events[1].subdivisions, 64);
  // the array written inline (as --set events=[...] gives it) reads the same
  const RunConfig inl = parse_config(
      "events = [ { name = \"a\", expr = \"x\", direction = \"down\" } ]\n" + coin_text(""), {});
  ASSERT_EQ(inl.events.size(), 1u);
  EXPECT_EQ(inl.events[0].direction, "down");
}

// --set reaches an event's keys by the entry's index; an index the config
// does not have, or a key that is no table, is refused with what exists
TEST(EventConfig, SetReachesAnEventsKeysByIndex) {
  const std::string two =
      coin_text(one_event("name = \"a\"\nexpr = \"x\"") + one_event("name = \"b\"\nexpr = \"y\""));
  const RunConfig cfg = parse_config(
      two, {"events[1].expr=\"x - 3\"", "events[0].max_records=5", "events[1].direction=up"});
  ASSERT_EQ(cfg.events.size(), 2u);
  EXPECT_EQ(cfg.events[0].expr, "x");
  EXPECT_EQ(cfg.events[0].max_records, 5);
  EXPECT_EQ(cfg.events[1].expr, "x - 3");
  EXPECT_EQ(cfg.events[1].direction, "up");
  expect_config_error([&] { parse_config(two, {"events[2].expr=x"}); }, "--set events[2].expr",
                      {"'events' has 2 entries", "no entry 2"});
  expect_config_error([&] { parse_config(coin_text(""), {"events[0].expr=x"}); },
                      "--set events[0].expr", {"'events' is not an array of tables"});
  expect_config_error([&] { parse_config(two, {"events[x].expr=x"}); }, "--set events[x].expr",
                      {"accepted a name or name[k]"});
  expect_config_error([&] { parse_config(two, {"events[0]=x"}); }, "--set events[0]",
                      {"key by key"});
  // the override reaches the check of the value like any other key
  expect_config_error([&] { parse_config(two, {"events[0].direction=sideways"}); },
                      "events[0].direction", {"sideways"});
}

TEST(EventConfig, EventsArePartOfTheEffectiveTextAndTheHash) {
  const RunConfig a = parse_config(coin_text(one_event("name = \"e\"\nexpr = \"sin(theta)\"")), {});
  const RunConfig b = parse_config(coin_text(one_event("name = \"e\"\nexpr = \"cos(theta)\"")), {});
  const RunConfig c = parse_config(coin_text(one_event("name = \"e\"\nexpr = \"sin(theta)\"")), {});
  const RunConfig none = parse_config(coin_text(""), {});
  EXPECT_NE(a.result_hash, b.result_hash);
  EXPECT_EQ(a.result_hash, c.result_hash);
  EXPECT_NE(a.result_hash, none.result_hash);
  // another key of an event changes it too
  const RunConfig d = parse_config(
      coin_text(one_event("name = \"e\"\nexpr = \"sin(theta)\"\nmax_records = 3")), {});
  EXPECT_NE(a.result_hash, d.result_hash);
  // the effective text holds the events: it reads back as the same configuration
  EXPECT_NE(a.text.find("sin(theta)"), std::string::npos) << a.text;
  const RunConfig again = parse_config(a.text, {});
  ASSERT_EQ(again.events.size(), 1u);
  EXPECT_EQ(again.events[0].expr, "sin(theta)");
  EXPECT_EQ(again.result_hash, a.result_hash);
}

TEST(EventConfig, RefusesMissingAndMalformedNames) {
  expect_refused(one_event("expr = \"x\""), "events[0].name", {"missing", "name, expr"});
  expect_refused(one_event("name = \"e\""), "events[0].expr", {"missing", "name, expr"});
  expect_refused(one_event("name = \"\"\nexpr = \"x\""), "events[0].name",
                 {"empty", "[A-Za-z][A-Za-z0-9_]*"});
  expect_refused(one_event("name = \"2turns\"\nexpr = \"x\""), "events[0].name",
                 {"\"2turns\"", "not a name", "a letter, then letters, digits and _"});
  expect_refused(one_event("name = \"half turn\"\nexpr = \"x\""), "events[0].name",
                 {"\"half turn\"", "not a name"});
  expect_refused(one_event("name = \"a/b\"\nexpr = \"x\""), "events[0].name", {"not a name"});
  expect_refused(one_event("name = \"e\"\nexpr = \"x\"") + one_event("name = \"f\"\nexpr = \"y\"") +
                     one_event("name = \"e\"\nexpr = \"t - 1\""),
                 "events[2].name", {"'e'", "events[0]"});
  expect_refused(one_event("name = \"e\"\nexpr = \"\""), "events[0].expr", {"empty"});
}

TEST(EventConfig, RefusesChoicesAndNumbersOutsideTheirRange) {
  const std::string e = "name = \"e\"\nexpr = \"x\"\n";
  expect_refused(one_event(e + "direction = \"sideways\""), "events[0].direction",
                 {"'sideways'", "up, down, both"});
  expect_refused(one_event(e + "direction = \"Up\""), "events[0].direction", {"up, down, both"});
  expect_refused(one_event(e + "action = \"pause\""), "events[0].action",
                 {"'pause'", "record, stop"});
  expect_refused(one_event(e + "max_records = -1"), "events[0].max_records",
                 {"-1", "[0, 1000000]"});
  expect_refused(one_event(e + "max_records = 1000001"), "events[0].max_records",
                 {"1000001", "[0, 1000000]"});
  expect_refused(one_event(e + "max_records = 10000000000000"), "events[0].max_records",
                 {"10000000000000", "[0, 1000000]"});
  expect_refused(one_event(e + "subdivisions = 0"), "events[0].subdivisions", {"0", "[1, 64]"});
  expect_refused(one_event(e + "subdivisions = 65"), "events[0].subdivisions", {"65", "[1, 64]"});
  expect_refused(one_event(e + "subdivisions = -3"), "events[0].subdivisions", {"[1, 64]"});
  // the second event's key
  expect_refused(one_event(e) + one_event("name = \"f\"\nexpr = \"y\"\naction = \"halt\""),
                 "events[1].action", {"record, stop"});
}

TEST(EventConfig, RefusesWrongTomlTypesUnknownKeysAndTooManyEvents) {
  expect_refused(one_event("name = 3\nexpr = \"x\""), "events[0].name",
                 {"expected a string", "integer"});
  expect_refused(one_event("name = \"e\"\nexpr = 1.5"), "events[0].expr", {"expected a string"});
  expect_refused(one_event("name = \"e\"\nexpr = \"x\"\ndirection = 1"), "events[0].direction",
                 {"expected a string"});
  expect_refused(one_event("name = \"e\"\nexpr = \"x\"\naction = true"), "events[0].action",
                 {"expected a string"});
  expect_refused(one_event("name = \"e\"\nexpr = \"x\"\nmax_records = 2.5"),
                 "events[0].max_records", {"expected an integer"});
  expect_refused(one_event("name = \"e\"\nexpr = \"x\"\nmax_records = \"10\""),
                 "events[0].max_records", {"expected an integer", "string"});
  expect_refused(one_event("name = \"e\"\nexpr = \"x\"\nsubdivisions = [4]"),
                 "events[0].subdivisions", {"expected an integer"});
  expect_refused("[events]\nname = \"e\"\nexpr = \"x\"\n", "events",
                 {"expected an array of tables", "[[events]]"});
  expect_config_error([&] { parse_config("events = [1, 2]\n" + coin_text(""), {}); }, "events[0]",
                      {"expected a table"});
  expect_config_error([&] { parse_config("events = \"sin(theta)\"\n" + coin_text(""), {}); },
                      "events", {"expected an array of tables", "a string"});
  // unknown keys, with the accepted ones, before the model is even looked at
  const std::string accepted = "name, expr, direction, action, max_records, subdivisions";
  expect_refused(one_event("name = \"e\"\nexpr = \"x\"\nwhen = \"always\""), "events[0].when",
                 {"unknown key", accepted});
  expect_refused(one_event("name = \"e\"\nexpr = \"x\"") +
                     one_event("name = \"f\"\nexpr = \"x\"\nmax_record = 3"),
                 "events[1].max_record", {"unknown key", accepted});
  expect_config_error(
      [&] {
        parse_config("model = \"no_such_model\"\n" +
                         one_event("name = \"e\"\nexpr = \"x\"\nterminal = true"),
                     {});
      },
      "events[0].terminal", {"unknown key"});
  // at most 8
  std::string nine;
  for (int k = 0; k < 9; ++k)
    nine += one_event("name = \"e" + std::to_string(k) + "\"\nexpr = \"x - " + std::to_string(k) +
                      "\"");
  expect_refused(nine, "events", {"9 [[events]]", "at most 8"});
  std::string eight;
  for (int k = 0; k < 8; ++k)
    eight += one_event("name = \"e" + std::to_string(k) + "\"\nexpr = \"x - " + std::to_string(k) +
                       "\"");
  EXPECT_EQ(parse_config(coin_text(eight), {}).events.size(), 8u);
}

TEST(EventConfig, ExpressionsAreCheckedAgainstTheModelsNames) {
  auto expr = [](const std::string& x) { return one_event("name = \"e\"\nexpr = \"" + x + "\""); };
  // an unknown name: the position and every name accepted
  expect_refused(expr("sin(thet)"), "events[0].expr",
                 {"\"sin(thet)\"", "position 5", "unknown name 'thet'",
                  "coordinates: x, y, phi, theta", "rates: x_dot, y_dot, phi_dot, theta_dot",
                  "parameters: mass, radius, g, slope", "t, pi", "functions: sin"});
  expect_refused(expr("x - omega*t"), "events[0].expr", {"position 5", "unknown name 'omega'"});
  // syntax errors, with their position
  expect_refused(expr("sin(theta"), "events[0].expr", {"position 4", "never closed"});
  expect_refused(expr("x +* y"), "events[0].expr", {"position 4", "expected an operand"});
  expect_refused(expr("2x"), "events[0].expr", {"position 1", "malformed number"});
  expect_refused(expr("atan2(x)"), "events[0].expr", {"atan2 takes 2 arguments"});
  expect_refused(expr("foo(x)"), "events[0].expr", {"unknown function 'foo'"});
  // accelerations: events read t, q and qd only
  expect_refused(
      expr("theta_ddot + x"), "events[0].expr",
      {"position 1", "'theta_ddot' is an acceleration", "t, the coordinates, their rates"});
  // an expression of constants never changes sign
  expect_refused(expr("slope - 0.1"), "events[0].expr", {"never changes sign"});
  // a constant part that is not finite, where it is
  expect_refused(expr("x - 1/(slope - slope)"), "events[0].expr",
                 {"position 6", "division by zero"});
  expect_refused(expr("x + log(g - g)"), "events[0].expr", {"position 5", "not finite"});
  // a parameter varied per trajectory is no constant: not folded, no error
  const RunConfig sweep =
      parse_config(coin_text(expr("x - 1/(slope - 0.3)"),
                             "[ensemble.params]\nslope = { uniform = [0.1, 0.2] }\n"),
                   {});
  EXPECT_EQ(sweep.events.size(), 1u);
  // the names of a model file's model
  const std::string skate = std::string(NHOLO_SOURCE_DIR) + "/tests/model_files/skate.toml";
  const std::string file_model = "model = \"" + skate +
                                 "\"\n[time]\nt_end = 1.0\n"
                                 "[output]\npath = \"x.h5\"\n";
  EXPECT_EQ(parse_config(file_model + expr("y_dot*cos(theta) - inertia*t"), {}).events.size(), 1u);
  expect_config_error([&] { parse_config(file_model + expr("phi"), {}); }, "events[0].expr",
                      {"unknown name 'phi'", "coordinates: x, y, theta",
                       "parameters: mass, offset, inertia, g, slope"});
}

TEST(EventConfig, TooLongOrTooDeepExpressionsAreRefused) {
  // 49 products: 49 * 3 + 48 = 195 instructions
  std::string sum = "x*t";
  for (int k = 1; k < 49; ++k) sum += " + x*t";
  expect_compile_error(sum, {"too long", "195 instructions", "96"});
  expect_refused(one_event("name = \"e\"\nexpr = \"" + sum + "\""), "events[0].expr",
                 {"too long", "96"});
  // 51 instructions, but 25 nested powers need 26 stack slots
  std::string tower = "x";
  for (int k = 0; k < 25; ++k) tower = "x^(" + tower + ")";
  expect_compile_error(tower, {"nested too deeply", "26 values", "24"});
  // a long constant part folds into one instruction
  std::string constant = "1";
  for (int k = 0; k < 200; ++k) constant += " + slope*pi";
  const EventTable t = compile({event("e", "x - (" + constant + ")")});
  EXPECT_EQ(t.events[0].n_instr, 3);
}

// ---------------------------------------------------------------------------
// The compiled program

struct State {
  double t;
  double q[4], qd[4];
};

std::vector<State> random_states(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-3.0, 3.0), pos(0.2, 4.0);
  std::vector<State> v(n);
  for (auto& s : v) {
    s.t = pos(rng);
    for (int c = 0; c < 4; ++c) {
      s.q[c] = c == 0 ? pos(rng) : u(rng);  // x > 0 (a power's base)
      s.qd[c] = u(rng);
    }
  }
  return v;
}

double value_at(const EventFunction& f, const State& s, const double* varied = nullptr,
                int64_t stride = 0) {
  return event_value_of(f, EventArgs<double>{s.t, s.q, s.qd, varied, stride});
}

void expect_close(double got, double want, const std::string& what) {
  ASSERT_TRUE(std::isfinite(want)) << what;
  EXPECT_NEAR(got, want, 1e-15 * std::fabs(want)) << what;
}

TEST(EventProgram, EvaluatesLikeTheExpressionWrittenInCpp) {
  const double mass = kValues[0], radius = kValues[1], g = kValues[2], slope = kValues[3];
  struct Case {
    const char* expr;
    std::function<double(const State&)> cpp;
  };
  enum { X, Y, PHI, THETA };
  const std::vector<Case> cases = {
      {"sin(theta) + x_dot*t - slope^2",
       [&](const State& s) { return std::sin(s.q[THETA]) + s.qd[X] * s.t - std::pow(slope, 2.0); }},
      {"atan2(y_dot, -x) * sqrt(abs(phi) + 1) - (-(theta - (t/(2*pi))))^3 / cosh(phi_dot)",
       [&](const State& s) {
         return std::atan2(s.qd[Y], -s.q[X]) * std::sqrt(std::fabs(s.q[PHI]) + 1) -
                std::pow(-(s.q[THETA] - (s.t / (2 * M_PI))), 3.0) / std::cosh(s.qd[PHI]);
       }},
      {"-x^2 + 2^-1*y - mass*g*radius*sin(slope)*t",
       [&](const State& s) {
         return -std::pow(s.q[X], 2.0) + std::pow(2.0, -1.0) * s.q[Y] -
                mass * g * radius * std::sin(slope) * s.t;
       }},
      {"tan(phi/4) + exp(-t) * log(x) - sinh(y_dot/3) * tanh(theta_dot) + sign(y) - pow(x, "
       "theta_dot/2)",
       [&](const State& s) {
         const double sg = static_cast<double>((s.q[Y] > 0) - (s.q[Y] < 0));
         return std::tan(s.q[PHI] / 4) + std::exp(-s.t) * std::log(s.q[X]) -
                std::sinh(s.qd[Y] / 3) * std::tanh(s.qd[THETA]) + sg -
                std::pow(s.q[X], s.qd[THETA] / 2);
       }},
      // right-nested sums: emitted deeper operand first, two stack slots
      {"x + (y + (phi + (theta + (t + (x_dot + (y_dot + (phi_dot + (theta_dot + (x*y + "
       "(phi*theta + (t*t + (x*x + (y*y + (phi*phi + (theta*theta + (1 + (x + (y + (phi + "
       "(theta + (t + (x_dot + (y_dot + (phi_dot + theta_dot))))))))))))))))))))))))",
       [&](const State& s) {
         const double* q = s.q;
         const double* qd = s.qd;
         return q[X] +
                (q[Y] +
                 (q[PHI] +
                  (q[THETA] +
                   (s.t +
                    (qd[X] +
                     (qd[Y] +
                      (qd[PHI] +
                       (qd[THETA] +
                        (q[X] * q[Y] +
                         (q[PHI] * q[THETA] +
                          (s.t * s.t +
                           (q[X] * q[X] +
                            (q[Y] * q[Y] +
                             (q[PHI] * q[PHI] +
                              (q[THETA] * q[THETA] +
                               (1 + (q[X] +
                                     (q[Y] +
                                      (q[PHI] +
                                       (q[THETA] +
                                        (s.t + (qd[X] + (qd[Y] + (qd[PHI] +
                                                                  qd[THETA]))))))))))))))))))))))));
       }},
  };
  const std::vector<State> states = random_states(50, 29);
  for (const auto& c : cases) {
    const EventTable table = compile({event("e", c.expr)});
    ASSERT_EQ(table.n_events, 1);
    const EventFunction& f = table.events[0];
    ASSERT_GT(f.n_instr, 0);
    ASSERT_LE(f.n_instr, kMaxEventInstrs);
    for (const auto& s : states) expect_close(value_at(f, s), c.cpp(s), c.expr);
  }
}

TEST(EventProgram, ConstantsAreFoldedAndOnlyVariedParametersAreRead) {
  // x + 2*pi*radius: x, one constant, add
  const EventTable t = compile({event("e", "x + 2*pi*radius")});
  ASSERT_EQ(t.events[0].n_instr, 3);
  EXPECT_EQ(t.events[0].instr[0].op, EventOp::coord);
  EXPECT_EQ(t.events[0].instr[0].index, 0);
  EXPECT_EQ(t.events[0].instr[1].op, EventOp::constant);
  EXPECT_EQ(t.events[0].instr[1].value, 2 * M_PI * kValues[1]);
  EXPECT_EQ(t.events[0].instr[2].op, EventOp::add);
  // slope varied: read through varied[3 * stride] (the model's index of slope)
  const EventTable v = compile({event("e", "x - slope*t + mass*g")}, {"slope"});
  int reads = 0;
  for (int k = 0; k < v.events[0].n_instr; ++k)
    if (v.events[0].instr[k].op == EventOp::varied_param) {
      ++reads;
      EXPECT_EQ(v.events[0].instr[k].index, 3);
    }
  EXPECT_EQ(reads, 1);
}

TEST(EventProgram, VariedParametersAreReadThroughTheirStride) {
  // every parameter of every trajectory: params[j * count + i]
  const int count = 5;
  std::vector<double> params(kParams.size() * count);
  for (int i = 0; i < count; ++i) {
    params[0 * count + i] = 1.0 + 0.25 * i;  // mass
    params[1 * count + i] = kValues[1];      // radius
    params[2 * count + i] = kValues[2];      // g
    params[3 * count + i] = 0.05 + 0.1 * i;  // slope
  }
  const char* expr = "x_dot*cos(slope) - g*sin(slope)*t/mass + exp(-slope*theta)*radius";
  const EventTable table = compile({event("e", expr)}, {"mass", "slope"});
  const EventFunction& f = table.events[0];
  const std::vector<State> states = random_states(20, 7);
  for (int i = 0; i < count; ++i) {
    const double mass = params[0 * count + i], slope = params[3 * count + i];
    const double radius = kValues[1], g = kValues[2];
    for (const auto& s : states) {
      const double want = s.qd[0] * std::cos(slope) - g * std::sin(slope) * s.t / mass +
                          std::exp(-slope * s.q[3]) * radius;
      expect_close(value_at(f, s, params.data() + i, count), want,
                   "trajectory " + std::to_string(i));
    }
  }
}

TEST(EventProgram, TableHoldsTheChoicesAndTheRecordOffsets) {
  EventConfig a = event("a", "x"), b = event("b", "y"), c = event("c", "t - 1");
  a.max_records = 5;
  a.direction = "up";
  b.max_records = 0;
  b.direction = "down";
  b.action = "stop";
  b.subdivisions = 9;
  c.max_records = 7;
  const EventTable t = compile({a, b, c});
  ASSERT_EQ(t.n_events, 3);
  EXPECT_EQ(t.records_per_trajectory, 12);
  EXPECT_EQ(t.events[0].record_offset, 0);
  EXPECT_EQ(t.events[1].record_offset, 5);
  EXPECT_EQ(t.events[2].record_offset, 5);
  EXPECT_EQ(t.events[0].direction, static_cast<int32_t>(EventDirection::up));
  EXPECT_EQ(t.events[1].direction, static_cast<int32_t>(EventDirection::down));
  EXPECT_EQ(t.events[2].direction, static_cast<int32_t>(EventDirection::both));
  EXPECT_EQ(t.events[0].action, static_cast<int32_t>(EventAction::record));
  EXPECT_EQ(t.events[1].action, static_cast<int32_t>(EventAction::stop));
  EXPECT_EQ(t.events[0].max_records, 5);
  EXPECT_EQ(t.events[1].max_records, 0);
  EXPECT_EQ(t.events[1].subdivisions, 9);
  EXPECT_EQ(t.events[2].subdivisions, 1);  // the default
  // the empty table
  const EventTable none = compile({});
  EXPECT_EQ(none.n_events, 0);
  EXPECT_EQ(none.records_per_trajectory, 0);
  // the same checks as the config's, for a table made by hand
  EventConfig bad = event("a", "x");
  bad.direction = "left";
  expect_config_error([&] { compile({bad}); }, "events[0].direction", {"up, down, both"});
  bad = event("a", "x");
  bad.subdivisions = 100;
  expect_config_error([&] { compile({bad}); }, "events[0].subdivisions", {"[1, 64]"});
  expect_config_error(
      [&] {
        compile({event("a", "x"), event("a", "y")});
      },
      "events[1].name", {"events[0]"});
}

}  // namespace

// ---------------------------------------------------------------------------
// Events declared in a model file

namespace {

// a harmonic oscillator model with `events` appended to its TOML
std::string oscillator_model(const std::string& events, const std::string& prefix = "") {
  return prefix + "name = \"osc\"\n" + prefix +
         "description = \"a harmonic oscillator\"\n" + prefix +
         "coordinates = [{ name = \"x\", unit = \"m\" }]\n" + prefix +
         "parameters = [{ name = \"k\", default = 4.0, unit = \"N/m\" }]\n" + prefix +
         "lagrangian = \"x_dot^2/2 - k*x^2/2\"\n" + events;
}

}  // namespace

TEST(ModelFileEvents, AreReadCheckedAndComeBeforeTheConfigurations) {
  const ModelSpec s = load_model_text(
      oscillator_model("[[events]]\nname = \"zero\"\nexpr = \"x\"\ndirection = \"up\"\n"
                       "[[events]]\nname = \"turn\"\nexpr = \"x_dot\"\naction = \"stop\"\n"),
      "osc.model.toml", {});
  ASSERT_EQ(s.events.size(), 2u);
  EXPECT_EQ(s.events[0].name, "zero");
  EXPECT_EQ(s.events[0].direction, "up");
  EXPECT_EQ(s.events[1].action, "stop");
  EXPECT_EQ(s.events[1].max_records, 100);  // the default
  // a configuration of that model (an inline [model] table): the model's
  // events first, then its own
  const std::string model =
      "[model]\n" + oscillator_model("[[model.events]]\nname = \"zero\"\nexpr = \"x\"\n");
  const std::string rest =
      "[time]\nt_end = 1.0\n[ensemble]\nsize = 2\n[output]\npath = \"o.h5\"\n";
  const RunConfig cfg =
      parse_config(model + rest + "[[events]]\nname = \"fast\"\nexpr = \"x_dot - 1\"\n", {});
  ASSERT_EQ(cfg.events.size(), 2u);
  EXPECT_EQ(cfg.events[0].name, "zero");
  EXPECT_EQ(cfg.events[1].name, "fast");
  // the same name in both is refused at the configuration's key
  expect_config_error(
      [&] { parse_config(model + rest + "[[events]]\nname = \"zero\"\nexpr = \"x_dot\"\n", {}); },
      "events[0].name", {"'zero' is an event of model osc already", "unique"});
  // with the model's, more than the kernels' limit
  std::string many = model + rest;
  for (int k = 0; k < kMaxEvents; ++k)
    many += "[[events]]\nname = \"e" + std::to_string(k) + "\"\nexpr = \"x - " +
            std::to_string(k) + "\"\n";
  expect_config_error([&] { parse_config(many, {}); }, "events",
                      {"8 [[events]] tables and 1 of the model file", "at most 8"});
}

TEST(ModelFileEvents, BadEntriesAreRefusedWhereTheModelFileSaysThem) {
  const auto refused = [](const std::string& events, const std::vector<std::string>& words) {
    try {
      (void)load_model_text(oscillator_model(events), "osc.model.toml", {});
      ADD_FAILURE() << "no ModelFileError for: " << events;
    } catch (const ModelFileError& e) {
      for (const auto& w : words)
        EXPECT_NE(std::string(e.what()).find(w), std::string::npos)
            << "expected '" << w << "' in: " << e.what();
    }
  };
  // an unknown name (y), with the file and the line of the array
  refused("[[events]]\nname = \"a\"\nexpr = \"y + 1\"\n",
          {"osc.model.toml:6", "events[0].expr", "'y'"});
  refused("[[events]]\nname = \"a\"\nexpr = \"x\"\ndirection = \"sideways\"\n",
          {"events[0].direction", "up, down, both"});
  refused("[[events]]\nname = \"a\"\nexpr = \"x\"\nbogus = 1\n",
          {"events[0].bogus", "unknown key"});
  refused("[[events]]\nname = \"a\"\nexpr = \"k\"\n", {"events[0].expr"});  // never changes sign
  refused("events = 3\n", {"events", "expected an array of tables"});
}
