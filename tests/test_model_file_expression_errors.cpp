// Tests of host/model_language/model_file.cpp: bad expressions in model files
// (ModelFileErrors.*). Each check of the expression parser and the evaluator,
// with the full location of the message: source, line:column of the TOML
// value, key, the expression and the 1-based position in it, and the reason:
// the grammar, parameter defaults, which rates and accelerations a
// constraint, a force or the Lagrangian may use. The other checks of the
// reader are in test_model_file_errors.cpp.
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
#include "tests/model_file_cases.hpp"

using nholo::ModelFileError;
using nholo::ModelSpec;
using namespace nholo_test;

namespace fs = std::filesystem;

namespace {

// ---------------------------------------------------------------------------
// Bad expressions

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

}  // namespace
