// Tests of host/model_language/model_file.cpp: models described in TOML.
//
//  1. Bad model files (ModelFileErrors.*): each check of the reader, the
//     expression parser and the evaluator, with the full location of the
//     message: source, line:column of the TOML value, key, the expression and
//     the 1-based position in it, and the reason.
//  2. Good model files (ModelFileGood.*): the spec, ModelInfo, defaults given
//     as expressions, the evaluator, the generated header's text.
//  3. The generated header compiled (ModelFileCompiled.*): the system compiler
//     (c++ on PATH, -O0 -Werror) builds a small program from the header and
//     kernels/ that prints the Lagrangian, constraints, forces, their AD
//     derivatives and the matrices of kernels/dynamics.hpp at a state; the
//     test compares them with closed forms written out here.
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

#include "host/model_language/model_file.hpp"

using nholo::ModelFileError;
using nholo::ModelSpec;

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kBuiltins = {"rolling_coin", "skate", "appell"};

ModelSpec parse(const std::string& text, const std::string& source = "bad.toml") {
  const toml::table tbl = toml::parse(text, std::string_view(source));
  return nholo::parse_model_table(tbl, source, kBuiltins);
}

// A model written one key per line, so that the tests know every value's
// line and column.
struct Model {
  std::vector<std::string> lines = {
      R"~(name = "sled")~",
      R"~(description = "a test sled")~",
      R"~(coordinates = [ { name = "x", unit = "m" }, { name = "y", unit = "m" }, { name = "theta", unit = "rad" } ])~",
      R"~(parameters = [ { name = "m", default = 1.0, unit = "kg", positive = true }, { name = "J", default = "m/4", unit = "kg m^2", min = 0 } ])~",
      R"~(lagrangian = "m/2*(x_dot^2 + y_dot^2) + J/2*theta_dot^2")~",
      R"~(constraints = [ { name = "knife_edge", kind = "velocity", expr = "y_dot*cos(theta) - x_dot*sin(theta)" } ])~",
  };
  enum Line { kName = 1, kDescription, kCoordinates, kParameters, kLagrangian, kConstraints };

  Model& set(int line, const std::string& text) {
    lines[line - 1] = text;
    return *this;
  }
  // appends a line, returns its number
  int add(const std::string& text) {
    lines.push_back(text);
    return static_cast<int>(lines.size());
  }
  std::string text() const {
    std::string s;
    for (const auto& l : lines) s += l + "\n";
    return s;
  }
  // "bad.toml:LINE:COL" where COL is that of `needle` (its first occurrence)
  // in the line
  std::string at(int line, const std::string& needle) const {
    const size_t c = lines[line - 1].find(needle);
    EXPECT_NE(c, std::string::npos) << needle << " not in line " << line;
    return "bad.toml:" + std::to_string(line) + ":" + std::to_string(c + 1);
  }
};

std::string error_of(const std::string& text, const std::string& source = "bad.toml") {
  try {
    parse(text, source);
  } catch (const ModelFileError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for the model\n" << text;
  return "";
}

// the message contains each of `parts`
void expect_error(const Model& md, const std::vector<std::string>& parts) {
  const std::string msg = error_of(md.text());
  for (const auto& p : parts)
    EXPECT_NE(msg.find(p), std::string::npos) << "message: " << msg << "\nlacks: " << p;
}

// the expression part: KEY: "EXPR": position P:
std::string expr_part(const std::string& key, const std::string& expr, int pos) {
  return ": " + key + ": \"" + expr + "\": position " + std::to_string(pos) + ": ";
}

// ---------------------------------------------------------------------------
// 1. Bad model files

TEST(ModelFileErrors, UnknownNameListsWhatIsAccepted) {
  Model md;
  md.set(Model::kLagrangian, R"~(lagrangian = "m/2*(x_dot^2 + yy_dot^2) + J/2*theta_dot^2")~");
  expect_error(md, {md.at(Model::kLagrangian, "\"m/2") +
                        expr_part("lagrangian", "m/2*(x_dot^2 + yy_dot^2) + J/2*theta_dot^2", 16) +
                        "unknown name 'yy_dot'",
                    "coordinates: x, y, theta", "rates: x_dot, y_dot, theta_dot",
                    "parameters: m, J", "t, pi", "functions: sin, cos, tan, exp, log, sqrt"});
  // accelerations are listed where they are accepted
  Model ac;
  ac.set(Model::kConstraints,
         R"~(constraints = [ { name = "a", kind = "acceleration", expr = "x_ddot + zz" } ])~");
  expect_error(ac, {expr_part("constraints[0].expr", "x_ddot + zz", 10) + "unknown name 'zz'",
                    "accelerations: x_ddot, y_ddot, theta_ddot"});
}

TEST(ModelFileErrors, UnknownFunction) {
  Model md;
  md.set(
      Model::kConstraints,
      R"~(constraints = [ { name = "k", kind = "velocity", expr = "y_dot*coss(theta) - x_dot" } ])~");
  expect_error(md, {md.at(Model::kConstraints, "\"y_dot") +
                    expr_part("constraints[0].expr", "y_dot*coss(theta) - x_dot", 7) +
                    "unknown function 'coss' (functions: sin, cos,"});
  // a name that is not a function, followed by '(': a missing operator
  md.set(Model::kConstraints,
         R"~(constraints = [ { name = "k", kind = "velocity", expr = "m(y_dot)" } ])~");
  expect_error(md, {expr_part("constraints[0].expr", "m(y_dot)", 2) +
                    "missing operator between 'm' and '('"});
  // a function without its parentheses
  md.set(Model::kConstraints,
         R"~(constraints = [ { name = "k", kind = "velocity", expr = "sin*y_dot" } ])~");
  expect_error(md, {expr_part("constraints[0].expr", "sin*y_dot", 1) +
                    "'sin' is a function: write sin(...)"});
}

TEST(ModelFileErrors, WrongArity) {
  Model md;
  md.set(Model::kConstraints,
         R"~(constraints = [ { name = "k", kind = "velocity", expr = "y_dot - atan2(x_dot)" } ])~");
  expect_error(md, {md.at(Model::kConstraints, "\"y_dot") +
                    expr_part("constraints[0].expr", "y_dot - atan2(x_dot)", 9) +
                    "atan2 takes 2 arguments, got 1"});
  md.set(
      Model::kConstraints,
      R"~(constraints = [ { name = "k", kind = "velocity", expr = "y_dot - sin(x, theta)" } ])~");
  expect_error(md, {expr_part("constraints[0].expr", "y_dot - sin(x, theta)", 9) +
                    "sin takes 1 argument, got 2"});
  md.set(Model::kConstraints,
         R"~(constraints = [ { name = "k", kind = "velocity", expr = "y_dot - cos()" } ])~");
  expect_error(
      md, {expr_part("constraints[0].expr", "y_dot - cos()", 9) + "cos takes 1 argument, got 0"});
}

TEST(ModelFileErrors, UnbalancedParentheses) {
  Model md;
  md.set(Model::kLagrangian, R"~(lagrangian = "m/2*(x_dot^2 + y_dot^2 + theta_dot^2")~");
  expect_error(md, {md.at(Model::kLagrangian, "\"m/2") +
                    expr_part("lagrangian", "m/2*(x_dot^2 + y_dot^2 + theta_dot^2", 5) +
                    "unbalanced parenthesis: '(' is never closed"});
  md.set(Model::kLagrangian, R"~(lagrangian = "m/2*x_dot^2) + theta_dot^2")~");
  expect_error(md, {expr_part("lagrangian", "m/2*x_dot^2) + theta_dot^2", 12) +
                    "unbalanced parenthesis: ')' without a matching '('"});
  md.set(Model::kLagrangian, R"~(lagrangian = "sin(theta_dot")~");
  expect_error(md, {expr_part("lagrangian", "sin(theta_dot", 4) +
                    "unbalanced parenthesis: '(' is never closed"});
  md.set(Model::kLagrangian, R"~(lagrangian = "theta_dot^2*()")~");
  expect_error(md, {expr_part("lagrangian", "theta_dot^2*()", 13) + "empty parentheses '()'"});
}

TEST(ModelFileErrors, TrailingOperator) {
  Model md;
  md.set(Model::kLagrangian, R"~(lagrangian = "m/2*x_dot^2 +")~");
  expect_error(md,
               {md.at(Model::kLagrangian, "\"m/2") + expr_part("lagrangian", "m/2*x_dot^2 +", 13) +
                "trailing operator '+': an operand must follow"});
  md.set(Model::kLagrangian, R"~(lagrangian = "m/2*x_dot^")~");
  expect_error(md, {expr_part("lagrangian", "m/2*x_dot^", 10) + "trailing operator '^'"});
  // an operator where an operand belongs
  md.set(Model::kLagrangian, R"~(lagrangian = "m/2*x_dot ** 2")~");
  expect_error(md, {expr_part("lagrangian", "m/2*x_dot ** 2", 12) +
                    "expected an operand after '*', found '*' (a power is written x^2)"});
  md.set(Model::kLagrangian, R"~(lagrangian = "*x_dot")~");
  expect_error(md, {expr_part("lagrangian", "*x_dot", 1) + "expected an operand, found '*'"});
}

TEST(ModelFileErrors, TwoOperandsInARow) {
  Model md;
  md.set(Model::kLagrangian, R"~(lagrangian = "m/2*x_dot^2 theta_dot^2")~");
  expect_error(md, {md.at(Model::kLagrangian, "\"m/2") +
                    expr_part("lagrangian", "m/2*x_dot^2 theta_dot^2", 13) +
                    "missing operator between '2' and 'theta_dot'"});
  md.set(Model::kLagrangian, R"~(lagrangian = "(x_dot) (y_dot)")~");
  expect_error(
      md, {expr_part("lagrangian", "(x_dot) (y_dot)", 9) + "missing operator between ')' and '('"});
  md.set(Model::kLagrangian, R"~(lagrangian = "x_dot, y_dot")~");
  expect_error(
      md, {expr_part("lagrangian", "x_dot, y_dot", 6) + "',' outside a function's argument list"});
}

TEST(ModelFileErrors, BadNumbers) {
  Model md;
  md.set(Model::kLagrangian, R"~(lagrangian = "1e*x_dot^2")~");
  expect_error(md, {md.at(Model::kLagrangian, "\"1e") + expr_part("lagrangian", "1e*x_dot^2", 1) +
                    "malformed number '1e': an exponent needs digits"});
  md.set(Model::kLagrangian, R"~(lagrangian = "x_dot^2 * 2.5e+")~");
  expect_error(md, {expr_part("lagrangian", "x_dot^2 * 2.5e+", 11) + "malformed number '2.5e+'"});
  md.set(Model::kLagrangian, R"~(lagrangian = "2x_dot^2")~");
  expect_error(md, {expr_part("lagrangian", "2x_dot^2", 1) +
                    "malformed number '2x_dot' (a product needs '*': 2*x)"});
  md.set(Model::kLagrangian, R"~(lagrangian = "1.2.3*x_dot^2")~");
  expect_error(md, {expr_part("lagrangian", "1.2.3*x_dot^2", 1) + "malformed number '1.2.3'"});
  md.set(Model::kLagrangian, R"~(lagrangian = "1e999*x_dot^2")~");
  expect_error(md, {expr_part("lagrangian", "1e999*x_dot^2", 1) + "number out of range '1e999'"});
}

TEST(ModelFileErrors, EmptyExpression) {
  Model md;
  md.set(Model::kLagrangian, R"~(lagrangian = "")~");
  expect_error(md, {md.at(Model::kLagrangian, "\"\"") + expr_part("lagrangian", "", 1) +
                    "empty expression"});
  md.set(Model::kLagrangian, R"~(lagrangian = "   ")~");
  expect_error(md, {expr_part("lagrangian", "   ", 1) + "empty expression"});
}

TEST(ModelFileErrors, UnexpectedCharacters) {
  Model md;
  md.set(Model::kLagrangian, R"~(lagrangian = "x_dot^2 # kinetic")~");
  expect_error(md, {expr_part("lagrangian", "x_dot^2 # kinetic", 9) + "unexpected character '#'"});
  // positions count characters, not bytes: the 'θ' (2 bytes) is character 5
  md.set(Model::kLagrangian, "lagrangian = \"x_dot\xC2\xB2 + \xCE\xB8_dot\"");
  expect_error(md, {"position 6: unexpected non-ASCII character"});
  md.set(Model::kLagrangian, "lagrangian = \"x_dot^2 + \xCE\xB8_dot\"");
  expect_error(md, {"position 11: unexpected non-ASCII character"});
  // nesting depth is bounded
  md.set(Model::kLagrangian,
         "lagrangian = \"" + std::string(300, '(') + "x_dot" + std::string(300, ')') + "\"");
  expect_error(md, {"position 201: nested too deeply (more than 200 levels of parentheses, signs "
                    "and ^)"});
  md.set(Model::kLagrangian, "lagrangian = \"" + std::string(300, '-') + "x_dot^2\"");
  expect_error(md, {"position 201: nested too deeply"});
  md.set(Model::kLagrangian,
         "lagrangian = \"" + std::string(199, '(') + "x_dot" + std::string(199, ')') + "\"");
  EXPECT_NO_THROW(parse(md.text()));
  std::string chain = "x_dot";
  for (int k = 0; k < 10000; ++k) chain += "+x";
  md.set(Model::kLagrangian, "lagrangian = \"" + chain + "\"");
  expect_error(md, {"position 20004: too long: more than 10000 operations in a chain"});
}

TEST(ModelFileErrors, DivisionByZeroInDefault) {
  Model md;
  md.set(
      Model::kParameters,
      R"~(parameters = [ { name = "m", default = 1.0, unit = "kg" }, { name = "J", default = "m/(m - 1)", unit = "kg m^2" } ])~");
  expect_error(
      md, {md.at(Model::kParameters, "\"m/(") + expr_part("parameters[1].default", "m/(m - 1)", 2) +
           "division by zero (1 / 0)"});
}

TEST(ModelFileErrors, NonFiniteDefault) {
  Model md;
  md.set(
      Model::kParameters,
      R"~(parameters = [ { name = "m", default = "2*log(1 - 1)", unit = "kg" }, { name = "J", default = 1, unit = "kg m^2" } ])~");
  expect_error(
      md, {md.at(Model::kParameters, "\"2*log") +
           expr_part("parameters[0].default", "2*log(1 - 1)", 3) + "log(0) = -inf: not finite"});
  md.set(
      Model::kParameters,
      R"~(parameters = [ { name = "m", default = "sqrt(-1)", unit = "kg" }, { name = "J", default = 1, unit = "kg m^2" } ])~");
  expect_error(
      md, {expr_part("parameters[0].default", "sqrt(-1)", 1) + "sqrt(-1) = ", "nan: not finite"});
  md.set(
      Model::kParameters,
      R"~(parameters = [ { name = "m", default = "1e200*1e200", unit = "kg" }, { name = "J", default = 1, unit = "kg m^2" } ])~");
  expect_error(md, {expr_part("parameters[0].default", "1e200*1e200", 6) +
                    "1e+200 * 1e+200 = inf: not finite"});
  // a TOML number that is not finite
  md.set(
      Model::kParameters,
      R"~(parameters = [ { name = "m", default = inf, unit = "kg" }, { name = "J", default = 1, unit = "kg m^2" } ])~");
  expect_error(md, {md.at(Model::kParameters, "inf") +
                    ": parameters[0].default: not a finite number (inf)"});
}

TEST(ModelFileErrors, DefaultOutsideItsRange) {
  Model md;
  md.set(
      Model::kParameters,
      R"~(parameters = [ { name = "m", default = 0, unit = "kg", positive = true }, { name = "J", default = 1, unit = "kg m^2" } ])~");
  expect_error(md, {md.at(Model::kParameters, "0,") +
                    ": parameters[0].default: the default 0 is outside the declared range (> 0)"});
  md.set(
      Model::kParameters,
      R"~(parameters = [ { name = "m", default = 2, unit = "kg" }, { name = "J", default = "m - 3", unit = "kg m^2", nonnegative = true, max = 5 } ])~");
  expect_error(
      md, {md.at(Model::kParameters, "\"m - 3") + expr_part("parameters[1].default", "m - 3", 1) +
           "the default -1 is outside the declared range (in [0, 5])"});
  md.set(
      Model::kParameters,
      R"~(parameters = [ { name = "m", default = 7.5, unit = "kg", min = 1, max = 5 }, { name = "J", default = 1, unit = "kg m^2" } ])~");
  expect_error(
      md, {"parameters[0].default: the default 7.5 is outside the declared range (in [1, 5])"});
  // bounds that admit no value at all
  md.set(
      Model::kParameters,
      R"~(parameters = [ { name = "m", default = 1, unit = "kg", positive = true, max = 0 }, { name = "J", default = 1, unit = "kg m^2" } ])~");
  expect_error(md, {md.at(Model::kParameters, "0 }") +
                    ": parameters[0].max: inconsistent range: no value satisfies positive = true, "
                    "max = 0"});
  md.set(
      Model::kParameters,
      R"~(parameters = [ { name = "m", default = 1, unit = "kg", min = "1" }, { name = "J", default = 1, unit = "kg m^2" } ])~");
  expect_error(md, {": parameters[0].min: expected a number, got a string"});
  md.set(
      Model::kParameters,
      R"~(parameters = [ { name = "m", default = 1, unit = "kg", positive = 1 }, { name = "J", default = 1, unit = "kg m^2" } ])~");
  expect_error(md, {": parameters[0].positive: expected true or false, got an integer"});
}

TEST(ModelFileErrors, DefaultIsAConstantOfEarlierParameters) {
  Model md;
  md.set(
      Model::kParameters,
      R"~(parameters = [ { name = "m", default = "J/2", unit = "kg" }, { name = "J", default = 1, unit = "kg m^2" } ])~");
  expect_error(md, {expr_part("parameters[0].default", "J/2", 1) +
                    "'J' is declared after this parameter: a default may use only the parameters "
                    "declared before it"});
  md.set(
      Model::kParameters,
      R"~(parameters = [ { name = "m", default = "m + 1", unit = "kg" }, { name = "J", default = 1, unit = "kg m^2" } ])~");
  expect_error(md,
               {expr_part("parameters[0].default", "m + 1", 1) + "'m' is this parameter itself"});
  md.set(
      Model::kParameters,
      R"~(parameters = [ { name = "m", default = "2*x", unit = "kg" }, { name = "J", default = 1, unit = "kg m^2" } ])~");
  expect_error(md, {expr_part("parameters[0].default", "2*x", 3) +
                    "'x' is a coordinate: a default is a constant: numbers, pi, functions and the "
                    "parameters declared before it"});
  md.set(
      Model::kParameters,
      R"~(parameters = [ { name = "m", default = "t + x_dot", unit = "kg" }, { name = "J", default = 1, unit = "kg m^2" } ])~");
  expect_error(md, {expr_part("parameters[0].default", "t + x_dot", 1) + "'t' is time"});
  md.set(
      Model::kParameters,
      R"~(parameters = [ { name = "m", default = "1 + x_dot", unit = "kg" }, { name = "J", default = 1, unit = "kg m^2" } ])~");
  expect_error(md, {expr_part("parameters[0].default", "1 + x_dot", 5) + "'x_dot' is a rate"});
  md.set(
      Model::kParameters,
      R"~(parameters = [ { name = "m", default = true, unit = "kg" }, { name = "J", default = 1, unit = "kg m^2" } ])~");
  expect_error(md, {": parameters[0].default: expected a number or a string (a constant "
                    "expression), got a boolean"});
}

TEST(ModelFileErrors, VelocityConstraintWithoutRate) {
  Model md;
  md.set(Model::kConstraints,
         R"~(constraints = [ { name = "k", kind = "velocity", expr = "y - x*tan(theta)" } ])~");
  expect_error(md, {md.at(Model::kConstraints, "\"y -") +
                    expr_part("constraints[0].expr", "y - x*tan(theta)", 1) +
                    "a velocity constraint must depend on a rate (x_dot, y_dot, theta_dot); a "
                    "constraint on the coordinates alone has kind = \"position\""});
}

TEST(ModelFileErrors, PositionConstraintUsesARate) {
  Model md;
  md.set(Model::kConstraints,
         R"~(constraints = [ { name = "k", kind = "position", expr = "y - x_dot*t" } ])~");
  expect_error(md, {md.at(Model::kConstraints, "\"y -") +
                    expr_part("constraints[0].expr", "y - x_dot*t", 5) +
                    "'x_dot' is a rate: a position constraint depends on the coordinates and t "
                    "only (a constraint on rates has kind = \"velocity\")"});
  // ... and must use a coordinate
  md.set(Model::kConstraints,
         R"~(constraints = [ { name = "k", kind = "position", expr = "sin(t) - m" } ])~");
  expect_error(md, {expr_part("constraints[0].expr", "sin(t) - m", 1) +
                    "a position constraint must depend on a coordinate (x, y, theta)"});
}

TEST(ModelFileErrors, AccelerationConstraintWithoutAccelerations) {
  Model md;
  md.set(Model::kConstraints,
         R"~(constraints = [ { name = "k", kind = "acceleration", expr = "x_dot - y_dot" } ])~");
  expect_error(md, {md.at(Model::kConstraints, "\"x_dot") +
                    expr_part("constraints[0].expr", "x_dot - y_dot", 1) +
                    "an acceleration constraint must depend on an acceleration (x_ddot, y_ddot, "
                    "theta_ddot)"});
}

TEST(ModelFileErrors, AccelerationConstraintNotLinearInAccelerations) {
  Model md;
  md.set(
      Model::kConstraints,
      R"~(constraints = [ { name = "k", kind = "acceleration", expr = "x_ddot^2 + y_ddot" } ])~");
  expect_error(md, {md.at(Model::kConstraints, "\"x_ddot") +
                    expr_part("constraints[0].expr", "x_ddot^2 + y_ddot", 7) +
                    "an acceleration constraint must be linear in the accelerations"});
  md.set(
      Model::kConstraints,
      R"~(constraints = [ { name = "k", kind = "acceleration", expr = "x_ddot*y_ddot - 1" } ])~");
  expect_error(md, {expr_part("constraints[0].expr", "x_ddot*y_ddot - 1", 7) +
                    "an acceleration constraint must be linear in the accelerations"});
  md.set(
      Model::kConstraints,
      R"~(constraints = [ { name = "k", kind = "acceleration", expr = "x + abs(theta_ddot)" } ])~");
  expect_error(md, {expr_part("constraints[0].expr", "x + abs(theta_ddot)", 5) +
                    "an acceleration constraint must be linear in the accelerations"});
  // not evidently affine, and undefined at every state tried: no way to check
  md.set(
      Model::kConstraints,
      R"~(constraints = [ { name = "k", kind = "acceleration", expr = "sqrt(-1 - x^2)*x_ddot^2" } ])~");
  expect_error(md, {expr_part("constraints[0].expr", "sqrt(-1 - x^2)*x_ddot^2", 22) +
                    "cannot check that the constraint is linear in the accelerations: it is not "
                    "finite at any of the random states tried"});
  md.set(Model::kConstraints,
         R"~(constraints = [ { name = "k", kind = "acceleration", expr = "x_dot/y_ddot" } ])~");
  expect_error(md, {expr_part("constraints[0].expr", "x_dot/y_ddot", 6) +
                    "an acceleration constraint must be linear in the accelerations"});
}

TEST(ModelFileErrors, AccelerationsOutsideAccelerationConstraints) {
  Model md;
  md.set(Model::kLagrangian, R"~(lagrangian = "m/2*x_dot^2 + x_ddot*x")~");
  expect_error(md, {md.at(Model::kLagrangian, "\"m/2") +
                    expr_part("lagrangian", "m/2*x_dot^2 + x_ddot*x", 15) +
                    "'x_ddot' is an acceleration: accelerations may appear only in acceleration "
                    "constraints"});
  Model vc;
  vc.set(Model::kConstraints,
         R"~(constraints = [ { name = "k", kind = "velocity", expr = "y_dot - theta_ddot" } ])~");
  expect_error(vc, {vc.at(Model::kConstraints, "\"y_dot") +
                    expr_part("constraints[0].expr", "y_dot - theta_ddot", 9) +
                    "'theta_ddot' is an acceleration"});
  Model f;
  f.add(R"~(forces = { x = "-m*x_ddot" })~");
  expect_error(f, {expr_part("forces.x", "-m*x_ddot", 4) + "'x_ddot' is an acceleration"});
}

TEST(ModelFileErrors, LagrangianWithoutRates) {
  Model md;
  md.set(Model::kLagrangian, R"~(lagrangian = "-m*9.81*y + J*cos(theta)")~");
  expect_error(md, {md.at(Model::kLagrangian, "\"-m") +
                    expr_part("lagrangian", "-m*9.81*y + J*cos(theta)", 1) +
                    "the Lagrangian depends on no rate (x_dot, y_dot, theta_dot): it has no "
                    "kinetic energy"});
  Model c;
  c.add(R"~(conflated_lagrangian = "x*y")~");
  expect_error(c, {expr_part("conflated_lagrangian", "x*y", 1) +
                   "the conflated Lagrangian depends on no rate"});
}

TEST(ModelFileErrors, LagrangianMissing) {
  Model md;
  md.lines.erase(md.lines.begin() + Model::kLagrangian - 1);
  expect_error(md, {"bad.toml:1:1: lagrangian: missing (required: name, description, coordinates, "
                    "lagrangian)"});
  Model wrong_type;
  wrong_type.set(Model::kLagrangian, "lagrangian = 3");
  expect_error(wrong_type, {"bad.toml:5:14: lagrangian: expected a string, got an integer"});
}

TEST(ModelFileErrors, DuplicateCoordinate) {
  Model md;
  md.set(
      Model::kCoordinates,
      R"~(coordinates = [ { name = "x", unit = "m" }, { name = "y", unit = "m" }, { name = "x", unit = "rad" } ])~");
  expect_error(md, {md.at(Model::kCoordinates, "\"x\", unit = \"rad") +
                    ": coordinates[2].name: duplicate coordinate 'x' (also coordinates[0].name)"});
}

TEST(ModelFileErrors, ReservedAndClashingNames) {
  struct Case {
    std::string coords, params, reason;
  };
  const std::string p_ok = R"~({ name = "m", default = 1, unit = "kg" })~";
  const std::string c_ok = R"~({ name = "x", unit = "m" }, { name = "y", unit = "m" })~";
  const std::vector<Case> cases = {
      {R"~({ name = "sin", unit = "rad" }, )~" + c_ok, p_ok,
       "coordinates[0].name: 'sin' is the name of a function (functions: sin, cos,"},
      {c_ok, R"~({ name = "atan2", default = 1, unit = "1" })~",
       "parameters[0].name: 'atan2' is the name of a function"},
      {R"~({ name = "t", unit = "s" }, )~" + c_ok, p_ok,
       "coordinates[0].name: 't' is reserved (time t and the constant pi)"},
      {c_ok, R"~({ name = "pi", default = 3, unit = "1" })~",
       "parameters[0].name: 'pi' is reserved"},
      {R"~({ name = "x_dot", unit = "m/s" }, )~" + c_ok, p_ok,
       "coordinates[0].name: 'x_dot' ends in _dot: names ending in _dot and _ddot are the rates "
       "and accelerations of the coordinates"},
      {c_ok, R"~({ name = "v_ddot", default = 1, unit = "1" })~",
       "parameters[0].name: 'v_ddot' ends in _ddot"},
      {c_ok, R"~({ name = "y", default = 1, unit = "kg" })~",
       "parameters[0].name: 'y' is already a coordinate (coordinates[1].name): names must be "
       "unique across coordinates and parameters"},
      {c_ok, p_ok + R"~(, { name = "m", default = 2, unit = "kg" })~",
       "parameters[1].name: duplicate parameter 'm' (also parameters[0].name)"},
      {R"~({ name = "2x", unit = "m" }, )~" + c_ok, p_ok,
       "coordinates[0].name: invalid coordinate name '2x': letters, digits and _, starting with a "
       "letter"},
      {c_ok, R"~({ name = "k-1", default = 1, unit = "1" })~",
       "parameters[0].name: invalid parameter name 'k-1'"},
  };
  for (const auto& c : cases) {
    Model md;
    md.set(Model::kCoordinates, "coordinates = [ " + c.coords + " ]");
    md.set(Model::kParameters, "parameters = [ " + c.params + " ]");
    md.set(Model::kLagrangian, R"~(lagrangian = "m/2*(x_dot^2 + y_dot^2)")~");
    md.set(Model::kConstraints, "");
    expect_error(md, {"bad.toml:", c.reason});
  }
  // the line and column are those of the offending name
  Model md;
  md.set(
      Model::kParameters,
      R"~(parameters = [ { name = "m", default = 1.0, unit = "kg" }, { name = "theta", default = 1, unit = "rad" } ])~");
  expect_error(md, {md.at(Model::kParameters, "\"theta\"") + ": parameters[1].name: 'theta' is "
                                                             "already a coordinate"});
}

TEST(ModelFileErrors, CoordinateUnitMissing) {
  Model md;
  md.set(
      Model::kCoordinates,
      R"~(coordinates = [ { name = "x", unit = "m" }, { name = "y" }, { name = "theta", unit = "rad" } ])~");
  expect_error(md, {md.at(Model::kCoordinates, "{ name = \"y\"") +
                    ": coordinates[1].unit: missing (required: name, unit)"});
  md.set(
      Model::kCoordinates,
      R"~(coordinates = [ { name = "x", unit = "m" }, { name = "y", unit = "" }, { name = "theta", unit = "rad" } ])~");
  expect_error(md, {md.at(Model::kCoordinates, "\"\"") +
                    ": coordinates[1].unit: empty unit (write \"1\" for a dimensionless one)"});
  md.set(
      Model::kCoordinates,
      R"~(coordinates = [ { unit = "m" }, { name = "y", unit = "m" }, { name = "theta", unit = "rad" } ])~");
  expect_error(md, {md.at(Model::kCoordinates, "{ unit") +
                    ": coordinates[0].name: missing (required: name, unit)"});
}

TEST(ModelFileErrors, ParameterUnitMissing) {
  Model md;
  md.set(
      Model::kParameters,
      R"~(parameters = [ { name = "m", default = 1.0, unit = "kg" }, { name = "J", default = "m/4" } ])~");
  expect_error(md, {md.at(Model::kParameters, "{ name = \"J\"") +
                    ": parameters[1].unit: missing (required: name, default, unit)"});
  md.set(
      Model::kParameters,
      R"~(parameters = [ { name = "m", unit = "kg" }, { name = "J", default = 1, unit = "kg" } ])~");
  expect_error(md, {md.at(Model::kParameters, "{ name = \"m\"") +
                    ": parameters[0].default: missing (required: name, default, unit)"});
}

TEST(ModelFileErrors, ModelNameOfABuiltin) {
  Model md;
  md.set(Model::kName, R"~(name = "skate")~");
  expect_error(md, {"bad.toml:1:8: name: 'skate' is the name of a built-in model (built-in: "
                    "rolling_coin, skate, appell)"});
}

TEST(ModelFileErrors, InvalidModelName) {
  for (const std::string bad : {"Sled", "2sled", "my-sled", "", "sled model", "_sled"}) {
    Model md;
    md.set(Model::kName, "name = \"" + bad + "\"");
    expect_error(md, {"bad.toml:1:8: name: invalid model name '" + bad +
                      "': it must match [a-z][a-z0-9_]*"});
  }
  Model md;
  md.lines.erase(md.lines.begin());
  expect_error(md, {"bad.toml:1:1: name: missing (required: name, description, coordinates, "
                    "lagrangian)"});
}

// Issue 31, wart 11: the name begins the plugin cache's file names; a
// 300-character one passed the check and failed the run ("File name too long")
TEST(ModelFileErrors, ModelNameAtMost64Characters) {
  Model md;
  md.set(Model::kName, "name = \"" + std::string(64, 'a') + "\"");
  EXPECT_EQ(parse(md.text()).name, std::string(64, 'a'));
  md.set(Model::kName, "name = \"" + std::string(65, 'a') + "\"");
  expect_error(md, {"bad.toml:1:8: name: the model name '" + std::string(65, 'a') +
                    "' is 65 characters long: at most 64 are accepted (it names the plugin's "
                    "files in the cache)"});
  // a long one is shown cut after 80 characters
  md.set(Model::kName, "name = \"" + std::string(300, 'b') + "\"");
  const std::string msg = error_of(md.text());
  EXPECT_NE(msg.find("'" + std::string(80, 'b') + "...' is 300 characters long"), std::string::npos)
      << msg;
  EXPECT_LT(msg.size(), 300u) << msg;
}

// true when s is valid UTF-8 (a message cut inside a character is not)
bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

// Issue 31, wart 12a: an error in a 3.8 MB expression echoed all of it on
// one line; now the 80 characters around the position, cut with "..."
TEST(ModelFileErrors, LongExpressionIsShownAroundThePosition) {
  Model md;
  // the chain limit (10000 operations) is reached at position 20004; the
  // expression goes on for another 10000 characters
  std::string chain = "x_dot";
  for (int k = 0; k < 15000; ++k) chain += "+x";
  md.set(Model::kLagrangian, "lagrangian = \"" + chain + "\"");
  std::string msg = error_of(md.text());
  // characters 19964-20043 of 30005: 40 before position 20004, 40 from it
  EXPECT_NE(msg.find(": lagrangian: \"..." + chain.substr(19963, 80) +
                     "...\" (characters 19964-20043 of 30005): position 20004: too long: more "
                     "than 10000 operations in a chain"),
            std::string::npos)
      << msg;
  EXPECT_LT(msg.size(), 300u);
  // near the start: cut at the end only
  std::string tail = "x_dot^2 + yy";
  for (int k = 0; k < 100; ++k) tail += " + x";
  md.set(Model::kLagrangian, "lagrangian = \"" + tail + "\"");
  msg = error_of(md.text());
  EXPECT_NE(msg.find(": lagrangian: \"" + tail.substr(0, 80) +
                     "...\" (characters 1-80 of 412): position 11: unknown name 'yy'"),
            std::string::npos)
      << msg;
  // positions count characters, and a cut never splits one (UTF-8)
  std::string wide = "x_dot^2";
  for (int k = 0; k < 60; ++k) wide += " + x";
  wide += " + \xc3\xbc\xc3\xbc";  // two u-umlauts: an unexpected character at 251
  for (int k = 0; k < 60; ++k) wide += " + \xc3\xa9";
  md.set(Model::kLagrangian, "lagrangian = \"" + wide + "\"");
  msg = error_of(md.text());
  EXPECT_NE(msg.find("(characters 211-290 of 492): position 251: "), std::string::npos) << msg;
  EXPECT_TRUE(valid_utf8(msg)) << msg;
  // a short expression is shown whole, without "..."
  md.set(Model::kLagrangian, R"~(lagrangian = "x_dot^2 + q")~");
  expect_error(md, {expr_part("lagrangian", "x_dot^2 + q", 11) + "unknown name 'q'"});
}

// Issue 31, wart 12b: a NUL written as the TOML escape \u0000 cut the
// message off (and reached the name of the plugin's files); refused in
// every string, other control characters shown as \u00XX
TEST(ModelFileErrors, NulAndControlCharactersInStrings) {
  const std::string tail = ": not accepted in a model file (its strings are text without NUL)";
  Model md;
  md.set(Model::kLagrangian, R"~(lagrangian = "(x_\u0000dot^2 + y_dot^2)/2")~");
  expect_error(
      md, {md.at(Model::kLagrangian, "\"(x_") +
           ": lagrangian: the string contains a NUL character (\\u0000) at character 4" + tail});
  md = Model();
  md.set(Model::kName, R"~(name = "sl\u0000ed")~");
  expect_error(md, {"bad.toml:1:8: name: the string contains a NUL character (\\u0000) at "
                    "character 3" +
                    tail});
  md = Model();
  md.set(Model::kDescription, R"~(description = "a sled\u0000")~");
  expect_error(md, {"bad.toml:2:15: description: the string contains a NUL character (\\u0000) at "
                    "character 7" +
                    tail});
  md = Model();
  md.set(Model::kConstraints,
         R"~(constraints = [ { name = "k", kind = "velocity", expr = "y_dot - x_dot\u0000" } ])~");
  expect_error(md, {": constraints[0].expr: the string contains a NUL character (\\u0000) at "
                    "character 14" +
                    tail});
  // a control character in an expression is an error shown escaped
  md = Model();
  md.set(Model::kLagrangian, R"~(lagrangian = "x_dot^2/2 \u0001 x")~");
  const std::string msg = error_of(md.text());
  EXPECT_NE(msg.find(": lagrangian: \"x_dot^2/2 \\u0001 x\": position 11: "), std::string::npos)
      << msg;
  for (char c : msg) EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20) << msg;
  // a unit with an é is still text
  md = Model();
  md.set(
      Model::kCoordinates,
      R"~(coordinates = [ { name = "x", unit = "m\u00e9" }, { name = "y", unit = "m" }, { name = "theta", unit = "rad" } ])~");
  EXPECT_EQ(parse(md.text()).coordinates[0].unit, "m\xc3\xa9");
}

// Issue 31, wart 13: a 5000-term Lagrangian was accepted and its plugin
// compiled for minutes; all expressions together are limited to 10,000 nodes
// (numbers, names, operations, function calls) after parsing
TEST(ModelFileErrors, ExpressionNodesAreLimited) {
  const std::string head =
      "name = \"big\"\ndescription = \"many terms\"\n"
      "coordinates = [ { name = \"x\", unit = \"m\" } ]\n";
  // x_dot^2: 3 nodes; each " + x" 2; " + sin(x)" 3
  auto sum = [](int terms) {
    std::string s = "x_dot^2";
    for (int k = 0; k < terms; ++k) s += " + x";
    return s;
  };
  // 10,000 nodes: accepted
  EXPECT_NO_THROW(parse(head + "lagrangian = \"" + sum(4997) + " + sin(x)\"\n"));
  // 10,001: refused, saying the size and the limit
  std::string msg = error_of(head + "lagrangian = \"" + sum(4999) + "\"\n");
  EXPECT_NE(msg.find("bad.toml:4:14: lagrangian: the model's expressions are too large: 10001 "
                     "nodes after parsing, more than the limit of 10000 (numbers, names, "
                     "operations and function calls of all expressions together)"),
            std::string::npos)
      << msg.substr(0, 400);
  EXPECT_NE(msg.find("docs/models.md, \"Limits\""), std::string::npos) << msg.substr(0, 400);
  EXPECT_LT(msg.size(), 400u);
  // the total of all expressions: the one that crosses the limit is named
  msg = error_of(head + "lagrangian = \"" + sum(3000) + "\"\nenergy = \"" + sum(1999) + "\"\n");
  EXPECT_NE(msg.find("bad.toml:5:10: energy: the model's expressions are too large: 10004 nodes "
                     "after parsing (4001 in this expression), more than the limit of 10000"),
            std::string::npos)
      << msg.substr(0, 400);
  // the parser's own limit comes first for one overlong chain
  msg = error_of(head + "lagrangian = \"" + sum(10001) + "\"\n");
  EXPECT_NE(msg.find("too long: more than 10000 operations in a chain"), std::string::npos)
      << msg.substr(0, 400);
}

// Issue 31, wart 9 and its /dev/zero: a model file that cannot be opened
// says why (a symbolic-link loop), and only a regular file of at most 64 MiB
// is read (not a device, a FIFO or a folder, which were read without limit or
// blocked)
TEST(ModelFileErrors, LoadModelFileOpensOnlyRegularFilesOfSaneSize) {
  const fs::path dir =
      fs::temp_directory_path() / ("nholo_test_model_file_kinds_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto error = [](const std::string& path) -> std::string {
    try {
      nholo::load_model_file(path, kBuiltins);
    } catch (const ModelFileError& e) {
      return e.what();
    }
    ADD_FAILURE() << "no error for " << path;
    return "";
  };
  fs::create_symlink(dir / "loop_b.toml", dir / "loop_a.toml");
  fs::create_symlink(dir / "loop_a.toml", dir / "loop_b.toml");
  const std::string loop = (dir / "loop_a.toml").string();
  EXPECT_EQ(error(loop), loop + ": cannot open the model file: " + std::strerror(ELOOP));
  EXPECT_EQ(error("/dev/zero"),
            "/dev/zero: not a regular file (a character device): a model file is a TOML file");
  EXPECT_EQ(error(dir.string()),
            dir.string() + ": not a regular file (a folder): a model file is a TOML file");
  const std::string fifo = (dir / "fifo.toml").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0) << std::strerror(errno);
  EXPECT_EQ(error(fifo), fifo + ": not a regular file (a FIFO): a model file is a TOML file");
  // 64 MiB + 1 byte (sparse): refused before it is read
  const std::string big = (dir / "big.toml").string();
  { std::ofstream(big) << Model().text(); }
  fs::resize_file(big, (64u << 20) + 1);
  EXPECT_EQ(error(big), big +
                            ": larger than 64 MiB (67108865 bytes); a model file is accepted "
                            "up to 64 MiB");
  // a good file through a symbolic link is read
  const std::string good = (dir / "good.toml").string();
  std::ofstream(good) << Model().text();
  fs::create_symlink(dir / "good.toml", dir / "link.toml");
  EXPECT_EQ(nholo::load_model_file((dir / "link.toml").string(), kBuiltins).name, "sled");
  fs::remove_all(dir);
}

TEST(ModelFileErrors, DescriptionRequiredAndOneLine) {
  Model md;
  md.lines.erase(md.lines.begin() + 1);
  expect_error(md, {"bad.toml:1:1: description: missing"});
  md = Model();
  md.set(Model::kDescription, R"~(description = "two\nlines")~");
  expect_error(md, {"bad.toml:2:15: description: the description must be one line"});
  md.set(Model::kDescription, R"~(description = "")~");
  expect_error(md, {"bad.toml:2:15: description: empty description"});
}

TEST(ModelFileErrors, UnknownKeysNameTheAcceptedOnes) {
  Model md;
  const int l = md.add(R"~(lagrangain = "x")~");
  expect_error(md, {md.at(l, "lagrangain") +
                    ": lagrangain: unknown key 'lagrangain' (accepted: name, description, "
                    "coordinates, parameters, lagrangian, constraints, forces, nonideal_forces, "
                    "energy, conflated_lagrangian, constraint_rank, events)"});
  md = Model();
  md.set(
      Model::kCoordinates,
      R"~(coordinates = [ { name = "x", unit = "m" }, { name = "y", unti = "m" }, { name = "theta", unit = "rad" } ])~");
  expect_error(md, {md.at(Model::kCoordinates, "unti") +
                    ": coordinates[1].unti: unknown key 'unti' (accepted: name, unit, "
                    "description)"});
  md = Model();
  md.set(Model::kParameters, R"~(parameters = [ { name = "m", defualt = 1.0, unit = "kg" } ])~");
  expect_error(md, {md.at(Model::kParameters, "defualt") +
                    ": parameters[0].defualt: unknown key 'defualt' (accepted: name, default, "
                    "unit, description, min, max, positive, nonnegative)"});
  md = Model();
  md.set(Model::kConstraints,
         R"~(constraints = [ { name = "k", kind = "velocity", expression = "x_dot" } ])~");
  expect_error(md, {md.at(Model::kConstraints, "expression") +
                    ": constraints[0].expression: unknown key 'expression' (accepted: name, kind, "
                    "expr)"});
}

TEST(ModelFileErrors, WrongConstraintKind) {
  Model md;
  md.set(Model::kConstraints,
         R"~(constraints = [ { name = "k", kind = "nonholonomic", expr = "x_dot" } ])~");
  expect_error(md, {md.at(Model::kConstraints, "\"nonholonomic") +
                    ": constraints[0].kind: unknown constraint kind 'nonholonomic' (accepted: "
                    "position, velocity, acceleration)"});
  md.set(Model::kConstraints, R"~(constraints = [ { name = "k", expr = "x_dot" } ])~");
  expect_error(md, {md.at(Model::kConstraints, "{ name") +
                    ": constraints[0].kind: missing (required: name, kind, expr)"});
}

TEST(ModelFileErrors, ConstraintNames) {
  Model md;
  md.set(
      Model::kConstraints,
      R"~(constraints = [ { name = "k", kind = "velocity", expr = "x_dot" }, { name = "k", kind = "velocity", expr = "y_dot" } ])~");
  expect_error(md, {": constraints[1].name: duplicate constraint name 'k' (also "
                    "constraints[0].name)"});
  md.set(Model::kConstraints,
         R"~(constraints = [ { name = "knife edge", kind = "velocity", expr = "x_dot" } ])~");
  expect_error(md, {md.at(Model::kConstraints, "\"knife") +
                    ": constraints[0].name: invalid constraint name 'knife edge'"});
}

TEST(ModelFileErrors, ForceForAnUnknownCoordinate) {
  Model md;
  const int l = md.add(R"~(forces = { theta = "-0.1*theta_dot", z = "-z_dot" })~");
  expect_error(md, {md.at(l, "z =") +
                    ": forces.z: force for an unknown coordinate 'z' (coordinates: x, y, theta)"});
  md = Model();
  const int l2 = md.add(R"~(nonideal_forces = { X = "-x_dot" })~");
  expect_error(md, {md.at(l2, "X =") + ": nonideal_forces.X: force for an unknown coordinate 'X'"});
  md = Model();
  const int l3 = md.add(R"~(forces = ["-x_dot"])~");
  expect_error(md, {md.at(l3, "[") + ": forces: expected a table of expressions per coordinate"});
  md = Model();
  md.add(R"~(forces = { x = 1.5 })~");
  expect_error(md, {": forces.x: expected a string, got a floating-point number"});
  md = Model();
  md.add(R"~(forces = { x = "-x_dot*" })~");
  expect_error(md, {expr_part("forces.x", "-x_dot*", 7) + "trailing operator '*'"});
}

TEST(ModelFileErrors, AsManyConstraintsAsCoordinates) {
  Model md;
  md.set(
      Model::kConstraints,
      R"~(constraints = [ { name = "a", kind = "velocity", expr = "x_dot" }, { name = "b", kind = "position", expr = "y" }, { name = "c", kind = "acceleration", expr = "theta_ddot" } ])~");
  expect_error(md, {md.at(Model::kConstraints, "[") +
                    ": constraints: 3 constraints for 3 coordinates: a model needs fewer "
                    "constraints than coordinates"});
  md.set(
      Model::kConstraints,
      R"~(constraints = [ { name = "a", kind = "velocity", expr = "x_dot" }, { name = "b", kind = "position", expr = "y" }, { name = "c", kind = "acceleration", expr = "theta_ddot" }, { name = "d", kind = "position", expr = "x" } ])~");
  expect_error(md, {": constraints: 4 constraints for 3 coordinates"});
}

TEST(ModelFileErrors, ConstraintRankOutOfRange) {
  for (const char* v : {"0", "2", "1.5", "\"1\""}) {
    Model md;
    const int line = md.add(std::string("constraint_rank = ") + v);
    expect_error(md, {"bad.toml:" + std::to_string(line) +
                      ":19: constraint_rank: expected an integer from 1 "
                      "to the number of constraints (1)"});
  }
  // a declared rank below m leaves only the formulations that stay regular
  Model md;
  md.set(
      Model::kConstraints,
      R"~(constraints = [ { name = "a", kind = "velocity", expr = "x_dot" }, { name = "b", kind = "velocity", expr = "2*x_dot" } ])~");
  md.add("constraint_rank = 1");
  const ModelSpec s = parse(md.text());
  EXPECT_EQ(s.constraint_rank, 1);
  EXPECT_EQ(nholo::model_info_from_spec(s).formulations,
            (std::vector<std::string>{"udwadia_kalaba", "null_space"}));
  EXPECT_NE(nholo::generate_model_header(s).find("static constexpr int constraint_rank = 1;"),
            std::string::npos);
}

TEST(ModelFileErrors, EmptyCoordinateList) {
  Model md;
  md.set(Model::kCoordinates, "coordinates = []");
  expect_error(md, {"bad.toml:3:15: coordinates: empty: a model needs at least one coordinate"});
  md.set(Model::kCoordinates, R"~(coordinates = "x")~");
  expect_error(md, {"bad.toml:3:15: coordinates: expected an array of tables"});
  md.set(Model::kCoordinates, R"~(coordinates = ["x", "y"])~");
  expect_error(md, {"bad.toml:3:16: coordinates[0]: expected a table { name = \"x\", unit = "
                    "\"m\" }, got a string"});
}

TEST(ModelFileErrors, StructureAndTypes) {
  Model md;
  md.lines.erase(md.lines.begin() + Model::kCoordinates - 1);
  expect_error(md, {"bad.toml:1:1: coordinates: missing (required: name, description, "
                    "coordinates, lagrangian)"});
  md = Model();
  md.set(Model::kName, "name = 7");
  expect_error(md, {"bad.toml:1:8: name: expected a string, got an integer"});
  md = Model();
  md.set(Model::kParameters, R"~(parameters = { m = 1 })~");
  expect_error(md, {"bad.toml:4:14: parameters: expected an array of tables"});
  md.set(Model::kParameters, R"~(parameters = [ 1.0 ])~");
  expect_error(md, {"bad.toml:4:16: parameters[0]: expected a table { name = \"m\", default = "
                    "1.0, unit = \"kg\" }, got a floating-point number"});
  md.set(Model::kParameters, R"~(parameters = [ { default = 1, unit = "kg" } ])~");
  expect_error(md, {"bad.toml:4:16: parameters[0].name: missing (required: name, default, unit)"});
  md = Model();
  md.set(Model::kConstraints, R"~(constraints = "x_dot")~");
  expect_error(md, {"bad.toml:6:15: constraints: expected an array of tables"});
  md.set(Model::kConstraints, R"~(constraints = [ { name = "k", kind = "velocity" } ])~");
  expect_error(md, {"bad.toml:6:17: constraints[0].expr: missing (required: name, kind, expr)"});
  md.set(Model::kConstraints, R"~(constraints = [ { name = "k", kind = "velocity", expr = 0 } ])~");
  expect_error(md, {md.at(Model::kConstraints, "0 }") +
                    ": constraints[0].expr: expected a string, got an integer"});
  md = Model();
  const int l = md.add(R"~(energy = "m/2*x_dot^2 + x_ddot")~");
  expect_error(md, {md.at(l, "\"m/2") + expr_part("energy", "m/2*x_dot^2 + x_ddot", 15) +
                    "'x_ddot' is an acceleration"});
}

TEST(ModelFileErrors, LoadModelFileNamesThePath) {
  const fs::path dir =
      fs::temp_directory_path() / ("nholo_test_model_file_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "sled.toml").string();
  {
    Model md;
    md.set(Model::kLagrangian, R"~(lagrangian = "m/2*x_dot^2 + J/2*theta_dot^2 + q")~");
    std::ofstream(path) << md.text();
  }
  try {
    nholo::load_model_file(path, kBuiltins);
    ADD_FAILURE() << "no error";
  } catch (const ModelFileError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ":5:14: lagrangian: \"m/2*x_dot^2 + "
                                                "J/2*theta_dot^2 + q\": position 33: unknown "
                                                "name 'q'"),
              std::string::npos)
        << e.what();
  }
  // not TOML at all
  std::ofstream(path) << "name = \"sled\"\ncoordinates = [ {\n";
  try {
    nholo::load_model_file(path, kBuiltins);
    ADD_FAILURE() << "no error";
  } catch (const ModelFileError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path + ":", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("not valid TOML"), std::string::npos) << e.what();
  }
  // no such file
  try {
    nholo::load_model_file((dir / "missing.toml").string(), kBuiltins);
    ADD_FAILURE() << "no error";
  } catch (const ModelFileError& e) {
    EXPECT_EQ(std::string(e.what()), (dir / "missing.toml").string() +
                                         ": cannot open the model file: " + std::strerror(ENOENT));
  }
  // a good file: its path is the spec's source
  std::ofstream(path) << Model().text();
  const ModelSpec s = nholo::load_model_file(path, kBuiltins);
  EXPECT_EQ(s.source, path);
  EXPECT_EQ(s.name, "sled");
  EXPECT_DOUBLE_EQ(s.parameters[1].default_value, 0.25);
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------
// 2. Good model files

const char* kSkate = R"~(
name = "skate_file"
description = "Hamel's skate on an inclined plane (models/skate.hpp), from a model file"
coordinates = [
  { name = "x", unit = "m", description = "contact point, down the slope" },
  { name = "y", unit = "m" },
  { name = "theta", unit = "rad", description = "heading of the blade" },
]
parameters = [
  { name = "mass", default = 1.3, unit = "kg", description = "skate mass m", positive = true },
  { name = "offset", default = 0.4, unit = "m", description = "s" },
  { name = "inertia", default = "2*mass*offset^2 + 0.5", unit = "kg m^2", positive = true },
  { name = "g", default = 9.81, unit = "m/s^2", nonnegative = true },
  { name = "slope", default = 0.3, unit = "rad", min = -1.5, max = 1.5 },
]
lagrangian = """mass/2*(x_dot^2 + y_dot^2) + mass*offset*theta_dot*(y_dot*cos(theta) - x_dot*sin(theta))
  + inertia/2*theta_dot^2 + mass*g*sin(slope)*(x + offset*cos(theta))"""
constraints = [ { name = "knife_edge", kind = "velocity", expr = "y_dot*cos(theta) - x_dot*sin(theta)" } ]
energy = """mass/2*(x_dot^2 + y_dot^2) + mass*offset*theta_dot*(y_dot*cos(theta) - x_dot*sin(theta))
  + inertia/2*theta_dot^2 - mass*g*sin(slope)*(x + offset*cos(theta))"""
conflated_lagrangian = "mass/2*(x_dot^2 + y_dot^2) + inertia/2*theta_dot^2 + mass*g*sin(slope)*(x + offset*cos(theta))"
)~";

// a block on a moving inclined plane (position constraint depending on t),
// velocity-dependent drag and a nonideal force using every function kind
const char* kBlock = R"~(
name = "block_file"
description = "block on an oscillating plane with drag"
coordinates = [ { name = "x", unit = "m" }, { name = "y", unit = "m" } ]
parameters = [
  { name = "mass", default = 2.0, unit = "kg", positive = true },
  { name = "g", default = 9.81, unit = "m/s^2" },
  { name = "angle", default = "pi/6", unit = "rad", min = 0, max = 1.5 },
  { name = "c", default = 0.4, unit = "kg/m", nonnegative = true },
  { name = "mu", default = 0.3, unit = "N" },
  { name = "amp", default = 0.05, unit = "m" },
  { name = "omega", default = "2*pi", unit = "rad/s", positive = true },
]
lagrangian = "mass/2*(x_dot^2 + y_dot^2) - mass*g*y"
constraints = [ { name = "plane", kind = "position", expr = "y - x*tan(angle) - amp*sin(omega*t)" } ]
forces = { x = "-c*x_dot*abs(x_dot)", y = "-c*y_dot^3" }
nonideal_forces = { x = "-mu*sign(x_dot)*cos(angle)", y = "mu*atan2(y_dot, g)*pow(1 + x_dot^2, 0.5) + 0.1*pow(2, t)" }
energy = "mass/2*(x_dot^2 + y_dot^2) + mass*g*y"
)~";

// acceleration constraint, no parameters
const char* kAccel = R"~(
name = "accel_particle"
description = "a particle with a linear acceleration constraint"
coordinates = [ { name = "x", unit = "m" }, { name = "y", unit = "m" }, { name = "z", unit = "m" } ]
lagrangian = "(x_dot^2 + y_dot^2 + z_dot^2)/2 - x*y + z^4/4"
constraints = [
  { name = "tilt", kind = "acceleration", expr = "x_ddot + 2*y_ddot - sin(t)*x_dot" },
  { name = "still", kind = "position", expr = "z - 1" },
]
)~";

// no constraints and no parameters
const char* kFree = R"~(
name = "free"
description = "a free particle"
coordinates = [ { name = "x", unit = "m" } ]
lagrangian = "x_dot^2/2 - x^2/2"
)~";

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
        "p.k[0] * (nholo::expr::ipow<2>(qd[0]) + nholo::expr::ipow<2>(qd[1])) + p.v[0] * "
        "p.v[1] * qd[2] * (qd[1] * cos(q[2]) - qd[0] * sin(q[2]))",
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
  for (int k = 0; k < 600; ++k) sum += " + x*" + std::to_string(k) + " - (y - theta)";
  md.set(Model::kLagrangian, "lagrangian = \"" + sum + "\"");
  const std::string h = nholo::generate_model_header(parse(md.text()));
  int depth = 0, deepest = 0;
  for (const char c : h) {
    depth += c == '(' ? 1 : c == ')' ? -1 : 0;
    deepest = std::max(deepest, depth);
  }
  EXPECT_EQ(depth, 0);
  EXPECT_LE(deepest, 4);
  EXPECT_NE(h.find("q[0] * 179.0 - (q[1] - q[2])"), std::string::npos);
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
// 3. Symbolic M and F (symbolic_dynamics, the generated hand_dynamics)

// every function of the grammar, rates inside functions (M depends on qd),
// rates coupled with coordinates and time, variable exponents
const char* kEveryFunction = R"~(
name = "every_function"
description = "a Lagrangian with every function of the grammar"
coordinates = [ { name = "a", unit = "1" }, { name = "b", unit = "1" } ]
parameters = [ { name = "k", default = 1.7, unit = "1", positive = true } ]
lagrangian = """a_dot^2/2 + (1 + b^2/4)*b_dot^2/2 + k*a_dot*b_dot*cos(a) + sin(a_dot*b)*t/3
  + tan(0.3*a_dot)*exp(-b) + log(2 + a_dot^2)*sqrt(1 + b^2) + sinh(0.2*b_dot)*cosh(a)
  + tanh(a_dot - b_dot)/2 + abs(a_dot - 2)*b + sign(b_dot + 5)*a^3 + atan2(b_dot, 2 + a^2)
  + pow(1 + b_dot^2, 1.5) + (1.5 + a^2)^(0.1*b_dot*t) + k^b_dot + b_dot^3/7 - a^4/4
  + a/(1 + b_dot^2) - -(a*b_dot)"""
)~";

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

// ---------------------------------------------------------------------------
// 4. The generated header compiled

// c++ on PATH, or "" when there is none
std::string find_compiler() {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return "";
  std::stringstream ss(path);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    const fs::path p = fs::path(dir.empty() ? "." : dir) / "c++";
    if (::access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

// Builds main.cpp (which includes "user_model.hpp", the header of `spec`)
// with the system compiler and runs it; its output lines "key value" are
// returned as a map. Empty when the compiler is missing (*skip set).
std::map<std::string, double> compile_and_run(const ModelSpec& spec, const std::string& main_cpp,
                                              std::string* skip) {
  std::map<std::string, double> out;
  const std::string cxx = find_compiler();
  if (cxx.empty()) {
    *skip = "no c++ on PATH: the generated header is not compiled here";
    return out;
  }
  const fs::path dir = fs::temp_directory_path() /
                       ("nholo_test_model_file_" + spec.name + "_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "user_model.hpp") << nholo::generate_model_header(spec);
  std::ofstream(dir / "main.cpp") << main_cpp;
  const std::string cmd = cxx + " -std=c++17 -O0 -Wall -Wextra -Wshadow -Wpedantic -Werror -I" +
                          NHOLO_SOURCE_DIR + " -I" + dir.string() + " " +
                          (dir / "main.cpp").string() + " -o " + (dir / "prog").string() + " > " +
                          (dir / "build.log").string() + " 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream log(dir / "build.log");
    std::stringstream ls;
    ls << log.rdbuf();
    ADD_FAILURE() << "the generated header does not compile:\n"
                  << ls.str() << "\n--- user_model.hpp:\n"
                  << nholo::generate_model_header(spec);
    return out;
  }
  const std::string run = (dir / "prog").string() + " > " + (dir / "out.txt").string();
  EXPECT_EQ(std::system(run.c_str()), 0);
  std::ifstream in(dir / "out.txt");
  std::string key;
  double v;
  while (in >> key >> v) out[key] = v;
  fs::remove_all(dir);
  return out;
}

void expect_value(const std::map<std::string, double>& got, const std::string& key, double want) {
  const auto it = got.find(key);
  ASSERT_NE(it, got.end()) << key << " not printed";
  EXPECT_NEAR(it->second, want, 1e-12 * (1.0 + std::fabs(want))) << key;
}

// the printing part of every test program
const char* kProgramHead = R"~(#include <cstdio>

#include "kernels/dual.hpp"
#include "kernels/dynamics.hpp"
#include "user_model.hpp"

using namespace nholo;
using M = user_models::UserModel;
using D = Dual<double, 3>;

inline void out(const char* key, double v) { std::printf("%s %.17g\n", key, v); }
inline void out(const char* key, int i, double v) { std::printf("%s%d %.17g\n", key, i, v); }
inline void out(const char* key, int i, int j, double v) {
  std::printf("%s%d%d %.17g\n", key, i, j, v);
}
inline M::Params defaults() {
  double v[M::n_params > 0 ? M::n_params : 1] = {0.0};
  for (int j = 0; j < M::n_params; ++j) v[j] = M::param_info[j].default_value;
  return M::make_params(v);
}
)~";

TEST(ModelFileCompiled, SkateMatchesClosedForms) {
  const ModelSpec s = parse(kSkate, "skate.toml");
  const std::string program = std::string(kProgramHead) + R"~(
#include "kernels/formulations.hpp"
#include "kernels/system.hpp"
#include "models/skate.hpp"
// |dy - dy_builtin| over the state derivative at a state
template <class Sys, class Ref>
void compare(const char* key, const double* v) {
  Sys a{};
  Ref b{};
  a.params = M::make_params(v);
  b.params = models::Skate::make_params(v);
  Vec<double, Sys::N> y, da, db;
  for (int i = 0; i < Sys::N; ++i) y[i] = 0.37 * (i + 1) - 0.5;
  const Status sa = a(0.4, y, da), sb = b(0.4, y, db);
  double diff = 0, size = 0;
  for (int i = 0; i < Sys::N; ++i) {
    diff = diff > nholo::fabs(da[i] - db[i]) ? diff : nholo::fabs(da[i] - db[i]);
    size = size > nholo::fabs(db[i]) ? size : nholo::fabs(db[i]);
  }
  std::printf("%s_status %d\n%s_ref_status %d\n%s_diff %.17g\n%s_size %.17g\n", key, int(sa),
              key, int(sb), key, diff, key, size);
}
static_assert(M::n == 3 && constraint_count<M>() == 1, "sizes");
static_assert(has_energy<M>::value && has_conflated_lagrangian<M>::value, "detected");
static_assert(!has_nonpotential_force<M>::value && !has_nonideal_force<M>::value, "absent");
int main() {
  const M::Params p = defaults();
  Vec<double, 3> q, qd;
  q[0] = 0.3; q[1] = -0.2; q[2] = 0.7;
  qd[0] = 1.1; qd[1] = 0.4; qd[2] = -0.6;
  const double t = 0.5;
  out("L", M::lagrangian(p, q, qd, t));
  out("E", M::energy(p, q, qd, t));
  out("Lc", M::conflated_lagrangian(p, q, qd, t));
  out("g", M::velocity_constraints(p, q, qd, t)[0]);
  // first derivatives by Dual: in qd, then in q
  Vec<D, 3> qa, qda;
  for (int i = 0; i < 3; ++i) { qa[i] = D(q[i]); qda[i] = D::variable(qd[i], i); }
  const D L1 = M::lagrangian(p, qa, qda, D(t));
  const D g1 = M::velocity_constraints(p, qa, qda, D(t))[0];
  for (int i = 0; i < 3; ++i) { out("dLdqd", i, L1.d[i]); out("dgdqd", i, g1.d[i]); }
  for (int i = 0; i < 3; ++i) { qa[i] = D::variable(q[i], i); qda[i] = D(qd[i]); }
  const D L2 = M::lagrangian(p, qa, qda, D(t));
  for (int i = 0; i < 3; ++i) out("dLdq", i, L2.d[i]);
  // the engine's matrices (Jet2 and nested duals inside)
  Mat<double, 3, 3> Mm;
  Vec<double, 3> F;
  lagrangian_terms_ad<M>(p, q, qd, t, Mm, F);
  for (int i = 0; i < 3; ++i) {
    out("F", i, F[i]);
    for (int j = 0; j < 3; ++j) out("M", i, j, Mm(i, j));
  }
  lagrangian_terms_nested<M>(p, q, qd, t, Mm, F);
  out("nestedF", 0, F[0]);
  Mat<double, 1, 3> A;
  Vec<double, 1> b;
  constraint_terms<M>(p, q, qd, t, A, b);
  for (int j = 0; j < 3; ++j) out("A", 0, j, A(0, j));
  out("b", 0, b[0]);
  // float
  Vec<float, 3> qf, qdf;
  for (int i = 0; i < 3; ++i) { qf[i] = float(q[i]); qdf[i] = float(qd[i]); }
  out("Lfloat", double(M::lagrangian(p, qf, qdf, 0.5f)));
  // every formulation's right-hand side against the hand-written models::Skate
  double v[5];
  for (int j = 0; j < 5; ++j) v[j] = M::param_info[j].default_value;
  compare<UdwadiaKalabaSystem<M>, UdwadiaKalabaSystem<models::Skate>>("uk", v);
  compare<LagrangeMultiplierSystem<M>, LagrangeMultiplierSystem<models::Skate>>("lm", v);
  compare<NullSpaceSystem<M>, NullSpaceSystem<models::Skate>>("ns", v);
  compare<VakonomicSystem<M>, VakonomicSystem<models::Skate>>("vak", v);
  compare<ConflatedSystem<M>, ConflatedSystem<models::Skate>>("conf", v);
  return 0;
}
)~";
  std::string skip;
  const auto got = compile_and_run(s, program, &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  if (got.empty()) return;  // reported

  const double m = 1.3, so = 0.4, I = 2 * 1.3 * 0.16 + 0.5, g = 9.81, al = 0.3;
  const double x = 0.3, th = 0.7, xd = 1.1, yd = 0.4, thd = -0.6;
  const double c = std::cos(th), sn = std::sin(th), G = m * g * std::sin(al);
  const double T0 = m / 2 * (xd * xd + yd * yd) + I / 2 * thd * thd;
  const double coupling = m * so * thd * (yd * c - xd * sn);
  const double V = -G * (x + so * c);
  expect_value(got, "L", T0 + coupling - V);
  expect_value(got, "E", T0 + coupling + V);
  expect_value(got, "Lc", T0 - V);
  expect_value(got, "g", yd * c - xd * sn);
  expect_value(got, "dLdqd0", m * xd - m * so * thd * sn);
  expect_value(got, "dLdqd1", m * yd + m * so * thd * c);
  expect_value(got, "dLdqd2", m * so * (yd * c - xd * sn) + I * thd);
  expect_value(got, "dgdqd0", -sn);
  expect_value(got, "dgdqd1", c);
  expect_value(got, "dgdqd2", 0.0);
  expect_value(got, "dLdq0", G);
  expect_value(got, "dLdq1", 0.0);
  expect_value(got, "dLdq2", m * so * thd * (-yd * sn - xd * c) - G * so * sn);
  // M = [[m, 0, -m s sin], [0, m, m s cos], [., ., I]], F = dL/dq - (d2L/dqd dq) qd
  expect_value(got, "M00", m);
  expect_value(got, "M01", 0.0);
  expect_value(got, "M02", -m * so * sn);
  expect_value(got, "M11", m);
  expect_value(got, "M12", m * so * c);
  expect_value(got, "M20", -m * so * sn);
  expect_value(got, "M22", I);
  expect_value(got, "F0", G + m * so * thd * thd * c);
  expect_value(got, "F1", m * so * thd * thd * sn);
  expect_value(got, "F2", -G * so * sn);
  expect_value(got, "nestedF0", G + m * so * thd * thd * c);
  // knife edge: A = [-sin, cos, 0], b = thd (yd sin + xd cos)
  expect_value(got, "A00", -sn);
  expect_value(got, "A01", c);
  expect_value(got, "A02", 0.0);
  expect_value(got, "b0", thd * (yd * sn + xd * c));
  ASSERT_TRUE(got.count("Lfloat"));
  EXPECT_NEAR(got.at("Lfloat"), T0 + coupling - V, 1e-5);
  // the same motion as the hand-written skate under every formulation
  for (const std::string f : {"uk", "lm", "ns", "vak", "conf"}) {
    expect_value(got, f + "_status", 0.0);
    expect_value(got, f + "_ref_status", 0.0);
    ASSERT_TRUE(got.count(f + "_diff")) << f;
    EXPECT_GT(got.at(f + "_size"), 0.1) << f;
    EXPECT_LE(got.at(f + "_diff"), 1e-12 * got.at(f + "_size")) << f;
  }
}

TEST(ModelFileCompiled, BlockWithPositionConstraintAndForces) {
  const ModelSpec s = parse(kBlock, "block.toml");
  const std::string program = std::string(kProgramHead) + R"~(
static_assert(M::n == 2 && M::m_position == 1 && constraint_count<M>() == 1, "sizes");
static_assert(has_nonpotential_force<M>::value && has_nonideal_force<M>::value, "detected");
static_assert(has_energy<M>::value && !has_conflated_lagrangian<M>::value, "detected");
int main() {
  const M::Params p = defaults();
  Vec<double, 2> q, qd;
  q[0] = 0.8; q[1] = 0.35;
  qd[0] = -0.9; qd[1] = 0.6;
  const double t = 0.3;
  out("L", M::lagrangian(p, q, qd, t));
  out("E", M::energy(p, q, qd, t));
  out("phi", M::position_constraints(p, q, t)[0]);
  const Vec<double, 2> Q = M::nonpotential_force(p, q, qd, t);
  const Vec<double, 2> C = nonideal_terms<M>(p, q, qd, t);
  for (int i = 0; i < 2; ++i) { out("Q", i, Q[i]); out("C", i, C[i]); }
  // derivatives of the forces in (xd, yd, t)
  Vec<D, 2> qa, qda;
  for (int i = 0; i < 2; ++i) { qa[i] = D(q[i]); qda[i] = D::variable(qd[i], i); }
  const D ta = D::variable(t, 2);
  const Vec<D, 2> Qd = M::nonpotential_force(p, qa, qda, ta);
  const Vec<D, 2> Cd = M::nonideal_force(p, qa, qda, ta);
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 3; ++k) { out("dQ", i, k, Qd[i].d[k]); out("dC", i, k, Cd[i].d[k]); }
  // dphi/dq and dphi/dt
  for (int i = 0; i < 2; ++i) qa[i] = D::variable(q[i], i);
  const D phi = M::position_constraints(p, qa, ta)[0];
  for (int k = 0; k < 3; ++k) out("dphi", k, phi.d[k]);
  Mat<double, 2, 2> Mm;
  Vec<double, 2> F;
  lagrangian_terms_ad<M>(p, q, qd, t, Mm, F);
  for (int i = 0; i < 2; ++i) {
    out("F", i, F[i]);
    for (int j = 0; j < 2; ++j) out("M", i, j, Mm(i, j));
  }
  Mat<double, 1, 2> A;
  Vec<double, 1> b, res, vres;
  constraint_terms<M>(p, q, qd, t, A, b, &res, &vres);
  for (int j = 0; j < 2; ++j) out("A", 0, j, A(0, j));
  out("b", 0, b[0]);
  out("res", 0, res[0]);
  out("vres", 0, vres[0]);
  return 0;
}
)~";
  std::string skip;
  const auto got = compile_and_run(s, program, &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  if (got.empty()) return;

  const double m = 2.0, g = 9.81, a = M_PI / 6, c = 0.4, mu = 0.3, amp = 0.05, w = 2 * M_PI;
  const double x = 0.8, y = 0.35, xd = -0.9, yd = 0.6, t = 0.3;
  expect_value(got, "L", m / 2 * (xd * xd + yd * yd) - m * g * y);
  expect_value(got, "E", m / 2 * (xd * xd + yd * yd) + m * g * y);
  const double phi = y - x * std::tan(a) - amp * std::sin(w * t);
  expect_value(got, "phi", phi);
  expect_value(got, "dphi0", -std::tan(a));
  expect_value(got, "dphi1", 1.0);
  expect_value(got, "dphi2", -amp * w * std::cos(w * t));
  // drag: Q = (-c xd |xd|, -c yd^3)
  expect_value(got, "Q0", -c * xd * std::fabs(xd));
  expect_value(got, "Q1", -c * yd * yd * yd);
  expect_value(got, "dQ00", -2 * c * std::fabs(xd));
  expect_value(got, "dQ01", 0.0);
  expect_value(got, "dQ11", -3 * c * yd * yd);
  expect_value(got, "dQ12", 0.0);
  // C = (-mu sgn(xd) cos a, mu atan2(yd, g) sqrt(1 + xd^2) + 0.1 * 2^t)
  const double r = std::sqrt(1 + xd * xd), at = std::atan2(yd, g);
  expect_value(got, "C0", mu * std::cos(a));  // xd < 0
  expect_value(got, "C1", mu * at * r + 0.1 * std::pow(2.0, t));
  expect_value(got, "dC00", 0.0);  // sign: no derivative
  expect_value(got, "dC01", 0.0);
  expect_value(got, "dC10", mu * at * xd / r);
  expect_value(got, "dC11", mu * g / (g * g + yd * yd) * r);
  expect_value(got, "dC12", 0.1 * std::log(2.0) * std::pow(2.0, t));
  // M = m I, F = (0, -m g) + Q
  expect_value(got, "M00", m);
  expect_value(got, "M01", 0.0);
  expect_value(got, "M11", m);
  expect_value(got, "F0", -c * xd * std::fabs(xd));
  expect_value(got, "F1", -m * g - c * yd * yd * yd);
  // phi twice differentiated: A = [-tan a, 1], b = -amp w^2 sin(w t)
  expect_value(got, "A00", -std::tan(a));
  expect_value(got, "A01", 1.0);
  expect_value(got, "b0", -amp * w * w * std::sin(w * t));
  expect_value(got, "res0", phi);
  expect_value(got, "vres0", yd - xd * std::tan(a) - amp * w * std::cos(w * t));
}

TEST(ModelFileCompiled, AccelerationConstraintWithoutParameters) {
  const ModelSpec s = parse(kAccel, "accel.toml");
  const std::string program = std::string(kProgramHead) + R"~(
static_assert(M::n_params == 0 && M::m_acceleration == 1 && M::m_position == 1, "sizes");
int main() {
  const M::Params p = defaults();
  Vec<double, 3> q, qd;
  q[0] = 0.4; q[1] = -1.2; q[2] = 0.9;
  qd[0] = 0.7; qd[1] = 0.1; qd[2] = -0.3;
  const double t = 1.3;
  out("L", M::lagrangian(p, q, qd, t));
  Mat<double, 3, 3> Mm;
  Vec<double, 3> F;
  lagrangian_terms_ad<M>(p, q, qd, t, Mm, F);
  for (int i = 0; i < 3; ++i) out("F", i, F[i]);
  Mat<double, 2, 3> A;
  Vec<double, 2> b;
  constraint_terms<M>(p, q, qd, t, A, b);
  for (int l = 0; l < 2; ++l) {
    for (int j = 0; j < 3; ++j) out("A", l, j, A(l, j));
    out("b", l, b[l]);
  }
  return 0;
}
)~";
  std::string skip;
  const auto got = compile_and_run(s, program, &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  if (got.empty()) return;
  const double x = 0.4, y = -1.2, z = 0.9, xd = 0.7, yd = 0.1, zd = -0.3, t = 1.3;
  expect_value(got, "L", (xd * xd + yd * yd + zd * zd) / 2 - x * y + z * z * z * z / 4);
  expect_value(got, "F0", -y);
  expect_value(got, "F1", -x);
  expect_value(got, "F2", z * z * z);
  // rows: position z - 1 (A = [0 0 1], b = 0), then x_ddot + 2 y_ddot - sin(t) xd
  expect_value(got, "A00", 0.0);
  expect_value(got, "A02", 1.0);
  expect_value(got, "b0", 0.0);
  expect_value(got, "A10", 1.0);
  expect_value(got, "A11", 2.0);
  expect_value(got, "A12", 0.0);
  expect_value(got, "b1", std::sin(t) * xd);
}

// Operator grouping, unary minus, powers and mixed double / S arguments: the
// compiled header against the tree evaluator, values and (by Dual) a
// directional derivative against central differences of the evaluator.
TEST(ModelFileCompiled, PrintedExpressionsMatchTheEvaluator) {
  const std::vector<std::string> exprs = {
      "-a^2 - -b + k",
      "a - (b - t) - (c + d)",
      "a/(b*t)/c*d",
      "-(a*b) + -(-c) - -d_dot",
      "2^-a_dot + a_dot^b_dot^0.5",
      "pow(a, b) * pow(k, c) + pow(a, 2.5) - k^3 + pow(k, 2)",
      "atan2(k, a) + atan2(a, k) + atan2(a_dot, b_dot) + atan2(k, 2)",
      "sign(a - b)*abs(c - d) + sqrt(a)*exp(-b)/log(1 + c) + sinh(d)/cosh(t) - tanh(a)*tan(b)",
  };
  std::string forces;
  const std::string names = "abcdefgh";
  for (size_t i = 0; i < exprs.size(); ++i)
    forces += std::string(i ? ", " : "") + names[i] + " = \"" + exprs[i] + "\"";
  std::string coords;
  for (size_t i = 0; i < names.size(); ++i)
    coords += std::string(i ? ", " : "") + "{ name = \"" + names[i] + "\", unit = \"1\" }";
  const ModelSpec s = parse("name = \"grouping\"\ndescription = \"d\"\ncoordinates = [" + coords +
                            "]\nparameters = [ { name = \"k\", default = 1.7, unit = \"1\" } ]\n"
                            "lagrangian = \"a_dot^2/2\"\nforces = { " +
                            forces + " }\n");
  const std::vector<double> q = {0.7, 1.3, 0.4, 0.9, 0.2, 0.3, 0.5, 0.6},
                            qd = {0.35, 1.2, -0.4, 0.8, 0.1, 0.1, 0.1, 0.1},
                            dir = {0.3, -0.2, 0.5,  0.1, 0, 0, 0, 0,  0.4,
                                   0.7, 0,    -0.6, 0,   0, 0, 0, 0.9};  // (q, qd, t)
  const double t = 1.1;
  std::string init;
  for (int i = 0; i < 8; ++i)
    init += "  q[" + std::to_string(i) + "] = seed(" + std::to_string(q[i]) + ", " +
            std::to_string(dir[i]) + "); qd[" + std::to_string(i) + "] = seed(" +
            std::to_string(qd[i]) + ", " + std::to_string(dir[8 + i]) + ");\n";
  const std::string program = std::string(kProgramHead) + R"~(
using D1 = Dual<double, 1>;
int main() {
  const M::Params p = defaults();
  auto seed = [](double v, double d) { D1 x(v); x.d[0] = d; return x; };
  Vec<D1, 8> q, qd;
)~" + init + R"~(
  const D1 t = seed(1.1, 0.9);
  const Vec<D1, 8> f = M::nonpotential_force(p, q, qd, t);
  Vec<double, 8> qv, qdv;
  for (int i = 0; i < 8; ++i) { qv[i] = q[i].v; qdv[i] = qd[i].v; }
  const Vec<double, 8> fv = M::nonpotential_force(p, qv, qdv, 1.1);
  for (int i = 0; i < 8; ++i) { out("f", i, fv[i]); out("df", i, f[i].d[0]); }
  return 0;
}
)~";
  std::string skip;
  const auto got = compile_and_run(s, program, &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  if (got.empty()) return;
  // std::to_string printed 6 decimals: the state the program used
  auto six = [](double v) { return std::stod(std::to_string(v)); };
  std::vector<double> q6(8), qd6(8);
  for (int i = 0; i < 8; ++i) {
    q6[i] = six(q[i]);
    qd6[i] = six(qd[i]);
  }
  using nholo::model_file::evaluate;
  for (int i = 0; i < 8; ++i) {
    const double want = evaluate(s, s.nonpotential_force[i], q6, qd6, {}, t);
    expect_value(got, "f" + std::to_string(i), want);
    const double h = 1e-6;
    std::vector<double> qp = q6, qm = q6, qdp = qd6, qdm = qd6;
    for (int j = 0; j < 8; ++j) {
      qp[j] += h * six(dir[j]);
      qm[j] -= h * six(dir[j]);
      qdp[j] += h * six(dir[8 + j]);
      qdm[j] -= h * six(dir[8 + j]);
    }
    const double fd = (evaluate(s, s.nonpotential_force[i], qp, qdp, {}, t + h * 0.9) -
                       evaluate(s, s.nonpotential_force[i], qm, qdm, {}, t - h * 0.9)) /
                      (2 * h);
    ASSERT_TRUE(got.count("df" + std::to_string(i)));
    EXPECT_NEAR(got.at("df" + std::to_string(i)), fd, 1e-6 * (1 + std::fabs(fd))) << exprs[i];
  }
}

// the generated hand_dynamics (symbolic M and F) against the engine's AD of
// the same Lagrangian, the general jet and the structured one, at several
// states; and for float
TEST(ModelFileCompiled, SymbolicDynamicsEqualAutomaticDifferentiation) {
  for (const char* text : {kEveryFunction, kSkate, kBlock}) {
    const ModelSpec s = parse(text, "model.toml");
    const std::string program = std::string(kProgramHead) + R"~(
static_assert(has_hand_dynamics<M>::value, "the generated header has hand_dynamics");
constexpr int n = M::n;
// Mod::hand_dynamics against the engine's AD of Mod's Lagrangian
template <class Mod>
void compare(const char* key) {
  const M::Params p = defaults();
  double worst = 0, size = 0;
  for (int k = 0; k < 6; ++k) {
    Vec<double, n> q, qd;
    for (int i = 0; i < n; ++i) {
      q[i] = 0.31 * (k + 1) * (i + 1) - 0.9 + 0.1 * i;
      qd[i] = 0.7 - 0.23 * k * (i + 2) + 0.05 * i;
    }
    const double t = 0.2 + 0.3 * k;
    Mat<double, n, n> Mh, Ma, Mg;
    Vec<double, n> Fh, Fa, Fg;
    Mod::hand_dynamics(p, q, qd, t, Mh, Fh);
    lagrangian_terms_ad<Mod, double, true, false>(p, q, qd, t, Ma, Fa);
    lagrangian_terms_ad<Mod, double, false, false>(p, q, qd, t, Mg, Fg);
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        worst = std::fmax(worst, std::fmax(std::fabs(Mh(i, j) - Ma(i, j)), std::fabs(Mh(i, j) - Mg(i, j))));
        size = std::fmax(size, std::fabs(Ma(i, j)));
      }
      worst = std::fmax(worst, std::fmax(std::fabs(Fh[i] - Fa[i]), std::fabs(Fh[i] - Fg[i])));
      size = std::fmax(size, std::fabs(Fa[i]));
    }
  }
  std::printf("%s_worst %.17g\n%s_size %.17g\n", key, worst, key, size);
}
// (a template: the discarded branch is not instantiated)
template <class Mod>
void compare_conflated() {
  if constexpr (has_conflated_lagrangian<Mod>::value) {
    static_assert(has_hand_dynamics<Conflated<Mod>>::value, "conflated_hand_dynamics is used");
    compare<Conflated<Mod>>("conflated");
  }
}
int main() {
  compare<M>("L");
  compare_conflated<M>();
  const M::Params p = defaults();
  Vec<float, n> qf, qdf;
  for (int i = 0; i < n; ++i) { qf[i] = 0.3f * float(i + 1); qdf[i] = 0.5f - 0.2f * float(i); }
  Mat<float, n, n> Mf;
  Vec<float, n> Ff;
  M::hand_dynamics(p, qf, qdf, 0.5f, Mf, Ff);
  Mat<double, n, n> Md;
  Vec<double, n> Fd, qd64, q64;
  for (int i = 0; i < n; ++i) { q64[i] = double(qf[i]); qd64[i] = double(qdf[i]); }
  M::hand_dynamics(p, q64, qd64, 0.5, Md, Fd);
  double fw = 0;
  for (int i = 0; i < n; ++i) fw = std::fmax(fw, std::fabs(double(Ff[i]) - Fd[i]) / (1 + std::fabs(Fd[i])));
  out("float_diff", fw);
  return 0;
}
)~";
    std::string skip;
    const auto got = compile_and_run(s, "#include <cmath>\n" + program, &skip);
    if (!skip.empty()) GTEST_SKIP() << skip;
    if (got.empty()) return;
    std::vector<std::string> keys = {"L"};
    if (!s.conflated_lagrangian.text.empty()) keys.push_back("conflated");
    for (const auto& k : keys) {
      ASSERT_TRUE(got.count(k + "_worst") && got.count(k + "_size")) << s.name << " " << k;
      EXPECT_GT(got.at(k + "_size"), 0.5) << s.name << " " << k;
      EXPECT_LE(got.at(k + "_worst"), 1e-13 * got.at(k + "_size")) << s.name << " " << k;
      std::printf("%-16s %-9s symbolic M, F vs AD: max difference %.2e (largest entry %.2e)\n",
                  s.name.c_str(), k.c_str(), got.at(k + "_worst"), got.at(k + "_size"));
    }
    ASSERT_TRUE(got.count("float_diff")) << s.name;
    EXPECT_LE(got.at("float_diff"), 1e-5) << s.name;
  }
}

TEST(ModelFileCompiled, UnconstrainedWithoutParameters) {
  const ModelSpec s = parse(kFree, "free.toml");
  const std::string program = std::string(kProgramHead) + R"~(
static_assert(M::n == 1 && constraint_count<M>() == 0 && M::n_params == 0, "sizes");
int main() {
  const M::Params p = defaults();
  Vec<double, 1> q, qd;
  q[0] = 0.5;
  qd[0] = -2.0;
  Mat<double, 1, 1> Mm;
  Vec<double, 1> F;
  lagrangian_terms_ad<M>(p, q, qd, 0.0, Mm, F);
  out("L", M::lagrangian(p, q, qd, 0.0));
  out("M", 0, 0, Mm(0, 0));
  out("F", 0, F[0]);
  return 0;
}
)~";
  std::string skip;
  const auto got = compile_and_run(s, program, &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  if (got.empty()) return;
  expect_value(got, "L", 2.0 - 0.125);
  expect_value(got, "M00", 1.0);
  expect_value(got, "F0", -0.5);
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
