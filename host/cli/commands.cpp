// nholo/host/cli/commands.cpp — `nholo run` (one process: a whole ensemble or
// a shard) and `nholo merge`: the model's pipeline and the device chosen, the
// output opened (host/io/output_file.hpp), errors reported.
#include "host/cli/commands.hpp"

#include <unistd.h>

#include <cstdio>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "host/config/model_info.hpp"
#include "host/config/tables.hpp"
#include "host/io/file_names.hpp"
#include "host/io/in_place_file.hpp"
#include "host/io/merge.hpp"
#include "host/io/output_file.hpp"
#include "host/io/output_path.hpp"
#include "host/io/pieces.hpp"
#include "host/analysis/result_file.hpp"
#include "host/model_files/plugin.hpp"
#include "host/run/device_choice.hpp"
#include "host/run/interrupt.hpp"
#include "host/run/model_runtime.hpp"
#include "host/run/runner.hpp"

namespace fs = std::filesystem;

namespace nholo {

std::pair<int64_t, int64_t> shard_range(const std::string& shard, const std::string& range,
                                        int64_t size) {
  const int64_t blocks = (size + kStatBlock - 1) / kStatBlock;
  auto number = [](const std::string& t, const char* what) -> int64_t {
    size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(t, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != t.size() || v < 0)
      throw ConfigError(what, "'" + t + "' is not a non-negative integer");
    return v;
  };
  if (!shard.empty() && !range.empty())
    throw ConfigError("--shard", "--shard and --range exclude each other");
  if (!shard.empty()) {
    const size_t slash = shard.find('/');
    if (slash == std::string::npos)
      throw ConfigError("--shard", "'" + shard + "' is not r/R (e.g. 3/8: the fourth of 8 shards)");
    const int64_t r = number(shard.substr(0, slash), "--shard");
    const int64_t R = number(shard.substr(slash + 1), "--shard");
    if (R < 1 || r >= R)
      throw ConfigError("--shard", "'" + shard + "': need 0 <= r < R (r counts from 0)");
    if (R > blocks)
      throw ConfigError("--shard", std::to_string(R) + " shards of " + std::to_string(size) +
                                       " trajectories: at most " + std::to_string(blocks) +
                                       " (one block of 1024 each)");
    const int64_t b0 = r * blocks / R, b1 = (r + 1) * blocks / R;
    return {b0 * kStatBlock, std::min(size, b1 * kStatBlock)};
  }
  if (!range.empty()) {
    const size_t colon = range.find(':');
    if (colon == std::string::npos)
      throw ConfigError("--range", "'" + range + "' is not BEGIN:END (trajectories)");
    const int64_t b = number(range.substr(0, colon), "--range");
    const int64_t e = number(range.substr(colon + 1), "--range");
    if (b >= e || e > size)
      throw ConfigError("--range", "'" + range + "': need 0 <= BEGIN < END <= " + std::to_string(size));
    if (b % kStatBlock != 0 || (e % kStatBlock != 0 && e != size))
      throw ConfigError("--range", "'" + range + "': BEGIN and END must be multiples of 1024 (END "
                                   "may be the ensemble size " + std::to_string(size) +
                                   "), so that the statistics merge exactly");
    return {b, e};
  }
  return {0, size};
}

std::string shard_path(const std::string& path, int64_t begin, int64_t end) {
  return shard_file_path(path, begin, end);
}

// The plugin a run compiles (or finds in the cache) for its model: a model
// file's, and a built-in model's when the run needs its tangent systems
// ([lyapunov]: compiled on demand, not into nholo), each with its lane add-on
// when the run's ensembles integrate in SIMD lanes (run_lane_isa; with
// [lyapunov] the tangent system's); null for a built-in model without
// [lyapunov] and for a plugin file.
const Plugin* run_plugin(const RunConfig& cfg, bool quiet) {
  auto log = [&](const std::string& line) {
    if (!quiet) std::fprintf(stderr, "nholo: %s\n", line.c_str());
  };
  const int k = cfg.lyapunov_exponents;
  if (cfg.model_spec) {
    const ModelSource source = model_source(*cfg.model_spec);
    const Plugin& p = model_plugin(source, log, false, cfg.lyapunov, k);
    // the SIMD lanes' kernels, compiled when the run integrates in lanes
    lane_plugin(source, p, run_lane_isa(cfg), log, false, cfg.lyapunov, k);
    return &p;
  }
  if (cfg.lyapunov && cfg.model_plugin.empty()) {
    const ModelSource source = builtin_model_source(cfg.model);
    const Plugin& p = model_plugin(source, log, false, true, k);
    lane_plugin(source, p, run_lane_isa(cfg), log, false, true, k);
    return &p;
  }
  return nullptr;
}

// A model's plugin on a GPU: the kernel of every formulation of the run,
// compiled by NVRTC for this GPU (or found in the cache), registered on the
// device, whose ensembles then launch it (host/model_files/plugin.hpp, GPU
// modules).
void add_gpu_modules(const RunConfig& cfg, Device& dev, bool quiet) {
  if (dev.info().backend != Backend::cuda) return;
  const Plugin* p = run_plugin(cfg, quiet);
  if (!p) return;
  auto log = [&](const std::string& line) {
    if (!quiet) std::fprintf(stderr, "nholo: %s\n", line.c_str());
  };
  const ModelSource source =
      cfg.model_spec ? model_source(*cfg.model_spec) : builtin_model_source(cfg.model);
  const std::string arch = gpu_arch_of(dev.info().compute_capability);
  const char* method = tables::method_name(cfg.integrator.method);
  const GpuModuleKind kind{!cfg.events.empty(), cfg.lyapunov, cfg.lyapunov_exponents};
  for (const auto& f : cfg.formulations) {
    const GpuModule& g = gpu_module(source, *p, f, method, arch, log, false, kind);
    try {
      dev.add_module(f, g.image);
    } catch (const ModuleLoadError& e) {
      // a module compiled just now that the device refuses is nholo's error;
      // a cached one is rebuilt once (the cache recovers, like a plugin's)
      if (g.compiled) throw;
      if (!quiet)
        std::fprintf(stderr,
                     "nholo: model %s: the cached GPU module %s cannot be used (%s); refused, "
                     "rebuilding it\n",
                     source.name.c_str(), g.path.c_str(), e.what());
      dev.add_module(f, gpu_module(source, *p, f, method, arch, log, true, kind).image);
    }
  }
}

// What the run pipeline needs of cfg's model: built in, or a plugin's (a
// model file's or a built-in model's with its tangent systems, compiled now
// unless cached, or a plugin file).
const ModelRuntime& model_runtime(const RunConfig& cfg, bool quiet) {
  if (const Plugin* p = run_plugin(cfg, quiet)) return *p->runtime;
  if (!cfg.model_plugin.empty()) return *load_plugin_file(cfg.model_plugin).runtime;
  const ModelRuntime* r = builtin_model_runtime(cfg.model);
  if (!r) throw ConfigError("model", "unknown model '" + cfg.model + "'");
  return *r;
}

void prepare_model(const RunConfig& cfg, bool quiet) { (void)model_runtime(cfg, quiet); }

namespace {

// A failed run's message, the system's reason first (HDF5 buries it in its
// error stack).
std::string output_error(const std::exception& e) {
  std::string what = e.what();
  const std::string tag = "error message = '";
  if (const size_t at = what.find(tag); at != std::string::npos) {
    const size_t end = what.find('\'', at + tag.size());
    what = "cannot write the output (" + what.substr(at + tag.size(), end - at - tag.size()) +
           "): " + what;
  }
  return what;
}

}  // namespace

RunSummary run_command(const RunConfig& cfg_in, const CommandOptions& opts) {
  const auto [range_begin, range_end] = shard_range(opts.shard, opts.range, cfg_in.size);
  const bool sharded = !opts.shard.empty() || !opts.range.empty();
  RunConfig cfg = cfg_in;
  if (sharded) cfg.output_path = shard_path(cfg_in.output_path, range_begin, range_end);
  // a model file's plugin is compiled (or found in the cache) before anything is written
  const ModelRuntime& model = model_runtime(cfg, opts.quiet);
  OutputFile::Request request;
  request.resume = opts.resume;
  request.overwrite = opts.overwrite;
  if (!opts.quiet)
    request.note = [](const std::string& line) {
      std::fprintf(stderr, "nholo: %s\n", line.c_str());
    };
  OutputFile output(cfg, std::move(request));
  const std::string& path = output.path();
  RunSummary sum;
  sum.trajectories = range_end - range_begin;
  if (output.complete()) {
    sum.already_complete = true;
    sum.completed = range_end - range_begin;
    return sum;
  }
  std::string note;
  const std::unique_ptr<Device> dev = open_run_device(cfg, check_gpu_module_compiler, &note);
  const DeviceInfo& di = dev->info();
  if (!opts.quiet) {
    std::fprintf(stderr, "nholo: backend %s%s\n", describe_device(di).c_str(),
                 note.empty() ? "" : (" (" + note + ")").c_str());
    if (const std::string n = config_notes(cfg); !n.empty())
      std::fprintf(stderr, "nholo: note: %s\n", n.c_str());
    const std::string& partial = output.partial();
    if (opts.resume)
      std::fprintf(stderr, "nholo: %s\n",
                   output.resuming()
                       ? ("resuming " + partial).c_str()
                       : ("nothing to resume (no " + partial + "): starting the run").c_str());
  }
  // a model file's GPU kernels, before anything is removed or written
  add_gpu_modules(cfg, *dev, opts.quiet);
  output.begin_writing();
  // a signal received before (an MPI rank between parcels) still stops it; else a fresh flag
  interrupt_flag().store(interrupt_signal() != 0);
  RunOptions ro;
  ro.quiet = opts.quiet;
  ro.tty = isatty(STDERR_FILENO);
  ro.path = path;
  ro.resume = output.resuming();
  ro.slice_size = output.slice_size();
  ro.shard = sharded;
  ro.range_begin = range_begin;
  ro.range_end = range_end;
  ro.progress = opts.progress;
  ro.memory = opts.memory;
  if (sharded && !opts.quiet)
    std::fprintf(stderr, "nholo: shard: trajectories [%lld, %lld) of %lld, written to %s\n",
                 static_cast<long long>(range_begin), static_cast<long long>(range_end),
                 static_cast<long long>(cfg.size), path.c_str());
  try {
    sum = run_model(model, cfg, ro, *dev);
  } catch (const ConfigError&) {
    output.abandon();  // a run that cannot go on with this config
    throw;
  } catch (const Interrupted& e) {
    // a signal while the output was set up
    throw Interrupted(output.keep_stopped(e.what()));
  } catch (const std::exception& e) {
    // an I/O error (a full disk) or another failure
    throw std::runtime_error(output.keep_failed(output_error(e)));
  }
  if (!sum.interrupted) output.commit();  // every slice finished: PATH is the result
  return sum;
}

RunSummary merge_command(const std::string& out, const std::vector<std::string>& shard_files,
                         bool copy, bool overwrite, bool quiet) {
  if (shard_files.empty()) throw ConfigError("merge", "no shard files given");
  struct Info {
    ShardSource s;
    std::string hash, version, config;
    int64_t size = 0;
  };
  std::vector<Info> infos;
  for (const auto& p : shard_files) {
    h5::File f = open_result(p);
    const h5::Group r = f.root();
    Info in;
    in.s.path = p;
    if (!r.has_attr("config_hash") || !r.has_attr("config"))
      throw ConfigError("merge", "'" + p + "' was not written by this version of nholo (no config_hash)");
    if (r.attr_int64("complete") != 1)
      throw ConfigError("merge", "'" + p + "' is not complete (finish it with `nholo run CONFIG "
                                  "--shard ... --resume`)");
    in.hash = r.attr_string("config_hash");
    in.version = r.attr_string("nholo_version") + " (" + r.attr_string("git_revision") + ")";
    in.config = r.attr_string("config");
    in.size = r.attr_int64("ensemble_size");
    in.s.begin = r.has_attr("shard_begin") ? r.attr_int64("shard_begin") : 0;
    in.s.end = r.has_attr("shard_end") ? r.attr_int64("shard_end") : in.size;
    if (in.s.begin < 0 || in.s.end > in.size || in.s.begin >= in.s.end || in.s.begin % kStatBlock)
      throw ConfigError("merge", "'" + p + "' holds a range that is not a shard of its ensemble");
    const auto forms = r.attr_strings("formulations");
    if (forms.empty() ||
        r.open_dataset(forms[0] + "/status").dims() !=
            std::vector<hsize_t>{static_cast<hsize_t>(in.s.end - in.s.begin)})
      throw ConfigError("merge", "'" + p + "' is not an nholo result file (status does not match its range)");
    if (!r.exists("statistics/" + forms[0] + "/block_moments_q"))
      throw ConfigError("merge", "'" + p + "' is not a shard file: it has no block moments (a "
                                 "whole run's result; nholo merge combines the files of nholo "
                                 "run --shard or --range)");
    infos.push_back(in);
  }
  for (const auto& in : infos) {
    if (in.hash != infos[0].hash || in.size != infos[0].size)
      throw ConfigError("merge", "'" + in.s.path + "' (config hash " + in.hash + ") and '" +
                                     infos[0].s.path + "' (config hash " + infos[0].hash +
                                     ") are results of different configurations");
    if (in.version != infos[0].version)
      throw ConfigError("merge", "'" + in.s.path + "' was written by nholo " + in.version + ", '" +
                                     infos[0].s.path + "' by " + infos[0].version);
  }
  std::sort(infos.begin(), infos.end(), [](const Info& a, const Info& b) {
    return a.s.begin != b.s.begin ? a.s.begin < b.s.begin : a.s.end < b.s.end;
  });
  // coverage: every trajectory exactly once
  const int64_t size = infos[0].size;
  auto blocks = [](int64_t b, int64_t e) {
    return "trajectories [" + std::to_string(b) + ", " + std::to_string(e) + ") (blocks " +
           std::to_string(b / kStatBlock) + " to " + std::to_string((e + kStatBlock - 1) / kStatBlock - 1) +
           ")";
  };
  std::vector<std::string> problems;
  int64_t at = 0;
  for (const auto& in : infos) {
    if (in.s.begin > at) problems.push_back("missing " + blocks(at, in.s.begin));
    if (in.s.begin < at)
      problems.push_back("duplicated " + blocks(in.s.begin, std::min(at, in.s.end)) + " (again in '" +
                         in.s.path + "')");
    at = std::max(at, in.s.end);
  }
  if (at < size) problems.push_back("missing " + blocks(at, size));
  if (!problems.empty())
    throw ConfigError("merge", "the shards do not cover the ensemble of " + std::to_string(size) +
                                   " trajectories exactly once: " + join(problems, "; "));
  // the merged file: paths of the shards as it refers to them
  check_output_folder(out);
  for (const auto& in : infos)
    if (fs::exists(out) && fs::equivalent(out, in.s.path))
      throw ConfigError("merge", "'" + out + "' is one of the shards; choose another output file");
  const OutputLock lock(out);
  if (fs::exists(out) && !overwrite)
    throw ConfigError("merge", "'" + out + "' exists; pass --overwrite to replace it");
  const fs::path out_dir = fs::absolute(out).parent_path();
  std::vector<ShardSource> shards;
  for (auto& in : infos) {
    const fs::path abs = fs::absolute(in.s.path);
    in.s.vds_file = abs.parent_path() == out_dir ? abs.filename().string() : abs.string();
    shards.push_back(in.s);
  }
  const RunConfig cfg = parse_config(infos[0].config, {}, infos[0].s.path);
  (void)quiet;  // nothing is compiled or integrated: nothing to report on the way
  try {
    // SIGINT/SIGTERM/SIGHUP stop a --copy merge within a tile of its copy
    return merge_shards(cfg, shards, out, copy, &interrupt_flag());
  } catch (const h5::Stopped&) {
    throw Interrupted("while merging into '" + out + "'");
  }
}

}  // namespace nholo
