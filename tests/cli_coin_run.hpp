// nholo/tests/cli_coin_run.hpp — what the tests of the nholo command
// (tests/test_cli.cpp, test_cli_errors.cpp) share: the rolling coin's run
// configuration most of them run (kCoinConfig, writing coin.h5), and
// shorthands of tests/nholo_cli.hpp for these tests: nholo (run the command),
// temp_dir (a fresh folder named nholo_cli_NAME), spawn_nholo (start it in
// the background, to signal it).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/coin_config.hpp"
#include "tests/nholo_cli.hpp"

namespace nholo_test::cli {

namespace fs = std::filesystem;

// what these tests take from tests/nholo_cli.hpp by name (`using namespace
// nholo_test::cli` brings them in with the shorthands below)
using nholo_test::read_text;
using nholo_test::Result;
using nholo_test::write_file;

// Runs `nholo args` in `dir`, stdout and stderr captured together.
inline Result nholo(const std::string& args, const fs::path& dir) {
  return nholo_test::run_nholo(args, dir);
}

inline fs::path temp_dir(const std::string& name) {
  return nholo_test::temp_dir("nholo_cli", name);
}

inline const std::string kCoinConfig = [] {
  nholo_test::CoinConfig c = nholo_test::spinning_coins();
  c.formulations = {"udwadia_kalaba"};
  c.params = {{"mass", 1.0}, {"radius", 0.5}, {"g", 9.81}, {"slope", 0.3}};
  c.t_end = 6.0;
  c.save_every = 0.25;
  c.use_integrator("dop853", 1e-12, 1e-12);
  c.drift = "project";
  c.size = 300;
  c.seed = 7;
  c.path = "coin.h5";
  c.fields = std::vector<std::string>{"q", "qdot", "constraint_residual", "energy"};
  return c.text();
}();

// Starts `nholo args...` in dir with its output in `log`; returns its pid.
inline pid_t spawn_nholo(const fs::path& dir, const std::vector<std::string>& args,
                         const std::string& log) {
  return nholo_test::spawn(dir, args, [] {}, log);
}

}  // namespace nholo_test::cli
