// nholo/host/model_language/event_read.cpp — read_event_tables
// (host/model_language/event_compile.hpp): an [[events]] array, a
// configuration's or a model file's, its tables' keys and TOML types read;
// their values and expressions are compile_event_table's to check. Keys are
// named events[k].<key>, k counted from 0 in the order written.
#include <algorithm>
#include <climits>
#include <string>
#include <vector>

#include "host/model_language/config_error.hpp"
#include "host/model_language/event_compile.hpp"
#include "host/model_language/toml_values.hpp"

namespace nholo {

namespace {

using toml_values::as_choice;
using toml_values::as_integer;
using toml_values::as_string;
using toml_values::type_name;

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

}  // namespace

void check_event_table_keys(const toml::array& a, const std::string& key) {
  const std::vector<std::string> accepted = tables::names_of(kEventKeys);
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

std::vector<EventConfig> read_event_tables(const toml::node& n, const std::string& key) {
  if (!n.is_array())
    throw ConfigError(key, std::string("expected an array of tables ([[events]] with "
                                       "name = \"...\" and expr = \"...\"), got ") +
                               type_name(n));
  const toml::array& a = *n.as_array();
  if (a.size() > static_cast<size_t>(kMaxEvents))
    throw ConfigError(key, std::to_string(a.size()) + " [[events]] tables; at most " +
                               std::to_string(kMaxEvents) + " events per run");
  check_event_table_keys(a, key);
  std::vector<EventConfig> events;
  for (size_t k = 0; k < a.size(); ++k) events.push_back(read_event(a[k], key, k));
  return events;
}

}  // namespace nholo
