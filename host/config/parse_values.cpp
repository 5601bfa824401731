// nholo/host/config/parse_values.cpp — reading TOML values for the config:
// lists, distributions, declared and known keys, and the --set overrides
// (a number, an integer, a string, a choice, a boolean:
// host/model_language/toml_values.cpp).
#include <algorithm>
#include <cmath>
#include <sstream>

#include "host/config/config_parse.hpp"

namespace nholo::config_parse {

namespace {

// the value of a number key as its refusal shows it
std::string value_text(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

void check_range(const std::string& dotted, double v) {
  const ConfigKey& k = config_key(dotted);
  if (!k.range.admits(v)) throw ConfigError(dotted, k.refusal_for(value_text(v)));
}

std::optional<double> read_number(const toml::table& t, const std::string& dotted) {
  const ConfigKey& k = config_key(dotted);
  const toml::node* n = t.get(k.name);
  if (!n) return std::nullopt;
  const double v = as_number(*n, dotted);
  check_range(dotted, v);
  return v;
}

std::optional<int64_t> read_integer(const toml::table& t, const std::string& dotted) {
  const ConfigKey& k = config_key(dotted);
  const toml::node* n = t.get(k.name);
  if (!n) return std::nullopt;
  const int64_t v = as_integer(*n, dotted);
  if (!k.range.admits(static_cast<double>(v)))
    throw ConfigError(dotted, k.refusal_for(std::to_string(v)));
  return v;
}

std::optional<bool> read_boolean(const toml::table& t, const std::string& dotted) {
  const toml::node* n = t.get(config_key(dotted).name);
  if (!n) return std::nullopt;
  return as_boolean(*n, dotted);
}

std::optional<std::string> read_string(const toml::table& t, const std::string& dotted) {
  const toml::node* n = t.get(config_key(dotted).name);
  if (!n) return std::nullopt;
  return as_string(*n, dotted);
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
      throw ConfigError(prefix + key,
                        "unknown key (accepted in " +
                            (table.empty() ? std::string("the top level") : "[" + table + "]") +
                            ": " + join(accepted) + ")");
  }
}

const toml::table* subtable(const toml::table& root, const std::string& name) {
  const toml::node* n = root.get(name);
  if (!n) return nullptr;
  if (!n->is_table())
    throw ConfigError(name, std::string("expected a table, got ") + type_name(*n));
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
  if (!n.is_table())
    throw ConfigError(key, std::string("expected ") + accepted + ", got " + type_name(n));
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
      throw ConfigError(
          key + "." + name,
          "unknown name (accepted: " + (names.empty() ? std::string("none") : join(names)) + ")");
    out[name] = parse_distribution(v, key + "." + name);
  }
  return out;
}

namespace {

// A word that is no TOML value but reads as a string: a name or a path
// (integrator.method=rk4, output.path=runs/a.h5). Letters, digits (and any
// non-ASCII byte, e.g. UTF-8 letters) and _ - . / + : @ % ~; no blanks, no
// quotes, brackets, braces, '=', ',' or '#', which belong to TOML values.
bool is_bare_word(const std::string& s) {
  if (s.empty()) return false;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c >= 0x80 || std::string("_-./+:@%~").find(ch) != std::string::npos;
    if (!ok) return false;
  }
  return true;
}

}  // namespace

namespace {

// The table of `part` = "name[k]" (bracket at `open`) inside t: entry k of
// the array of tables `name`, which must exist and have it.
toml::table* array_entry(toml::table& t, const std::string& part, std::size_t open,
                         const std::string& key) {
  const std::string name = part.substr(0, open), index = part.substr(open + 1);
  const bool digits = index.size() >= 2 && index.back() == ']' && index.size() <= 8 &&
                      index.find_first_not_of("0123456789") == index.size() - 1;
  if (name.empty() || !digits)
    throw ConfigError("--set " + key, "'" + part +
                                          "' is not a key: accepted a name or name[k], an entry "
                                          "of an array of tables, k from 0");
  const std::size_t k = std::stoul(index.substr(0, index.size() - 1));
  toml::array* a = t.get(name) ? t.get(name)->as_array() : nullptr;
  if (!a)
    throw ConfigError("--set " + key, "'" + name + "' is not an array of tables here" +
                                          (t.get(name) ? "" : " (the configuration has none)"));
  if (k >= a->size())
    throw ConfigError("--set " + key, "'" + name + "' has " + std::to_string(a->size()) +
                                          " entries, counted from 0: no entry " +
                                          std::to_string(k));
  toml::table* e = a->get(k)->as_table();
  if (!e)
    throw ConfigError("--set " + key,
                      "entry " + std::to_string(k) + " of '" + name + "' is not a table");
  return e;
}

}  // namespace

// Insert `value` (TOML text, or a bare string) at the dotted key.
void apply_override(toml::table& root, const std::string& assignment) {
  const auto eq = assignment.find('=');
  // one line: TOML would read what follows a newline as more keys (dropped)
  if (const auto nl = assignment.find_first_of("\n\r"); nl != std::string::npos)
    throw ConfigError("--set " + assignment.substr(0, std::min(eq, nl)),
                      "the value contains a newline or carriage return; give one key=value on "
                      "one line per --set");
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
  } catch (const toml::parse_error& e) {
    // a bare word is a string, unless it starts like a number ("2e", an
    // integer past 64 bits): that is a number TOML cannot read
    const auto digit = [](char c) { return c >= '0' && c <= '9'; };
    const bool numeric =
        !text.empty() && (digit(text[0]) || ((text[0] == '-' || text[0] == '+' || text[0] == '.') &&
                                             text.size() > 1 && digit(text[1])));
    if (!is_bare_word(text) || numeric) {
      std::ostringstream os;
      os << "'" << text << "' is not a valid TOML value (" << e.description()
         << "); accepted: a TOML value (a number, true/false, \"a string\", [an, array], "
            "{ a = table }) or a bare word of letters, digits and _ - . / + : @ % ~, read as a "
            "string";
      throw ConfigError("--set " + key, os.str());
    }
    parsed = toml::table{{"v", text}};  // a bare word: take it as a string
  }
  if (parsed.size() != 1 || !parsed.get("v"))
    throw ConfigError("--set " + key, "'" + text + "' is more than one TOML value");
  std::vector<std::string> parts;
  std::stringstream ss(key);
  for (std::string p; std::getline(ss, p, '.');) {
    if (p.empty()) throw ConfigError("--set " + key, "empty component in the key");
    parts.push_back(p);
  }
  toml::table* t = &root;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    // name[k]: entry k of an array of tables ([[events]]: events[0].expr)
    const auto open = parts[i].find('[');
    if (open != std::string::npos) {
      t = array_entry(*t, parts[i], open, key);
      continue;
    }
    toml::node* n = t->get(parts[i]);
    if (!n) {
      t->insert(parts[i], toml::table{});
      n = t->get(parts[i]);
    }
    if (!n->is_table()) throw ConfigError("--set " + key, "'" + parts[i] + "' is not a table");
    t = n->as_table();
  }
  if (parts.back().find('[') != std::string::npos)
    throw ConfigError("--set " + key,
                      "an entry of an array of tables is set key by key: --set 'events[0].expr=...'"
                      " (or the whole array: --set 'events=[{ name = ..., expr = ... }]')");
  parsed.get("v")->visit([&](auto&& val) { t->insert_or_assign(parts.back(), val); });
  // the save times are either of two keys: the one set here replaces the
  // other (an example's save_every made every --set time.saveat an error)
  if (key == "time.saveat") t->erase("save_every");
  if (key == "time.save_every") t->erase("saveat");
}

}  // namespace nholo::config_parse
