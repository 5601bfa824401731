// nholo/host/model_language/expr/parser.cpp — the tokenizer and the recursive-
// descent parser of the expression language (expr/parser.hpp), with the
// messages that name what an expression may use.
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
#include "host/model_language/expr/parser.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace nholo::model_file {

namespace {

constexpr const char* kDefaultRule =
    "a default is a constant: numbers, pi, functions and the parameters declared before it";
constexpr const char* kDerivedRule =
    "a derived parameter is a function of the other parameters: numbers, pi, functions and "
    "parameters";

// why a constant context (a default, a derived parameter) refuses a name
std::string constant_rule(const Scope& sc) {
  return sc.ctx == Context::derived_param ? kDerivedRule : kDefaultRule;
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
  if (sc.allows_q() && !nm.definitions.empty()) {
    std::vector<std::string> defs;
    for (const auto& d : nm.definitions) defs.push_back(d.first);
    parts.push_back("definitions: " + joined(defs));
  }
  parts.push_back(sc.allows_t() ? "t, pi" : "pi");
  parts.push_back("functions: " + function_list());
  return joined(parts, "; ");
}

// ---------------------------------------------------------------------------
// Tokenizer and parser

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
  Parser(const std::string& text, const Scope& scope, size_t max_nodes)
      : text_(text), scope_(scope), max_nodes_(max_nodes) {
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
  size_t max_nodes_;          // ExprTooLarge beyond
  mutable size_t nodes_ = 0;  // made so far

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
      // a text too long for the node budget is not tokenized to its end
      // (a real expression has fewer than 4 tokens per node)
      if (max_nodes_ < kNoNodeLimit / 8 && toks_.size() > 4 * max_nodes_ + 16)
        throw ExprTooLarge{pos};
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
  std::shared_ptr<Expr> node(Op op, int pos, std::vector<ExprPtr> args = {}) const {
    if (++nodes_ > max_nodes_) throw ExprTooLarge{pos};
    auto e = std::make_shared<Expr>();
    e->op = op;
    e->pos = pos;
    e->ops = ops_of(op, args);
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
    if (nm.definitions.count(s)) return true;
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
      throw ExprError{pos, "'t' is time: " + constant_rule(scope_)};
    }
    if (const int i = index_of(nm.coords, s); i >= 0) {
      if (scope_.allows_q()) return leaf(Op::coord, i, pos);
      throw ExprError{pos, q + " is a coordinate: " + constant_rule(scope_)};
    }
    for (size_t i = 0; i < nm.coords.size(); ++i) {
      if (s == nm.coords[i] + "_dot") {
        if (scope_.allows_qd()) return leaf(Op::rate, static_cast<int>(i), pos);
        if (scope_.constant()) throw ExprError{pos, q + " is a rate: " + constant_rule(scope_)};
        throw ExprError{pos, q + " is a rate: a position constraint depends on the coordinates "
                                 "and t only (a constraint on rates has kind = \"velocity\")"};
      }
      if (s == nm.coords[i] + "_ddot") {
        if (scope_.allows_qdd()) return leaf(Op::accel, static_cast<int>(i), pos);
        if (scope_.constant())
          throw ExprError{pos, q + " is an acceleration: " + constant_rule(scope_)};
        if (ctx == Context::event)
          throw ExprError{pos, q + " is an acceleration: an event function reads t, the "
                                   "coordinates, their rates and the parameters only (" +
                                   accepted_names(scope_) + ")"};
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
    if (const auto d = nm.definitions.find(s); d != nm.definitions.end())
      return definition(d->first, d->second, pos);
    throw ExprError{pos, "unknown name " + q + " (" + accepted_names(scope_) + ")"};
  }

  // definition d named at pos: its tree, where the scope allows what it uses
  ExprPtr definition(const std::string& name, const ExprPtr& tree, int pos) const {
    const std::string q = "'" + name + "' is a definition";
    const unsigned state =
        (1u << static_cast<unsigned>(Op::coord)) | (1u << static_cast<unsigned>(Op::rate)) |
        (1u << static_cast<unsigned>(Op::accel)) | (1u << static_cast<unsigned>(Op::time));
    auto has = [&](Op op) { return (tree->ops & (1u << static_cast<unsigned>(op))) != 0; };
    if (scope_.constant() && (tree->ops & state) != 0)
      throw ExprError{pos, q + " of the state: " + constant_rule(scope_)};
    if (has(Op::accel) && !scope_.allows_qdd())
      throw ExprError{pos, q + " that uses accelerations: accelerations may appear only in "
                               "acceleration constraints"};
    if (has(Op::rate) && !scope_.allows_qd())
      throw ExprError{pos, q + " that uses rates: a position constraint depends on the "
                               "coordinates and t only (a constraint on rates has kind = "
                               "\"velocity\")"};
    return tree;
  }
};

}  // namespace

ExprPtr parse_expression(const std::string& text, const Scope& scope, size_t max_nodes) {
  return Parser(text, scope, max_nodes).parse();
}

std::vector<std::string> identifiers_in(const std::string& text) {
  std::vector<std::string> names;
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (is_alpha(c) || c == '_') {
      size_t j = i;
      while (j < text.size() && is_word(text[j])) ++j;
      names.push_back(text.substr(i, j - i));
      i = j;
    } else if (is_digit(c) || c == '.') {
      // a number with its exponent's letter (1e3) and whatever is glued to
      // it (the parser refuses 2x): no name
      while (i < text.size() && (is_word(text[i]) || text[i] == '.')) ++i;
    } else {
      ++i;
    }
  }
  return names;
}

// Depth-first, iteratively (a chain of thousands of definitions does not
// deepen the stack), roots and uses in the order given: post-order.
std::vector<size_t> definition_order(const std::vector<std::string>& names,
                                     const std::vector<std::string>& texts) {
  const size_t n = names.size();
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < n; ++i) index.emplace(names[i], i);
  std::vector<std::vector<size_t>> deps(n);
  for (size_t i = 0; i < n; ++i)
    for (const std::string& w : identifiers_in(texts[i])) {
      const auto it = index.find(w);
      if (it != index.end() &&
          std::find(deps[i].begin(), deps[i].end(), it->second) == deps[i].end())
        deps[i].push_back(it->second);
    }
  enum { unseen, open, done };
  std::vector<int> state(n, unseen);
  std::vector<size_t> order;
  std::vector<std::pair<size_t, size_t>> stack;  // definition, next use to visit
  for (size_t root = 0; root < n; ++root) {
    if (state[root] != unseen) continue;
    state[root] = open;
    stack.push_back({root, 0});
    while (!stack.empty()) {
      auto& [d, next] = stack.back();
      if (next == deps[d].size()) {
        state[d] = done;
        order.push_back(d);
        stack.pop_back();
        continue;
      }
      const size_t u = deps[d][next++];
      if (state[u] == done) continue;
      if (state[u] == open) {
        DefinitionCycle c{{}, u};
        size_t k = stack.size();
        while (stack[k - 1].first != u) --k;
        for (; k <= stack.size(); ++k) c.path.push_back(names[stack[k - 1].first]);
        c.path.push_back(names[u]);
        throw c;
      }
      state[u] = open;
      stack.push_back({u, 0});
    }
  }
  return order;
}

}  // namespace nholo::model_file
