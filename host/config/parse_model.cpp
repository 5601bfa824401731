// nholo/host/config/parse_model.cpp — the model of a configuration (a built-in
// name, a model file read in as its [model] table, a [model] table, a plugin),
// its formulations and its [params].
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <utility>

#include "host/config/config_parse.hpp"
#include "host/config/model_catalog.hpp"
#include "host/config/model_info.hpp"
#include "host/model_language/number_text.hpp"
#include "host/config/tables.hpp"

namespace fs = std::filesystem;

namespace nholo {

namespace {

// the loader registered by the program (empty: plugins cannot be loaded)
PluginModelLoader& plugin_model_loader() {
  static PluginModelLoader loader;
  return loader;
}

}  // namespace

void set_plugin_model_loader(PluginModelLoader loader) { plugin_model_loader() = std::move(loader); }

}  // namespace nholo

namespace nholo::config_parse {

namespace {

// The text of a model file as a TOML table.
toml::table read_model_file(const fs::path& mp) {
  std::error_code ec;
  if (!fs::exists(mp, ec) && !ec)
    throw ConfigError("model", "cannot read the model file '" + mp.string() +
                                   "' (a built-in model's name or a model file *.toml; built-in: " +
                                   join(model_names()) + ")");
  const std::string text = model_file_text(mp.string());
  toml::table mt;
  try {
    mt = toml::parse(text, mp.string());
  } catch (const toml::parse_error& e) {
    std::ostringstream os;
    os << mp.string() << ":" << e.source().begin.line << ":" << e.source().begin.column
       << ": not valid TOML: " << e.description();
    throw ConfigError("model", os.str());
  }
  return mt;
}

// A [model] table: parsed, checked and registered.
const ModelInfo& model_from_table(const toml::table& mt, const std::string& model_source,
                                  RunConfig& cfg) {
  ModelFileModel model = model_file_model(mt, model_source, model_names());
  cfg.model = model.info.name;
  cfg.model_spec = std::move(model.spec);
  return register_model_info(std::move(model.info));
}

// model = "path.so": the plugin loaded (relative to the config's folder) and
// its model registered.
const ModelInfo& model_from_plugin(const std::string& source, RunConfig& cfg) {
  fs::path pp(cfg.model);
  std::error_code ec;
  if (pp.is_relative() && !source.empty() && fs::is_regular_file(source, ec))
    pp = fs::path(source).parent_path() / pp;
  try {
    const PluginModelLoader& load = plugin_model_loader();
    if (!load)
      throw ConfigError("model", "cannot load the plugin '" + pp.string() +
                                     "': this program does not load plugins");
    std::string loaded_path;
    ModelInfo info = load(pp.string(), loaded_path);
    const std::vector<std::string> builtin = model_names();
    if (std::find(builtin.begin(), builtin.end(), info.name) != builtin.end())
      throw ConfigError("model", "the plugin '" + pp.string() + "' defines model '" + info.name +
                                     "', the name of a built-in model; rename it");
    cfg.model_plugin = loaded_path;
    cfg.model = info.name;
    return register_model_info(std::move(info));
  } catch (const ConfigError&) {
    throw;
  } catch (const std::exception& e) {
    throw ConfigError("model", e.what());
  }
}

}  // namespace

// A model file (model = "path.toml", relative to the config's folder) is
// read into the config as its [model] table: the effective configuration
// (written into every result file) is then self-contained, and its hash
// changes with the model's text.
std::string inline_model_file(toml::table& root, const std::string& source) {
  std::string model_source;  // where the [model] table came from
  if (const toml::node* mn0 = root.get("model"); mn0 && mn0->is_string()) {
    const std::string ref = mn0->value<std::string>().value_or("");
    if (!find_model(ref) && ref.size() > 5 && ref.substr(ref.size() - 5) == ".toml") {
      fs::path mp(ref);
      if (mp.is_relative()) {
        std::error_code ec;
        const fs::path base = fs::path(source).parent_path();
        if (!source.empty() && fs::is_regular_file(source, ec)) mp = base / mp;
      }
      toml::table mt = read_model_file(mp);
      root.insert_or_assign("model", std::move(mt));
      model_source = mp.string();
    }
  } else if (mn0 && mn0->is_table()) {
    model_source = source + " [model]";
  }
  return model_source;
}

const ModelInfo& resolve_model(const toml::table& root, const std::string& source,
                               const std::string& model_source, RunConfig& cfg) {
  const toml::node* mn = root.get("model");
  if (!mn)
    throw ConfigError("model", "missing (accepted: a built-in model (" + join(model_names()) +
                                   "), a model file \"path.toml\", a [model] table or a plugin "
                                   "\"path.so\")");
  const ModelInfo* mi = nullptr;
  if (const toml::table* mt = mn->as_table()) {
    mi = &model_from_table(*mt, model_source, cfg);
  } else {
    cfg.model = as_string(*mn, "model");
    if (cfg.model.size() > 3 && cfg.model.substr(cfg.model.size() - 3) == ".so" &&
        !find_model(cfg.model))
      mi = &model_from_plugin(source, cfg);
    else
      mi = find_model(cfg.model);
  }
  if (!mi)
    throw ConfigError("model", "unknown model '" + cfg.model + "' (accepted: a built-in model (" +
                                   join(model_names()) +
                                   "), a model file \"path.toml\", a [model] table or "
                                   "a plugin \"path.so\")");
  return *mi;
}

void parse_formulations(const toml::table& root, const ModelInfo& mi, RunConfig& cfg) {
  cfg.formulations = {tables::kDefaultFormulation};
  if (const toml::node* f = root.get("formulations"))
    cfg.formulations = as_string_list(*f, "formulations");
  if (cfg.formulations.empty())
    throw ConfigError("formulations", "expected at least one formulation");
  std::set<std::string> seen;
  const std::vector<std::string>& known = known_formulations();
  for (const auto& f : cfg.formulations) {
    if (std::find(known.begin(), known.end(), f) == known.end())
      throw ConfigError("formulations",
                        "unknown formulation '" + f + "' (accepted: " + join(known) + ")");
    if (std::find(mi.formulations.begin(), mi.formulations.end(), f) == mi.formulations.end())
      throw ConfigError("formulations", "model '" + cfg.model + "' does not support '" + f +
                                            "' (accepted for it: " + join(mi.formulations) + ")");
    if (!seen.insert(f).second) throw ConfigError("formulations", "'" + f + "' listed twice");
  }
}

namespace {

// Whether the configuration may vary parameters per trajectory
// ([ensemble.params], or a state file's params.<name> columns).
bool params_may_vary(const toml::table& root) {
  if (const toml::node* en = root.get("ensemble"); en && en->is_table()) {
    const toml::table& e = *en->as_table();
    const toml::node* sn = e.get("sampler");
    return e.get("params") != nullptr ||
           (sn && sn->is_string() && sn->value<std::string>() == name_of(SamplerKind::file));
  }
  return false;
}

}  // namespace

std::string derived_refusal(const ParamDescription& p) {
  return p.name + " is derived from " + join(p.derived_from) + " (" + p.name + " = " + p.derived +
         "): set " + (p.derived_from.size() == 1 ? p.derived_from[0] : "those parameters") +
         " instead (a derived parameter is recomputed per trajectory from the values in force)";
}

std::set<std::string> parse_params(const toml::table& root, const ModelInfo& mi, RunConfig& cfg) {
  // defaults, then the given ones, then the derived ones from them
  for (const auto& p : mi.params) cfg.params[p.name] = p.default_value;
  std::set<std::string> params_given;  // named in [params]
  if (const toml::table* pt = subtable(root, "params")) {
    std::vector<std::string> names;
    for (const auto& p : mi.params) names.push_back(p.name);
    for (auto&& [k, v] : *pt) {
      const std::string name(k.str());
      if (!cfg.params.count(name))
        throw ConfigError("params." + name,
                          "unknown parameter of model '" + cfg.model +
                              "' (accepted: " + (names.empty() ? "none" : join(names)) + ")");
      const ParamDescription& p = mi.params[static_cast<size_t>(
          std::find(names.begin(), names.end(), name) - names.begin())];
      if (!p.derived.empty()) throw ConfigError("params." + name, derived_refusal(p));
      cfg.params[name] = as_number(v, "params." + name);
      params_given.insert(name);
    }
  }
  cfg.derived_params.clear();
  cfg.derive_params = mi.derive_params;
  if (mi.derive_params) {
    std::vector<double> values;
    for (const auto& p : mi.params) {
      values.push_back(cfg.params.at(p.name));
      if (!p.derived.empty()) cfg.derived_params.push_back(p.name);
    }
    mi.derive_params(values);
    for (size_t j = 0; j < mi.params.size(); ++j) cfg.params[mi.params[j].name] = values[j];
  }
  // each parameter inside the range its model declares, then the relations
  // between them (a model that would integrate with a non-physical inertia or
  // a negative mass reports every trajectory ok, so it is refused here). The
  // parameters that vary per trajectory ([ensemble.params], params.<name>
  // columns of a state file) are checked with the ensemble (parse_ensemble).
  const bool may_vary = params_may_vary(root);
  std::vector<double> pvals;
  for (const auto& p : mi.params) {
    const double v = cfg.params.at(p.name);
    // a derived parameter that may vary: checked with the ensemble
    if (!p.derived.empty() && may_vary) {
      pvals.push_back(v);
      continue;
    }
    if (!p.admits(v) && !p.derived.empty()) {
      std::ostringstream os;
      os << p.name << " = " << p.derived << " is " << short_number(v) << " at";
      for (const auto& q : mi.params)
        if (std::find(p.derived_from.begin(), p.derived_from.end(), q.name) != p.derived_from.end())
          os << " " << q.name << " = " << short_number(cfg.params.at(q.name));
      os << "; model '" << cfg.model << "' needs " << p.name << " finite"
         << (p.range_text().empty() ? "" : " and " + p.range_text()) << p.doc_note();
      throw ConfigError("params", os.str());
    }
    if (!p.admits(v)) {
      std::ostringstream os;
      os << "is " << short_number(v) << "; model '" << cfg.model << "' needs a finite value"
         << (p.range_text().empty() ? "" : " " + p.range_text()) << p.doc_note();
      throw ConfigError("params." + p.name, os.str());
    }
    pvals.push_back(v);
  }
  if (mi.check_params && !may_vary) {
    const std::string bad = mi.check_params(pvals);
    if (!bad.empty()) {
      std::ostringstream os;
      os << bad << " (model '" << cfg.model << "' with";
      for (const auto& p : mi.params) os << " " << p.name << " = " << cfg.params.at(p.name);
      os << ")";
      throw ConfigError("params", os.str());
    }
  }
  return params_given;
}

}  // namespace nholo::config_parse
