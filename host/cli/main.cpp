// nholo/host/cli/main.cpp — nholo's command line: run | check | models | model |
// stats | compare | merge | devices | diff. The CLI11 app (one function per
// subcommand, added in the order of the help text), then the dispatch to the
// commands (host/cli/commands.hpp) with their output, messages and exit status.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

#include "host/cli/commands.hpp"
#include "host/cli/mpi_run.hpp"
#include "host/cli/parcel_queue.hpp"
#include "host/config/model_catalog.hpp"
#include "host/config/tables.hpp"
#include "host/io/file_names.hpp"
#include "host/io/h5_library_faults.hpp"
#include "host/io/output_path.hpp"
#include "host/io/root_attributes.hpp"
#include "host/model_files/plugin.hpp"
#include "host/model_language/model_file.hpp"
#include "host/run/interrupt.hpp"
#include "host/run/work_plan.hpp"

namespace {

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> v;
  std::string cur;
  for (char c : s) {
    if (c == ',') {
      if (!cur.empty()) v.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) v.push_back(cur);
  return v;
}

// What the command line sets: the variables the subcommands' options are
// bound to (some shared: run and merge both have --overwrite and --quiet;
// stats, compare and diff their first file).
struct Args {
  std::string config_path, file_path, model_name, formulations;
  std::vector<std::string> overrides;
  bool overwrite = false, quiet = false, json = false, resume = false;
  std::string backend;
  int threads = -1, gpu = -1;
  std::string shard, range;          // run
  nholo::mpi::Options mpi_opts;      // run under mpirun
  std::string model_file;            // model build|check
  bool force = false;                // model build
  nholo::GpuBuildOptions gpu_build;  // model build
  std::string merge_out;             // merge
  std::vector<std::string> merge_shards;
  bool merge_copy = false;
  std::string file_b;  // diff
  double rtol = 1e-10;
};

// The subcommands of the app (each tells whether it was given).
struct Subcommands {
  CLI::App *run, *check, *models, *model, *model_build, *stats, *compare, *merge, *devices, *diff;
};

// A whole number of at least `least`; the message says what is accepted
// (CLI11's own range check prints its bounds as 300-digit numbers).
CLI::Validator whole_number(long long least, const char* accepted) {
  return CLI::Validator(
      [least, accepted](std::string& v) -> std::string {
        size_t used = 0;
        long long x = 0;
        try {
          x = std::stoll(v, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != v.size() || v.empty() || x < least)
          return "got '" + v + "'; accepted: " + accepted;
        return "";
      },
      accepted, "whole number");
}

// The options run and check share: the config and what may override it.
void add_config_options(CLI::App* sub, Args& a) {
  sub->add_option("config", a.config_path, "TOML configuration (examples/*.toml)")->required();
  sub->add_option("--set", a.overrides, "override a key: --set integrator.rtol=1e-12 (repeatable)");
  sub->add_option("--backend", a.backend,
                  nholo::join(nholo::tables::names_of(nholo::tables::kDevices), " | ") +
                      " (overrides backend.device; auto: the GPU when one is visible, else "
                      "OpenMP)");
  sub->add_option("--device", a.gpu, "CUDA device index (overrides backend.gpu)")
      ->check(whole_number(0, "a device index 0, 1, ... (nholo devices lists them)"));
  sub->add_option("--threads", a.threads,
                  "OpenMP threads, 0 = all cores (overrides backend.threads)")
      ->check(whole_number(0, "a whole number of threads >= 1, or 0 for all cores"));
  sub->add_flag("--overwrite", a.overwrite, "replace an existing output file");
}

CLI::App* add_run(CLI::App& app, Args& a) {
  CLI::App* run =
      app.add_subcommand("run", "integrate the ensemble of CONFIG and write its HDF5 file");
  add_config_options(run, a);
  run->add_flag("-q,--quiet", a.quiet, "no progress output");
  // an empty value would read as "not given" (the whole ensemble)
  const auto not_empty = [](const char* form) {
    return CLI::Validator(
        [form](std::string& v) -> std::string {
          return v.empty() ? std::string("an empty value; give ") + form : "";
        },
        form, "not empty");
  };
  run->add_option("--shard", a.shard,
                  "run only shard r of R (r/R, r from 0): its share of the blocks of 1024 "
                  "trajectories, written to OUT.shard-BEGIN-END.h5 (see nholo merge)")
      ->check(not_empty("r/R, e.g. 0/4"));
  run->add_option("--range", a.range, "run only trajectories BEGIN:END (multiples of 1024)")
      ->check(not_empty("BEGIN:END, e.g. 0:4096"));
  run->add_flag("--resume", a.resume,
                "continue PATH.partial of an interrupted or killed run of the same config from "
                "its first unfinished slice (starts the run when there is none); with "
                "--overwrite, an existing PATH of another configuration is replaced when it "
                "completes");
  run->add_flag("--static", a.mpi_opts.static_partition,
                "under mpirun: a static partition of the parcels over the ranks instead of the "
                "dynamic work queue");
  run->add_option("--chunk-blocks", a.mpi_opts.parcel_blocks,
                  "under mpirun: blocks of 1024 trajectories per parcel (work unit and shard file; "
                  "default: about 4 parcels per rank, at most 1024 blocks)")
      ->check(whole_number(1, "a whole number of blocks >= 1"));
  return run;
}

CLI::App* add_check(CLI::App& app, Args& a) {
  CLI::App* check =
      app.add_subcommand("check", "validate CONFIG and its output path; write nothing");
  add_config_options(check, a);
  return check;
}

CLI::App* add_models(CLI::App& app, Args& a) {
  CLI::App* models =
      app.add_subcommand("models", "list the models (coordinates, parameters, formulations)");
  models->add_option("name", a.model_name, "one model");
  models->add_flag("--json", a.json, "machine-readable output");
  return models;
}

// `model` with its subcommands build and check; returns model, sets *build.
CLI::App* add_model(CLI::App& app, Args& a, CLI::App** build) {
  CLI::App* model = app.add_subcommand("model", "model files (docs/models.md)");
  model->require_subcommand(1);
  CLI::App* model_build = model->add_subcommand(
      "build",
      "check a model file and compile its plugin ahead of a run (reports the compile time)");
  model_build
      ->add_option("file", a.model_file,
                   "a model file (*.toml), or a built-in model's name with --lyapunov")
      ->required();
  model_build->add_flag("--force", a.force, "compile even when a valid plugin is cached");
  CLI::Option* gpu_arch =
      model_build
          ->add_option("--gpu-arch", a.gpu_build.archs,
                       "also compile the GPU modules (NVRTC) for these architectures, e.g. sm_90 "
                       "(comma separated; a run on a GPU compiles its own on first use)")
          ->delimiter(',');
  model_build
      ->add_option(
          "--formulations", a.gpu_build.formulations,
          "GPU modules of these formulations only (comma separated; default: all of the model's)")
      ->delimiter(',')
      ->needs(gpu_arch);  // choices of GPU modules: without --gpu-arch they chose nothing
  model_build
      ->add_option("--method", a.gpu_build.method, "GPU modules of this method (default dopri5)")
      ->check(CLI::IsMember(nholo::tables::names_of(nholo::tables::kMethods)))
      ->needs(gpu_arch);
  model_build
      ->add_flag("--events", a.gpu_build.events,
                 "GPU modules with the events' hook, as a run with [[events]] uses them")
      ->needs(gpu_arch);
  CLI::Option* lyapunov_flag =
      model_build->add_flag("--lyapunov", a.gpu_build.tangent,
                            "the plugin (and GPU modules) with the tangent systems, as a run with "
                            "[lyapunov] uses them; FILE may also name a built-in model");
  model_build
      ->add_option("--exponents", a.gpu_build.exponents,
                   "with --lyapunov: the tangent systems of [lyapunov] exponents = K")
      ->check(CLI::Range(1, 64))
      ->needs(lyapunov_flag);
  CLI::App* model_check = model->add_subcommand(
      "check", "check a model file and describe the model; compiles and writes nothing");
  model_check->add_option("file", a.model_file, "a model file (*.toml)")->required();
  *build = model_build;
  return model;
}

CLI::App* add_stats(CLI::App& app, Args& a) {
  CLI::App* stats = app.add_subcommand("stats", "print the ensemble statistics stored in FILE");
  stats->add_option("file", a.file_path, "an nholo HDF5 file")->required();
  return stats;
}

CLI::App* add_compare(CLI::App& app, Args& a) {
  CLI::App* compare =
      app.add_subcommand("compare", "print the divergence between formulations in FILE");
  compare->add_option("file", a.file_path, "an nholo HDF5 file")->required();
  compare->add_option("--formulations", a.formulations, "restrict to these, comma separated");
  return compare;
}

CLI::App* add_merge(CLI::App& app, Args& a) {
  CLI::App* merge = app.add_subcommand(
      "merge",
      "combine the shard files of one configuration into OUT (virtual datasets over "
      "them, or a copy), statistics merged exactly");
  merge->add_option("out", a.merge_out, "the merged result file")->required();
  merge->add_option("shards", a.merge_shards, "shard files (nholo run --shard / --range)")
      ->required();
  merge->add_flag("--copy", a.merge_copy, "copy the shards' data into OUT (a self-contained file)");
  merge->add_flag("--overwrite", a.overwrite, "replace an existing OUT");
  merge->add_flag("-q,--quiet", a.quiet, "no output");
  return merge;
}

CLI::App* add_diff(CLI::App& app, Args& a) {
  CLI::App* diff =
      app.add_subcommand("diff", "compare two result files of one config (e.g. GPU vs CPU)");
  diff->add_option("a", a.file_path, "an nholo HDF5 file")->required();
  diff->add_option("b", a.file_b, "another, of the same config")->required();
  diff->add_option("--rtol", a.rtol,
                   "tolerance, relative to each dataset's largest value (default 1e-10)")
      ->check(CLI::Validator(
          [](std::string& s) -> std::string {
            double v = 0;
            if (!CLI::detail::lexical_cast(s, v) || !std::isfinite(v) || v < 0)
              return "a finite number >= 0 (0: bitwise equal), not '" + s + "'";
            return "";
          },
          "RTOL >= 0", "finite non-negative"));
  return diff;
}

// The whole command line, subcommands in the order `nholo --help` lists them.
Subcommands build_app(CLI::App& app, Args& a) {
  app.require_subcommand(1);
  app.set_version_flag("--version",
                       nholo::nholo_version() + " (" + nholo::nholo_git_revision() + ")");
  Subcommands s{};
  s.run = add_run(app, a);
  s.check = add_check(app, a);
  s.models = add_models(app, a);
  s.model = add_model(app, a, &s.model_build);
  s.stats = add_stats(app, a);
  s.compare = add_compare(app, a);
  s.merge = add_merge(app, a);
  s.devices =
      app.add_subcommand("devices", "list the backends built in and the CUDA devices visible");
  s.diff = add_diff(app, a);
  return s;
}

// Edits (insertions, deletions, substitutions) between a and b.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// "did you mean --threads?" for each --word of the command line that is no
// option of the command it was given to but is within two edits of one
// (CLI11 only says the word was not expected)
std::string option_hints(const CLI::App& app, int argc, char** argv) {
  const CLI::App* level = &app;
  std::string hints;
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.rfind("--", 0) != 0) {
      for (const CLI::App* sub : level->get_subcommands({}))
        if (sub->get_name() == word) level = sub;
      continue;
    }
    const std::string name = word.substr(2, word.find('=') - 2);
    std::string best;
    size_t best_distance = 3;
    bool known = false;
    for (const CLI::Option* o : level->get_options()) {
      for (const std::string& l : o->get_lnames()) {
        known = known || l == name;
        const size_t d = edit_distance(name, l);
        if (d < best_distance) {
          best_distance = d;
          best = l;
        }
      }
    }
    if (!known && !best.empty()) hints += "nholo: " + word + ": did you mean --" + best + "?\n";
  }
  return hints;
}

// The error for a command line whose command (or `model` subcommand) is not
// one of nholo's (CLI11 would answer "A subcommand is required"); empty when
// it is one, or when the line starts with an option (--help, --version).
std::string unknown_command(const CLI::App& app, int argc, char** argv) {
  const CLI::App* level = &app;
  std::string path = "nholo";
  for (int i = 1; i < argc && level->get_require_subcommand_min() > 0; ++i) {
    const std::string word = argv[i];
    if (word.empty() || word[0] == '-') return "";
    const CLI::App* next = nullptr;
    std::vector<std::string> names;
    for (const CLI::App* sub : level->get_subcommands({})) {
      names.push_back(sub->get_name());
      if (sub->get_name() == word) next = sub;
    }
    if (!next) {
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
      return "'" + word + "' is not a command of " + path + "; the commands are: " + list +
             " (" + path + " --help)";
    }
    path += " " + word;
    level = next;
  }
  return "";
}

// What a run that wrote its file reports on stderr (unless --quiet): initial
// states, statuses.
void report_run_summary(const nholo::RunSummary& s) {
  std::fprintf(
      stderr,
      "nholo: initial states: %lld completed from the constraints, %lld projected, %lld rejected\n",
      static_cast<long long>(s.completed_from_constraints), static_cast<long long>(s.projected),
      static_cast<long long>(s.rejected));
  // each count of initial states set aside, when there are any, with what it
  // means (the format's %lld: the count)
  const std::pair<int64_t, const char*> set_aside[] = {
      {s.projected,
       "nholo: the %lld projected initial states still violated the constraints after "
       "the components not given were completed (Newton steps from 0 for those not "
       "given, which a vanishing derivative leaves in place); the projection moves "
       "every component, the given ones too (ensemble.on_violation = \"reject\" or "
       "\"error\" refuses them instead)\n"},
      {s.rejected,
       "nholo: the %lld rejected initial states violate the constraints by more than "
       "1e-13 x (1 + |q| + |qd|) (max norms) after the completion and, with "
       "ensemble.on_violation = \"project\", after 20 Newton steps of the projection "
       "(status rejected, not integrated; /initial holds them as they were left)\n"},
      {s.params_rejected,
       "nholo: %lld trajectories rejected because their sampled parameters break "
       "the model's relation between parameters (status rejected, not integrated)\n"},
      {s.singular_initial,
       "nholo: %lld initial states are degenerate (the constraint matrix loses rank "
       "there, or completing them from the constraints blew a velocity up): status "
       "singular in every formulation, not integrated\n"},
  };
  for (const auto& [count, meaning] : set_aside)
    if (count > 0) std::fprintf(stderr, meaning, static_cast<long long>(count));
  for (const auto& l : s.status_lines) std::fprintf(stderr, "nholo: status %s\n", l.c_str());
}

// The exit status of a run and its last messages: 3 after a device fault,
// 128 + signal when interrupted, else 0 (timing and "wrote" unless quiet).
int run_outcome(const nholo::RunSummary& s, const std::string& output_path, bool quiet) {
  if (!s.fault.empty()) {
    std::fprintf(stderr,
                 "nholo: error: the device failed: %s\nnholo: %lld of %lld trajectories finished "
                 "before it; they are in %s.partial (root attributes complete = 0 and fault; "
                 "the rest have status not_run)\n",
                 s.fault.c_str(), static_cast<long long>(s.completed),
                 static_cast<long long>(s.trajectories), output_path.c_str());
    return 3;
  }
  if (s.interrupted && s.stopped_in_last_step) {
    std::fprintf(stderr,
                 "nholo: interrupted while writing %s: all %lld trajectories are finished, in "
                 "%s.partial (root attribute complete = 0); `nholo run CONFIG --resume` writes "
                 "%s from it\n",
                 output_path.c_str(), static_cast<long long>(s.trajectories), output_path.c_str(),
                 output_path.c_str());
    const int sig = nholo::interrupt_signal();
    return 128 + (sig > 0 ? sig : SIGINT);
  }
  if (s.interrupted) {
    std::fprintf(stderr,
                 "nholo: interrupted: %lld of %lld trajectories finished; the valid but incomplete "
                 "file is %s.partial (root attribute complete = 0, unfinished trajectories have "
                 "status not_run)\n",
                 static_cast<long long>(s.completed), static_cast<long long>(s.trajectories),
                 output_path.c_str());
    // 130 (SIGINT), 143 (SIGTERM), 129 (SIGHUP), as a shell reports a signal
    const int sig = nholo::interrupt_signal();
    return 128 + (sig > 0 ? sig : SIGINT);
  }
  if (!quiet) {
    // host: the integrating thread's time neither on the device nor waiting
    // for the writer (initial states, issuing launches, set-up)
    const double host = std::max(0.0, s.compute_seconds - s.device_busy_seconds);
    std::fprintf(stderr,
                 "nholo: timing: device busy %.3f s (%.0f %% of %.3f s wall; %lld launches), "
                 "copies %.3f s, writer %.3f s, waiting for the writer %.3f s, assembling the "
                 "file %.3f s, host %.3f s; %lld steps, %.4g trajectory-steps/s\n",
                 s.device_busy_seconds,
                 s.seconds > 0 ? 100.0 * s.device_busy_seconds / s.seconds : 0.0, s.seconds,
                 static_cast<long long>(s.launches), s.device_copy_seconds, s.output_seconds,
                 s.wait_seconds, s.assembly_seconds, host, static_cast<long long>(s.steps),
                 s.seconds > 0 ? s.steps / s.seconds : 0.0);
    if (s.cpu_tail_trajectories > 0)
      std::fprintf(stderr,
                   "nholo: timing: CPU tail %.3f s (%lld trajectory-windows finished on the CPU "
                   "cores; backend.cpu_tail)\n",
                   s.cpu_tail_seconds, static_cast<long long>(s.cpu_tail_trajectories));
  }
  if (!quiet)
    std::fprintf(stderr, "nholo: wrote %s (%lld trajectories, %.2f s)\n", output_path.c_str(),
                 static_cast<long long>(s.trajectories), s.seconds);
  return 0;
}

// The MPI world of `nholo run` (1: a single process), its options checked.
int run_world(const Args& a) {
  const int world = nholo::mpi::init(nullptr, nullptr);
  // srun tasks without MPI: each must run its own shard
  if (world == 1 && a.shard.empty() && a.range.empty()) nholo::mpi::refuse_plain_srun_tasks();
  if (world == 1 && (a.mpi_opts.static_partition || a.mpi_opts.parcel_blocks != 0))
    throw nholo::ConfigError("--static/--chunk-blocks",
                             "apply to a run over several MPI ranks "
                             "(mpirun -n N nholo run CONFIG) only");
  if (world > 1 && (!a.shard.empty() || !a.range.empty()))
    throw nholo::ConfigError("--shard/--range",
                             "a run over several MPI ranks covers the whole "
                             "ensemble (it cuts it into shards itself); run "
                             "shards as separate processes instead");
  return world;
}

// `nholo run` (world: its MPI ranks) or `nholo check` (check = true).
int run_or_check(Args& a, bool check, int world) {
  if (!a.backend.empty()) a.overrides.push_back("backend.device=\"" + a.backend + "\"");
  if (a.threads >= 0) a.overrides.push_back("backend.threads=" + std::to_string(a.threads));
  if (a.gpu >= 0) a.overrides.push_back("backend.gpu=" + std::to_string(a.gpu));
  const nholo::RunConfig cfg = nholo::load_config(a.config_path, a.overrides);
  nholo::check_not_an_input(
      cfg.output_path,
      {a.config_path, cfg.sampler == nholo::SamplerKind::file ? cfg.file : std::string(),
       cfg.model_plugin, cfg.model_spec ? cfg.model_spec->source : std::string()});
  nholo::CommandOptions opts;
  opts.overwrite = a.overwrite;
  opts.quiet = a.quiet;
  opts.resume = a.resume;
  opts.shard = a.shard;
  opts.range = a.range;
  if (check) {
    std::cout << nholo::check_command(cfg, opts);
    return 0;
  }
  if (world > 1) return nholo::mpi::run(cfg, opts, a.mpi_opts);
  // --resume in one process of what an MPI run (or --shard runs) left:
  // the shard files of OUT, continued and merged as over several ranks
  if (a.resume && a.shard.empty() && a.range.empty() &&
      !std::filesystem::exists(nholo::partial_path(cfg.output_path)) &&
      !nholo::find_shard_files(cfg.output_path).empty())
    return nholo::parcels::run_alone(cfg, opts);
  const nholo::RunSummary s = nholo::run_command(cfg, opts);
  // the file this process writes: a shard's own (OUT.shard-BEGIN-END.h5)
  std::string written = cfg.output_path;
  if (!a.shard.empty() || !a.range.empty()) {
    const auto [begin, end] = nholo::shard_range(a.shard, a.range, cfg.size);
    written = nholo::shard_path(cfg.output_path, begin, end);
  }
  if (s.already_complete) {
    if (!a.quiet)
      std::fprintf(stderr, "nholo: %s is complete (same config); nothing to resume\n",
                   written.c_str());
    return 0;
  }
  if (!a.quiet) report_run_summary(s);
  // the exponents of [lyapunov] (and other results only some runs have),
  // summarised as `nholo stats` does, from the file just written
  if (!a.quiet && s.fault.empty() && !s.interrupted && std::filesystem::exists(written))
    for (const auto& l : nholo::optional_result_lines(written))
      std::fprintf(stderr, "nholo: %s\n", l.c_str());
  return run_outcome(s, written, a.quiet);
}

int merge(const Args& a) {
  const nholo::RunSummary s =
      nholo::merge_command(a.merge_out, a.merge_shards, a.merge_copy, a.overwrite, a.quiet);
  if (!a.quiet) {
    for (const auto& l : s.status_lines) std::fprintf(stderr, "nholo: status %s\n", l.c_str());
    std::fprintf(
        stderr, "nholo: merged %zu shards (%lld trajectories) into %s (%s)\n",
        a.merge_shards.size(), static_cast<long long>(s.trajectories), a.merge_out.c_str(),
        a.merge_copy ? "a copy" : "virtual datasets over the shards: keep them next to it");
  }
  return 0;
}

int devices() {
  std::cout << nholo::devices_command();
  const std::string mpi = nholo::mpi::library_version();
  std::cout << "MPI: " << (mpi.empty() ? "not built in (-DNHOLO_WITH_MPI=OFF)" : "built in, " + mpi)
            << "\n";
  return 0;
}

// The subcommand given, run; its exit status.
// An error of the HDF5 layer ("nholo::h5: WHAT 'FILE:/object': f(): ...;
// g(): REASON [MINOR]") as a reader of a result file needs it: what failed
// where, and HDF5's innermost reason, without the call chain; for the
// commands that read results, what that means.
std::string readable_h5_error(const std::string& msg, bool reading_results) {
  const std::string tag = "nholo::h5: ";
  if (msg.rfind(tag, 0) != 0) return msg;
  std::string head = msg.substr(tag.size()), reason;
  if (const size_t at = head.find("': "); at != std::string::npos) {
    std::string stack = head.substr(at + 3);
    head = head.substr(0, at + 1);
    reason = nholo::h5::innermost_reason(stack);
  }
  std::string out = head + (reason.empty() ? "" : " (HDF5: " + reason + ")");
  if (reading_results)
    out += ": the file is damaged, incomplete or not a result file of this nholo (nholo "
           "stats, compare, diff and merge read the files nholo run writes, and their .partial)";
  return out;
}

int dispatch(const Subcommands& s, Args& a) {
  const int world = *s.run ? run_world(a) : 1;  // ranks of an MPI run (`mpirun -n N nholo run`)
  if (*s.run || *s.check) return run_or_check(a, static_cast<bool>(*s.check), world);
  if (*s.merge) return merge(a);
  if (*s.model) {
    std::cout << nholo::model_file_command(a.model_file, s.model_build->parsed(), a.force,
                                           a.gpu_build);
    return 0;
  }
  if (*s.models) {
    std::cout << nholo::models_command(a.model_name, a.json);
    return 0;
  }
  if (*s.stats) {
    std::cout << nholo::stats_command(a.file_path);
    return 0;
  }
  if (*s.devices) return devices();
  if (*s.diff) {
    std::string report;
    const bool same = nholo::diff_command(a.file_path, a.file_b, a.rtol, report);
    std::cout << report;
    return same ? 0 : 1;
  }
  if (*s.compare) {
    std::cout << nholo::compare_command(a.file_path, split_commas(a.formulations));
    return 0;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  nholo::h5::skip_library_cleanup_at_exit();
  // a damaged file that HDF5 crashes or hangs on: exit 2 and a message
  nholo::h5::install_library_fault_handlers();
  // a configuration's plugin "path.so" is loaded by the toolchain
  nholo::set_plugin_model_loader(nholo::plugin_model_info);
  // `run`, `merge` and `model build` (its compiler) stop cleanly on
  // SIGINT/SIGTERM/SIGHUP from their first instruction on
  if (argc > 1 && (std::string(argv[1]) == "run" || std::string(argv[1]) == "merge" ||
                   std::string(argv[1]) == "model"))
    nholo::install_interrupt_handler();
  // named "nholo" in its usage lines whatever path started it (a bundle's
  // wrapper starts lib/nholo.bin: the help showed that path)
  CLI::App app{"nholo — ensembles of constrained mechanical systems (Udwadia–Kalaba and friends)",
               "nholo"};
  Args args;
  const Subcommands sub = build_app(app, args);
  if (const std::string unknown = unknown_command(app, argc, argv); !unknown.empty()) {
    std::fprintf(stderr, "nholo: error: %s\n", unknown.c_str());
    return 2;
  }

  // usage errors exit 2 like every other user error (CLI11's own codes are
  // 100+); --help and --version exit 0
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    if (code != 0) std::fputs(option_hints(app, argc, argv).c_str(), stderr);
    return code == 0 ? 0 : 2;
  }

  // MPI is finalized whatever way main returns
  struct MpiSession {
    ~MpiSession() { nholo::mpi::finalize(); }
  } mpi_session;
  try {
    return dispatch(sub, args);
  } catch (const nholo::Interrupted& e) {
    std::fprintf(stderr, "nholo: interrupted %s; nothing was written\n", e.what());
    const int sig = nholo::interrupt_signal();
    return 128 + (sig > 0 ? sig : SIGINT);
  } catch (const std::bad_alloc&) {
    // what a read budget (host/io/h5.hpp) or a memory estimate did not foresee
    std::fprintf(stderr,
                 "nholo: error: out of memory: an allocation was refused (the machine's memory or "
                 "a limit on this process, e.g. ulimit -v or a container's)\n");
    return 2;
  } catch (const std::exception& e) {
    const bool reading = *sub.stats || *sub.compare || *sub.diff || *sub.merge || args.resume;
    std::fprintf(stderr, "nholo: error: %s\n", readable_h5_error(e.what(), reading).c_str());
    return 2;
  }
}
