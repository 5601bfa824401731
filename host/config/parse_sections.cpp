// nholo/host/config/parse_sections.cpp — the tables [time], [integrator],
// [output], [backend] and [compare] of a configuration.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "host/config/config_parse.hpp"
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
  if (!(dt > 0)) throw ConfigError("time.save_every", "must be > 0");
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
  if (const toml::node* n = tt->get("t_start")) cfg.t_start = as_number(*n, "time.t_start");
  const toml::node* te = tt->get("t_end");
  if (!te) throw ConfigError("time.t_end", "missing (a number > time.t_start)");
  cfg.t_end = as_number(*te, "time.t_end");
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
  if (const toml::node* n = it->get("method")) {
    const std::string m = as_choice(*n, "integrator.method", tables::names_of(tables::kMethods));
    for (const auto& e : tables::kMethods)
      if (m == e.name) o.method = e.value;
  }
  auto positive = [&](const char* k, double& dst) {
    if (const toml::node* n = it->get(k)) {
      dst = as_number(*n, std::string("integrator.") + k);
      if (!(dst > 0)) throw ConfigError(std::string("integrator.") + k, "must be > 0");
    }
  };
  // the error tolerances of a step: 1 (100 % of the state per step, or 1 in
  // the state's units) or more accepts steps of any error
  auto tolerance = [&](const char* k, double& dst, const char* what) {
    if (const toml::node* n = it->get(k)) {
      const std::string key = std::string("integrator.") + k;
      dst = as_number(*n, key);
      if (!(dst > 0 && dst < 1)) {
        std::ostringstream os;
        os << "is " << dst << "; must be > 0 and < 1 (the " << what
           << " error a step may make; 1 or more accepts any step)";
        throw ConfigError(key, os.str());
      }
    }
  };
  tolerance("rtol", o.rtol, "relative");
  tolerance("atol", o.atol, "absolute");
  positive("dt", o.dt);
  positive("dt_min", o.dt_min);
  if (const toml::node* n = it->get("dt_max")) {
    o.dt_max = as_number(*n, "integrator.dt_max");
    if (o.dt_max < 0) throw ConfigError("integrator.dt_max", "must be >= 0 (0: unbounded)");
  }
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
  if (const toml::node* n = it->get("max_steps")) {
    o.max_steps = as_integer(*n, "integrator.max_steps");
    if (o.max_steps < 1) throw ConfigError("integrator.max_steps", "must be >= 1");
  }
  if (const toml::node* n = it->get("drift")) {
    const std::string d =
        as_choice(*n, "integrator.drift", tables::names_of(tables::kDriftControls));
    for (const auto& e : tables::kDriftControls)
      if (d == e.name) cfg.eval.drift = e.value;
  }
  positive("baumgarte_alpha", cfg.eval.baumgarte_alpha);
  positive("baumgarte_beta", cfg.eval.baumgarte_beta);
  positive("pinv_rtol", cfg.eval.pinv.rtol);
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
  const std::string mode = as_choice(n, "output.mode", tables::names_of(tables::kOutputModes));
  if (mode == "statistics") {
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
    if (const toml::node* n = ot->get("path")) cfg.output_path = as_string(*n, "output.path");
    if (const toml::node* n = ot->get("fields")) parse_fields(*n, cfg);
    if (const toml::node* n = ot->get("mode")) parse_output_mode(*ot, *n, cfg);
    if (const toml::node* n = ot->get("memory_budget_mb")) {
      cfg.memory_budget_mb = as_number(*n, "output.memory_budget_mb");
      if (!(cfg.memory_budget_mb >= 1))
        throw ConfigError("output.memory_budget_mb", "must be >= 1");
    }
    if (const toml::node* n = ot->get("window")) {
      const int64_t w = as_integer(*n, "output.window");
      if (w < 1 || w > 100000) throw ConfigError("output.window", "must be in [1, 100000]");
      cfg.window = static_cast<int>(w);
      cfg.window_given = true;
    }
    if (const toml::node* n = ot->get("compression")) {
      const int64_t c = as_integer(*n, "output.compression");
      if (c < 0 || c > 9)
        throw ConfigError("output.compression",
                          "must be an integer in [0, 9] (0: no compression; 1-9: shuffle + "
                          "deflate at that level)");
      cfg.compression = static_cast<int>(c);
    }
  }
  check_output_path(cfg);
}

void parse_backend(const toml::table& root, RunConfig& cfg) {
  const toml::table* bt = subtable(root, "backend");
  if (!bt) return;
  if (const toml::node* n = bt->get("device"))
    cfg.device = as_choice(*n, "backend.device", tables::names_of(tables::kDevices));
  if (const toml::node* n = bt->get("gpu")) {
    const int64_t g = as_integer(*n, "backend.gpu");
    if (g < 0 || g > 1023) throw ConfigError("backend.gpu", "must be a CUDA device index >= 0");
    cfg.gpu = static_cast<int>(g);
    cfg.gpu_given = true;
  }
  if (const toml::node* n = bt->get("threads")) {
    const int64_t t = as_integer(*n, "backend.threads");
    if (t < 0 || t > 4096)
      throw ConfigError("backend.threads", "must be in [0, 4096] (0: all cores)");
    cfg.threads = static_cast<int>(t);
  }
  if (const toml::node* n = bt->get("steps_per_launch")) {
    const int64_t k = as_integer(*n, "backend.steps_per_launch");
    if (k < 0 || k > 1000000000)
      throw ConfigError("backend.steps_per_launch",
                        "must be an integer in [0, 1000000000] (steps a launch advances a "
                        "trajectory at most; 0: a whole window per launch)");
    cfg.steps_per_launch = k;
  }
  if (const toml::node* n = bt->get("cpu_tail")) {
    const int64_t k = as_integer(*n, "backend.cpu_tail");
    if (k < 0 || k > 1000000000)
      throw ConfigError("backend.cpu_tail",
                        "must be an integer in [0, 1000000000] (a GPU window's last active "
                        "trajectories, at most this many, are finished on the CPU cores; 0: "
                        "never; not given: 32 per host thread)");
    cfg.cpu_tail = k;
  }
}

void parse_compare(const toml::table& root, RunConfig& cfg) {
  if (const toml::table* ct = subtable(root, "compare")) {
    if (const toml::node* n = ct->get("threshold")) {
      cfg.compare_threshold = as_number(*n, "compare.threshold");
      if (!(cfg.compare_threshold > 0)) throw ConfigError("compare.threshold", "must be > 0");
    }
  }
}

void parse_lyapunov(const toml::table& root, RunConfig& cfg) {
  const toml::table* lt = subtable(root, "lyapunov");
  if (!lt) return;
  if (const toml::node* n = lt->get("enabled")) {
    const auto b = n->value<bool>();
    if (!n->is_boolean() || !b)
      throw ConfigError("lyapunov.enabled",
                        std::string("must be true or false, got ") + type_name(*n));
    cfg.lyapunov = *b;
  }
  if (const toml::node* n = lt->get("renormalize_every")) {
    const double r = as_number(*n, "lyapunov.renormalize_every");
    if (!(r > 0))
      throw ConfigError("lyapunov.renormalize_every",
                        "must be a time > 0 (the tangent vector is renormalised after the first "
                        "step that ends at least this long after the last renormalisation)");
    cfg.lyapunov_renormalize_every = r;
  }
  if (!cfg.lyapunov) return;
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
  }
}

}  // namespace nholo::config_parse
