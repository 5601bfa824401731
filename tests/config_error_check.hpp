// nholo/tests/config_error_check.hpp — what the tests of the configuration
// (tests/test_event_config.cpp, test_sampling.cpp) expect of a refusal: a
// ConfigError naming the key, with every given word in its message.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "host/model_language/config_error.hpp"

namespace nholo_test {

// f() throws a ConfigError with this key whose message holds every word.
inline void expect_config_error(const std::function<void()>& f, const std::string& key,
                                const std::vector<std::string>& words) {
  try {
    f();
    ADD_FAILURE() << "no ConfigError; expected one for " << key;
  } catch (const nholo::ConfigError& e) {
    EXPECT_EQ(e.key(), key) << e.what();
    for (const auto& w : words)
      EXPECT_NE(std::string(e.what()).find(w), std::string::npos)
          << "expected '" << w << "' in: " << e.what();
  }
}

}  // namespace nholo_test
