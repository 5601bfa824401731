// nholo/host/config/model_catalog.cpp — the config's view of model files
// (host/config/model_catalog.hpp): a [model] table parsed by the model
// language into its spec, the spec's description, a model file's text read;
// the model language's errors turned into the configuration's (key model).
#include "host/config/model_catalog.hpp"

#include <memory>
#include <utility>

#include "host/config/config.hpp"
#include "host/config/tables.hpp"
#include "host/model_language/model_file.hpp"

namespace nholo {

ModelFileModel model_file_model(const toml::table& mt, const std::string& model_source,
                                const std::vector<std::string>& builtin) {
  ModelSpec spec;
  try {
    spec = parse_model_table(mt, model_source, builtin);
  } catch (const ModelFileError& e) {
    throw ModelConfigError("model", e.what());
  }
  ModelFileModel m;
  m.spec = std::make_shared<const ModelSpec>(std::move(spec));
  m.info = model_info_from_spec(*m.spec);
  return m;
}

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
  for (const auto& p : s.parameters) {
    ParamDescription d{p.name, p.default_value, p.unit, p.description, p.range, {}, {}};
    d.derived = p.derived.text;
    for (const int k : p.derived_from) d.derived_from.push_back(s.parameters[k].name);
    mi.params.push_back(std::move(d));
  }
  mi.has_energy = !s.energy.text.empty();
  mi.has_nonideal = !s.nonideal_force.empty();
  mi.has_conflated = !s.conflated_lagrangian.text.empty();
  // symbolic M and F in the generated header (hand_dynamics_fn)
  mi.has_hand_dynamics = model_file::has_symbolic_dynamics(s);
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
  if (!s.derived_order.empty()) {
    // the derivation needs the parameters' trees: a copy of them (the spec
    // given may not outlive the description)
    ModelSpec derivation;
    derivation.parameters = s.parameters;
    derivation.derived_order = s.derived_order;
    mi.derive_params = [d = std::make_shared<const ModelSpec>(std::move(derivation))](
                           std::vector<double>& values) {
      model_file::derive_parameters(*d, values);
    };
  }
  return mi;
}

std::string model_file_text(const std::string& path) {
  try {
    return read_model_file_text(path);
  } catch (const ModelFileError& e) {
    throw ModelConfigError("model", e.what());
  }
}

}  // namespace nholo
