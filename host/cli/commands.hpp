// nholo/host/cli/commands.hpp — the commands behind the CLI (host/cli/main.cpp), callable
// from tests. Errors a user can fix throw ConfigError / std::runtime_error with
// a message naming what is wrong and what is accepted.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "host/analysis/result_file.hpp"
#include "host/config/config.hpp"
#include "host/io/root_attributes.hpp"
#include "host/run/interrupt.hpp"
#include "host/run/runner.hpp"

namespace nholo {

struct CommandOptions {
  bool overwrite = false;
  bool quiet = false;
  bool resume = false;  // continue PATH.partial (same config hash) from its first unfinished slice
  // A shard of the ensemble: "r/R" (the R-th part r, 0-based, of the blocks of
  // 1024 trajectories) or "BEGIN:END" (trajectories, block-aligned); empty:
  // the whole ensemble. A shard writes shard_path(output.path, begin, end).
  std::string shard, range;
  // where `nholo run`'s progress is also counted (host/run/progress.hpp), for
  // a caller in another thread (the Python module's progress bar)
  ProgressCounter* progress = nullptr;
  // where the per-save fields go instead of the result file (the Python
  // module, host/io/field_memory.hpp); nullptr: the file. Not with resume or
  // a shard.
  FieldMemory* memory = nullptr;
};

// Trajectories [begin, end) of an ensemble of `size` for --shard r/R or
// --range B:E; throws ConfigError naming what is wrong and accepted.
std::pair<int64_t, int64_t> shard_range(const std::string& shard, const std::string& range,
                                        int64_t size);
// "out.h5" -> "out.shard-1024-2048.h5"
std::string shard_path(const std::string& path, int64_t begin, int64_t end);

// `nholo merge OUT SHARD...`: checks the shards are complete results of one
// configuration that cover the ensemble exactly once (else names the missing
// or duplicated trajectory and block ranges), then writes OUT: virtual
// datasets over the shards (copy: real datasets), the statistics merged in
// block order (bitwise those of a single run).
RunSummary merge_command(const std::string& out, const std::vector<std::string>& shards, bool copy,
                         bool overwrite, bool quiet);

// `nholo run`: validates everything (the backend included), writes the
// master PATH.partial and its pieces PATH.partial.d/ (host/io/pieces.hpp), and
// assembles PATH when every slice is finished. Refuses to overwrite PATH (or
// a leftover PATH.partial) without `overwrite`; with `resume`, continues
// PATH.partial. On SIGINT/SIGTERM/SIGHUP: stops at the next safe point,
// leaves PATH.partial as a valid file (root attribute complete = 0, finished
// trajectories' status set, the rest not_run) and returns the summary with
// interrupted = true. After SIGKILL or power loss PATH.partial is valid too
// (without the statistics, which `nholo stats` then merges itself).
RunSummary run_command(const RunConfig& cfg, const CommandOptions& opts);

// The run pipeline of cfg's model made ready: a model file's plugin compiled
// (or found in the cache), a plugin file loaded; throws naming what is wrong.
void prepare_model(const RunConfig& cfg, bool quiet);

// `nholo check`: validates the config and the output path, writes nothing;
// returns a human-readable description of the run.
std::string check_command(const RunConfig& cfg, const CommandOptions& opts);

// `nholo model check FILE` (build = false): the model file checked and
// described; `nholo model build FILE [--force]`: also its plugin compiled
// (or found in the cache), with the compile time.
// `nholo model build FILE --gpu-arch sm_90,...`: the GPU modules too (NVRTC),
// for these formulations (empty: all of the model's) and method.
struct GpuBuildOptions {
  std::vector<std::string> archs, formulations;
  std::string method = "dopri5";
  bool events = false;  // the modules with the events' hook (a run with [[events]])
  // the plugin with the tangent systems and their modules (a run with [lyapunov])
  bool tangent = false;
  int exponents = 1;  // its tangent vectors ([lyapunov] exponents)
};
std::string model_file_command(const std::string& path, bool build, bool force,
                               const GpuBuildOptions& gpu = {});

// `nholo models [NAME] [--json]`: the built-in models, then the plugins in the
// cache (text output)
std::string models_command(const std::string& name, bool json);

// `nholo stats FILE`, `nholo compare FILE [--formulations a,b]`
// (host/analysis/stats.hpp, compare.hpp; per-trajectory values read `block`
// at a time, kReadBlock in host/analysis/result_file.hpp)
std::string stats_command(const std::string& path, int64_t block = kReadBlock);
// The lines of stats_command's report on the per-trajectory results only
// some runs have ([lyapunov]'s exponents, the Euler–Poisson residual), for
// the end of a run's log (host/analysis/stats.hpp optional_result_lines).
std::vector<std::string> optional_result_lines(const std::string& path);
std::string compare_command(const std::string& path, const std::vector<std::string>& formulations,
                            int64_t block = kReadBlock);

// `nholo devices`: the backends built in and the CUDA devices visible.
std::string devices_command();
// `nholo diff A B [--rtol R]`: compares two result files of the same config
// (e.g. one run on the GPU, one on OpenMP): every time series, statistics and
// status; true when all agree to rtol relative to each dataset's largest value.
// Datasets are compared `block` values at a time.
bool diff_command(const std::string& a, const std::string& b, double rtol, std::string& report,
                  int64_t block = kReadBlock);

// install_interrupt_handler, interrupt_signal: host/run/interrupt.hpp;
// nholo_version, nholo_git_revision: host/io/root_attributes.hpp;
// open_run_device, describe_device: host/run/device_choice.hpp;
// check_output_folder, OutputLock: host/io/output_path.hpp; the output of
// run_command from its opening to its end: host/io/output_file.hpp

}  // namespace nholo
