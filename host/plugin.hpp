// nholo/host/plugin.hpp — model plugins: a model file compiled on demand into
// a shared library, cached, and loaded behind the versioned entry table of
// host/plugin_abi.hpp (docs/models.md, "The plugin cache").
//
//   const Plugin& p = model_plugin(spec, log);   // cached, else compiled now
//   p.entry->run(cfg, ro, dev);                  // run_model<TheModel>
//   const Plugin& q = load_plugin_file(path);    // a plugin built by nholo_add_model
//
// The cache folder is $NHOLO_CACHE_DIR, else $XDG_CACHE_HOME/nholo, else
// ~/.cache/nholo. A plugin is keyed by a hash of the generated source, nholo's
// identity (release, revision, compiler) and the compile command, so a plugin
// of another model text, nholo or compiler is never found, and a new one is
// built. Each plugin file has a record (.json) with its size and checksum,
// written after it; a plugin whose bytes do not match its record (damaged,
// replaced) is refused and rebuilt. Builds of one key are serialized with a
// lock file, and every file appears by an atomic rename: two processes
// building one model at once both end with the same, complete plugin.
//
// The compiler is $NHOLO_CXX, else the one nholo was built with; extra flags
// $NHOLO_PLUGIN_CXXFLAGS (part of the key).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "host/model_file.hpp"
#include "host/plugin_abi.hpp"

namespace nholo {

struct Plugin {
  std::string path;           // the shared library
  std::string model;          // the model it runs
  bool compiled = false;      // compiled by this call (else from the cache)
  double compile_seconds = 0;
  const nholo_plugin_v1* entry = nullptr;
};

std::string plugin_cache_dir();

// The identity a plugin must carry to be loaded by this nholo.
std::string plugin_identity();

// The plugin of a model file's spec: loaded from the cache or compiled (log:
// one line per step, e.g. "compiling model sleigh ... 14.2 s"; may be empty).
// force: compile even when a valid plugin is cached. Throws
// std::runtime_error naming the file and the reason on any failure.
const Plugin& model_plugin(const ModelSpec& spec, const std::function<void(const std::string&)>& log,
                           bool force = false);

// A plugin file built outside the cache (CMake's nholo_add_model): loaded
// once its abi_version and identity are this nholo's. Throws naming the file.
const Plugin& load_plugin_file(const std::string& path);

// The plugins in the cache folder, for `nholo models`: model, path and
// "ok" or why it would not be loaded.
struct CachedPlugin {
  std::string model, path, source, state;
  double compile_seconds = 0;
};
std::vector<CachedPlugin> cached_plugins();

}  // namespace nholo
