// Tests of the declarations of the configuration's keys
// (host/config/config_keys.cpp): the key tables of docs/usage.md and
// docs/events.md list the declared keys in their order with their defaults
// and choices; parse_config sets the declared defaults; the schema and the
// refusals come from the declarations.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "host/config/config.hpp"
#include "host/config/config_keys.hpp"

using namespace nholo;

namespace {

struct DocRow {
  std::string key, default_text, rest;  // rest: the cells after the default
};

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(' '), e = s.find_last_not_of(' ');
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// "a | b \| c | d" -> {"a", "b \| c", "d"} (an escaped bar stays in its cell)
std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> v;
  std::string cur;
  for (size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '|' && line[i - 1] != '\\') {
      v.push_back(trim(cur));
      cur.clear();
    } else {
      cur += line[i];
    }
  }
  return v;
}

std::string without_backticks(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), '`'), s.end());
  return s;
}

// the rows of the table of `doc` whose header line is `header`
std::vector<DocRow> doc_table(const std::string& doc, const std::string& header) {
  std::ifstream f(std::string(NHOLO_SOURCE_DIR) + "/" + doc);
  EXPECT_TRUE(f.good()) << doc;
  std::vector<DocRow> rows;
  bool in_table = false;
  for (std::string line; std::getline(f, line);) {
    if (line == header) {
      in_table = true;
      std::getline(f, line);  // |---|---|
      continue;
    }
    if (!in_table) continue;
    if (line.empty() || line[0] != '|') break;
    const std::vector<std::string> c = cells(line);
    DocRow r{without_backticks(c.at(0)), c.at(1), ""};
    for (size_t i = 2; i < c.size(); ++i) r.rest += c[i] + " | ";
    rows.push_back(r);
  }
  EXPECT_FALSE(rows.empty()) << "no table '" << header << "' in " << doc;
  return rows;
}

// a key's row in docs/usage.md: "[params]", "[ensemble.q0]", "[[events]]", "time.t_end"
std::string row_name(const ConfigKey& k) {
  if (k.type == KeyType::named_values || k.type == KeyType::distributions)
    return "[" + k.dotted() + "]";
  if (k.type == KeyType::table_array) return "[[" + k.dotted() + "]]";
  return k.dotted();
}

// the declarations docs/usage.md has a row for, in its order: the top
// level's keys, a table's keys (documented by them) in the table's place
std::vector<const ConfigKey*> usage_rows() {
  std::vector<const ConfigKey*> v;
  for (const ConfigKey& top : config_keys()) {
    if (*top.table) continue;
    if (top.type != KeyType::table) {
      v.push_back(&top);
      continue;
    }
    for (const ConfigKey& k : config_keys())
      if (k.table == std::string(top.name)) v.push_back(&k);
  }
  return v;
}

// every name of the choice key k appears in `text` as `name`, in table order
void expect_choices_in(const ConfigKey& k, const std::string& text) {
  size_t at = 0;
  for (const std::string& c : k.choices()) {
    const size_t p = text.find("`" + c + "`", at);
    EXPECT_NE(p, std::string::npos)
        << k.dotted() << ": choice '" << c << "' missing (or out of table order) in: " << text;
    if (p != std::string::npos) at = p;
  }
}

// the value a default text names: its first word, without backticks;
// "10^7" is a power
std::string default_value(const ConfigKey& k) {
  std::string s = without_backticks(k.default_text);
  s = s.substr(0, s.find(' '));
  if (const auto caret = s.find('^'); caret != std::string::npos) {
    std::ostringstream os;
    os << std::pow(std::stod(s.substr(0, caret)), std::stod(s.substr(caret + 1)));
    return os.str();
  }
  return s;
}

bool is_number(const std::string& s, double& v) {
  try {
    size_t used = 0;
    v = std::stod(s, &used);
    return used == s.size();
  } catch (const std::exception&) {
    return false;
  }
}

const char* kMinimalConfig = R"(
model = "rolling_coin"
[time]
t_end = 1.0
[output]
path = "x.h5"
)";

}  // namespace

TEST(ConfigKeys, UsageTableListsTheDeclaredKeys) {
  const std::vector<DocRow> rows = doc_table("docs/usage.md", "| key | default | meaning |");
  const std::vector<const ConfigKey*> keys = usage_rows();
  ASSERT_EQ(rows.size(), keys.size()) << "docs/usage.md's key table has a row per declared key";
  for (size_t i = 0; i < keys.size(); ++i) {
    const ConfigKey& k = *keys[i];
    EXPECT_EQ(rows[i].key, row_name(k)) << "row " << i + 1 << " of docs/usage.md's key table";
    EXPECT_EQ(rows[i].default_text, k.default_text) << row_name(k) << "'s default";
    if (k.type == KeyType::choice) expect_choices_in(k, rows[i].rest);
    // the keys of each table of [[events]] are named in its row
    if (k.type == KeyType::table_array) {
      for (const ConfigKey& e : config_keys()) {
        if (e.table != std::string(k.name)) continue;
        EXPECT_NE(rows[i].rest.find("`" + std::string(e.name) + "`"), std::string::npos)
            << e.name << " not in the row of " << row_name(k);
      }
    }
  }
}

TEST(ConfigKeys, EventsTableListsTheDeclaredKeys) {
  const std::vector<DocRow> rows =
      doc_table("docs/events.md", "| key | default | accepted | meaning |");
  std::vector<const ConfigKey*> keys;
  for (const ConfigKey& k : config_keys())
    if (k.table == std::string("events")) keys.push_back(&k);
  ASSERT_EQ(rows.size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(rows[i].key, keys[i]->name);
    EXPECT_EQ(rows[i].default_text, keys[i]->default_text) << keys[i]->dotted();
    if (keys[i]->type == KeyType::choice) expect_choices_in(*keys[i], rows[i].rest);
  }
}

TEST(ConfigKeys, ParseConfigSetsTheDeclaredDefaults) {
  const RunConfig cfg = parse_config(kMinimalConfig, {});
  int checked = 0;
  for (const ConfigKey& k : config_keys()) {
    if (!k.value_in) continue;
    const std::string declared = default_value(k), parsed = k.value_in(cfg);
    double a = 0, b = 0;
    if (is_number(declared, a) && is_number(parsed, b))
      EXPECT_EQ(a, b) << k.dotted() << ": declared " << k.default_text << ", parsed " << parsed;
    else
      EXPECT_EQ(declared, parsed) << k.dotted();
    ++checked;
  }
  EXPECT_GT(checked, 20);
}

TEST(ConfigKeys, EveryKeyIsDeclaredOnceWithItsChecks) {
  for (const ConfigKey& k : config_keys()) {
    int same = 0;
    for (const ConfigKey& o : config_keys()) same += o.dotted() == k.dotted();
    EXPECT_EQ(same, 1) << k.dotted();
    EXPECT_EQ(&config_key(k.dotted()), &k);
    EXPECT_EQ(k.type == KeyType::choice, k.choices != nullptr) << k.dotted();
    const bool bounded = std::isfinite(k.range.lo) || std::isfinite(k.range.hi);
    EXPECT_EQ(bounded, k.refusal != nullptr) << k.dotted() << ": a range needs its refusal";
    EXPECT_TRUE(*k.doc) << k.dotted();
    // a table's keys belong to a declared top-level key
    if (*k.table) {
      EXPECT_NO_THROW(config_key(k.table)) << k.dotted();
    }
  }
  EXPECT_THROW(config_key("integrator.no_such_key"), std::logic_error);
}

TEST(ConfigKeys, SchemaAndRefusalsComeFromTheDeclarations) {
  const auto& schema = config_schema();
  for (const ConfigKey& k : config_keys()) {
    const auto& names = schema.at(k.table);
    EXPECT_NE(std::find(names.begin(), names.end(), k.name), names.end()) << k.dotted();
  }
  // the keys of [[events]] the model language reads (a model file's and a
  // configuration's) are the declared ones, in their order
  EXPECT_EQ(schema.at("events"), tables::names_of(kEventKeys));
  auto refusal = [](const std::string& set) {
    try {
      (void)parse_config(kMinimalConfig, {set});
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refusal("ensemble.size=0"), "config error: ensemble.size: must be >= 1, got 0");
  EXPECT_EQ(refusal("integrator.rtol=2"),
            "config error: integrator.rtol: is 2; must be > 0 and < 1 (the relative error a "
            "step may make; 1 or more accepts any step)");
  EXPECT_EQ(refusal("output.window=100001"), "config error: output.window: must be in [1, 100000]");
  EXPECT_EQ(refusal("lyapunov.enabled=1"),
            "config error: lyapunov.enabled: must be true or false, got an integer");
  EXPECT_EQ(refusal("backend.device=gpu"),
            "config error: backend.device: unknown value 'gpu' (accepted: auto, omp, cpp, cuda)");
  EXPECT_EQ(refusal("time.t_start=0.5"), "accepted");
}
