// nholo/host/config/config_keys.cpp — the declarations of every key of the
// run configuration (config_keys.hpp): the top level's keys, then each
// table's, each in the order of the accepted-key messages.
#include "host/config/config_keys.hpp"

#include <cstdio>
#include <stdexcept>

#include "host/config/config.hpp"
#include "host/config/tables.hpp"
#include "host/config/trajectory_results.hpp"

namespace nholo {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- what a number or integer key accepts

KeyRange above(double lo) {
  return {lo, kInf, true, false};
}
KeyRange at_least(double lo) {
  return {lo, kInf, false, false};
}
KeyRange within(double lo, double hi) {
  return {lo, hi, false, false};
}
KeyRange strictly_within(double lo, double hi) {
  return {lo, hi, true, true};
}

// ---- a declaration

ConfigKey key(const char* table, const char* name, KeyType type, const char* default_text,
              const char* doc, std::string (*value_in)(const RunConfig&) = nullptr) {
  return ConfigKey{table, name, type, default_text, doc, nullptr, KeyRange{}, nullptr, value_in};
}

// a key whose values outside `range` are refused with `refusal`
ConfigKey checked(ConfigKey k, KeyRange range, const char* refusal) {
  k.range = range;
  k.refusal = refusal;
  return k;
}

template <auto& Table>
std::vector<std::string> choice_names() {
  return tables::names_of(Table);
}

ConfigKey choice(const char* table, const char* name, std::vector<std::string> (*choices)(),
                 const char* default_text, const char* doc,
                 std::string (*value_in)(const RunConfig&) = nullptr) {
  ConfigKey k = key(table, name, KeyType::choice, default_text, doc, value_in);
  k.choices = choices;
  return k;
}

// short names for the declarations below
using K = KeyType;
using Cfg = const RunConfig&;

// a value as value_in gives it: numbers to 17 digits
std::string text(double v) {
  char s[32];
  std::snprintf(s, sizeof s, "%.17g", v);
  return s;
}
std::string text(bool b) {
  return b ? "true" : "false";
}

// the top level
std::vector<ConfigKey> top_level_keys() {
  return {
      key("", "model", K::model, "— (required)",
          "a built-in model, a model file, a [model] table or a plugin"),
      key("", "formulations", K::strings, "`[\"udwadia_kalaba\"]`",
          "the formulations run on the same initial states"),
      key("", "params", K::named_values, "the model's defaults",
          "the model's parameters, fixed for every trajectory"),
      key("", "time", K::table, "", "the time span and the saves"),
      key("", "integrator", K::table, "", "the integration method and its controls"),
      key("", "ensemble", K::table, "", "the trajectories' initial states"),
      key("", "output", K::table, "", "the result file"),
      key("", "backend", K::table, "", "where the ensemble runs"),
      key("", "compare", K::table, "", "the comparison of the formulations"),
      key("", "events", K::table_array, "none", "event functions found along every trajectory"),
      key("", "lyapunov", K::table, "", "the largest Lyapunov exponent"),
  };
}

// [time]
std::vector<ConfigKey> time_keys() {
  return {
      key("time", "t_start", K::number, "0", "initial time, the first save",
          [](Cfg c) { return text(c.t_start); }),
      key("time", "t_end", K::number, "— (required)", "final time, > t_start"),
      checked(key("time", "save_every", K::number, "(t_end - t_start)/100",
                  "the interval between saves"),
              above(0), "must be > 0"),
      key("time", "saveat", K::numbers, "—", "the save times, increasing, up to t_end"),
  };
}

// [integrator]
std::vector<ConfigKey> integrator_keys() {
  return {
      choice("integrator", "method", choice_names<tables::kMethods>, "`dopri5`",
             "the integration method",
             [](Cfg c) { return std::string(tables::method_name(c.integrator.method)); }),
      checked(key("integrator", "rtol", K::number, "1e-10", "relative error a step may make",
                  [](Cfg c) { return text(c.integrator.rtol); }),
              strictly_within(0, 1),
              "is {}; must be > 0 and < 1 (the relative error a step may make; 1 or more "
              "accepts any step)"),
      checked(key("integrator", "atol", K::number, "1e-12", "absolute error a step may make",
                  [](Cfg c) { return text(c.integrator.atol); }),
              strictly_within(0, 1),
              "is {}; must be > 0 and < 1 (the absolute error a step may make; 1 or more "
              "accepts any step)"),
      checked(key("integrator", "dt", K::number, "1e-3",
                  "rk4's step; the adaptive methods' first trial step",
                  [](Cfg c) { return text(c.integrator.dt); }),
              above(0), "must be > 0"),
      checked(key("integrator", "dt_min", K::number, "1e-13", "step underflow guard",
                  [](Cfg c) { return text(c.integrator.dt_min); }),
              above(0), "must be > 0"),
      checked(key("integrator", "dt_max", K::number, "0 (none)", "step cap (0: none)",
                  [](Cfg c) { return text(c.integrator.dt_max); }),
              at_least(0), "must be >= 0 (0: unbounded)"),
      checked(key("integrator", "max_steps", K::integer, "10^7", "steps per output interval",
                  [](Cfg c) { return text(double(c.integrator.max_steps)); }),
              at_least(1), "must be >= 1"),
      choice("integrator", "drift", choice_names<tables::kDriftControls>, "`none`",
             "constraint drift control",
             [](Cfg c) { return std::string(tables::drift_name(c.eval.drift)); }),
      checked(key("integrator", "baumgarte_alpha", K::number, "10", "Baumgarte gain alpha",
                  [](Cfg c) { return text(c.eval.baumgarte_alpha); }),
              above(0), "must be > 0"),
      checked(key("integrator", "baumgarte_beta", K::number, "10", "Baumgarte gain beta",
                  [](Cfg c) { return text(c.eval.baumgarte_beta); }),
              above(0), "must be > 0"),
      checked(key("integrator", "pinv_rtol", K::number, "1e-12",
                  "relative rank tolerance of the pseudoinverses, in [1e-16, 1e-6]",
                  [](Cfg c) { return text(c.eval.pinv.rtol); }),
              above(0), "must be > 0"),
  };
}

// [ensemble]
std::vector<ConfigKey> ensemble_keys() {
  return {
      checked(key("ensemble", "size", K::integer, "1", "number of trajectories",
                  [](Cfg c) { return text(double(c.size)); }),
              at_least(1), "must be >= 1, got {}"),
      checked(key("ensemble", "seed", K::integer, "0", "random seed",
                  [](Cfg c) { return text(double(c.seed)); }),
              at_least(0), "must be >= 0"),
      choice("ensemble", "sampler", choice_names<tables::kSamplers>, "`random`",
             "how the initial states are drawn",
             [](Cfg c) { return std::string(name_of(c.sampler)); }),
      choice("ensemble", "on_violation", choice_names<tables::kOnViolation>, "`project`",
             "initial states that violate the constraints after completion",
             [](Cfg c) { return std::string(name_of(c.on_violation)); }),
      key("ensemble", "file", K::string, "—", "the state file of sampler = \"file\""),
      key("ensemble", "q0", K::distributions, "0", "initial coordinates"),
      key("ensemble", "qd0", K::distributions, "0", "initial velocities"),
      key("ensemble", "lambda0", K::distributions, "0",
          "initial multipliers (vakonomic) or ell (embedded)"),
      key("ensemble", "params", K::distributions, "none",
          "model parameters that vary per trajectory"),
  };
}

// [output]
std::vector<ConfigKey> output_keys() {
  return {
      key("output", "path", K::string, "— (required)", "the HDF5 file"),
      choice("output", "mode", choice_names<tables::kOutputModes>, "`full`",
             "per-save time series, or statistics only",
             [](Cfg c) {
               return std::string(
                   name_of(c.fields.empty() ? OutputMode::statistics : OutputMode::full));
             }),
      key("output", "fields", K::strings,
          "`[\"q\", \"qdot\", \"constraint_residual\", \"energy\"]`", "the per-save fields"),
      checked(key("output", "memory_budget_mb", K::number, "512",
                  "sets the slice size (trajectories integrated at once)",
                  [](Cfg c) { return text(c.memory_budget_mb); }),
              at_least(1), "must be >= 1"),
      checked(key("output", "window", K::integer, "16", "saves integrated per window",
                  [](Cfg c) { return text(double(c.window)); }),
              within(1, 100000), "must be in [1, 100000]"),
      checked(key("output", "compression", K::integer, "0", "deflate level, 0: none",
                  [](Cfg c) { return text(double(c.compression)); }),
              within(0, 9),
              "must be an integer in [0, 9] (0: no compression; 1-9: shuffle + deflate at "
              "that level)"),
  };
}

// [backend]
std::vector<ConfigKey> backend_keys() {
  return {
      choice("backend", "device", choice_names<tables::kDevices>, "`auto`",
             "the backend the ensemble runs on",
             [](Cfg c) { return std::string(name_of(c.device)); }),
      checked(key("backend", "gpu", K::integer, "0", "CUDA device index",
                  [](Cfg c) { return text(double(c.gpu)); }),
              within(0, 1023), "must be a CUDA device index >= 0"),
      checked(key("backend", "threads", K::integer, "0", "OpenMP threads (0: all cores)",
                  [](Cfg c) { return text(double(c.threads)); }),
              within(0, 4096), "must be in [0, 4096] (0: all cores)"),
      choice("backend", "simd", choice_names<tables::kSimd>, "`auto`",
             "CPU backends: trajectories integrated together in the vector unit (auto: "
             "AVX-512 8, AVX2 4 per core; off: one)",
             [](Cfg c) { return std::string(name_of(c.simd)); }),
      checked(key("backend", "steps_per_launch", K::integer, "1000",
                  "steps a launch advances a trajectory at most (0: a whole window)",
                  [](Cfg c) { return text(double(c.steps_per_launch)); }),
              within(0, 1e9),
              "must be an integer in [0, 1000000000] (steps a launch advances a trajectory at "
              "most; 0: a whole window per launch)"),
      checked(key("backend", "cpu_tail", K::integer, "32 per host thread",
                  "a GPU window's last trajectories finished on the CPU cores (0: never)"),
              within(0, 1e9),
              "must be an integer in [0, 1000000000] (a GPU window's last active trajectories, "
              "at most this many, are finished on the CPU cores; 0: never; not given: 32 per "
              "host thread)"),
  };
}

// [compare]
std::vector<ConfigKey> compare_keys() {
  return {
      checked(key("compare", "threshold", K::number, "1e-3",
                  "distance for the first exceedance time between formulations",
                  [](Cfg c) { return text(c.compare_threshold); }),
              above(0), "must be > 0"),
  };
}

// each table of [[events]] (docs/events.md); the event's integer
// ranges are checked where it is compiled (compile_event_table)
std::vector<ConfigKey> event_keys() {
  return {
      key("events", "name", K::string, "— (required)", "names the event's output group"),
      key("events", "expr", K::string, "— (required)", "the event function g(t, q, qdot)"),
      choice("events", "direction", choice_names<tables::kEventDirections>, "`both`",
             "which crossings of zero count"),
      choice("events", "action", choice_names<tables::kEventActions>, "`record`",
             "what a crossing does"),
      key("events", "max_records", K::integer, "100", "crossings stored per trajectory"),
      key("events", "subdivisions", K::integer, "1", "equal parts of a step g is sampled at"),
  };
}

// [lyapunov]
std::vector<ConfigKey> lyapunov_keys() {
  return {
      key("lyapunov", "enabled", K::boolean, "false",
          "the largest Lyapunov exponents of every trajectory",
          [](Cfg c) { return text(c.lyapunov); }),
      checked(key("lyapunov", "renormalize_every", K::number, "1",
                  "time between the tangent's renormalisations",
                  [](Cfg c) { return text(c.lyapunov_renormalize_every); }),
              above(0),
              "must be a time > 0 (the tangent vector is renormalised after the first step that "
              "ends at least this long after the last renormalisation)"),
      checked(key("lyapunov", "exponents", K::integer, "1",
                  "how many exponents: the largest, or the spectrum's first k (k tangent vectors)",
                  [](Cfg c) { return text(static_cast<double>(c.lyapunov_exponents)); }),
              within(1, tables::kMaxLyapunovExponents),
              "must be an integer from 1 to 64 (at most the state's size: 2n, 2n + m for the "
              "vakonomic formulation)"),
      key("lyapunov", "observables", K::strings, "none",
          "the exponents also in the norm of these expressions (e.g. the reduced motion's)"),
  };
}

std::vector<ConfigKey> declare_keys() {
  std::vector<ConfigKey> keys;
  for (auto* part : {&top_level_keys, &time_keys, &integrator_keys, &ensemble_keys, &output_keys,
                     &backend_keys, &compare_keys, &event_keys, &lyapunov_keys}) {
    std::vector<ConfigKey> v = part();
    keys.insert(keys.end(), v.begin(), v.end());
  }
  return keys;
}

}  // namespace

std::string ConfigKey::refusal_for(const std::string& value) const {
  std::string s = refusal ? refusal : "";
  if (const auto at = s.find("{}"); at != std::string::npos) s.replace(at, 2, value);
  return s;
}

const std::vector<ConfigKey>& config_keys() {
  static const std::vector<ConfigKey> keys = declare_keys();
  return keys;
}

const ConfigKey& config_key(const std::string& dotted) {
  for (const ConfigKey& k : config_keys())
    if (k.dotted() == dotted) return k;
  throw std::logic_error("config key '" + dotted +
                         "' is not declared (host/config/config_keys.cpp)");
}

}  // namespace nholo
