// nholo — command line: run | check | models | stats | compare | diff | devices.
#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>
#include <iostream>

#include "host/run/mpi_run.hpp"
#include "host/cli/commands.hpp"

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

}  // namespace

int main(int argc, char** argv) {
  nholo::h5::skip_library_cleanup_at_exit();
  // `run` stops cleanly on SIGINT/SIGTERM/SIGHUP from its first instruction on
  if (argc > 1 && std::string(argv[1]) == "run") nholo::install_interrupt_handler();
  CLI::App app{"nholo — ensembles of constrained mechanical systems (Udwadia–Kalaba and friends)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", nholo::nholo_version() + " (" + nholo::nholo_git_revision() + ")");

  std::string config_path, file_path, model_name, formulations;
  std::vector<std::string> overrides;
  bool overwrite = false, quiet = false, json = false, resume = false;
  std::string backend;
  int threads = -1, gpu = -1;

  auto add_run_options = [&](CLI::App* sub) {
    sub->add_option("config", config_path, "TOML configuration (examples/*.toml)")->required();
    sub->add_option("--set", overrides, "override a key: --set integrator.rtol=1e-12 (repeatable)");
    sub->add_option("--backend", backend,
                    "auto | omp | cpp | cuda (overrides backend.device; auto: the GPU when one is "
                    "visible, else OpenMP)");
    sub->add_option("--device", gpu, "CUDA device index (overrides backend.gpu)");
    sub->add_option("--threads", threads, "OpenMP threads, 0 = all cores (overrides backend.threads)");
    sub->add_flag("--overwrite", overwrite, "replace an existing output file");
  };
  CLI::App* run = app.add_subcommand("run", "integrate the ensemble of CONFIG and write its HDF5 file");
  add_run_options(run);
  run->add_flag("-q,--quiet", quiet, "no progress output");
  std::string shard, range;
  run->add_option("--shard", shard,
                  "run only shard r of R (r/R, r from 0): its share of the blocks of 1024 "
                  "trajectories, written to OUT.shard-BEGIN-END.h5 (see nholo merge)");
  run->add_option("--range", range, "run only trajectories BEGIN:END (multiples of 1024)");
  run->add_flag("--resume", resume,
                "continue PATH.partial of an interrupted or killed run of the same config from "
                "its first unfinished slice (starts the run when there is none)");
  nholo::mpi::Options mpi_opts;
  run->add_flag("--static", mpi_opts.static_partition,
                "under mpirun: a static partition of the chunks over the ranks instead of the "
                "dynamic work queue");
  run->add_option("--chunk-blocks", mpi_opts.chunk_blocks,
                  "under mpirun: blocks of 1024 trajectories per chunk (work unit and shard file; "
                  "default: about 4 chunks per rank, at most 1024 blocks)");
  CLI::App* check = app.add_subcommand("check", "validate CONFIG and its output path; write nothing");
  add_run_options(check);
  CLI::App* models = app.add_subcommand("models", "list the models (coordinates, parameters, formulations)");
  models->add_option("name", model_name, "one model");
  models->add_flag("--json", json, "machine-readable output");
  CLI::App* model = app.add_subcommand("model", "model files (docs/models.md)");
  model->require_subcommand(1);
  std::string model_file;
  bool force = false;
  CLI::App* model_build = model->add_subcommand(
      "build", "check a model file and compile its plugin ahead of a run (reports the compile time)");
  model_build->add_option("file", model_file, "a model file (*.toml)")->required();
  model_build->add_flag("--force", force, "compile even when a valid plugin is cached");
  nholo::GpuBuildOptions gpu_build;
  model_build
      ->add_option("--gpu-arch", gpu_build.archs,
                   "also compile the GPU modules (NVRTC) for these architectures, e.g. sm_90 "
                   "(comma separated; a run on a GPU compiles its own on first use)")
      ->delimiter(',');
  model_build
      ->add_option(
          "--formulations", gpu_build.formulations,
          "GPU modules of these formulations only (comma separated; default: all of the model's)")
      ->delimiter(',');
  model_build
      ->add_option("--method", gpu_build.method, "GPU modules of this method (default dopri5)")
      ->check(CLI::IsMember({"rk4", "dopri5", "dop853"}));
  CLI::App* model_check = model->add_subcommand(
      "check", "check a model file and describe the model; compiles and writes nothing");
  model_check->add_option("file", model_file, "a model file (*.toml)")->required();
  CLI::App* stats = app.add_subcommand("stats", "print the ensemble statistics stored in FILE");
  stats->add_option("file", file_path, "an nholo HDF5 file")->required();
  CLI::App* compare = app.add_subcommand("compare", "print the divergence between formulations in FILE");
  compare->add_option("file", file_path, "an nholo HDF5 file")->required();
  compare->add_option("--formulations", formulations, "restrict to these, comma separated");

  std::string merge_out;
  std::vector<std::string> merge_shards;
  bool merge_copy = false;
  CLI::App* merge = app.add_subcommand(
      "merge", "combine the shard files of one configuration into OUT (virtual datasets over "
               "them, or a copy), statistics merged exactly");
  merge->add_option("out", merge_out, "the merged result file")->required();
  merge->add_option("shards", merge_shards, "shard files (nholo run --shard / --range)")->required();
  merge->add_flag("--copy", merge_copy, "copy the shards' data into OUT (a self-contained file)");
  merge->add_flag("--overwrite", overwrite, "replace an existing OUT");
  merge->add_flag("-q,--quiet", quiet, "no output");
  CLI::App* devices = app.add_subcommand("devices", "list the backends built in and the CUDA devices visible");
  std::string file_b;
  double rtol = 1e-10;
  CLI::App* diff = app.add_subcommand("diff", "compare two result files of one config (e.g. GPU vs CPU)");
  diff->add_option("a", file_path, "an nholo HDF5 file")->required();
  diff->add_option("b", file_b, "another, of the same config")->required();
  diff->add_option("--rtol", rtol, "tolerance, relative to each dataset's largest value (default 1e-10)");

  // usage errors exit 2 like every other user error (CLI11's own codes are
  // 100+); --help and --version exit 0
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  // MPI is finalized whatever way main returns
  struct MpiSession {
    ~MpiSession() { nholo::mpi::finalize(); }
  } mpi_session;
  try {
    int world = 1;  // ranks of an MPI run (`mpirun -n N nholo run`)
    if (*run) world = nholo::mpi::init(nullptr, nullptr);
    if (*run && world == 1 && (mpi_opts.static_partition || mpi_opts.chunk_blocks != 0))
      throw nholo::ConfigError("--static/--chunk-blocks", "apply to a run over several MPI ranks "
                                                          "(mpirun -n N nholo run CONFIG) only");
    if (*run && world > 1 && (!shard.empty() || !range.empty()))
      throw nholo::ConfigError("--shard/--range", "a run over several MPI ranks covers the whole "
                                                  "ensemble (it cuts it into shards itself); run "
                                                  "shards as separate processes instead");
    if (*run || *check) {
      if (!backend.empty()) overrides.push_back("backend.device=\"" + backend + "\"");
      if (threads >= 0) overrides.push_back("backend.threads=" + std::to_string(threads));
      if (gpu >= 0) overrides.push_back("backend.gpu=" + std::to_string(gpu));
      const nholo::RunConfig cfg = nholo::load_config(config_path, overrides);
      nholo::CommandOptions opts;
      opts.overwrite = overwrite;
      opts.quiet = quiet;
      opts.resume = resume;
      opts.shard = shard;
      opts.range = range;
      if (*check) {
        std::cout << nholo::check_command(cfg, opts);
        return 0;
      }
      if (world > 1) return nholo::mpi::run(cfg, opts, mpi_opts);
      const nholo::RunSummary s = nholo::run_command(cfg, opts);
      if (s.already_complete) {
        if (!quiet)
          std::fprintf(stderr, "nholo: %s is complete (same config); nothing to resume\n",
                       cfg.output_path.c_str());
        return 0;
      }
      if (!quiet) {
        std::fprintf(stderr, "nholo: initial states: %lld completed from the constraints, %lld projected, %lld rejected\n",
                     static_cast<long long>(s.completed_from_constraints),
                     static_cast<long long>(s.projected), static_cast<long long>(s.rejected));
        if (s.params_rejected > 0)
          std::fprintf(stderr,
                       "nholo: %lld trajectories rejected because their sampled parameters break "
                       "the model's relation between parameters (status rejected, not integrated)\n",
                       static_cast<long long>(s.params_rejected));
        if (s.singular_initial > 0)
          std::fprintf(stderr,
                     "nholo: %lld initial states are degenerate (the constraint matrix loses rank "
                     "there, or completing them from the constraints blew a velocity up): status "
                     "singular in every formulation, not integrated\n",
                     static_cast<long long>(s.singular_initial));
        for (const auto& l : s.status_lines) std::fprintf(stderr, "nholo: status %s\n", l.c_str());
      }
      if (!s.fault.empty()) {
        std::fprintf(stderr,
                     "nholo: error: the device failed: %s\nnholo: %lld of %lld trajectories finished "
                     "before it; they are in %s.partial (root attributes complete = 0 and fault; "
                     "the rest have status not_run)\n",
                     s.fault.c_str(), static_cast<long long>(s.completed),
                     static_cast<long long>(s.trajectories), cfg.output_path.c_str());
        return 3;
      }
      if (s.interrupted) {
        std::fprintf(stderr,
                     "nholo: interrupted: %lld of %lld trajectories finished; the valid but incomplete "
                     "file is %s.partial (root attribute complete = 0, unfinished trajectories have "
                     "status not_run)\n",
                     static_cast<long long>(s.completed), static_cast<long long>(s.trajectories),
                     cfg.output_path.c_str());
        // 130 (SIGINT), 143 (SIGTERM), 129 (SIGHUP), as a shell reports a signal
        const int sig = nholo::interrupt_signal();
        return 128 + (sig > 0 ? sig : SIGINT);
      }
      if (!quiet)
        std::fprintf(stderr,
                     "nholo: timing: %.3f s integrating (device), %.3f s waiting for the writer, "
                     "%.3f s writing (writer thread), %.3f s assembling the file, %lld steps, "
                     "%.4g trajectory-steps/s\n",
                     s.compute_seconds, s.wait_seconds, s.output_seconds, s.assembly_seconds,
                     static_cast<long long>(s.steps),
                     s.seconds > 0 ? s.steps / s.seconds : 0.0);
      if (!quiet)
        std::fprintf(stderr, "nholo: wrote %s (%lld trajectories, %.2f s)\n", cfg.output_path.c_str(),
                     static_cast<long long>(s.trajectories), s.seconds);
      return 0;
    }
    if (*merge) {
      const nholo::RunSummary s = nholo::merge_command(merge_out, merge_shards, merge_copy, overwrite, quiet);
      if (!quiet) {
        for (const auto& l : s.status_lines) std::fprintf(stderr, "nholo: status %s\n", l.c_str());
        std::fprintf(stderr, "nholo: merged %zu shards (%lld trajectories) into %s (%s)\n",
                     merge_shards.size(), static_cast<long long>(s.trajectories), merge_out.c_str(),
                     merge_copy ? "a copy" : "virtual datasets over the shards: keep them next to it");
      }
      return 0;
    }
    if (*model) {
      std::cout << nholo::model_file_command(model_file, model_build->parsed(), force, gpu_build);
      return 0;
    }
    if (*models) {
      std::cout << nholo::models_command(model_name, json);
      return 0;
    }
    if (*stats) {
      std::cout << nholo::stats_command(file_path);
      return 0;
    }
    if (*devices) {
      std::cout << nholo::devices_command();
      const std::string mpi = nholo::mpi::library_version();
      std::cout << "MPI: " << (mpi.empty() ? "not built in (-DNHOLO_WITH_MPI=OFF)" : "built in, " + mpi)
                << "\n";
      return 0;
    }
    if (*diff) {
      std::string report;
      const bool same = nholo::diff_command(file_path, file_b, rtol, report);
      std::cout << report;
      return same ? 0 : 1;
    }
    if (*compare) {
      std::cout << nholo::compare_command(file_path, split_commas(formulations));
      return 0;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nholo: error: %s\n", e.what());
    return 2;
  }
  return 0;
}
