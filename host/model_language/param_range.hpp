// nholo/host/model_language/param_range.hpp — a parameter's declared range
// (kernels/model.hpp ParamRange): whether it admits a value and its text in
// messages. A model file's parameters declare theirs (model_file.cpp checks
// each default against it); a configuration checks [params] against its
// model's (host/config/model_info.hpp ParamDescription).
#pragma once

#include <cmath>
#include <sstream>
#include <string>

#include "host/model_language/number_text.hpp"
#include "kernels/model.hpp"

namespace nholo {

// "> 0", "in [0, 1]", "" (any)
inline std::string range_text(const ParamRange& range) {
  std::ostringstream os;
  if (range.has_lo && range.has_hi)
    os << "in " << (range.lo_open ? "(" : "[") << short_number(range.lo) << ", "
       << short_number(range.hi) << (range.hi_open ? ")" : "]");
  else if (range.has_lo)
    os << (range.lo_open ? "> " : ">= ") << short_number(range.lo);
  else if (range.has_hi)
    os << (range.hi_open ? "< " : "<= ") << short_number(range.hi);
  return os.str();
}

// finite and inside the range
inline bool range_admits(const ParamRange& range, double v) {
  if (!std::isfinite(v)) return false;
  if (range.has_lo && (range.lo_open ? !(v > range.lo) : !(v >= range.lo))) return false;
  if (range.has_hi && (range.hi_open ? !(v < range.hi) : !(v <= range.hi))) return false;
  return true;
}

}  // namespace nholo
