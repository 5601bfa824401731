// nholo/host/model_language/toml_values.cpp — a TOML value of a named key
// read as a number, an integer, a string, a choice or a boolean, ConfigError
// naming the key otherwise (host/model_language/toml_values.hpp).
#include "host/model_language/toml_values.hpp"

#include <algorithm>
#include <cmath>

#include "host/model_language/config_error.hpp"
#include "host/model_language/named_choice.hpp"
#include "host/model_language/toml_type_name.hpp"

namespace nholo::toml_values {

const char* type_name(const toml::node& n) {
  return toml_type_name(n);
}

double as_number(const toml::node& n, const std::string& key) {
  if (!n.is_number()) throw ConfigError(key, std::string("expected a number, got ") + type_name(n));
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

bool as_boolean(const toml::node& n, const std::string& key) {
  if (!n.is_boolean())
    throw ConfigError(key, std::string("must be true or false, got ") + type_name(n));
  return *n.value<bool>();
}

}  // namespace nholo::toml_values
