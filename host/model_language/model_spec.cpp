// nholo/host/model_language/model_spec.cpp — what a parsed model offers besides
// its header: the run-time description (model_info_from_spec), the double
// evaluator of its expressions (model_file::evaluate) and its symbolic M and
// F (model_file::symbolic_dynamics); host/model_language/model_file.hpp.
#include <stdexcept>
#include <string>
#include <vector>

#include "host/config/tables.hpp"
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

ModelInfo model_info_from_spec(const ModelSpec& s) {
  ModelInfo mi;
  mi.name = s.name;
  mi.description = s.description;
  mi.n = static_cast<int>(s.coordinates.size());
  mi.m_position = s.m_position;
  mi.m_velocity = s.m_velocity;
  mi.m_acceleration = s.m_acceleration;
  mi.m = static_cast<int>(s.constraints.size());
  for (const auto& c : s.coordinates) {
    mi.coordinates.push_back(c.name);
    mi.coordinate_units.push_back(c.unit);
  }
  for (const auto& c : s.constraints) {
    mi.constraints.push_back(c.name);
    mi.constraint_kinds.push_back(c.kind == ConstraintKind::position   ? "position"
                                  : c.kind == ConstraintKind::velocity ? "velocity"
                                                                       : "acceleration");
  }
  for (const auto& p : s.parameters)
    mi.params.push_back({p.name, p.default_value, p.unit, p.description, p.range});
  mi.has_energy = !s.energy.text.empty();
  mi.has_nonideal = !s.nonideal_force.empty();
  mi.has_conflated = !s.conflated_lagrangian.text.empty();
  // symbolic M and F in the generated header (hand_dynamics_fn)
  mi.has_hand_dynamics = model_file::dynamics_trees(mi.n, s.lagrangian.tree).refused.empty();
  // which formulations the model supports: host/config/tables.hpp (as for
  // the built-in models, host/config/model_info_of.hpp); a model file has
  // no embedded constraints
  tables::ModelTraits traits;
  traits.m = mi.m;
  traits.m_acceleration = mi.m_acceleration;
  traits.redundant = s.constraint_rank > 0 && s.constraint_rank < mi.m;
  traits.has_conflated = mi.has_conflated;
  mi.formulations = tables::supported_formulations(traits);
  // a model file states no relation between its parameters beyond the ranges
  mi.check_params = [](const std::vector<double>&) { return std::string(); };
  return mi;
}

}  // namespace nholo
