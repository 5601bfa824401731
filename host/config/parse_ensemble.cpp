// nholo/host/config/parse_ensemble.cpp — the [ensemble] table: size, seed,
// sampler, initial states, the parameters that vary per trajectory, and the
// checks that depend on the sampler (grids, state files, parameter ranges and
// relations).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <tuple>

#include "host/config/config_parse.hpp"
#include "host/config/model_info.hpp"
#include "host/model_language/number_text.hpp"
#include "host/config/sampling.hpp"
#include "host/config/tables.hpp"

namespace fs = std::filesystem;

namespace nholo::config_parse {

namespace {

// ensemble.file: a relative path is relative to the config file's folder (as
// a model file's path is, parse_model.cpp), not to the current folder.
std::string resolve_state_file(const std::string& file, const std::string& source) {
  fs::path p(file);
  std::error_code ec;
  if (!file.empty() && p.is_relative() && !source.empty() && fs::is_regular_file(source, ec))
    p = fs::path(source).parent_path() / p;
  return p.string();
}

// [ensemble.params]: each name a parameter of the model, none also in [params].
std::map<std::string, Distribution> parse_param_dists(const toml::node& pn, const ModelInfo& mi,
                                                      const std::set<std::string>& params_given,
                                                      const RunConfig& cfg) {
  if (!pn.is_table())
    throw ConfigError(
        "ensemble.params",
        std::string("expected a table of parameter distributions, got ") + type_name(pn));
  std::vector<std::string> names;
  for (const auto& p : mi.params) names.push_back(p.name);
  for (auto&& [k, v] : *pn.as_table()) {
    (void)v;
    const std::string name(k.str());
    if (std::find(names.begin(), names.end(), name) == names.end())
      throw ConfigError(
          "ensemble.params." + name,
          "unknown parameter of model '" + cfg.model + "' (accepted: " +
              (names.empty() ? std::string("none: the model has no parameters") : join(names)) +
              ")");
    const ParamDescription& p =
        *std::find_if(mi.params.begin(), mi.params.end(),
                      [&](const ParamDescription& d) { return d.name == name; });
    if (!p.derived.empty()) throw ConfigError("ensemble.params." + name, derived_refusal(p));
    if (params_given.count(name)) {
      std::ostringstream os;
      os << "is also given in [params] (params." << name << " = " << cfg.params.at(name)
         << "); a parameter is either fixed in [params] or varied per trajectory in "
            "[ensemble.params], not both";
      throw ConfigError("ensemble.params." + name, os.str());
    }
  }
  return parse_initial(pn.as_table(), "ensemble.params", names);
}

// The keys of the [ensemble] table; returns whether `size` was given.
bool parse_ensemble_table(const toml::table* et, const ModelInfo& mi,
                          const std::set<std::string>& params_given, RunConfig& cfg) {
  bool size_given = false;
  if (!et) return size_given;
  if (const auto v = read_integer(*et, "ensemble.size")) {
    cfg.size = *v;
    size_given = true;
  }
  if (const auto v = read_integer(*et, "ensemble.seed")) cfg.seed = static_cast<uint64_t>(*v);
  if (const auto v = read_choice(*et, "ensemble.sampler", tables::kSamplers)) cfg.sampler = *v;
  if (const auto v = read_choice(*et, "ensemble.on_violation", tables::kOnViolation))
    cfg.on_violation = *v;
  if (const auto v = read_string(*et, "ensemble.file"))
    cfg.file = resolve_state_file(*v, cfg.source);
  cfg.q0 = parse_initial(subtable(*et, "q0"), "ensemble.q0", mi.coordinates);
  cfg.qd0 = parse_initial(subtable(*et, "qd0"), "ensemble.qd0", mi.coordinates);
  cfg.lambda0 = parse_initial(subtable(*et, "lambda0"), "ensemble.lambda0", mi.constraints);
  if (const toml::node* pn = et->get("params"))
    cfg.param_dists = parse_param_dists(*pn, mi, params_given, cfg);
  return size_given;
}

// What the sampler accepts of the distributions; the ensemble's size for a
// grid (the product of its axes) and a state file (its rows).
void check_sampler(bool size_given, RunConfig& cfg) {
  auto all_specs = [&](auto&& f) {
    for (auto* m : {&cfg.q0, &cfg.qd0, &cfg.lambda0, &cfg.param_dists})
      for (auto& [name, d] : *m) f(name, d);
  };
  if (cfg.sampler == SamplerKind::grid) {
    int64_t product = 1;
    all_specs([&](const std::string& name, const Distribution& d) {
      if (d.kind == Distribution::Kind::uniform || d.kind == Distribution::Kind::normal)
        throw ConfigError("ensemble",
                          "sampler 'grid' takes numbers, linspace or values, not a random "
                          "distribution (for '" +
                              name + "')");
      const int64_t k = d.kind == Distribution::Kind::linspace ? d.count
                        : d.kind == Distribution::Kind::values
                            ? static_cast<int64_t>(d.values.size())
                            : 1;
      if (product > (int64_t(1) << 40) / k)
        throw ConfigError("ensemble", "grid larger than 2^40 points");
      product *= k;
    });
    if (size_given && cfg.size != product)
      throw ConfigError("ensemble.size", "is " + std::to_string(cfg.size) + " but the grid has " +
                                             std::to_string(product) +
                                             " points (omit size for grids)");
    cfg.size = product;
  } else {
    // random, sobol, and the config's entries besides a state file's columns
    all_specs([&](const std::string& name, const Distribution& d) {
      if (d.kind == Distribution::Kind::linspace || d.kind == Distribution::Kind::values)
        throw ConfigError("ensemble", std::string("sampler '") + name_of(cfg.sampler) +
                                          "' takes numbers, uniform or normal, "
                                          "not linspace/values (for '" +
                                          name + "'; use sampler = \"grid\")");
    });
  }
  if (cfg.sampler == SamplerKind::file) {
    if (cfg.file.empty())
      throw ConfigError("ensemble.file",
                        "missing (sampler = \"file\" needs a file of initial states)");
    const int64_t rows = state_file_rows(cfg.file);
    if (size_given && cfg.size != rows)
      throw ConfigError("ensemble.size", "is " + std::to_string(cfg.size) + " but " + cfg.file +
                                             " has " + std::to_string(rows) +
                                             " rows of initial states (omit size "
                                             "to run every row)");
    cfg.size = rows;
  }
}

// ---- the parameters that vary per trajectory

std::string needs_text(const ParamDescription& p) {
  return p.range_text().empty() ? std::string("any finite value") : p.range_text();
}

// The params.<name> columns of a state file: parameter -> column.
std::map<std::string, int> file_param_columns(const RunConfig& cfg, const ModelInfo& mi,
                                              const std::set<std::string>& params_given) {
  const std::string model = "model '" + cfg.model + "'";
  std::map<std::string, int> file_column;  // parameter -> column of the file
  if (cfg.sampler != SamplerKind::file) return file_column;
  const std::vector<std::string> header = state_file_header(cfg.file);
  for (size_t h = 0; h < header.size(); ++h) {
    if (header[h].rfind("params.", 0) != 0) continue;
    const std::string name = header[h].substr(7);
    const auto it = std::find_if(mi.params.begin(), mi.params.end(),
                                 [&](const ParamDescription& p) { return p.name == name; });
    if (it == mi.params.end()) {
      std::vector<std::string> names;
      for (const auto& p : mi.params) names.push_back("params." + p.name);
      throw ConfigError("ensemble.file",
                        cfg.file + ": column '" + header[h] + "' is not a parameter of " + model +
                            " (accepted: " + (names.empty() ? std::string("none") : join(names)) +
                            ")");
    }
    if (!it->derived.empty())
      throw ConfigError("ensemble.file",
                        cfg.file + ": column '" + header[h] + "': " + derived_refusal(*it));
    if (params_given.count(name)) {
      std::ostringstream os;
      os << cfg.file << ": column '" << header[h]
         << "' varies the parameter that [params] fixes (params." << name << " = "
         << cfg.params.at(name) << "); remove one of them";
      throw ConfigError("ensemble.file", os.str());
    }
    if (cfg.param_dists.count(name))
      throw ConfigError("ensemble.params." + name, "given both in the config and in the file " +
                                                       cfg.file + " (column '" + header[h] + "')");
    file_column[name] = static_cast<int>(h);
  }
  return file_column;
}

void add_varied_derived(RunConfig& cfg, const ModelInfo& mi);

// Per parameter (model order), the least and greatest value it takes.
struct ParamBounds {
  std::vector<double> lo, hi;
  bool bounded = true, random_dist = false;
};

// The bounds of each parameter, each distribution and file column checked
// against the parameter's range; cfg.varied_params filled in.
ParamBounds varied_param_bounds(RunConfig& cfg, const ModelInfo& mi,
                                const std::map<std::string, int>& file_column) {
  const std::string model = "model '" + cfg.model + "'";
  ParamBounds pb;
  cfg.varied_params.clear();
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
           << needs_text(p) << p.doc_note()
           << "; accepted for a bounded parameter: a number, uniform, "
           << "linspace or values inside that range";
        throw ConfigError(key, os.str());
      }
      if (std::isfinite(a) && (!p.admits(a) || !p.admits(b))) {
        std::ostringstream os;
        os << "draws values in [" << a << ", " << b << "] (" << d.describe()
           << "), outside the range " << model << " allows: " << p.name << " " << needs_text(p)
           << p.doc_note() << "; accepted: a number, uniform, linspace or values with every value "
           << needs_text(p);
        throw ConfigError(key, os.str());
      }
      if (d.kind == Distribution::Kind::uniform || d.kind == Distribution::Kind::normal)
        pb.random_dist = true;
      cfg.varied_params.push_back(p.name);
    } else if (const auto fc = file_column.find(p.name); fc != file_column.end()) {
      a = INFINITY;
      b = -INFINITY;
      // the file streamed (never held whole)
      for_each_state_row(
          cfg.file, [&](int64_t, const std::vector<double>& row, int64_t line, std::streamoff) {
            const double v = row[fc->second];
            if (!p.admits(v)) {
              std::ostringstream os;
              os << cfg.file << " line " << line << ": params." << p.name << " = "
                 << short_number(v) << " is outside the range " << model << " allows: " << p.name
                 << " " << needs_text(p) << p.doc_note();
              throw ConfigError("ensemble.file", os.str());
            }
            a = std::min(a, v);
            b = std::max(b, v);
            return true;
          });
      cfg.varied_params.push_back(p.name);
    }
    pb.bounded = pb.bounded && std::isfinite(a) && std::isfinite(b);
    pb.lo.push_back(a);
    pb.hi.push_back(b);
  }
  add_varied_derived(cfg, mi);
  return pb;
}

// A derived parameter varies when a parameter it uses does: those added to
// cfg.varied_params (kept in the model's order).
void add_varied_derived(RunConfig& cfg, const ModelInfo& mi) {
  if (!mi.derive_params || cfg.varied_params.empty()) return;
  std::set<std::string> varied(cfg.varied_params.begin(), cfg.varied_params.end());
  // the derived parameters may use each other (in any order): until nothing changes
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& p : mi.params)
      if (!p.derived.empty() && !varied.count(p.name) &&
          std::any_of(p.derived_from.begin(), p.derived_from.end(),
                      [&](const std::string& u) { return varied.count(u) > 0; }))
        grew = varied.insert(p.name).second;
  }
  cfg.varied_params.clear();
  for (const auto& p : mi.params)
    if (varied.count(p.name)) cfg.varied_params.push_back(p.name);
}

// What the model refuses in one combination v of its parameters (all of
// them, in its order; the derived ones recomputed here, in place): a derived
// parameter outside its range, or the model's relation broken; "" when
// nothing.
std::string params_problem(const ModelInfo& mi, std::vector<double>& v) {
  if (mi.derive_params) {
    mi.derive_params(v);
    for (size_t j = 0; j < mi.params.size(); ++j) {
      const ParamDescription& p = mi.params[j];
      if (!p.derived.empty() && !p.admits(v[j]))
        return p.name + " = " + p.derived + " is " + short_number(v[j]) + ", where it needs " +
               needs_text(p) + p.doc_note();
    }
  }
  return mi.check_params ? mi.check_params(v) : std::string();
}

// "model 'NAME' at a = 1, b = 2"
std::string describe_params(const RunConfig& cfg, const ModelInfo& mi,
                            const std::vector<double>& v) {
  std::ostringstream os;
  os << "model '" << cfg.model << "'"
     << " at";
  for (size_t j = 0; j < mi.params.size(); ++j)
    os << (j ? ", " : " ") << mi.params[j].name << " = " << v[j];
  return os.str();
}

// Every row of a state file whose varied parameters are all columns (or
// constants) is a trajectory: the model's relation checked at each.
void check_relation_per_row(const RunConfig& cfg, const ModelInfo& mi, const ParamBounds& pb,
                            const std::map<std::string, int>& file_column) {
  std::vector<double> v;
  for_each_state_row(
      cfg.file, [&](int64_t, const std::vector<double>& row, int64_t line, std::streamoff) {
        v = pb.lo;
        for (size_t j = 0; j < mi.params.size(); ++j)
          if (const auto fc = file_column.find(mi.params[j].name); fc != file_column.end())
            v[j] = row[fc->second];
        const std::string bad = params_problem(mi, v);
        if (!bad.empty()) {
          std::ostringstream os;
          os << cfg.file << " line " << line << ": " << bad << " (" << describe_params(cfg, mi, v)
             << ")";
          throw ConfigError("ensemble.file", os.str());
        }
        return true;
      });
}

// The model's relation at every corner of the box the distributions span.
void check_relation_at_corners(const RunConfig& cfg, const ModelInfo& mi, const ParamBounds& pb) {
  const std::vector<double>& lo = pb.lo;
  const std::vector<double>& hi = pb.hi;
  std::vector<size_t> span;  // parameters with lo < hi
  for (size_t j = 0; j < lo.size(); ++j)
    if (lo[j] < hi[j]) span.push_back(j);
  for (uint64_t corner = 0; corner < (uint64_t(1) << span.size()); ++corner) {
    std::vector<double> v = lo;
    for (size_t k = 0; k < span.size(); ++k)
      if ((corner >> k) & 1) v[span[k]] = hi[span[k]];
    const std::string bad = params_problem(mi, v);
    if (!bad.empty()) {
      std::ostringstream os;
      os << "the distributions of";
      for (size_t j = 0, k = 0; j < mi.params.size(); ++j)
        if (std::find(cfg.varied_params.begin(), cfg.varied_params.end(), mi.params[j].name) !=
            cfg.varied_params.end())
          os << (k++ ? ", " : " ") << mi.params[j].name << " (in [" << lo[j] << ", " << hi[j]
             << "])";
      os << " reach parameters the model refuses: " << bad << " (" << describe_params(cfg, mi, v)
         << "); accepted: distributions whose every combination satisfies it";
      throw ConfigError("ensemble.params", os.str());
    }
  }
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
void check_varied_params(RunConfig& cfg, const ModelInfo& mi,
                         const std::set<std::string>& params_given) {
  const std::map<std::string, int> file_column = file_param_columns(cfg, mi, params_given);
  const ParamBounds pb = varied_param_bounds(cfg, mi, file_column);
  // a derived parameter that does not vary: its one value in its range
  for (const auto& p : mi.params)
    if (!p.derived.empty() && !p.admits(cfg.params.at(p.name)) &&
        std::find(cfg.varied_params.begin(), cfg.varied_params.end(), p.name) ==
            cfg.varied_params.end())
      throw ConfigError("params", p.name + " = " + p.derived + " is " +
                                      short_number(cfg.params.at(p.name)) + ", where it needs " +
                                      needs_text(p) + p.doc_note() + " (" +
                                      describe_params(cfg, mi, pb.lo) + ")");
  if (!mi.check_params && !mi.derive_params) return;
  if (cfg.varied_params.empty()) {
    // [ensemble.params] was empty: the fixed parameters' relation as in
    // [params], and the derived parameters' ranges
    std::vector<double> v = pb.lo;
    const std::string bad = params_problem(mi, v);
    if (!bad.empty()) throw ConfigError("params", bad + " (" + describe_params(cfg, mi, v) + ")");
    return;
  }
  if (!file_column.empty()) {
    // every varied parameter a column (or a constant): each row is a trajectory
    if (pb.random_dist) return;
    check_relation_per_row(cfg, mi, pb, file_column);
    return;
  }
  if (!pb.bounded) return;  // a normal distribution: checked per trajectory
  check_relation_at_corners(cfg, mi, pb);
}

}  // namespace

void parse_ensemble(const toml::table& root, const ModelInfo& mi,
                    const std::set<std::string>& params_given, RunConfig& cfg) {
  const toml::table* et = subtable(root, "ensemble");
  const bool size_given = parse_ensemble_table(et, mi, params_given, cfg);
  // lambda0: the vakonomic multipliers, and ell0 of the embedded formulation
  // (row l: embedded constraint l, which replaces constraint l)
  const bool takes_lambda0 =
      std::any_of(cfg.formulations.begin(), cfg.formulations.end(), [](const std::string& f) {
        const tables::FormulationEntry* e = tables::find_formulation(f);
        return e && e->takes_lambda0;
      });
  if (!cfg.lambda0.empty() && !takes_lambda0)
    throw ConfigError("ensemble.lambda0",
                      "given, but neither a vakonomic nor an embedded formulation is selected");
  check_sampler(size_given, cfg);
  if (cfg.sampler == SamplerKind::file && !takes_lambda0)
    for (const std::string& column : state_file_header(cfg.file))
      if (column.rfind("lambda0.", 0) == 0)
        throw ConfigError("ensemble.file",
                          cfg.file + ": column '" + column +
                              "' given, but neither a vakonomic nor an embedded formulation is "
                              "selected (lambda0.<constraint> columns need one of them)");
  if (cfg.size > kMaxEnsembleSize)
    throw ConfigError(
        "ensemble.size",
        std::to_string(cfg.size) + " trajectories" +
            (size_given ? "" : std::string(" (the ") + name_of(cfg.sampler) + " sampler's)") +
            ": at most 2^34 = " + std::to_string(kMaxEnsembleSize) +
            " per file; split a larger survey into runs of several configurations "
            "or seeds (docs/usage.md)");
  check_varied_params(cfg, mi, params_given);
}

}  // namespace nholo::config_parse
