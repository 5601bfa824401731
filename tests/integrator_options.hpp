// nholo/tests/integrator_options.hpp — the integrator options of the tests'
// reference integrations: a method with one tolerance for rtol and atol.
#pragma once

#include "kernels/integrate.hpp"

namespace nholo_test {

inline nholo::IntegratorOptions tolerance_options(nholo::Method method, double tol) {
  nholo::IntegratorOptions opt;
  opt.method = method;
  opt.rtol = tol;
  opt.atol = tol;
  return opt;
}

}  // namespace nholo_test
