// nholo/host/model_language/expr/parser.hpp — what an expression may use (Scope)
// and the parser that turns an expression's text into its checked tree.
// Internal to host/model_language/.
#pragma once

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
  event,  // an event function g(t, q, qd) of the run config ([[events]])
};

struct Names {
  std::vector<std::string> coords, params;
};

struct Scope {
  const Names* names;
  Context ctx;
  int visible_params;  // parameters 0 .. visible_params-1 may be used

  // a parameter's default or derived value: no state, no time
  bool constant() const { return ctx == Context::default_value || ctx == Context::derived_param; }
  bool allows_q() const { return !constant(); }
  bool allows_qd() const { return !constant() && ctx != Context::position; }
  bool allows_qdd() const { return ctx == Context::acceleration; }
  bool allows_t() const { return !constant(); }
};

// ---------------------------------------------------------------------------
// Parsing

// a malformed expression: the position (1-based characters) and the reason
struct ExprError {
  int pos;
  std::string reason;
};

// The tree of `text` with every name resolved in `scope`; throws ExprError.
ExprPtr parse_expression(const std::string& text, const Scope& scope);

}  // namespace nholo::model_file
