// nholo/host/config/parse_sections.cpp — the tables [time], [integrator],
// [output], [backend], [compare] and [lyapunov] of a configuration, each key
// read as config_keys.cpp declares it.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "host/config/config_parse.hpp"
#include "host/config/event_table.hpp"
#include "host/config/model_info.hpp"
#include "host/config/tables.hpp"

namespace nholo::config_parse {

namespace {

// time.saveat: increasing times in (t_start, t_end], after t_start (the first
// save); a list that starts with t_start itself means the same.
void save_times_at(const toml::node& sa, RunConfig& cfg) {
  const auto v = as_number_list(sa, "time.saveat");
  if (v.empty())
    throw ConfigError("time.saveat",
                      "is empty; give at least one time in (time.t_start, time.t_end], "
                      "or use time.save_every");
  if (v.size() > 1000000)
    throw ConfigError("time.saveat", std::to_string(v.size()) + " saves: at most 10^6");
  double prev = cfg.t_start;
  for (size_t i = 0; i < v.size(); ++i) {
    const double t = v[i];
    if (i == 0 && t == cfg.t_start) continue;  // t_start is the first save anyway
    if (!(t > prev)) {
      std::ostringstream os;
      os << "entry " << (i + 1) << " (" << t << ") is not after "
         << (i == 0 ? "time.t_start (" : "the entry before it (") << prev
         << "); the times must increase, from time.t_start (always the first save) to time.t_end";
      throw ConfigError("time.saveat", os.str());
    }
    if (t > cfg.t_end) {
      std::ostringstream os;
      os << "entry " << (i + 1) << " (" << t << ") is after time.t_end (" << cfg.t_end << ")";
      throw ConfigError("time.saveat", os.str());
    }
    cfg.save_times.push_back(t);
    prev = t;
  }
  if (cfg.save_times.size() < 2)
    throw ConfigError("time.saveat",
                      "lists only time.t_start (the first save anyway): nothing would be "
                      "integrated; give at least one time in (time.t_start, time.t_end]");
}

// time.save_every (or a hundredth of the span): t_start + k dt up to t_end,
// then t_end itself.
void save_times_every(const toml::node* se, RunConfig& cfg) {
  const double dt = se ? as_number(*se, "time.save_every") : (cfg.t_end - cfg.t_start) / 100.0;
  check_range("time.save_every", dt);
  const double span = cfg.t_end - cfg.t_start;
  // counted in floating point: (t_end - t_start) / save_every can exceed any integer
  const double saves = std::floor(span / dt * (1 + 1e-12));
  if (!(saves <= 1e6)) {
    std::ostringstream os;
    os << "(time.t_end - time.t_start) / time.save_every = " << span << " / " << dt
       << " would make ";
    if (saves < 1e15)
      os << static_cast<int64_t>(saves);
    else
      os << saves;
    os << " saves; at most 10^6 (choose a larger save_every, a shorter span, or time.saveat)";
    throw ConfigError("time.save_every", os.str());
  }
  const int64_t k_max = static_cast<int64_t>(saves);
  for (int64_t k = 1; k <= k_max; ++k) {
    const double t = cfg.t_start + k * dt;
    if (!(t > cfg.save_times.back())) {
      std::ostringstream os;
      os << "save_every = " << dt << " is below the resolution of the times near t = " << t
         << " (two saves would fall on the same double)";
      throw ConfigError("time.save_every", os.str());
    }
    cfg.save_times.push_back(t);
  }
  if (cfg.save_times.back() < cfg.t_end - 1e-12 * span) cfg.save_times.push_back(cfg.t_end);
  cfg.save_times.back() = std::min(cfg.save_times.back(), cfg.t_end);
}

}  // namespace

void parse_time(const toml::table& root, RunConfig& cfg) {
  const toml::table* tt = subtable(root, "time");
  if (!tt)
    throw ConfigError("time",
                      "missing table [time] (it needs t_end; save_every, default (t_end - "
                      "t_start) / 100, or saveat; t_start, default 0)");
  if (const auto v = read_number(*tt, "time.t_start")) cfg.t_start = *v;
  const auto t_end = read_number(*tt, "time.t_end");
  if (!t_end) throw ConfigError("time.t_end", "missing (a number > time.t_start)");
  cfg.t_end = *t_end;
  if (!(cfg.t_end > cfg.t_start))
    throw ConfigError("time.t_end",
                      "must be greater than time.t_start (" + std::to_string(cfg.t_start) + ")");
  const toml::node* se = tt->get("save_every");
  const toml::node* sa = tt->get("saveat");
  if (se && sa) throw ConfigError("time", "give either save_every or saveat, not both");
  cfg.save_times.push_back(cfg.t_start);
  if (sa)
    save_times_at(*sa, cfg);
  else
    save_times_every(se, cfg);
}

void parse_integrator(const toml::table& root, RunConfig& cfg) {
  const toml::table* it = subtable(root, "integrator");
  if (!it) return;
  auto& o = cfg.integrator;
  if (const auto v = read_choice(*it, "integrator.method", tables::kMethods)) o.method = *v;
  // the error tolerances of a step: 1 (100 % of the state per step, or 1 in
  // the state's units) or more accepts steps of any error (their declared range)
  if (const auto v = read_number(*it, "integrator.rtol")) o.rtol = *v;
  if (const auto v = read_number(*it, "integrator.atol")) o.atol = *v;
  if (const auto v = read_number(*it, "integrator.dt")) o.dt = *v;
  if (const auto v = read_number(*it, "integrator.dt_min")) o.dt_min = *v;
  if (const auto v = read_number(*it, "integrator.dt_max")) o.dt_max = *v;
  // an adaptive step must fit between the underflow guard and the cap
  if (o.dt_max > 0 && o.dt_min > o.dt_max) {
    const bool min_given = it->get("dt_min") != nullptr;
    std::ostringstream os;
    if (min_given)
      os << "is " << o.dt_min << ", greater than integrator.dt_max = " << o.dt_max;
    else
      os << "is " << o.dt_max << ", below integrator.dt_min = " << o.dt_min << " (the default)";
    os << ": every adaptive step would be a step underflow (accepted: dt_min <= dt_max, or "
          "dt_max = 0 for no cap)";
    throw ConfigError(min_given ? "integrator.dt_min" : "integrator.dt_max", os.str());
  }
  if (const auto v = read_integer(*it, "integrator.max_steps")) o.max_steps = *v;
  if (const auto v = read_choice(*it, "integrator.drift", tables::kDriftControls))
    cfg.eval.drift = *v;
  if (const auto v = read_number(*it, "integrator.baumgarte_alpha")) cfg.eval.baumgarte_alpha = *v;
  if (const auto v = read_number(*it, "integrator.baumgarte_beta")) cfg.eval.baumgarte_beta = *v;
  if (const auto v = read_number(*it, "integrator.pinv_rtol")) cfg.eval.pinv.rtol = *v;
  // the rank tolerance decides which constraints count: large values drop
  // real constraints (every trajectory would still say ok)
  if (!(cfg.eval.pinv.rtol >= 1e-16 && cfg.eval.pinv.rtol <= 1e-6)) {
    std::ostringstream os;
    os << cfg.eval.pinv.rtol << " is outside [1e-16, 1e-6]: a relative rank tolerance above 1e-6 "
       << "discards constraints that hold (default 1e-12)";
    throw ConfigError("integrator.pinv_rtol", os.str());
  }
}

namespace {

// output.fields: known fields, each once.
void parse_fields(const toml::node& n, RunConfig& cfg) {
  const std::vector<std::string>& known = known_fields();
  cfg.fields = as_string_list(n, "output.fields");
  for (const auto& f : cfg.fields)
    if (std::find(known.begin(), known.end(), f) == known.end())
      throw ConfigError("output.fields",
                        "unknown field '" + f + "' (accepted: " + join(known) + ")");
  for (size_t a = 0; a < cfg.fields.size(); ++a)
    for (size_t b = a + 1; b < cfg.fields.size(); ++b)
      if (cfg.fields[a] == cfg.fields[b])
        throw ConfigError("output.fields", "'" + cfg.fields[a] + "' is listed twice");
}

// output.mode: "statistics" writes no per-trajectory time series (fields = []
// says the same), "full" needs a field.
void parse_output_mode(const toml::table& ot, const toml::node& n, RunConfig& cfg) {
  if (as_enum(n, "output.mode", tables::kOutputModes) == OutputMode::statistics) {
    if (ot.get("fields") && !cfg.fields.empty())
      throw ConfigError("output.mode",
                        "\"statistics\" writes no per-trajectory time series, but "
                        "output.fields lists " +
                            join(cfg.fields) + " (remove output.fields, or use mode = \"full\")");
    cfg.fields.clear();
  } else if (cfg.fields.empty()) {
    throw ConfigError("output.mode", "\"full\" needs at least one output.fields entry (accepted: " +
                                         join(known_fields()) +
                                         "); for no time series use mode = \"statistics\"");
  }
}

// output.path: given, and a new path or a regular file.
void check_output_path(const RunConfig& cfg) {
  if (cfg.output_path.empty()) throw ConfigError("output.path", "missing (the HDF5 file to write)");
  if (cfg.output_path.find('\0') != std::string::npos)
    throw ConfigError("output.path", "contains a NUL character");
  // only a new path or a regular file can be (over)written: not a device
  // node, a FIFO or a folder, with or without --overwrite
  std::error_code ec;
  const auto st = std::filesystem::symlink_status(cfg.output_path, ec);
  if (!ec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
    throw ConfigError("output.path", "'" + cfg.output_path +
                                         "' exists and is not a regular file "
                                         "(a device, FIFO, link or folder); choose a file path");
}

}  // namespace

void parse_output(const toml::table& root, RunConfig& cfg) {
  cfg.fields.clear();
  for (const auto& f : tables::kFields)
    if (f.in_default) cfg.fields.push_back(f.name);
  if (const toml::table* ot = subtable(root, "output")) {
    if (auto v = read_string(*ot, "output.path")) cfg.output_path = std::move(*v);
    if (const toml::node* n = ot->get("fields")) parse_fields(*n, cfg);
    if (const toml::node* n = ot->get("mode")) parse_output_mode(*ot, *n, cfg);
    if (const auto v = read_number(*ot, "output.memory_budget_mb")) cfg.memory_budget_mb = *v;
    if (const auto v = read_integer(*ot, "output.window")) {
      cfg.window = static_cast<int>(*v);
      cfg.window_given = true;
    }
    if (const auto v = read_integer(*ot, "output.compression"))
      cfg.compression = static_cast<int>(*v);
  }
  check_output_path(cfg);
}

void parse_backend(const toml::table& root, RunConfig& cfg) {
  const toml::table* bt = subtable(root, "backend");
  if (!bt) return;
  if (const auto v = read_choice(*bt, "backend.device", tables::kDevices)) cfg.device = *v;
  if (const auto v = read_integer(*bt, "backend.gpu")) {
    cfg.gpu = static_cast<int>(*v);
    cfg.gpu_given = true;
  }
  if (const auto v = read_integer(*bt, "backend.threads")) cfg.threads = static_cast<int>(*v);
  if (const auto v = read_choice(*bt, "backend.simd", tables::kSimd)) cfg.simd = *v;
  if (const auto v = read_integer(*bt, "backend.steps_per_launch")) cfg.steps_per_launch = *v;
  if (const auto v = read_integer(*bt, "backend.cpu_tail")) cfg.cpu_tail = *v;
}

void parse_compare(const toml::table& root, RunConfig& cfg) {
  if (const toml::table* ct = subtable(root, "compare"))
    if (const auto v = read_number(*ct, "compare.threshold")) cfg.compare_threshold = *v;
}

namespace {

void parse_lyapunov_table(const toml::table& root, const ModelInfo& mi, RunConfig& cfg) {
  const toml::table* lt = subtable(root, "lyapunov");
  if (!lt) return;
  // a table without `enabled` computed nothing and said nothing
  if (!lt->get("enabled"))
    throw ConfigError("lyapunov.enabled",
                      "missing: a [lyapunov] table computes the exponents with enabled = true "
                      "(enabled = false keeps the table and computes none)");
  if (const auto v = read_boolean(*lt, "lyapunov.enabled")) cfg.lyapunov = *v;
  if (const auto v = read_number(*lt, "lyapunov.renormalize_every"))
    cfg.lyapunov_renormalize_every = *v;
  if (const auto v = read_integer(*lt, "lyapunov.exponents"))
    cfg.lyapunov_exponents = static_cast<int>(*v);
  if (const toml::node* o = lt->get("observables")) {
    cfg.lyapunov_observables = as_string_list(*o, "lyapunov.observables");
    if (cfg.lyapunov_observables.empty())
      throw ConfigError("lyapunov.observables",
                        "0 expressions; accepted: 1 to " + std::to_string(kMaxObservables) +
                            " expressions of t, the coordinates, their rates and the "
                            "parameters (leave the key out for none)");
  }
  if (!cfg.lyapunov) return;
  if (!cfg.lyapunov_observables.empty()) {
    // each expression checked as the run compiles it
    (void)compile_run_observables(cfg.lyapunov_observables, mi, cfg);
    if (cfg.lyapunov_exponents != 1)
      throw ConfigError("lyapunov.observables",
                        "given with exponents = " + std::to_string(cfg.lyapunov_exponents) +
                            ": the observables' exponent is the largest one only (accepted: "
                            "exponents = 1; the tangent vectors are orthonormalised in the whole "
                            "state's norm, so the observed parts of a second one lose their "
                            "digits against the first's, docs/physics.md 4a)");
    // the deltas start tangent to the constraint manifold (kernels/lyapunov.hpp)
    const int admissible = 2 * mi.n - 2 * mi.m_position - mi.m_velocity;
    for (const auto& f : cfg.formulations) {
      const tables::FormulationEntry* e = tables::find_formulation(f);
      if (e && !e->takes_lambda0 && cfg.lyapunov_exponents > admissible)
        throw ConfigError("lyapunov.exponents",
                          std::to_string(cfg.lyapunov_exponents) +
                              " exponents with observables: their tangent vectors start on the "
                              "constraint manifold, whose tangent space has " +
                              std::to_string(admissible) +
                              " dimensions (2n minus two per position and one per velocity "
                              "constraint); accepted 1 to " +
                              std::to_string(admissible));
    }
  }
  if (!cfg.model_plugin.empty())
    throw ConfigError("lyapunov.enabled",
                      "a plugin file (model = \"" + cfg.model_plugin +
                          "\") cannot be recompiled with the tangent systems; use a built-in "
                          "model or a model file");
  std::vector<std::string> with_tangent;
  for (const auto& e : tables::kFormulations)
    if (e.has_tangent_system) with_tangent.push_back(e.name);
  for (const auto& f : cfg.formulations) {
    const tables::FormulationEntry* e = tables::find_formulation(f);
    if (e && !e->has_tangent_system)
      throw ConfigError("lyapunov.enabled",
                        "formulation " + f +
                            " has no tangent system (its state is not smooth: the embedded "
                            "formulation's running maximum); Lyapunov exponents are computed for " +
                            join(with_tangent) + ": drop " + f + " from formulations");
    // the state's size (kernels/second_order_system.hpp, formulations/vakonomic.hpp)
    const int state = 2 * mi.n + (e && e->takes_lambda0 ? mi.m : 0);
    if (cfg.lyapunov_exponents > state)
      throw ConfigError("lyapunov.exponents",
                        std::to_string(cfg.lyapunov_exponents) + " exponents of formulation " + f +
                            ", whose state has " + std::to_string(state) +
                            " components: accepted 1 to " + std::to_string(state));
  }
}

}  // namespace

void parse_lyapunov(const toml::table& root, const ModelInfo& mi, RunConfig& cfg) {
  parse_lyapunov_table(root, mi, cfg);
  const auto asked = [&](const char* field) {
    return std::find(cfg.fields.begin(), cfg.fields.end(), field) != cfg.fields.end();
  };
  // the running estimates are the tangent system's
  if (!cfg.lyapunov && asked("lyapunov_estimate"))
    throw ConfigError("output.fields",
                      "'lyapunov_estimate' (the running Lyapunov exponents at the saves) needs "
                      "[lyapunov] enabled = true");
  if ((!cfg.lyapunov || cfg.lyapunov_observables.empty()) && asked("lyapunov_observed_estimate"))
    throw ConfigError("output.fields",
                      "'lyapunov_observed_estimate' (the running observed exponents at the "
                      "saves) needs [lyapunov] enabled = true and observables = [...]");
}

}  // namespace nholo::config_parse
