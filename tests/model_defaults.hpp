// nholo/tests/model_defaults.hpp — small helpers the kernel tests share: a
// built-in model's parameters at their documented defaults, and a double's
// bits (for comparisons that must hold to the last bit, NaN included).
#pragma once

#include <cstdint>
#include <cstring>

namespace nholo_test {

template <class Model>
typename Model::Params default_params() {
  double v[Model::n_params > 0 ? Model::n_params : 1] = {0};
  for (int j = 0; j < Model::n_params; ++j) v[j] = Model::param_info[j].default_value;
  return Model::make_params(v);
}

inline uint64_t bits(double x) {
  uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

}  // namespace nholo_test
