// nholo/host/config/config.hpp — the run configuration: one TOML file, every key
// overridable on the command line (`--set integrator.rtol=1e-12`).
//
//   RunConfig cfg = load_config(path, overrides);   // or parse_config(text, ...)
// Any problem — unknown key, wrong type, unknown model / formulation /
// parameter / coordinate, bad size or distribution — throws ConfigError whose
// message names the key and what is accepted. Nothing is written before the
// whole configuration has been validated.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "host/config/choices.hpp"
#include "host/model_language/config_error.hpp"
#include "host/model_language/event_config.hpp"
#include "kernels/integrate.hpp"
#include "kernels/system.hpp"

namespace nholo {

struct ModelSpec;

// A configuration that asks for a backend or device this build or machine
// does not have (CUDA without a GPU, a GPU index past the last): Python's
// nholo.DeviceError, where a bad value is nholo.ConfigError.
class DeviceUnavailable : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

// A ConfigError caused by the model file a config names (its text or its
// checks): the command treats it as any ConfigError; the Python module raises
// it as nholo.ModelError.
class ModelConfigError : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

// How one initial coordinate / velocity / multiplier is given.
struct Distribution {
  enum class Kind { constant, uniform, normal, linspace, values };
  Kind kind = Kind::constant;
  double a = 0.0;  // constant value, uniform low, normal mean, linspace start
  double b = 0.0;  // uniform high, normal std, linspace stop
  int64_t count = 1;           // linspace points
  std::vector<double> values;  // explicit list
  std::string describe() const;
};

// The largest ensemble a run accepts (2^34 = 17,179,869,184 trajectories):
// what nholo's readers accept of a result file, and ~137 GB for the
// trajectory index alone. Checked before anything is sampled or written.
constexpr int64_t kMaxEnsembleSize = int64_t(1) << 34;
// backend.steps_per_launch when not given (docs/BENCHMARKS.md, the scheduler)
constexpr int64_t kDefaultStepsPerLaunch = 1000;
// backend.cpu_tail when not given: this many per host thread (a CPU core
// steps a lone trajectory 20-50x faster than a GPU thread; docs/BENCHMARKS.md)
constexpr int64_t kCpuTailPerThread = 32;

// The initial value of a member a key sets (here, and in IntegratorOptions
// and EvalOptions for integrator.*) is the key's declared default
// (host/config/config_keys.cpp; tests/test_config_keys.cpp checks that
// parse_config gives it).
struct RunConfig {
  std::string source;  // file name, for messages
  std::string text;    // the effective configuration (after overrides) as TOML
  // A hash (16 hex digits, FNV-1a 64) of what decides the results: the
  // effective configuration without backend.*, output.path and
  // output.memory_budget_mb. `run --resume` continues a .partial only with the
  // same hash.
  std::string result_hash;
  std::string model;
  // a model file or [model] table (compiled into a plugin when the run
  // starts, host/model_files/plugin.hpp); null for a built-in model
  std::shared_ptr<const ModelSpec> model_spec;
  std::string model_plugin;  // a plugin file (model = "path.so"), else ""
  std::vector<std::string> formulations;
  std::map<std::string, double> params;  // complete: defaults filled in
  // the model's derived parameters (a model file's `derived`, docs/models.md):
  // their names, in the model's order, and the function that recomputes them
  // from the others (ModelInfo::derive_params: the sampler derives them per
  // trajectory, and the description a run has of a compiled model does not
  // carry it); empty / null when the model has none. params holds their
  // values at the fixed parameters (those that vary at their defaults).
  std::vector<std::string> derived_params;
  std::function<void(std::vector<double>&)> derive_params;

  // [time]
  double t_start = 0.0;
  double t_end = 0.0;
  std::vector<double> save_times;  // from save_every or saveat, all > t_start

  // [integrator]
  IntegratorOptions integrator;
  EvalOptions eval;

  // [ensemble]
  int64_t size = 1;
  uint64_t seed = 0;
  SamplerKind sampler = SamplerKind::random;
  OnViolation on_violation = OnViolation::project;
  std::string file;  // sampler = "file"
  std::map<std::string, Distribution> q0, qd0, lambda0;
  // [ensemble.params]: model parameters given a distribution, one value per
  // trajectory (the same syntax and samplers as q0); none of them is in
  // [params]. cfg.params keeps the model's default for these.
  std::map<std::string, Distribution> param_dists;
  // every parameter that varies per trajectory: those of [ensemble.params],
  // with sampler = "file" the file's params.<name> columns, and the derived
  // parameters that use any of them; in the model's parameter order (the
  // columns of /initial/params)
  std::vector<std::string> varied_params;

  // [output]
  std::string output_path;
  std::vector<std::string> fields;  // empty: statistics only (output.mode = "statistics")
  double memory_budget_mb = 512.0;
  int window = 16;  // saves integrated per window (output.window; see window_given)
  // output.window was given; without it a run of many saves takes windows
  // of ceil(saves / kAutoWindows) saves when that is more than `window`
  // (SlicePlan), so that the windows, pieces and chunks of a run stay few
  bool window_given = false;
  int compression = 0;  // deflate level of every dataset, 0 = off (shuffle + deflate when > 0)

  // [backend]
  BackendDevice device = BackendDevice::automatic;
  int gpu = 0;             // CUDA device index
  bool gpu_given = false;  // backend.gpu set (an MPI run binds ranks to GPUs otherwise)
  int threads = 0;
  // the CPU backends' SIMD lanes: several trajectories per core in the
  // vector unit (host/backends/simd_choice.hpp); off: one at a time
  SimdChoice simd = SimdChoice::automatic;
  // steps a launch advances a trajectory at most (0: a whole window per
  // launch); the results do not depend on it (kernels/ensemble.hpp)
  int64_t steps_per_launch = kDefaultStepsPerLaunch;
  // the CUDA backend's CPU tail (host/backends/window_tail.hpp): a window's
  // last active trajectories, at most this many, are finished on the host's
  // cores; 0: never; -1 (not given): kCpuTailPerThread per host thread
  int64_t cpu_tail = -1;

  // [compare]
  double compare_threshold = 1e-3;

  // [[events]], in the order given (kernels/event_program.hpp; compiled for
  // the kernels by host/config/event_table.hpp)
  std::vector<EventConfig> events;

  // [lyapunov]: the largest Lyapunov exponent of every trajectory from the
  // tangent flow (kernels/lyapunov.hpp), written as <formulation>/lyapunov
  bool lyapunov = false;
  double lyapunov_renormalize_every = 1.0;  // in time; > 0
  // the k largest exponents (k tangent vectors reorthonormalised by QR): 1 the
  // largest alone; > 1 also <formulation>/lyapunov_spectrum, lyapunov_sum and
  // kaplan_yorke; 1 <= k <= the state's size
  int lyapunov_exponents = 1;
  // [lyapunov] observables: the exponents also in the norm of these
  // expressions of t, q, qd and the parameters (kernels/lyapunov.hpp,
  // observed_spectrum_from), written as <formulation>/lyapunov_observed;
  // 1 to kMaxObservables of them, at least exponents; empty: none
  std::vector<std::string> lyapunov_observables;
};

// The keys each table accepts, in the order of the messages: the names
// declared in host/config/config_keys.cpp ("": the top level; "events":
// each table of [[events]]).
const std::map<std::string, std::vector<std::string>>& config_schema();
const std::vector<std::string>& known_formulations();
const std::vector<std::string>& known_fields();

RunConfig parse_config(const std::string& toml_text, const std::vector<std::string>& overrides,
                       const std::string& source = "<config>");
RunConfig load_config(const std::string& path, const std::vector<std::string>& overrides);

// join ("a, b, c"): host/model_language/named_choice.hpp

// What a run should know about cfg that is no error ("" when nothing): rk4's
// integrator.dt not dividing a save interval (each such interval ends with a
// shorter step, so the step is not uniform).
std::string config_notes(const RunConfig& cfg);

}  // namespace nholo
