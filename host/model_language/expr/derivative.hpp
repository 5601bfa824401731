// nholo/host/model_language/expr/derivative.hpp — symbolic differentiation of a
// Lagrangian's tree: M and F of the fundamental equation as trees that share
// their common subexpressions (model_file::symbolic_dynamics, the generated
// header's hand_dynamics). Internal to host/model_language/.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "host/model_language/expr/tree.hpp"

namespace nholo::model_file {

struct DynamicsTrees {
  std::vector<ExprPtr> mass;   // n x n, row-major, shared nodes
  std::vector<ExprPtr> force;  // n
  size_t nodes = 0;            // distinct nodes of all of them
  std::string refused;         // why there are none (then AD), else empty
};

// The symbolic M and F of L (n coordinates), or none with the reason: no
// Lagrangian (L null), a tree deeper than 10,000 levels (the printer
// recurses along it), a power of the state with a parameter as exponent
// (symbolic_exponents_refused) or trees with more than 400,000 distinct
// nodes
DynamicsTrees dynamics_trees(int n, const ExprPtr& L);

// The Jacobi integral h = sum_i qd_i dL/dqd_i - L (n coordinates), the
// energy of a Lagrangian T2 + T1 + T0 - V: T2 - T0 + V. Null, with the reason
// in *refused, for a tree deeper than 1000 levels (a power with a parameter
// exponent is fine here: its first derivative p a^(p-1) has no 0 inf).
ExprPtr jacobi_integral(int n, const ExprPtr& L, std::string* refused);

}  // namespace nholo::model_file
