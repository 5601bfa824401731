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
#include "host/config/model_catalog.hpp"
#include "host/config/model_info.hpp"
#include "host/config/tables.hpp"
#include "host/model_files/plugin_cache.hpp"
#include "host/run/interrupt.hpp"
#include "kernels/ensemble.hpp"

extern char** environ;

namespace fs = std::filesystem;

namespace nholo {

using namespace plugin_cache;

namespace {

// Set by CMakeLists.txt: the compiler nholo was built with (the default for
// plugins).
#ifndef NHOLO_PLUGIN_CXX
#define NHOLO_PLUGIN_CXX "c++"
#endif

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> v;
  std::string cur;
  std::istringstream is(s);
  while (std::getline(is, cur, sep))
    if (!cur.empty()) v.push_back(cur);
  return v;
}

// The compiler's command: $NHOLO_CXX split on blanks (a program and its
// leading options, as make's CXX: "ccache g++", "clang++ -m64"; no quoting),
// else the compiler nholo was built with, else (not on this machine) the
// c++ on PATH.
std::vector<std::string> compiler() {
  if (const char* e = std::getenv("NHOLO_CXX"); e && *e) {
    std::vector<std::string> words;
    std::istringstream is(e);
    for (std::string w; is >> w;) words.push_back(w);
    if (!words.empty()) return words;
  }
  std::error_code ec;
  if (!std::filesystem::exists(NHOLO_PLUGIN_CXX, ec)) return {"c++"};
  return {NHOLO_PLUGIN_CXX};
}

std::string joined_words(const std::vector<std::string>& v) {
  std::string r;
  for (const auto& w : v) r += (r.empty() ? "" : " ") + w;
  return r;
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

// dlopen + a lane add-on's checks (interface version, nholo release, its
// model and instruction set); throws naming path and what differs
const nholo_lane_plugin* open_lane_entry(const std::string& path) {
  void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) throw std::runtime_error("cannot load the lane add-on '" + path + "': " + ::dlerror());
  auto fn =
      reinterpret_cast<nholo_lane_plugin_entry_fn>(::dlsym(h, NHOLO_LANE_PLUGIN_ENTRY_SYMBOL));
  const nholo_lane_plugin* e = fn ? fn() : nullptr;
  std::string why;
  if (!e) {
    why = "it has no table (" + std::string(NHOLO_LANE_PLUGIN_ENTRY_SYMBOL) + ")";
  } else if (e->abi_version != NHOLO_PLUGIN_ABI_VERSION) {
    why = "it has plugin interface version " + std::to_string(e->abi_version) +
          ", this nholo version " + std::to_string(NHOLO_PLUGIN_ABI_VERSION);
  } else if (!e->nholo_version || std::string(e->nholo_version) != NHOLO_VERSION) {
    why = "it was compiled against the headers of nholo " +
          std::string(e->nholo_version ? e->nholo_version : "?");
  } else if (!e->model || !e->isa || !e->run || (e->lanes != 8 && e->lanes != 4)) {
    why = "its table is incomplete";
  }
  if (!why.empty()) {
    ::dlclose(h);
    throw std::runtime_error("'" + path + "' cannot be used as a lane add-on: " + why);
  }
  return e;  // the handle stays open for the life of the process
}

std::deque<LanePlugin>& loaded_lanes() {
  static std::deque<LanePlugin> v;
  return v;
}

// The flags of a lane add-on for isa: those of the built-in models' lane
// units (CMakeLists.txt), `nholo` renamed so that no inline function it
// instantiates is shared with baseline code, and SLEEF's headers
#ifndef NHOLO_PLUGIN_SLEEF_INCLUDE_DIR
#define NHOLO_PLUGIN_SLEEF_INCLUDE_DIR ""
#endif
#ifndef NHOLO_PLUGIN_SLEEF_LIBRARY
#define NHOLO_PLUGIN_SLEEF_LIBRARY "-lsleef"
#endif
// SLEEF's header folder and library for a lane add-on: a relocatable
// bundle's own (scripts/bundle.sh: include/sleef/sleef.h beside nholo's
// headers, lib/libsleef.so.3 beside nholo.bin), else those nholo was built
// with (CMakeLists.txt)
struct SleefFiles {
  std::string include_dir, library;
};
SleefFiles sleef_files() {
  const fs::path headers = header_root();
  const fs::path bundle_inc = headers.parent_path() / "sleef";
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  const fs::path bundle_lib = exe.parent_path() / "libsleef.so.3";
  if (!ec && fs::exists(bundle_inc / "sleef.h", ec) && fs::exists(bundle_lib, ec))
    return {bundle_inc.string(), bundle_lib.string()};
  return {NHOLO_PLUGIN_SLEEF_INCLUDE_DIR, NHOLO_PLUGIN_SLEEF_LIBRARY};
}

// Whether the compiler cxx takes GCC's -mmove-max and -mstore-max (GCC 12
// and later; clang does not know them and copies vectors whole anyway):
// asked once per compiler and process by compiling an empty unit.
bool takes_move_max(const std::vector<std::string>& cxx) {
  static std::mutex mu;
  static std::map<std::string, bool> known;
  const std::lock_guard<std::mutex> lock(mu);
  const std::string k = joined_words(cxx);
  if (const auto it = known.find(k); it != known.end()) return it->second;
  std::vector<std::string> argv = cxx;
  argv.insert(argv.end(),
              {"-mmove-max=256", "-mstore-max=256", "-fsyntax-only", "-x", "c++", "/dev/null"});
  bool ok = false;
  try {
    ok = run_process(argv, "/dev/null") == 0;
  } catch (const Interrupted&) {
    throw;
  } catch (const std::exception&) {
    ok = false;  // no such compiler: the add-on's compile says so
  }
  return known[k] = ok;
}

// The flags of the built-in models' lane units (CMakeLists.txt
// nholo_lane_flags): the instruction set, no FMA contraction, sqrt as the
// instruction, and with GCC whole-vector copies (its default copies of 16
// bytes stall the wider loads after them on failed store forwarding)
std::vector<std::string> lane_flags(SimdIsa isa, const std::vector<std::string>& cxx) {
  std::vector<std::string> a = compile_flags();
  a.insert(a.end(), {"-mavx2", "-mfma", "-ffp-contract=off", "-fno-math-errno", "-Wno-psabi"});
  if (isa == SimdIsa::avx512) a.push_back("-mavx512f");
  if (takes_move_max(cxx)) {
    const std::string bits = isa == SimdIsa::avx512 ? "512" : "256";
    a.insert(a.end(), {"-mmove-max=" + bits, "-mstore-max=" + bits});
  }
  a.push_back("-Dnholo=nholo_" + std::string(simd_isa_name(isa)));
  const std::string inc = sleef_files().include_dir;
  if (!inc.empty() && inc != "/usr/include") a.push_back("-isystem" + inc);
  return a;
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

namespace {

// The files of a model's entry in the plugin cache.
struct PluginEntry {
  std::string model, source, stem, so, record;
  std::vector<std::string> srcs;  // the units' sources (unit_source_path)
  std::vector<std::string> link_inputs;  // libraries the link adds (a lane add-on's SLEEF)
  std::string kind;                      // the record's kind: "plugin", "lanes avx512", ...
};

// The number of units a plugin is compiled from (plugin_define.hpp
// kPluginUnits: the entry table, then groups of formulations), each
// compiled by a compiler of its own, in parallel, then linked.
constexpr int kPluginUnits = 3;

// Where unit k of the entry stem is written: stem.cpp for unit 0 (the entry
// table), stem.unitK.cpp for the others; its compiler's log likewise
// (stem.log, stem.unitK.log), the link's stem.link.log.
std::string unit_path(const std::string& stem, int k, const char* ext) {
  return stem + (k == 0 ? "" : ".unit" + std::to_string(k)) + ext;
}

// A model whose generated header is longer than this has its functions
// called out of line by the formulations (plugin_define.hpp
// NHOLO_PLUGIN_OUT_OF_LINE): compiled once per scalar type, the compile
// time grows with the model's size rather than with it times the number of
// right-hand sides; a smaller model keeps them inlined, where they run
// faster. Every model of examples/models and tests/model_files is below it
// (at most 5,000 characters); bench/large_model.py's models are above
// (58,000 and more).
constexpr std::size_t kOutOfLineHeaderBytes = 20000;

// The compiler's log of a failed step: its first 4000 characters
std::string log_excerpt(const std::string& log_path) {
  std::string msg = read_file(log_path);
  if (msg.size() > 4000) msg = msg.substr(0, 4000) + "\n...";
  return msg;
}

// The compiler (cxx_words and flags) run on each unit's source (-c, all at
// once) and then on their objects (the link) into a temporary next to the
// entry; its path, and the seconds it took. A signal stops every compiler
// (Interrupted); a failed unit or link throws with its compiler's log.
std::string compile_to_temporary(const PluginEntry& e, const std::vector<std::string>& cxx_words,
                                 const std::vector<std::string>& flags, double& seconds) {
  const std::string tmp_stem = e.stem + ".tmp." + std::to_string(::getpid());
  const std::string tmp = tmp_stem + ".so";
  std::vector<std::vector<std::string>> compiles;
  std::vector<std::string> logs, objects;
  for (size_t k = 0; k < e.srcs.size(); ++k) {
    objects.push_back(tmp_stem + ".unit" + std::to_string(k) + ".o");
    std::vector<std::string> argv = cxx_words;
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {"-c", "-o", objects.back(), e.srcs[k]});
    compiles.push_back(argv);
    logs.push_back(unit_path(e.stem, static_cast<int>(k), ".log"));
  }
  std::vector<std::string> link = cxx_words;
  link.insert(link.end(), flags.begin(), flags.end());
  link.insert(link.end(), {"-o", tmp});
  link.insert(link.end(), objects.begin(), objects.end());
  link.insert(link.end(), e.link_inputs.begin(), e.link_inputs.end());
  const std::string link_log = e.stem + ".link.log";
  auto remove_temporaries = [&](bool plugin_too) {
    for (const auto& o : objects) std::remove(o.c_str());
    if (plugin_too) std::remove(tmp.c_str());
  };
  auto failed = [&](const std::string& step, int rc, const std::string& log,
                    const std::string& src) {
    remove_temporaries(true);
    if (interrupt_flag().load())  // a compiler stopped by the signal's handling
      throw Interrupted("while compiling the plugin of model '" + e.model + "'");
    throw std::runtime_error("compiling the plugin of model '" + e.model + "' (" + e.source +
                             ") failed (" + step + ", exit " + std::to_string(rc) +
                             "; the model file was accepted, so "
                             "this is a problem of the compiler setup or of nholo: see " +
                             log + ", source " + src + "):\n" + log_excerpt(log));
  };
  const auto t0 = std::chrono::steady_clock::now();
  try {
    const std::vector<int> rc = run_processes(compiles, logs);
    for (size_t k = 0; k < rc.size(); ++k)
      if (rc[k] > 0)
        failed("unit " + std::to_string(k) + " of " + std::to_string(rc.size()), rc[k], logs[k],
               e.srcs[k]);
    const int link_rc = run_process(link, link_log);
    if (link_rc != 0) failed("linking its units", link_rc, link_log, e.srcs[0]);
  } catch (const Interrupted& x) {
    remove_temporaries(true);
    throw Interrupted(std::string(x.what()) + " the plugin of model '" + e.model + "'");
  }
  remove_temporaries(false);
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return tmp;
}

// The compiled temporary checked (an ELF file that check(tmp) loads as the
// model) and renamed to the entry's plugin, then its record written: a
// record vouches only for a complete, loadable file.
void commit_plugin(const PluginEntry& e, const std::string& tmp, const std::string& cxx,
                   double seconds, const std::function<void(const std::string&)>& check) {
  bool ok = false;
  const std::string bytes = read_file(tmp, &ok);
  if (!ok || !is_elf(bytes)) {
    std::remove(tmp.c_str());
    throw std::runtime_error("the compiler '" + cxx + "' exited 0 but wrote " +
                             (!ok             ? "no file (" + tmp + ")"
                              : bytes.empty() ? std::string("an empty file")
                                              : "a file of " + std::to_string(bytes.size()) +
                                                    " bytes that is not an ELF "
                                                    "shared library") +
                             " for the plugin of model '" + e.model + "' (see " + e.stem +
                             ".link.log, sources " + e.stem + "*.cpp" +
                             "); NHOLO_CXX must name a C++17 compiler that writes "
                             "the shared library given by -o; nothing was cached");
  }
  try {
    check(tmp);
  } catch (const std::exception& x) {
    std::remove(tmp.c_str());
    throw std::runtime_error("the plugin of model '" + e.model + "' compiled by '" + cxx +
                             "' cannot be used (" + x.what() + "); nothing was cached");
  }
  clear_non_file(e.so);
  if (std::rename(tmp.c_str(), e.so.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot rename '" + tmp + "' to '" + e.so + "': " + why);
  }
  std::ostringstream rec;
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.2f", seconds);
  // the model file's absolute path: the cache is shared by every folder
  // (`nholo models` names where each plugin came from); it said the path
  // as typed, relative to a folder the record does not name
  std::error_code ec;
  const bool is_file = fs::is_regular_file(e.source, ec);
  const std::string source =
      is_file ? fs::absolute(e.source, ec).lexically_normal().string() : e.source;
  rec << "model = " << e.model << "\nkind = " << e.kind << "\nsource = " << source
      << "\nidentity = " << plugin_identity() << "\nabi = " << NHOLO_PLUGIN_ABI_VERSION
      << "\ncompiler = " << cxx << "\nbytes = " << bytes.size()
      << "\nchecksum = " << hex16(fnv1a(bytes)) << "\ncompile_seconds = " << secs << "\n";
  write_atomic(e.record, rec.str());  // after the plugin: a record vouches for a complete file
}

// The key of a cache entry: this nholo, its headers, the units' sources and
// the compiler's command (16 hex digits).
std::string cache_key(const std::vector<std::string>& units,
                      const std::vector<std::string>& cxx_words,
                      const std::vector<std::string>& flags) {
  std::string key_text = plugin_identity() + '\0' + headers_fingerprint();
  for (const auto& u : units) key_text += '\0' + u;
  for (const auto& w : cxx_words) key_text += '\0' + w;
  for (const auto& f : flags) key_text += '\0' + f;
  return hex16(fnv1a(key_text));
}

// What a cache entry (a plugin, its lane add-on) is compiled from and how
// its file is checked: open_checked loads it and throws when it cannot be used.
struct CacheBuild {
  const PluginEntry& entry;
  const std::string& what;  // "plugin", "SIMD lane add-on (avx512, 8 lanes)": for messages
  const std::vector<std::string>& units;
  const std::vector<std::string>& cxx_words;
  const std::vector<std::string>& flags;
  const std::function<void(const std::string&)>& open_checked;
};
struct CacheBuilt {
  bool compiled = false;  // by this call (else from the cache)
  double compile_seconds = 0;
};

// The cache entry b: the cached file when its record vouches for it and it
// loads, else compiled now (force: always) under the entry's lock, checked
// (an ELF shared library that loads) before it is renamed into place, and its
// record, which vouches for it, written last.
CacheBuilt cached_or_compiled(const CacheBuild& b, bool force,
                              const std::function<void(const std::string&)>& say) {
  const PluginEntry& e = b.entry;
  const std::string cxx = joined_words(b.cxx_words);
  CacheBuilt r;
  // the cached file, when its record vouches for it and it loads; else
  // false, with why in `why` ("" when there is none)
  bool unloadable = false;  // vouched for by its record, but it did not load
  auto use_cached = [&](std::string& why) {
    const std::string state = check_cached(e.so, e.record);
    if (state != "ok") {
      why = state == "missing" ? "" : state;
      return false;
    }
    r.compile_seconds = std::atof(read_record(e.record)["compile_seconds"].c_str());
    say("model " + e.model + ": " + b.what + " " + e.so + " (cached), compiled by " + cxx);
    try {
      b.open_checked(e.so);
    } catch (const std::exception& x) {
      // vouched for by its record but it does not load (another machine's
      // system libraries, a partial copy): rebuilt
      why = std::string("cannot be used (") + x.what() + ")";
      unloadable = true;
      return false;
    }
    return true;
  };
  auto build = [&] {
    say("model " + e.model + ": compiling its " + b.what + " (" + cxx + ", nholo's headers in " +
        header_root() + ") ...");
    PluginEntry written = e;
    for (size_t k = 0; k < b.units.size(); ++k) {
      written.srcs.push_back(unit_path(e.stem, static_cast<int>(k), ".cpp"));
      write_atomic(written.srcs.back(), b.units[k]);
    }
    const std::string tmp = compile_to_temporary(written, b.cxx_words, b.flags, r.compile_seconds);
    commit_plugin(written, tmp, cxx, r.compile_seconds, b.open_checked);
    r.compiled = true;
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.2f", r.compile_seconds);
    say("model " + e.model + ": " + b.what + " compiled in " + std::string(secs) + " s: " + e.so);
  };
  // a valid cached file is used without the lock, so that a read-only cache
  // (a shared installation's) serves the files built in it
  std::string why;
  if (!force && use_cached(why)) return r;
  prepare_cache_folder(fs::path(e.so).parent_path(),
                       "the " + b.what + " of model '" + e.model + "' (" + e.source + ")",
                       b.what + " " + e.so,
                       force         ? "is to be rebuilt (--force)"
                       : why.empty() ? "is missing"
                                     : why);
  // one build of a key at a time, across processes
  FileLock lock(e.stem + ".lock", [&] {
    say("model " + e.model + ": waiting for another nholo that is building its " + b.what +
        " (" + e.stem + ".lock)");
  });
  remove_stale_temporaries(e.stem);
  // another process may have built it while this one waited for the lock
  // (or was between its file and its record when it was looked at)
  if (!force && !unloadable && use_cached(why)) return r;
  if (!why.empty())
    say("model " + e.model + ": the cached " + b.what + " " + e.so + " " + why +
        "; refused, rebuilding it");
  build();
  return r;
}

}  // namespace

ModelSource model_source(const ModelSpec& spec) {
  ModelSource s;
  s.name = spec.name;
  s.origin = spec.source;
  s.header = neutral_header(spec);
  s.type = "nholo::user_models::UserModel";
  s.info = model_info_from_spec(spec);
  return s;
}

ModelSource builtin_model_source(const std::string& name) {
  const ModelInfo* mi = find_model(name);
  if (!mi) throw std::runtime_error("no built-in model is called '" + name + "'");
  ModelSource s;
  s.name = name;
  s.origin = "built-in model";
  s.header = "#include \"models/registry.hpp\"\n";
  s.type = "nholo::models::model_at_t<nholo::models::model_index(\"" + name + "\")>";
  s.info = *mi;
  return s;
}

const Plugin& model_plugin(const ModelSource& source,
                           const std::function<void(const std::string&)>& log, bool force,
                           bool tangent, int exponents) {
  auto say = [&](const std::string& s) {
    if (log) log(s);
  };
  const std::string& name = source.name;
  const std::string what = tangent ? "plugin (with the tangent systems)" : "plugin";
  // unit k of kPluginUnits (plugin_define.hpp NHOLO_PLUGIN_UNIT)
  const bool out_of_line = source.header.size() > kOutOfLineHeaderBytes;
  std::vector<std::string> units;
  for (int k = 0; k < kPluginUnits; ++k)
    units.push_back(
        "// generated by nholo: the plugin of model '" + name + "'" +
        (tangent ? " with its formulations' tangent systems (Lyapunov exponents)" : "") +
        ", unit " + std::to_string(k) + " of " + std::to_string(kPluginUnits) +
        (k == 0 ? " (the entry table)" : " (systems of formulations)") + "\n" +
        (tangent ? "#define NHOLO_PLUGIN_TANGENT 1\n" : "") +
        (tangent && exponents != 1
             ? "#define NHOLO_PLUGIN_TANGENT_EXPONENTS " + std::to_string(exponents) + "\n"
             : std::string()) +
        (out_of_line ? "#define NHOLO_PLUGIN_OUT_OF_LINE 1\n" : "") + "#define NHOLO_PLUGIN_UNIT " +
        std::to_string(k) + "\n" + source.header + "\n" +
        part_instantiations(source.header, source.type, {"double"}, k, kPluginUnits) +
        "#include \"host/model_files/plugin_define.hpp\"\nNHOLO_DEFINE_PLUGIN(" + source.type +
        ")\n");
  const std::vector<std::string> cxx_words = compiler();
  const std::string cxx = joined_words(cxx_words);
  const std::vector<std::string> flags = compile_flags();
  const std::string key = cache_key(units, cxx_words, flags);
  for (const auto& p : loaded())
    if (p.path.find(key) != std::string::npos && !force) return p;

  const fs::path dir = plugin_cache_dir();
  const std::string stem = (dir / (name + (tangent ? "-tangent-" : "-") + key)).string();
  const std::string so = stem + ".so", record = stem + ".info";
  Plugin p;
  p.path = so;
  p.model = name;
  // loads path and checks that it is the model the config was checked against
  PluginEntry entry{name, source.origin, stem, so, record, {}, {}, tangent ? "tangent" : "plugin"};
  auto open_checked = [&](const std::string& path) {
    p.entry = open_entry(path);
    const ModelInfo got = model_info_of_plugin(*p.entry);
    const ModelInfo& want = source.info;
    if (got.name != want.name || got.n != want.n || got.m != want.m ||
        got.params.size() != want.params.size() || got.formulations != want.formulations)
      throw std::runtime_error("the plugin '" + path + "' does not describe model '" + name +
                               "' as its source does (" + source.origin +
                               "); remove it (it is rebuilt)");
  };
  const CacheBuild b{entry, what, units, cxx_words, flags, open_checked};
  const CacheBuilt built = cached_or_compiled(b, force, say);
  p.compiled = built.compiled;
  p.compile_seconds = built.compile_seconds;
  p.runtime = std::make_shared<PluginModelRuntime>(p.entry, so);
  loaded().push_back(p);
  return loaded().back();
}

const LanePlugin* lane_plugin(const ModelSource& source, const Plugin& plugin, SimdIsa isa,
                              const std::function<void(const std::string&)>& log, bool force,
                              bool tangent, int exponents) {
  const auto& forms = source.info.formulations;
  if (isa == SimdIsa::off || std::find(forms.begin(), forms.end(), "udwadia_kalaba") == forms.end())
    return nullptr;
  auto say = [&](const std::string& s) {
    if (log) log(s);
  };
  const std::string& name = source.name;
  const std::string isa_name = simd_isa_name(isa);
  const int lanes = simd_lanes(isa);
  const bool out_of_line = source.header.size() > kOutOfLineHeaderBytes;
  // unit 0: the entry and the kernels of W lanes; unit 1, compiled at the
  // same time: those of one lane (parameters per trajectory) and, when the
  // model's header has parts (a large symbolic M and F), half of them
  const std::vector<std::string> scalars = {"double", "::nholo::Lanes<1>",
                                            "::nholo::Lanes<" + std::to_string(lanes) + ">"};
  const std::string title =
      "// generated by nholo: the SIMD lanes' kernels of model '" + name + "' (Udwadia–Kalaba" +
      (tangent ? ", its tangent system with " + std::to_string(exponents) + " tangent vectors"
               : "") +
      ", " + isa_name + ", " + std::to_string(lanes) + " lanes)";
  const std::string start =
      std::string(tangent
                      ? "#define NHOLO_PLUGIN_TANGENT 1\n#define NHOLO_PLUGIN_TANGENT_EXPONENTS " +
                            std::to_string(exponents) + "\n"
                      : "") +
      (out_of_line ? "#define NHOLO_PLUGIN_OUT_OF_LINE 1\n" : "") + source.header +
      "\n#include \"kernels/lanes.hpp\"\n";
  std::vector<std::string> units = {
      title + "\n" + start + part_instantiations(source.header, source.type, scalars, 0, 2) +
      "#include \"host/model_files/plugin_lanes_define.hpp\"\nNHOLO_DEFINE_LANE_PLUGIN(" +
      source.type + ", " + std::to_string(lanes) + ", \"" + isa_name + "\")\n"};
  units.push_back(title + ", unit 1: one lane\n" + start +
                  part_instantiations(source.header, source.type, scalars, 1, 2) +
                  "#include \"host/model_files/plugin_lanes_define.hpp\"\n"
                  "NHOLO_DEFINE_LANE_PLUGIN_ONE_LANE(" +
                  source.type + ")\n");
  const std::vector<std::string> cxx_words = compiler();
  const std::vector<std::string> flags = lane_flags(isa, cxx_words);
  const std::string key = cache_key(units, cxx_words, flags);
  for (const auto& l : loaded_lanes())
    if (l.path.find(key) != std::string::npos && !force) {
      plugin.runtime->attach_lanes(l.entry);
      return &l;
    }
  // the window the add-on integrates is the plugin's: the same size
  nholo_window_layout layout{};
  if (!plugin.entry->window_layout("udwadia_kalaba", tangent ? 1 : 0, &layout))
    throw std::runtime_error("the plugin " + plugin.path + " of model '" + name +
                             "' has no Udwadia–Kalaba window");
  const fs::path dir = plugin_cache_dir();
  const std::string stem =
      (dir / (name + "-lanes-" + (tangent ? "tangent-" : "") + isa_name + "-" + key)).string();
  LanePlugin l;
  l.path = stem + ".so";
  l.isa = isa_name;
  const PluginEntry entry{name,
                          source.origin,
                          stem,
                          l.path,
                          stem + ".info",
                          {},
                          {sleef_files().library},
                          "lanes " + isa_name + (tangent ? " tangent" : "")};
  const std::string what = "SIMD lane add-on (" + isa_name + ", " + std::to_string(lanes) +
                           " lanes" + (tangent ? ", tangent system" : "") + ")";
  auto open_checked = [&](const std::string& path) {
    l.entry = open_lane_entry(path);
    if (name != l.entry->model || isa_name != l.entry->isa || l.entry->window_bytes != layout.bytes)
      throw std::runtime_error("the lane add-on '" + path + "' is not the " + isa_name +
                               " one of model '" + name + "' with the plugin's window (" +
                               std::to_string(l.entry->window_bytes) + " bytes, the plugin's " +
                               std::to_string(layout.bytes) + ")");
  };
  const CacheBuild b{entry, what, units, cxx_words, flags, open_checked};
  CacheBuilt built;
  try {
    built = cached_or_compiled(b, force, say);
  } catch (const Interrupted&) {
    throw;
  } catch (const std::exception& x) {
    // the lanes are the plugin's speed, not its results: a compiler without
    // the instruction set, SLEEF's header or library missing (a bundle on
    // another machine) leaves the runs one trajectory at a time, said
    say("model " + name + ": the " + what + " could not be built, so its runs integrate one " +
        "trajectory at a time (backend.simd = \"off\" does so without trying): " + x.what());
    return nullptr;
  }
  l.compiled = built.compiled;
  l.compile_seconds = built.compile_seconds;
  plugin.runtime->attach_lanes(l.entry);
  loaded_lanes().push_back(l);
  return &loaded_lanes().back();
}

SimdIsa run_lane_isa(const RunConfig& cfg) {
  const auto& forms = cfg.formulations;
  if (cfg.device == BackendDevice::cuda ||
      std::find(forms.begin(), forms.end(), "udwadia_kalaba") == forms.end())
    return SimdIsa::off;
  try {
    return resolve_simd(cfg.simd);
  } catch (const DeviceUnavailable&) {
    return SimdIsa::off;
  }
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
  p.runtime = std::make_shared<PluginModelRuntime>(p.entry, abs);
  loaded().push_back(p);
  return loaded().back();
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
    if (c.state == "ok") {
      const std::string bytes = read_file(so);
      if (!is_elf(bytes)) {
        c.state = "is not an ELF file (" + std::to_string(bytes.size()) +
                  " bytes): not a compiled " + (ext == ".so" ? "plugin" : "GPU module");
      } else if (ext == ".so") {
        // "loadable" is said of a plugin that loaded
        const std::string kind = r.count("kind") ? r.at("kind") : "plugin";
        const bool lanes = kind.rfind("lanes", 0) == 0;
        if (lanes) c.model += " [SIMD " + kind + "]";
        try {
          if (lanes)
            (void)open_lane_entry(so);
          else
            (void)open_entry(so);
          c.loaded = true;
        } catch (const std::exception& ex) {
          c.state = std::string("does not load (") + ex.what() + ")";
        }
      }
    }
    v.push_back(c);
  }
  std::sort(v.begin(), v.end(),
            [](const CachedPlugin& a, const CachedPlugin& b) { return a.path < b.path; });
  return v;
}

}  // namespace nholo
