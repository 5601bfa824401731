// nholo/host/model_language/toml_values.hpp — a TOML value of a named key
// (integrator.dt, events[0].name) read as its type: ConfigError naming the
// key and what was found otherwise. The configuration's readers
// (host/config/config_parse.hpp) and the [[events]] reader share them.
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <string>
#include <vector>

namespace nholo::toml_values {

const char* type_name(const toml::node& n);                     // "a table", "a string", ...
double as_number(const toml::node& n, const std::string& key);  // finite
int64_t as_integer(const toml::node& n, const std::string& key);
std::string as_string(const toml::node& n, const std::string& key);
std::string as_choice(const toml::node& n, const std::string& key,
                      const std::vector<std::string>& accepted);
bool as_boolean(const toml::node& n, const std::string& key);

}  // namespace nholo::toml_values
