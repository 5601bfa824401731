// nholo/host/model_files/model_file.cpp — models described in TOML: reading, checking,
// a double evaluator, the run-time description and the generated C++ header
// (interface and error format: host/model_files/model_file.hpp).
//
// ===========================================================================
// The model file format
// ===========================================================================
// A model file is a TOML document whose top level IS the model table; a run
// config embeds the same table as [model]. Keys, at every level, are checked:
// an unknown key is an error that names the accepted ones. A value of the
// wrong TOML type is an error ("expected a string, got an integer").
//
//   name = "chaplygin_sleigh"        required string; [a-z][a-z0-9_]*, not a
//                                    built-in model's name
//   description = "one line"         required string; not empty, no line break
//   coordinates = [                  required; an array of at least one table
//     { name = "x", unit = "m", description = "..." },
//     { name = "y", unit = "m" },    name, unit: required strings;
//     { name = "theta", unit = "rad" } ]      description: optional string
//   parameters = [                   optional; an array of tables (may be empty)
//     { name = "m", default = 1.0, unit = "kg", description = "mass", positive = true },
//     { name = "J", default = "m/4", unit = "kg m^2", min = 0 },
//     { name = "c", default = 0.1, unit = "1", nonnegative = true, max = 5 } ]
//       name, default, unit: required; description, min, max, positive,
//       nonnegative: optional.
//       default: a number (integer or float), or a string holding a constant
//         expression of numbers, pi, functions and the parameters declared
//         BEFORE this one, evaluated here in double precision. A division by
//         zero, any non-finite intermediate or final value (log(0), 1e200^2)
//         and a value outside the declared range are errors.
//       min, max: finite numbers, inclusive bounds; positive = true: > 0;
//         nonnegative = true: >= 0 (false: no bound). Any combination that
//         admits a value is allowed (else "inconsistent range"); the tightest
//         lower bound wins (min = 1 with positive = true is >= 1).
//   Units (coordinates and parameters) are free text but not empty; "1" for
//   a dimensionless quantity.
//   lagrangian = "m/2*(x_dot^2 + y_dot^2) + J/2*theta_dot^2"
//                                    required string; L = T - V of the
//                                    UNCONSTRAINED system; must use a rate
//   constraints = [                  optional; an array of tables, fewer
//     { name = "knife_edge", kind = "velocity",        than the coordinates
//       expr = "y_dot*cos(theta) - x_dot*sin(theta)" } ]
//       name: required, [A-Za-z][A-Za-z0-9_]*, unique among the constraints;
//       kind: required, "position" | "velocity" | "acceleration";
//       expr: required string, the expression the motion keeps at 0:
//         position:     phi(q, t): no rates; must use a coordinate
//         velocity:     g(q, qd, t): must use a rate (may be nonlinear in
//                       the rates)
//         acceleration: h(q, qd, qdd, t) = A qdd - b: must use an
//                       acceleration and be affine in the accelerations.
//                       Checked from the expression's structure (sums,
//                       products and quotients with an acceleration-free
//                       factor or divisor, ^1); otherwise numerically: at 8
//                       random states (q, qd, t, a base qdd w; parameters at
//                       their defaults) h(w+u+v) - h(w+u) - h(w+v) + h(w)
//                       and h(w+2u) - 2h(w+u) + h(w) must vanish (1e-9
//                       relative), an error if not, or if h is not finite at
//                       any of 32 states tried.
//       The constraints are reordered position, velocity, acceleration (the
//       order of the Model concept), each kind in the order written.
//   forces = { theta = "-c*theta_dot" }
//                                    optional table; non-potential generalized
//                                    forces Q_np: key a coordinate's name,
//                                    value an expression string; coordinates
//                                    not listed get 0; {} means none
//   nonideal_forces = { x = "-mu*x_dot" }
//                                    optional table, the same form; Udwadia's
//                                    C (work-doing constraint forces)
//   energy = "..."                   optional string; the total energy
//   conflated_lagrangian = "..."     optional string; Hamel's L+ (offers the
//                                    formulation "conflated"); must use a rate
//   constraint_rank = 2              optional integer, 1..m: the rank of the
//                                    constraint matrix at regular states when
//                                    rows are redundant (then only
//                                    udwadia_kalaba, null_space, conflated)
//
// Names. Coordinates and parameters: [A-Za-z][A-Za-z0-9_]*, not ending in
// _dot or _ddot, not t, pi or a function's name, unique across coordinates
// and parameters. The rate of coordinate x is x_dot, its acceleration x_ddot;
// t is time, pi the constant. What an expression may use:
//   parameter default            numbers, pi, functions, earlier parameters
//   position constraint          coordinates, t, parameters, pi
//   velocity constraint, lagrangian, conflated_lagrangian, energy, forces,
//   nonideal_forces              ... and the rates
//   acceleration constraint      ... and the accelerations
// An unknown name is an error listing what the expression may use.
//
// Expressions (TOML strings): numbers, names, binary + - * /, ^ (power,
// right-associative, binds tighter than unary minus: -x^2 = -(x^2),
// 2^-1 = 0.5, 2^3^2 = 2^9), unary - and +, parentheses and the functions
//   sin cos tan exp log sqrt sinh cosh tanh abs sign   (one argument)
//   atan2(y, x) pow(a, b)                               (two arguments)
// Numbers: digits with an optional fraction and exponent (1, 2.5, .5, 3.,
// 1e-3, 2.5E+4), finite; a number directly followed by a letter, _ or . is
// malformed (2x: write 2*x). sign(x) is -1, 0 or 1 with derivative
// 0; abs'(0) = 0; pow(a, b) and a^b with a non-constant exponent are
// exp(b log a) (a > 0). Whitespace, newlines included, separates tokens.
// Parentheses, unary signs and ^ nest at most 200 deep, and a chain of
// operations (a + b + ...) is at most 10000 long. Positions in error
// messages count characters (not bytes) from 1.
//
// Errors (ModelFileError):
//   SOURCE:LINE:COL: KEY: "EXPR": position P: REASON   (an expression is involved)
//   SOURCE:LINE:COL: KEY: REASON                       (otherwise)
// SOURCE is the file's path (load_model_file) or the source given to
// parse_model_table; LINE:COL is where the TOML value begins (for an unknown
// key: the key; for a missing key: the table that lacks it; omitted when the
// table has no source positions); KEY is the path in the model table: name,
// lagrangian, coordinates[1].unit, parameters[0].default,
// constraints[2].expr, forces.theta, ... (0-based indices). EXPR is the
// expression as written (line breaks and tabs shown as spaces).
//
// ===========================================================================
// The generated header (generate_model_header)
// ===========================================================================
// struct nholo::user_models::UserModel, the Model concept of kernels/model.hpp:
// name, description, source, n, m_position, m_velocity, m_acceleration,
// n_params, coordinates[n], coordinate_units[n], constraint_names[m] ({nullptr}
// when m = 0), param_info[n_params] (the sentinel {nullptr, 0, nullptr,
// nullptr} when n_params = 0), Params {double v[max(n_params, 1)]; and
// double k[K] when K > 0 parameter-only subexpressions are hoisted},
// make_params (filling k), lagrangian, hand_dynamics (the symbolic M and F,
// see "Symbolic derivatives" below; absent, with a comment saying why, above
// kMaxSymbolicNodes or kMaxSymbolicDepth),
// conflated_hand_dynamics (the same for the conflated Lagrangian), and
// position_constraints, velocity_constraints, acceleration_constraints,
// nonpotential_force, nonideal_force, energy, conflated_lagrangian where
// the file has them. Code is printed from the
// expression trees (user text only ever appears inside escaped string
// literals): coordinate i -> q[i], rate -> qd[i], acceleration -> qdd[i],
// parameter j -> p.v[j], t -> t, numbers and pi -> double literals (%.17g),
// parentheses where C++ precedence would group differently from the tree.
// Functions are called unqualified (sin(x)) from namespace
// nholo::user_models, where ordinary lookup finds nholo::sin (kernels/
// config.hpp, double and float) and the Dual / Jet2 overloads of kernels/
// dual.hpp, as models/*.hpp in nholo::models do; abs, sign and pow go to
// nholo::expr (kernels/expr_math.hpp), literal exponents 2, 3, 4 (of ^ and
// pow) to nholo::expr::ipow<k> (products, the base evaluated once). atan2
// with one argument of the scalar type S and one double gets the double one
// wrapped S(...); every returned value is S(...); unused arguments are
// unnamed.
#include "host/model_files/model_file.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace nholo {

namespace model_file {

enum class Op { number, pi, time, coord, rate, accel, param, neg, add, sub, mul, div, pow, call };
enum class Fn { sin, cos, tan, exp, log, sqrt, sinh, cosh, tanh, abs, sign, atan2, pow };

struct Expr {
  Op op = Op::number;
  double value = 0;  // number
  int index = 0;     // coordinate, rate, acceleration or parameter
  Fn fn = Fn::sin;   // call
  std::vector<ExprPtr> args;
  int pos = 1;  // 1-based character position of the number, name, operator or function name
  int depth = 1;
};

}  // namespace model_file

namespace {

using model_file::Expr;
using model_file::ExprPtr;
using model_file::Fn;
using model_file::Op;

constexpr double kPi = 3.14159265358979323846;

struct FnInfo {
  const char* name;
  Fn fn;
  int arity;
};
constexpr FnInfo kFunctions[] = {
    {"sin", Fn::sin, 1},     {"cos", Fn::cos, 1},   {"tan", Fn::tan, 1},   {"exp", Fn::exp, 1},
    {"log", Fn::log, 1},     {"sqrt", Fn::sqrt, 1}, {"abs", Fn::abs, 1},   {"sign", Fn::sign, 1},
    {"atan2", Fn::atan2, 2}, {"pow", Fn::pow, 2},   {"sinh", Fn::sinh, 1}, {"cosh", Fn::cosh, 1},
    {"tanh", Fn::tanh, 1},
};

const FnInfo* find_function(const std::string& s) {
  for (const auto& f : kFunctions)
    if (s == f.name) return &f;
  return nullptr;
}
const FnInfo& function_info(Fn fn) {
  for (const auto& f : kFunctions)
    if (f.fn == fn) return f;
  return kFunctions[0];
}

std::string joined(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

std::string function_list() {
  std::vector<std::string> v;
  for (const auto& f : kFunctions) v.push_back(f.name);
  return joined(v);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
bool is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_word(char c) {
  return is_alpha(c) || is_digit(c) || c == '_';
}

// [A-Za-z][A-Za-z0-9_]*
bool is_identifier(const std::string& s) {
  if (s.empty() || !is_alpha(s[0])) return false;
  for (char c : s)
    if (!is_word(c)) return false;
  return true;
}

// the shortest text that reads back as v (messages)
std::string short_number(double v) {
  char buf[40];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v || std::isnan(v)) break;
  }
  return buf;
}

// ---------------------------------------------------------------------------
// Names an expression may use

enum class Context {
  default_value,  // a parameter's default
  lagrangian,
  conflated,
  energy,
  position,
  velocity,
  acceleration,
  force,
};

struct Names {
  std::vector<std::string> coords, params;
};

struct Scope {
  const Names* names;
  Context ctx;
  int visible_params;  // parameters 0 .. visible_params-1 may be used

  bool allows_q() const { return ctx != Context::default_value; }
  bool allows_qd() const { return ctx != Context::default_value && ctx != Context::position; }
  bool allows_qdd() const { return ctx == Context::acceleration; }
  bool allows_t() const { return ctx != Context::default_value; }
};

constexpr const char* kConstantRule =
    "a default is a constant: numbers, pi, functions and the parameters declared before it";

int index_of(const std::vector<std::string>& v, const std::string& s) {
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] == s) return static_cast<int>(i);
  return -1;
}

std::vector<std::string> suffixed(const std::vector<std::string>& v, const char* suffix) {
  std::vector<std::string> r;
  for (const auto& s : v) r.push_back(s + suffix);
  return r;
}

// "coordinates: x, y; rates: x_dot, y_dot; parameters: m; t, pi; functions: ..."
std::string accepted_names(const Scope& sc) {
  std::vector<std::string> parts;
  const Names& nm = *sc.names;
  if (sc.allows_q()) parts.push_back("coordinates: " + joined(nm.coords));
  if (sc.allows_qd()) parts.push_back("rates: " + joined(suffixed(nm.coords, "_dot")));
  if (sc.allows_qdd()) parts.push_back("accelerations: " + joined(suffixed(nm.coords, "_ddot")));
  const std::vector<std::string> vis(nm.params.begin(), nm.params.begin() + sc.visible_params);
  if (!vis.empty())
    parts.push_back((sc.ctx == Context::default_value ? "earlier parameters: " : "parameters: ") +
                    joined(vis));
  parts.push_back(sc.allows_t() ? "t, pi" : "pi");
  parts.push_back("functions: " + function_list());
  return joined(parts, "; ");
}

// ---------------------------------------------------------------------------
// Tokenizer and parser

struct ExprError {
  int pos;
  std::string reason;
};

enum class Tok { number, name, plus, minus, star, slash, caret, lparen, rparen, comma, end };

struct Token {
  Tok kind;
  std::string text;
  int pos;  // 1-based character
  double value = 0;
};

bool is_operator(Tok k) {
  return k == Tok::plus || k == Tok::minus || k == Tok::star || k == Tok::slash || k == Tok::caret;
}
bool starts_operand(Tok k) {
  return k == Tok::number || k == Tok::name || k == Tok::lparen;
}

std::string describe(const Token& t) {
  return t.kind == Tok::end ? std::string("the end") : "'" + t.text + "'";
}

class Parser {
 public:
  Parser(const std::string& text, const Scope& scope) : text_(text), scope_(scope) {
    // character position of each byte (UTF-8: continuation bytes 10xxxxxx
    // belong to the character before)
    cpos_.resize(text.size() + 1);
    int c = 0;
    for (size_t b = 0; b < text.size(); ++b) {
      if ((static_cast<unsigned char>(text[b]) & 0xC0) != 0x80) ++c;
      cpos_[b] = c;
    }
    cpos_[text.size()] = c + 1;
    tokenize();
  }

  ExprPtr parse() {
    if (toks_.size() == 1) throw ExprError{1, "empty expression"};
    ExprPtr e = parse_sum();
    const Token& t = cur();
    if (t.kind == Tok::end) return e;
    if (t.kind == Tok::rparen)
      throw ExprError{t.pos, "unbalanced parenthesis: ')' without a matching '('"};
    if (t.kind == Tok::comma) throw ExprError{t.pos, "',' outside a function's argument list"};
    missing_operator();
  }

 private:
  const std::string& text_;
  const Scope& scope_;
  std::vector<int> cpos_;
  std::vector<Token> toks_;
  size_t i_ = 0;
  int depth_ = 0;

  static constexpr int kMaxDepth = 200;        // parentheses, signs, ^
  static constexpr int kMaxTreeDepth = 10000;  // operations in a chain (a + b + ...)

  [[noreturn]] void error_at_byte(size_t b, const std::string& reason) const {
    throw ExprError{cpos_[b] == 0 ? 1 : cpos_[b], reason};
  }

  void tokenize() {
    const std::string& s = text_;
    size_t i = 0;
    while (i < s.size()) {
      const char c = s[i];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++i;
        continue;
      }
      const int pos = cpos_[i];
      if (is_digit(c) || (c == '.' && i + 1 < s.size() && is_digit(s[i + 1]))) {
        i = number(i);
        continue;
      }
      if (is_alpha(c) || c == '_') {
        size_t j = i;
        while (j < s.size() && is_word(s[j])) ++j;
        toks_.push_back({Tok::name, s.substr(i, j - i), pos});
        i = j;
        continue;
      }
      Tok k;
      switch (c) {
        case '+': k = Tok::plus; break;
        case '-': k = Tok::minus; break;
        case '*': k = Tok::star; break;
        case '/': k = Tok::slash; break;
        case '^': k = Tok::caret; break;
        case '(': k = Tok::lparen; break;
        case ')': k = Tok::rparen; break;
        case ',': k = Tok::comma; break;
        default: {
          const auto u = static_cast<unsigned char>(c);
          if (u >= 0x80) error_at_byte(i, "unexpected non-ASCII character");
          if (u < 0x20 || u == 0x7f) error_at_byte(i, "unexpected control character");
          error_at_byte(i, std::string("unexpected character '") + c + "'");
        }
      }
      toks_.push_back({k, std::string(1, c), pos});
      ++i;
    }
    toks_.push_back({Tok::end, "", cpos_[s.size()]});
  }

  // a number starting at byte i; returns the byte after it
  size_t number(size_t i) {
    const std::string& s = text_;
    size_t j = i;
    while (j < s.size() && is_digit(s[j])) ++j;
    if (j < s.size() && s[j] == '.') {
      ++j;
      while (j < s.size() && is_digit(s[j])) ++j;
    }
    auto run_end = [&](size_t k) {
      while (k < s.size() && (is_word(s[k]) || s[k] == '.')) ++k;
      return k;
    };
    if (j < s.size() && (s[j] == 'e' || s[j] == 'E')) {
      size_t k = j + 1;
      const bool signed_exp = k < s.size() && (s[k] == '+' || s[k] == '-');
      if (signed_exp) ++k;
      if (k < s.size() && is_digit(s[k])) {
        while (k < s.size() && is_digit(s[k])) ++k;
        j = k;
      } else if (signed_exp || k >= s.size() || !is_word(s[k])) {
        error_at_byte(i, "malformed number '" + s.substr(i, k - i) +
                             "': an exponent needs digits (1e3, 2.5e-4)");
      }
    }
    if (j < s.size() && (is_word(s[j]) || s[j] == '.')) {
      const size_t e = run_end(j);
      error_at_byte(i, "malformed number '" + s.substr(i, e - i) + "'" +
                           (s[j] == '.' ? "" : " (a product needs '*': 2*x)"));
    }
    const std::string t = s.substr(i, j - i);
    double v = 0;
    const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
    if (r.ec != std::errc() || r.ptr != t.data() + t.size() || !std::isfinite(v))
      error_at_byte(i, "number out of range '" + t + "'");
    toks_.push_back({Tok::number, t, cpos_[i], v});
    return j;
  }

  const Token& cur() const { return toks_[i_]; }
  const Token* prev() const { return i_ > 0 ? &toks_[i_ - 1] : nullptr; }
  Token take() { return toks_[i_++]; }

  [[noreturn]] void missing_operator() const {
    throw ExprError{cur().pos,
                    "missing operator between " + describe(*prev()) + " and " + describe(cur())};
  }

  // a tree node; the tree's depth is bounded (the evaluator, the printer and
  // the checks recurse, and so do compilers on the printed code)
  static std::shared_ptr<Expr> node(Op op, int pos, std::vector<ExprPtr> args = {}) {
    auto e = std::make_shared<Expr>();
    e->op = op;
    e->pos = pos;
    for (const auto& a : args) e->depth = std::max(e->depth, a->depth + 1);
    if (e->depth > kMaxTreeDepth)
      throw ExprError{
          pos, "too long: more than " + std::to_string(kMaxTreeDepth) + " operations in a chain"};
    e->args = std::move(args);
    return e;
  }

  // one level of nesting: a '(' (grouping or a call's), a unary sign, a '^'
  struct Nest {
    Parser& parser;
    Nest(Parser& p, int pos) : parser(p) {
      if (++parser.depth_ > kMaxDepth)
        throw ExprError{pos, "nested too deeply (more than " + std::to_string(kMaxDepth) +
                                 " levels of parentheses, signs and ^)"};
    }
    ~Nest() { --parser.depth_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;
  };

  ExprPtr parse_sum() {
    ExprPtr lhs = parse_product();
    while (cur().kind == Tok::plus || cur().kind == Tok::minus) {
      const Token op = take();
      ExprPtr rhs = parse_product();
      lhs = node(op.kind == Tok::plus ? Op::add : Op::sub, op.pos, {lhs, rhs});
    }
    return lhs;
  }

  ExprPtr parse_product() {
    ExprPtr lhs = parse_unary();
    while (cur().kind == Tok::star || cur().kind == Tok::slash) {
      const Token op = take();
      ExprPtr rhs = parse_unary();
      lhs = node(op.kind == Tok::star ? Op::mul : Op::div, op.pos, {lhs, rhs});
    }
    return lhs;
  }

  // unary minus binds looser than ^: -x^2 = -(x^2)
  ExprPtr parse_unary() {
    if (cur().kind == Tok::minus) {
      const Token op = take();
      const Nest nest(*this, op.pos);
      return node(Op::neg, op.pos, {parse_unary()});
    }
    if (cur().kind == Tok::plus) {
      const Nest nest(*this, take().pos);
      return parse_unary();
    }
    return parse_power();
  }

  // base ^ exponent, right-associative (the exponent is a unary expression)
  ExprPtr parse_power() {
    ExprPtr base = parse_primary();
    if (cur().kind != Tok::caret) return base;
    const Token op = take();
    const Nest nest(*this, op.pos);
    return node(Op::pow, op.pos, {base, parse_unary()});
  }

  // after '(' at open_pos and its contents: the ')'
  void close_paren(int open_pos) {
    const Token& t = cur();
    if (t.kind == Tok::rparen) {
      take();
      return;
    }
    if (t.kind == Tok::end)
      throw ExprError{open_pos, "unbalanced parenthesis: '(' is never closed"};
    if (starts_operand(t.kind)) missing_operator();
    if (t.kind == Tok::comma) throw ExprError{t.pos, "',' outside a function's argument list"};
    throw ExprError{t.pos, "expected ')', found " + describe(t)};
  }

  [[noreturn]] void operand_missing() const {
    const Token& t = cur();
    const Token* p = prev();
    if (p == nullptr) throw ExprError{t.pos, "expected an operand, found " + describe(t)};
    if (t.kind == Tok::end) {
      if (is_operator(p->kind))
        throw ExprError{p->pos, "trailing operator '" + p->text + "': an operand must follow"};
      if (p->kind == Tok::comma) throw ExprError{p->pos, "expected an argument after ','"};
      throw ExprError{p->pos, "unbalanced parenthesis: '(' is never closed"};
    }
    if (p->kind == Tok::comma) throw ExprError{t.pos, "expected an argument, found " + describe(t)};
    if (p->kind == Tok::lparen && t.kind == Tok::rparen)
      throw ExprError{p->pos, "empty parentheses '()'"};
    std::string hint;
    if (p->kind == Tok::star && t.kind == Tok::star) hint = " (a power is written x^2)";
    throw ExprError{t.pos,
                    "expected an operand after " + describe(*p) + ", found " + describe(t) + hint};
  }

  ExprPtr parse_primary() {
    const Token& t = cur();
    if (t.kind == Tok::number) {
      auto e = node(Op::number, t.pos);
      e->value = t.value;
      take();
      return e;
    }
    if (t.kind == Tok::lparen) {
      const int open = take().pos;
      const Nest nest(*this, open);
      if (cur().kind == Tok::rparen) throw ExprError{open, "empty parentheses '()'"};
      ExprPtr e = parse_sum();
      close_paren(open);
      return e;
    }
    if (t.kind != Tok::name) operand_missing();
    const Token name = take();
    if (cur().kind == Tok::lparen) return call(name);
    if (find_function(name.text))
      throw ExprError{name.pos, "'" + name.text + "' is a function: write " + name.text + "(...)"};
    return resolve(name);
  }

  ExprPtr call(const Token& name) {
    const FnInfo* f = find_function(name.text);
    if (f == nullptr) {
      if (is_known_name(name.text)) missing_operator();
      throw ExprError{name.pos,
                      "unknown function '" + name.text + "' (functions: " + function_list() + ")"};
    }
    const int open = take().pos;
    const Nest nest(*this, open);
    std::vector<ExprPtr> args;
    if (cur().kind == Tok::rparen) {
      take();
    } else {
      for (;;) {
        args.push_back(parse_sum());
        if (cur().kind == Tok::comma) {
          take();
          continue;
        }
        close_paren(open);
        break;
      }
    }
    const int n = static_cast<int>(args.size());
    if (n != f->arity)
      throw ExprError{name.pos, std::string(f->name) + " takes " + std::to_string(f->arity) +
                                    (f->arity == 1 ? " argument" : " arguments") + ", got " +
                                    std::to_string(n)};
    auto e = node(Op::call, name.pos, std::move(args));
    e->fn = f->fn;
    return e;
  }

  bool is_known_name(const std::string& s) const {
    const Names& nm = *scope_.names;
    if (s == "t" || s == "pi" || index_of(nm.coords, s) >= 0 || index_of(nm.params, s) >= 0)
      return true;
    for (const auto& c : nm.coords)
      if (s == c + "_dot" || s == c + "_ddot") return true;
    return false;
  }

  ExprPtr leaf(Op op, int index, int pos) const {
    auto e = node(op, pos);
    e->index = index;
    return e;
  }

  ExprPtr resolve(const Token& tk) const {
    const std::string& s = tk.text;
    const Names& nm = *scope_.names;
    const Context ctx = scope_.ctx;
    const int pos = tk.pos;
    const std::string q = "'" + s + "'";
    if (s == "pi") return node(Op::pi, pos);
    if (s == "t") {
      if (scope_.allows_t()) return node(Op::time, pos);
      throw ExprError{pos, "'t' is time: " + std::string(kConstantRule)};
    }
    if (const int i = index_of(nm.coords, s); i >= 0) {
      if (scope_.allows_q()) return leaf(Op::coord, i, pos);
      throw ExprError{pos, q + " is a coordinate: " + kConstantRule};
    }
    for (size_t i = 0; i < nm.coords.size(); ++i) {
      if (s == nm.coords[i] + "_dot") {
        if (scope_.allows_qd()) return leaf(Op::rate, static_cast<int>(i), pos);
        if (ctx == Context::default_value) throw ExprError{pos, q + " is a rate: " + kConstantRule};
        throw ExprError{pos, q + " is a rate: a position constraint depends on the coordinates "
                                 "and t only (a constraint on rates has kind = \"velocity\")"};
      }
      if (s == nm.coords[i] + "_ddot") {
        if (scope_.allows_qdd()) return leaf(Op::accel, static_cast<int>(i), pos);
        if (ctx == Context::default_value)
          throw ExprError{pos, q + " is an acceleration: " + kConstantRule};
        throw ExprError{pos, q + " is an acceleration: accelerations may appear only in "
                                 "acceleration constraints"};
      }
    }
    if (const int j = index_of(nm.params, s); j >= 0) {
      if (j < scope_.visible_params) return leaf(Op::param, j, pos);
      if (j == scope_.visible_params)
        throw ExprError{pos, q + " is this parameter itself: a default may use only the "
                                 "parameters declared before it"};
      throw ExprError{pos, q + " is declared after this parameter: a default may use only the "
                               "parameters declared before it"};
    }
    throw ExprError{pos, "unknown name " + q + " (" + accepted_names(scope_) + ")"};
  }
};

// ---------------------------------------------------------------------------
// Tree queries

bool uses(const Expr& e, Op op) {
  if (e.op == op) return true;
  for (const auto& a : e.args)
    if (uses(*a, op)) return true;
  return false;
}

// L = T(qd) + U(q, t) by its structure: a sum (and differences, negations)
// of terms none of which has a rate together with a coordinate or time
// (kernels/model.hpp, separable_lagrangian)
bool separable_terms(const Expr& e) {
  if (e.op == Op::add || e.op == Op::sub)
    return separable_terms(*e.args[0]) && separable_terms(*e.args[1]);
  if (e.op == Op::neg) return separable_terms(*e.args[0]);
  return !(uses(e, Op::rate) && (uses(e, Op::coord) || uses(e, Op::time)));
}

// Degree of e as a polynomial in the nodes of kind `var` (Op::rate or
// Op::coord) with coefficients made of numbers and parameters only; kNotPoly
// when it is not evidently one (time, the other kind of variable, an
// acceleration, a variable under a function, a division by a variable, a
// non-integer power of one).
constexpr int kNotPoly = 1000;
int poly_degree(const Expr& e, Op var) {
  if (e.op == var) return 1;
  switch (e.op) {
    case Op::number:
    case Op::pi:
    case Op::param: return 0;
    case Op::time:
    case Op::coord:
    case Op::rate:
    case Op::accel: return kNotPoly;
    case Op::neg: return poly_degree(*e.args[0], var);
    case Op::add:
    case Op::sub: return std::max(poly_degree(*e.args[0], var), poly_degree(*e.args[1], var));
    case Op::mul:
      return std::min(kNotPoly, poly_degree(*e.args[0], var) + poly_degree(*e.args[1], var));
    case Op::div:
      return poly_degree(*e.args[1], var) == 0 ? poly_degree(*e.args[0], var) : kNotPoly;
    case Op::pow: {
      const int d = poly_degree(*e.args[0], var), x = poly_degree(*e.args[1], var);
      if (d == 0 && x == 0) return 0;
      const Expr& k = *e.args[1];
      if (x == 0 && k.op == Op::number && k.value >= 0 && k.value <= 8 &&
          k.value == static_cast<int>(k.value))
        return std::min(kNotPoly, d * static_cast<int>(k.value));
      return kNotPoly;
    }
    case Op::call:
      for (const auto& a : e.args)
        if (poly_degree(*a, var) != 0) return kNotPoly;
      return 0;
  }
  return kNotPoly;
}

// pred(term) for every summand of e (through +, - and negation)
template <class Pred>
bool every_term(const Expr& e, Pred pred) {
  if (e.op == Op::add || e.op == Op::sub)
    return every_term(*e.args[0], pred) && every_term(*e.args[1], pred);
  if (e.op == Op::neg) return every_term(*e.args[0], pred);
  return pred(e);
}

// A separable L whose rate terms are polynomials of degree <= 2 in the rates
// with constant (parameter) coefficients: M = d2L/dqd2 is constant
// (kernels/model.hpp, constant_mass)
bool constant_mass_terms(const Expr& e) {
  return separable_terms(e) && every_term(e, [](const Expr& t) {
           return !uses(t, Op::rate) || poly_degree(t, Op::rate) <= 2;
         });
}

// ... and whose other terms are affine in the coordinates, without time: the
// Lagrangian's F = dU/dq is constant too (constant_force)
bool constant_force_terms(const Expr& e) {
  return constant_mass_terms(e) && every_term(e, [](const Expr& t) {
           return uses(t, Op::rate) || poly_degree(t, Op::coord) <= 1;
         });
}

// 0: no acceleration; 1: affine in the accelerations by its structure; 2:
// not evidently affine (*where: the first node that makes it so)
int acc_degree(const Expr& e, int* where) {
  auto bad = [&](int d) {
    if (d == 2 && *where == 0) *where = e.pos;
    return d;
  };
  switch (e.op) {
    case Op::accel: return 1;
    case Op::number:
    case Op::pi:
    case Op::time:
    case Op::coord:
    case Op::rate:
    case Op::param: return 0;
    case Op::neg: return acc_degree(*e.args[0], where);
    case Op::add:
    case Op::sub: return std::max(acc_degree(*e.args[0], where), acc_degree(*e.args[1], where));
    case Op::mul: {
      const int a = acc_degree(*e.args[0], where), b = acc_degree(*e.args[1], where);
      if (a == 2 || b == 2) return 2;
      return bad(a + b);
    }
    case Op::div: {
      const int a = acc_degree(*e.args[0], where), b = acc_degree(*e.args[1], where);
      if (a == 2 || b == 2) return 2;
      return bad(b == 0 ? a : 2);
    }
    case Op::pow:
    case Op::call: {
      int d = 0;
      for (const auto& a : e.args) d = std::max(d, acc_degree(*a, where));
      if (d == 2) return 2;
      if (e.op == Op::pow && e.args[1]->op == Op::number && e.args[1]->value == 1.0) return d;
      return bad(d == 0 ? 0 : 2);
    }
  }
  return 2;
}

// ---------------------------------------------------------------------------
// Evaluation in double precision

struct Env {
  const double* q = nullptr;
  const double* qd = nullptr;
  const double* qdd = nullptr;
  const double* p = nullptr;
  double t = 0;
};

struct EvalFailure {
  bool failed = false;
  int pos = 0;
  std::string reason;
};

double apply(Fn fn, double a, double b) {
  switch (fn) {
    case Fn::sin: return std::sin(a);
    case Fn::cos: return std::cos(a);
    case Fn::tan: return std::tan(a);
    case Fn::exp: return std::exp(a);
    case Fn::log: return std::log(a);
    case Fn::sqrt: return std::sqrt(a);
    case Fn::sinh: return std::sinh(a);
    case Fn::cosh: return std::cosh(a);
    case Fn::tanh: return std::tanh(a);
    case Fn::abs: return std::fabs(a);
    case Fn::sign: return static_cast<double>((a > 0.0) - (a < 0.0));
    case Fn::atan2: return std::atan2(a, b);
    case Fn::pow: return std::pow(a, b);
  }
  return NAN;
}

// f: when given, the first division by zero or non-finite result (whose
// operands are finite) is recorded there
double eval(const Expr& e, const Env& env, EvalFailure* f) {
  double a = 0, b = 0, r = 0;
  if (!e.args.empty()) a = eval(*e.args[0], env, f);
  if (e.args.size() > 1) b = eval(*e.args[1], env, f);
  const char* sym = nullptr;
  switch (e.op) {
    case Op::number: return e.value;
    case Op::pi: return kPi;
    case Op::time: return env.t;
    case Op::coord: return env.q[e.index];
    case Op::rate: return env.qd[e.index];
    case Op::accel: return env.qdd[e.index];
    case Op::param: return env.p[e.index];
    case Op::neg: return -a;
    case Op::add: r = a + b, sym = " + "; break;
    case Op::sub: r = a - b, sym = " - "; break;
    case Op::mul: r = a * b, sym = " * "; break;
    case Op::div:
      r = a / b, sym = " / ";
      if (f && !f->failed && b == 0.0 && std::isfinite(a)) {
        *f = {true, e.pos, "division by zero (" + short_number(a) + " / 0)"};
      }
      break;
    case Op::pow: r = std::pow(a, b), sym = "^"; break;
    case Op::call: r = apply(e.fn, a, b); break;
  }
  if (f && !f->failed && !std::isfinite(r) && std::isfinite(a) && std::isfinite(b)) {
    std::string what;
    if (e.op == Op::call) {
      what = std::string(function_info(e.fn).name) + "(" + short_number(a) +
             (e.args.size() > 1 ? ", " + short_number(b) : std::string()) + ")";
    } else {
      what = short_number(a) + sym + short_number(b);
    }
    *f = {true, e.pos, what + " = " + short_number(r) + ": not finite"};
  }
  return r;
}

// splitmix64: reproducible random states for the linearity check
struct Random {
  uint64_t s;
  double uniform(double lo, double hi) {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return lo + (hi - lo) * (static_cast<double>(z >> 11) * 0x1.0p-53);
  }
};

// h(q, qd, qdd, t) affine in qdd: for random states and random w, u, v,
//   h(w+u+v) - h(w+u) - h(w+v) + h(w) = 0  and  h(w+2u) - 2 h(w+u) + h(w) = 0.
// Returns 1 (affine at every state where h is finite), 0 (not affine), -1
// (h is not finite at any sampled state).
int numerically_affine(const Expr& e, int n, const std::vector<double>& params) {
  Random rng{0x6E686F6C6FULL};
  int checked = 0;
  for (int trial = 0; trial < 32 && checked < 8; ++trial) {
    // alternate wide states with small positive ones (log, sqrt of a coordinate)
    const double lo = trial % 2 ? 0.1 : -2.0, hi = trial % 2 ? 1.5 : 2.0;
    std::vector<double> q(n), qd(n), w(n), u(n), v(n);
    for (int i = 0; i < n; ++i) {
      q[i] = rng.uniform(lo, hi);
      qd[i] = rng.uniform(lo, hi);
      w[i] = rng.uniform(lo, hi);
      u[i] = rng.uniform(-1.0, 1.0);
      v[i] = rng.uniform(-1.0, 1.0);
    }
    const double t = rng.uniform(0.0, 2.0);
    auto h = [&](double cu, double cv) {
      std::vector<double> a(n);
      for (int i = 0; i < n; ++i) a[i] = w[i] + cu * u[i] + cv * v[i];
      Env env{q.data(), qd.data(), a.data(), params.data(), t};
      return eval(e, env, nullptr);
    };
    const double h0 = h(0, 0), hu = h(1, 0), hv = h(0, 1), huv = h(1, 1), h2u = h(2, 0);
    if (!std::isfinite(h0) || !std::isfinite(hu) || !std::isfinite(hv) || !std::isfinite(huv) ||
        !std::isfinite(h2u))
      continue;
    ++checked;
    const double scale =
        1.0 + std::fabs(h0) + std::fabs(hu) + std::fabs(hv) + std::fabs(huv) + std::fabs(h2u);
    if (std::fabs(huv - hu - hv + h0) > 1e-9 * scale || std::fabs(h2u - 2 * hu + h0) > 1e-9 * scale)
      return 0;
  }
  return checked > 0 ? 1 : -1;
}

// ---------------------------------------------------------------------------
// Reading the TOML table

const char* type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a floating-point number";
    case toml::node_type::boolean: return "a boolean";
    default: return "a date/time";
  }
}

// expression text in a message: one line
std::string one_line(const std::string& s) {
  std::string r = s;
  for (char& c : r)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  return r;
}

class Reader {
 public:
  explicit Reader(const std::string& source) : source_(source) {}

  std::string where(const toml::source_region& r) const {
    if (r.begin.line == 0) return source_;
    return source_ + ":" + std::to_string(r.begin.line) + ":" + std::to_string(r.begin.column);
  }

  [[noreturn]] void fail(const toml::source_region& r, const std::string& key,
                         const std::string& reason) const {
    throw ModelFileError(where(r) + ": " + key + ": " + reason);
  }
  [[noreturn]] void fail(const toml::node& n, const std::string& key,
                         const std::string& reason) const {
    fail(n.source(), key, reason);
  }
  [[noreturn]] void fail_expr(const toml::node& n, const std::string& key, const std::string& text,
                              int pos, const std::string& reason) const {
    throw ModelFileError(where(n.source()) + ": " + key + ": \"" + one_line(text) +
                         "\": position " + std::to_string(pos) + ": " + reason);
  }

  void check_keys(const toml::table& t, const std::string& prefix,
                  const std::vector<std::string>& accepted) const {
    for (auto&& [k, v] : t) {
      const std::string name = one_line(std::string(k.str()));
      if (index_of(accepted, name) < 0)
        fail(k.source().begin.line ? k.source() : v.source(), prefix + name,
             "unknown key '" + name + "' (accepted: " + joined(accepted) + ")");
    }
  }

  const toml::node& require(const toml::table& t, const std::string& prefix, const char* name,
                            const std::vector<std::string>& required) const {
    const toml::node* n = t.get(name);
    if (n == nullptr) fail(t, prefix + name, "missing (required: " + joined(required) + ")");
    return *n;
  }

  std::string string_of(const toml::node& n, const std::string& key) const {
    if (!n.is_string()) fail(n, key, std::string("expected a string, got ") + type_name(n));
    return *n.value<std::string>();
  }

  const toml::table& table_of(const toml::node& n, const std::string& key,
                              const char* example) const {
    if (!n.is_table())
      fail(n, key, std::string("expected a table ") + example + ", got " + type_name(n));
    return *n.as_table();
  }

  const toml::array& array_of(const toml::node& n, const std::string& key,
                              const char* example) const {
    if (!n.is_array())
      fail(n, key, std::string("expected an array ") + example + ", got " + type_name(n));
    return *n.as_array();
  }

  double number_of(const toml::node& n, const std::string& key) const {
    if (!n.is_number()) fail(n, key, std::string("expected a number, got ") + type_name(n));
    const double v = *n.value<double>();
    if (!std::isfinite(v)) fail(n, key, "not a finite number (" + short_number(v) + ")");
    return v;
  }

  bool bool_of(const toml::node& n, const std::string& key) const {
    if (!n.is_boolean()) fail(n, key, std::string("expected true or false, got ") + type_name(n));
    return *n.value<bool>();
  }

  model_file::Expression expression(const toml::node& n, const std::string& key,
                                    const Scope& scope) const {
    model_file::Expression e;
    e.text = string_of(n, key);
    try {
      e.tree = Parser(e.text, scope).parse();
    } catch (const ExprError& err) {
      fail_expr(n, key, e.text, err.pos, err.reason);
    }
    return e;
  }

 private:
  std::string source_;
};

// a coordinate's or parameter's name; seen: name -> key of its declaration
void check_symbol(const Reader& rd, const toml::node& n, const std::string& key,
                  const std::string& name, const char* what,
                  std::map<std::string, std::pair<std::string, std::string>>& seen) {
  const std::string q = "'" + name + "'";
  if (!is_identifier(name))
    rd.fail(n, key,
            "invalid " + std::string(what) + " name " + q +
                ": letters, digits and _, starting with a letter");
  if (ends_with(name, "_dot") || ends_with(name, "_ddot"))
    rd.fail(n, key,
            q + " ends in " + (ends_with(name, "_ddot") ? "_ddot" : "_dot") +
                ": names ending in _dot and _ddot are the rates and accelerations of "
                "the coordinates");
  if (name == "t" || name == "pi") rd.fail(n, key, q + " is reserved (time t and the constant pi)");
  if (find_function(name))
    rd.fail(n, key, q + " is the name of a function (functions: " + function_list() + ")");
  const auto it = seen.find(name);
  if (it != seen.end()) {
    if (it->second.first == what)
      rd.fail(n, key,
              "duplicate " + std::string(what) + " " + q + " (also " + it->second.second + ")");
    rd.fail(n, key,
            q + " is already a " + it->second.first + " (" + it->second.second +
                "): names must be unique across coordinates and parameters");
  }
  seen[name] = {what, key};
}

ParamRange read_range(const Reader& rd, const toml::table& t, const std::string& prefix) {
  ParamRange r;
  std::vector<std::string> given;
  auto lower = [&](double v, bool open) {
    if (!r.has_lo || v > r.lo || (v == r.lo && open)) {
      r.has_lo = true;
      r.lo = v;
      r.lo_open = open;
    }
  };
  if (const toml::node* n = t.get("min")) {
    const double v = rd.number_of(*n, prefix + "min");
    lower(v, false);
    given.push_back("min = " + short_number(v));
  }
  if (const toml::node* n = t.get("positive"); n && rd.bool_of(*n, prefix + "positive")) {
    lower(0.0, true);
    given.push_back("positive = true");
  }
  if (const toml::node* n = t.get("nonnegative"); n && rd.bool_of(*n, prefix + "nonnegative")) {
    lower(0.0, false);
    given.push_back("nonnegative = true");
  }
  if (const toml::node* n = t.get("max")) {
    const double v = rd.number_of(*n, prefix + "max");
    r.has_hi = true;
    r.hi = v;
    given.push_back("max = " + short_number(v));
    if (r.has_lo && (r.lo > r.hi || (r.lo == r.hi && r.lo_open)))
      rd.fail(*n, prefix + "max", "inconsistent range: no value satisfies " + joined(given));
  }
  return r;
}

const std::vector<std::string> kTopKeys = {
    "name",       "description",          "coordinates",    "parameters",
    "lagrangian", "constraints",          "forces",         "nonideal_forces",
    "energy",     "conflated_lagrangian", "constraint_rank"};
const std::vector<std::string> kTopRequired = {"name", "description", "coordinates", "lagrangian"};
const std::vector<std::string> kCoordKeys = {"name", "unit", "description"};
const std::vector<std::string> kCoordRequired = {"name", "unit"};
const std::vector<std::string> kParamKeys = {"name", "default", "unit",     "description",
                                             "min",  "max",     "positive", "nonnegative"};
const std::vector<std::string> kParamRequired = {"name", "default", "unit"};
const std::vector<std::string> kConstraintKeys = {"name", "kind", "expr"};
const std::vector<std::string> kKinds = {"position", "velocity", "acceleration"};

std::string unit_of(const Reader& rd, const toml::table& t, const std::string& prefix,
                    const std::vector<std::string>& required) {
  const toml::node& n = rd.require(t, prefix, "unit", required);
  const std::string u = rd.string_of(n, prefix + "unit");
  if (u.empty()) rd.fail(n, prefix + "unit", "empty unit (write \"1\" for a dimensionless one)");
  return u;
}

std::string optional_string(const Reader& rd, const toml::table& t, const std::string& prefix,
                            const char* name) {
  const toml::node* n = t.get(name);
  return n ? rd.string_of(*n, prefix + name) : std::string();
}

void check_lagrangian_rates(const Reader& rd, const toml::node& n, const std::string& key,
                            const model_file::Expression& e, const Names& names, const char* what) {
  if (!uses(*e.tree, Op::rate))
    rd.fail_expr(n, key, e.text, 1,
                 std::string(what) + " depends on no rate (" +
                     joined(suffixed(names.coords, "_dot")) + "): it has no kinetic energy");
}

std::vector<model_file::Expression> read_forces(const Reader& rd, const toml::table& top,
                                                const char* key, const Names& names) {
  std::vector<model_file::Expression> f;
  const toml::node* n = top.get(key);
  if (n == nullptr) return f;
  const toml::table& t =
      rd.table_of(*n, key, "of expressions per coordinate, e.g. { theta = \"-c*theta_dot\" }");
  if (t.empty()) return f;
  f.resize(names.coords.size());
  const Scope scope{&names, Context::force, static_cast<int>(names.params.size())};
  for (auto&& [k, v] : t) {
    const std::string c = one_line(std::string(k.str()));
    const std::string fk = std::string(key) + "." + c;
    const int i = index_of(names.coords, c);
    if (i < 0)
      rd.fail(k.source().begin.line ? k.source() : v.source(), fk,
              "force for an unknown coordinate '" + c + "' (coordinates: " + joined(names.coords) +
                  ")");
    f[static_cast<size_t>(i)] = rd.expression(v, fk, scope);
  }
  return f;
}

}  // namespace

// ===========================================================================

ModelSpec parse_model_table(const toml::table& tbl, const std::string& source,
                            const std::vector<std::string>& builtin_names) {
  const Reader rd(source);
  ModelSpec s;
  s.source = source;
  rd.check_keys(tbl, "", kTopKeys);

  // name, description
  {
    const toml::node& n = rd.require(tbl, "", "name", kTopRequired);
    s.name = rd.string_of(n, "name");
    bool ok = !s.name.empty() && s.name[0] >= 'a' && s.name[0] <= 'z';
    for (char c : s.name) ok = ok && ((c >= 'a' && c <= 'z') || is_digit(c) || c == '_');
    if (!ok)
      rd.fail(n, "name",
              "invalid model name '" + s.name +
                  "': it must match [a-z][a-z0-9_]* (lower-case letters, digits and "
                  "_, starting with a letter)");
    if (index_of(builtin_names, s.name) >= 0)
      rd.fail(n, "name",
              "'" + s.name +
                  "' is the name of a built-in model (built-in: " + joined(builtin_names) + ")");
  }
  {
    const toml::node& n = rd.require(tbl, "", "description", kTopRequired);
    s.description = rd.string_of(n, "description");
    if (s.description.empty()) rd.fail(n, "description", "empty description");
    if (s.description.find_first_of("\n\r") != std::string::npos)
      rd.fail(n, "description", "the description must be one line");
  }

  Names names;
  std::map<std::string, std::pair<std::string, std::string>> seen;

  // coordinates
  {
    const toml::node& n = rd.require(tbl, "", "coordinates", kTopRequired);
    const toml::array& a =
        rd.array_of(n, "coordinates", "of tables, e.g. [ { name = \"x\", unit = \"m\" } ]");
    if (a.empty()) rd.fail(n, "coordinates", "empty: a model needs at least one coordinate");
    for (size_t i = 0; i < a.size(); ++i) {
      const std::string p = "coordinates[" + std::to_string(i) + "]";
      const toml::table& t = rd.table_of(a[i], p, "{ name = \"x\", unit = \"m\" }");
      rd.check_keys(t, p + ".", kCoordKeys);
      model_file::Coordinate c;
      const toml::node& nn = rd.require(t, p + ".", "name", kCoordRequired);
      c.name = rd.string_of(nn, p + ".name");
      check_symbol(rd, nn, p + ".name", c.name, "coordinate", seen);
      c.unit = unit_of(rd, t, p + ".", kCoordRequired);
      c.description = optional_string(rd, t, p + ".", "description");
      names.coords.push_back(c.name);
      s.coordinates.push_back(std::move(c));
    }
  }
  const int n_coords = static_cast<int>(s.coordinates.size());

  // parameters: all names first (a default may only use earlier ones, but a
  // later one named in it gets a precise message), then the defaults in order
  if (const toml::node* pn = tbl.get("parameters")) {
    const toml::array& a = rd.array_of(
        *pn, "parameters", "of tables, e.g. [ { name = \"m\", default = 1.0, unit = \"kg\" } ]");
    std::vector<const toml::table*> tabs;
    for (size_t j = 0; j < a.size(); ++j) {
      const std::string p = "parameters[" + std::to_string(j) + "]";
      const toml::table& t = rd.table_of(a[j], p, "{ name = \"m\", default = 1.0, unit = \"kg\" }");
      rd.check_keys(t, p + ".", kParamKeys);
      const toml::node& nn = rd.require(t, p + ".", "name", kParamRequired);
      const std::string name = rd.string_of(nn, p + ".name");
      check_symbol(rd, nn, p + ".name", name, "parameter", seen);
      names.params.push_back(name);
      tabs.push_back(&t);
    }
    std::vector<double> values;
    for (size_t j = 0; j < tabs.size(); ++j) {
      const toml::table& t = *tabs[j];
      const std::string p = "parameters[" + std::to_string(j) + "].";
      model_file::Parameter par;
      par.name = names.params[j];
      const toml::node& dn = rd.require(t, p, "default", kParamRequired);
      std::string default_text;
      if (dn.is_string()) {
        const Scope scope{&names, Context::default_value, static_cast<int>(j)};
        const model_file::Expression e = rd.expression(dn, p + "default", scope);
        default_text = e.text;
        EvalFailure f;
        Env env;
        env.p = values.data();
        par.default_value = eval(*e.tree, env, &f);
        if (f.failed) rd.fail_expr(dn, p + "default", e.text, f.pos, f.reason);
        if (!std::isfinite(par.default_value))
          rd.fail_expr(dn, p + "default", e.text, 1,
                       "the default is not finite (" + short_number(par.default_value) + ")");
      } else if (dn.is_number()) {
        par.default_value = rd.number_of(dn, p + "default");
      } else {
        rd.fail(dn, p + "default",
                std::string("expected a number or a string (a constant expression), got ") +
                    type_name(dn));
      }
      par.unit = unit_of(rd, t, p, kParamRequired);
      par.description = optional_string(rd, t, p, "description");
      par.range = read_range(rd, t, p);
      const ParamDescription pd{par.name, par.default_value, par.unit, par.description, par.range};
      if (!pd.admits(par.default_value)) {
        const std::string reason = "the default " + short_number(par.default_value) +
                                   " is outside the declared range (" + pd.range_text() + ")";
        if (default_text.empty()) rd.fail(dn, p + "default", reason);
        rd.fail_expr(dn, p + "default", default_text, 1, reason);
      }
      values.push_back(par.default_value);
      s.parameters.push_back(std::move(par));
    }
  }
  const int n_params = static_cast<int>(s.parameters.size());
  std::vector<double> defaults;
  for (const auto& p : s.parameters) defaults.push_back(p.default_value);

  // the Lagrangian
  {
    const toml::node& n = rd.require(tbl, "", "lagrangian", kTopRequired);
    s.lagrangian = rd.expression(n, "lagrangian", {&names, Context::lagrangian, n_params});
    check_lagrangian_rates(rd, n, "lagrangian", s.lagrangian, names, "the Lagrangian");
  }

  // constraints
  if (const toml::node* cn = tbl.get("constraints")) {
    const toml::array& a = rd.array_of(
        *cn, "constraints",
        "of tables, e.g. [ { name = \"c\", kind = \"velocity\", expr = \"x_dot - y\" } ]");
    std::vector<model_file::Constraint> by_kind[3];
    std::map<std::string, std::string> cseen;
    for (size_t l = 0; l < a.size(); ++l) {
      const std::string p = "constraints[" + std::to_string(l) + "]";
      const toml::table& t =
          rd.table_of(a[l], p, "{ name = \"c\", kind = \"velocity\", expr = \"...\" }");
      rd.check_keys(t, p + ".", kConstraintKeys);
      model_file::Constraint c;
      const toml::node& nn = rd.require(t, p + ".", "name", kConstraintKeys);
      c.name = rd.string_of(nn, p + ".name");
      if (!is_identifier(c.name))
        rd.fail(nn, p + ".name",
                "invalid constraint name '" + c.name +
                    "': letters, digits and _, starting with a letter");
      if (cseen.count(c.name))
        rd.fail(nn, p + ".name",
                "duplicate constraint name '" + c.name + "' (also " + cseen[c.name] + ")");
      cseen[c.name] = p + ".name";
      const toml::node& kn = rd.require(t, p + ".", "kind", kConstraintKeys);
      const std::string kind = rd.string_of(kn, p + ".kind");
      const int k = index_of(kKinds, kind);
      if (k < 0)
        rd.fail(kn, p + ".kind",
                "unknown constraint kind '" + kind + "' (accepted: " + joined(kKinds) + ")");
      c.kind = static_cast<ConstraintKind>(k);
      const Context ctx = k == 0   ? Context::position
                          : k == 1 ? Context::velocity
                                   : Context::acceleration;
      const toml::node& en = rd.require(t, p + ".", "expr", kConstraintKeys);
      const std::string key = p + ".expr";
      c.expr = rd.expression(en, key, {&names, ctx, n_params});
      const Expr& tree = *c.expr.tree;
      if (ctx == Context::position && !uses(tree, Op::coord))
        rd.fail_expr(
            en, key, c.expr.text, 1,
            "a position constraint must depend on a coordinate (" + joined(names.coords) + ")");
      if (ctx == Context::velocity && !uses(tree, Op::rate))
        rd.fail_expr(en, key, c.expr.text, 1,
                     "a velocity constraint must depend on a rate (" +
                         joined(suffixed(names.coords, "_dot")) +
                         "); a constraint on the coordinates alone has kind = \"position\"");
      if (ctx == Context::acceleration) {
        if (!uses(tree, Op::accel))
          rd.fail_expr(en, key, c.expr.text, 1,
                       "an acceleration constraint must depend on an acceleration (" +
                           joined(suffixed(names.coords, "_ddot")) + ")");
        int where = 0;
        if (acc_degree(tree, &where) == 2) {
          const int lin = numerically_affine(tree, n_coords, defaults);
          if (lin == 0)
            rd.fail_expr(en, key, c.expr.text, where == 0 ? 1 : where,
                         "an acceleration constraint must be linear in the accelerations "
                         "(A qdd - b): this one is not (checked at random states)");
          if (lin < 0)
            rd.fail_expr(en, key, c.expr.text, where == 0 ? 1 : where,
                         "cannot check that the constraint is linear in the accelerations: it "
                         "is not finite at any of the random states tried");
        }
      }
      by_kind[k].push_back(std::move(c));
    }
    for (auto& v : by_kind)
      for (auto& c : v) s.constraints.push_back(std::move(c));
    s.m_position = static_cast<int>(by_kind[0].size());
    s.m_velocity = static_cast<int>(by_kind[1].size());
    s.m_acceleration = static_cast<int>(by_kind[2].size());
    const int m = static_cast<int>(s.constraints.size());
    if (m >= n_coords)
      rd.fail(*cn, "constraints",
              std::to_string(m) + (m == 1 ? " constraint" : " constraints") + " for " +
                  std::to_string(n_coords) + (n_coords == 1 ? " coordinate" : " coordinates") +
                  ": a model needs fewer constraints than coordinates");
  }

  // redundant constraints: the rank A has at regular states (default: m)
  if (const toml::node* rn = tbl.get("constraint_rank")) {
    const int m = static_cast<int>(s.constraints.size());
    const auto r = rn->value_exact<int64_t>();
    if (!rn->is_integer() || !r || *r < 1 || *r > m)
      rd.fail(*rn, "constraint_rank",
              "expected an integer from 1 to the number of constraints (" + std::to_string(m) +
                  "): the rank of the constraint matrix at regular states, given when some "
                  "constraints are redundant");
    s.constraint_rank = static_cast<int>(*r);
  }

  s.nonpotential_force = read_forces(rd, tbl, "forces", names);
  s.nonideal_force = read_forces(rd, tbl, "nonideal_forces", names);

  if (const toml::node* n = tbl.get("energy"))
    s.energy = rd.expression(*n, "energy", {&names, Context::energy, n_params});
  if (const toml::node* n = tbl.get("conflated_lagrangian")) {
    s.conflated_lagrangian =
        rd.expression(*n, "conflated_lagrangian", {&names, Context::conflated, n_params});
    check_lagrangian_rates(rd, *n, "conflated_lagrangian", s.conflated_lagrangian, names,
                           "the conflated Lagrangian");
  }
  return s;
}

ModelSpec load_model_file(const std::string& path, const std::vector<std::string>& builtin_names) {
  if (!std::ifstream(path)) throw ModelFileError(path + ": cannot open the model file");
  toml::table tbl;
  try {
    tbl = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    std::string where = path;
    if (b.line > 0) where += ":" + std::to_string(b.line) + ":" + std::to_string(b.column);
    throw ModelFileError(where + ": not valid TOML: " + std::string(e.description()));
  }
  return parse_model_table(tbl, path, builtin_names);
}

namespace model_file {

double evaluate(const ModelSpec& s, const Expression& e, const std::vector<double>& q,
                const std::vector<double>& qd, const std::vector<double>& qdd, double t,
                const std::vector<double>& params) {
  const size_t n = s.coordinates.size();
  if (q.size() != n || qd.size() != n || (!qdd.empty() && qdd.size() != n))
    throw std::invalid_argument(
        "model_file::evaluate: q, qd (and qdd) need one value per "
        "coordinate");
  std::vector<double> p = params;
  if (p.empty())
    for (const auto& par : s.parameters) p.push_back(par.default_value);
  if (p.size() != s.parameters.size())
    throw std::invalid_argument("model_file::evaluate: one value per parameter");
  if (!e.tree) return 0.0;
  const std::vector<double> zeros(n, 0.0);
  Env env{q.data(), qd.data(), qdd.empty() ? zeros.data() : qdd.data(), p.data(), t};
  return eval(*e.tree, env, nullptr);
}

}  // namespace model_file

// ===========================================================================
// Symbolic derivatives: M and F of the fundamental equation from the
// Lagrangian's tree (symbolic_dynamics; the generated header's hand_dynamics)
// ===========================================================================
//
// Differentiation works on the parsed trees with the usual rules (chain rule
// for every function of the grammar, the quotient rule reusing the quotient,
// a^b with a state-free exponent as b a^(b-1), otherwise as exp(b log a) like
// kernels/expr_math.hpp; abs' = sign, sign' = 0, atan2' = (x dy - y dx) /
// (x^2 + y^2)). The nodes it creates fold what is structurally exact: a
// derivative that is identically 0 or 1, x + 0, x * 1, x * 0 (a term whose
// derivative vanishes identically, not a product that happens to be 0),
// arithmetic of two numbers, and signs moved out of products and quotients
// (-a * b = -(a * b) holds in floating point). Numbers stay non-negative, a
// negative one is a negation. This is the simplification that forward AD
// cannot make: a jet carries every structural zero of the Lagrangian's
// second derivatives through every operation (docs/BENCHMARKS.md 9.3).
namespace {

constexpr size_t kMaxSymbolicNodes = 20000;  // larger: the header keeps AD
constexpr int kMaxSymbolicDepth = 1000;      // deeper Lagrangians too (recursion depth)

bool is_number(const Expr& e, double v) {
  return e.op == Op::number && e.value == v;
}

ExprPtr sym_node(Op op, std::vector<ExprPtr> args, double value = 0.0, int index = 0,
                 Fn fn = Fn::sin) {
  auto e = std::make_shared<Expr>();
  e->op = op;
  e->value = value;
  e->index = index;
  e->fn = fn;
  for (const auto& a : args) e->depth = std::max(e->depth, a->depth + 1);
  e->args = std::move(args);
  return e;
}

ExprPtr s_num(double v);
ExprPtr s_neg(const ExprPtr& a) {
  if (a->op == Op::neg) return a->args[0];
  if (is_number(*a, 0.0)) return a;
  return sym_node(Op::neg, {a});
}
ExprPtr s_num(double v) {
  return v < 0 ? s_neg(sym_node(Op::number, {}, -v)) : sym_node(Op::number, {}, v);
}
ExprPtr s_sub(const ExprPtr& a, const ExprPtr& b);
ExprPtr s_add(const ExprPtr& a, const ExprPtr& b) {
  if (is_number(*a, 0.0)) return b;
  if (is_number(*b, 0.0)) return a;
  if (a->op == Op::number && b->op == Op::number) return s_num(a->value + b->value);
  if (b->op == Op::neg) return s_sub(a, b->args[0]);
  if (a->op == Op::neg) return s_sub(b, a->args[0]);
  return sym_node(Op::add, {a, b});
}
ExprPtr s_sub(const ExprPtr& a, const ExprPtr& b) {
  if (is_number(*b, 0.0)) return a;
  if (is_number(*a, 0.0)) return s_neg(b);
  if (a->op == Op::number && b->op == Op::number) return s_num(a->value - b->value);
  if (b->op == Op::neg) return s_add(a, b->args[0]);
  return sym_node(Op::sub, {a, b});
}
ExprPtr s_mul(const ExprPtr& a, const ExprPtr& b) {
  if (is_number(*a, 0.0) || is_number(*b, 0.0)) return s_num(0.0);
  if (is_number(*a, 1.0)) return b;
  if (is_number(*b, 1.0)) return a;
  if (a->op == Op::number && b->op == Op::number) return s_num(a->value * b->value);
  if (a->op == Op::neg) return s_neg(s_mul(a->args[0], b));
  if (b->op == Op::neg) return s_neg(s_mul(a, b->args[0]));
  return sym_node(Op::mul, {a, b});
}
ExprPtr s_div(const ExprPtr& a, const ExprPtr& b) {
  if (is_number(*a, 0.0)) return a;
  if (is_number(*b, 1.0)) return a;
  if (a->op == Op::neg) return s_neg(s_div(a->args[0], b));
  if (b->op == Op::neg) return s_neg(s_div(a, b->args[0]));
  return sym_node(Op::div, {a, b});
}
ExprPtr s_call(Fn fn, std::vector<ExprPtr> args) {
  return sym_node(Op::call, std::move(args), 0.0, 0, fn);
}
// a^k as the printer prints it: ipow for the literal exponents 2, 3, 4
ExprPtr s_pow(const ExprPtr& a, const ExprPtr& k) {
  if (is_number(*k, 1.0)) return a;
  if (is_number(*k, 0.0)) return s_num(1.0);
  return sym_node(Op::pow, {a, k});
}

bool depends_on_state(const Expr& e) {
  return uses(e, Op::coord) || uses(e, Op::rate) || uses(e, Op::accel) || uses(e, Op::time);
}

// d e / d var_index, var one of Op::coord, Op::rate, Op::time; memo: the
// derivatives already taken of this DAG's nodes (shared subtrees once)
class Differentiator {
 public:
  Differentiator(Op var, int index) : var_(var), index_(index) {}

  ExprPtr operator()(const ExprPtr& e) {
    const auto it = memo_.find(e.get());
    if (it != memo_.end()) return it->second;
    ExprPtr d = take(e);
    memo_.emplace(e.get(), d);
    return d;
  }

 private:
  ExprPtr take(const ExprPtr& ep) {
    const Expr& e = *ep;
    switch (e.op) {
      case Op::number:
      case Op::pi:
      case Op::param: return s_num(0.0);
      case Op::time:
      case Op::coord:
      case Op::rate:
      case Op::accel:
        return s_num(e.op == var_ && (var_ == Op::time || e.index == index_) ? 1.0 : 0.0);
      case Op::neg: return s_neg((*this)(e.args[0]));
      case Op::add: return s_add((*this)(e.args[0]), (*this)(e.args[1]));
      case Op::sub: return s_sub((*this)(e.args[0]), (*this)(e.args[1]));
      case Op::mul: {
        const ExprPtr &a = e.args[0], &b = e.args[1];
        return s_add(s_mul((*this)(a), b), s_mul(a, (*this)(b)));
      }
      case Op::div: {
        // (a / b)' = (a' - (a / b) b') / b
        const ExprPtr &a = e.args[0], &b = e.args[1];
        return s_div(s_sub((*this)(a), s_mul(ep, (*this)(b))), b);
      }
      case Op::pow: return power(ep, e.args[0], e.args[1]);
      case Op::call: break;
    }
    const ExprPtr& a = e.args[0];
    const ExprPtr da = (*this)(a);
    switch (e.fn) {
      case Fn::sin: return s_mul(s_call(Fn::cos, {a}), da);
      case Fn::cos: return s_neg(s_mul(s_call(Fn::sin, {a}), da));
      case Fn::tan: return s_mul(s_add(s_num(1.0), s_pow(ep, s_num(2.0))), da);
      case Fn::exp: return s_mul(ep, da);
      case Fn::log: return s_div(da, a);
      case Fn::sqrt: return s_div(da, s_mul(s_num(2.0), ep));
      case Fn::sinh: return s_mul(s_call(Fn::cosh, {a}), da);
      case Fn::cosh: return s_mul(s_call(Fn::sinh, {a}), da);
      case Fn::tanh: return s_mul(s_sub(s_num(1.0), s_pow(ep, s_num(2.0))), da);
      case Fn::abs: return s_mul(s_call(Fn::sign, {a}), da);
      case Fn::sign: return s_num(0.0);
      case Fn::atan2: {
        // atan2(y, x)' = (x y' - y x') / (x^2 + y^2)
        const ExprPtr &y = e.args[0], &x = e.args[1];
        const ExprPtr dx = (*this)(x);
        return s_div(s_sub(s_mul(x, da), s_mul(y, dx)),
                     s_add(s_pow(x, s_num(2.0)), s_pow(y, s_num(2.0))));
      }
      case Fn::pow: return power(ep, e.args[0], e.args[1]);
    }
    return s_num(0.0);
  }

  // e = a^b (operator ^ or pow)
  ExprPtr power(const ExprPtr& e, const ExprPtr& a, const ExprPtr& b) {
    const ExprPtr da = (*this)(a);
    if (!depends_on_state(*b)) {
      // b a^(b-1) a' (the exponent constant: nholo::pow(S, double))
      if (is_number(*da, 0.0)) return s_num(0.0);
      const ExprPtr bm1 = b->op == Op::number ? s_num(b->value - 1.0) : s_sub(b, s_num(1.0));
      return s_mul(s_mul(b, s_pow(a, bm1)), da);
    }
    // exp(b log a)' = a^b (b' log a + b a' / a)
    const ExprPtr db = (*this)(b);
    return s_mul(e, s_add(s_mul(db, s_call(Fn::log, {a})), s_div(s_mul(b, da), a)));
  }

  Op var_;
  int index_;
  std::map<const Expr*, ExprPtr> memo_;
};

// Hash-consing: structurally equal subtrees become one node (the printer's
// common subexpressions).
class Interner {
 public:
  ExprPtr operator()(const ExprPtr& e) {
    const auto done = done_.find(e.get());
    if (done != done_.end()) return done->second;
    std::vector<ExprPtr> args;
    std::vector<const Expr*> keys;
    for (const auto& a : e->args) {
      args.push_back((*this)(a));
      keys.push_back(args.back().get());
    }
    Key k{static_cast<int>(e->op), e->value, e->index, static_cast<int>(e->fn), keys};
    auto it = table_.find(k);
    if (it == table_.end()) {
      ExprPtr c = sym_node(e->op, args, e->value, e->index, e->fn);
      it = table_.emplace(std::move(k), c).first;
    }
    done_.emplace(e.get(), it->second);
    keep_.push_back(e);  // the key pointer must stay valid
    return it->second;
  }
  size_t size() const { return table_.size(); }

 private:
  using Key = std::tuple<int, double, int, int, std::vector<const Expr*>>;
  std::map<Key, ExprPtr> table_;
  std::map<const Expr*, ExprPtr> done_;
  std::vector<ExprPtr> keep_;
};

struct DynamicsTrees {
  std::vector<ExprPtr> mass;   // n x n, row-major, shared nodes
  std::vector<ExprPtr> force;  // n
  size_t nodes = 0;            // distinct nodes of all of them
  std::string refused;         // why there are none (then AD), else empty
};

// M_ij = d2L / dqd_i dqd_j, F_i = dL/dq_i - sum_k (d2L / dqd_i dq_k) qd_k -
// d2L / dqd_i dt (the Lagrangian's part; Q_np is added by the engine)
DynamicsTrees build_dynamics_trees(const ModelSpec& s, const ExprPtr& L) {
  const int n = static_cast<int>(s.coordinates.size());
  DynamicsTrees r;
  r.mass.assign(static_cast<size_t>(n * n), nullptr);
  r.force.assign(static_cast<size_t>(n), nullptr);
  std::vector<Differentiator> by_rate, by_coord;
  for (int i = 0; i < n; ++i) {
    by_rate.emplace_back(Op::rate, i);
    by_coord.emplace_back(Op::coord, i);
  }
  Differentiator by_time(Op::time, 0);
  Interner intern;
  for (int i = 0; i < n; ++i) {
    const ExprPtr p = intern(by_rate[static_cast<size_t>(i)](L));  // dL/dqd_i
    for (int j = 0; j <= i; ++j) {
      const ExprPtr m = intern(by_rate[static_cast<size_t>(j)](p));
      r.mass[static_cast<size_t>(i * n + j)] = m;
      r.mass[static_cast<size_t>(j * n + i)] = m;
    }
    ExprPtr f = by_coord[static_cast<size_t>(i)](L);
    for (int k = 0; k < n; ++k)
      f = s_sub(f, s_mul(by_coord[static_cast<size_t>(k)](p), sym_node(Op::rate, {}, 0.0, k)));
    f = s_sub(f, by_time(p));
    r.force[static_cast<size_t>(i)] = intern(f);
  }
  r.nodes = intern.size();
  return r;
}

// The symbolic M and F of L, or none with the reason: a tree deeper than
// kMaxSymbolicDepth (the differentiation recurses along it) or trees with
// more than kMaxSymbolicNodes distinct nodes
DynamicsTrees dynamics_trees(const ModelSpec& s, const ExprPtr& L) {
  DynamicsTrees d;
  if (!L) {
    d.refused = "no Lagrangian";
  } else if (L->depth > kMaxSymbolicDepth) {
    d.refused = "its tree is " + std::to_string(L->depth) + " levels deep, more than " +
                std::to_string(kMaxSymbolicDepth);
  } else {
    d = build_dynamics_trees(s, L);
    if (d.nodes > kMaxSymbolicNodes) {
      d.refused = "the symbolic M and F would have " + std::to_string(d.nodes) +
                  " distinct nodes, more than " + std::to_string(kMaxSymbolicNodes);
      d.mass.clear();
      d.force.clear();
    }
  }
  return d;
}

}  // namespace

namespace model_file {

SymbolicDynamics symbolic_dynamics(const ModelSpec& s) {
  SymbolicDynamics out;
  const DynamicsTrees d = dynamics_trees(s, s.lagrangian.tree);
  out.nodes = d.nodes;
  out.refused = d.refused;
  if (!d.refused.empty()) return out;
  const int n = static_cast<int>(s.coordinates.size());
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j)
      out.mass.push_back({"d2L/d" + s.coordinates[static_cast<size_t>(i)].name + "_dot d" +
                              s.coordinates[static_cast<size_t>(j)].name + "_dot",
                          d.mass[static_cast<size_t>(i * n + j)]});
    out.force.push_back(
        {"F_" + s.coordinates[static_cast<size_t>(i)].name, d.force[static_cast<size_t>(i)]});
  }
  return out;
}

}  // namespace model_file

// ===========================================================================

ModelInfo model_info_from_spec(const ModelSpec& s) {
  ModelInfo mi;
  mi.name = s.name;
  mi.description = s.description;
  mi.n = static_cast<int>(s.coordinates.size());
  mi.m_position = s.m_position;
  mi.m_velocity = s.m_velocity;
  mi.m_acceleration = s.m_acceleration;
  mi.m = static_cast<int>(s.constraints.size());
  for (const auto& c : s.coordinates) {
    mi.coordinates.push_back(c.name);
    mi.coordinate_units.push_back(c.unit);
  }
  for (const auto& c : s.constraints) {
    mi.constraints.push_back(c.name);
    mi.constraint_kinds.push_back(c.kind == ConstraintKind::position   ? "position"
                                  : c.kind == ConstraintKind::velocity ? "velocity"
                                                                       : "acceleration");
  }
  for (const auto& p : s.parameters)
    mi.params.push_back({p.name, p.default_value, p.unit, p.description, p.range});
  mi.formulations = {"udwadia_kalaba", "lagrange_multiplier", "null_space"};
  // VakonomicSystem (kernels/formulations.hpp) takes position and velocity
  // constraints only, and at least one
  if (mi.m > 0 && mi.m_acceleration == 0) mi.formulations.push_back("vakonomic");
  // redundant rows: the saddle-point formulations are singular everywhere
  // (as for the built-in models, host/config/model_info_of.hpp)
  if (s.constraint_rank > 0 && s.constraint_rank < mi.m)
    mi.formulations = {"udwadia_kalaba", "null_space"};
  mi.has_energy = !s.energy.text.empty();
  mi.has_nonideal = !s.nonideal_force.empty();
  mi.has_conflated = !s.conflated_lagrangian.text.empty();
  // symbolic M and F in the generated header (hand_dynamics_fn)
  mi.has_hand_dynamics = dynamics_trees(s, s.lagrangian.tree).refused.empty();
  if (mi.has_conflated) mi.formulations.push_back("conflated");
  // a model file states no relation between its parameters beyond the ranges
  mi.check_params = [](const std::vector<double>&) { return std::string(); };
  return mi;
}

// ===========================================================================
// The C++ header

namespace {

// a double literal: %.17g, with ".0" where it would read as an integer
std::string literal(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

// a C++ string literal: printable ASCII as is except \ " ?, everything else
// as a three-digit octal escape
std::string cpp_string(const std::string& s) {
  std::string r = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\\' || c == '"' || c == '?') {
      r += '\\';
      r += ch;
    } else if (c >= 0x20 && c < 0x7f) {
      r += ch;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%03o", static_cast<unsigned>(c));
      r += buf;
    }
  }
  return r + "\"";
}

// text for a // comment: printable ASCII, backslashes as '/'
std::string comment_text(const std::string& s) {
  std::string r;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    r += c == '\\' ? '/' : (c >= 0x20 && c < 0x7f) ? ch : '?';
  }
  return r;
}

struct Code {
  std::string text;
  bool s;  // of the scalar type S (depends on q, qd, qdd or t), else double
};

// names of the common subexpressions printed as temporaries (hand_dynamics)
using TempNames = std::map<const Expr*, Code>;

Code print(const Expr& e, const TempNames* tmp = nullptr);

// C++ precedence of the printed form: 1 + -, 2 * /, 3 unary -, 4 atoms,
// calls and temporaries
int precedence(const Expr& e, const TempNames* tmp = nullptr) {
  if (tmp && tmp->count(&e)) return 4;
  switch (e.op) {
    case Op::add:
    case Op::sub: return 1;
    case Op::mul:
    case Op::div: return 2;
    case Op::neg: return 3;
    default: return 4;
  }
}

Code print_pow(const Expr& base, const Expr& ex, const TempNames* tmp) {
  const Code b = print(base, tmp);
  if (ex.op == Op::number && (ex.value == 2.0 || ex.value == 3.0 || ex.value == 4.0))
    return {"nholo::expr::ipow<" + std::to_string(static_cast<int>(ex.value)) + ">(" + b.text + ")",
            b.s};
  const Code x = print(ex, tmp);
  return {"nholo::expr::pow(" + b.text + ", " + x.text + ")", b.s || x.s};
}

Code print(const Expr& e, const TempNames* tmp) {
  if (tmp) {
    const auto it = tmp->find(&e);
    if (it != tmp->end()) return it->second;
  }
  const std::string i = std::to_string(e.index);
  switch (e.op) {
    case Op::number: return {literal(e.value), false};  // >= 0: the text has no sign
    case Op::pi: return {literal(kPi), false};
    case Op::time: return {"t", true};
    case Op::coord: return {"q[" + i + "]", true};
    case Op::rate: return {"qd[" + i + "]", true};
    case Op::accel: return {"qdd[" + i + "]", true};
    case Op::param: return {"p.v[" + i + "]", false};
    case Op::neg: {
      // -(a * b), -(-a): the tree's grouping, not C++'s
      const Code a = print(*e.args[0], tmp);
      return {"-" + (precedence(*e.args[0], tmp) <= 3 ? "(" + a.text + ")" : a.text), a.s};
    }
    case Op::add:
    case Op::sub:
    case Op::mul:
    case Op::div: {
      // parentheses only where C++ would group differently from the tree:
      // a left operand of lower precedence, a right one of lower or equal
      // (a - (b - c), a + (b + c) keep theirs), so a long sum is not nested
      const int pr = precedence(e);
      Code a = print(*e.args[0], tmp), b = print(*e.args[1], tmp);
      if (precedence(*e.args[0], tmp) < pr) a.text = "(" + a.text + ")";
      if (precedence(*e.args[1], tmp) <= pr) b.text = "(" + b.text + ")";
      const char* op = e.op == Op::add   ? " + "
                       : e.op == Op::sub ? " - "
                       : e.op == Op::mul ? " * "
                                         : " / ";
      return {a.text + op + b.text, a.s || b.s};
    }
    case Op::pow: return print_pow(*e.args[0], *e.args[1], tmp);
    case Op::call: {
      if (e.fn == Fn::pow) return print_pow(*e.args[0], *e.args[1], tmp);
      const Code a = print(*e.args[0], tmp);
      if (e.fn == Fn::atan2) {
        Code b = print(*e.args[1], tmp);
        Code y = a;
        if (y.s && !b.s) b.text = "S(" + b.text + ")";
        if (b.s && !y.s) y.text = "S(" + y.text + ")";
        return {"atan2(" + y.text + ", " + b.text + ")", a.s || b.s};
      }
      if (e.fn == Fn::abs) return {"nholo::expr::abs(" + a.text + ")", a.s};
      if (e.fn == Fn::sign) return {"nholo::expr::sign(" + a.text + ")", a.s};
      return {std::string(function_info(e.fn).name) + "(" + a.text + ")", a.s};
    }
  }
  return {"0.0", false};
}

struct Uses {
  bool p = false, q = false, qd = false, qdd = false, t = false;
};
void collect(const Expr& e, Uses& u) {
  u.p = u.p || e.op == Op::param;
  u.q = u.q || e.op == Op::coord;
  u.qd = u.qd || e.op == Op::rate;
  u.qdd = u.qdd || e.op == Op::accel;
  u.t = u.t || e.op == Op::time;
  for (const auto& a : e.args) collect(*a, u);
}
Uses uses_of(const std::vector<const model_file::Expression*>& es) {
  Uses u;
  for (const auto* e : es)
    if (e->tree) collect(*e->tree, u);
  return u;
}

// "const Params& p" or "const Params& /*p*/"
std::string arg(const char* type, const char* name, bool used) {
  return std::string(type) + (used ? " " : " /*") + name + (used ? "" : "*/");
}

std::string returned_value(const model_file::Expression& e, const TempNames* tmp) {
  return e.tree ? "S(" + print(*e.tree, tmp).text + ")" : "S(0.0)";
}

// Parameter-only subexpressions with a function, a power or a division
// (m g sin(alpha), m / 2) are computed once, by make_params, into Params::k:
// every maximal one of the printed trees gets a slot (one per distinct
// printed text), and the printer prints p.k[j] for it. The same operations
// in the same order as before, so the values are the same bits.
class Hoister {
 public:
  // the maximal hoistable subtrees of e
  void add(const Expr& e) {
    if (!seen_.insert(&e).second) return;
    if (!state_(e) && costly_(e) && param_(e)) {
      const std::string text = print(e).text;
      auto it = slot_.find(text);
      if (it == slot_.end()) {
        it = slot_.emplace(text, static_cast<int>(texts_.size())).first;
        texts_.push_back(text);
      }
      names_[&e] = {"p.k[" + std::to_string(it->second) + "]", false};
      return;
    }
    for (const auto& a : e.args) add(*a);
  }
  const TempNames& names() const { return names_; }
  const std::vector<std::string>& texts() const { return texts_; }

 private:
  // memoized: does the subtree use q, qd, qdd or t; has it a call, ^ or /
  struct Memo {
    explicit Memo(bool (*leaf)(const Expr&)) : leaf_(leaf) {}
    bool operator()(const Expr& e) {
      const auto it = m_.find(&e);
      if (it != m_.end()) return it->second;
      bool r = leaf_(e);
      for (const auto& a : e.args) r = (*this)(*a) || r;
      m_.emplace(&e, r);
      return r;
    }
    bool (*leaf_)(const Expr&);
    std::map<const Expr*, bool> m_;
  };
  static bool uses_state(const Expr& e) {
    return e.op == Op::coord || e.op == Op::rate || e.op == Op::accel || e.op == Op::time;
  }
  static bool is_costly(const Expr& e) {
    return e.op == Op::call || e.op == Op::pow || e.op == Op::div;
  }
  static bool is_param(const Expr& e) { return e.op == Op::param; }
  Memo state_{uses_state}, costly_{is_costly}, param_{is_param};
  std::set<const Expr*> seen_;
  std::map<std::string, int> slot_;
  std::vector<std::string> texts_;
  TempNames names_;
};

std::string range_code(const ParamRange& r) {
  return "ParamRange{" + std::string(r.has_lo ? "true" : "false") + ", " + literal(r.lo) + ", " +
         (r.lo_open ? "true" : "false") + ", " + (r.has_hi ? "true" : "false") + ", " +
         literal(r.hi) + ", " + (r.hi_open ? "true" : "false") + "}";
}

// hand_dynamics(p, q, qd, t, M, F): the symbolic M and F (dynamics_trees),
// every node used more than once computed once into a temporary c<k>, in an
// order where each comes after the ones it uses
// (fname: hand_dynamics from the Lagrangian, conflated_hand_dynamics from
// the conflated Lagrangian)
template <class Line>
void hand_dynamics_fn(const ModelSpec& s, const char* fname, const DynamicsTrees& d,
                      const TempNames& hoisted, const Line& line) {
  const int n = static_cast<int>(s.coordinates.size());
  const std::string of =
      std::string(fname) == "hand_dynamics" ? "the Lagrangian" : "the conflated Lagrangian";
  line("");
  if (!d.refused.empty()) {
    line("  // no " + std::string(fname) + " from " + of + ": " + d.refused +
         "; the engine differentiates it by AD");
    return;
  }
  std::vector<const Expr*> roots;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j <= i; ++j) roots.push_back(d.mass[static_cast<size_t>(i * n + j)].get());
  for (const auto& f : d.force) roots.push_back(f.get());
  // distinct nodes in post-order, and how many distinct parents (or root
  // slots) use each
  std::map<const Expr*, int> used;
  std::vector<const Expr*> order;
  std::vector<std::pair<const Expr*, size_t>> stack;
  for (const Expr* r : roots) {
    ++used[r];
    if (used[r] > 1) continue;
    stack.push_back({r, 0});
    while (!stack.empty()) {
      auto& [e, next] = stack.back();
      if (next < e->args.size() && !hoisted.count(e)) {
        const Expr* a = e->args[next++].get();
        if (++used[a] == 1) stack.push_back({a, 0});
      } else {
        order.push_back(e);
        stack.pop_back();
      }
    }
  }
  Uses u;
  for (const Expr* e : order) {
    u.p = u.p || e->op == Op::param || hoisted.count(e) > 0;
    u.q = u.q || e->op == Op::coord;
    u.qd = u.qd || e->op == Op::rate;
    u.t = u.t || e->op == Op::time;
  }
  line("  // M = d2L/dqd2 and F = dL/dq - (d2L/dqd dq) qd - d2L/dqd dt, differentiated");
  line("  // symbolically by nholo from " + of + " (the engine adds the forces)");
  line("  template <class S>");
  line("  NHOLO_HDI static void " + std::string(fname) + "(" + arg("const Params&", "p", u.p) +
       ", " + arg("const Vec<S, n>&", "q", u.q) + ", " + arg("const Vec<S, n>&", "qd", u.qd) +
       ", " + arg("const S&", "t", u.t) + ", Mat<S, n, n>& M, Vec<S, n>& F) {");
  TempNames names = hoisted;
  int temps = 0;
  for (const Expr* e : order) {
    const bool leaf = e->args.empty() || (e->op == Op::neg && e->args[0]->args.empty());
    if (leaf || used[e] < 2 || names.count(e)) continue;
    const Code c = print(*e, &names);
    const std::string name = "c" + std::to_string(temps++);
    line("    const " + std::string(c.s ? "S " : "double ") + name + " = " +
         (c.s ? "S(" + c.text + ")" : c.text) + ";");
    names[e] = {name, c.s};
  }
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j <= i; ++j) {
      const std::string ij = std::to_string(i) + ", " + std::to_string(j);
      line("    M(" + ij + ") = S(" + print(*d.mass[static_cast<size_t>(i * n + j)], &names).text +
           ");");
      if (j < i)
        line("    M(" + std::to_string(j) + ", " + std::to_string(i) + ") = M(" + ij + ");");
    }
  }
  for (int i = 0; i < n; ++i)
    line("    F[" + std::to_string(i) + "] = S(" +
         print(*d.force[static_cast<size_t>(i)], &names).text + ");");
  line("  }");
}

}  // namespace

std::string generate_model_header(const ModelSpec& s) {
  // the symbolic M and F of the Lagrangian (hand_dynamics) and of the
  // conflated one (conflated_hand_dynamics), unless too large
  const DynamicsTrees dyn = dynamics_trees(s, s.lagrangian.tree),
                      dyn_conflated = dynamics_trees(s, s.conflated_lagrangian.tree);
  Hoister hoist;
  for (const model_file::Expression* e : {&s.lagrangian, &s.energy, &s.conflated_lagrangian})
    if (e->tree) hoist.add(*e->tree);
  for (const auto& c : s.constraints)
    if (c.expr.tree) hoist.add(*c.expr.tree);
  for (const auto* f : {&s.nonpotential_force, &s.nonideal_force})
    for (const auto& e : *f)
      if (e.tree) hoist.add(*e.tree);
  for (const DynamicsTrees* d : {&dyn, &dyn_conflated}) {
    for (const auto& e : d->mass)
      if (e) hoist.add(*e);
    for (const auto& e : d->force)
      if (e) hoist.add(*e);
  }
  const TempNames* hoisted = &hoist.names();
  const int n = static_cast<int>(s.coordinates.size());
  const int m = static_cast<int>(s.constraints.size());
  const int np = static_cast<int>(s.parameters.size());
  std::string h;
  auto line = [&](const std::string& l) { h += l + "\n"; };

  line("// generated by nholo from " + comment_text(s.source) + " \xE2\x80\x94 do not edit");
  line("#pragma once");
  line("");
  line("#include \"kernels/expr_math.hpp\"");
  line("#include \"kernels/linalg.hpp\"");
  line("#include \"kernels/model.hpp\"");
  line("");
  line("namespace nholo::user_models {");
  line("");
  line("struct UserModel {");
  line("  static constexpr const char* name = " + cpp_string(s.name) + ";");
  line("  static constexpr const char* description = " + cpp_string(s.description) + ";");
  line("  static constexpr const char* source = " + cpp_string(s.source) + ";");
  line("  static constexpr int n = " + std::to_string(n) + ";");
  // the rates never meet q or t in one term: dynamics.hpp skips the (qd, q)
  // and (qd, t) second derivatives
  if (separable_terms(*s.lagrangian.tree))
    line("  static constexpr bool separable_lagrangian = true;");
  // M (and F) depend on the parameters only: factored once per trajectory
  // (kernels/system.hpp, ConstantMassCache)
  if (constant_mass_terms(*s.lagrangian.tree))
    line("  static constexpr bool constant_mass = true;");
  if (constant_force_terms(*s.lagrangian.tree))
    line("  static constexpr bool constant_force = true;");
  line("  static constexpr int m_position = " + std::to_string(s.m_position) + ";");
  line("  static constexpr int m_velocity = " + std::to_string(s.m_velocity) + ";");
  line("  static constexpr int m_acceleration = " + std::to_string(s.m_acceleration) + ";");
  if (s.constraint_rank > 0)
    line("  static constexpr int constraint_rank = " + std::to_string(s.constraint_rank) + ";");
  line("  static constexpr int n_params = " + std::to_string(np) + ";");
  {
    std::string names, units;
    for (int i = 0; i < n; ++i) {
      names += (i ? ", " : "") + cpp_string(s.coordinates[i].name);
      units += (i ? ", " : "") + cpp_string(s.coordinates[i].unit);
    }
    line("  static constexpr const char* coordinates[n] = {" + names + "};");
    line("  static constexpr const char* coordinate_units[n] = {" + units + "};");
  }
  if (m > 0) {
    std::string names;
    for (int l = 0; l < m; ++l) names += (l ? ", " : "") + cpp_string(s.constraints[l].name);
    line("  static constexpr const char* constraint_names[" + std::to_string(m) + "] = {" + names +
         "};");
  } else {
    line("  // no constraints: one sentinel entry (a zero-length array is not valid C++)");
    line("  static constexpr const char* constraint_names[1] = {nullptr};");
  }
  if (np > 0) {
    line("  static constexpr ParamInfo param_info[n_params] = {");
    for (const auto& p : s.parameters)
      line("      {" + cpp_string(p.name) + ", " + literal(p.default_value) + ", " +
           cpp_string(p.unit) + ", " + cpp_string(p.description) + ", " + range_code(p.range) +
           "},");
    line("  };");
  } else {
    line("  // no parameters: one sentinel entry (models/registry.hpp)");
    line(
        "  static constexpr ParamInfo param_info[1] = {{nullptr, 0.0, nullptr, nullptr, "
        "ParamRange{}}};");
  }
  // (parameter names are identifiers, checked: safe in a comment)
  line("  struct Params {");
  if (np > 0) {
    line("    // v[j] in param_info order:");
    for (int j = 0; j < np; ++j)
      line("    //   v[" + std::to_string(j) + "] " + s.parameters[static_cast<size_t>(j)].name);
  }
  line("    double v[" + std::to_string(np > 0 ? np : 1) + "];");
  if (!hoist.texts().empty()) {
    line("    // parameter-only subexpressions, computed once by make_params");
    line("    double k[" + std::to_string(hoist.texts().size()) + "];");
  }
  line("  };");
  if (np > 0) {
    std::string vals;
    for (int j = 0; j < np; ++j)
      vals += (j ? ", " : "") + std::string("values[") + std::to_string(j) + "]";
    if (hoist.texts().empty()) {
      line("  NHOLO_HDI static Params make_params(const double* values) { return Params{{" + vals +
           "}}; }");
    } else {
      line("  NHOLO_HDI static Params make_params(const double* values) {");
      line("    Params p{{" + vals + "}, {}};");
      for (size_t j = 0; j < hoist.texts().size(); ++j)
        line("    p.k[" + std::to_string(j) + "] = " + hoist.texts()[j] + ";");
      line("    return p;");
      line("  }");
    }
  } else {
    line(
        "  NHOLO_HDI static Params make_params(const double* /*values*/) { return Params{{0.0}}; "
        "}");
  }

  // S-valued functions of (p, q, qd, t)
  auto scalar_fn = [&](const char* fname, const model_file::Expression& e) {
    const Uses u = uses_of({&e});
    line("");
    line("  template <class S>");
    line(std::string("  NHOLO_HDI static S ") + fname + "(" + arg("const Params&", "p", u.p) +
         ", " + arg("const Vec<S, n>&", "q", u.q) + ", " + arg("const Vec<S, n>&", "qd", u.qd) +
         ", " + arg("const S&", "t", u.t) + ") {");
    line("    return " + returned_value(e, hoisted) + ";");
    line("  }");
  };
  // Vec-valued: the rows exprs
  auto vector_fn = [&](const char* fname, const std::vector<const model_file::Expression*>& rows,
                       bool with_qd, bool with_qdd, const std::string& size) {
    const Uses u = uses_of(rows);
    std::string args = arg("const Params&", "p", u.p) + ", " + arg("const Vec<S, n>&", "q", u.q);
    if (with_qd) args += ", " + arg("const Vec<S, n>&", "qd", u.qd);
    if (with_qdd) args += ", " + arg("const Vec<S, n>&", "qdd", u.qdd);
    args += ", " + arg("const S&", "t", u.t);
    line("");
    line("  template <class S>");
    line("  NHOLO_HDI static Vec<S, " + size + "> " + fname + "(" + args + ") {");
    line("    Vec<S, " + size + "> r;");
    for (size_t l = 0; l < rows.size(); ++l)
      line("    r[" + std::to_string(l) + "] = " + returned_value(*rows[l], hoisted) + ";");
    line("    return r;");
    line("  }");
  };

  scalar_fn("lagrangian", s.lagrangian);
  if (s.lagrangian.tree) hand_dynamics_fn(s, "hand_dynamics", dyn, hoist.names(), line);
  const char* kind_fn[3] = {"position_constraints", "velocity_constraints",
                            "acceleration_constraints"};
  const char* kind_size[3] = {"m_position", "m_velocity", "m_acceleration"};
  for (int k = 0; k < 3; ++k) {
    std::vector<const model_file::Expression*> rows;
    for (const auto& c : s.constraints)
      if (static_cast<int>(c.kind) == k) rows.push_back(&c.expr);
    if (!rows.empty()) vector_fn(kind_fn[k], rows, k >= 1, k == 2, kind_size[k]);
  }
  auto force_fn = [&](const char* fname, const std::vector<model_file::Expression>& f) {
    if (f.empty()) return;
    std::vector<const model_file::Expression*> rows;
    for (const auto& e : f) rows.push_back(&e);
    vector_fn(fname, rows, true, false, "n");
  };
  force_fn("nonpotential_force", s.nonpotential_force);
  force_fn("nonideal_force", s.nonideal_force);
  if (s.energy.tree) scalar_fn("energy", s.energy);
  if (s.conflated_lagrangian.tree) {
    scalar_fn("conflated_lagrangian", s.conflated_lagrangian);
    hand_dynamics_fn(s, "conflated_hand_dynamics", dyn_conflated, hoist.names(), line);
  }
  line("};");
  line("");
  line("}  // namespace nholo::user_models");
  return h;
}

}  // namespace nholo
