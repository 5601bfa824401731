// nholo/tests/model_file_cases.hpp — the model files the tests of the model
// language read (tests/test_model_file_expression_errors.cpp,
// test_model_file_errors.cpp, test_model_file_good.cpp,
// test_model_file_compiled.cpp): `parse` of a TOML text, Model (a model file
// one key per line, so that a test knows where each value stands, and the
// checks of an error message against it) and five complete model files.
#pragma once

#include <gtest/gtest.h>
#include <toml++/toml.h>

#include <string>
#include <vector>

#include "host/model_language/model_file.hpp"

namespace nholo_test {

using nholo::ModelFileError;
using nholo::ModelSpec;

inline const std::vector<std::string> kBuiltins = {"rolling_coin", "skate", "appell"};

inline ModelSpec parse(const std::string& text, const std::string& source = "bad.toml") {
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

inline std::string error_of(const std::string& text, const std::string& source = "bad.toml") {
  try {
    parse(text, source);
  } catch (const ModelFileError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for the model\n" << text;
  return "";
}

// the message contains each of `parts`
inline void expect_error(const Model& md, const std::vector<std::string>& parts) {
  const std::string msg = error_of(md.text());
  for (const auto& p : parts)
    EXPECT_NE(msg.find(p), std::string::npos) << "message: " << msg << "\nlacks: " << p;
}

// the expression part: KEY: "EXPR": position P:
inline std::string expr_part(const std::string& key, const std::string& expr, int pos) {
  return ": " + key + ": \"" + expr + "\": position " + std::to_string(pos) + ": ";
}

// Complete model files: Hamel's skate, a block on a moving plane with forces,
// an acceleration constraint, a free particle and every function of the
// grammar.

inline constexpr const char* kSkate = R"~(
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
inline constexpr const char* kBlock = R"~(
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
inline constexpr const char* kAccel = R"~(
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
inline constexpr const char* kFree = R"~(
name = "free"
description = "a free particle"
coordinates = [ { name = "x", unit = "m" } ]
lagrangian = "x_dot^2/2 - x^2/2"
)~";

// every function of the grammar, rates inside functions (M depends on qd),
// rates coupled with coordinates and time, variable exponents
inline constexpr const char* kEveryFunction = R"~(
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

}  // namespace nholo_test
