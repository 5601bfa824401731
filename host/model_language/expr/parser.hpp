// nholo/host/model_language/expr/parser.hpp — what an expression may use (Scope)
// and the parser that turns an expression's text into its checked tree.
// Internal to host/model_language/.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "host/model_language/expr/tree.hpp"

namespace nholo::model_file {

// ---------------------------------------------------------------------------
// Names an expression may use

enum class Context {
  default_value,  // a parameter's default
  derived_param,  // a derived parameter's expression (of the other parameters)
  lagrangian,
  conflated,
  energy,
  position,
  velocity,
  acceleration,
  force,
  event,       // an event function g(t, q, qd) of the run config ([[events]])
  definition,  // a named subexpression ([definitions]): any of q, qd, qdd, t
};

struct Names {
  std::vector<std::string> coords, params;
  // the definitions parsed so far, name -> tree: a definition's name stands
  // for its tree (the same node, shared), where the scope allows what the
  // tree uses
  std::map<std::string, ExprPtr> definitions;
};

struct Scope {
  const Names* names;
  Context ctx;
  int visible_params;  // parameters 0 .. visible_params-1 may be used

  // a parameter's default or derived value: no state, no time
  bool constant() const { return ctx == Context::default_value || ctx == Context::derived_param; }
  bool allows_q() const { return !constant(); }
  bool allows_qd() const { return !constant() && ctx != Context::position; }
  bool allows_qdd() const { return ctx == Context::acceleration || ctx == Context::definition; }
  bool allows_t() const { return !constant(); }
};

// ---------------------------------------------------------------------------
// Parsing

// a malformed expression: the position (1-based characters) and the reason
struct ExprError {
  int pos;
  std::string reason;
};

// more nodes than the caller allows (parse_expression's max_nodes): where
// the parser stopped (1-based characters)
struct ExprTooLarge {
  int pos;
};
constexpr size_t kNoNodeLimit = static_cast<size_t>(-1);

// The tree of `text` with every name resolved in `scope` (a definition's
// name gives its tree itself, not a copy); throws ExprError,
// or ExprTooLarge when the tree would have more than max_nodes nodes (or the
// text more than 4 tokens per node allowed: it is not tokenized to its end,
// so that a text of megabytes is refused before it fills the memory).
ExprPtr parse_expression(const std::string& text, const Scope& scope,
                         size_t max_nodes = kNoNodeLimit);

// The names in text that are identifiers (not numbers, e.g. the e of 1e3),
// in order, with repetitions: the definitions a definition depends on.
std::vector<std::string> identifiers_in(const std::string& text);

// Definitions that use one another in a circle: path, e.g. {a, b, a};
// at: the index (in definition_order's input) of the first of them.
struct DefinitionCycle {
  std::vector<std::string> path;
  size_t at;
};

// The order to parse definitions (names[i] = texts[i]) in: each after the
// definitions its text names. Throws DefinitionCycle.
std::vector<size_t> definition_order(const std::vector<std::string>& names,
                                     const std::vector<std::string>& texts);

}  // namespace nholo::model_file
