// nholo/models/registry.hpp — the list of models, by name.
//
// Concept (valid expressions):
//   AllModels                          ModelList<RollingCoin, Skate, ...>
//   ModelTag<Model>{}, Tag::type       an empty value standing for a model type
//   for_each_model([&](auto tag) {     calls f once per model of AllModels,
//     using M = typename decltype(tag)::type;   in the order listed
//     ... M::name, M::n, M::param_info ...
//   });
//   for_each_model<List>(f)            the same over another ModelList
//
// Parameters: every model has `n_params` and `param_info` whose first n_params
// entries are {name, default, unit, doc} in the order of Params and of
// make_params(const double*). A model without parameters has n_params = 0, an
// empty Params and one sentinel entry {nullptr, 0, nullptr, nullptr} in
// param_info (a zero-length array is not valid C++): iterate i < n_params,
// never over the array itself.
//
// Host-only (used by the CLI, the config reader and the tests).
#pragma once

#include <utility>

#include "appell.hpp"
#include "incline_block.hpp"
#include "integrable_constraint.hpp"
#include "parallel_velocities.hpp"
#include "rolling_coin.hpp"
#include "skate.hpp"
#include "udwadia_example2.hpp"
#include "udwadia_example3.hpp"
#include "udwadia_example4.hpp"

namespace nholo::models {

template <class... Ms>
struct ModelList {
  static constexpr int size = static_cast<int>(sizeof...(Ms));
};

template <class Model>
struct ModelTag {
  using type = Model;
};

using AllModels = ModelList<RollingCoin, Skate, Appell, UdwadiaExample2, UdwadiaExample3,
                            UdwadiaExample4, InclineBlock, ParallelVelocities,
                            IntegrableConstraint>;

namespace detail {
template <class F, class... Ms>
void for_each_model_in(ModelList<Ms...>, F& f) {
  (f(ModelTag<Ms>{}), ...);
}
}  // namespace detail

// f(ModelTag<Model>{}) for every model of List, in order
template <class List = AllModels, class F>
void for_each_model(F&& f) {
  detail::for_each_model_in(List{}, f);
}

}  // namespace nholo::models
