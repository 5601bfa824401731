// nholo/host/model_language/code_printer.hpp — expression trees printed as C++
// for the generated model header: literals, escaped strings and comments,
// the printer (with names for hoisted and common subexpressions), and the
// argument lists of the generated functions. Internal to host/model_language/.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "host/model_language/expr/tree.hpp"
#include "host/model_language/model_file.hpp"

namespace nholo::model_file {

// a double literal: %.17g, with ".0" where it would read as an integer
std::string literal(double v);

// a C++ string literal: printable ASCII as is except \ " ?, everything else
// as a three-digit octal escape
std::string cpp_string(const std::string& s);

// text for a // comment: printable ASCII, backslashes as '/'
std::string comment_text(const std::string& s);

struct Code {
  std::string text;
  bool s;  // of the scalar type S (depends on q, qd, qdd or t), else double
};

// names of the common subexpressions printed as temporaries (hand_dynamics)
using TempNames = std::map<const Expr*, Code>;

// e as a C++ expression; the nodes named in tmp are printed as their names
Code print(const Expr& e, const TempNames* tmp = nullptr);

// which of p, q, qd, qdd, t the trees use
struct Uses {
  bool p = false, q = false, qd = false, qdd = false, t = false;
};
Uses uses_of(const std::vector<const Expression*>& es);

// "const Params& p" or "const Params& /*p*/"
std::string arg(const char* type, const char* name, bool used);

// "S(...)" of e's printed tree, "S(0.0)" for an empty expression
std::string returned_value(const Expression& e, const TempNames* tmp);

}  // namespace nholo::model_file
