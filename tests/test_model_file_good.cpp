// Tests of host/model_language/model_file.cpp: models described in TOML.
//
//  1. Good model files (ModelFileGood.*): the spec, ModelInfo, defaults given
//     as expressions, the evaluator, the generated header's text, the
//     separable, constant-mass and constant-force Lagrangians detected.
//  2. Symbolic M and F (ModelFileSymbolic.*): symbolic_dynamics against
//     closed forms and central differences of the evaluator.
// Bad model files: test_model_file_expression_errors.cpp and
// test_model_file_errors.cpp; the generated header compiled:
// test_model_file_compiled.cpp.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "host/config/model_catalog.hpp"
#include "host/model_language/model_file.hpp"
#include "tests/model_file_cases.hpp"

using nholo::ModelFileError;
using nholo::ModelSpec;
using namespace nholo_test;

namespace fs = std::filesystem;

namespace {

// ---------------------------------------------------------------------------
// 1. Good model files

TEST(ModelFileGood, SkateSpecAndModelInfo) {
  const ModelSpec s = parse(kSkate, "skate.toml");
  EXPECT_EQ(s.source, "skate.toml");
  EXPECT_EQ(s.name, "skate_file");
  ASSERT_EQ(s.coordinates.size(), 3u);
  EXPECT_EQ(s.coordinates[0].description, "contact point, down the slope");
  EXPECT_EQ(s.coordinates[2].unit, "rad");
  ASSERT_EQ(s.parameters.size(), 5u);
  EXPECT_DOUBLE_EQ(s.parameters[2].default_value, 2 * 1.3 * 0.4 * 0.4 + 0.5);
  EXPECT_EQ(s.m_velocity, 1);
  EXPECT_EQ(s.m_position + s.m_acceleration, 0);
  EXPECT_TRUE(s.nonpotential_force.empty());
  EXPECT_TRUE(s.nonideal_force.empty());

  const nholo::ModelInfo mi = nholo::model_info_from_spec(s);
  EXPECT_EQ(mi.name, "skate_file");
  EXPECT_EQ(mi.n, 3);
  EXPECT_EQ(mi.m, 1);
  EXPECT_EQ(mi.m_velocity, 1);
  EXPECT_EQ(mi.coordinates, (std::vector<std::string>{"x", "y", "theta"}));
  EXPECT_EQ(mi.constraints, (std::vector<std::string>{"knife_edge"}));
  EXPECT_EQ(mi.constraint_kinds, (std::vector<std::string>{"velocity"}));
  ASSERT_EQ(mi.params.size(), 5u);
  EXPECT_EQ(mi.params[0].name, "mass");
  EXPECT_EQ(mi.params[0].unit, "kg");
  EXPECT_EQ(mi.params[0].doc, "skate mass m");
  EXPECT_EQ(mi.params[0].range_text(), "> 0");
  EXPECT_EQ(mi.params[3].range_text(), ">= 0");
  EXPECT_EQ(mi.params[4].range_text(), "in [-1.5, 1.5]");
  EXPECT_EQ(mi.params[1].range_text(), "");
  EXPECT_FALSE(mi.params[0].admits(0.0));
  EXPECT_EQ(mi.formulations, (std::vector<std::string>{"udwadia_kalaba", "lagrange_multiplier",
                                                       "null_space", "vakonomic", "conflated"}));
  EXPECT_TRUE(mi.has_energy);
  EXPECT_TRUE(mi.has_conflated);
  EXPECT_FALSE(mi.has_nonideal);
  EXPECT_TRUE(mi.has_hand_dynamics);  // symbolic M and F in the generated header
  ASSERT_TRUE(mi.check_params);
  EXPECT_EQ(mi.check_params({1, 0.4, 1, 9.81, 0.3}), "");
}

TEST(ModelFileGood, EveryOptionalPart) {
  const ModelSpec s = parse(R"~(
name = "everything_2"
description = "all keys"
coordinates = [ { name = "a", unit = "m" }, { name = "b", unit = "m" }, { name = "c", unit = "rad" }, { name = "d", unit = "1" } ]
parameters = [
  { name = "k", default = "2*pi", unit = "1/s", description = "rate", positive = true, max = 10 },
  { name = "w", default = "sqrt(k)*cos(pi) + 2^-1", unit = "1", min = -5, nonnegative = false },
  { name = "z", default = -3, unit = "1", max = 0 },
  { name = "e", default = "exp(1)", unit = "1", min = 1, positive = true },
]
lagrangian = "(a_dot^2 + b_dot^2 + c_dot^2 + d_dot^2)/2 - k*a^2"
constraints = [
  { name = "acc", kind = "acceleration", expr = "a_ddot*cos(c) + (b_ddot - d_ddot)/k - t" },
  { name = "vel", kind = "velocity", expr = "a_dot - c*b_dot" },
  { name = "pos", kind = "position", expr = "d - sin(t)" },
]
forces = { b = "-w*b_dot" }
nonideal_forces = { a = "-sign(a_dot)", d = "0" }
energy = "(a_dot^2 + b_dot^2 + c_dot^2 + d_dot^2)/2 + k*a^2"
conflated_lagrangian = "(a_dot^2 + b_dot^2)/2"
)~");
  EXPECT_DOUBLE_EQ(s.parameters[0].default_value, 2 * M_PI);
  EXPECT_DOUBLE_EQ(s.parameters[1].default_value, -std::sqrt(2 * M_PI) + 0.5);
  EXPECT_DOUBLE_EQ(s.parameters[2].default_value, -3.0);
  EXPECT_DOUBLE_EQ(s.parameters[3].default_value, std::exp(1.0));
  // the tightest lower bound wins: min = 1 over positive = true
  EXPECT_TRUE(s.parameters[3].range.has_lo);
  EXPECT_EQ(s.parameters[3].range.lo, 1.0);
  EXPECT_FALSE(s.parameters[3].range.lo_open);
  EXPECT_TRUE(s.parameters[0].range.lo_open);
  EXPECT_TRUE(s.parameters[0].range.has_hi);
  EXPECT_FALSE(s.parameters[1].range.lo_open);
  // reordered position, velocity, acceleration
  ASSERT_EQ(s.constraints.size(), 3u);
  EXPECT_EQ(s.constraints[0].name, "pos");
  EXPECT_EQ(s.constraints[1].name, "vel");
  EXPECT_EQ(s.constraints[2].name, "acc");
  EXPECT_EQ(s.m_position, 1);
  EXPECT_EQ(s.m_velocity, 1);
  EXPECT_EQ(s.m_acceleration, 1);
  ASSERT_EQ(s.nonpotential_force.size(), 4u);
  EXPECT_EQ(s.nonpotential_force[0].text, "");
  EXPECT_EQ(s.nonpotential_force[1].text, "-w*b_dot");
  ASSERT_EQ(s.nonideal_force.size(), 4u);
  EXPECT_EQ(s.nonideal_force[3].text, "0");

  const nholo::ModelInfo mi = nholo::model_info_from_spec(s);
  EXPECT_EQ(mi.m, 3);
  EXPECT_EQ(mi.constraints, (std::vector<std::string>{"pos", "vel", "acc"}));
  EXPECT_EQ(mi.constraint_kinds,
            (std::vector<std::string>{"position", "velocity", "acceleration"}));
  EXPECT_TRUE(mi.has_nonideal);
  EXPECT_TRUE(mi.has_energy);
  EXPECT_TRUE(mi.has_conflated);
  // an acceleration constraint: no vakonomic formulation (kernels/formulations.hpp)
  EXPECT_EQ(mi.formulations, (std::vector<std::string>{"udwadia_kalaba", "lagrange_multiplier",
                                                       "null_space", "conflated"}));
  EXPECT_EQ(mi.params[0].range_text(), "in (0, 10]");
  EXPECT_EQ(mi.params[2].range_text(), "<= 0");

  // the evaluator, against the same expressions written out here
  const std::vector<double> q = {0.3, -0.7, 1.1, 0.2}, qd = {0.5, 1.5, -0.25, 2.0},
                            qdd = {0.1, 0.2, 0.3, 0.4};
  const double t = 0.8, k = 2 * M_PI, w = -std::sqrt(2 * M_PI) + 0.5;
  using nholo::model_file::evaluate;
  EXPECT_DOUBLE_EQ(evaluate(s, s.lagrangian, q, qd, {}, t),
                   (0.25 + 2.25 + 0.0625 + 4.0) / 2 - k * 0.09);
  EXPECT_DOUBLE_EQ(evaluate(s, s.constraints[2].expr, q, qd, qdd, t),
                   0.1 * std::cos(1.1) + (0.2 - 0.4) / k - t);
  EXPECT_DOUBLE_EQ(evaluate(s, s.constraints[0].expr, q, qd, {}, t), 0.2 - std::sin(t));
  EXPECT_DOUBLE_EQ(evaluate(s, s.nonpotential_force[1], q, qd, {}, t), -w * 1.5);
  EXPECT_DOUBLE_EQ(evaluate(s, s.nonideal_force[0], q, qd, {}, t), -1.0);
  EXPECT_EQ(evaluate(s, s.nonpotential_force[0], q, qd, {}, t), 0.0);
  // other parameter values
  EXPECT_DOUBLE_EQ(evaluate(s, s.lagrangian, q, qd, {}, t, {1.0, 0.0, 0.0, 3.0}),
                   (0.25 + 2.25 + 0.0625 + 4.0) / 2 - 0.09);
  EXPECT_THROW(evaluate(s, s.lagrangian, {1.0}, qd, {}, t), std::invalid_argument);
}

TEST(ModelFileGood, FormulationsOffered) {
  // no constraints: nothing for the vakonomic multipliers
  EXPECT_EQ(nholo::model_info_from_spec(parse(kFree)).formulations,
            (std::vector<std::string>{"udwadia_kalaba", "lagrange_multiplier", "null_space"}));
  EXPECT_EQ(nholo::model_info_from_spec(parse(kAccel)).formulations,
            (std::vector<std::string>{"udwadia_kalaba", "lagrange_multiplier", "null_space"}));
  EXPECT_EQ(nholo::model_info_from_spec(parse(kBlock)).formulations,
            (std::vector<std::string>{"udwadia_kalaba", "lagrange_multiplier", "null_space",
                                      "vakonomic"}));
}

TEST(ModelFileGood, ExpressionGrammar) {
  // precedence and associativity through the evaluator: x = 2, y = 3
  Model md;
  md.set(Model::kCoordinates,
         R"~(coordinates = [ { name = "x", unit = "1" }, { name = "y", unit = "1" } ])~");
  md.set(Model::kParameters, "");
  md.set(Model::kConstraints, "");
  const std::vector<std::pair<std::string, double>> cases = {
      {"-x^2 + y_dot", -4.0},
      {"2^3^2 + 0*y_dot", 512.0},
      {"2^-1 + 0*y_dot", 0.5},
      {"x - y - 1 + 0*y_dot", -2.0},
      {"x/y/2 + 0*y_dot", 1.0 / 3.0},
      {"-x*y + y_dot", -6.0},
      {"+x + -y + y_dot", -1.0},
      {"1e-3 + 2.5E+1 + .5 + 3. + 0*y_dot", 28.501},
      {"pow(x, 3) + pow(2, y) + atan2(y, x) + y_dot", 16.0 + std::atan2(3.0, 2.0)},
      {"sign(-x) + sign(0*x) + abs(-y) + y_dot", 2.0},
      {"sinh(x) + cosh(x) - exp(x) + tanh(0) + log(exp(y)) + sqrt(4)*y_dot", 3.0},
      {"sin(pi/2) + cos(pi) + tan(0) + y_dot\n  * t", 0.0},
  };
  for (const auto& [expr, want] : cases) {
    md.set(Model::kLagrangian, "lagrangian = \"\"\"" + expr + "\"\"\"");
    const ModelSpec s = parse(md.text());
    EXPECT_NEAR(nholo::model_file::evaluate(s, s.lagrangian, {2.0, 3.0}, {0.0, 0.0}, {}, 0.0), want,
                1e-12)
        << expr;
  }
}

TEST(ModelFileGood, AccelerationConstraintsLinearByEvaluation) {
  // not affine by its structure, affine in value (checked numerically)
  Model md;
  md.set(
      Model::kConstraints,
      R"~(constraints = [ { name = "a", kind = "acceleration", expr = "x_ddot*x_ddot/x_ddot + (2*y_ddot)^1 - theta_ddot*m/(1 + x^2)" } ])~");
  const ModelSpec s = parse(md.text());
  EXPECT_EQ(s.m_acceleration, 1);
}

TEST(ModelFileGood, HeaderTextDeterministicAndComplete) {
  const ModelSpec s = parse(kSkate, "skate.toml");
  const std::string h = nholo::generate_model_header(s);
  EXPECT_EQ(h, nholo::generate_model_header(parse(kSkate, "skate.toml")));
  EXPECT_EQ(h.rfind("// generated by nholo from skate.toml", 0), 0u);
  for (const char* part :
       {"#include <kernels/expr_math.hpp>", "#include <kernels/linalg.hpp>",
        "#include <kernels/model.hpp>", "namespace nholo::user_models {", "struct UserModel {",
        "static constexpr const char* name = \"skate_file\";",
        "static constexpr const char* description = \"Hamel's skate on an inclined plane "
        "(models/skate.hpp), from a model file\";",
        "static constexpr int n = 3;", "static constexpr int m_position = 0;",
        "static constexpr int m_velocity = 1;", "static constexpr int m_acceleration = 0;",
        "static constexpr int n_params = 5;",
        "static constexpr const char* coordinates[n] = {\"x\", \"y\", \"theta\"};",
        "static constexpr const char* constraint_names[1] = {\"knife_edge\"};",
        "{\"mass\", 1.3, \"kg\", \"skate mass m\", ParamRange{true, 0.0, true, false, 0.0, "
        "false}},",
        "{\"inertia\", 0.91", "double v[5];", "static S lagrangian(",
        "static Vec<S, m_velocity> velocity_constraints(", "static S energy(",
        "static S conflated_lagrangian(", "nholo::expr::ipow<2>(qd[0])", "sin(p.v[4])", "cos(q[2])",
        // m/2 and m g sin(alpha): computed once per trajectory (Params::k)
        // cos(theta), twice in L: one node of the shared graph, computed once
        "const S c0 = S(cos(q[2]));",
        "p.k[0] * (nholo::expr::ipow<2>(qd[0]) + nholo::expr::ipow<2>(qd[1])) + p.v[0] * "
        "p.v[1] * qd[2] * (qd[1] * c0 - qd[0] * sin(q[2]))",
        "double k[5];", "Params p{{values[0], values[1], values[2], values[3], values[4]}, {}};",
        "p.k[0] = p.v[0] / 2.0;", "p.k[2] = p.v[0] * p.v[3] * sin(p.v[4]);",
        "static void hand_dynamics(const Params& p, const Vec<S, n>& q, const Vec<S, n>& qd, "
        "const S& /*t*/, Mat<S, n, n>& M, Vec<S, n>& F) {",
        "const S c1 = S(sin(q[2]));", "F[1] = S(c3 * c1 * qd[2]);", "//   v[2] inertia",
        "const S& /*t*/"}) {
    EXPECT_NE(h.find(part), std::string::npos) << "lacks " << part << "\n" << h;
  }
  for (const char* absent : {"position_constraints", "acceleration_constraints",
                             "nonpotential_force", "nonideal_force", "x_dot", "theta_dot"})
    EXPECT_EQ(h.find(absent), std::string::npos) << absent << "\n" << h;

  // no parameters, no constraints: sentinels
  const std::string f = nholo::generate_model_header(parse(kFree, "free.toml"));
  EXPECT_NE(f.find("static constexpr const char* constraint_names[1] = {nullptr};"),
            std::string::npos)
      << f;
  EXPECT_NE(f.find("static constexpr ParamInfo param_info[1] = {{nullptr, 0.0, nullptr, nullptr, "
                   "ParamRange{}}};"),
            std::string::npos)
      << f;
  EXPECT_NE(f.find("const Params& /*p*/"), std::string::npos) << f;
}

TEST(ModelFileGood, HeaderKeepsLongSumsFlat) {
  // 600 terms: the printed sum is not nested 600 parentheses deep (clang and
  // nvcc limit bracket depth); a - (b - c) keeps its grouping
  Model md;
  std::string sum = "x_dot^2/2";
  for (int k = 0; k < 600; ++k)
    sum += " + x*" + std::to_string(k) + " - (y - " + std::to_string(k) + "*theta)";
  md.set(Model::kLagrangian, "lagrangian = \"" + sum + "\"");
  const std::string h = nholo::generate_model_header(parse(md.text()));
  int depth = 0, deepest = 0;
  for (const char c : h) {
    depth += c == '(' ? 1 : c == ')' ? -1 : 0;
    deepest = std::max(deepest, depth);
  }
  EXPECT_EQ(depth, 0);
  EXPECT_LE(deepest, 4);
  EXPECT_NE(h.find("q[0] * 179.0 - (q[1] - 179.0 * q[2])"), std::string::npos);
}

TEST(ModelFileGood, HeaderStringsAreEscaped) {
  Model md;
  md.set(Model::kDescription,
         "description = \"a \\\"quoted\\\" back\\\\slash ?\?/ tab\\t \xC3\xA9t\xC3\xA9 */ end\"");
  md.set(
      Model::kParameters,
      R"~(parameters = [ { name = "m", default = 0.1, unit = "kg", description = "line\nbreak" }, { name = "J", default = 1.5e20, unit = "k\u00b5g" } ])~");
  const ModelSpec s = parse(md.text(), "dir\\odd \"name\"\n.toml");
  const std::string h = nholo::generate_model_header(s);
  EXPECT_NE(h.find("static constexpr const char* description = \"a \\\"quoted\\\" back\\\\slash "
                   "\\?\\?/ tab\\011 \\303\\251t\\303\\251 */ end\";"),
            std::string::npos)
      << h;
  EXPECT_NE(h.find("{\"m\", 0.10000000000000001, \"kg\", \"line\\012break\""), std::string::npos)
      << h;
  EXPECT_NE(h.find("{\"J\", 1.5e+20, \"k\\302\\265g\""), std::string::npos) << h;
  EXPECT_NE(h.find("source = \"dir\\\\odd \\\"name\\\"\\012.toml\";"), std::string::npos) << h;
  // the comment line holds no line break or backslash
  const std::string first = h.substr(0, h.find('\n'));
  EXPECT_EQ(first, "// generated by nholo from dir/odd \"name\"?.toml \xE2\x80\x94 do not edit");
  // every byte outside the first line is printable ASCII or a newline
  for (size_t i = first.size(); i < h.size(); ++i)
    EXPECT_TRUE(h[i] == '\n' || (h[i] >= 0x20 && h[i] < 0x7f)) << "byte " << i;
}

// ---------------------------------------------------------------------------
// 2. Symbolic M and F (symbolic_dynamics, the generated hand_dynamics)

// M and F of a spec by central differences of the evaluator: M_ij from four
// values of L, D_v dL/dqd_i (v = (qd, 0, 1) in (q, qd, t)) from four more
struct Numeric {
  std::vector<double> M, F;
};
Numeric numeric_dynamics(const ModelSpec& s, const std::vector<double>& q,
                         const std::vector<double>& qd, double t) {
  using nholo::model_file::evaluate;
  const size_t n = q.size();
  auto L = [&](const std::vector<double>& qq, const std::vector<double>& vv, double tt) {
    return evaluate(s, s.lagrangian, qq, vv, {}, tt);
  };
  const double h = 1e-4;
  Numeric r;
  r.M.assign(n * n, 0.0);
  r.F.assign(n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int si : {1, -1})
        for (int sj : {1, -1}) {
          std::vector<double> v = qd;
          v[i] += si * h;
          v[j] += sj * h;
          sum += si * sj * L(q, v, t);
        }
      r.M[i * n + j] = sum / (4 * h * h);
    }
    std::vector<double> qp = q, qm = q;
    qp[i] += h;
    qm[i] -= h;
    const double dLdq = (L(qp, qd, t) - L(qm, qd, t)) / (2 * h);
    double dv = 0;  // D_v dL/dqd_i
    for (int sv : {1, -1})
      for (int si : {1, -1}) {
        std::vector<double> qq = q, v = qd;
        for (size_t k = 0; k < n; ++k) qq[k] += sv * h * qd[k];
        v[i] += si * h;
        dv += sv * si * L(qq, v, t + sv * h);
      }
    r.F[i] = dLdq - dv / (4 * h * h);
  }
  return r;
}

TEST(ModelFileSymbolic, SkateMassAndForceAreTheClosedForms) {
  const ModelSpec s = parse(kSkate, "skate.toml");
  const auto d = nholo::model_file::symbolic_dynamics(s);
  ASSERT_EQ(d.mass.size(), 9u);
  ASSERT_EQ(d.force.size(), 3u);
  EXPECT_EQ(d.mass[2].text, "d2L/dx_dot dtheta_dot");
  EXPECT_EQ(d.force[2].text, "F_theta");
  const double m = 1.3, so = 0.4, I = 2 * 1.3 * 0.16 + 0.5, g = 9.81, al = 0.3;
  const double th = 0.7, xd = 1.1, yd = 0.4, thd = -0.6;
  const double c = std::cos(th), sn = std::sin(th), G = m * g * std::sin(al);
  // M = [[m, 0, -m s sin], [0, m, m s cos], [., ., I]], F = dL/dq - (d2L/dqd dq) qd
  const double M[9] = {m, 0, -m * so * sn, 0, m, m * so * c, -m * so * sn, m * so * c, I};
  const double F[3] = {G + m * so * thd * thd * c, m * so * thd * thd * sn, -G * so * sn};
  using nholo::model_file::evaluate;
  const std::vector<double> q = {0.3, -0.2, th}, qd = {xd, yd, thd};
  for (int k = 0; k < 9; ++k)
    EXPECT_NEAR(evaluate(s, d.mass[k], q, qd, {}, 0.5), M[k], 1e-14) << d.mass[k].text;
  for (int k = 0; k < 3; ++k)
    EXPECT_NEAR(evaluate(s, d.force[k], q, qd, {}, 0.5), F[k], 1e-13) << d.force[k].text;
  // shared subtrees and folded zeros: the 12 trees have fewer distinct
  // nodes than the Lagrangian's own tree has (a guard on the folding)
  EXPECT_LT(d.nodes, 60u);
}

TEST(ModelFileSymbolic, EveryFunctionAgainstCentralDifferences) {
  const ModelSpec s = parse(kEveryFunction, "every.toml");
  const auto d = nholo::model_file::symbolic_dynamics(s);
  ASSERT_EQ(d.mass.size(), 4u);
  using nholo::model_file::evaluate;
  const std::vector<std::vector<double>> states = {
      {0.3, -0.4, 0.7, 1.2}, {-1.1, 0.9, -0.5, 0.25}, {2.0, 0.1, 0.05, -1.3}};
  for (const auto& st : states) {
    const std::vector<double> q = {st[0], st[1]}, qd = {st[2], st[3]};
    const double t = 0.8;
    const Numeric num = numeric_dynamics(s, q, qd, t);
    for (size_t k = 0; k < 4; ++k) {
      const double v = evaluate(s, d.mass[k], q, qd, {}, t);
      EXPECT_NEAR(v, num.M[k], 2e-6 * (1 + std::fabs(v))) << d.mass[k].text;
    }
    for (size_t k = 0; k < 2; ++k) {
      const double v = evaluate(s, d.force[k], q, qd, {}, t);
      EXPECT_NEAR(v, num.F[k], 2e-6 * (1 + std::fabs(v))) << d.force[k].text;
    }
  }
}

TEST(ModelFileSymbolic, SymmetricAndAbsentWithoutALagrangian) {
  const ModelSpec s = parse(kEveryFunction, "every.toml");
  const auto d = nholo::model_file::symbolic_dynamics(s);
  // one tree for M_ij and M_ji
  EXPECT_EQ(d.mass[1].tree, d.mass[2].tree);
  EXPECT_TRUE(nholo::model_info_from_spec(s).has_hand_dynamics);
  ModelSpec none = s;
  none.lagrangian = {};
  EXPECT_TRUE(nholo::model_file::symbolic_dynamics(none).mass.empty());
  EXPECT_EQ(nholo::model_file::symbolic_dynamics(none).refused, "no Lagrangian");
  EXPECT_EQ(d.refused, "");
}

// A term linear in a rate written as a power: with an exponent of numbers
// only (3 - 2) it is folded, so M at rest is the identity (not 0 * inf =
// NaN from the second derivative of y_dot^(3-2)); with a parameter as the
// exponent the symbolic derivatives are not taken (automatic
// differentiation's pow takes p (p - 1) as 0 at p = 1, kernels/jet2.hpp).
TEST(ModelFileSymbolic, ALinearTermWrittenAsAPowerIsFiniteAtRest) {
  const std::string head = R"~(
name = "powers"
description = "a term linear in a rate written as a power"
coordinates = [ { name = "x", unit = "1" }, { name = "y", unit = "1" } ]
parameters = [ { name = "k", default = 0.5, unit = "1" }, { name = "p", default = 1, unit = "1" } ]
)~";
  const ModelSpec folded =
      parse(head +
                "lagrangian = \"(x_dot^2 + y_dot^2)/2 + k*y*pow(x_dot, 1) + k*x*y_dot^(3 - 2) - "
                "(x^2 + y^2)/2\"\n",
            "folded.toml");
  const auto d = nholo::model_file::symbolic_dynamics(folded);
  ASSERT_EQ(d.refused, "");
  ASSERT_EQ(d.mass.size(), 4u);
  using nholo::model_file::evaluate;
  const std::vector<double> q = {0.3, -0.2}, rest = {0.0, 0.0};
  for (int k = 0; k < 4; ++k)
    EXPECT_EQ(evaluate(folded, d.mass[k], q, rest, {}, 0.0), k == 0 || k == 3 ? 1.0 : 0.0)
        << d.mass[k].text;
  const ModelSpec param =
      parse(head + "lagrangian = \"(x_dot^2 + y_dot^2)/2 + k*y*y_dot^p - (x^2 + y^2)/2\"\n",
            "param.toml");
  const auto dp = nholo::model_file::symbolic_dynamics(param);
  EXPECT_TRUE(dp.mass.empty());
  EXPECT_NE(dp.refused.find("a parameter as its exponent"), std::string::npos) << dp.refused;
  EXPECT_FALSE(nholo::model_info_from_spec(param).has_hand_dynamics);
}

}  // namespace

// A Lagrangian T(qd) + U(q, t) is declared separable (dynamics.hpp skips the
// mixed second derivatives); one with a term coupling rates and coordinates is
// not. The trajectories of both kinds equal the built-in models'
// (tests/test_model_file_runs.cpp).
TEST(ModelFileGood, SeparableLagrangianIsDetectedFromItsTerms) {
  const std::string dir = std::string(NHOLO_SOURCE_DIR) + "/tests/model_files/";
  const std::string flag = "static constexpr bool separable_lagrangian = true;";
  for (const char* f :
       {"rolling_coin.toml", "appell.toml", "parallel_velocities.toml", "udwadia_example2.toml"})
    EXPECT_NE(nholo::generate_model_header(nholo::load_model_file(dir + f, kBuiltins)).find(flag),
              std::string::npos)
        << f;
  for (const char* f : {"skate.toml", "sleigh.toml"}) {
    const std::string h = nholo::generate_model_header(nholo::load_model_file(dir + f, kBuiltins));
    EXPECT_EQ(h.find("separable_lagrangian"), std::string::npos) << f;
  }
  Model md;
  md.set(Model::kLagrangian,
         R"~(lagrangian = "m/2*(x_dot^2 + y_dot^2) - t*x_dot + J/2*theta_dot^2")~");
  EXPECT_EQ(nholo::generate_model_header(parse(md.text())).find("separable_lagrangian"),
            std::string::npos);
}

// A separable Lagrangian whose rate terms are quadratic (at most) in the rates
// with parameter coefficients is declared constant_mass; with its other terms
// affine in the coordinates and free of time, constant_force too
// (kernels/model.hpp; the trajectories equal the built-in models',
// tests/test_model_file_runs.cpp).
TEST(ModelFileGood, ConstantMassAndForceAreDetectedFromTheTerms) {
  const std::string dir = std::string(NHOLO_SOURCE_DIR) + "/tests/model_files/";
  const std::string mass = "static constexpr bool constant_mass = true;";
  const std::string force = "static constexpr bool constant_force = true;";
  auto header = [&](const char* f) {
    return nholo::generate_model_header(nholo::load_model_file(dir + f, kBuiltins));
  };
  for (const char* f :
       {"rolling_coin.toml", "appell.toml", "parallel_velocities.toml", "udwadia_example2.toml"}) {
    const std::string h = header(f);
    EXPECT_NE(h.find(mass), std::string::npos) << f;
    EXPECT_NE(h.find(force), std::string::npos) << f;
  }
  for (const char* f : {"skate.toml", "sleigh.toml"}) {
    const std::string h = header(f);
    EXPECT_EQ(h.find("constant_mass"), std::string::npos) << f;
    EXPECT_EQ(h.find("constant_force"), std::string::npos) << f;
  }
  auto lagrangian = [](const char* l) {
    Model md;
    md.set(Model::kLagrangian, std::string("lagrangian = \"") + l + "\"");
    return nholo::generate_model_header(parse(md.text()));
  };
  // a potential quadratic in x: constant M, F = -2 x is not constant
  std::string h = lagrangian("m/2*(x_dot^2 + y_dot^2) + J/2*theta_dot^2 - m*x^2");
  EXPECT_NE(h.find(mass), std::string::npos);
  EXPECT_EQ(h.find("constant_force"), std::string::npos);
  // time in the potential: F depends on t
  h = lagrangian("m/2*(x_dot^2 + y_dot^2) + J/2*theta_dot^2 + t*x");
  EXPECT_NE(h.find(mass), std::string::npos);
  EXPECT_EQ(h.find("constant_force"), std::string::npos);
  // constant coefficients, a linear potential, a constant under a function
  h = lagrangian("m/2*(x_dot^2 + y_dot^2) + J/2*theta_dot^2 + x_dot*y_dot/m - m*sin(m)*(x - 2*y)");
  EXPECT_NE(h.find(mass), std::string::npos);
  EXPECT_NE(h.find(force), std::string::npos);
  // a cubic rate term, a rate under a function, a division by a rate: M not constant
  for (const char* l :
       {"m/2*(x_dot^2 + y_dot^2) + J/2*theta_dot^3", "m/2*(x_dot^2 + y_dot^2) + J*cos(theta_dot)",
        "m/2*(x_dot^2 + y_dot^2) + J/2*theta_dot^2 + 1/(1 + x_dot^2)"}) {
    h = lagrangian(l);
    EXPECT_EQ(h.find("constant_mass"), std::string::npos) << l;
    EXPECT_EQ(h.find("constant_force"), std::string::npos) << l;
  }
  // not separable (the skate's coupling): neither
  h = lagrangian("m/2*(x_dot^2 + y_dot^2) + J/2*theta_dot^2 + m*theta_dot*y_dot*cos(theta)");
  EXPECT_EQ(h.find("constant_mass"), std::string::npos);
}
