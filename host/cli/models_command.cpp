// nholo/host/cli/models_command.cpp — `nholo models [NAME] [--json]`: the
// built-in models (and model files' plugins in the cache), as text or JSON.
#include <iomanip>
#include <sstream>

#include "host/cli/commands.hpp"
#include "host/cli/model_description.hpp"
#include "host/config/model_info.hpp"
#include "host/model_files/plugin.hpp"

namespace nholo {
namespace {

// s as a JSON string
std::string json_quote(const std::string& s) {
  std::string r = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\';
    r += c;
  }
  return r + "\"";
}

// v as a JSON array of strings
std::string json_list(const std::vector<std::string>& v) {
  std::string r = "[";
  for (size_t i = 0; i < v.size(); ++i) r += (i ? ", " : "") + json_quote(v[i]);
  return r + "]";
}

// the models as a JSON array, one object a line
void write_models_json(std::ostream& os, const std::vector<const ModelInfo*>& sel) {
  os << "[\n";
  for (size_t k = 0; k < sel.size(); ++k) {
    const ModelInfo& mi = *sel[k];
    os << "  {\"name\": " << json_quote(mi.name)
       << ", \"description\": " << json_quote(mi.description) << ", \"n\": " << mi.n
       << ", \"m\": " << mi.m << ", \"coordinates\": " << json_list(mi.coordinates)
       << ", \"coordinate_units\": " << json_list(mi.coordinate_units)
       << ", \"constraints\": " << json_list(mi.constraints)
       << ", \"constraint_kinds\": " << json_list(mi.constraint_kinds)
       << ", \"formulations\": " << json_list(mi.formulations) << ", \"parameters\": [";
    for (size_t j = 0; j < mi.params.size(); ++j) {
      const auto& p = mi.params[j];
      os << (j ? ", " : "") << "{\"name\": " << json_quote(p.name)
         << ", \"default\": " << std::setprecision(17) << p.default_value
         << ", \"unit\": " << json_quote(p.unit) << ", \"doc\": " << json_quote(p.doc)
         << ", \"range\": " << json_quote(p.range_text()) << "}";
    }
    os << "], \"energy\": " << (mi.has_energy ? "true" : "false")
       << ", \"nonideal\": " << (mi.has_nonideal ? "true" : "false") << "}"
       << (k + 1 < sel.size() ? "," : "") << "\n";
  }
  os << "]\n";
}

// the model plugins in the cache (after the whole list of built-in models)
void write_cached_plugins(std::ostream& os) {
  std::vector<CachedPlugin> plugins;
  std::string cache;
  try {
    cache = plugin_cache_dir();
    plugins = cached_plugins();
  } catch (const std::exception& e) {
    os << "model plugins: " << e.what() << "\n";
    return;
  }
  os << "model plugins in " << cache
     << " (model files compiled by `nholo run` / `nholo model build`):";
  if (plugins.empty()) os << " none";
  os << "\n";
  for (const auto& c : plugins)
    os << "  " << std::left << std::setw(24) << c.model << " " << c.path << "\n    from "
       << (c.source.empty() ? "?" : c.source) << ", compiled in " << c.compile_seconds << " s, "
       << (c.state != "ok" ? "not loadable: it " + c.state
           : c.loaded      ? std::string("loadable")
                           : std::string("recorded (an ELF image; loaded by a GPU run)"))
       << "\n";
}

}  // namespace

std::string models_command(const std::string& name, bool json) {
  std::ostringstream os;
  std::vector<const ModelInfo*> sel;
  for (const auto& mi : model_infos())
    if (name.empty() || mi.name == name) sel.push_back(&mi);
  if (sel.empty())
    throw ConfigError("model",
                      "unknown model '" + name + "' (accepted: " + join(model_names()) + ")");
  if (json) {
    write_models_json(os, sel);
    return os.str();
  }
  for (const ModelInfo* mp : sel) {
    describe_model(os, *mp);
    if (name.empty()) os << "\n";
  }
  if (name.empty()) write_cached_plugins(os);
  return os.str();
}

}  // namespace nholo
