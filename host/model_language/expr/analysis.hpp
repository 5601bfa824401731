// nholo/host/model_language/expr/analysis.hpp — structural queries on expression
// trees: the names a tree uses, the Lagrangian's structure (separable,
// constant mass, constant force: flags of the generated header) and whether
// an acceleration constraint is affine in the accelerations. Internal to
// host/model_language/.
#pragma once

#include <vector>

#include "host/model_language/expr/tree.hpp"

namespace nholo::model_file {

// whether a node of kind op occurs in e (each shared node visited once)
bool uses(const Expr& e, Op op);

// L = T(qd) + U(q, t) by its structure: a sum (and differences, negations)
// of terms none of which has a rate together with a coordinate or time
// (kernels/model.hpp, separable_lagrangian)
bool separable_terms(const Expr& e);

// A separable L whose rate terms are polynomials of degree <= 2 in the rates
// with constant (parameter) coefficients: M = d2L/dqd2 is constant
// (kernels/model.hpp, constant_mass)
bool constant_mass_terms(const Expr& e);

// ... and whose other terms are affine in the coordinates, without time: the
// Lagrangian's F = dU/dq is constant too (constant_force)
bool constant_force_terms(const Expr& e);

// 0: no acceleration; 1: affine in the accelerations by its structure; 2:
// not evidently affine (*where: the first node that makes it so)
int acc_degree(const Expr& e, int* where);

// h(q, qd, qdd, t) affine in qdd: for random states and random w, u, v,
//   h(w+u+v) - h(w+u) - h(w+v) + h(w) = 0  and  h(w+2u) - 2 h(w+u) + h(w) = 0.
// Returns 1 (affine at every state where h is finite), 0 (not affine), -1
// (h is not finite at any sampled state). n: the number of coordinates;
// params: the parameters' values.
int numerically_affine(const Expr& e, int n, const std::vector<double>& params);

}  // namespace nholo::model_file
