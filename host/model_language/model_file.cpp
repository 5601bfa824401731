// nholo/host/model_language/model_file.cpp — models described in TOML: reading and
// checking a model file or a [model] table into a ModelSpec (interface and
// error format: host/model_language/model_file.hpp). The expressions are parsed
// and analysed by expr/ (the grammar: expr/parser.cpp); the generated header
// is model_header.cpp's, the run-time description model_spec.cpp's.
//
// The model file format (its keys, what each accepts, the checks and their
// messages) is docs/models.md's reference: a TOML document whose top level
// is the model table (a run config embeds the same table as [model]); every
// key is checked, an unknown one named with the accepted ones, a value of the
// wrong TOML type refused ("expected a string, got an integer"). In brief:
// name, description, coordinates, parameters (a default, or derived from
// other parameters), [definitions], lagrangian, constraints, forces,
// nonideal_forces, energy (or "auto"), conflated_lagrangian, constraint_rank
// and [[events]].
//
// Names. Coordinates and parameters: [A-Za-z][A-Za-z0-9_]*, not ending in
// _dot or _ddot, not t, pi or a function's name, unique across coordinates
// and parameters. The rate of coordinate x is x_dot, its acceleration x_ddot;
// t is time, pi the constant. What an expression may use:
//   parameter default            numbers, pi, functions, earlier parameters
//   derived parameter            numbers, pi, functions, other parameters
//   position constraint          coordinates, t, parameters, pi
//   velocity constraint, lagrangian, conflated_lagrangian, energy, forces,
//   nonideal_forces              ... and the rates
//   acceleration constraint      ... and the accelerations
//   definition                   all of these; the definitions too, in every
//                                expression but a parameter's default
// An unknown name is an error listing what the expression may use.
//
// Expressions (grammar, numbers, nesting limits): expr/parser.cpp.
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
// expression as written (line breaks and tabs shown as spaces, other control
// characters as \u00XX); one longer than 80 characters is shown as the 80
// around P, cut with "...", followed by "(characters A-B of N)". Names and
// keys in messages are shown the same way, cut after 80 characters.
//
// Limits (docs/models.md, "Limits"): a model file of at most 64 MiB, a
// regular file; a model name of at most 64 characters; no NUL in any string;
// at most 100,000 distinct expression nodes (numbers, names, operations,
// function calls) in all of a model's expressions together, counted on the
// shared graph (model_graph.cpp), and at most 2,000,000 as written (a
// definition's counted once).
#include "host/model_language/model_file.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "host/model_language/config_error.hpp"
#include "host/model_language/derived_params.hpp"
#include "host/model_language/event_compile.hpp"
#include "host/model_language/expr/analysis.hpp"
#include "host/model_language/expr/derivative.hpp"
#include "host/model_language/expr/eval.hpp"
#include "host/model_language/expr/graph.hpp"
#include "host/model_language/expr/parser.hpp"
#include "host/model_language/param_range.hpp"
#include "host/model_language/toml_type_name.hpp"

namespace nholo {

namespace model_file {
namespace {

const char* type_name(const toml::node& n) {
  return toml_type_name(n, "a floating-point number");
}

// The most expression nodes read as written, before they are shared (a
// sanity cap on memory: about 170 bytes each; the budget is on the shared
// graph, model_graph.cpp) (docs/models.md, "Limits"; the largest model
// file: model_file_text.cpp).
constexpr long kMaxParsedNodes = 2000000;
constexpr size_t kMaxModelName = 64;
// How many characters of an expression, a name or a key a message shows.
constexpr size_t kShown = 80;

// the characters (UTF-8 code points) of s: the byte offset where each begins
std::vector<size_t> char_starts(const std::string& s) {
  std::vector<size_t> v;
  for (size_t b = 0; b < s.size(); ++b)
    if ((static_cast<unsigned char>(s[b]) & 0xC0) != 0x80) v.push_back(b);
  return v;
}

// user text in a message: one line, line breaks and tabs shown as spaces,
// other control characters as \u00XX (a NUL would end the message)
std::string one_line(const std::string& s) {
  std::string r;
  r.reserve(s.size());
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '\n' || c == '\r' || c == '\t') {
      r += ' ';
    } else if (u < 0x20 || u == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", u);
      r += b;
    } else {
      r += c;
    }
  }
  return r;
}

// characters [from, to) (0-based) of s, with "..." where it is cut
std::string cut(const std::string& s, const std::vector<size_t>& starts, size_t from, size_t to) {
  const size_t n = starts.size();
  const size_t b = from < n ? starts[from] : s.size();
  const size_t e = to < n ? starts[to] : s.size();
  return (from > 0 ? "..." : "") + one_line(s.substr(b, e - b)) + (to < n ? "..." : "");
}

// a name or key in a message: one line, at most kShown characters (then cut,
// with its length)
std::string shown(const std::string& s, bool with_length = true) {
  const std::vector<size_t> starts = char_starts(s);
  if (starts.size() <= kShown) return one_line(s);
  return cut(s, starts, 0, kShown) +
         (with_length ? " (" + std::to_string(starts.size()) + " characters)" : "");
}

// an expression in a message: the whole of it when it is short, else about
// kShown characters around position pos (1-based characters) and which ones
std::string expr_excerpt(const std::string& text, int pos) {
  const std::vector<size_t> starts = char_starts(text);
  const size_t n = starts.size();
  if (n <= kShown) return "\"" + one_line(text) + "\"";
  const size_t p = pos < 1 ? 0 : static_cast<size_t>(pos - 1);
  size_t from = p > kShown / 2 ? p - kShown / 2 : 0;
  if (from + kShown > n) from = n - kShown;
  const size_t to = from + kShown;
  return "\"" + cut(text, starts, from, to) + "\" (characters " + std::to_string(from + 1) + "-" +
         std::to_string(to) + " of " + std::to_string(n) + ")";
}

// the nodes of an expression's tree (numbers, names, operations, calls) not
// in `counted` (a definition's nodes count once, where it is defined), added
// to it
long node_count(const Expr& root, std::unordered_set<const Expr*>& counted) {
  long n = 0;
  std::vector<const Expr*> todo = {&root};
  while (!todo.empty()) {
    const Expr* e = todo.back();
    todo.pop_back();
    if (!counted.insert(e).second) continue;
    ++n;
    for (const auto& a : e->args)
      if (a) todo.push_back(a.get());
  }
  return n;
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
    throw ModelFileError(where(n.source()) + ": " + key + ": " + expr_excerpt(text, pos) +
                         ": position " + std::to_string(pos) + ": " + reason);
  }

  void check_keys(const toml::table& t, const std::string& prefix,
                  const std::vector<std::string>& accepted) const {
    for (auto&& [k, v] : t) {
      const std::string raw(k.str());
      const std::string name = shown(raw);
      if (index_of(accepted, raw) < 0)
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
    std::string s = *n.value<std::string>();
    // a NUL (written \u0000 in TOML) would cut the generated C++ and messages
    if (const size_t at = s.find('\0'); at != std::string::npos)
      fail(n, key,
           "the string contains a NUL character (\\u0000) at character " +
               std::to_string(char_starts(s.substr(0, at)).size() + 1) +
               ": not accepted in a model file (its strings are text without NUL)");
    return s;
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

  Expression expression(const toml::node& n, const std::string& key, const Scope& scope) const {
    Expression e;
    e.text = string_of(n, key);
    // a sanity cap on the parsed text (the budget is on the shared graph,
    // share_within_limit): a 64 MiB file does not fill the memory first
    try {
      e.tree = parse_expression(e.text, scope, static_cast<size_t>(kMaxParsedNodes - nodes_));
    } catch (const ExprError& err) {
      fail_expr(n, key, e.text, err.pos, err.reason);
    } catch (const ExprTooLarge& big) {
      fail_expr(n, key, e.text, big.pos,
                "the model's expressions are too long: more than " +
                    grouped_number(static_cast<size_t>(kMaxParsedNodes)) + " nodes as written (" +
                    grouped_number(static_cast<size_t>(nodes_)) +
                    " in the expressions before this one), the cap before common "
                    "subexpressions are shared (the budget, on the shared graph, is " +
                    grouped_number(kMaxGraphNodes) + " nodes; docs/models.md, \"Limits\")");
    }
    // as written: a definition's nodes once, where it is read
    nodes_ += node_count(*e.tree, counted_);
    return e;
  }

 private:
  std::string source_;
  mutable long nodes_ = 0;                           // of the expressions read so far
  mutable std::unordered_set<const Expr*> counted_;  // their nodes
};

// a coordinate's or parameter's name; seen: name -> key of its declaration
void check_symbol(const Reader& rd, const toml::node& n, const std::string& key,
                  const std::string& name, const char* what,
                  std::map<std::string, std::pair<std::string, std::string>>& seen) {
  const std::string q = "'" + shown(name) + "'";
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

const std::vector<std::string> kTopKeys = {"name",
                                           "description",
                                           "coordinates",
                                           "parameters",
                                           "definitions",
                                           "lagrangian",
                                           "constraints",
                                           "forces",
                                           "nonideal_forces",
                                           "energy",
                                           "conflated_lagrangian",
                                           "constraint_rank",
                                           "events"};
const std::vector<std::string> kTopRequired = {"name", "description", "coordinates", "lagrangian"};
const std::vector<std::string> kCoordKeys = {"name", "unit", "description"};
const std::vector<std::string> kCoordRequired = {"name", "unit"};
const std::vector<std::string> kParamKeys = {
    "name", "default", "derived", "unit", "description", "min", "max", "positive", "nonnegative"};
const std::vector<std::string> kParamRequired = {"name", "default or derived", "unit"};
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
                            const Expression& e, const Names& names, const char* what) {
  if (!uses(*e.tree, Op::rate))
    rd.fail_expr(n, key, e.text, 1,
                 std::string(what) + " depends on no rate (" +
                     joined(suffixed(names.coords, "_dot")) + "): it has no kinetic energy");
}

std::vector<Expression> read_forces(const Reader& rd, const toml::table& top, const char* key,
                                    const Names& names) {
  std::vector<Expression> f;
  const toml::node* n = top.get(key);
  if (n == nullptr) return f;
  const toml::table& t =
      rd.table_of(*n, key, "of expressions per coordinate, e.g. { theta = \"-c*theta_dot\" }");
  if (t.empty()) return f;
  f.resize(names.coords.size());
  const Scope scope{&names, Context::force, static_cast<int>(names.params.size())};
  for (auto&& [k, v] : t) {
    const std::string c(k.str());
    const std::string fk = std::string(key) + "." + shown(c);
    const int i = index_of(names.coords, c);
    if (i < 0)
      rd.fail(k.source().begin.line ? k.source() : v.source(), fk,
              "force for an unknown coordinate '" + shown(c) +
                  "' (coordinates: " + joined(names.coords) + ")");
    f[static_cast<size_t>(i)] = rd.expression(v, fk, scope);
  }
  return f;
}

// ---------------------------------------------------------------------------
// The parts of a model table, in the order parse_model_table reads them

// name -> {"coordinate" or "parameter", the key of its declaration}
using Declared = std::map<std::string, std::pair<std::string, std::string>>;

void read_name(const Reader& rd, const toml::table& tbl,
               const std::vector<std::string>& builtin_names, ModelSpec& s) {
  const toml::node& n = rd.require(tbl, "", "name", kTopRequired);
  s.name = rd.string_of(n, "name");
  bool ok = !s.name.empty() && s.name[0] >= 'a' && s.name[0] <= 'z';
  for (char c : s.name) ok = ok && ((c >= 'a' && c <= 'z') || is_digit(c) || c == '_');
  if (!ok)
    rd.fail(n, "name",
            "invalid model name '" + shown(s.name) +
                "': it must match [a-z][a-z0-9_]* (lower-case letters, digits and "
                "_, starting with a letter)");
  // the name begins the plugin cache's file names (at most 255 bytes)
  if (s.name.size() > kMaxModelName)
    rd.fail(n, "name",
            "the model name '" + shown(s.name, false) + "' is " + std::to_string(s.name.size()) +
                " characters long: at most " + std::to_string(kMaxModelName) +
                " are accepted (it names the plugin's files in the cache)");
  if (index_of(builtin_names, s.name) >= 0)
    rd.fail(n, "name",
            "'" + s.name + "' is the name of a built-in model (built-in: " + joined(builtin_names) +
                ")");
}

void read_description(const Reader& rd, const toml::table& tbl, ModelSpec& s) {
  const toml::node& n = rd.require(tbl, "", "description", kTopRequired);
  s.description = rd.string_of(n, "description");
  if (s.description.empty()) rd.fail(n, "description", "empty description");
  if (s.description.find_first_of("\n\r") != std::string::npos)
    rd.fail(n, "description", "the description must be one line");
}

void read_coordinates(const Reader& rd, const toml::table& tbl, ModelSpec& s, Names& names,
                      Declared& seen) {
  const toml::node& n = rd.require(tbl, "", "coordinates", kTopRequired);
  const toml::array& a =
      rd.array_of(n, "coordinates", "of tables, e.g. [ { name = \"x\", unit = \"m\" } ]");
  if (a.empty()) rd.fail(n, "coordinates", "empty: a model needs at least one coordinate");
  for (size_t i = 0; i < a.size(); ++i) {
    const std::string p = "coordinates[" + std::to_string(i) + "]";
    const toml::table& t = rd.table_of(a[i], p, "{ name = \"x\", unit = \"m\" }");
    rd.check_keys(t, p + ".", kCoordKeys);
    Coordinate c;
    const toml::node& nn = rd.require(t, p + ".", "name", kCoordRequired);
    c.name = rd.string_of(nn, p + ".name");
    check_symbol(rd, nn, p + ".name", c.name, "coordinate", seen);
    c.unit = unit_of(rd, t, p + ".", kCoordRequired);
    c.description = optional_string(rd, t, p + ".", "description");
    names.coords.push_back(c.name);
    s.coordinates.push_back(std::move(c));
  }
}

// a plain parameter's default (at dn, key prefix p): a number, or a constant
// expression of the parameters before it (values: their defaults), which may
// not be derived ones (derived[k]); returns its text ("" for a number)
std::string read_default(const Reader& rd, const toml::node& dn, const std::string& p, size_t j,
                         const Names& names, const std::vector<double>& values,
                         const std::vector<bool>& derived, Parameter& par) {
  if (dn.is_number()) {
    par.default_value = rd.number_of(dn, p + "default");
    return "";
  }
  if (!dn.is_string())
    rd.fail(
        dn, p + "default",
        std::string("expected a number or a string (a constant expression), got ") + type_name(dn));
  const Scope scope{&names, Context::default_value, static_cast<int>(j)};
  const Expression e = rd.expression(dn, p + "default", scope);
  if (const Expr* use = first_param_use(*e.tree, derived))
    rd.fail_expr(dn, p + "default", e.text, use->pos,
                 "'" + shown(names.params[static_cast<size_t>(use->index)]) +
                     "' is a derived parameter: a default is evaluated once, from the defaults, "
                     "and would not follow it; make this parameter derived too (derived = \"" +
                     one_line(e.text) + "\")");
  EvalFailure f;
  Env env;
  env.p = values.data();
  par.default_value = eval(*e.tree, env, &f);
  if (f.failed) rd.fail_expr(dn, p + "default", e.text, f.pos, f.reason);
  if (!std::isfinite(par.default_value))
    rd.fail_expr(dn, p + "default", e.text, 1,
                 "the default is not finite (" + short_number(par.default_value) + ")");
  return e.text;
}

// a derived parameter's expression (at vn, key prefix p): of any other
// parameters (its value at the defaults is found once all are read)
void read_derived(const Reader& rd, const toml::node& vn, const std::string& p, const Names& names,
                  Parameter& par) {
  const Scope scope{&names, Context::derived_param, static_cast<int>(names.params.size())};
  par.derived = rd.expression(vn, p + "derived", scope);
  par.derived_from = params_used(*par.derived.tree);
  if (par.derived_from.empty())
    rd.fail_expr(vn, p + "derived", par.derived.text, 1,
                 "uses no parameter: a constant is written as a default (default = \"" +
                     one_line(par.derived.text) + "\")");
}

// parameter j's default or derived expression, unit, description and range
// from its table t; values: the defaults of the parameters before it;
// derived[k]: whether parameter k is derived (a derived one's range is
// checked at the defaults by derive_defaults)
Parameter read_parameter(const Reader& rd, const toml::table& t, size_t j, const Names& names,
                         const std::vector<double>& values, const std::vector<bool>& derived) {
  const std::string p = "parameters[" + std::to_string(j) + "].";
  Parameter par;
  par.name = names.params[j];
  const toml::node* vn = t.get("derived");
  const toml::node* dn = vn ? t.get("default") : &rd.require(t, p, "default", kParamRequired);
  if (vn && dn)
    rd.fail(*vn, p + "derived",
            "a parameter has either a default (a number or a constant expression, evaluated "
            "once) or is derived (an expression of other parameters, evaluated per "
            "trajectory), not both");
  std::string default_text;
  if (vn)
    read_derived(rd, *vn, p, names, par);
  else
    default_text = read_default(rd, *dn, p, j, names, values, derived, par);
  par.unit = unit_of(rd, t, p, kParamRequired);
  par.description = optional_string(rd, t, p, "description");
  par.range = read_range(rd, t, p);
  if (vn == nullptr && !range_admits(par.range, par.default_value)) {
    const std::string reason = "the default " + short_number(par.default_value) +
                               " is outside the declared range (" + range_text(par.range) + ")";
    if (default_text.empty()) rd.fail(*dn, p + "default", reason);
    rd.fail_expr(*dn, p + "default", default_text, 1, reason);
  }
  return par;
}

// parameters: all names first (a default may only use earlier ones, but a
// later one named in it gets a precise message; a derived parameter may use
// any other), then the defaults in order, then the derived values
void read_parameters(const Reader& rd, const toml::table& tbl, ModelSpec& s, Names& names,
                     Declared& seen) {
  const toml::node* pn = tbl.get("parameters");
  if (pn == nullptr) return;
  const toml::array& a = rd.array_of(
      *pn, "parameters", "of tables, e.g. [ { name = \"m\", default = 1.0, unit = \"kg\" } ]");
  std::vector<const toml::table*> tabs;
  std::vector<const toml::node*> derived_nodes;
  std::vector<bool> derived;
  for (size_t j = 0; j < a.size(); ++j) {
    const std::string p = "parameters[" + std::to_string(j) + "]";
    const toml::table& t = rd.table_of(a[j], p, "{ name = \"m\", default = 1.0, unit = \"kg\" }");
    rd.check_keys(t, p + ".", kParamKeys);
    const toml::node& nn = rd.require(t, p + ".", "name", kParamRequired);
    const std::string name = rd.string_of(nn, p + ".name");
    check_symbol(rd, nn, p + ".name", name, "parameter", seen);
    names.params.push_back(name);
    tabs.push_back(&t);
    derived_nodes.push_back(t.get("derived"));
    derived.push_back(derived_nodes.back() != nullptr);
  }
  std::vector<double> values;
  for (size_t j = 0; j < tabs.size(); ++j) {
    Parameter par = read_parameter(rd, *tabs[j], j, names, values, derived);
    values.push_back(par.default_value);
    s.parameters.push_back(std::move(par));
  }
  // the derived parameters ordered, their values at the defaults found
  const DerivedProblem bad = derive_defaults(s);
  if (bad.param >= 0) {
    const size_t j = static_cast<size_t>(bad.param);
    rd.fail_expr(*derived_nodes[j], "parameters[" + std::to_string(j) + "].derived",
                 s.parameters[j].derived.text, bad.pos, bad.reason);
  }
}

// a definition's name: an identifier none of the model's names take
void check_definition_name(const Reader& rd, const toml::source_region& r, const std::string& key,
                           const std::string& name, const Names& names) {
  const bool taken = name == "t" || name == "pi" || find_function(name) ||
                     index_of(names.coords, name) >= 0 || index_of(names.params, name) >= 0 ||
                     ends_with(name, "_dot") || ends_with(name, "_ddot");
  if (!is_identifier(name))
    rd.fail(r, key,
            "invalid definition name '" + shown(name) +
                "': letters, digits and _, starting with a letter");
  if (taken)
    rd.fail(r, key,
            "'" + shown(name) + "' is taken: a definition needs a name of its own, not one of " +
                "the coordinates (" + joined(names.coords) + "), a name ending in _dot or _ddot " +
                "(the rates and accelerations), " +
                (names.params.empty() ? std::string()
                                      : "the parameters (" + joined(names.params) + "), ") +
                "t, pi or a function (" + function_list() + ")");
}

// [definitions]: name = "expression", parsed in the order of their uses
// (a TOML table keeps none), each with the model's names and the
// definitions before it; names.definitions and s.definitions get them
void read_definitions(const Reader& rd, const toml::table& tbl, ModelSpec& s, Names& names) {
  const toml::node* dn = tbl.get("definitions");
  if (dn == nullptr) return;
  const toml::table& t =
      rd.table_of(*dn, "definitions", "of named expressions, e.g. { v = \"x_dot*cos(theta)\" }");
  std::vector<std::string> defined, texts;
  std::vector<const toml::node*> nodes;
  for (auto&& [k, v] : t) {
    const std::string name(k.str());
    const std::string key = "definitions." + shown(name);
    check_definition_name(rd, k.source().begin.line ? k.source() : v.source(), key, name, names);
    defined.push_back(name);
    texts.push_back(rd.string_of(v, key));
    nodes.push_back(&v);
  }
  std::vector<size_t> order;
  try {
    order = definition_order(defined, texts);
  } catch (const DefinitionCycle& c) {
    rd.fail(*nodes[c.at], "definitions",
            joined(c.path, " -> ") +
                ": the definitions use each other in a cycle (a definition may use the ones "
                "that do not use it)");
  }
  const Scope scope{&names, Context::definition, static_cast<int>(names.params.size())};
  for (const size_t i : order) {
    Expression e = rd.expression(*nodes[i], "definitions." + shown(defined[i]), scope);
    names.definitions.emplace(defined[i], e.tree);
    s.definitions.push_back({defined[i], std::move(e)});
  }
}

void read_lagrangian(const Reader& rd, const toml::table& tbl, ModelSpec& s, const Names& names) {
  const int n_params = static_cast<int>(s.parameters.size());
  const toml::node& n = rd.require(tbl, "", "lagrangian", kTopRequired);
  s.lagrangian = rd.expression(n, "lagrangian", {&names, Context::lagrangian, n_params});
  check_lagrangian_rates(rd, n, "lagrangian", s.lagrangian, names, "the Lagrangian");
}

// what a constraint's expression (at en, key) must depend on, by its kind;
// an acceleration constraint must be affine in the accelerations
// (defaults: the parameters' values for the numerical check)
void check_constraint_expr(const Reader& rd, const toml::node& en, const std::string& key,
                           const Constraint& c, Context ctx, const Names& names,
                           const std::vector<double>& defaults) {
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
      // a position inside a definition is not one of this text: its start
      for (const std::string& w : identifiers_in(c.expr.text))
        if (const auto d = names.definitions.find(w);
            d != names.definitions.end() && uses(*d->second, Op::accel))
          where = 1;
      const int n_coords = static_cast<int>(names.coords.size());
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
}

// constraint l from its table node; cseen: constraint name -> its key
Constraint read_constraint(const Reader& rd, const toml::node& node, size_t l, const Names& names,
                           const std::vector<double>& defaults,
                           std::map<std::string, std::string>& cseen) {
  const int n_params = static_cast<int>(names.params.size());
  const std::string p = "constraints[" + std::to_string(l) + "]";
  const toml::table& t =
      rd.table_of(node, p, "{ name = \"c\", kind = \"velocity\", expr = \"...\" }");
  rd.check_keys(t, p + ".", kConstraintKeys);
  Constraint c;
  const toml::node& nn = rd.require(t, p + ".", "name", kConstraintKeys);
  c.name = rd.string_of(nn, p + ".name");
  if (!is_identifier(c.name))
    rd.fail(nn, p + ".name",
            "invalid constraint name '" + shown(c.name) +
                "': letters, digits and _, starting with a letter");
  if (cseen.count(c.name))
    rd.fail(nn, p + ".name",
            "duplicate constraint name '" + shown(c.name) + "' (also " + cseen[c.name] + ")");
  cseen[c.name] = p + ".name";
  const toml::node& kn = rd.require(t, p + ".", "kind", kConstraintKeys);
  const std::string kind = rd.string_of(kn, p + ".kind");
  const int k = index_of(kKinds, kind);
  if (k < 0)
    rd.fail(kn, p + ".kind",
            "unknown constraint kind '" + shown(kind) + "' (accepted: " + joined(kKinds) + ")");
  c.kind = static_cast<ConstraintKind>(k);
  const Context ctx = k == 0   ? Context::position
                      : k == 1 ? Context::velocity
                               : Context::acceleration;
  const toml::node& en = rd.require(t, p + ".", "expr", kConstraintKeys);
  const std::string key = p + ".expr";
  c.expr = rd.expression(en, key, {&names, ctx, n_params});
  check_constraint_expr(rd, en, key, c, ctx, names, defaults);
  return c;
}

// constraints, reordered position, velocity, acceleration (each kind in the
// order written); fewer than the coordinates
void read_constraints(const Reader& rd, const toml::table& tbl, ModelSpec& s, const Names& names) {
  const toml::node* cn = tbl.get("constraints");
  if (cn == nullptr) return;
  const int n_coords = static_cast<int>(s.coordinates.size());
  std::vector<double> defaults;
  for (const auto& p : s.parameters) defaults.push_back(p.default_value);
  const toml::array& a = rd.array_of(
      *cn, "constraints",
      "of tables, e.g. [ { name = \"c\", kind = \"velocity\", expr = \"x_dot - y\" } ]");
  std::vector<Constraint> by_kind[3];
  std::map<std::string, std::string> cseen;
  for (size_t l = 0; l < a.size(); ++l) {
    Constraint c = read_constraint(rd, a[l], l, names, defaults, cseen);
    by_kind[static_cast<int>(c.kind)].push_back(std::move(c));
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
void read_constraint_rank(const Reader& rd, const toml::table& tbl, ModelSpec& s) {
  const toml::node* rn = tbl.get("constraint_rank");
  if (rn == nullptr) return;
  const int m = static_cast<int>(s.constraints.size());
  const auto r = rn->value_exact<int64_t>();
  if (!rn->is_integer() || !r || *r < 1 || *r > m)
    rd.fail(*rn, "constraint_rank",
            "expected an integer from 1 to the number of constraints (" + std::to_string(m) +
                "): the rank of the constraint matrix at regular states, given when some "
                "constraints are redundant");
  s.constraint_rank = static_cast<int>(*r);
}

// forces, nonideal_forces, energy, conflated_lagrangian
void read_optional_expressions(const Reader& rd, const toml::table& tbl, ModelSpec& s,
                               const Names& names) {
  const int n_params = static_cast<int>(s.parameters.size());
  s.nonpotential_force = read_forces(rd, tbl, "forces", names);
  s.nonideal_force = read_forces(rd, tbl, "nonideal_forces", names);
  if (const toml::node* n = tbl.get("energy")) {
    if (n->is_string() && *n->value<std::string>() == "auto") {
      // the Jacobi integral, derived from the Lagrangian's tree
      std::string refused;
      s.energy = {"auto", jacobi_integral(static_cast<int>(names.coords.size()), s.lagrangian.tree,
                                          &refused)};
      if (!s.energy.tree)
        rd.fail(*n, "energy",
                "\"auto\" cannot derive the energy from this Lagrangian: " + refused +
                    " (write the energy as an expression instead)");
      s.energy_derived = true;
    } else {
      s.energy = rd.expression(*n, "energy", {&names, Context::energy, n_params});
    }
  }
  if (const toml::node* n = tbl.get("conflated_lagrangian")) {
    s.conflated_lagrangian =
        rd.expression(*n, "conflated_lagrangian", {&names, Context::conflated, n_params});
    check_lagrangian_rates(rd, *n, "conflated_lagrangian", s.conflated_lagrangian, names,
                           "the conflated Lagrangian");
  }
}

// [[events]] (docs/events.md): read and checked as a configuration's are,
// against the model's coordinates and parameters (their defaults), so that
// a model file is refused when it is read, not when a run compiles them
void read_events(const Reader& rd, const toml::table& tbl, ModelSpec& s) {
  const toml::node* n = tbl.get("events");
  if (!n) return;
  std::vector<std::string> coords, params;
  std::vector<double> values;
  for (const auto& c : s.coordinates) coords.push_back(c.name);
  for (const auto& p : s.parameters) {
    params.push_back(p.name);
    values.push_back(p.default_value);
  }
  try {
    s.events = read_event_tables(*n, "events");
    (void)compile_event_table(s.events, coords, params, values, {}, &s);
  } catch (const ConfigError& e) {
    rd.fail(*n, e.key(), e.reason());
  }
}

// the model's trees made one shared graph (expr/graph.hpp), after every
// check that reports a position in an expression; refused above the budget
void share_within_limit(const Reader& rd, const toml::table& tbl, ModelSpec& s) {
  const GraphSize g = share_expressions(s);
  if (g.nodes <= g.limit) return;
  // named at the largest part (each part is a top-level key)
  const GraphPart* largest = &g.parts.front();
  for (const GraphPart& p : g.parts)
    if (p.nodes > largest->nodes) largest = &p;
  const toml::node* at = tbl.get(largest->name);
  rd.fail(at ? at->source() : tbl.source(), largest->name,
          "the model's expressions are too large: " + grouped_number(g.nodes) +
              " graph nodes after sharing common subexpressions (" + parts_text(g) +
              "), more than the limit of " + grouped_number(g.limit) +
              " (distinct numbers, names, operations and function calls of all expressions "
              "together): the generated C++ and its compile time grow with them "
              "(docs/models.md, \"Limits\")");
}

}  // namespace
}  // namespace model_file

ModelSpec parse_model_table(const toml::table& tbl, const std::string& source,
                            const std::vector<std::string>& builtin_names) {
  const model_file::Reader rd(source);
  ModelSpec s;
  s.source = source;
  rd.check_keys(tbl, "", model_file::kTopKeys);
  model_file::read_name(rd, tbl, builtin_names, s);
  model_file::read_description(rd, tbl, s);
  model_file::Names names;
  model_file::Declared seen;
  model_file::read_coordinates(rd, tbl, s, names, seen);
  model_file::read_parameters(rd, tbl, s, names, seen);
  model_file::read_definitions(rd, tbl, s, names);
  model_file::read_lagrangian(rd, tbl, s, names);
  model_file::read_constraints(rd, tbl, s, names);
  model_file::read_constraint_rank(rd, tbl, s);
  model_file::read_optional_expressions(rd, tbl, s, names);
  model_file::read_events(rd, tbl, s);
  model_file::share_within_limit(rd, tbl, s);
  return s;
}

ModelSpec load_model_text(const std::string& text, const std::string& source,
                          const std::vector<std::string>& builtin_names) {
  toml::table tbl;
  try {
    tbl = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    std::string where = source;
    if (b.line > 0) where += ":" + std::to_string(b.line) + ":" + std::to_string(b.column);
    throw ModelFileError(where + ": not valid TOML: " + std::string(e.description()));
  }
  return parse_model_table(tbl, source, builtin_names);
}

ModelSpec load_model_file(const std::string& path, const std::vector<std::string>& builtin_names) {
  return load_model_text(read_model_file_text(path), path, builtin_names);
}

}  // namespace nholo
