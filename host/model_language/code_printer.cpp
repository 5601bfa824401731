// nholo/host/model_language/code_printer.cpp — expression trees printed as C++
// (host/model_language/code_printer.hpp).
#include "host/model_language/code_printer.hpp"

#include <cstdio>
#include <string>
#include <vector>

namespace nholo::model_file {

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

namespace {

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

void collect(const Expr& e, Uses& u) {
  auto has = [&](Op op) { return (e.ops & (1u << static_cast<unsigned>(op))) != 0; };
  u.p = u.p || has(Op::param);
  u.q = u.q || has(Op::coord);
  u.qd = u.qd || has(Op::rate);
  u.qdd = u.qdd || has(Op::accel);
  u.t = u.t || has(Op::time);
}

}  // namespace

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

Uses uses_of(const std::vector<const Expression*>& es) {
  Uses u;
  for (const auto* e : es)
    if (e->tree) collect(*e->tree, u);
  return u;
}

// "const Params& p" or "const Params& /*p*/"
std::string arg(const char* type, const char* name, bool used) {
  return std::string(type) + (used ? " " : " /*") + name + (used ? "" : "*/");
}

std::string returned_value(const Expression& e, const TempNames* tmp) {
  return e.tree ? "S(" + print(*e.tree, tmp).text + ")" : "S(0.0)";
}

}  // namespace nholo::model_file
