// nholo/host/model_language/config_error.hpp — an error of a configuration
// key: the key (events[k].expr, integrator.dt) and what is wrong with its
// value. Below config/ because the model language reads and compiles
// [[events]], a configuration's and a model file's, and names their keys so.
#pragma once

#include <stdexcept>
#include <string>

namespace nholo {

class ConfigError : public std::runtime_error {
 public:
  ConfigError(const std::string& key, const std::string& what)
      : std::runtime_error("config error: " + (key.empty() ? std::string() : key + ": ") + what),
        key_(key),
        reason_(what) {}
  const std::string& key() const { return key_; }
  const std::string& reason() const { return reason_; }  // what() without the key

 private:
  std::string key_;
  std::string reason_;
};

}  // namespace nholo
