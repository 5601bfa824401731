// nholo/host/model_language/model_spec.cpp — what a parsed model offers besides
// its header: the double evaluator of its expressions (model_file::evaluate),
// its symbolic M and F (model_file::symbolic_dynamics), whether its
// energy is expected to be conserved (model_file::energy_not_conserved)
// and its derived parameters (model_file::derive_parameters);
// host/model_language/model_file.hpp.
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "host/model_language/expr/analysis.hpp"
#include "host/model_language/expr/derivative.hpp"
#include "host/model_language/expr/eval.hpp"
#include "host/model_language/model_file.hpp"

namespace nholo {

namespace model_file {

double evaluate(const ModelSpec& s, const Expression& e, const std::vector<double>& q,
                const std::vector<double>& qd, const std::vector<double>& qdd, double t,
                const std::vector<double>& params) {
  const size_t n = s.coordinates.size();
  if (q.size() != n || qd.size() != n || (!qdd.empty() && qdd.size() != n))
    throw std::invalid_argument(
        "model_file::evaluate: q, qd (and qdd) need one value per "
        "coordinate");
  std::vector<double> p = params;
  if (p.empty())
    for (const auto& par : s.parameters) p.push_back(par.default_value);
  if (p.size() != s.parameters.size())
    throw std::invalid_argument("model_file::evaluate: one value per parameter");
  if (!e.tree) return 0.0;
  const std::vector<double> zeros(n, 0.0);
  Env env{q.data(), qd.data(), qdd.empty() ? zeros.data() : qdd.data(), p.data(), t};
  return eval(*e.tree, env, nullptr);
}

namespace {

// g(q, s qd) = s g(q, qd) for s = 2, 1/2 at 8 random states (parameters at
// their defaults), to 1e-9 relative; states where g is not finite skipped
bool homogeneous_in_rates(const ModelSpec& s, const Expression& g) {
  const size_t n = s.coordinates.size();
  uint64_t state = 0x656E65726779ULL;
  auto uniform = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return -1.5 + 3.0 * static_cast<double>(state >> 11) * 0x1.0p-53;
  };
  for (int trial = 0; trial < 8; ++trial) {
    std::vector<double> q(n), qd(n), qd2(n), qdh(n);
    for (size_t i = 0; i < n; ++i) {
      q[i] = uniform();
      qd[i] = uniform();
      qd2[i] = 2.0 * qd[i];
      qdh[i] = 0.5 * qd[i];
    }
    const double t = 0.5 + uniform(), g1 = evaluate(s, g, q, qd, {}, t),
                 g2 = evaluate(s, g, q, qd2, {}, t), gh = evaluate(s, g, q, qdh, {}, t);
    if (!std::isfinite(g1) || !std::isfinite(g2) || !std::isfinite(gh)) continue;
    const double scale = 1.0 + std::fabs(g1) + std::fabs(g2) + std::fabs(gh);
    if (std::fabs(g2 - 2.0 * g1) > 1e-9 * scale || std::fabs(gh - 0.5 * g1) > 1e-9 * scale)
      return false;
  }
  return true;
}

bool any_tree(const std::vector<Expression>& v) {
  for (const auto& e : v)
    if (e.tree) return true;
  return false;
}

}  // namespace

std::vector<std::string> energy_not_conserved(const ModelSpec& s) {
  std::vector<std::string> why;
  if (s.lagrangian.tree && uses(*s.lagrangian.tree, Op::time))
    why.push_back("the Lagrangian depends on t explicitly");
  if (any_tree(s.nonpotential_force)) why.push_back("the model has non-potential forces");
  if (any_tree(s.nonideal_force)) why.push_back("the model has non-ideal forces");
  for (const auto& c : s.constraints) {
    if (c.kind == ConstraintKind::acceleration) {
      why.push_back("constraint " + c.name +
                    " is an acceleration constraint (its force may do work)");
    } else if (uses(*c.expr.tree, Op::time)) {
      why.push_back("constraint " + c.name + " depends on t (rheonomic)");
    } else if (c.kind == ConstraintKind::velocity && !homogeneous_in_rates(s, c.expr)) {
      why.push_back("constraint " + c.name +
                    " is not homogeneous of degree 1 in the rates (its force does work)");
    }
  }
  return why;
}

void derive_parameters(const ModelSpec& s, std::vector<double>& params) {
  if (params.size() != s.parameters.size())
    throw std::invalid_argument("model_file::derive_parameters: one value per parameter");
  Env env;
  env.p = params.data();
  for (const int j : s.derived_order) {
    const Parameter& par = s.parameters[static_cast<size_t>(j)];
    params[static_cast<size_t>(j)] = eval(*par.derived.tree, env, nullptr);
  }
}

bool has_symbolic_dynamics(const ModelSpec& s) {
  return dynamics_trees(static_cast<int>(s.coordinates.size()), s.lagrangian.tree).refused.empty();
}

SymbolicDynamics symbolic_dynamics(const ModelSpec& s) {
  SymbolicDynamics out;
  const int n = static_cast<int>(s.coordinates.size());
  const DynamicsTrees d = dynamics_trees(n, s.lagrangian.tree);
  out.nodes = d.nodes;
  out.refused = d.refused;
  if (!d.refused.empty()) return out;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j)
      out.mass.push_back({"d2L/d" + s.coordinates[static_cast<size_t>(i)].name + "_dot d" +
                              s.coordinates[static_cast<size_t>(j)].name + "_dot",
                          d.mass[static_cast<size_t>(i * n + j)]});
    out.force.push_back(
        {"F_" + s.coordinates[static_cast<size_t>(i)].name, d.force[static_cast<size_t>(i)]});
  }
  return out;
}

}  // namespace model_file

}  // namespace nholo
