// nholo/host/model_files/plugin_cache.cpp — what the cache's builders share
// (host/model_files/plugin_cache.hpp).
#include "host/model_files/plugin_cache.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "host/model_files/plugin.hpp"
#include "host/run/interrupt.hpp"

extern char** environ;

namespace fs = std::filesystem;

// Set by CMakeLists.txt: the source tree nholo was built from (its headers,
// when not run from an install tree).
#ifndef NHOLO_PLUGIN_SOURCE_DIR
#define NHOLO_PLUGIN_SOURCE_DIR ""
#endif

namespace nholo::plugin_cache {

uint64_t fnv1a(const std::string& s, uint64_t h) {
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

std::string read_file(const std::string& path, bool* ok) {
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

const std::string& headers_fingerprint() {
  static const std::string fingerprint = [] {
    const fs::path root = header_root();
    std::vector<std::string> files;
    for (const char* room : {"kernels", "models", "host"}) {
      std::error_code ec;
      if (!fs::is_directory(root / room, ec)) continue;
      for (fs::recursive_directory_iterator it(root / room, ec), end; !ec && it != end;
           it.increment(ec)) {
        const std::string ext = it->path().extension().string();
        if ((ext == ".hpp" || ext == ".h" || ext == ".cuh") && it->is_regular_file(ec))
          files.push_back(fs::relative(it->path(), root, ec).generic_string());
      }
    }
    std::sort(files.begin(), files.end());  // the walk's order is the file system's
    uint64_t h = fnv1a("nholo headers");
    for (const auto& f : files) {
      h = fnv1a(f + '\0', h);
      h = fnv1a(read_file((root / f).string()) + '\0', h);
    }
    return hex16(h);
  }();
  return fingerprint;
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

// "ELF" files: a shared library, a cubin
bool is_elf(const std::string& bytes) {
  return bytes.size() >= 4 && bytes[0] == '\x7f' && bytes.compare(1, 3, "ELF") == 0;
}

// errno's text when the folder dir cannot be written (read-only file
// system, no permission), else ""
std::string not_writable(const fs::path& dir) {
  if (::access(dir.c_str(), W_OK) == 0) return "";
  if (errno == EACCES || errno == EROFS || errno == EPERM) return std::strerror(errno);
  return "";
}

namespace {

// argv started with its stdout and stderr to log_path, in a process group
// of its own (stop_all stops the compiler driver and the programs it runs,
// cc1plus, as, together); its process id
pid_t spawn_logged(const std::vector<std::string>& argv, const std::string& log_path) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<char*> args;
  for (const auto& s : argv) args.push_back(const_cast<char*>(s.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &fa, &attr, args.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    const char* env = std::getenv("NHOLO_CXX");
    throw std::runtime_error(
        "cannot start the compiler '" + argv[0] + "'" +
        (env && *env ? " (NHOLO_CXX = \"" + std::string(env) + "\")" : std::string()) + ": " +
        std::strerror(rc) +
        " (set NHOLO_CXX to a C++17 compiler, optionally followed by its options, e.g. "
        "\"clang++ -m64\")");
  }
  return pid;
}

int exit_status(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status)
                           : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

// every process of running (pid -> index) stopped with its group (SIGTERM)
// and waited for
void stop_all(std::map<pid_t, size_t>& running) {
  for (const auto& r : running) ::kill(-r.first, SIGTERM);
  for (const auto& r : running) {
    int status = 0;
    while (::waitpid(r.first, &status, 0) < 0 && errno == EINTR) {
    }
  }
  running.clear();
}

}  // namespace

std::vector<int> run_processes(const std::vector<std::vector<std::string>>& argvs,
                               const std::vector<std::string>& log_paths) {
  std::vector<int> codes(argvs.size(), 0);
  std::map<pid_t, size_t> running;
  try {
    for (size_t k = 0; k < argvs.size(); ++k) running[spawn_logged(argvs[k], log_paths[k])] = k;
  } catch (...) {
    stop_all(running);
    throw;
  }
  // polled, so that an interrupt (SIGINT, SIGTERM, SIGHUP of `nholo run`;
  // a Ctrl-C reaches nholo alone, the compilers being in groups of their
  // own) stops the compilers within a fraction of a second
  while (!running.empty()) {
    for (auto it = running.begin(); it != running.end();) {
      int status = 0;
      const pid_t r = ::waitpid(it->first, &status, WNOHANG);
      if (r < 0 && errno != EINTR) {
        const std::string why = std::strerror(errno);
        stop_all(running);
        throw std::runtime_error("waiting for the compiler: " + why);
      }
      if (r == it->first) {
        const int code = exit_status(status);
        codes[it->second] = code;
        it = running.erase(it);
        if (code != 0) {
          // one failure fails the whole: the others are stopped, and say -1
          for (const auto& o : running) codes[o.second] = -1;
          stop_all(running);
          return codes;
        }
      } else {
        ++it;
      }
    }
    if (interrupt_flag().load()) {
      stop_all(running);
      throw Interrupted("while compiling (the compiler was stopped)");
    }
    if (!running.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return codes;
}

int run_process(const std::vector<std::string>& argv, const std::string& log_path) {
  return run_processes({argv}, {log_path})[0];
}

// the lock file at path, created if need be; the flock polled, so that an
// interrupt ends the wait for another process's build
FileLock::FileLock(const std::string& path, const std::function<void()>& on_wait) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error("cannot create '" + path + "': " + std::strerror(errno));
  bool said = false;
  while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) {
      const std::string why = std::strerror(errno);
      ::close(fd_);
      throw std::runtime_error("cannot lock '" + path + "': " + why);
    }
    if (!said && on_wait) on_wait();
    said = true;
    if (interrupt_flag().load()) {
      ::close(fd_);
      throw Interrupted("while waiting for another nholo building the same cache entry (" + path +
                        ")");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

FileLock::~FileLock() { ::close(fd_); }

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

// The model header of spec, independent of the file it came from: the
// same model read from its model file, from the [model] table a result file
// stores (nholo merge, an MPI run's merge) or from another folder is one
// plugin and one set of GPU modules, compiled once. It is the start of a
// compile unit, not a header: without the header's #pragma once (every
// plugin's compile warned "#pragma once in main file").
std::string neutral_header(const ModelSpec& spec) {
  ModelSpec neutral = spec;
  neutral.source = "the [model] table of model '" + spec.name + "'";
  std::string text = generate_model_header(neutral);
  const std::string guard = "#pragma once\n";
  if (const size_t at = text.find(guard); at != std::string::npos) text.erase(at, guard.size());
  return text;
}

std::string part_instantiations(const std::string& header, const std::string& model,
                                const std::vector<std::string>& scalars, int unit, int units) {
  static const std::string decl = "  static constexpr int ";
  static const std::string tail = "_parts = ";
  std::string text;
  for (size_t at = header.find(decl); at != std::string::npos; at = header.find(decl, at + 1)) {
    const size_t name_at = at + decl.size(), tail_at = header.find(tail, name_at),
                 line_end = header.find('\n', name_at);
    if (tail_at == std::string::npos || tail_at > line_end) continue;
    const std::string name = header.substr(name_at, tail_at - name_at);
    const int parts = std::stoi(header.substr(tail_at + tail.size()));
    for (const std::string& S : scalars) {
      const std::string v = "const nholo::Vec<" + S + ", " + model + "::n>&";
      const std::string args = "(const " + model + "::Params&, " + v + ", " + v + ", const " + S +
                               "&, nholo::Mat<" + S + ", " + model + "::n, " + model +
                               "::n>&, nholo::Vec<" + S + ", " + model + "::n>&, " + S +
                               "*, double*);\n";
      for (int k = 0; k < parts; ++k)
        text += std::string(k % units == unit ? "template" : "extern template") + " void " + model +
                "::" + name + "_part" + std::to_string(k) + "<" + S + ">" + args;
    }
  }
  if (text.empty()) return text;
  return "// the parts of the model's largest functions: part k compiled in unit k % " +
         std::to_string(units) + "\n" + text;
}

void prepare_cache_folder(const fs::path& dir, const std::string& what, const std::string& file,
                          const std::string& state) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw std::runtime_error("cannot create the plugin cache '" + dir.string() + "': " +
                             ec.message() + " (set NHOLO_CACHE_DIR to a writable folder)");
  if (const std::string ro = not_writable(dir); !ro.empty())
    throw std::runtime_error("cannot build " + what + ": the plugin cache '" + dir.string() +
                             "' is not writable (" + ro + "), and its " + file + " " + state +
                             "; set NHOLO_CACHE_DIR to a writable folder (a read-only cache "
                             "serves only what was already built in it)");
}

}  // namespace nholo::plugin_cache
