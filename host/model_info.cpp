#include "host/model_info.hpp"

#include <cmath>
#include <sstream>

#include "kernels/embedded.hpp"
#include "kernels/model.hpp"
#include "models/registry.hpp"

namespace nholo {

const std::vector<ModelInfo>& model_infos() {
  static const std::vector<ModelInfo> infos = [] {
    std::vector<ModelInfo> v;
    models::for_each_model([&](auto tag) {
      using M = typename decltype(tag)::type;
      ModelInfo mi;
      mi.name = M::name;
      mi.description = M::description;
      mi.n = M::n;
      mi.m_position = M::m_position;
      mi.m_velocity = M::m_velocity;
      mi.m_acceleration = M::m_acceleration;
      mi.m = constraint_count<M>();
      for (int i = 0; i < M::n; ++i) mi.coordinates.push_back(M::coordinates[i]);
      for (int l = 0; l < mi.m; ++l) {
        mi.constraints.push_back(M::constraint_names[l]);
        mi.constraint_kinds.push_back(l < M::m_position ? "position"
                                      : l < M::m_position + M::m_velocity ? "velocity"
                                                                          : "acceleration");
      }
      for (int j = 0; j < M::n_params; ++j)
        mi.params.push_back({M::param_info[j].name, M::param_info[j].default_value,
                             M::param_info[j].unit, M::param_info[j].doc, M::param_info[j].range});
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
      if (declared_constraint_rank<M>::value < mi.m)
        mi.formulations = {"udwadia_kalaba", "null_space"};
      else
        mi.formulations = {"udwadia_kalaba", "lagrange_multiplier", "null_space", "vakonomic"};
      if (mi.has_conflated) mi.formulations.push_back("conflated");
      if (has_embedded_constraints<M>::value) mi.formulations.push_back("embedded");
      v.push_back(std::move(mi));
    });
    return v;
  }();
  return infos;
}

std::string ParamDescription::range_text() const {
  std::ostringstream os;
  if (range.has_lo && range.has_hi)
    os << "in " << (range.lo_open ? "(" : "[") << range.lo << ", " << range.hi << (range.hi_open ? ")" : "]");
  else if (range.has_lo)
    os << (range.lo_open ? "> " : ">= ") << range.lo;
  else if (range.has_hi)
    os << (range.hi_open ? "< " : "<= ") << range.hi;
  return os.str();
}

bool ParamDescription::admits(double v) const {
  if (!std::isfinite(v)) return false;
  if (range.has_lo && (range.lo_open ? !(v > range.lo) : !(v >= range.lo))) return false;
  if (range.has_hi && (range.hi_open ? !(v < range.hi) : !(v <= range.hi))) return false;
  return true;
}

const ModelInfo* find_model(const std::string& name) {
  for (const auto& mi : model_infos())
    if (mi.name == name) return &mi;
  return nullptr;
}

std::vector<std::string> model_names() {
  std::vector<std::string> v;
  for (const auto& mi : model_infos()) v.push_back(mi.name);
  return v;
}

}  // namespace nholo
