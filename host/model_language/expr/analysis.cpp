// nholo/host/model_language/expr/analysis.cpp — structural queries on expression
// trees and the numerical linearity check (expr/analysis.hpp).
#include "host/model_language/expr/analysis.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <unordered_set>
#include <vector>

#include "host/model_language/expr/eval.hpp"

namespace nholo::model_file {

namespace {

// Degree of e as a polynomial in the nodes of kind `var` (Op::rate or
// Op::coord) with coefficients made of numbers and parameters only; kNotPoly
// when it is not evidently one (time, the other kind of variable, an
// acceleration, a variable under a function, a division by a variable, a
// non-integer power of one).
constexpr int kNotPoly = 1000;
int poly_degree(const Expr& e, Op var) {
  if (e.op == var) return 1;
  switch (e.op) {
    case Op::number:
    case Op::pi:
    case Op::param: return 0;
    case Op::time:
    case Op::coord:
    case Op::rate:
    case Op::accel: return kNotPoly;
    case Op::neg: return poly_degree(*e.args[0], var);
    case Op::add:
    case Op::sub: return std::max(poly_degree(*e.args[0], var), poly_degree(*e.args[1], var));
    case Op::mul:
      return std::min(kNotPoly, poly_degree(*e.args[0], var) + poly_degree(*e.args[1], var));
    case Op::div:
      return poly_degree(*e.args[1], var) == 0 ? poly_degree(*e.args[0], var) : kNotPoly;
    case Op::pow: {
      const int d = poly_degree(*e.args[0], var), x = poly_degree(*e.args[1], var);
      if (d == 0 && x == 0) return 0;
      const Expr& k = *e.args[1];
      if (x == 0 && k.op == Op::number && k.value >= 0 && k.value <= 8 &&
          k.value == static_cast<int>(k.value))
        return std::min(kNotPoly, d * static_cast<int>(k.value));
      return kNotPoly;
    }
    case Op::call:
      for (const auto& a : e.args)
        if (poly_degree(*a, var) != 0) return kNotPoly;
      return 0;
  }
  return kNotPoly;
}

// pred(term) for every summand of e (through +, - and negation)
template <class Pred>
bool every_term(const Expr& e, Pred pred) {
  if (e.op == Op::add || e.op == Op::sub)
    return every_term(*e.args[0], pred) && every_term(*e.args[1], pred);
  if (e.op == Op::neg) return every_term(*e.args[0], pred);
  return pred(e);
}

// splitmix64: reproducible random states for the linearity check
struct Random {
  uint64_t s;
  double uniform(double lo, double hi) {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return lo + (hi - lo) * (static_cast<double>(z >> 11) * 0x1.0p-53);
  }
};

}  // namespace

bool uses(const Expr& e, Op op) {
  // depth first, without recursion; a node with more than one owner (a
  // subexpression shared in the model's graph) is visited once
  std::vector<const Expr*> todo = {&e};
  std::unordered_set<const Expr*> shared_seen;
  while (!todo.empty()) {
    const Expr* x = todo.back();
    todo.pop_back();
    if (x->op == op) return true;
    for (const auto& a : x->args)
      if (a.use_count() == 1 || shared_seen.insert(a.get()).second) todo.push_back(a.get());
  }
  return false;
}

// L = T(qd) + U(q, t) by its structure: a sum (and differences, negations)
// of terms none of which has a rate together with a coordinate or time
// (kernels/model.hpp, separable_lagrangian)
bool separable_terms(const Expr& e) {
  if (e.op == Op::add || e.op == Op::sub)
    return separable_terms(*e.args[0]) && separable_terms(*e.args[1]);
  if (e.op == Op::neg) return separable_terms(*e.args[0]);
  return !(uses(e, Op::rate) && (uses(e, Op::coord) || uses(e, Op::time)));
}

// A separable L whose rate terms are polynomials of degree <= 2 in the rates
// with constant (parameter) coefficients: M = d2L/dqd2 is constant
// (kernels/model.hpp, constant_mass)
bool constant_mass_terms(const Expr& e) {
  return separable_terms(e) && every_term(e, [](const Expr& t) {
           return !uses(t, Op::rate) || poly_degree(t, Op::rate) <= 2;
         });
}

// ... and whose other terms are affine in the coordinates, without time: the
// Lagrangian's F = dU/dq is constant too (constant_force)
bool constant_force_terms(const Expr& e) {
  return constant_mass_terms(e) && every_term(e, [](const Expr& t) {
           return uses(t, Op::rate) || poly_degree(t, Op::coord) <= 1;
         });
}

// 0: no acceleration; 1: affine in the accelerations by its structure; 2:
// not evidently affine (*where: the first node that makes it so)
int acc_degree(const Expr& e, int* where) {
  auto bad = [&](int d) {
    if (d == 2 && *where == 0) *where = e.pos;
    return d;
  };
  switch (e.op) {
    case Op::accel: return 1;
    case Op::number:
    case Op::pi:
    case Op::time:
    case Op::coord:
    case Op::rate:
    case Op::param: return 0;
    case Op::neg: return acc_degree(*e.args[0], where);
    case Op::add:
    case Op::sub: return std::max(acc_degree(*e.args[0], where), acc_degree(*e.args[1], where));
    case Op::mul: {
      const int a = acc_degree(*e.args[0], where), b = acc_degree(*e.args[1], where);
      if (a == 2 || b == 2) return 2;
      return bad(a + b);
    }
    case Op::div: {
      const int a = acc_degree(*e.args[0], where), b = acc_degree(*e.args[1], where);
      if (a == 2 || b == 2) return 2;
      return bad(b == 0 ? a : 2);
    }
    case Op::pow:
    case Op::call: {
      int d = 0;
      for (const auto& a : e.args) d = std::max(d, acc_degree(*a, where));
      if (d == 2) return 2;
      if (e.op == Op::pow && e.args[1]->op == Op::number && e.args[1]->value == 1.0) return d;
      return bad(d == 0 ? 0 : 2);
    }
  }
  return 2;
}

// h(q, qd, qdd, t) affine in qdd: for random states and random w, u, v,
//   h(w+u+v) - h(w+u) - h(w+v) + h(w) = 0  and  h(w+2u) - 2 h(w+u) + h(w) = 0.
// Returns 1 (affine at every state where h is finite), 0 (not affine), -1
// (h is not finite at any sampled state).
int numerically_affine(const Expr& e, int n, const std::vector<double>& params) {
  Random rng{0x6E686F6C6FULL};
  int checked = 0;
  for (int trial = 0; trial < 32 && checked < 8; ++trial) {
    // alternate wide states with small positive ones (log, sqrt of a coordinate)
    const double lo = trial % 2 ? 0.1 : -2.0, hi = trial % 2 ? 1.5 : 2.0;
    std::vector<double> q(n), qd(n), w(n), u(n), v(n);
    for (int i = 0; i < n; ++i) {
      q[i] = rng.uniform(lo, hi);
      qd[i] = rng.uniform(lo, hi);
      w[i] = rng.uniform(lo, hi);
      u[i] = rng.uniform(-1.0, 1.0);
      v[i] = rng.uniform(-1.0, 1.0);
    }
    const double t = rng.uniform(0.0, 2.0);
    auto h = [&](double cu, double cv) {
      std::vector<double> a(n);
      for (int i = 0; i < n; ++i) a[i] = w[i] + cu * u[i] + cv * v[i];
      Env env{q.data(), qd.data(), a.data(), params.data(), t};
      return eval(e, env, nullptr);
    };
    const double h0 = h(0, 0), hu = h(1, 0), hv = h(0, 1), huv = h(1, 1), h2u = h(2, 0);
    if (!std::isfinite(h0) || !std::isfinite(hu) || !std::isfinite(hv) || !std::isfinite(huv) ||
        !std::isfinite(h2u))
      continue;
    ++checked;
    const double scale =
        1.0 + std::fabs(h0) + std::fabs(hu) + std::fabs(hv) + std::fabs(huv) + std::fabs(h2u);
    if (std::fabs(huv - hu - hv + h0) > 1e-9 * scale || std::fabs(h2u - 2 * hu + h0) > 1e-9 * scale)
      return 0;
  }
  return checked > 0 ? 1 : -1;
}

}  // namespace nholo::model_file
