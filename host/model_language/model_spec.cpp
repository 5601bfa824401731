// nholo/host/model_language/model_spec.cpp — what a parsed model offers besides
// its header: the double evaluator of its expressions (model_file::evaluate)
// and of its derived parameters (model_file::derive_parameters), and its
// symbolic M and F (model_file::symbolic_dynamics);
// host/model_language/model_file.hpp.
#include <stdexcept>
#include <string>
#include <vector>

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
