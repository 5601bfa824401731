// nholo/host/config/config_keys.hpp — every key of the run configuration,
// declared once (config_keys.cpp): its table, name, TOML type, default,
// accepted values (a range and the reason that refuses a value outside it,
// or a table of choices) and a line of doc. The parts of parse_config read
// each key through its declaration (config_parse.hpp read_number, ...);
// config_schema() and the unknown-key messages list the declared names in
// declaration order; tests/test_config_keys.cpp checks the key tables of
// docs/usage.md and docs/events.md and the defaults parse_config sets
// against them. Adding a key is its declaration plus its use.
#pragma once

#include <limits>
#include <string>
#include <vector>

namespace nholo {

struct RunConfig;

enum class KeyType {
  number,         // a finite number
  integer,        // an integer (a float of integral value is accepted)
  boolean,        // true or false
  string,         // a string
  choice,         // a string among ConfigKey::choices
  strings,        // a string or an array of strings
  numbers,        // an array of numbers
  model,          // a built-in model's name, a model file, a [model] table or a plugin
  table,          // a table of declared keys, documented by them (time, integrator, ...)
  named_values,   // a table of name = number, the names the model's ([params])
  distributions,  // a table of name = distribution ([ensemble.q0], ...)
  table_array,    // an array of tables of declared keys ([[events]])
};

// The values a number or integer key accepts: between lo and hi, each end
// included unless open.
struct KeyRange {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  bool lo_open = false;
  bool hi_open = false;
  bool admits(double v) const {
    return (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi);
  }
};

struct ConfigKey {
  const char* table;  // "" the top level; "events": each table of the [[events]] array
  const char* name;
  KeyType type;
  // the default as the key table of docs/usage.md (docs/events.md for the
  // keys of [[events]]) writes it, "" where the key has no row of its own
  const char* default_text;
  const char* doc;  // what the key says, in one line
  // KeyType::choice: the accepted names, in the order of their table
  std::vector<std::string> (*choices)() = nullptr;
  KeyRange range;
  // why a value outside range is refused ("{}" stands for the value)
  const char* refusal = nullptr;
  // what parse_config holds for the key, as text (a number, a choice's
  // name, true/false): the test of the declared defaults reads it
  std::string (*value_in)(const RunConfig&) = nullptr;

  // "table.name" ("name" at the top level): the key of messages and --set
  std::string dotted() const { return *table ? std::string(table) + "." + name : name; }
  // the reason a value outside range is refused: refusal, "{}" replaced by `value`
  std::string refusal_for(const std::string& value) const;
};

// Every key: the top level's, then each table's, each table's keys in the
// order of its accepted-key message.
const std::vector<ConfigKey>& config_keys();
// The declaration of "table.name"; std::logic_error for a key not declared
// (a parser reading a key it does not declare).
const ConfigKey& config_key(const std::string& dotted);

}  // namespace nholo
