#include "host/model_files/plugin.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <type_traits>

#include "host/backends/device_ensemble.hpp"
#include "host/config/tables.hpp"
#include "host/run/interrupt.hpp"

extern char** environ;

namespace fs = std::filesystem;

namespace nholo {

namespace {

// Set by CMakeLists.txt: the compiler nholo was built with (the default for
// plugins) and its source tree (headers, when not run from an install tree).
#ifndef NHOLO_PLUGIN_CXX
#define NHOLO_PLUGIN_CXX "c++"
#endif
#ifndef NHOLO_PLUGIN_SOURCE_DIR
#define NHOLO_PLUGIN_SOURCE_DIR ""
#endif

uint64_t fnv1a(const std::string& s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string hex16(uint64_t h) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(h));
  return b;
}

std::string read_file(const std::string& path, bool* ok = nullptr) {
  std::ifstream in(path, std::ios::binary);
  if (ok) *ok = static_cast<bool>(in);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Something other than a file where a cache file goes (a folder, a link to
// one: a damaged or tampered cache) is removed, so that the file can be put
// there by a rename.
void clear_non_file(const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(path, ec);
  if (ec || !fs::exists(st) || fs::is_regular_file(st)) return;
  fs::remove_all(path, ec);
}

// Under the lock of a cache entry (STEM.lock) no other process builds it:
// every temporary of STEM (STEM.tmp.PID.so, STEM.cpp.tmp.PID, ...) is left
// over by a build that was killed or crashed, and is removed.
void remove_stale_temporaries(const std::string& stem) {
  const fs::path p(stem);
  const std::string prefix = p.filename().string() + ".";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(p.parent_path(), ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && name.find(".tmp.") != std::string::npos) {
      std::error_code rm;
      fs::remove_all(e.path(), rm);
    }
  }
}

// writes path atomically: a temporary next to it, then rename
void write_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) throw std::runtime_error("cannot write '" + tmp + "'");
  }
  clear_non_file(path);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot rename '" + tmp + "' to '" + path + "': " + why);
  }
}

// The folder holding nholo's headers (kernels/, models/, host/): an install
// tree's include/nholo next to the binary, else the source tree it was built
// from, else $NHOLO_INCLUDE_DIR.
std::string header_root() {
  if (const char* e = std::getenv("NHOLO_INCLUDE_DIR"); e && *e) return e;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path inst = exe.parent_path().parent_path() / "include" / "nholo";
    if (fs::exists(inst / "host" / "model_files" / "plugin_define.hpp", ec)) return inst.string();
  }
  const std::string src = NHOLO_PLUGIN_SOURCE_DIR;
  if (!src.empty() && fs::exists(fs::path(src) / "host" / "model_files" / "plugin_define.hpp", ec))
    return src;
  throw std::runtime_error("cannot find nholo's headers to compile a model plugin (looked in " +
                           (ec ? std::string("PREFIX/include/nholo")
                               : (exe.parent_path().parent_path() / "include/nholo").string()) +
                           (src.empty() ? "" : " and " + src) +
                           "); set NHOLO_INCLUDE_DIR to the folder holding kernels/, host/");
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> v;
  std::string cur;
  std::istringstream is(s);
  while (std::getline(is, cur, sep))
    if (!cur.empty()) v.push_back(cur);
  return v;
}

std::string compiler() {
  if (const char* e = std::getenv("NHOLO_CXX"); e && *e) return e;
  return NHOLO_PLUGIN_CXX;
}

// the compile command without its input and output files
std::vector<std::string> compile_flags() {
  std::vector<std::string> a = {"-std=c++17",
                                "-O3",
                                "-DNDEBUG",
                                "-fPIC",
                                "-shared",
                                "-fvisibility=hidden",
                                "-DNHOLO_VERSION=\"" + std::string(NHOLO_VERSION) + "\"",
                                "-DNHOLO_GIT_REVISION=\"" + std::string(NHOLO_GIT_REVISION) + "\"",
                                "-I" + header_root()};
  if (const char* e = std::getenv("NHOLO_PLUGIN_CXXFLAGS"); e && *e)
    for (const auto& f : split(e, ' ')) a.push_back(f);
  return a;
}

// Runs argv, its output (stdout and stderr) to log_path; returns the exit status.
int run_process(const std::vector<std::string>& argv, const std::string& log_path) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::vector<char*> args;
  for (const auto& s : argv) args.push_back(const_cast<char*>(s.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0)
    throw std::runtime_error("cannot start the compiler '" + argv[0] + "': " + std::strerror(rc) +
                             " (set NHOLO_CXX to a C++17 compiler)");
  // polled, so that an interrupt (SIGINT, SIGTERM, SIGHUP of `nholo run`)
  // stops the compiler within a fraction of a second
  int status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR)
      throw std::runtime_error("waiting for the compiler: " + std::string(std::strerror(errno)));
    if (interrupt_flag().load()) {
      ::kill(pid, SIGTERM);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      throw Interrupted("while compiling (the compiler was stopped)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status)
                           : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

// An exclusive flock held for the life of the object.
class FileLock {
 public:
  explicit FileLock(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw std::runtime_error("cannot create '" + path + "': " + std::strerror(errno));
    // polled, so that an interrupt ends the wait for another process's build
    while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK && errno != EINTR) {
        const std::string why = std::strerror(errno);
        ::close(fd_);
        throw std::runtime_error("cannot lock '" + path + "': " + why);
      }
      if (interrupt_flag().load()) {
        ::close(fd_);
        throw Interrupted("while waiting for another nholo building the same cache entry (" + path +
                          ")");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  ~FileLock() { ::close(fd_); }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

// The record written next to a cached plugin: key = value lines.
std::map<std::string, std::string> read_record(const std::string& path) {
  std::map<std::string, std::string> r;
  bool ok = false;
  const std::string text = read_file(path, &ok);
  if (!ok) return r;
  std::istringstream is(text);
  std::string line;
  while (std::getline(is, line)) {
    const auto eq = line.find(" = ");
    if (eq != std::string::npos) r[line.substr(0, eq)] = line.substr(eq + 3);
  }
  return r;
}

// "ok", or why the plugin at so (with its record) must not be loaded
std::string check_cached(const std::string& so, const std::string& record) {
  std::error_code ec;
  if (!fs::exists(so, ec)) return "missing";
  const auto r = read_record(record);
  if (r.empty()) return "has no record (" + record + ")";
  bool ok = false;
  const std::string bytes = read_file(so, &ok);
  if (!ok) return "cannot be read";
  if (r.count("bytes") == 0 || r.at("bytes") != std::to_string(bytes.size()) ||
      r.count("checksum") == 0 || r.at("checksum") != hex16(fnv1a(bytes)))
    return "does not match its record (damaged or replaced after it was built)";
  if (r.count("identity") == 0 || r.at("identity") != plugin_identity())
    return "was built for " +
           (r.count("identity") ? r.at("identity") : std::string("another nholo"));
  // the identity names a commit; the interface can change without one (a
  // build from a changed tree): the record says which one it was built for
  if (r.count("abi") == 0 || r.at("abi") != std::to_string(NHOLO_PLUGIN_ABI_VERSION))
    return "was built for plugin ABI " + (r.count("abi") ? r.at("abi") : std::string("?")) +
           ", this nholo has ABI " + std::to_string(NHOLO_PLUGIN_ABI_VERSION);
  return "ok";
}

std::deque<Plugin>& loaded() {
  static std::deque<Plugin> v;
  return v;
}

// dlopen + the entry table's checks (interface version, layout, nholo
// release); throws naming path and what differs
const nholo_plugin* open_entry(const std::string& path) {
  void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) throw std::runtime_error("cannot load the model plugin '" + path + "': " + ::dlerror());
  auto fn = reinterpret_cast<nholo_plugin_entry_fn>(::dlsym(h, NHOLO_PLUGIN_ENTRY_SYMBOL));
  if (!fn) {
    ::dlclose(h);
    throw std::runtime_error("'" + path + "' is not an nholo model plugin (no " +
                             std::string(NHOLO_PLUGIN_ENTRY_SYMBOL) + ")");
  }
  const nholo_plugin* e = fn();
  // every check reads the table before dlclose: it lives in the plugin
  std::string why;
  if (!e) {
    why = "its entry point returned no table";
  } else if (e->abi_version != NHOLO_PLUGIN_ABI_VERSION) {
    why = "it has plugin interface version " + std::to_string(e->abi_version) +
          ", this nholo version " + std::to_string(NHOLO_PLUGIN_ABI_VERSION);
  } else if (const std::string m = plugin_layout_mismatch(*e); !m.empty()) {
    why = "its compiler (" + std::string(e->compiler ? e->compiler : "?") +
          ") lays the plugin interface out differently: " + m;
  } else if (!e->nholo_version || std::string(e->nholo_version) != NHOLO_VERSION) {
    why = "it was compiled against the headers of nholo " +
          std::string(e->nholo_version ? e->nholo_version : "?") + ", this is nholo " +
          NHOLO_VERSION;
  } else if (!e->model || !e->model->name || !e->system_open || !e->window_run) {
    why = "its table is incomplete";
  }
  if (!why.empty()) {
    ::dlclose(h);
    throw std::runtime_error("'" + path + "' cannot be used: " + why +
                             "; rebuild it against this nholo");
  }
  // the handle stays open for the life of the process (the entry points into it)
  return e;
}

// The model header of spec, independent of the file it came from: the
// same model read from its model file, from the [model] table a result file
// stores (nholo merge, an MPI run's merge) or from another folder is one
// plugin and one set of GPU modules, compiled once.
std::string neutral_header(const ModelSpec& spec) {
  ModelSpec neutral = spec;
  neutral.source = "the [model] table of model '" + spec.name + "'";
  return generate_model_header(neutral);
}

// ---------------------------------------------------------------------------
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
  int major = 0, minor = 0;
  n.version(&major, &minor);
  n.version_text = std::to_string(major) + "." + std::to_string(minor);
  return n;
}

// The system type of formulation f for the model type M (as
// visit_formulation in host/backends/formulation_system.hpp builds it)
std::string system_type(const std::string& f, const std::string& M) {
  using tables::Formulation;
  if (const tables::FormulationEntry* e = tables::find_formulation(f)) {
    switch (e->id) {
      case Formulation::udwadia_kalaba: return "nholo::UdwadiaKalabaSystem<" + M + ">";
      case Formulation::lagrange_multiplier: return "nholo::LagrangeMultiplierSystem<" + M + ">";
      case Formulation::null_space: return "nholo::NullSpaceSystem<" + M + ">";
      case Formulation::vakonomic: return "nholo::VakonomicSystem<" + M + ">";
      case Formulation::conflated: return "nholo::UdwadiaKalabaSystem<nholo::Conflated<" + M + ">>";
      case Formulation::embedded: return "nholo::EmbeddedSystem<" + M + ">";
    }
  }
  throw std::runtime_error("formulation '" + f + "' has no GPU module");
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
std::string module_source(const std::string& header, const std::string& model,
                          const std::string& formulation, const std::string& method,
                          const nholo_window_layout& w) {
  const std::string sys = system_type(formulation, "nholo::user_models::UserModel");
  std::ostringstream o;
  o << "// generated by nholo: the GPU module of model '" << model << "', formulation "
    << formulation << ", method " << method << " (compiled by NVRTC)\n"
    << header << "\n#include <kernels/formulations/embedded.hpp>\n#include <kernels/ensemble.hpp>\n"
    << "#include <kernels/formulations.hpp>\n\n"
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
    << "extern \"C\" __global__ void __launch_bounds__(" << kGpuBlock
    << ") nholo_integrate(const NholoWindow f, const nholo::WindowLaunch a) {\n"
    << "  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;\n"
    << "  if (j >= a.n_active) return;\n"
    << "  const int64_t i = a.active ? a.active[j] : j;\n"
    << "  if (!f.template run<" << method_enum(method)
    << ">(i, a.launch_steps)) a.unfinished[atomicAdd(a.n_unfinished, 1ull)] = i;\n}\n";
  return o.str();
}

}  // namespace

std::string plugin_identity() {
  return "nholo " NHOLO_VERSION " (" NHOLO_GIT_REVISION "), plugin interface " +
         std::to_string(NHOLO_PLUGIN_ABI_VERSION);
}

std::string plugin_cache_dir() {
  if (const char* e = std::getenv("NHOLO_CACHE_DIR"); e && *e) return e;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return (fs::path(x) / "nholo").string();
  if (const char* h = std::getenv("HOME"); h && *h)
    return (fs::path(h) / ".cache" / "nholo").string();
  throw std::runtime_error("no folder for the model plugin cache: set NHOLO_CACHE_DIR (or HOME)");
}

const Plugin& model_plugin(const ModelSpec& spec,
                           const std::function<void(const std::string&)>& log, bool force) {
  auto say = [&](const std::string& s) {
    if (log) log(s);
  };
  // the plugin's source does not name the file the model came from: the same
  // model read from its model file, from the [model] table a result file
  // stores (nholo merge, an MPI run's merge) or from another folder is one
  // plugin, compiled once
  const std::string header = neutral_header(spec);
  const std::string unit = "// generated by nholo: the plugin of model '" + spec.name + "'\n" +
                           header +
                           "\n#include \"host/model_files/plugin_define.hpp\"\n"
                           "NHOLO_DEFINE_PLUGIN(nholo::user_models::UserModel)\n";
  const std::string cxx = compiler();
  const std::vector<std::string> flags = compile_flags();
  std::string key_text = unit + '\0' + plugin_identity() + '\0' + cxx;
  for (const auto& f : flags) key_text += '\0' + f;
  const std::string key = hex16(fnv1a(key_text));
  for (const auto& p : loaded())
    if (p.path.find(key) != std::string::npos && !force) return p;

  const fs::path dir = plugin_cache_dir();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw std::runtime_error("cannot create the plugin cache '" + dir.string() +
                             "': " + ec.message());
  const std::string stem = (dir / (spec.name + "-" + key)).string();
  const std::string so = stem + ".so", record = stem + ".info", src = stem + ".cpp";
  FileLock lock(stem + ".lock");  // one build of a key at a time, across processes
  remove_stale_temporaries(stem);
  Plugin p;
  p.path = so;
  p.model = spec.name;
  // compiles the plugin into so (and its record)
  auto build = [&] {
    say("model " + spec.name + ": compiling its plugin (" + cxx + ", nholo's headers in " +
        header_root() + ") ...");
    write_atomic(src, unit);
    const std::string tmp = stem + ".tmp." + std::to_string(::getpid()) + ".so";
    const std::string log_path = stem + ".log";
    std::vector<std::string> argv = {cxx};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.push_back("-o");
    argv.push_back(tmp);
    argv.push_back(src);
    const auto t0 = std::chrono::steady_clock::now();
    int rc = 0;
    try {
      rc = run_process(argv, log_path);
    } catch (const Interrupted& e) {
      std::remove(tmp.c_str());
      throw Interrupted(std::string(e.what()) + " the plugin of model '" + spec.name + "'");
    }
    p.compile_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rc != 0 && interrupt_flag().load()) {
      // the signal reached the compiler too (Ctrl-C to the process group)
      std::remove(tmp.c_str());
      throw Interrupted("while compiling the plugin of model '" + spec.name + "'");
    }
    if (rc != 0) {
      std::remove(tmp.c_str());
      std::string msg = read_file(log_path);
      if (msg.size() > 4000) msg = msg.substr(0, 4000) + "\n...";
      throw std::runtime_error("compiling the plugin of model '" + spec.name + "' (" + spec.source +
                               ") failed (exit " + std::to_string(rc) +
                               "; the model file was accepted, so "
                               "this is a problem of the compiler setup or of nholo: see " +
                               log_path + ", source " + src + "):\n" + msg);
    }
    bool ok = false;
    const std::string bytes = read_file(tmp, &ok);
    if (!ok) throw std::runtime_error("cannot read the compiled plugin '" + tmp + "'");
    clear_non_file(so);
    if (std::rename(tmp.c_str(), so.c_str()) != 0) {
      const std::string why = std::strerror(errno);
      std::remove(tmp.c_str());
      throw std::runtime_error("cannot rename '" + tmp + "' to '" + so + "': " + why);
    }
    std::ostringstream rec;
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.2f", p.compile_seconds);
    rec << "model = " << spec.name << "\nsource = " << spec.source
        << "\nidentity = " << plugin_identity() << "\nabi = " << NHOLO_PLUGIN_ABI_VERSION
        << "\ncompiler = " << cxx << "\nbytes = " << bytes.size()
        << "\nchecksum = " << hex16(fnv1a(bytes)) << "\ncompile_seconds = " << secs << "\n";
    write_atomic(record, rec.str());  // after the plugin: a record vouches for a complete file
    p.compiled = true;
    say("model " + spec.name + ": plugin compiled in " + std::string(secs) + " s: " + so);
  };
  // loads so and checks that it is the model the config was checked against
  auto open_checked = [&] {
    p.entry = open_entry(so);
    // the compiled model must be the one the config was checked against
    const ModelInfo got = model_info_of_plugin(*p.entry);
    const ModelInfo want = model_info_from_spec(spec);
    if (got.name != want.name || got.n != want.n || got.m != want.m ||
        got.params.size() != want.params.size() || got.formulations != want.formulations)
      throw std::runtime_error("the plugin '" + so + "' does not describe model '" + spec.name +
                               "' as its file does; remove it (it is rebuilt)");
  };
  const std::string state = check_cached(so, record);
  if (state == "ok" && !force) {
    p.compile_seconds = std::atof(read_record(record)["compile_seconds"].c_str());
    say("model " + spec.name + ": plugin " + so + " (cached), compiled by " + cxx);
  } else {
    if (state != "missing" && !force)
      say("model " + spec.name + ": the cached plugin " + so + " " + state +
          "; refused, rebuilding it");
    build();
  }
  try {
    open_checked();
  } catch (const std::exception& e) {
    if (p.compiled) throw;  // built just now and still refused: not the cache's fault
    // a cached plugin its record vouches for but that does not load (another
    // machine's system libraries, a partial copy): rebuilt, once
    say("model " + spec.name + ": the cached plugin " + so + " cannot be used (" + e.what() +
        "); refused, rebuilding it");
    build();
    open_checked();
  }
  p.runtime = std::make_shared<const PluginModelRuntime>(p.entry, so);
  loaded().push_back(p);
  return loaded().back();
}

const Plugin& load_plugin_file(const std::string& path) {
  std::error_code ec;
  const std::string abs = fs::absolute(path, ec).string();
  for (const auto& p : loaded())
    if (p.path == abs) return p;
  if (!fs::is_regular_file(abs, ec))
    throw std::runtime_error("model plugin '" + path + "' is not a file");
  Plugin p;
  p.path = abs;
  p.entry = open_entry(abs);
  p.model = p.entry->model->name;
  p.runtime = std::make_shared<const PluginModelRuntime>(p.entry, abs);
  loaded().push_back(p);
  return loaded().back();
}

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

void check_arch(const std::string& arch) {
  bool ok = arch.size() > 3 && arch.compare(0, 3, "sm_") == 0;
  for (std::size_t i = 3; ok && i < arch.size(); ++i)
    ok = std::isdigit(static_cast<unsigned char>(arch[i])) ||
         (i + 1 == arch.size() && std::isalpha(static_cast<unsigned char>(arch[i])));
  if (!ok)
    throw std::runtime_error("GPU architecture '" + arch +
                             "': expected sm_XY (e.g. sm_80, sm_90, sm_90a)");
}

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

const GpuModule& gpu_module(const ModelSpec& spec, const Plugin& plugin,
                            const std::string& formulation, const std::string& method,
                            const std::string& arch,
                            const std::function<void(const std::string&)>& log, bool force) {
  auto say = [&](const std::string& s) {
    if (log) log(s);
  };
  const std::string what = "the GPU module of model '" + spec.name + "', formulation " +
                           formulation + ", method " + method + ", " + arch;
  check_arch(arch);
  (void)method_enum(method);
  nholo_window_layout w{};
  if (!plugin.entry || !plugin.entry->window_layout ||
      !plugin.entry->window_layout(formulation.c_str(), &w))
    throw std::runtime_error("model '" + spec.name + "' has no formulation '" + formulation + "'");
  const std::string source = module_source(neutral_header(spec), spec.name, formulation, method, w);
  const Nvrtc& nv = nvrtc();
  const std::string root = header_root();
  std::vector<std::string> opts = {"--gpu-architecture=" + arch,
                                   "-std=c++17",
                                   "-default-device",
                                   "-DNDEBUG",
                                   "--ptxas-options=--verbose",
                                   "-I" + root,
                                   "-I" + (fs::path(root) / "kernels" / "nvrtc").string()};
  std::string key_text = source + '\0' + plugin_identity() + '\0' + nv.version_text;
  for (const auto& o : opts) key_text += '\0' + o;
  const std::string key = hex16(fnv1a(key_text));
  for (const auto& m : loaded_modules())
    if (m.path.find(key) != std::string::npos && !force) return m;

  const fs::path dir = plugin_cache_dir();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw std::runtime_error("cannot create the plugin cache '" + dir.string() +
                             "': " + ec.message());
  const std::string stem =
      (dir / (spec.name + "-gpu-" + formulation + "-" + method + "-" + arch + "-" + key)).string();
  const std::string cubin = stem + ".cubin", record = stem + ".info", src = stem + ".cu";
  FileLock lock(stem + ".lock");
  remove_stale_temporaries(stem);
  GpuModule g;
  g.path = cubin;
  g.model = spec.name;
  g.formulation = formulation;
  g.method = method;
  g.arch = arch;
  const std::string state = check_cached(cubin, record);
  if (state == "ok" && !force) {
    auto rec = read_record(record);
    g.compile_seconds = std::atof(rec["compile_seconds"].c_str());
    g.resources = rec["resources"];
    g.image = read_file(cubin);
    say("model " + spec.name + ": " + formulation + " " + method + " GPU module " + cubin +
        " (cached)");
  } else {
    if (state != "missing" && !force)
      say("model " + spec.name + ": the cached GPU module " + cubin + " " + state +
          "; refused, rebuilding it");
    say("model " + spec.name + ": compiling the " + formulation + " " + method +
        " GPU module for " + arch + " (" + nv.version_text + ") ...");
    write_atomic(src, source);
    std::vector<const char*> argv;
    for (const auto& o : opts) argv.push_back(o.c_str());
    const auto t0 = std::chrono::steady_clock::now();
    Nvrtc::Program prog = nullptr;
    int rc = nv.create(&prog, source.c_str(), (spec.name + ".cu").c_str(), 0, nullptr, nullptr);
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
    rec << "model = " << spec.name << "\nsource = " << spec.source
        << "\nidentity = " << plugin_identity() << "\nabi = " << NHOLO_PLUGIN_ABI_VERSION
        << "\ncompiler = NVRTC " << nv.version_text << "\nformulation = " << formulation
        << "\nmethod = " << method << "\narch = " << arch << "\nbytes = " << image.size()
        << "\nchecksum = " << hex16(fnv1a(image)) << "\ncompile_seconds = " << secs
        << "\nresources = " << g.resources << "\n";
    write_atomic(record, rec.str());  // after the module: a record vouches for a complete file
    g.image = std::move(image);
    g.compiled = true;
    say("model " + spec.name + ": " + formulation + " " + method + " GPU module compiled in " +
        std::string(secs) + " s: " + cubin);
  }
  loaded_modules().push_back(std::move(g));
  return loaded_modules().back();
}

std::vector<CachedPlugin> cached_plugins() {
  std::vector<CachedPlugin> v;
  std::error_code ec;
  const fs::path dir = plugin_cache_dir();
  if (!fs::is_directory(dir, ec)) return v;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string ext = e.path().extension().string();
    if ((ext != ".so" && ext != ".cubin") || e.path().string().find(".tmp.") != std::string::npos)
      continue;
    const std::string so = e.path().string();
    const std::string record = so.substr(0, so.size() - ext.size()) + ".info";
    const auto r = read_record(record);
    CachedPlugin c;
    c.path = so;
    c.model = r.count("model") ? r.at("model") : e.path().stem().string();
    if (ext == ".cubin")
      c.model += " [GPU: " + (r.count("formulation") ? r.at("formulation") : std::string("?")) +
                 " " + (r.count("method") ? r.at("method") : std::string("?")) + " " +
                 (r.count("arch") ? r.at("arch") : std::string("?")) + "]";
    c.source = r.count("source") ? r.at("source") : "";
    c.compile_seconds = r.count("compile_seconds") ? std::atof(r.at("compile_seconds").c_str()) : 0;
    c.state = check_cached(so, record);
    v.push_back(c);
  }
  std::sort(v.begin(), v.end(),
            [](const CachedPlugin& a, const CachedPlugin& b) { return a.path < b.path; });
  return v;
}

}  // namespace nholo
