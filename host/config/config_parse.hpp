// nholo/host/config/config_parse.hpp — the parts of parse_config (config.cpp),
// one per table of the configuration, and the TOML value readers they share.
// Internal to host/config/: every function throws ConfigError naming the key.
#pragma once

#include <toml++/toml.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "host/config/choices.hpp"
#include "host/config/config.hpp"
#include "host/config/config_keys.hpp"
#include "host/model_language/toml_values.hpp"

namespace nholo {

struct ModelInfo;
struct ParamDescription;

namespace config_parse {

// ---- TOML values (parse_values.cpp)

// a number, an integer, a string, a choice, a boolean:
// host/model_language/toml_values.hpp
using toml_values::as_boolean;
using toml_values::as_choice;
using toml_values::as_integer;
using toml_values::as_number;
using toml_values::as_string;
using toml_values::type_name;
std::vector<std::string> as_string_list(const toml::node& n, const std::string& key);
std::vector<double> as_number_list(const toml::node& n, const std::string& key);
// a choice of `table` (its names the accepted ones)
template <class Enum, size_t N>
Enum as_enum(const toml::node& n, const std::string& key,
             const tables::NamedChoice<Enum> (&table)[N]) {
  return tables::find_choice(table, as_choice(n, key, tables::names_of(table)))->value;
}

// ---- declared keys (config_keys.hpp): the key `dotted` of table t (t
// holds the keys of the declaration's table), read as its type and checked
// against its declared range; nothing when t lacks it

std::optional<double> read_number(const toml::table& t, const std::string& dotted);
std::optional<int64_t> read_integer(const toml::table& t, const std::string& dotted);
std::optional<bool> read_boolean(const toml::table& t, const std::string& dotted);
std::optional<std::string> read_string(const toml::table& t, const std::string& dotted);
template <class Enum, size_t N>
std::optional<Enum> read_choice(const toml::table& t, const std::string& dotted,
                                const tables::NamedChoice<Enum> (&table)[N]) {
  const ConfigKey& k = config_key(dotted);
  if (const toml::node* n = t.get(k.name)) return as_enum(*n, dotted, table);
  return std::nullopt;
}
// a value of key `dotted` (given, a default or derived) against its declared range
void check_range(const std::string& dotted, double v);

// every key of t among those config_schema() accepts in `table`
void check_keys(const toml::table& t, const std::string& table, const std::string& prefix);
// root.name as a table; nullptr when absent
const toml::table* subtable(const toml::table& root, const std::string& name);
Distribution parse_distribution(const toml::node& n, const std::string& key);
// a table of name = distribution, each name one of `names`
std::map<std::string, Distribution> parse_initial(const toml::table* t, const std::string& key,
                                                  const std::vector<std::string>& names);
// one --set key=value (TOML text, or a bare string) inserted at the dotted key
void apply_override(toml::table& root, const std::string& assignment);

// ---- model, formulations, [params] (parse_model.cpp)

// model = "path.toml": the file read into root as its [model] table. Returns
// where the [model] table came from ("" when there is none).
std::string inline_model_file(toml::table& root, const std::string& source);
// the model named, given as a table, or loaded from a plugin (cfg.model,
// model_spec, model_plugin set); its description
const ModelInfo& resolve_model(const toml::table& root, const std::string& source,
                               const std::string& model_source, RunConfig& cfg);
void parse_formulations(const toml::table& root, const ModelInfo& mi, RunConfig& cfg);
// cfg.params complete (the derived parameters derived from the values in
// force; cfg.derived_params, derive_params set) and checked; returns the
// names [params] gives
std::set<std::string> parse_params(const toml::table& root, const ModelInfo& mi, RunConfig& cfg);
// why a run may not set the derived parameter p ("cl is derived from lam
// (cl = cos(lam)): set lam instead ...")
std::string derived_refusal(const ParamDescription& p);

// ---- [ensemble] (parse_ensemble.cpp)

void parse_ensemble(const toml::table& root, const ModelInfo& mi,
                    const std::set<std::string>& params_given, RunConfig& cfg);

// ---- [time], [integrator], [output], [backend], [compare] (parse_sections.cpp)

void parse_time(const toml::table& root, RunConfig& cfg);
void parse_integrator(const toml::table& root, RunConfig& cfg);
void parse_output(const toml::table& root, RunConfig& cfg);
void parse_backend(const toml::table& root, RunConfig& cfg);
void parse_compare(const toml::table& root, RunConfig& cfg);
// [lyapunov] (after the model and the formulations)
void parse_lyapunov(const toml::table& root, const ModelInfo& mi, RunConfig& cfg);

// ---- [[events]] (parse_events.cpp)

// the keys of every table of the [[events]] array (with the other tables'
// keys, before anything else is read)
void check_event_keys(const toml::table& root);
// cfg.events, each entry checked and its expression compiled against the
// model's names (compile_event_table, host/config/event_table.hpp); after
// parse_params and parse_ensemble (the parameters' values and which of them
// vary per trajectory)
void parse_events(const toml::table& root, const ModelInfo& mi, RunConfig& cfg);

}  // namespace config_parse
}  // namespace nholo
