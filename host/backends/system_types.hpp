// nholo/host/backends/system_types.hpp — the system type of each formulation
// (config/tables.hpp Formulation), one row per formulation: the C++ type for a
// model type, the same type's name for a model type's name (what a GPU
// module's source spells for NVRTC, host/model_files/gpu_module.cpp) and
// whether a model has the formulation at all. A formulation added to
// tables.hpp is one row here and one case of with_system_row.
//
//   with_system_row(id, otherwise, [](auto row) { ... })   fn(row) of formulation id
//   typename Row::template System<Model>                    the type (visit_formulation)
//   Row::name("nholo::user_models::UserModel")              its name
//   Row::template offered<Model>()                          false: Model has none
#pragma once

#include <string>

#include "host/config/tables.hpp"
#include "kernels/formulations.hpp"
#include "kernels/formulations/embedded.hpp"

namespace nholo::system_types {

struct UdwadiaKalabaRow {
  template <class Model>
  using System = UdwadiaKalabaSystem<Model>;
  template <class Model>
  static constexpr bool offered() {
    return true;
  }
  static std::string name(const std::string& m) { return "nholo::UdwadiaKalabaSystem<" + m + ">"; }
};

struct LagrangeMultiplierRow {
  template <class Model>
  using System = LagrangeMultiplierSystem<Model>;
  template <class Model>
  static constexpr bool offered() {
    return true;
  }
  static std::string name(const std::string& m) {
    return "nholo::LagrangeMultiplierSystem<" + m + ">";
  }
};

struct NullSpaceRow {
  template <class Model>
  using System = NullSpaceSystem<Model>;
  template <class Model>
  static constexpr bool offered() {
    return true;
  }
  static std::string name(const std::string& m) { return "nholo::NullSpaceSystem<" + m + ">"; }
};

struct VakonomicRow {
  template <class Model>
  using System = VakonomicSystem<Model>;
  // velocity/position constraints only, and at least one (tables.hpp)
  template <class Model>
  static constexpr bool offered() {
    return tables::position_or_velocity_constraints_only(constraint_count<Model>(),
                                                         Model::m_acceleration);
  }
  static std::string name(const std::string& m) { return "nholo::VakonomicSystem<" + m + ">"; }
};

struct ConflatedRow {
  template <class Model>
  using System = UdwadiaKalabaSystem<nholo::Conflated<Model>>;
  template <class Model>
  static constexpr bool offered() {
    return has_conflated_lagrangian<Model>::value;
  }
  static std::string name(const std::string& m) {
    return "nholo::UdwadiaKalabaSystem<nholo::Conflated<" + m + ">>";
  }
};

struct EmbeddedRow {
  template <class Model>
  using System = EmbeddedSystem<Model>;
  template <class Model>
  static constexpr bool offered() {
    return has_embedded_constraints<Model>::value;
  }
  static std::string name(const std::string& m) { return "nholo::EmbeddedSystem<" + m + ">"; }
};

// fn(row) for the row of formulation id (fn returns an R), otherwise when
// the id has no row.
template <class R, class Fn>
R with_system_row(tables::Formulation id, R otherwise, Fn&& fn) {
  using tables::Formulation;
  switch (id) {
    case Formulation::udwadia_kalaba: return fn(UdwadiaKalabaRow{});
    case Formulation::lagrange_multiplier: return fn(LagrangeMultiplierRow{});
    case Formulation::null_space: return fn(NullSpaceRow{});
    case Formulation::vakonomic: return fn(VakonomicRow{});
    case Formulation::conflated: return fn(ConflatedRow{});
    case Formulation::embedded: return fn(EmbeddedRow{});
  }
  return otherwise;
}

}  // namespace nholo::system_types
