// nholo/host/model_language/named_choice.hpp — a choice made by name: an
// enum's table of names, its lookups, and the list of accepted names in a
// message. Below config/ because the model language's [[events]] choose their
// direction and action by these tables (event_config.hpp); config/'s choices
// (choices.hpp, tables.hpp) share them.
#pragma once

#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

namespace nholo {

// "a, b, c"
inline std::string join(const std::vector<std::string>& v, const std::string& sep = ", ") {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

namespace tables {

// a named value of an enum the configuration chooses by name
template <class Enum>
struct NamedChoice {
  const char* name;
  Enum value;
};

// a table whose entry i is the enum's value i (name_of indexes it by value)
template <class Enum, size_t N>
constexpr bool indexed_by_enum(const NamedChoice<Enum> (&table)[N]) {
  for (size_t i = 0; i < N; ++i)
    if (static_cast<size_t>(table[i].value) != i) return false;
  return true;
}

template <class Enum, size_t N>
constexpr const char* name_of(const NamedChoice<Enum> (&table)[N], Enum value) {
  return table[static_cast<size_t>(value)].name;
}

// the entry named `name`; nullptr when there is none
template <class Enum, size_t N>
const NamedChoice<Enum>* find_choice(const NamedChoice<Enum> (&table)[N], const std::string& name) {
  for (const auto& e : table)
    if (name == e.name) return &e;
  return nullptr;
}

// the names of a table, in its order (for messages and choices)
template <class Entry, size_t N>
std::vector<std::string> names_of(const Entry (&table)[N]) {
  std::vector<std::string> v;
  for (const auto& e : table) {
    if constexpr (std::is_same_v<Entry, const char*>)
      v.push_back(e);
    else
      v.push_back(e.name);
  }
  return v;
}

}  // namespace tables

}  // namespace nholo
