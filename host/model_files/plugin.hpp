// nholo/host/model_files/plugin.hpp — model plugins: a model file compiled on demand into
// a shared library, cached, and loaded behind the versioned entry table of
// host/model_files/plugin_abi.h (docs/models.md, "The plugin cache").
// Defined in plugin.cpp (plugins), gpu_module.cpp (GPU modules, NVRTC) and
// plugin_cache.cpp (what both share: records, the entry lock, the compiler).
//
//   const Plugin& p = model_plugin(spec, log);   // cached, else compiled now
//   run_model(*p.runtime, cfg, ro, dev);         // the pipeline calls the plugin's table
//   const Plugin& q = load_plugin_file(path);    // a plugin built by nholo_add_model
//
// The cache folder is $NHOLO_CACHE_DIR, else $XDG_CACHE_HOME/nholo, else
// ~/.cache/nholo. A plugin is keyed by a hash of the generated source, nholo's
// identity (release, revision, plugin interface version), the compiler and
// the compile command, so a plugin of another model text, nholo or compiler
// is never found, and a new one is built. Loading checks what decides
// compatibility: the interface version, its layout as the plugin's compiler
// laid it out, and nholo's release (plugin_abi.h); any C++17 compiler will do. Each plugin file has
// a record (.info) with its size and checksum, written after it; a plugin whose bytes do not match
// its record (damaged, replaced) is refused and rebuilt. Builds of one key are serialized with a
// lock file, and every file appears by an atomic rename: two processes
// building one model at once both end with the same, complete plugin. A
// valid cached plugin is found and loaded without the lock (a read-only
// cache serves the plugins built in it); only a build takes the lock, and a
// build in a cache that is not writable is refused saying so. A freshly
// compiled plugin must be a non-empty ELF file that loads before it is
// renamed into place and recorded.
//
// The compiler is $NHOLO_CXX split on blanks (a program and its leading
// options: "ccache g++", "clang++ -m64"; no quoting), else the one nholo was
// built with; extra flags $NHOLO_PLUGIN_CXXFLAGS (after nholo's own). All of
// them are part of the key.
//
// GPU modules. On the CUDA backend a model file's integration kernel (one per
// formulation and method) is compiled by NVRTC into a cubin for the GPU's
// architecture, cached like the plugin (key: the module's source, nholo's
// identity, NVRTC's version, the options and the plugin's window layout) and
// handed to the device (Device::add_module), whose ensembles launch it; nholo
// runs the rest of the pipeline, calling the plugin's table (the initial
// states, the kernel argument's bytes). The kernel headers are
// NVRTC-clean: NVRTC sees kernels/, models/ and kernels/nvrtc/ (the few
// standard-library names they use). NVRTC itself (libnvrtc.so) is loaded when
// a module is first compiled: $NHOLO_NVRTC (a path), else the bundle's lib/,
// else the loader's search path, else the CUDA toolkit nholo was built with.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "host/backends/simd_choice.hpp"
#include "host/config/config.hpp"
#include "host/config/model_info.hpp"
#include "host/model_files/plugin_abi.h"
#include "host/model_files/plugin_runtime.hpp"
#include "host/model_language/model_file.hpp"

namespace nholo {

// What a model's plugin and GPU modules are compiled from: C++ text that
// defines the model type `type` (a model file's generated header, or the
// registry of the built-in models), and what the loaded plugin must describe.
struct ModelSource {
  std::string name;    // the model's name
  std::string origin;  // for messages and records: the model file, or "built-in model"
  std::string header;  // C++ text that defines `type`
  std::string type;    // the model type: nholo::user_models::UserModel, ...
  ModelInfo info;      // what the plugin must describe (name, sizes, parameters, formulations)
};

// The source of a model file's model (its generated header, independent of
// the file it came from: the same model read from another folder or from a
// result file's [model] table is one plugin).
ModelSource model_source(const ModelSpec& spec);

// The source of the built-in model `name` (models/registry.hpp): a plugin of
// a built-in model is compiled only for what nholo does not hold compiled,
// its tangent systems (Lyapunov exponents). Throws std::runtime_error when no
// built-in model has that name.
ModelSource builtin_model_source(const std::string& name);

struct Plugin {
  std::string path;           // the shared library
  std::string model;          // the model it runs
  bool compiled = false;      // compiled by this call (else from the cache)
  double compile_seconds = 0;
  const nholo_plugin* entry = nullptr;
  std::shared_ptr<PluginModelRuntime> runtime;  // the run pipeline's view of it
};

// A plugin's SIMD lane add-on (plugin_abi.h nholo_lane_plugin): the lanes'
// kernels of the model's Udwadia–Kalaba formulation for one instruction set.
struct LanePlugin {
  std::string path;  // the shared library
  std::string isa;   // "avx512", "avx2"
  bool compiled = false;
  double compile_seconds = 0;
  const nholo_lane_plugin* entry = nullptr;
};

std::string plugin_cache_dir();

// This nholo's release, revision and plugin interface version (the cache's
// records and keys).
std::string plugin_identity();

// The plugin of a model's source: loaded from the cache or compiled (log:
// one line per step, e.g. "compiling model sleigh ... 14.2 s"; may be empty).
// force: compile even when a valid plugin is cached. tangent: a plugin that
// holds the formulations' tangent systems instead (kernels/lyapunov.hpp, a run
// with [lyapunov]; compiled with NHOLO_PLUGIN_TANGENT, a plugin of its own in
// the cache), with `exponents` tangent vectors (NHOLO_PLUGIN_TANGENT_EXPONENTS,
// [lyapunov] exponents). Throws std::runtime_error naming the model, its origin and the
// reason on any failure.
const Plugin& model_plugin(const ModelSource& source,
                           const std::function<void(const std::string&)>& log, bool force = false,
                           bool tangent = false, int exponents = 1);
inline const Plugin& model_plugin(const ModelSpec& spec,
                                  const std::function<void(const std::string&)>& log,
                                  bool force = false) {
  return model_plugin(model_source(spec), log, force);
}

// The lane add-on of plugin (model_plugin(source), without the tangent
// systems) for instruction set isa, from the cache or compiled now
// (host/model_files/plugin_lanes_define.hpp: the unit after the model's
// header, compiled with the ISA's flags and linked with SLEEF), attached to
// the plugin's runtime: its Udwadia–Kalaba ensembles then integrate in lanes
// on a CPU backend whose backend.simd is isa (kernels/ensemble_lanes.hpp).
// Null, nothing compiled, when isa is off or the model has no Udwadia–Kalaba
// formulation; null too, the reason said through log, when the add-on cannot
// be built or loaded (a compiler without the instruction set, SLEEF's header
// or library missing): the lanes are the runs' speed, not their results, so
// the runs go on one trajectory at a time. Throws Interrupted when a signal
// stops its compiler. tangent: the add-on of the plugin with the tangent
// systems (model_plugin(source, ..., true, exponents), a run with
// [lyapunov]): the lanes' kernels of the Udwadia–Kalaba tangent system
// (kernels/lane_tangent.hpp), a cache entry of its own.
const LanePlugin* lane_plugin(const ModelSource& source, const Plugin& plugin, SimdIsa isa,
                              const std::function<void(const std::string&)>& log,
                              bool force = false, bool tangent = false, int exponents = 1);

// The instruction set whose lane add-on a run of cfg uses on a CPU backend
// (backend.simd resolved on this CPU): off when the run asks for the CUDA
// backend or has no Udwadia–Kalaba formulation, and when backend.simd names
// an instruction set this CPU lacks (the device's choice refuses the run
// with the reason).
SimdIsa run_lane_isa(const RunConfig& cfg);

// A plugin file built outside the cache (CMake's nholo_add_model): loaded
// once its interface version, layout and nholo release are this nholo's.
// Throws naming the file and what differs.
const Plugin& load_plugin_file(const std::string& path);

// The plugins in the cache folder, for `nholo models`: model, path and
// "ok" or why it would not be loaded; a plugin (.so) whose record vouches for
// it is loaded (dlopen and the entry table's checks) to say so.
struct CachedPlugin {
  std::string model, path, source, state;
  double compile_seconds = 0;
  bool loaded = false;  // a plugin (.so) that was loaded and passed the entry table's checks
};
std::vector<CachedPlugin> cached_plugins();

// NVRTC's version ("13.0") and where it was loaded from; throws naming the
// places tried when it cannot be loaded.
std::string nvrtc_description();

// The plugin file `path` loaded (once per process, load_plugin_file) and its
// model's description; loaded_path: the path it was loaded from. The loader
// the programs register for config/ (set_plugin_model_loader,
// host/config/model_catalog.hpp).
ModelInfo plugin_model_info(const std::string& path, std::string& loaded_path);

// Throws, naming why, when a model file's GPU kernels cannot be compiled on
// this machine (NVRTC cannot be loaded): the check the commands hand
// open_run_device (host/run/device_choice.hpp) for its choice under auto.
void check_gpu_module_compiler();

struct GpuModule {
  std::string path;  // the cubin in the cache
  std::string model, formulation, method, arch;
  std::string image;  // the cubin's bytes
  bool compiled = false;
  double compile_seconds = 0;
  // ptxas' report on the kernel: "168 registers, 960 B stack, 24 B spill stores"
  std::string resources;
};

// The GPU module of formulation `formulation` of a model, for `method`
// ("rk4", "dopri5", "dop853") and GPU architecture `arch` ("sm_90"), with the
// events' hook (EnsembleWindow::run<M, true>) when `events`: a run with
// [[events]] needs it, one without runs the leaner kernel; of the
// formulation's tangent system when `tangent` (a run with [lyapunov]): from
// the cache or compiled now by NVRTC. plugin: the model's plugin
// (model_plugin(source), with tangent when tangent), whose window layout the
// module must share. Throws std::runtime_error naming the model, the
// formulation and the reason.
struct GpuModuleKind {
  bool events = false;   // with the events' hook
  bool tangent = false;  // the tangent system's
  int exponents = 1;     // with this many exponents ([lyapunov] exponents)
};
const GpuModule& gpu_module(const ModelSource& source, const Plugin& plugin,
                            const std::string& formulation, const std::string& method,
                            const std::string& arch,
                            const std::function<void(const std::string&)>& log, bool force = false,
                            GpuModuleKind kind = {});

// Checks a GPU architecture before anything is compiled for it: its form
// (sm_ and 2 or 3 digits, optionally a or f: sm_80, sm_90a; compute_XY is
// refused: a GPU module is a cubin), then that NVRTC compiles for it (its
// nvrtcGetSupportedArchs, where it has one). Loads NVRTC. Throws naming the
// architecture, what is accepted and, when NVRTC refuses it, the
// architectures it supports.
void check_gpu_arch(const std::string& arch);

// "sm_90" from a compute capability "9.0" (DeviceInfo::compute_capability).
std::string gpu_arch_of(const std::string& compute_capability);

}  // namespace nholo
