// nholo/host/cli/model_file_command.cpp — `nholo model check FILE` and `nholo
// model build FILE [--force] [--gpu-arch ...]`: a model file checked and
// described, its plugin (and GPU modules) compiled or found in the cache.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <sstream>

#include "host/cli/commands.hpp"
#include "host/cli/model_description.hpp"
#include "host/config/model_catalog.hpp"
#include "host/config/model_info.hpp"
#include "host/config/tables.hpp"
#include "host/model_files/plugin.hpp"
#include "host/model_language/model_file.hpp"

namespace nholo {
namespace {

// a compile step's progress line, on stderr
void log_compile(const std::string& line) {
  std::fprintf(stderr, "nholo: %s\n", line.c_str());
}

// The GPU modules of the model for gpu.archs x gpu.formulations (empty: all
// of the model's) and gpu.method, compiled or found in the cache.
void build_gpu_modules(std::ostream& os, const ModelSource& source, const Plugin& p,
                       const GpuBuildOptions& gpu, bool force) {
  const ModelInfo& mi = source.info;
  std::vector<std::string> fs_ = gpu.formulations.empty() ? mi.formulations : gpu.formulations;
  for (const auto& f : fs_)
    if (std::find(mi.formulations.begin(), mi.formulations.end(), f) == mi.formulations.end())
      throw ConfigError("--formulations", "'" + f + "' is not a formulation of model " +
                                              source.name + "; accepted: " + join(mi.formulations));
  if (gpu.tangent) {  // the embedded formulation has none: skipped when not asked for by name
    std::vector<std::string> with;
    for (const auto& f : fs_) {
      const tables::FormulationEntry* e = tables::find_formulation(f);
      if (e && e->has_tangent_system)
        with.push_back(f);
      else if (!gpu.formulations.empty())
        throw ConfigError("--formulations", "'" + f + "' has no tangent system (--lyapunov)");
    }
    fs_ = with;
  }
  os << nvrtc_description() << "\n";
  for (const auto& arch : gpu.archs)
    for (const auto& f : fs_) {
      const GpuModule& g = gpu_module(source, p, f, gpu.method, arch, log_compile, force,
                                      GpuModuleKind{gpu.events, gpu.tangent, gpu.exponents});
      os << "GPU module " << f << (gpu.tangent ? " (tangent system)" : "") << " " << gpu.method
         << (gpu.events ? " (events)" : "") << " " << arch << ": " << g.path << "\n  "
         << (g.compiled ? "compiled in " : "cached (compiled earlier in ") << std::setprecision(3)
         << g.compile_seconds << (g.compiled ? " s" : " s)") << ", " << g.image.size() << " bytes"
         << (g.resources.empty() ? std::string() : "; kernel: " + g.resources) << "\n";
    }
}

// The plugin (and GPU modules) of source, compiled or found in the cache;
// with_plain: with --lyapunov, a model file's plugin without the tangent
// systems too (a plain run of the model uses that one: built ahead as well)
std::string build_model(const ModelSource& source, bool force, const GpuBuildOptions& gpu,
                        bool with_plain) {
  // a bad or unsupported --gpu-arch is refused before anything is compiled
  for (const auto& arch : gpu.archs) check_gpu_arch(arch);
  // as many exponents as the smallest state of a formulation with a tangent
  // system has components (kernels/lyapunov.hpp: 1 <= K <= N0)
  if (gpu.tangent)
    for (const auto& f : source.info.formulations) {
      const tables::FormulationEntry* e = tables::find_formulation(f);
      if (!e || !e->has_tangent_system) continue;
      const int state = 2 * source.info.n + (e->takes_lambda0 ? source.info.m : 0);
      if (gpu.exponents > state)
        throw ConfigError("--exponents", std::to_string(gpu.exponents) +
                                             " exponents: the state of formulation " + f +
                                             " of model " + source.name + " has " +
                                             std::to_string(state) + " components");
    }
  std::ostringstream os;
  // the SIMD lanes' kernels of a plugin for this CPU (what a run with
  // backend.simd = "auto" uses): of its tangent system where it holds them
  auto lanes_of = [&](const Plugin& plugin, bool tangent) {
    if (const LanePlugin* l =
            lane_plugin(source, plugin, cpu_simd_isa(), log_compile, force, tangent, gpu.exponents))
      os << "lane add-on (" << l->isa << (tangent ? ", tangent system" : "") << "): " << l->path
         << "\n"
         << (l->compiled ? "compiled in " : "cached (compiled earlier in ") << std::setprecision(3)
         << l->compile_seconds << (l->compiled ? " s" : " s)") << "\n";
  };
  if (gpu.tangent && with_plain) {
    const Plugin& plain = model_plugin(source, log_compile, force, false);
    os << "plugin: " << plain.path << "\n"
       << (plain.compiled ? "compiled in " : "cached (compiled earlier in ") << std::setprecision(3)
       << plain.compile_seconds << (plain.compiled ? " s" : " s)") << "\n";
    lanes_of(plain, false);
  }
  const Plugin& p = model_plugin(source, log_compile, force, gpu.tangent, gpu.exponents);
  os << "plugin" << (gpu.tangent ? " (with the tangent systems)" : "") << ": " << p.path << "\n"
     << (p.compiled ? "compiled in " : "cached (compiled earlier in ") << std::setprecision(3)
     << p.compile_seconds << (p.compiled ? " s" : " s)") << "\n";
  lanes_of(p, gpu.tangent);
  if (!gpu.archs.empty()) build_gpu_modules(os, source, p, gpu, force);
  return os.str();
}

// the model's size against the budget (docs/models.md, "Limits") and where
// M and F come from (docs/models.md, "Symbolic derivatives")
void describe_size(std::ostream& os, const ModelSpec& spec) {
  using model_file::grouped_number;
  const model_file::GraphSize g = model_file::graph_size(spec);
  os << "  size: " << grouped_number(g.nodes) << " of " << grouped_number(g.limit)
     << " graph nodes (distinct after sharing common subexpressions)\n    "
     << model_file::parts_text(g) << "\n";
  const model_file::SymbolicDynamics sd = model_file::symbolic_dynamics(spec);
  os << "  M, F: "
     << (sd.refused.empty() ? "differentiated symbolically from the Lagrangian (" +
                                  grouped_number(sd.nodes) + " distinct expression nodes)"
                            : "by automatic differentiation (symbolic: " + sd.refused + ")")
     << "\n";
}

}  // namespace

std::string model_file_command(const std::string& path, bool build, bool force,
                               const GpuBuildOptions& gpu) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec) && find_model(path)) {
    // a built-in model: compiled into nholo, its tangent systems on demand
    if (!build || !gpu.tangent)
      throw ConfigError("model", "'" + path +
                                     "' is a built-in model, compiled into nholo (`nholo models " +
                                     path + "` describes it); `nholo model build " + path +
                                     " --lyapunov` compiles its tangent systems' plugin");
    return build_model(builtin_model_source(path), force, gpu, false);
  }
  ModelSpec spec;
  try {
    spec = load_model_file(path, model_names());
  } catch (const ModelFileError& e) {
    throw ModelConfigError("model", e.what());
  }
  std::ostringstream os;
  describe_model(os, model_info_from_spec(spec));
  describe_size(os, spec);
  if (!spec.definitions.empty()) {
    // the first 12 (a model from sympy's cse may have thousands)
    const size_t shown = std::min<size_t>(spec.definitions.size(), 12);
    os << "  definitions (shared in the generated code):";
    for (size_t k = 0; k < shown; ++k) os << " " << spec.definitions[k].name;
    if (shown < spec.definitions.size()) os << " ... (" << spec.definitions.size() << " in all)";
    os << "\n";
  }
  if (spec.energy.tree) {
    const std::vector<std::string> why = model_file::energy_not_conserved(spec);
    os << "  energy: "
       << (spec.energy_derived ? "derived, the Jacobi integral sum_i qd_i dL/dqd_i - L"
                               : "as written")
       << (why.empty() ? "; expected to be conserved\n"
                       : "; not expected to be conserved: " + join(why, "; ") + "\n");
  }
  if (!spec.events.empty()) {
    os << "  events (every run of the model has them):";
    for (const auto& e : spec.events)
      os << "\n    " << e.name << " = " << e.expr << "  (" << e.direction << ", " << e.action
         << ")";
    os << "\n";
  }
  if (!build) {
    os << "model file ok: " << path << " (not compiled; `nholo model build` compiles its plugin)\n";
    return os.str();
  }
  return os.str() + build_model(model_source(spec), force, gpu, true);
}

}  // namespace nholo
