// nholo/host/model_files/plugin_cache.hpp — what the cache's two builders
// share (host/model_files/plugin.cpp: model plugins; gpu_module.cpp: GPU
// modules, docs/models.md "The plugin cache"): checksums and records of
// cached files, atomic writes, the lock of a cache entry, running the
// compiler under nholo's signal handling, the headers a plugin is compiled
// against, and the model header that does not depend on where the model
// came from. Internal to host/model_files/.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "host/model_language/model_file.hpp"

namespace nholo::plugin_cache {

// FNV-1a 64 of s (continuing from h), and its 16 hex digits
uint64_t fnv1a(const std::string& s, uint64_t h = 1469598103934665603ull);
std::string hex16(uint64_t h);
// The bytes of the file at path (ok: whether it could be opened)
std::string read_file(const std::string& path, bool* ok = nullptr);
// Something other than a file where a cache file goes (a folder, a link to
// one) removed, so that the file can be renamed there
void clear_non_file(const std::string& path);
// Under the lock of entry STEM: every temporary of it left by a killed build
void remove_stale_temporaries(const std::string& stem);
// path written atomically: a temporary next to it, then rename
void write_atomic(const std::string& path, const std::string& text);
// The folder holding nholo's headers (kernels/, models/, host/)
std::string header_root();
// The 16 hex digits of a checksum of every header under header_root()'s
// kernels/, models/ and host/ (their paths and bytes), computed once per
// process: part of the cache keys of plugins and GPU modules, so that a
// plugin compiled against other headers (a checkout edited since, a model
// header changed) is compiled again, not loaded
const std::string& headers_fingerprint();
// An ELF file (a shared library, a cubin)
bool is_elf(const std::string& bytes);
// errno's text when the folder cannot be written (read-only, no
// permission), else ""
std::string not_writable(const std::filesystem::path& dir);
// The cache folder created, and writable: else the error that `what` (the
// plugin of model ...) cannot be built, its `file` (plugin PATH, module PATH)
// being `state` (is missing, ...), and what to do.
void prepare_cache_folder(const std::filesystem::path& dir, const std::string& what,
                          const std::string& file, const std::string& state);
// Runs argv, stdout and stderr to log_path; its exit status. An interrupt
// (interrupt_flag) stops it: SIGTERM to its process group, then Interrupted.
int run_process(const std::vector<std::string>& argv, const std::string& log_path);
// Runs every argvs[k] at once, its stdout and stderr to log_paths[k]; their
// exit statuses. When one fails, the others still running are stopped
// (SIGTERM, waited for; their status -1) and the statuses returned. An
// interrupt (interrupt_flag) stops them all, then Interrupted; so does a
// compiler that cannot be started (its error).
std::vector<int> run_processes(const std::vector<std::vector<std::string>>& argvs,
                               const std::vector<std::string>& log_paths);

// An exclusive flock held for the life of the object. `on_wait` (if given)
// is called once when another process holds the lock, before waiting for it.
class FileLock {
 public:
  explicit FileLock(const std::string& path, const std::function<void()>& on_wait = {});
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

// The record written next to a cached file: its key = value lines
std::map<std::string, std::string> read_record(const std::string& path);
// "ok", or why the cached file (with its record) must not be used
std::string check_cached(const std::string& file, const std::string& record);
// The model header of spec, whatever file or table it was read from
std::string neutral_header(const ModelSpec& spec);
// For a unit of a plugin (or lane add-on) compiled from `units` units of the
// model header `header` of type `model`: the generated functions the header
// writes in parts (`static constexpr int NAME_parts = K;`, the functions
// NAME_part0 ... NAME_part<K-1>, host/model_language/function_body.hpp),
// each part for each scalar type explicitly instantiated in one unit (part k
// in unit k % units) and declared `extern template` in the others, so that
// the units compile each part once and both cores share them. "" when the
// header has no parts. Placed after the header and before the unit's uses.
std::string part_instantiations(const std::string& header, const std::string& model,
                                const std::vector<std::string>& scalars, int unit, int units);

}  // namespace nholo::plugin_cache
