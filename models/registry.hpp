// nholo/models/registry.hpp — the list of built-in models, by name: the one
// list (CMakeLists.txt reads AllModels to generate each model's translation
// units). Adding a model is its header in models/, its #include below and its
// entry in AllModels (and its tests: tests/test_model_terms.cpp checks that every
// header of models/ is registered and covered).
//
// Concept (valid expressions):
//   AllModels                          ModelList<RollingCoin, Skate, ...>
//   ModelTag<Model>{}, Tag::type       an empty value standing for a model type
//   for_each_model([&](auto tag) {     calls f once per model of AllModels,
//     using M = typename decltype(tag)::type;   in the order listed
//     ... M::name, M::n, M::param_info ...
//   });
//   for_each_model_in<List>(f)         the same over another ModelList
//   bool found = visit_model(name, f)  f(ModelTag<Model>{}) for the model
//                                      called `name`; false if there is none
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

#include "appell.hpp"
#include "incline_block.hpp"
#include "integrable_constraint.hpp"
#include "parallel_velocities.hpp"
#include "rolling_coin.hpp"
#include "rolling_coin_redundant.hpp"
#include "skate.hpp"
#include "skate_redundant.hpp"
#include "sleigh.hpp"
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

using AllModels =
    ModelList<RollingCoin, Skate, Appell, UdwadiaExample2, UdwadiaExample3, UdwadiaExample4,
              InclineBlock, ParallelVelocities, IntegrableConstraint, RollingCoinRedundant,
              SkateRedundant, Sleigh>;

// param_info holds n_params entries, or the one sentinel when n_params = 0
template <class Model>
constexpr bool param_info_consistent() {
  return sizeof(Model::param_info) ==
         sizeof(ParamInfo) * static_cast<unsigned>(Model::n_params > 0 ? Model::n_params : 1);
}

namespace detail {
template <class... Ms>
constexpr bool all_param_info_consistent(ModelList<Ms...>) {
  return (param_info_consistent<Ms>() && ...);
}
static_assert(all_param_info_consistent(AllModels{}),
              "a model's param_info does not have n_params entries");

template <class F, class... Ms>
void for_each_in(ModelList<Ms...>, F& f) {
  (f(ModelTag<Ms>{}), ...);
}

constexpr bool same_name(const char* a, const char* b) {
  while (*a != '\0' && *a == *b) {
    ++a;
    ++b;
  }
  return *a == *b;
}
template <class... Ms>
constexpr int index_in(ModelList<Ms...>, const char* name) {
  const char* names[] = {Ms::name...};
  for (int i = 0; i < static_cast<int>(sizeof...(Ms)); ++i)
    if (same_name(names[i], name)) return i;
  return -1;
}
}  // namespace detail

// The registered model called `name` as a type, at compile time (a built-in
// model's plugin names its model so, host/model_files/plugin.cpp):
//   using M = model_at_t<model_index("rolling_coin")>;   // RollingCoin
// model_index is -1 for no registered model, and model_at_t<-1> does not compile.
constexpr int model_index(const char* name) {
  return detail::index_in(AllModels{}, name);
}
template <int I, class List = AllModels>
struct model_at;
template <int I, class M, class... Ms>
struct model_at<I, ModelList<M, Ms...>> : model_at<I - 1, ModelList<Ms...>> {};
template <class M, class... Ms>
struct model_at<0, ModelList<M, Ms...>> {
  using type = M;
};
template <int I>
using model_at_t = typename model_at<I>::type;

// f(ModelTag<Model>{}) for every model of List, in order
template <class List, class F>
void for_each_model_in(F&& f) {
  detail::for_each_in(List{}, f);
}

// f(ModelTag<Model>{}) for every registered model, in the order of AllModels
template <class F>
void for_each_model(F&& f) {
  for_each_model_in<AllModels>(f);
}

// f(ModelTag<Model>{}) for the registered model called `name`; false (and f
// not called) when there is none
template <class F>
bool visit_model(const char* name, F&& f) {
  bool found = false;
  for_each_model([&](auto tag) {
    if (!found && detail::same_name(decltype(tag)::type::name, name)) {
      found = true;
      f(tag);
    }
  });
  return found;
}

}  // namespace nholo::models
