#include "host/config/config.hpp"

#include <cstdio>

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include "host/model_files/model_file.hpp"
#include "host/config/model_info.hpp"
#include "host/model_files/plugin.hpp"
#include "host/run/sampling.hpp"

namespace fs = std::filesystem;

namespace nholo {

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

const std::map<std::string, std::vector<std::string>>& config_schema() {
  static const std::map<std::string, std::vector<std::string>> schema = {
      {"", {"model", "formulations", "params", "time", "integrator", "ensemble", "output",
            "backend", "compare"}},
      {"time", {"t_start", "t_end", "save_every", "saveat"}},
      {"integrator",
       {"method", "rtol", "atol", "dt", "dt_min", "dt_max", "max_steps", "drift",
        "baumgarte_alpha", "baumgarte_beta", "pinv_rtol"}},
      {"ensemble",
       {"size", "seed", "sampler", "on_violation", "file", "q0", "qd0", "lambda0", "params"}},
      {"output", {"path", "mode", "fields", "memory_budget_mb", "window", "compression"}},
      {"backend", {"device", "gpu", "threads"}},
      {"compare", {"threshold"}},
  };
  return schema;
}

const std::vector<std::string>& known_formulations() {
  static const std::vector<std::string> v = {"udwadia_kalaba", "lagrange_multiplier", "null_space",
                                             "vakonomic", "conflated", "embedded"};
  return v;
}

const std::vector<std::string>& known_fields() {
  static const std::vector<std::string> v = {"q",          "qdot",     "qddot",
                                             "force_ideal", "force_nonideal", "multiplier",
                                             "constraint_residual", "energy"};
  return v;
}

std::string Distribution::describe() const {
  std::ostringstream os;
  switch (kind) {
    case Kind::constant: os << a; break;
    case Kind::uniform: os << "uniform[" << a << ", " << b << "]"; break;
    case Kind::normal: os << "normal(" << a << ", " << b << ")"; break;
    case Kind::linspace: os << "linspace(" << a << ", " << b << ", " << count << ")"; break;
    case Kind::values: os << values.size() << " values"; break;
  }
  return os.str();
}

namespace {

const char* type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a number";
    case toml::node_type::boolean: return "a boolean";
    default: return "a date/time";
  }
}

double as_number(const toml::node& n, const std::string& key) {
  if (!n.is_number())
    throw ConfigError(key, std::string("expected a number, got ") + type_name(n));
  const double v = *n.value<double>();
  if (!std::isfinite(v)) throw ConfigError(key, "expected a finite number");
  return v;
}

int64_t as_integer(const toml::node& n, const std::string& key) {
  if (n.is_integer()) return *n.value<int64_t>();
  if (n.is_floating_point()) {
    const double v = *n.value<double>();
    if (std::floor(v) == v && std::abs(v) < 9e15) return static_cast<int64_t>(v);
  }
  throw ConfigError(key, std::string("expected an integer, got ") + type_name(n));
}

std::string as_string(const toml::node& n, const std::string& key) {
  if (!n.is_string()) throw ConfigError(key, std::string("expected a string, got ") + type_name(n));
  return *n.value<std::string>();
}

std::string as_choice(const toml::node& n, const std::string& key,
                      const std::vector<std::string>& accepted) {
  const std::string s = as_string(n, key);
  if (std::find(accepted.begin(), accepted.end(), s) == accepted.end())
    throw ConfigError(key, "unknown value '" + s + "' (accepted: " + join(accepted) + ")");
  return s;
}

std::vector<std::string> as_string_list(const toml::node& n, const std::string& key) {
  std::vector<std::string> v;
  if (n.is_string()) return {as_string(n, key)};
  if (!n.is_array())
    throw ConfigError(key, std::string("expected an array of strings, got ") + type_name(n));
  for (const auto& e : *n.as_array()) v.push_back(as_string(e, key + "[]"));
  return v;
}

std::vector<double> as_number_list(const toml::node& n, const std::string& key) {
  if (!n.is_array())
    throw ConfigError(key, std::string("expected an array of numbers, got ") + type_name(n));
  std::vector<double> v;
  for (const auto& e : *n.as_array()) v.push_back(as_number(e, key + "[]"));
  return v;
}

void check_keys(const toml::table& t, const std::string& table, const std::string& prefix) {
  const auto& accepted = config_schema().at(table);
  for (auto&& [k, v] : t) {
    (void)v;
    const std::string key(k.str());
    if (std::find(accepted.begin(), accepted.end(), key) == accepted.end())
      throw ConfigError(prefix + key, "unknown key (accepted in " +
                                          (table.empty() ? std::string("the top level")
                                                         : "[" + table + "]") +
                                          ": " + join(accepted) + ")");
  }
}

const toml::table* subtable(const toml::table& root, const std::string& name) {
  const toml::node* n = root.get(name);
  if (!n) return nullptr;
  if (!n->is_table()) throw ConfigError(name, std::string("expected a table, got ") + type_name(*n));
  return n->as_table();
}

Distribution parse_distribution(const toml::node& n, const std::string& key) {
  Distribution d;
  if (n.is_number()) {
    d.kind = Distribution::Kind::constant;
    d.a = as_number(n, key);
    return d;
  }
  const std::string accepted =
      "a number, or one of { uniform = [low, high] }, { normal = [mean, std] }, "
      "{ linspace = [start, stop, count] }, { values = [v1, v2, ...] }";
  if (!n.is_table()) throw ConfigError(key, std::string("expected ") + accepted + ", got " + type_name(n));
  const toml::table& t = *n.as_table();
  if (t.size() != 1) throw ConfigError(key, "expected exactly one of " + accepted);
  const auto it = t.begin();
  const std::string kind(it->first.str());
  const toml::node& v = it->second;
  const std::string sub = key + "." + kind;
  if (kind == "values") {
    d.kind = Distribution::Kind::values;
    d.values = as_number_list(v, sub);
    if (d.values.empty()) throw ConfigError(sub, "expected at least one value");
    return d;
  }
  const std::vector<double> a = as_number_list(v, sub);
  if (kind == "uniform") {
    if (a.size() != 2) throw ConfigError(sub, "expected [low, high]");
    if (!(a[1] >= a[0])) throw ConfigError(sub, "expected low <= high");
    d.kind = Distribution::Kind::uniform;
  } else if (kind == "normal") {
    if (a.size() != 2) throw ConfigError(sub, "expected [mean, std]");
    if (!(a[1] >= 0)) throw ConfigError(sub, "expected std >= 0");
    d.kind = Distribution::Kind::normal;
  } else if (kind == "linspace") {
    if (a.size() != 3) throw ConfigError(sub, "expected [start, stop, count]");
    if (!(a[2] >= 1) || std::floor(a[2]) != a[2])
      throw ConfigError(sub, "expected a count >= 1 as the third entry");
    d.kind = Distribution::Kind::linspace;
    d.count = static_cast<int64_t>(a[2]);
  } else {
    throw ConfigError(key, "unknown distribution '" + kind + "' (accepted: " + accepted + ")");
  }
  d.a = a[0];
  d.b = a[1];
  return d;
}

std::map<std::string, Distribution> parse_initial(const toml::table* t, const std::string& key,
                                                  const std::vector<std::string>& names) {
  std::map<std::string, Distribution> out;
  if (!t) return out;
  for (auto&& [k, v] : *t) {
    const std::string name(k.str());
    if (std::find(names.begin(), names.end(), name) == names.end())
      throw ConfigError(key + "." + name,
                        "unknown name (accepted: " + (names.empty() ? std::string("none") : join(names)) + ")");
    out[name] = parse_distribution(v, key + "." + name);
  }
  return out;
}

// Insert `value` (TOML text, or a bare string) at the dotted key.
void apply_override(toml::table& root, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError("--set", "expected key=value, got '" + assignment + "'");
  std::string key = assignment.substr(0, eq), text = assignment.substr(eq + 1);
  auto trim = [](std::string s) {
    const auto b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
  };
  key = trim(key);
  text = trim(text);
  toml::table parsed;
  try {
    parsed = toml::parse("v = " + text);
  } catch (const toml::parse_error&) {
    parsed = toml::table{{"v", text}};  // a bare word: take it as a string
  }
  std::vector<std::string> parts;
  std::stringstream ss(key);
  for (std::string p; std::getline(ss, p, '.');) {
    if (p.empty()) throw ConfigError("--set " + key, "empty component in the key");
    parts.push_back(p);
  }
  toml::table* t = &root;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    toml::node* n = t->get(parts[i]);
    if (!n) {
      t->insert(parts[i], toml::table{});
      n = t->get(parts[i]);
    }
    if (!n->is_table())
      throw ConfigError("--set " + key, "'" + parts[i] + "' is not a table");
    t = n->as_table();
  }
  parsed.get("v")->visit([&](auto&& val) { t->insert_or_assign(parts.back(), val); });
}

// The parameters that vary per trajectory ([ensemble.params], and the
// params.<name> columns of a state file): each distribution must stay inside
// the range its model declares (whatever it draws), and the model's relation
// between parameters (ModelInfo::check_params) must hold wherever it can be
// decided here — at every corner of the box the distributions span (the
// least and greatest value of each; for grids these are trajectories of the
// run), or, for a state file whose varied parameters are all columns, at
// every row. What cannot be decided here (a normal distribution, or a
// relation broken only inside the box) is checked per trajectory when the
// run samples the parameters: such a trajectory gets status rejected.
void check_varied_params(RunConfig& cfg, const ModelInfo& mi, const std::set<std::string>& params_given) {
  const std::string model = "model '" + cfg.model + "'";
  auto need = [&](const ParamDescription& p) {
    return p.range_text().empty() ? std::string("any finite value") : p.range_text();
  };
  // state file columns
  std::map<std::string, int> file_column;  // parameter -> column of the file
  if (cfg.sampler == "file") {
    const std::vector<std::string> header = state_file_header(cfg.file);
    for (size_t h = 0; h < header.size(); ++h) {
      if (header[h].rfind("params.", 0) != 0) continue;
      const std::string name = header[h].substr(7);
      const auto it = std::find_if(mi.params.begin(), mi.params.end(),
                                   [&](const ParamDescription& p) { return p.name == name; });
      if (it == mi.params.end()) {
        std::vector<std::string> names;
        for (const auto& p : mi.params) names.push_back("params." + p.name);
        throw ConfigError("ensemble.file", cfg.file + ": column '" + header[h] + "' is not a parameter of " +
                                               model + " (accepted: " +
                                               (names.empty() ? std::string("none") : join(names)) + ")");
      }
      if (params_given.count(name)) {
        std::ostringstream os;
        os << cfg.file << ": column '" << header[h] << "' varies the parameter that [params] fixes (params."
           << name << " = " << cfg.params.at(name) << "); remove one of them";
        throw ConfigError("ensemble.file", os.str());
      }
      if (cfg.param_dists.count(name))
        throw ConfigError("ensemble.params." + name, "given both in the config and in the file " + cfg.file +
                                                         " (column '" + header[h] + "')");
      file_column[name] = static_cast<int>(h);
    }
  }
  cfg.varied_params.clear();
  // per parameter (model order): the least and greatest value it takes
  std::vector<double> lo, hi;
  bool bounded = true, random_dist = false;
  for (const auto& p : mi.params) {
    double a = cfg.params.at(p.name), b = a;
    if (const auto it = cfg.param_dists.find(p.name); it != cfg.param_dists.end()) {
      const Distribution& d = it->second;
      const std::string key = "ensemble.params." + p.name;
      std::tie(a, b) = distribution_bounds(d);
      const bool has_bound = p.range.has_lo || p.range.has_hi;
      if (d.kind == Distribution::Kind::normal && d.b > 0 && has_bound) {
        std::ostringstream os;
        os << d.describe() << " can draw any value, but " << model << " needs " << p.name << " "
           << need(p) << " (" << p.doc << "); accepted for a bounded parameter: a number, uniform, "
           << "linspace or values inside that range";
        throw ConfigError(key, os.str());
      }
      if (std::isfinite(a) && (!p.admits(a) || !p.admits(b))) {
        std::ostringstream os;
        os << "draws values in [" << a << ", " << b << "] (" << d.describe() << "), outside the range "
           << model << " allows: " << p.name << " " << need(p) << " (" << p.doc
           << "); accepted: a number, uniform, linspace or values with every value " << need(p);
        throw ConfigError(key, os.str());
      }
      if (d.kind == Distribution::Kind::uniform || d.kind == Distribution::Kind::normal) random_dist = true;
      cfg.varied_params.push_back(p.name);
    } else if (const auto fc = file_column.find(p.name); fc != file_column.end()) {
      a = INFINITY;
      b = -INFINITY;
      // the file streamed (never held whole)
      for_each_state_row(cfg.file, [&](int64_t, const std::vector<double>& row, int64_t line, std::streamoff) {
        const double v = row[fc->second];
        if (!p.admits(v)) {
          std::ostringstream os;
          os << cfg.file << " line " << line << ": params." << p.name << " = " << v << " is outside the range "
             << model << " allows: " << p.name << " " << need(p) << " (" << p.doc << ")";
          throw ConfigError("ensemble.file", os.str());
        }
        a = std::min(a, v);
        b = std::max(b, v);
        return true;
      });
      cfg.varied_params.push_back(p.name);
    }
    bounded = bounded && std::isfinite(a) && std::isfinite(b);
    lo.push_back(a);
    hi.push_back(b);
  }
  if (!mi.check_params) return;
  auto describe = [&](const std::vector<double>& v) {
    std::ostringstream os;
    os << model << " at";
    for (size_t j = 0; j < mi.params.size(); ++j) os << (j ? ", " : " ") << mi.params[j].name << " = " << v[j];
    return os.str();
  };
  if (cfg.varied_params.empty()) {
    // [ensemble.params] was empty: the fixed parameters' relation as in [params]
    const std::string bad = mi.check_params(lo);
    if (!bad.empty()) throw ConfigError("params", bad + " (" + describe(lo) + ")");
    return;
  }
  if (!file_column.empty()) {
    // every varied parameter a column (or a constant): each row is a trajectory
    if (random_dist) return;
    std::vector<double> v;
    for_each_state_row(cfg.file, [&](int64_t, const std::vector<double>& row, int64_t line, std::streamoff) {
      v = lo;
      for (size_t j = 0; j < mi.params.size(); ++j)
        if (const auto fc = file_column.find(mi.params[j].name); fc != file_column.end())
          v[j] = row[fc->second];
      const std::string bad = mi.check_params(v);
      if (!bad.empty()) {
        std::ostringstream os;
        os << cfg.file << " line " << line << ": " << bad << " (" << describe(v) << ")";
        throw ConfigError("ensemble.file", os.str());
      }
      return true;
    });
    return;
  }
  if (!bounded) return;  // a normal distribution: checked per trajectory
  std::vector<size_t> span;  // parameters with lo < hi
  for (size_t j = 0; j < lo.size(); ++j)
    if (lo[j] < hi[j]) span.push_back(j);
  for (uint64_t corner = 0; corner < (uint64_t(1) << span.size()); ++corner) {
    std::vector<double> v = lo;
    for (size_t k = 0; k < span.size(); ++k)
      if ((corner >> k) & 1) v[span[k]] = hi[span[k]];
    const std::string bad = mi.check_params(v);
    if (!bad.empty()) {
      std::ostringstream os;
      os << "the distributions of";
      for (size_t j = 0, k = 0; j < mi.params.size(); ++j)
        if (std::find(cfg.varied_params.begin(), cfg.varied_params.end(), mi.params[j].name) !=
            cfg.varied_params.end())
          os << (k++ ? ", " : " ") << mi.params[j].name << " (in [" << lo[j] << ", " << hi[j] << "])";
      os << " reach parameters that break the model's relation: " << bad << " (" << describe(v)
         << "); accepted: distributions whose every combination satisfies it";
      throw ConfigError("ensemble.params", os.str());
    }
  }
}

}  // namespace

RunConfig parse_config(const std::string& toml_text, const std::vector<std::string>& overrides,
                       const std::string& source) {
  toml::table root;
  try {
    root = toml::parse(toml_text, source);
  } catch (const toml::parse_error& e) {
    std::ostringstream os;
    os << "not valid TOML at line " << e.source().begin.line << ", column "
       << e.source().begin.column << ": " << e.description();
    throw ConfigError("", os.str());
  }
  for (const auto& o : overrides) apply_override(root, o);

  RunConfig cfg;
  cfg.source = source;
  // A model file (model = "path.toml", relative to the config's folder) is
  // read into the config as its [model] table: the effective configuration
  // (written into every result file) is then self-contained, and its hash
  // changes with the model's text.
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
      std::ifstream in(mp);
      if (!in)
        throw ConfigError("model", "cannot read the model file '" + mp.string() +
                                       "' (a built-in model's name or a model file *.toml; built-in: " +
                                       join(model_names()) + ")");
      std::ostringstream ss;
      ss << in.rdbuf();
      toml::table mt;
      try {
        mt = toml::parse(ss.str(), mp.string());
      } catch (const toml::parse_error& e) {
        std::ostringstream os;
        os << mp.string() << ":" << e.source().begin.line << ":" << e.source().begin.column
           << ": not valid TOML: " << e.description();
        throw ConfigError("model", os.str());
      }
      root.insert_or_assign("model", std::move(mt));
      model_source = mp.string();
    }
  } else if (mn0 && mn0->is_table()) {
    model_source = source + " [model]";
  }
  {
    std::ostringstream os;
    os << root;
    cfg.text = os.str();
    toml::table r = root;
    r.erase("backend");
    if (toml::table* o = r["output"].as_table()) {
      o->erase("path");
      o->erase("memory_budget_mb");
    }
    std::ostringstream rs;
    rs << r;
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : rs.str()) {
      h ^= c;
      h *= 1099511628211ull;
    }
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    cfg.result_hash = hex;
  }
  check_keys(root, "", "");
  for (const char* t : {"time", "integrator", "ensemble", "output", "backend", "compare"})
    if (const toml::table* st = subtable(root, t)) check_keys(*st, t, std::string(t) + ".");

  // model and formulations
  const toml::node* mn = root.get("model");
  if (!mn)
    throw ConfigError("model", "missing (accepted: a built-in model (" + join(model_names()) +
                                   "), a model file \"path.toml\", a [model] table or a plugin \"path.so\")");
  const ModelInfo* mi = nullptr;
  if (const toml::table* mt = mn->as_table()) {
    ModelSpec spec;
    try {
      spec = parse_model_table(*mt, model_source, model_names());
    } catch (const ModelFileError& e) {
      throw ConfigError("model", e.what());
    }
    cfg.model = spec.name;
    cfg.model_spec = std::make_shared<const ModelSpec>(std::move(spec));
    mi = &register_model_info(model_info_from_spec(*cfg.model_spec));
  } else {
    cfg.model = as_string(*mn, "model");
    if (cfg.model.size() > 3 && cfg.model.substr(cfg.model.size() - 3) == ".so" && !find_model(cfg.model)) {
      fs::path pp(cfg.model);
      std::error_code ec;
      if (pp.is_relative() && !source.empty() && fs::is_regular_file(source, ec))
        pp = fs::path(source).parent_path() / pp;
      try {
        const Plugin& pl = load_plugin_file(pp.string());
        ModelInfo info;
        pl.entry->describe(&info);
        const std::vector<std::string> builtin = model_names();
        if (std::find(builtin.begin(), builtin.end(), info.name) != builtin.end())
          throw ConfigError("model", "the plugin '" + pp.string() + "' defines model '" + info.name +
                                         "', the name of a built-in model; rename it");
        cfg.model_plugin = pl.path;
        cfg.model = info.name;
        mi = &register_model_info(std::move(info));
      } catch (const ConfigError&) {
        throw;
      } catch (const std::exception& e) {
        throw ConfigError("model", e.what());
      }
    } else {
      mi = find_model(cfg.model);
    }
  }
  if (!mi)
    throw ConfigError("model", "unknown model '" + cfg.model + "' (accepted: a built-in model (" +
                                   join(model_names()) + "), a model file \"path.toml\", a [model] table or "
                                   "a plugin \"path.so\")");
  cfg.formulations = {"udwadia_kalaba"};
  if (const toml::node* f = root.get("formulations")) cfg.formulations = as_string_list(*f, "formulations");
  if (cfg.formulations.empty()) throw ConfigError("formulations", "expected at least one formulation");
  std::set<std::string> seen;
  for (const auto& f : cfg.formulations) {
    if (std::find(known_formulations().begin(), known_formulations().end(), f) ==
        known_formulations().end())
      throw ConfigError("formulations", "unknown formulation '" + f + "' (accepted: " +
                                            join(known_formulations()) + ")");
    if (std::find(mi->formulations.begin(), mi->formulations.end(), f) == mi->formulations.end())
      throw ConfigError("formulations", "model '" + cfg.model + "' does not support '" + f +
                                            "' (accepted for it: " + join(mi->formulations) + ")");
    if (!seen.insert(f).second) throw ConfigError("formulations", "'" + f + "' listed twice");
  }

  // [params]: defaults, then the given ones
  for (const auto& p : mi->params) cfg.params[p.name] = p.default_value;
  std::set<std::string> params_given;  // named in [params]
  if (const toml::table* pt = subtable(root, "params")) {
    std::vector<std::string> names;
    for (const auto& p : mi->params) names.push_back(p.name);
    for (auto&& [k, v] : *pt) {
      const std::string name(k.str());
      if (!cfg.params.count(name))
        throw ConfigError("params." + name, "unknown parameter of model '" + cfg.model +
                                                "' (accepted: " + (names.empty() ? "none" : join(names)) + ")");
      cfg.params[name] = as_number(v, "params." + name);
      params_given.insert(name);
    }
  }
  // each parameter inside the range its model declares, then the relations
  // between them (a model that would integrate with a non-physical inertia or
  // a negative mass reports every trajectory ok, so it is refused here). The
  // parameters that vary per trajectory ([ensemble.params], params.<name>
  // columns of a state file) are checked with the ensemble, below.
  bool params_may_vary = false;
  if (const toml::node* en = root.get("ensemble"); en && en->is_table()) {
    const toml::table& e = *en->as_table();
    const toml::node* sn = e.get("sampler");
    params_may_vary = e.get("params") != nullptr ||
                      (sn && sn->is_string() && sn->value<std::string>() == std::string("file"));
  }
  std::vector<double> pvals;
  for (const auto& p : mi->params) {
    const double v = cfg.params.at(p.name);
    if (!p.admits(v)) {
      std::ostringstream os;
      os << "is " << v << "; model '" << cfg.model << "' needs a finite value"
         << (p.range_text().empty() ? "" : " " + p.range_text()) << " (" << p.doc << ")";
      throw ConfigError("params." + p.name, os.str());
    }
    pvals.push_back(v);
  }
  if (mi->check_params && !params_may_vary) {
    const std::string bad = mi->check_params(pvals);
    if (!bad.empty()) {
      std::ostringstream os;
      os << bad << " (model '" << cfg.model << "' with";
      for (const auto& p : mi->params) os << " " << p.name << " = " << cfg.params.at(p.name);
      os << ")";
      throw ConfigError("params", os.str());
    }
  }

  // [time]
  const toml::table* tt = subtable(root, "time");
  if (!tt) throw ConfigError("time", "missing table [time] (needs t_end and save_every or saveat)");
  if (const toml::node* n = tt->get("t_start")) cfg.t_start = as_number(*n, "time.t_start");
  const toml::node* te = tt->get("t_end");
  if (!te) throw ConfigError("time.t_end", "missing (a number > time.t_start)");
  cfg.t_end = as_number(*te, "time.t_end");
  if (!(cfg.t_end > cfg.t_start))
    throw ConfigError("time.t_end", "must be greater than time.t_start (" + std::to_string(cfg.t_start) + ")");
  const toml::node* se = tt->get("save_every");
  const toml::node* sa = tt->get("saveat");
  if (se && sa) throw ConfigError("time", "give either save_every or saveat, not both");
  cfg.save_times.push_back(cfg.t_start);
  if (sa) {
    const auto v = as_number_list(*sa, "time.saveat");
    if (v.empty())
      throw ConfigError("time.saveat", "is empty; give at least one time in (time.t_start, time.t_end], "
                                       "or use time.save_every");
    if (v.size() > 10000000)
      throw ConfigError("time.saveat", std::to_string(v.size()) + " saves: at most 10^7");
    double prev = cfg.t_start;
    for (double t : v) {
      if (!(t > prev)) throw ConfigError("time.saveat", "times must increase and exceed time.t_start");
      if (t > cfg.t_end) throw ConfigError("time.saveat", "times must not exceed time.t_end");
      cfg.save_times.push_back(t);
      prev = t;
    }
  } else {
    const double dt = se ? as_number(*se, "time.save_every") : (cfg.t_end - cfg.t_start) / 100.0;
    if (!(dt > 0)) throw ConfigError("time.save_every", "must be > 0");
    const double span = cfg.t_end - cfg.t_start;
    // counted in floating point: (t_end - t_start) / save_every can exceed any integer
    const double saves = std::floor(span / dt * (1 + 1e-12));
    if (!(saves <= 1e7)) {
      std::ostringstream os;
      os << "(time.t_end - time.t_start) / time.save_every = " << span << " / " << dt << " would make "
         << saves << " saves; at most 10^7 (choose a larger save_every, a shorter span, or time.saveat)";
      throw ConfigError("time.save_every", os.str());
    }
    const int64_t k_max = static_cast<int64_t>(saves);
    for (int64_t k = 1; k <= k_max; ++k) {
      const double t = cfg.t_start + k * dt;
      if (!(t > cfg.save_times.back())) {
        std::ostringstream os;
        os << "save_every = " << dt << " is below the resolution of the times near t = " << t
           << " (two saves would fall on the same double)";
        throw ConfigError("time.save_every", os.str());
      }
      cfg.save_times.push_back(t);
    }
    if (cfg.save_times.back() < cfg.t_end - 1e-12 * span) cfg.save_times.push_back(cfg.t_end);
    cfg.save_times.back() = std::min(cfg.save_times.back(), cfg.t_end);
  }

  // [integrator]
  if (const toml::table* it = subtable(root, "integrator")) {
    auto& o = cfg.integrator;
    if (const toml::node* n = it->get("method")) {
      const std::string m = as_choice(*n, "integrator.method", {"rk4", "dopri5", "dop853"});
      o.method = m == "rk4" ? Method::rk4 : m == "dopri5" ? Method::dopri5 : Method::dop853;
    }
    auto positive = [&](const char* k, double& dst) {
      if (const toml::node* n = it->get(k)) {
        dst = as_number(*n, std::string("integrator.") + k);
        if (!(dst > 0)) throw ConfigError(std::string("integrator.") + k, "must be > 0");
      }
    };
    positive("rtol", o.rtol);
    positive("atol", o.atol);
    positive("dt", o.dt);
    positive("dt_min", o.dt_min);
    if (const toml::node* n = it->get("dt_max")) {
      o.dt_max = as_number(*n, "integrator.dt_max");
      if (o.dt_max < 0) throw ConfigError("integrator.dt_max", "must be >= 0 (0: unbounded)");
    }
    if (const toml::node* n = it->get("max_steps")) {
      o.max_steps = as_integer(*n, "integrator.max_steps");
      if (o.max_steps < 1) throw ConfigError("integrator.max_steps", "must be >= 1");
    }
    if (const toml::node* n = it->get("drift")) {
      const std::string d = as_choice(*n, "integrator.drift", {"none", "baumgarte", "project"});
      cfg.eval.drift = d == "none" ? DriftControl::none
                       : d == "baumgarte" ? DriftControl::baumgarte
                                          : DriftControl::project;
    }
    positive("baumgarte_alpha", cfg.eval.baumgarte_alpha);
    positive("baumgarte_beta", cfg.eval.baumgarte_beta);
    positive("pinv_rtol", cfg.eval.pinv.rtol);
    // the rank tolerance decides which constraints count: large values drop
    // real constraints (every trajectory would still say ok)
    if (!(cfg.eval.pinv.rtol >= 1e-16 && cfg.eval.pinv.rtol <= 1e-6)) {
      std::ostringstream os;
      os << cfg.eval.pinv.rtol << " is outside [1e-16, 1e-6]: a relative rank tolerance above 1e-6 "
         << "discards constraints that hold (default 1e-12)";
      throw ConfigError("integrator.pinv_rtol", os.str());
    }
  }

  // [ensemble]
  const toml::table* et = subtable(root, "ensemble");
  bool size_given = false;
  if (et) {
    if (const toml::node* n = et->get("size")) {
      cfg.size = as_integer(*n, "ensemble.size");
      if (cfg.size < 1) throw ConfigError("ensemble.size", "must be >= 1, got " + std::to_string(cfg.size));
      size_given = true;
    }
    if (const toml::node* n = et->get("seed")) {
      const int64_t s = as_integer(*n, "ensemble.seed");
      if (s < 0) throw ConfigError("ensemble.seed", "must be >= 0");
      cfg.seed = static_cast<uint64_t>(s);
    }
    if (const toml::node* n = et->get("sampler"))
      cfg.sampler = as_choice(*n, "ensemble.sampler", {"random", "grid", "sobol", "file"});
    if (const toml::node* n = et->get("on_violation"))
      cfg.on_violation = as_choice(*n, "ensemble.on_violation", {"project", "reject", "error"});
    if (const toml::node* n = et->get("file")) cfg.file = as_string(*n, "ensemble.file");
    cfg.q0 = parse_initial(subtable(*et, "q0"), "ensemble.q0", mi->coordinates);
    cfg.qd0 = parse_initial(subtable(*et, "qd0"), "ensemble.qd0", mi->coordinates);
    cfg.lambda0 = parse_initial(subtable(*et, "lambda0"), "ensemble.lambda0", mi->constraints);
    if (const toml::node* pn = et->get("params")) {
      if (!pn->is_table())
        throw ConfigError("ensemble.params", std::string("expected a table of parameter distributions, got ") +
                                                 type_name(*pn));
      std::vector<std::string> names;
      for (const auto& p : mi->params) names.push_back(p.name);
      for (auto&& [k, v] : *pn->as_table()) {
        (void)v;
        const std::string name(k.str());
        if (std::find(names.begin(), names.end(), name) == names.end())
          throw ConfigError("ensemble.params." + name,
                            "unknown parameter of model '" + cfg.model + "' (accepted: " +
                                (names.empty() ? std::string("none: the model has no parameters") : join(names)) + ")");
        if (params_given.count(name)) {
          std::ostringstream os;
          os << "is also given in [params] (params." << name << " = " << cfg.params.at(name)
             << "); a parameter is either fixed in [params] or varied per trajectory in "
                "[ensemble.params], not both";
          throw ConfigError("ensemble.params." + name, os.str());
        }
      }
      cfg.param_dists = parse_initial(pn->as_table(), "ensemble.params", names);
    }
  }
  // lambda0: the vakonomic multipliers, and ell0 of the embedded formulation
  // (row l: embedded constraint l, which replaces constraint l)
  if (!cfg.lambda0.empty() &&
      std::find(cfg.formulations.begin(), cfg.formulations.end(), "vakonomic") == cfg.formulations.end() &&
      std::find(cfg.formulations.begin(), cfg.formulations.end(), "embedded") == cfg.formulations.end())
    throw ConfigError("ensemble.lambda0", "given, but neither a vakonomic nor an embedded formulation is selected");
  // sampler-specific checks
  auto all_specs = [&](auto&& f) {
    for (auto* m : {&cfg.q0, &cfg.qd0, &cfg.lambda0, &cfg.param_dists})
      for (auto& [name, d] : *m) f(name, d);
  };
  if (cfg.sampler == "grid") {
    int64_t product = 1;
    all_specs([&](const std::string& name, const Distribution& d) {
      if (d.kind == Distribution::Kind::uniform || d.kind == Distribution::Kind::normal)
        throw ConfigError("ensemble", "sampler 'grid' takes numbers, linspace or values, not a random "
                                      "distribution (for '" + name + "')");
      const int64_t k = d.kind == Distribution::Kind::linspace ? d.count
                        : d.kind == Distribution::Kind::values ? static_cast<int64_t>(d.values.size())
                                                               : 1;
      if (product > (int64_t(1) << 40) / k) throw ConfigError("ensemble", "grid larger than 2^40 points");
      product *= k;
    });
    if (size_given && cfg.size != product)
      throw ConfigError("ensemble.size", "is " + std::to_string(cfg.size) + " but the grid has " +
                                             std::to_string(product) + " points (omit size for grids)");
    cfg.size = product;
  } else {
    // random, sobol, and the config's entries besides a state file's columns
    all_specs([&](const std::string& name, const Distribution& d) {
      if (d.kind == Distribution::Kind::linspace || d.kind == Distribution::Kind::values)
        throw ConfigError("ensemble", "sampler '" + cfg.sampler + "' takes numbers, uniform or normal, "
                                      "not linspace/values (for '" + name + "'; use sampler = \"grid\")");
    });
  }
  if (cfg.sampler == "file") {
    if (cfg.file.empty()) throw ConfigError("ensemble.file", "missing (sampler = \"file\" needs a file of initial states)");
    const int64_t rows = state_file_rows(cfg.file);
    if (size_given && cfg.size != rows)
      throw ConfigError("ensemble.size", "is " + std::to_string(cfg.size) + " but " + cfg.file + " has " +
                                             std::to_string(rows) + " rows of initial states (omit size "
                                             "to run every row)");
    cfg.size = rows;
  }
  check_varied_params(cfg, *mi, params_given);

  // [output]
  cfg.fields = {"q", "qdot", "constraint_residual", "energy"};
  if (const toml::table* ot = subtable(root, "output")) {
    if (const toml::node* n = ot->get("path")) cfg.output_path = as_string(*n, "output.path");
    if (const toml::node* n = ot->get("fields")) {
      cfg.fields = as_string_list(*n, "output.fields");
      for (const auto& f : cfg.fields)
        if (std::find(known_fields().begin(), known_fields().end(), f) == known_fields().end())
          throw ConfigError("output.fields", "unknown field '" + f + "' (accepted: " + join(known_fields()) + ")");
      for (size_t a = 0; a < cfg.fields.size(); ++a)
        for (size_t b = a + 1; b < cfg.fields.size(); ++b)
          if (cfg.fields[a] == cfg.fields[b])
            throw ConfigError("output.fields", "'" + cfg.fields[a] + "' is listed twice");
    }
    // statistics only: no per-trajectory time series (fields = [] says the same)
    if (const toml::node* n = ot->get("mode")) {
      const std::string mode = as_choice(*n, "output.mode", {"full", "statistics"});
      if (mode == "statistics") {
        if (ot->get("fields") && !cfg.fields.empty())
          throw ConfigError("output.mode", "\"statistics\" writes no per-trajectory time series, but "
                                           "output.fields lists " + join(cfg.fields) +
                                           " (remove output.fields, or use mode = \"full\")");
        cfg.fields.clear();
      } else if (cfg.fields.empty()) {
        throw ConfigError("output.mode", "\"full\" needs at least one output.fields entry (accepted: " +
                                         join(known_fields()) + "); for no time series use mode = \"statistics\"");
      }
    }
    if (const toml::node* n = ot->get("memory_budget_mb")) {
      cfg.memory_budget_mb = as_number(*n, "output.memory_budget_mb");
      if (!(cfg.memory_budget_mb >= 1)) throw ConfigError("output.memory_budget_mb", "must be >= 1");
    }
    if (const toml::node* n = ot->get("window")) {
      const int64_t w = as_integer(*n, "output.window");
      if (w < 1 || w > 100000) throw ConfigError("output.window", "must be in [1, 100000]");
      cfg.window = static_cast<int>(w);
    }
    if (const toml::node* n = ot->get("compression")) {
      const int64_t c = as_integer(*n, "output.compression");
      if (c < 0 || c > 9)
        throw ConfigError("output.compression",
                          "must be an integer in [0, 9] (0: no compression; 1-9: shuffle + deflate at that level)");
      cfg.compression = static_cast<int>(c);
    }
  }
  if (cfg.output_path.empty()) throw ConfigError("output.path", "missing (the HDF5 file to write)");
  if (cfg.output_path.find('\0') != std::string::npos)
    throw ConfigError("output.path", "contains a NUL character");
  {
    // only a new path or a regular file can be (over)written: not a device
    // node, a FIFO or a folder, with or without --overwrite
    std::error_code ec;
    const auto st = std::filesystem::symlink_status(cfg.output_path, ec);
    if (!ec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
      throw ConfigError("output.path", "'" + cfg.output_path + "' exists and is not a regular file "
                                       "(a device, FIFO, link or folder); choose a file path");
  }

  // [backend]
  if (const toml::table* bt = subtable(root, "backend")) {
    if (const toml::node* n = bt->get("device")) cfg.device = as_choice(*n, "backend.device", {"auto", "omp", "cpp", "cuda"});
    if (const toml::node* n = bt->get("gpu")) {
      const int64_t g = as_integer(*n, "backend.gpu");
      if (g < 0 || g > 1023) throw ConfigError("backend.gpu", "must be a CUDA device index >= 0");
      cfg.gpu = static_cast<int>(g);
      cfg.gpu_given = true;
    }
    if (const toml::node* n = bt->get("threads")) {
      const int64_t t = as_integer(*n, "backend.threads");
      if (t < 0 || t > 4096) throw ConfigError("backend.threads", "must be in [0, 4096] (0: all cores)");
      cfg.threads = static_cast<int>(t);
    }
  }
  // [compare]
  if (const toml::table* ct = subtable(root, "compare")) {
    if (const toml::node* n = ct->get("threshold")) {
      cfg.compare_threshold = as_number(*n, "compare.threshold");
      if (!(cfg.compare_threshold > 0)) throw ConfigError("compare.threshold", "must be > 0");
    }
  }
  return cfg;
}

RunConfig load_config(const std::string& path, const std::vector<std::string>& overrides) {
  // a regular file of sane size: not /dev/zero, a FIFO or a folder
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) throw ConfigError("", "cannot read config file '" + path + "': no such file");
  if (!std::filesystem::is_regular_file(st))
    throw ConfigError("", "config file '" + path + "' is not a regular file (a TOML file is expected)");
  if (std::filesystem::file_size(path, ec) > (64u << 20))
    throw ConfigError("", "config file '" + path + "' is larger than 64 MiB; not a configuration");
  std::ifstream f(path);
  if (!f) throw ConfigError("", "cannot read config file '" + path + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_config(ss.str(), overrides, path);
}

}  // namespace nholo
