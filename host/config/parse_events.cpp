// nholo/host/config/parse_events.cpp — the [[events]] array of a configuration:
// each table's keys and TOML types read here, its values and its expression
// checked by compile_event_table (host/config/event_table.hpp, implemented
// by host/model_language/event_compile.cpp), the code that compiles them for
// the run, so that the configuration accepts exactly what a run can
// evaluate. Keys are named events[k].<key>, k counted from 0 in the order
// written.
#include <algorithm>
#include <climits>
#include <string>
#include <vector>

#include "host/config/config_parse.hpp"
#include "host/config/event_table.hpp"
#include "host/config/model_info.hpp"
#include "host/config/tables.hpp"

namespace nholo::config_parse {

namespace {

std::string entry_key(const std::string& key, size_t k) {
  return key + "[" + std::to_string(k) + "]";
}

// an integer key of an entry, within int's range (compile_event_table checks
// the accepted range itself; a value beyond int is refused here with it)
int int_of(const toml::node& n, const std::string& key, int64_t lo, int64_t hi, const char* what) {
  const int64_t v = as_integer(n, key);
  if (v < INT_MIN || v > INT_MAX)
    throw ConfigError(key, "is " + std::to_string(v) + "; accepted: an integer in [" +
                               std::to_string(lo) + ", " + std::to_string(hi) + "] (" + what + ")");
  return static_cast<int>(v);
}

// one table of the array (entry k of `key`), its TOML read (values checked by compile_event_table)
EventConfig read_event(const toml::node& n, const std::string& key, size_t k) {
  const std::string p = entry_key(key, k);
  const toml::table* t = n.as_table();
  if (!t)
    throw ConfigError(p, std::string("expected a table ([[events]] with name = \"...\" and "
                                     "expr = \"...\"), got ") +
                             type_name(n));
  EventConfig e;
  const toml::node* name = t->get("name");
  if (!name) throw ConfigError(p + ".name", "missing (required in each [[events]]: name, expr)");
  e.name = as_string(*name, p + ".name");
  const toml::node* expr = t->get("expr");
  if (!expr) throw ConfigError(p + ".expr", "missing (required in each [[events]]: name, expr)");
  e.expr = as_string(*expr, p + ".expr");
  if (const toml::node* d = t->get("direction"))
    e.direction = as_choice(*d, p + ".direction", tables::names_of(tables::kEventDirections));
  if (const toml::node* a = t->get("action"))
    e.action = as_choice(*a, p + ".action", tables::names_of(tables::kEventActions));
  if (const toml::node* m = t->get("max_records"))
    e.max_records = int_of(*m, p + ".max_records", 0, tables::kMaxEventRecords,
                           "the crossings stored per trajectory; every crossing is counted");
  if (const toml::node* s = t->get("subdivisions"))
    e.subdivisions = int_of(*s, p + ".subdivisions", 1, kMaxEventSubdivisions,
                            "the parts of each step the function is sampled at");
  return e;
}


// the keys of each table of an [[events]] array (key: its name in messages)
void check_entry_keys(const toml::array& a, const std::string& key) {
  const std::vector<std::string>& accepted = config_schema().at("events");
  size_t k = 0;
  for (const auto& e : a) {
    if (const toml::table* t = e.as_table()) {
      for (auto&& [name_key, v] : *t) {
        (void)v;
        const std::string name(name_key.str());
        if (std::find(accepted.begin(), accepted.end(), name) == accepted.end())
          throw ConfigError(entry_key(key, k) + "." + name,
                            "unknown key (accepted in each [[events]]: " + join(accepted) + ")");
      }
    }
    ++k;
  }
}

}  // namespace

void check_event_keys(const toml::table& root) {
  const toml::node* n = root.get("events");
  if (!n || !n->is_array()) return;  // the type is parse_events' to report
  check_entry_keys(*n->as_array(), "events");
}

void parse_events(const toml::table& root, const ModelInfo& mi, RunConfig& cfg) {
  cfg.events.clear();
  // a model file's own events first (checked when it was read)
  const std::vector<EventConfig> model_events =
      cfg.model_spec ? model_spec_events(*cfg.model_spec) : std::vector<EventConfig>{};
  const toml::node* n = root.get("events");
  std::vector<EventConfig> own = n ? read_event_tables(*n, "events") : std::vector<EventConfig>{};
  if (model_events.size() + own.size() > static_cast<size_t>(kMaxEvents))
    throw ConfigError("events", std::to_string(own.size()) + " [[events]] tables and " +
                                    std::to_string(model_events.size()) +
                                    " of the model file; at most " + std::to_string(kMaxEvents) +
                                    " events per run");
  for (size_t k = 0; k < own.size(); ++k)
    for (const EventConfig& m : model_events)
      if (own[k].name == m.name)
        throw ConfigError(entry_key("events", k) + ".name",
                          "'" + m.name + "' is an event of model " + cfg.model +
                              " already (declared in its model file); each event's name is "
                              "unique");
  // every value and expression of the configuration's own entries checked as
  // the run will compile them (keys events[k] as written)
  (void)compile_run_events(own, mi, cfg);
  cfg.events = model_events;
  cfg.events.insert(cfg.events.end(), own.begin(), own.end());
}

}  // namespace nholo::config_parse

namespace nholo {

EventTable compile_run_events(const std::vector<EventConfig>& events, const ModelInfo& mi,
                              const RunConfig& cfg) {
  std::vector<std::string> names;
  std::vector<double> values;
  for (const auto& p : mi.params) {
    names.push_back(p.name);
    values.push_back(cfg.params.at(p.name));
  }
  return compile_event_table(events, mi.coordinates, names, values, cfg.varied_params);
}

std::vector<EventConfig> read_event_tables(const toml::node& n, const std::string& key) {
  using namespace config_parse;
  if (!n.is_array())
    throw ConfigError(key, std::string("expected an array of tables ([[events]] with "
                                       "name = \"...\" and expr = \"...\"), got ") +
                               type_name(n));
  const toml::array& a = *n.as_array();
  if (a.size() > static_cast<size_t>(kMaxEvents))
    throw ConfigError(key, std::to_string(a.size()) + " [[events]] tables; at most " +
                               std::to_string(kMaxEvents) + " events per run");
  check_entry_keys(a, key);
  std::vector<EventConfig> events;
  for (size_t k = 0; k < a.size(); ++k) events.push_back(read_event(a[k], key, k));
  return events;
}

}  // namespace nholo
