// nholo/host/model_language/derived_params.hpp — the dependencies of a model's
// derived parameters (docs/models.md, "Derived parameters"): the parameters an
// expression uses, and an order of the derived parameters in which each
// follows the derived parameters it uses, or the cycle that leaves none;
// their values at the defaults.
// Internal to host/model_language/ (the model-file reader's checks,
// model_file.cpp).
#pragma once

#include <string>
#include <vector>

#include "host/model_language/expr/tree.hpp"
#include "host/model_language/model_file.hpp"

namespace nholo::model_file {

// The parameters e names (their indices, ascending, each once).
std::vector<int> params_used(const Expr& e);

// The node of e that names a parameter j with which[j] and comes first in its
// text (the least position); nullptr when e names none.
const Expr* first_param_use(const Expr& e, const std::vector<bool>& which);

// derived[j]: whether parameter j is derived; uses[j]: the parameters its
// expression uses (empty for a plain one). `order`: the derived parameters,
// each after every derived parameter it uses (declaration order where
// nothing constrains it); when they cannot be ordered, `order` is empty and
// `cycle` names one cycle j0, j1, ..., j0 (j0 uses j1, ...).
struct DerivationOrder {
  std::vector<int> order;
  std::vector<int> cycle;
};
DerivationOrder derivation_order(const std::vector<bool>& derived,
                                 const std::vector<std::vector<int>>& uses);

// The derived parameters of s (read, with their derived_from; the plain ones'
// default_value found) ordered into s.derived_order, and their values at the
// defaults into their default_value. The first problem — a parameter that
// uses itself, a cycle, an expression undefined at the defaults, a value
// outside the parameter's range — is returned: the derived parameter whose
// expression to blame (param, -1 when none), the position in it (1-based
// characters) and the reason.
struct DerivedProblem {
  int param = -1;
  int pos = 1;
  std::string reason;
};
DerivedProblem derive_defaults(ModelSpec& s);

}  // namespace nholo::model_file
