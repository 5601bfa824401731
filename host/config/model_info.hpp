// nholo/host/config/model_info.hpp — run-time descriptions of the registered models
// (names, coordinates, constraints, parameters, supported formulations), for
// the config reader, `nholo models` and the HDF5 attributes.
#pragma once

#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/model.hpp"

namespace nholo {

// (declared_constraint_rank, kernels/model.hpp: with redundant rows the
// saddle-point formulations, lagrange_multiplier and vakonomic, are not
// offered: their matrix is singular at every state, while udwadia_kalaba and
// null_space give the Moore-Penrose motion.)

struct ParamDescription {
  std::string name;
  double default_value;
  std::string unit;
  std::string doc;
  ParamRange range;
  // a derived parameter (a model file's `derived`, docs/models.md): its
  // expression and the parameters it uses; empty for a plain parameter
  std::string derived;
  std::vector<std::string> derived_from;
  std::string range_text() const;       // "> 0", "in [0, 1]", "" (any)
  bool admits(double v) const;          // finite and inside the range
  std::string doc_note() const { return doc.empty() ? "" : " (" + doc + ")"; }  // for messages
};

struct ModelInfo {
  std::string name;
  std::string description;
  int n = 0, m = 0, m_position = 0, m_velocity = 0, m_acceleration = 0;
  std::vector<std::string> coordinates;
  std::vector<std::string> coordinate_units;  // per coordinate ("m", "rad"); empty: not declared
  std::vector<std::string> constraints;
  std::vector<std::string> constraint_kinds;  // "position" | "velocity" | "acceleration" per row
  std::vector<ParamDescription> params;
  std::vector<std::string> formulations;  // supported
  bool has_energy = false;
  bool has_nonideal = false;
  bool has_conflated = false;
  bool has_hand_dynamics = false;
  // the relation the parameters (in params order) break together, "" when
  // none (Model::check_params, e.g. the skate's I_B > m s^2)
  std::function<std::string(const std::vector<double>&)> check_params;
  // the derived parameters (those with a `derived` expression) recomputed in
  // place from the others' values (all parameters, in params order), in
  // double precision; NaN or inf where an expression is undefined. Null when
  // the model has none (built-in models, plugins).
  std::function<void(std::vector<double>&)> derive_params;
  bool has_derived_params() const { return static_cast<bool>(derive_params); }
};

// the built-in models
const std::vector<ModelInfo>& model_infos();
// A model known at run time only (a model file, a plugin): find_model finds
// it from now on (the latest registration of a name wins; built-in names come
// first). The reference stays valid for the life of the process.
const ModelInfo& register_model_info(ModelInfo mi);
// nullptr when unknown (built-in or registered)
const ModelInfo* find_model(const std::string& name);
// the built-in models' names
std::vector<std::string> model_names();

}  // namespace nholo
