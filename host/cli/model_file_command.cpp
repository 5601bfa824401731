// nholo/host/cli/model_file_command.cpp — `nholo model check FILE` and `nholo
// model build FILE [--force] [--gpu-arch ...]`: a model file checked and
// described, its plugin (and GPU modules) compiled or found in the cache.
#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <sstream>

#include "host/cli/commands.hpp"
#include "host/cli/model_description.hpp"
#include "host/config/model_info.hpp"
#include "host/model_files/model_file.hpp"
#include "host/model_files/plugin.hpp"

namespace nholo {
namespace {

// a compile step's progress line, on stderr
void log_compile(const std::string& line) {
  std::fprintf(stderr, "nholo: %s\n", line.c_str());
}

// The GPU modules of the model for gpu.archs x gpu.formulations (empty: all
// of the model's) and gpu.method, compiled or found in the cache.
void build_gpu_modules(std::ostream& os, const ModelSpec& spec, const Plugin& p,
                       const GpuBuildOptions& gpu, bool force) {
  const ModelInfo mi = model_info_from_spec(spec);
  std::vector<std::string> fs_ = gpu.formulations.empty() ? mi.formulations : gpu.formulations;
  for (const auto& f : fs_)
    if (std::find(mi.formulations.begin(), mi.formulations.end(), f) == mi.formulations.end())
      throw ConfigError("--formulations", "'" + f + "' is not a formulation of model " + spec.name +
                                              "; accepted: " + join(mi.formulations));
  os << nvrtc_description() << "\n";
  for (const auto& arch : gpu.archs)
    for (const auto& f : fs_) {
      const GpuModule& g =
          gpu_module(spec, p, f, gpu.method, arch, log_compile, force, gpu.events);
      os << "GPU module " << f << " " << gpu.method << (gpu.events ? " (events)" : "") << " "
         << arch << ": " << g.path << "\n  "
         << (g.compiled ? "compiled in " : "cached (compiled earlier in ") << std::setprecision(3)
         << g.compile_seconds << (g.compiled ? " s" : " s)") << ", " << g.image.size() << " bytes"
         << (g.resources.empty() ? std::string() : "; kernel: " + g.resources) << "\n";
    }
}

}  // namespace

std::string model_file_command(const std::string& path, bool build, bool force,
                               const GpuBuildOptions& gpu) {
  ModelSpec spec;
  try {
    spec = load_model_file(path, model_names());
  } catch (const ModelFileError& e) {
    throw ConfigError("model", e.what());
  }
  std::ostringstream os;
  describe_model(os, model_info_from_spec(spec));
  // where M and F come from (docs/models.md, "Symbolic derivatives")
  const model_file::SymbolicDynamics sd = model_file::symbolic_dynamics(spec);
  os << "  M, F: "
     << (sd.refused.empty() ? "differentiated symbolically from the Lagrangian (" +
                                  std::to_string(sd.nodes) + " distinct expression nodes)"
                            : "by automatic differentiation (symbolic: " + sd.refused + ")")
     << "\n";
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
  // a bad or unsupported --gpu-arch is refused before anything is compiled
  for (const auto& arch : gpu.archs) check_gpu_arch(arch);
  const Plugin& p = model_plugin(spec, log_compile, force);
  os << "plugin: " << p.path << "\n"
     << (p.compiled ? "compiled in " : "cached (compiled earlier in ") << std::setprecision(3)
     << p.compile_seconds << (p.compiled ? " s" : " s)") << "\n";
  if (gpu.archs.empty()) return os.str();
  build_gpu_modules(os, spec, p, gpu, force);
  return os.str();
}

}  // namespace nholo
