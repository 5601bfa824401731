// nholo/host/cli/check_command.cpp — `nholo check`: the config, the backend and
// the output path validated, nothing written.
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "host/cli/commands.hpp"
#include "host/io/output_path.hpp"
#include "host/config/model_info.hpp"
#include "host/config/sampling.hpp"
#include "host/io/slice_plan.hpp"
#include "host/model_files/plugin.hpp"
#include "host/run/device_choice.hpp"

namespace nholo {

namespace {

// ", events a (record), b (stop)" or ""
std::string events_text(const RunConfig& cfg) {
  if (cfg.events.empty()) return "";
  std::vector<std::string> v;
  for (const auto& e : cfg.events) v.push_back(e.name + " (" + e.action + ")");
  return ", events " + join(v);
}

}  // namespace

std::string check_command(const RunConfig& cfg, const CommandOptions& opts) {
  std::string note;
  const std::unique_ptr<Device> dev = open_run_device(cfg, check_gpu_module_compiler, &note);
  check_output_folder(cfg.output_path);
  { const OutputLock probe(cfg.output_path); }  // refused while another run writes the path
  check_output_path(cfg.output_path, opts.overwrite);
  const ModelInfo& mi = *find_model(cfg.model);
  // what a run refuses before it writes anything: every row of a state file
  // (its columns and values), the smallest slice against the memory budget
  const Sampler sampler(cfg, mi);
  (void)detail::plan_range(cfg, dev->usable_memory(), mi.n, mi.m,
                           cfg.varied_params.empty() ? 0 : static_cast<int>(mi.params.size()), 0,
                           cfg.size, 0);
  std::ostringstream os;
  os << "config ok: model " << cfg.model << " (n = " << mi.n << ", m = " << mi.m << "), "
     << cfg.size << " trajectories (" << name_of(cfg.sampler) << " sampler"
     << (cfg.varied_params.empty()
             ? std::string()
             : "; parameters varied per trajectory: " + join(cfg.varied_params))
     << "), formulations " << join(cfg.formulations) << ", " << cfg.save_times.size()
     << " saves in [" << cfg.t_start << ", " << cfg.t_end << "], output " << cfg.output_path
     << (cfg.fields.empty() ? " (statistics only)" : "") << events_text(cfg);
  if (cfg.lyapunov)
    os << ", Lyapunov exponents ("
       << (cfg.lyapunov_exponents > 1
               ? "the " + std::to_string(cfg.lyapunov_exponents) + " largest, their tangents"
               : std::string("the largest, its tangent"))
       << " renormalised every " << cfg.lyapunov_renormalize_every
       << (cfg.lyapunov_observables.empty()
               ? std::string()
               : "; also in the norm of " + std::to_string(cfg.lyapunov_observables.size()) +
                     " observable" + (cfg.lyapunov_observables.size() == 1 ? "" : "s"))
       << ")";
  os << ", backend " << describe_device(dev->info()) << (note.empty() ? "" : " (" + note + ")")
     << "\n";
  if (const std::string n = config_notes(cfg); !n.empty()) os << "note: " << n << "\n";
  return os.str();
}

}  // namespace nholo
