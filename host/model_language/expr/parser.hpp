// nholo/host/model_language/expr/parser.hpp — what an expression may use (Scope)
// and the parser that turns an expression's text into its checked tree.
// Internal to host/model_language/.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "host/model_language/expr/tree.hpp"

namespace nholo::model_file {

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
  event,  // an event function g(t, q, qd) of the run config ([[events]])
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

// The tree of `text` with every name resolved in `scope`; throws ExprError,
// or ExprTooLarge when the tree would have more than max_nodes nodes (or the
// text more than 4 tokens per node allowed: it is not tokenized to its end,
// so that a text of megabytes is refused before it fills the memory).
ExprPtr parse_expression(const std::string& text, const Scope& scope,
                         size_t max_nodes = kNoNodeLimit);

}  // namespace nholo::model_file
