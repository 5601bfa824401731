// nholo/host/model_language/model_file.hpp — models described in TOML (docs/models.md):
// coordinates, parameters, a Lagrangian and constraints written as
// expressions, checked here and turned into a C++ model header (the Model
// concept of kernels/model.hpp) that host/model_files/plugin.hpp compiles into a plugin.
//
//   ModelSpec s = load_model_file(path, builtin_names);       // a file
//   ModelSpec s = parse_model_table(tbl, source, builtin_names);  // [model] in a config
//   (its description, ModelInfo: model_info_from_spec, host/config/model_catalog.hpp)
//   std::string h = generate_model_header(s); // C++ text, struct nholo::user_models::UserModel
//
// Any problem throws ModelFileError, whose message names the file, the line
// and column of the TOML value, the key, the expression and the position in
// it (1-based characters), e.g.
//   sleigh.toml:12:14: lagrangian: "m/2*(x_dot^2 + yy_dot^2)": position 16:
//   unknown name 'yy_dot' (coordinates: x, y, theta; rates: x_dot, ...)
// Nothing is compiled or written by this file's functions.
//
// Expressions (docs/models.md, "Grammar"): numbers (1, 2.5, 1e-3), names,
// + - * / ^ (right-associative, binds tighter than unary minus: -x^2 = -(x^2)),
// parentheses and the functions sin cos tan exp log sqrt abs sign atan2 pow
// sinh cosh tanh. Names: the coordinates q, their rates q_dot, their
// accelerations q_ddot (acceleration constraints only), the parameters, time t
// and the constant pi. User text never reaches the compiler: the generated
// header is printed from the parsed expression tree.
#pragma once

#include <toml++/toml.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "host/model_language/event_config.hpp"
#include "kernels/model.hpp"

namespace nholo {

class ModelFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace model_file {

// The parsed expression tree (opaque outside host/model_language/: expr/tree.hpp).
struct Expr;
using ExprPtr = std::shared_ptr<const Expr>;

struct Expression {
  std::string text;  // as written
  ExprPtr tree;      // parsed and checked
};

struct Coordinate {
  std::string name, unit, description;
};

struct Parameter {
  std::string name, unit, description;
  double default_value = 0;  // a number, or a constant expression of numbers, pi
                             // and the parameters declared before it; for a
                             // derived parameter its value at the defaults
  ParamRange range;          // min / max / positive / nonnegative
  // A derived parameter (key `derived`): its expression of the other
  // parameters, re-evaluated per trajectory from the values in force
  // (derive_parameters); an empty text for a plain parameter.
  Expression derived;
  std::vector<int> derived_from;  // the parameters `derived` uses, declaration order
};

// a named subexpression ([definitions]): every expression that names it
// shares its tree
struct Definition {
  std::string name;
  Expression expr;
};

struct Constraint {
  std::string name;
  ConstraintKind kind = ConstraintKind::velocity;
  Expression expr;  // = 0
};

}  // namespace model_file

struct ModelSpec {
  std::string source;  // the model file's path, or "CONFIG [model]" when inline
  std::string name, description;
  std::vector<model_file::Coordinate> coordinates;
  std::vector<model_file::Parameter> parameters;
  // [definitions], each after the ones it uses
  std::vector<model_file::Definition> definitions;
  // the derived parameters (indices into parameters), each after every
  // derived parameter it uses
  std::vector<int> derived_order;
  model_file::Expression lagrangian;
  // ordered position, velocity, acceleration (as the Model concept wants),
  // each kind in the order written
  std::vector<model_file::Constraint> constraints;
  int m_position = 0, m_velocity = 0, m_acceleration = 0;
  int constraint_rank = 0;  // > 0: declared (redundant rows), else m
  // per coordinate; an empty text means 0; empty vectors: none declared
  std::vector<model_file::Expression> nonpotential_force;
  std::vector<model_file::Expression> nonideal_force;
  model_file::Expression energy;  // empty text: none
  // energy = "auto": `energy` is the Jacobi integral sum_i qd_i dL/dqd_i - L,
  // derived from the Lagrangian (its text "auto")
  bool energy_derived = false;
  model_file::Expression conflated_lagrangian;  // empty text: none
  // [[events]] declared by the model (docs/events.md): every run of the
  // model has them, before its configuration's own
  std::vector<EventConfig> events;
};

namespace model_file {
// The value of e at the state (q, qd, qdd, t), qdd empty meaning zeros, with
// the parameters `params` in declaration order (empty: their defaults), in
// double precision; NaN or inf where the expression is undefined (log of a
// negative number, a division by zero). An empty expression is 0. Throws
// std::invalid_argument when a vector has the wrong size.
double evaluate(const ModelSpec& s, const Expression& e, const std::vector<double>& q,
                const std::vector<double>& qd, const std::vector<double>& qdd, double t,
                const std::vector<double>& params = {});

// The derived parameters of s evaluated from `params` (one value per
// parameter, declaration order; the plain ones the values in force) and
// written into it, in derived_order, in double precision as evaluate()
// evaluates: NaN or inf where an expression is undefined. Throws
// std::invalid_argument when params has the wrong size.
void derive_parameters(const ModelSpec& s, std::vector<double>& params);

// M = d2L/dqd2 (n x n, row-major) and the Lagrangian's part of
// F = dL/dq - (d2L/dqd dq) qd - d2L/dqd dt (n), differentiated symbolically
// from the Lagrangian's tree: trees that share their common subexpressions,
// with what is structurally zero folded (docs/models.md, "Symbolic
// derivatives"). `nodes`: distinct nodes of all of them. Empty, with the
// reason in `refused`, when the spec has no Lagrangian, its tree is more than
// 10,000 levels deep or M and F would have more than 400,000 distinct nodes (the
// generated header then keeps AD). Their texts name the entry
// (d2L/dx_dot dy_dot, F_x); evaluate() evaluates them.
struct SymbolicDynamics {
  std::vector<Expression> mass;
  std::vector<Expression> force;
  size_t nodes = 0;
  std::string refused;
};
SymbolicDynamics symbolic_dynamics(const ModelSpec& s);

// Why the model's energy (the Jacobi integral) is not expected to be
// conserved along its motions, one phrase each; empty: it is expected to be.
// Reasons: the Lagrangian depends on t explicitly; non-potential or
// non-ideal forces; a constraint that depends on t (rheonomic); a velocity
// constraint not homogeneous of degree 1 in the rates (checked at random
// states: g(q, s qd) = s g(q, qd)), whose ideal force does work; acceleration
// constraints (their forces may do work).
std::vector<std::string> energy_not_conserved(const ModelSpec& s);

// The size of the model's expressions as one graph, the budget of
// docs/models.md "Limits": structurally equal subexpressions are one node
// (within an expression and across them), so `nodes` counts the distinct
// numbers, names, operations and function calls of all expressions
// together. Each part (lagrangian, constraints and each of them, forces,
// nonideal_forces, energy, conflated_lagrangian, events) counts its own
// distinct nodes, shared ones included, so the parts add up to more than
// `nodes` when they share. A model file is refused above `limit`.
struct GraphPart {
  std::string name;
  size_t nodes = 0;
  std::vector<GraphPart> items;  // the constraints, one by one
};
struct GraphSize {
  size_t nodes = 0;
  size_t limit = 0;
  std::vector<GraphPart> parts;
};
GraphSize graph_size(const ModelSpec& s);
// "lagrangian 3,604, constraints 1,782 (roll 900, slip 882), energy 3,604"
std::string parts_text(const GraphSize& g);
// 8998 -> "8,998"
std::string grouped_number(size_t v);
// Whether symbolic_dynamics gives M and F (its `refused` empty), without
// building their texts.
bool has_symbolic_dynamics(const ModelSpec& s);
}  // namespace model_file

// A model file (TOML), its text (`source` names it in messages) or a [model]
// table; builtin_names: names a model file may not take. Throws ModelFileError.
// Limits (docs/models.md, "Limits"): a model file is a regular file of at most
// 64 MiB; a name of at most 64 characters; no NUL in any string; at most
// 100,000 distinct expression nodes in all of a model's expressions together
// after sharing (graph_size), and 2,000,000 as written.
ModelSpec load_model_file(const std::string& path, const std::vector<std::string>& builtin_names);
ModelSpec load_model_text(const std::string& text, const std::string& source,
                          const std::vector<std::string>& builtin_names);
// The text of the model file at path, checked as load_model_file does (a
// regular file of at most 64 MiB; a FIFO does not block). Throws ModelFileError.
std::string read_model_file_text(const std::string& path);
ModelSpec parse_model_table(const toml::table& tbl, const std::string& source,
                            const std::vector<std::string>& builtin_names);

// The model as a C++ header: `struct nholo::user_models::UserModel` with the
// members of the Model concept (kernels/model.hpp), templated on the scalar
// type, using only kernels/ headers (and kernels/expr_math.hpp). Deterministic:
// the same spec gives the same text (the plugin cache hashes it). A large
// symbolic M and F is written in parts of about part_characters of code each
// (host/model_language/function_body.hpp; 0: its default, 10,000), the same
// arithmetic as one function.
std::string generate_model_header(const ModelSpec& s, size_t part_characters = 0);

}  // namespace nholo
