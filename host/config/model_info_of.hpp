// nholo/host/config/model_info_of.hpp — the run-time description (ModelInfo) of a
// compiled model type: used for the built-in models (host/config/model_info.cpp) and
// inside plugins (host/model_files/plugin_define.hpp), so both describe a model alike.
#pragma once

#include <algorithm>

#include "host/config/model_info.hpp"
#include "host/config/tables.hpp"
#include "kernels/formulations/embedded.hpp"
#include "kernels/model.hpp"

namespace nholo {

template <class M>
ModelInfo model_info_of() {
  ModelInfo mi;
  mi.name = M::name;
  mi.description = M::description;
  mi.n = M::n;
  mi.m_position = M::m_position;
  mi.m_velocity = M::m_velocity;
  mi.m_acceleration = M::m_acceleration;
  mi.m = constraint_count<M>();
  for (int i = 0; i < M::n; ++i) mi.coordinates.push_back(M::coordinates[i]);
  if constexpr (has_coordinate_units<M>::value)
    for (int i = 0; i < M::n; ++i) mi.coordinate_units.push_back(M::coordinate_units[i]);
  for (int l = 0; l < mi.m; ++l) {
    mi.constraints.push_back(M::constraint_names[l]);
    mi.constraint_kinds.push_back(l < M::m_position                    ? "position"
                                  : l < M::m_position + M::m_velocity ? "velocity"
                                                                      : "acceleration");
  }
  for (int j = 0; j < M::n_params; ++j)
    mi.params.push_back({M::param_info[j].name,
                         M::param_info[j].default_value,
                         M::param_info[j].unit,
                         M::param_info[j].doc,
                         M::param_info[j].range,
                         {},
                         {}});
  mi.check_params = [](const std::vector<double>& values) -> std::string {
    if constexpr (has_check_params<M>::value) {
      const char* e = M::check_params(M::make_params(values.data()));
      return e ? e : "";
    }
    (void)values;
    return "";
  };
  mi.has_energy = has_energy<M>::value;
  mi.has_nonideal = has_nonideal_force<M>::value;
  mi.has_conflated = has_conflated_lagrangian<M>::value;
  mi.has_hand_dynamics = has_hand_dynamics<M>::value;
  // which formulations the model supports: host/config/tables.hpp
  tables::ModelTraits traits;
  traits.m = mi.m;
  traits.m_acceleration = M::m_acceleration;
  traits.redundant = declared_constraint_rank<M>::value < mi.m;
  traits.has_conflated = mi.has_conflated;
  traits.has_embedded = has_embedded_constraints<M>::value;
  mi.formulations = tables::supported_formulations(traits);
  return mi;
}

}  // namespace nholo
