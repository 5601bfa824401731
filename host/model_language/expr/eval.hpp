// nholo/host/model_language/expr/eval.hpp — evaluation of an expression tree in
// double precision (parameter defaults, the linearity check, evaluate()).
// Internal to host/model_language/.
#pragma once

#include <string>

#include "host/model_language/expr/tree.hpp"

namespace nholo::model_file {

// the state an expression is evaluated at (arrays indexed as the tree's
// coordinates, rates, accelerations and parameters)
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

// f: when given, the first division by zero or non-finite result (whose
// operands are finite) is recorded there
double eval(const Expr& e, const Env& env, EvalFailure* f);

}  // namespace nholo::model_file
