// nholo/host/model_language/expr/tree.cpp — the function table of the expression
// language and the text helpers (expr/tree.hpp).
#include "host/model_language/expr/tree.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace nholo::model_file {

namespace {

constexpr FnInfo kFunctions[] = {
    {"sin", Fn::sin, 1},     {"cos", Fn::cos, 1},   {"tan", Fn::tan, 1},   {"exp", Fn::exp, 1},
    {"log", Fn::log, 1},     {"sqrt", Fn::sqrt, 1}, {"abs", Fn::abs, 1},   {"sign", Fn::sign, 1},
    {"atan2", Fn::atan2, 2}, {"pow", Fn::pow, 2},   {"sinh", Fn::sinh, 1}, {"cosh", Fn::cosh, 1},
    {"tanh", Fn::tanh, 1},
};

}  // namespace

const FnInfo* find_function(const std::string& s) {
  for (const auto& f : kFunctions)
    if (s == f.name) return &f;
  return nullptr;
}
const FnInfo& function_info(Fn fn) {
  for (const auto& f : kFunctions)
    if (f.fn == fn) return f;
  return kFunctions[0];
}

std::string joined(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

std::string function_list() {
  std::vector<std::string> v;
  for (const auto& f : kFunctions) v.push_back(f.name);
  return joined(v);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
bool is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_word(char c) {
  return is_alpha(c) || is_digit(c) || c == '_';
}

// [A-Za-z][A-Za-z0-9_]*
bool is_identifier(const std::string& s) {
  if (s.empty() || !is_alpha(s[0])) return false;
  for (char c : s)
    if (!is_word(c)) return false;
  return true;
}

int index_of(const std::vector<std::string>& v, const std::string& s) {
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] == s) return static_cast<int>(i);
  return -1;
}

std::vector<std::string> suffixed(const std::vector<std::string>& v, const char* suffix) {
  std::vector<std::string> r;
  for (const auto& s : v) r.push_back(s + suffix);
  return r;
}

}  // namespace nholo::model_file
