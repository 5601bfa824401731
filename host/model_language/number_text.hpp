// nholo/host/model_language/number_text.hpp — a number in a message: the shortest
// text that reads back as the same double (a value refused for being outside
// a range must not print as one inside it: 1.5000001, not 1.5).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace nholo {

inline std::string short_number(double v) {
  char buf[40];
  // at least the digits of the integer part, so that 10 is "10", not "1e+01"
  const double mag = std::fabs(v);
  int first = 1;
  if (std::isfinite(mag) && mag >= 1 && mag < 1e15) first = static_cast<int>(std::log10(mag)) + 1;
  for (int prec = std::min(first, 17); prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v || std::isnan(v)) break;
  }
  return buf;
}

}  // namespace nholo
