// nholo/host/model_language/toml_type_name.hpp — a TOML value's type as the messages of
// the run config and of model files name it ("expected a number, got a string").
#pragma once

#include <toml++/toml.h>

namespace nholo {

// "a table", "an array", "a string", ...; a floating-point value is named
// `floating_point` (the run config says "a number", model files "a
// floating-point number", where integers and numbers are told apart)
inline const char* toml_type_name(const toml::node& n, const char* floating_point = "a number") {
  switch (n.type()) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return floating_point;
    case toml::node_type::boolean: return "a boolean";
    default: return "a date/time";
  }
}

}  // namespace nholo
