// nholo/host/model_files/gpu_module.cpp — a model file's GPU modules
// (host/model_files/plugin.hpp): NVRTC loaded at run time, the translation
// unit it compiles per formulation and method, the architecture checks, and
// the modules' place in the plugin cache (plugin_cache.hpp).
#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "host/backends/device_ensemble.hpp"
#include "host/backends/system_types.hpp"
#include "host/config/tables.hpp"
#include "host/model_files/plugin.hpp"
#include "host/model_files/plugin_cache.hpp"

namespace fs = std::filesystem;

namespace nholo {

using namespace plugin_cache;

namespace {

// NVRTC, loaded at run time (a CUDA-enabled nholo runs without it until a
// model file is run on a GPU; a CPU-only nholo compiles modules ahead of time)

#ifndef NHOLO_CUDA_LIB_DIR
#define NHOLO_CUDA_LIB_DIR "/usr/local/cuda/lib64"
#endif
#ifndef NHOLO_NVRTC_SONAME
#define NHOLO_NVRTC_SONAME "libnvrtc.so"
#endif

struct Nvrtc {
  using Program = void*;
  int (*version)(int*, int*) = nullptr;
  int (*create)(Program*, const char*, const char*, int, const char* const*,
                const char* const*) = nullptr;
  int (*compile)(Program, int, const char* const*) = nullptr;
  int (*log_size)(Program, std::size_t*) = nullptr;
  int (*log)(Program, char*) = nullptr;
  int (*cubin_size)(Program, std::size_t*) = nullptr;
  int (*cubin)(Program, char*) = nullptr;
  int (*destroy)(Program*) = nullptr;
  const char* (*error_string)(int) = nullptr;
  // optional (NVRTC 11.2 and later): the architectures it compiles for
  int (*num_archs)(int*) = nullptr;
  int (*archs)(int*) = nullptr;
  std::string path, version_text;
};

// dlopen'ed once per process; throws naming every place tried
const Nvrtc& nvrtc() {
  static std::mutex mu;
  static std::unique_ptr<Nvrtc> lib;
  static std::string failure;
  std::lock_guard<std::mutex> g(mu);
  if (lib) return *lib;
  if (!failure.empty()) throw std::runtime_error(failure);
  std::vector<std::string> tried;
  if (const char* e = std::getenv("NHOLO_NVRTC"); e && *e) tried.push_back(e);
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) tried.push_back((exe.parent_path().parent_path() / "lib" / NHOLO_NVRTC_SONAME).string());
  tried.push_back(NHOLO_NVRTC_SONAME);
  tried.push_back((fs::path(NHOLO_CUDA_LIB_DIR) / NHOLO_NVRTC_SONAME).string());
  void* h = nullptr;
  std::string errors;
  for (const auto& t : tried) {
    if (t.find('/') != std::string::npos && !fs::exists(t, ec)) {
      errors += "\n  " + t + ": no such file";
      continue;
    }
    h = ::dlopen(t.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h) {
      auto n = std::make_unique<Nvrtc>();
      n->path = t;
      lib = std::move(n);
      break;
    }
    errors += "\n  " + t + ": " + ::dlerror();
  }
  if (!h) {
    failure =
        "NVRTC (the CUDA runtime compiler, " + std::string(NHOLO_NVRTC_SONAME) +
        ") cannot be loaded; it compiles a model file's GPU kernels. Tried:" + errors +
        "\nInstall the CUDA toolkit's NVRTC (or use a bundle that carries it), set NHOLO_NVRTC "
        "to its path, or run the model on the CPU backends (backend.device = \"omp\")";
    throw std::runtime_error(failure);
  }
  Nvrtc& n = *lib;
  auto sym = [&](auto& fn, const char* name) {
    void* f = ::dlsym(h, name);
    if (!f) {
      failure = "'" + n.path + "' has no " + name + ": not NVRTC, or too old a version";
      lib.reset();
      throw std::runtime_error(failure);
    }
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(f);
  };
  sym(n.version, "nvrtcVersion");
  sym(n.create, "nvrtcCreateProgram");
  sym(n.compile, "nvrtcCompileProgram");
  sym(n.log_size, "nvrtcGetProgramLogSize");
  sym(n.log, "nvrtcGetProgramLog");
  sym(n.cubin_size, "nvrtcGetCUBINSize");
  sym(n.cubin, "nvrtcGetCUBIN");
  sym(n.destroy, "nvrtcDestroyProgram");
  sym(n.error_string, "nvrtcGetErrorString");
  n.num_archs = reinterpret_cast<int (*)(int*)>(::dlsym(h, "nvrtcGetNumSupportedArchs"));
  n.archs = reinterpret_cast<int (*)(int*)>(::dlsym(h, "nvrtcGetSupportedArchs"));
  int major = 0, minor = 0;
  n.version(&major, &minor);
  n.version_text = std::to_string(major) + "." + std::to_string(minor);
  return n;
}

// The name of formulation f's system type for the model type M (the type
// visit_formulation builds: host/backends/system_types.hpp)
std::string system_type(const std::string& f, const std::string& M) {
  std::string name;
  if (const tables::FormulationEntry* e = tables::find_formulation(f))
    name = system_types::with_system_row(e->id, std::string(),
                                         [&](auto row) { return decltype(row)::name(M); });
  if (name.empty()) throw std::runtime_error("formulation '" + f + "' has no GPU module");
  return name;
}

std::string method_enum(const std::string& method) {
  std::string accepted;
  for (const auto& e : tables::kMethods) {
    if (method == e.name) return "nholo::Method::" + method;
    accepted += (accepted.empty() ? "" : ", ") + std::string(e.name);
  }
  throw std::runtime_error("method '" + method + "': accepted " + accepted);
}

// The translation unit NVRTC compiles: the model header, the kernel headers,
// the layout checks against the plugin's compiler, and the one kernel.
std::string module_source(const ModelSource& source, const std::string& formulation,
                          const std::string& method, GpuModuleKind kind,
                          const nholo_window_layout& w) {
  const bool events = kind.events;
  std::string sys = system_type(formulation, source.type);
  if (kind.tangent)
    sys = "nholo::TangentSystem<" + sys +
          (kind.exponents != 1 ? ", " + std::to_string(kind.exponents) : std::string()) + ">";
  std::ostringstream o;
  o << "// generated by nholo: the GPU module of model '" << source.name << "', formulation "
    << formulation << (kind.tangent ? " (its tangent system)" : "") << ", method " << method
    << (events ? ", with the events' hook" : "") << " (compiled by NVRTC)\n"
    << source.header
    << "\n#include <kernels/formulations/embedded.hpp>\n#include <kernels/ensemble.hpp>\n"
    << "#include <kernels/formulations.hpp>\n"
    << (kind.tangent ? "#include <kernels/lyapunov.hpp>\n" : "") << "\n"
    << "using NholoSystem = " << sys << ";\n"
    << "using NholoWindow = nholo::EnsembleWindow<NholoSystem>;\n"
    << "// the model plugin (host compiler) writes this argument's bytes: same layout\n";
  auto check = [&](const char* what, const std::string& expr, std::uint64_t v) {
    o << "static_assert(" << expr << " == " << v << "u, \"EnsembleWindow: " << what
      << " differs between NVRTC and the plugin's compiler\");\n";
  };
  check("size", "sizeof(NholoWindow)", w.bytes);
  check("alignment", "alignof(NholoWindow)", w.align);
  check("size of the system", "sizeof(NholoSystem)", w.sys);
  check("alignment of the system", "alignof(NholoSystem)", w.sys_align);
  check("size of the parameters", "sizeof(NholoSystem::Params)", w.params);
  check("size of IntegratorOptions", "sizeof(nholo::IntegratorOptions)", w.opt);
  check("alignment of IntegratorOptions", "alignof(nholo::IntegratorOptions)", w.opt_align);
  check("size of EnsembleArrays", "sizeof(nholo::EnsembleArrays<double>)", w.arr);
  o << "\n// one trajectory per thread, blocks of " << kGpuBlock
    << " threads, thread j the launch's j-th active trajectory\n"
    << "// (kernels/ensemble.hpp WindowLaunch; host/backends/cuda_ensemble.cu launches it)\n"
    << "// NHOLO_GPU_MIN_BLOCKS (-D in NHOLO_NVRTC_OPTIONS): blocks per SM the registers\n"
    << "// are planned for (ptxas caps them at 65536 / (blocks x " << kGpuBlock << "))\n"
    << "#ifdef NHOLO_GPU_MIN_BLOCKS\n#define NHOLO_MODULE_BOUNDS __launch_bounds__(" << kGpuBlock
    << ", NHOLO_GPU_MIN_BLOCKS)\n#else\n#define NHOLO_MODULE_BOUNDS __launch_bounds__(" << kGpuBlock
    << ")\n#endif\n"
    << "extern \"C\" __global__ void NHOLO_MODULE_BOUNDS"
    << " nholo_integrate(const NholoWindow f, const nholo::WindowLaunch a) {\n"
    << "  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;\n"
    << "  if (j >= a.n_active) return;\n"
    << "  const int64_t i = a.active ? a.active[j] : j;\n"
    << "  if (!f.template run<" << method_enum(method) << ", " << (events ? "true" : "false")
    << ">(i, a.launch_steps)) a.unfinished[atomicAdd(a.n_unfinished, 1ull)] = i;\n}\n";
  return o.str();
}

}  // namespace

std::string nvrtc_description() {
  const Nvrtc& n = nvrtc();
  return "NVRTC " + n.version_text + " (" + n.path + ")";
}

std::string gpu_arch_of(const std::string& cc) {
  const auto dot = cc.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 >= cc.size())
    throw std::runtime_error("compute capability '" + cc + "': expected MAJOR.MINOR");
  return "sm_" + cc.substr(0, dot) + cc.substr(dot + 1);
}

namespace {

// The architectures NVRTC compiles for (75, 80, ...; nvrtcGetSupportedArchs),
// empty when this NVRTC cannot say
std::vector<int> supported_archs(const Nvrtc& nv) {
  std::vector<int> v;
  int n = 0;
  if (!nv.num_archs || !nv.archs || nv.num_archs(&n) != 0 || n <= 0 || n > 1000) return v;
  v.resize(static_cast<std::size_t>(n));
  if (nv.archs(v.data()) != 0) v.clear();
  return v;
}

std::string arch_list(const std::vector<int>& v) {
  std::string r;
  for (int a : v) r += (r.empty() ? "sm_" : ", sm_") + std::to_string(a);
  return r;
}

// "GPU architecture 'sm_99' is not supported by NVRTC 13.0 (PATH) (supported: ...)"
std::string unsupported_arch(const std::string& arch, const Nvrtc& nv) {
  const std::vector<int> v = supported_archs(nv);
  return "GPU architecture '" + arch + "' is not supported by NVRTC " + nv.version_text + " (" +
         nv.path + ")" +
         (v.empty() ? std::string("; see its documentation for the architectures it accepts")
                    : " (supported: " + arch_list(v) + ")");
}

// the digits of arch (sm_90a: 90)
int arch_number(const std::string& arch) {
  std::size_t i = 3;
  int v = 0;
  while (i < arch.size() && std::isdigit(static_cast<unsigned char>(arch[i])))
    v = v * 10 + (arch[i++] - '0');
  return v;
}

}  // namespace

void check_gpu_arch(const std::string& arch) {
  // a real architecture: a cubin is what a GPU module is
  if (arch.compare(0, 8, "compute_") == 0)
    throw std::runtime_error("GPU architecture '" + arch +
                             "' is a virtual architecture (PTX only): nholo compiles GPU modules "
                             "into cubins; expected sm_XY (e.g. sm_80, sm_90)");
  bool ok = arch.size() >= 5 && arch.compare(0, 3, "sm_") == 0;
  std::size_t digits = 0;
  for (std::size_t i = 3; ok && i < arch.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(arch[i])) && i == 3 + digits) {
      ++digits;
    } else {
      // one feature suffix after the digits: sm_90a, sm_100f
      ok = i + 1 == arch.size() && digits > 0 && (arch[i] == 'a' || arch[i] == 'f');
    }
  }
  if (!ok || digits < 2 || digits > 3)
    throw std::runtime_error("GPU architecture '" + arch +
                             "': expected sm_XY (sm_ and 2 or 3 digits, optionally followed by a "
                             "or f: e.g. sm_80, sm_90, sm_90a)");
  const Nvrtc& nv = nvrtc();
  const std::vector<int> v = supported_archs(nv);
  if (!v.empty() && std::find(v.begin(), v.end(), arch_number(arch)) == v.end())
    throw std::runtime_error(unsupported_arch(arch, nv));
}

namespace {

// "168 registers, 960 B stack, 24 B spill stores": ptxas' report on
// nholo_integrate in NVRTC's log (--ptxas-options=--verbose); empty if absent
std::string kernel_resources(const std::string& log) {
  const auto at = log.find("Function properties for nholo_integrate");
  if (at == std::string::npos) return "";
  const std::string tail = log.substr(at, 600);
  auto number_before = [&](const std::string& what) -> std::string {
    const auto p = tail.find(what);
    if (p == std::string::npos || p == 0) return "?";
    auto b = p;
    while (b > 0 && tail[b - 1] == ' ') --b;
    auto e = b;
    while (b > 0 && std::isdigit(static_cast<unsigned char>(tail[b - 1]))) --b;
    return b < e ? tail.substr(b, e - b) : "?";
  };
  auto number_after = [&](const std::string& what) -> std::string {
    const auto p = tail.find(what);
    if (p == std::string::npos) return "?";
    auto b = p + what.size();
    auto e = b;
    while (e < tail.size() && std::isdigit(static_cast<unsigned char>(tail[e]))) ++e;
    return b < e ? tail.substr(b, e - b) : "?";
  };
  return number_after("Used ") + " registers, " + number_before("bytes stack frame") +
         " B stack, " + number_before("bytes spill stores") + " B spill stores";
}

std::deque<GpuModule>& loaded_modules() {
  static std::deque<GpuModule> v;
  return v;
}

}  // namespace

// NVRTC's options for a module for GPU architecture arch: nholo's headers,
// and NHOLO_NVRTC_OPTIONS (e.g. "-DNHOLO_GPU_MIN_BLOCKS=3", how
// docs/BENCHMARKS.md measures occupancy against registers; the kernel's
// __launch_bounds__ overrides --maxrregcount); part of the cache key, like
// every option.
namespace {

std::vector<std::string> nvrtc_options(const std::string& arch) {
  const std::string root = header_root();
  std::vector<std::string> opts = {"--gpu-architecture=" + arch,
                                   "-std=c++17",
                                   "-default-device",
                                   "-DNDEBUG",
                                   "--ptxas-options=--verbose",
                                   "-I" + root,
                                   "-I" + (fs::path(root) / "kernels" / "nvrtc").string()};
  if (const char* extra = std::getenv("NHOLO_NVRTC_OPTIONS")) {
    std::istringstream words(extra);
    for (std::string word; words >> word;) opts.push_back(word);
  }
  return opts;
}

}  // namespace

const GpuModule& gpu_module(const ModelSource& source, const Plugin& plugin,
                            const std::string& formulation, const std::string& method,
                            const std::string& arch,
                            const std::function<void(const std::string&)>& log, bool force,
                            GpuModuleKind kind) {
  auto say = [&](const std::string& s) {
    if (log) log(s);
  };
  const bool events = kind.events;
  const std::string& name = source.name;
  const std::string what = "the GPU module of model '" + name + "', formulation " + formulation +
                           (kind.tangent ? " (tangent system)" : "") + ", method " + method +
                           (events ? " with events" : "") + ", " + arch;
  check_gpu_arch(arch);
  (void)method_enum(method);
  nholo_window_layout w{};
  if (!plugin.entry || !plugin.entry->window_layout ||
      !plugin.entry->window_layout(formulation.c_str(), kind.tangent ? 1 : 0, &w))
    throw std::runtime_error(
        "model '" + name + "' has no formulation '" + formulation + "'" +
        (kind.tangent ? " with a tangent system in its plugin " + plugin.path : std::string()));
  const std::string source_text = module_source(source, formulation, method, kind, w);
  const Nvrtc& nv = nvrtc();
  const std::vector<std::string> opts = nvrtc_options(arch);
  std::string key_text = source_text + '\0' + plugin_identity() + '\0' + headers_fingerprint() +
                         '\0' + nv.version_text;
  for (const auto& o : opts) key_text += '\0' + o;
  const std::string key = hex16(fnv1a(key_text));
  for (const auto& m : loaded_modules())
    if (m.path.find(key) != std::string::npos && !force) return m;

  const fs::path dir = plugin_cache_dir();
  const std::string stem =
      (dir / (name + "-gpu-" + formulation + (kind.tangent ? "-tangent" : "") + "-" + method +
              (events ? "-events" : "") + "-" + arch + "-" + key))
          .string();
  const std::string cubin = stem + ".cubin", record = stem + ".info", src = stem + ".cu";
  GpuModule g;
  g.path = cubin;
  g.model = name;
  g.formulation = formulation;
  g.method = method;
  g.arch = arch;
  // the cached module ("ok"), else why not; without the lock, so that a
  // read-only cache serves the modules built in it
  auto use_cached = [&] {
    const std::string state = check_cached(cubin, record);
    if (state != "ok") return state;
    auto rec = read_record(record);
    g.compile_seconds = std::atof(rec["compile_seconds"].c_str());
    g.resources = rec["resources"];
    g.image = read_file(cubin);
    say("model " + name + ": " + formulation + " " + method + " GPU module " + cubin + " (cached)");
    return state;
  };
  std::string state = force ? "forced" : use_cached();
  std::unique_ptr<FileLock> lock;  // held while the module is built
  if (state != "ok") {
    prepare_cache_folder(dir, what, "module " + cubin,
                         force                ? "is to be rebuilt (--force)"
                         : state == "missing" ? "is missing"
                                              : state);
    lock = std::make_unique<FileLock>(stem + ".lock", [&] {
      say("model " + name + ": waiting for another nholo that is building its GPU module (" +
          stem + ".lock)");
    });
    remove_stale_temporaries(stem);
    // another process may have built it while this one waited for the lock
    // (or was between its module and its record when it was looked at)
    if (!force) state = use_cached();
  }
  if (state != "ok") {
    if (state != "missing" && !force)
      say("model " + name + ": the cached GPU module " + cubin + " " + state +
          "; refused, rebuilding it");
    say("model " + name + ": compiling the " + formulation + " " + method + " GPU module for " +
        arch + " (" + nv.version_text + ") ...");
    write_atomic(src, source_text);
    std::vector<const char*> argv;
    for (const auto& o : opts) argv.push_back(o.c_str());
    const auto t0 = std::chrono::steady_clock::now();
    Nvrtc::Program prog = nullptr;
    // named by its path in the cache, where NVRTC looks for its quoted includes (not the cwd)
    int rc = nv.create(&prog, source_text.c_str(), fs::absolute(src).c_str(), 0, nullptr, nullptr);
    if (rc != 0) throw std::runtime_error(what + ": nvrtcCreateProgram: " + nv.error_string(rc));
    rc = nv.compile(prog, static_cast<int>(argv.size()), argv.data());
    std::size_t log_size = 0;
    nv.log_size(prog, &log_size);
    std::string compile_log(log_size, '\0');
    if (log_size) nv.log(prog, &compile_log[0]);
    while (!compile_log.empty() && (compile_log.back() == '\0' || compile_log.back() == '\n'))
      compile_log.pop_back();
    std::string image;
    if (rc == 0) {
      std::size_t n = 0;
      rc = nv.cubin_size(prog, &n);
      if (rc == 0) {
        image.resize(n);
        rc = n ? nv.cubin(prog, &image[0]) : 1;
      }
    }
    nv.destroy(&prog);
    g.compile_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string log_path = stem + ".log";
    write_atomic(log_path, compile_log + "\n");
    if (rc != 0 && compile_log.find("--gpu-architecture") != std::string::npos &&
        std::string(nv.error_string(rc)) == "NVRTC_ERROR_INVALID_OPTION")
      throw std::runtime_error(unsupported_arch(arch, nv) + ": it refused --gpu-architecture=" +
                               arch + " (" + compile_log + ")");
    if (rc != 0 || image.empty()) {
      if (compile_log.size() > 4000) compile_log = compile_log.substr(0, 4000) + "\n...";
      throw std::runtime_error(
          "compiling " + what + " with NVRTC failed (" + nv.error_string(rc) +
          "; the model file was accepted, so this is a problem of the NVRTC setup or "
          "of nholo: see " +
          log_path + ", source " + src + "):\n" + compile_log);
    }
    write_atomic(cubin, image);
    g.resources = kernel_resources(compile_log);
    std::ostringstream rec;
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.2f", g.compile_seconds);
    rec << "model = " << name << "\nsource = " << source.origin
        << "\nidentity = " << plugin_identity() << "\nabi = " << NHOLO_PLUGIN_ABI_VERSION
        << "\ncompiler = NVRTC " << nv.version_text << "\nformulation = " << formulation
        << (kind.tangent ? " (tangent system)" : "") << "\nmethod = " << method
        << "\narch = " << arch << "\nbytes = " << image.size()
        << "\nchecksum = " << hex16(fnv1a(image)) << "\ncompile_seconds = " << secs
        << "\nresources = " << g.resources << "\n";
    write_atomic(record, rec.str());  // after the module: a record vouches for a complete file
    g.image = std::move(image);
    g.compiled = true;
    say("model " + name + ": " + formulation + " " + method + " GPU module compiled in " +
        std::string(secs) + " s: " + cubin);
  }
  loaded_modules().push_back(std::move(g));
  return loaded_modules().back();
}

}  // namespace nholo
