// nholo/host/model_language/model_header.cpp — the C++ header generated from a
// model (generate_model_header, host/model_language/model_file.hpp).
//
// struct nholo::user_models::UserModel, the Model concept of kernels/model.hpp:
// name, description, source, n, m_position, m_velocity, m_acceleration,
// n_params, coordinates[n], coordinate_units[n], constraint_names[m] ({nullptr}
// when m = 0), param_info[n_params] (the sentinel {nullptr, 0, nullptr,
// nullptr} when n_params = 0), Params {double v[max(n_params, 1)]; and
// double k[K] when K > 0 parameter-only subexpressions are hoisted},
// make_params (filling k), lagrangian, hand_dynamics (the symbolic M and F,
// see expr/derivative.cpp; absent, with a comment saying why, above
// kMaxSymbolicNodes or kMaxSymbolicDepth there),
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
// unnamed. In every function, a node that the function's trees use more
// than once (a definition named twice, the symbolic derivatives' common
// subexpressions) is computed once into a temporary c<k> (Temporaries): a
// model without definitions has them in hand_dynamics only.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "host/model_language/code_printer.hpp"
#include "host/model_language/expr/analysis.hpp"
#include "host/model_language/expr/derivative.hpp"
#include "host/model_language/function_body.hpp"
#include "host/model_language/model_file.hpp"

namespace nholo {

namespace model_file {
namespace {

// the header's text, written a line at a time: line("...")
struct HeaderText {
  std::string text;
  void operator()(const std::string& l) { text += l + "\n"; }
};

// Parameter-only subexpressions with a function, a power or a division
// (m g sin(alpha), m / 2) are computed once, by make_params, into Params::k:
// every maximal one of the printed trees gets a slot (one per distinct
// printed text), and the printer prints p.k[j] for it. The same operations
// in the same order as before, so the values are the same bits. Within such
// a subtree, a costly node that it uses more than once (a definition of
// parameters) gets a slot of its own first, which the slot that contains it
// reads: printed once, not once per use.
class Hoister {
 public:
  // the maximal hoistable subtrees of e
  void add(const Expr& e) {
    if (!seen_.insert(&e).second) return;
    if (!state_(e) && costly_(e) && param_(e)) {
      slot(e);
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

  // e's slot (e hoistable); first, when e uses a node twice (a definition
  // of parameters), a slot for each such costly node, inner ones first
  void slot(const Expr& e) {
    if (names_.count(&e)) return;
    std::unordered_map<const Expr*, int> parents;
    std::vector<const Expr*> post;  // post-order, e last
    std::vector<std::pair<const Expr*, size_t>> stack = {{&e, 0}};
    parents[&e] = 1;
    bool shared = false;
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      if (next < n->args.size() && !names_.count(n)) {
        const Expr* a = n->args[next++].get();
        if (++parents[a] == 1)
          stack.push_back({a, 0});
        else
          shared = true;
      } else {
        post.push_back(n);
        stack.pop_back();
      }
    }
    if (shared)
      for (const Expr* n : post)
        if (n != &e && parents[n] > 1 && costly_(*n) && !names_.count(n)) slot(*n);
    const std::string text = print(e, &names_).text;
    auto it = slot_.find(text);
    if (it == slot_.end()) {
      it = slot_.emplace(text, static_cast<int>(texts_.size())).first;
      texts_.push_back(text);
    }
    names_[&e] = {"p.k[" + std::to_string(it->second) + "]", false};
  }

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
// order where each comes after the ones it uses; a large one in parts
// (function_body.hpp): NAME_part0 ... NAME_partK, each its own function, called
// in turn by NAME with the arrays that carry values between them
// (fname: hand_dynamics from the Lagrangian, conflated_hand_dynamics from
// the conflated Lagrangian)
void hand_dynamics_fn(const ModelSpec& s, const char* fname, const DynamicsTrees& d,
                      const TempNames& hoisted, size_t part_characters, HeaderText& line) {
  const int n = static_cast<int>(s.coordinates.size());
  const std::string of =
      std::string(fname) == "hand_dynamics" ? "the Lagrangian" : "the conflated Lagrangian";
  line("");
  if (!d.refused.empty()) {
    line("  // no " + std::string(fname) + " from " + of + ": " + d.refused +
         "; the engine differentiates it by AD");
    return;
  }
  std::vector<FunctionOutput> outputs;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j <= i; ++j)
      outputs.push_back({d.mass[static_cast<size_t>(i * n + j)].get(),
                         "M(" + std::to_string(i) + ", " + std::to_string(j) + ")",
                         j < i ? "M(" + std::to_string(j) + ", " + std::to_string(i) + ")" : ""});
  for (int i = 0; i < n; ++i)
    outputs.push_back({d.force[static_cast<size_t>(i)].get(), "F[" + std::to_string(i) + "]", ""});
  const FunctionBody body = function_body(outputs, hoisted, part_characters);
  Uses u;
  for (const Expr* e : body.order) {
    u.p = u.p || e->op == Op::param || hoisted.count(e) > 0;
    u.q = u.q || e->op == Op::coord;
    u.qd = u.qd || e->op == Op::rate;
    u.t = u.t || e->op == Op::time;
  }
  const std::string name = fname;
  const std::string args = arg("const Params&", "p", u.p) + ", " +
                           arg("const Vec<S, n>&", "q", u.q) + ", " +
                           arg("const Vec<S, n>&", "qd", u.qd) + ", " + arg("const S&", "t", u.t) +
                           ", Mat<S, n, n>& M, Vec<S, n>& F";
  line("  // M = d2L/dqd2 and F = dL/dq - (d2L/dqd dq) qd - d2L/dqd dt, differentiated");
  line("  // symbolically by nholo from " + of + " (the engine adds the forces)");
  if (body.parts.size() == 1) {
    line("  template <class S>");
    line("  NHOLO_HDI static void " + name + "(" + args + ") {");
    for (const std::string& l : body.parts[0]) line(l);
    line("  }");
    return;
  }
  const std::string parts = std::to_string(body.parts.size());
  line("  // in " + parts + " parts, each a function of its own: one function of this size");
  line("  // compiles in a time that grows faster than its length; xs and xd carry the");
  line("  // values a part computes and a later part reads (nholo's function_body.hpp)");
  line("  static constexpr int " + name + "_parts = " + parts + ";");
  const std::string part_args =
      "[[maybe_unused]] const Params& p, [[maybe_unused]] const Vec<S, n>& q, "
      "[[maybe_unused]] const Vec<S, n>& qd, [[maybe_unused]] const S& t, "
      "[[maybe_unused]] Mat<S, n, n>& M, [[maybe_unused]] Vec<S, n>& F, "
      "[[maybe_unused]] S* xs, [[maybe_unused]] double* xd";
  for (size_t k = 0; k < body.parts.size(); ++k) {
    line("  template <class S>");
    line("  NHOLO_HD NHOLO_NOINLINE static void " + name + "_part" + std::to_string(k) + "(" +
         part_args + ") {");
    for (const std::string& l : body.parts[k]) line(l);
    line("  }");
  }
  line("  template <class S>");
  line("  NHOLO_HDI static void " + name + "(const Params& p, const Vec<S, n>& q, " +
       "const Vec<S, n>& qd, const S& t, Mat<S, n, n>& M, Vec<S, n>& F) {");
  line("    S xs[" + std::to_string(std::max(body.s_slots, 1)) + "];");
  line("    double xd[" + std::to_string(std::max(body.double_slots, 1)) + "];");
  for (size_t k = 0; k < body.parts.size(); ++k)
    line("    " + name + "_part" + std::to_string(k) + "(p, q, qd, t, M, F, xs, xd);");
  line("  }");
}

// every maximal parameter-only subexpression of the printed trees, in the
// order of the header (Params::k)
void hoist_parameter_subexpressions(Hoister& hoist, const ModelSpec& s, const DynamicsTrees& dyn,
                                    const DynamicsTrees& dyn_conflated) {
  std::vector<const Expr*> roots;
  for (const Expression* e : {&s.lagrangian, &s.energy, &s.conflated_lagrangian})
    if (e->tree) roots.push_back(e->tree.get());
  for (const auto& c : s.constraints)
    if (c.expr.tree) roots.push_back(c.expr.tree.get());
  for (const auto* f : {&s.nonpotential_force, &s.nonideal_force})
    for (const auto& e : *f)
      if (e.tree) roots.push_back(e.tree.get());
  for (const DynamicsTrees* d : {&dyn, &dyn_conflated}) {
    for (const auto& e : d->mass)
      if (e) roots.push_back(e.get());
    for (const auto& e : d->force)
      if (e) roots.push_back(e.get());
  }
  for (const Expr* r : roots) hoist.add(*r);
}

// the header's start: includes, the struct and its constants up to n_params
void header_begin(const ModelSpec& s, HeaderText& line) {
  const int n = static_cast<int>(s.coordinates.size());
  const int np = static_cast<int>(s.parameters.size());
  line("// generated by nholo from " + comment_text(s.source) + " \xE2\x80\x94 do not edit");
  line("#pragma once");
  line("");
  // angle brackets: found on the include path only, never beside the
  // including file or in the current folder (NVRTC compiles the GPU module
  // from memory and would otherwise look in the folder nholo runs in)
  line("#include <kernels/expr_math.hpp>");
  line("#include <kernels/linalg.hpp>");
  line("#include <kernels/model.hpp>");
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
  // (kernels/formulations/udwadia_kalaba.hpp, ConstantMassCache)
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
}

// coordinates, coordinate_units, constraint_names, param_info
void name_tables(const ModelSpec& s, HeaderText& line) {
  const int n = static_cast<int>(s.coordinates.size());
  const int m = static_cast<int>(s.constraints.size());
  const int np = static_cast<int>(s.parameters.size());
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
}

// struct Params and make_params (which fills k, the hoisted subexpressions)
void params_struct(const ModelSpec& s, const Hoister& hoist, HeaderText& line) {
  const int np = static_cast<int>(s.parameters.size());
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
}

// an S-valued function of (p, q, qd, t)
void scalar_fn(const char* fname, const Expression& e, const TempNames* hoisted, HeaderText& line) {
  const Uses u = uses_of({&e});
  const Temporaries tmp(
      e.tree ? std::vector<const Expr*>{e.tree.get()} : std::vector<const Expr*>{}, *hoisted);
  line("");
  line("  template <class S>");
  line(std::string("  NHOLO_HDI static S ") + fname + "(" + arg("const Params&", "p", u.p) + ", " +
       arg("const Vec<S, n>&", "q", u.q) + ", " + arg("const Vec<S, n>&", "qd", u.qd) + ", " +
       arg("const S&", "t", u.t) + ") {");
  for (const std::string& l : tmp.lines) line(l);
  line("    return " + returned_value(e, &tmp.names) + ";");
  line("  }");
}

// a Vec-valued one: the rows exprs
void vector_fn(const char* fname, const std::vector<const Expression*>& rows, bool with_qd,
               bool with_qdd, const std::string& size, const TempNames* hoisted, HeaderText& line) {
  const Uses u = uses_of(rows);
  std::vector<const Expr*> roots;
  for (const Expression* e : rows)
    if (e->tree) roots.push_back(e->tree.get());
  const Temporaries tmp(roots, *hoisted);
  std::string args = arg("const Params&", "p", u.p) + ", " + arg("const Vec<S, n>&", "q", u.q);
  if (with_qd) args += ", " + arg("const Vec<S, n>&", "qd", u.qd);
  if (with_qdd) args += ", " + arg("const Vec<S, n>&", "qdd", u.qdd);
  args += ", " + arg("const S&", "t", u.t);
  line("");
  line("  template <class S>");
  line("  NHOLO_HDI static Vec<S, " + size + "> " + fname + "(" + args + ") {");
  for (const std::string& l : tmp.lines) line(l);
  line("    Vec<S, " + size + "> r;");
  for (size_t l = 0; l < rows.size(); ++l)
    line("    r[" + std::to_string(l) + "] = " + returned_value(*rows[l], &tmp.names) + ";");
  line("    return r;");
  line("  }");
}

// nonpotential_force, nonideal_force: one row per coordinate (none: no function)
void force_fn(const char* fname, const std::vector<Expression>& f, const TempNames* hoisted,
              HeaderText& line) {
  if (f.empty()) return;
  std::vector<const Expression*> rows;
  for (const auto& e : f) rows.push_back(&e);
  vector_fn(fname, rows, true, false, "n", hoisted, line);
}

// the model's functions: lagrangian, hand_dynamics, the constraints of each
// kind, the forces, energy, conflated_lagrangian, conflated_hand_dynamics
void model_functions(const ModelSpec& s, const DynamicsTrees& dyn,
                     const DynamicsTrees& dyn_conflated, const Hoister& hoist,
                     size_t part_characters, HeaderText& line) {
  const TempNames* hoisted = &hoist.names();
  scalar_fn("lagrangian", s.lagrangian, hoisted, line);
  if (s.lagrangian.tree) hand_dynamics_fn(s, "hand_dynamics", dyn, hoist.names(), part_characters, line);
  const char* kind_fn[3] = {"position_constraints", "velocity_constraints",
                            "acceleration_constraints"};
  const char* kind_size[3] = {"m_position", "m_velocity", "m_acceleration"};
  for (int k = 0; k < 3; ++k) {
    std::vector<const Expression*> rows;
    for (const auto& c : s.constraints)
      if (static_cast<int>(c.kind) == k) rows.push_back(&c.expr);
    if (!rows.empty()) vector_fn(kind_fn[k], rows, k >= 1, k == 2, kind_size[k], hoisted, line);
  }
  force_fn("nonpotential_force", s.nonpotential_force, hoisted, line);
  force_fn("nonideal_force", s.nonideal_force, hoisted, line);
  if (s.energy.tree) scalar_fn("energy", s.energy, hoisted, line);
  if (s.conflated_lagrangian.tree) {
    scalar_fn("conflated_lagrangian", s.conflated_lagrangian, hoisted, line);
    hand_dynamics_fn(s, "conflated_hand_dynamics", dyn_conflated, hoist.names(), part_characters,
                     line);
  }
}

}  // namespace
}  // namespace model_file

std::string generate_model_header(const ModelSpec& s, size_t part_characters) {
  // the symbolic M and F of the Lagrangian (hand_dynamics) and of the
  // conflated one (conflated_hand_dynamics), unless too large
  const int n = static_cast<int>(s.coordinates.size());
  const model_file::DynamicsTrees dyn = model_file::dynamics_trees(n, s.lagrangian.tree),
                                  dyn_conflated =
                                      model_file::dynamics_trees(n, s.conflated_lagrangian.tree);
  model_file::Hoister hoist;
  model_file::hoist_parameter_subexpressions(hoist, s, dyn, dyn_conflated);
  model_file::HeaderText line;
  model_file::header_begin(s, line);
  model_file::name_tables(s, line);
  model_file::params_struct(s, hoist, line);
  model_file::model_functions(s, dyn, dyn_conflated, hoist, part_characters, line);
  line("};");
  line("");
  line("}  // namespace nholo::user_models");
  return line.text;
}

}  // namespace nholo
