// nholo/tests/coin_config.hpp — the rolling coin's run configuration (the TOML
// that `nholo run` reads), built from named options, for the tests that run
// the command (tests/test_cli.cpp, test_cli_errors.cpp, test_pipeline.cpp,
// test_field_memory.cpp, test_faults.cpp, test_fault_stops.cpp, test_shards.cpp, test_mpi.cpp,
// test_bounded_memory.cpp, test_params_sweep.cpp).
//
//   CoinConfig c = spinning_coins();   // the ensemble most tests integrate
//   c.formulations = {"udwadia_kalaba", "null_space"};
//   c.t_end = 2.0;
//   c.size = 2600;
//   write_file(dir / "c.toml", c.text());
//
// An option left at its "not written" value (an empty string or list, 0 for
// tolerances, sizes, windows and budgets, -1 for the seed) is left out of the
// text, so that nholo's default applies. Numbers are written as the shortest
// decimal that reads back as the same double (0.25, 1e-12, 6.283185307179586).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nholo_test {

// v as a TOML float: the shortest %g form that reads back as v (exponent
// without leading zeros), with ".0" added when it would read as an integer.
inline std::string toml_number(double v) {
  char buf[32];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  const size_t e = s.find('e');
  if (e != std::string::npos) {  // 1e-09 -> 1e-9
    size_t d = e + 2;
    while (d + 1 < s.size() && s[d] == '0') s.erase(d, 1);
  } else if (s.find_first_of(".n") == std::string::npos) {
    s += ".0";
  }
  return s;
}

// Distributions of an initial coordinate or parameter (docs/usage.md).
inline std::string uniform(double a, double b) {
  return "{ uniform = [" + toml_number(a) + ", " + toml_number(b) + "] }";
}
inline std::string normal(double mean, double sd) {
  return "{ normal = [" + toml_number(mean) + ", " + toml_number(sd) + "] }";
}

// key = value lines of a table, in order; values are TOML text.
using TomlEntries = std::vector<std::pair<std::string, std::string>>;

struct CoinConfig {
  std::vector<std::string> formulations;               // empty: nholo's default
  std::vector<std::pair<std::string, double>> params;  // [params]
  double t_end = 1.0, save_every = 0.25;               // [time]
  std::string method;                                  // [integrator]
  double rtol = 0, atol = 0, dt = 0;                   // dt: rk4's step
  std::string drift;
  int64_t size = 0, seed = -1;  // [ensemble]
  std::string sampler, file;
  TomlEntries q0, qd0, ensemble_params;  // [ensemble.q0], [ensemble.qd0], [ensemble.params]
  std::string path = "out.h5";           // [output]
  int memory_budget_mb = 0, window = 0;
  std::optional<std::vector<std::string>> fields;  // {} writes fields = []
  std::string extra;                               // appended as is (more tables)

  // [integrator]: the method and its tolerances
  void use_integrator(const std::string& name, double relative_tol, double absolute_tol) {
    method = name;
    rtol = relative_tol;
    atol = absolute_tol;
  }

  std::string text() const {
    std::string t = "\nmodel = \"rolling_coin\"\n";
    if (!formulations.empty()) t += "formulations = " + string_list(formulations) + "\n";
    if (!params.empty()) {
      t += "[params]\n";
      for (const auto& [k, v] : params) t += k + " = " + toml_number(v) + "\n";
    }
    t += "[time]\nt_end = " + toml_number(t_end) + "\nsave_every = " + toml_number(save_every) +
         "\n";
    if (!method.empty() || rtol > 0 || atol > 0 || dt > 0 || !drift.empty()) {
      t += "[integrator]\n";
      if (!method.empty()) t += "method = \"" + method + "\"\n";
      if (rtol > 0) t += "rtol = " + toml_number(rtol) + "\n";
      if (atol > 0) t += "atol = " + toml_number(atol) + "\n";
      if (dt > 0) t += "dt = " + toml_number(dt) + "\n";
      if (!drift.empty()) t += "drift = \"" + drift + "\"\n";
    }
    if (size > 0 || seed >= 0 || !sampler.empty() || !file.empty()) {
      t += "[ensemble]\n";
      if (size > 0) t += "size = " + std::to_string(size) + "\n";
      if (seed >= 0) t += "seed = " + std::to_string(seed) + "\n";
      if (!sampler.empty()) t += "sampler = \"" + sampler + "\"\n";
      if (!file.empty()) t += "file = \"" + file + "\"\n";
    }
    t += table("[ensemble.q0]", q0) + table("[ensemble.qd0]", qd0) +
         table("[ensemble.params]", ensemble_params);
    t += "[output]\npath = \"" + path + "\"\n";
    if (memory_budget_mb > 0) t += "memory_budget_mb = " + std::to_string(memory_budget_mb) + "\n";
    if (window > 0) t += "window = " + std::to_string(window) + "\n";
    if (fields) t += "fields = " + string_list(*fields) + "\n";
    return t + extra;
  }

 private:
  static std::string string_list(const std::vector<std::string>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", \"" : "\"") + v[i] + "\"";
    return s + "]";
  }
  static std::string table(const char* header, const TomlEntries& e) {
    if (e.empty()) return "";
    std::string s = std::string(header) + "\n";
    for (const auto& [k, v] : e) s += k + " = " + v + "\n";
    return s;
  }
};

// The ensemble most tests integrate: coins upright at the origin (x = y =
// phi = 0) with uniform headings, rolling at theta_dot ~ U[1, 3] and
// spinning at phi_dot ~ N(0, 2); the rest at nholo's defaults.
inline CoinConfig spinning_coins() {
  CoinConfig c;
  c.q0 = {{"x", "0.0"}, {"y", "0.0"}, {"phi", "0.0"}, {"theta", uniform(0.0, 2 * M_PI)}};
  c.qd0 = {{"theta", uniform(1.0, 3.0)}, {"phi", normal(0.0, 2.0)}};
  return c;
}

// The ensemble of the pipeline tests (tests/test_pipeline.cpp,
// test_field_memory.cpp): spinning coins under two formulations (so that
// their comparison runs too), 2,500 of them over t in [0, 3], 13 saves of q,
// qdot and energy, DOPRI5, on the OpenMP backend, into a.h5.
inline CoinConfig compared_coins() {
  CoinConfig c = spinning_coins();
  c.formulations = {"udwadia_kalaba", "lagrange_multiplier"};
  c.t_end = 3.0;
  c.save_every = 0.25;
  c.use_integrator("dopri5", 1e-9, 1e-11);
  c.size = 2500;
  c.seed = 11;
  c.path = "a.h5";
  c.fields = std::vector<std::string>{"q", "qdot", "energy"};
  c.extra = "[backend]\ndevice = \"omp\"\n";
  return c;
}

// The ensemble of the shard and MPI tests (tests/test_shards.cpp,
// test_mpi.cpp): two formulations, `size` coins with uniform headings,
// windows of 3 saves.
inline CoinConfig shard_coins(double t_end, double save_every, int64_t size) {
  CoinConfig c;
  c.formulations = {"udwadia_kalaba", "null_space"};
  c.params = {{"slope", 0.3}};
  c.t_end = t_end;
  c.save_every = save_every;
  c.use_integrator("dopri5", 1e-8, 1e-8);
  c.size = size;
  c.seed = 3;
  c.q0 = {{"theta", uniform(0.0, 2 * M_PI)}};
  c.qd0 = {{"theta", uniform(1.0, 3.0)}, {"phi", uniform(0.5, 1.5)}};
  c.window = 3;
  return c;
}

// The [params] table of Appell's particle falling under gravity with drag
// (the "appell" model), for the tests that run it beside the coin.
inline constexpr const char* kAppellParams = R"([params]
alpha = 0.0
drag = 0.2
force_x = 0.0
force_y = 0.0
force_z = -9.81
)";

}  // namespace nholo_test
