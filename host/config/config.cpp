// nholo/host/config/config.cpp — parse_config as its parts (one per table of
// the configuration, config_parse.hpp), the schema of accepted keys, the
// effective text and its hash, and load_config.
#include "host/config/config.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "host/config/config_keys.hpp"
#include "host/config/config_parse.hpp"
#include "host/config/model_info.hpp"
#include "host/config/tables.hpp"

namespace nholo {

std::string config_notes(const RunConfig& cfg) {
  if (cfg.integrator.method != Method::rk4) return "";
  const double dt = cfg.integrator.dt;
  double prev = cfg.t_start;
  for (const double t : cfg.save_times) {
    const double span = t - prev;
    if (span > 0) {
      const double steps = span / dt;
      const double whole = std::ceil(steps * (1 - 1e-12));
      if (std::fabs(steps - std::round(steps)) > 1e-9 * std::max(1.0, steps)) {
        std::ostringstream os;
        os << "integrator.dt = " << dt << " does not divide the save interval " << span
           << " (t = " << prev << " to " << t << "): rk4 takes " << whole - 1
           << " steps of dt and one of " << span - (whole - 1) * dt
           << " there, so its step is not uniform (for a convergence study choose a dt that "
              "divides every save interval)";
        return os.str();
      }
    }
    prev = t;
  }
  return "";
}

const std::map<std::string, std::vector<std::string>>& config_schema() {
  static const std::map<std::string, std::vector<std::string>> schema = [] {
    std::map<std::string, std::vector<std::string>> m;
    for (const ConfigKey& k : config_keys()) m[k.table].push_back(k.name);
    return m;
  }();
  return schema;
}

const std::vector<std::string>& known_formulations() {
  static const std::vector<std::string> v = tables::names_of(tables::kFormulations);
  return v;
}

const std::vector<std::string>& known_fields() {
  static const std::vector<std::string> v = tables::names_of(tables::kFields);
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

toml::table parse_toml(const std::string& toml_text, const std::string& source) {
  try {
    return toml::parse(toml_text, source);
  } catch (const toml::parse_error& e) {
    std::ostringstream os;
    os << "not valid TOML at line " << e.source().begin.line << ", column "
       << e.source().begin.column << ": " << e.description();
    throw ConfigError("", os.str());
  }
}

// cfg.text: the effective configuration; cfg.result_hash: FNV-1a 64 of it
// without what does not decide the results (backend.*, output.path,
// output.memory_budget_mb).
void record_effective_config(const toml::table& root, RunConfig& cfg) {
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

// unknown keys at the top level, in each table and in each table of [[events]]
void check_all_keys(const toml::table& root) {
  using namespace config_parse;
  check_keys(root, "", "");
  for (const ConfigKey& k : config_keys())
    if (!*k.table && k.type == KeyType::table)
      if (const toml::table* st = subtable(root, k.name)) check_keys(*st, k.name, k.dotted() + ".");
  check_event_keys(root);
}

}  // namespace

RunConfig parse_config(const std::string& toml_text, const std::vector<std::string>& overrides,
                       const std::string& source) {
  using namespace config_parse;
  toml::table root = parse_toml(toml_text, source);
  for (const auto& o : overrides) apply_override(root, o);

  RunConfig cfg;
  cfg.source = source;
  const std::string model_source = inline_model_file(root, source);
  record_effective_config(root, cfg);
  check_all_keys(root);

  const ModelInfo& mi = resolve_model(root, source, model_source, cfg);
  parse_formulations(root, mi, cfg);
  const std::set<std::string> params_given = parse_params(root, mi, cfg);
  parse_time(root, cfg);
  parse_integrator(root, cfg);
  parse_ensemble(root, mi, params_given, cfg);
  parse_events(root, mi, cfg);
  parse_output(root, cfg);
  parse_backend(root, cfg);
  parse_compare(root, cfg);
  parse_lyapunov(root, mi, cfg);
  return cfg;
}

RunConfig load_config(const std::string& path, const std::vector<std::string>& overrides) {
  // a regular file of sane size: not /dev/zero, a FIFO or a folder
  // (the system's reason when it cannot be looked at: no such file, a
  // symlink loop, no permission)
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st))
    throw ConfigError("", "cannot read config file '" + path +
                              "': " + (ec ? ec.message() : std::string("no such file")));
  if (!std::filesystem::is_regular_file(st))
    throw ConfigError("",
                      "config file '" + path + "' is not a regular file (a TOML file is expected)");
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw ConfigError("", "cannot read config file '" + path + "': " + ec.message());
  if (size > (64u << 20))
    throw ConfigError("", "config file '" + path + "' is larger than 64 MiB; not a configuration");
  errno = 0;
  std::ifstream f(path);
  if (!f) {
    const int err = errno;
    throw ConfigError("", "cannot read config file '" + path + "'" +
                              (err ? ": " + std::string(std::strerror(err)) : std::string()));
  }
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_config(ss.str(), overrides, path);
}

}  // namespace nholo
