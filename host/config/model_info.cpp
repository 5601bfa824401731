#include "host/config/model_info.hpp"

#include <cmath>
#include <deque>
#include <sstream>

#include "host/config/model_info_of.hpp"
#include "host/config/number_text.hpp"
#include "models/registry.hpp"

namespace nholo {

const std::vector<ModelInfo>& model_infos() {
  static const std::vector<ModelInfo> infos = [] {
    std::vector<ModelInfo> v;
    models::for_each_model([&](auto tag) { v.push_back(model_info_of<typename decltype(tag)::type>()); });
    return v;
  }();
  return infos;
}

namespace {
// models added at run time (model files, plugins); a deque keeps the
// references find_model handed out valid
std::deque<ModelInfo>& user_infos() {
  static std::deque<ModelInfo> v;
  return v;
}
}  // namespace

const ModelInfo& register_model_info(ModelInfo mi) {
  user_infos().push_back(std::move(mi));
  return user_infos().back();
}

std::string ParamDescription::range_text() const {
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

bool ParamDescription::admits(double v) const {
  if (!std::isfinite(v)) return false;
  if (range.has_lo && (range.lo_open ? !(v > range.lo) : !(v >= range.lo))) return false;
  if (range.has_hi && (range.hi_open ? !(v < range.hi) : !(v <= range.hi))) return false;
  return true;
}

const ModelInfo* find_model(const std::string& name) {
  for (const auto& mi : model_infos())
    if (mi.name == name) return &mi;
  // the latest registration of a name wins
  for (auto it = user_infos().rbegin(); it != user_infos().rend(); ++it)
    if (it->name == name) return &*it;
  return nullptr;
}

std::vector<std::string> model_names() {
  std::vector<std::string> v;
  for (const auto& mi : model_infos()) v.push_back(mi.name);
  return v;
}

}  // namespace nholo
