#include "host/config/model_info.hpp"

#include <deque>

#include "host/config/model_info_of.hpp"
#include "host/model_language/param_range.hpp"
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
  return nholo::range_text(range);
}

bool ParamDescription::admits(double v) const {
  return range_admits(range, v);
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
