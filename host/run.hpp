// nholo/host/run.hpp — the commands behind the CLI (host/main.cpp), callable
// from tests. Errors a user can fix throw ConfigError / std::runtime_error with
// a message naming what is wrong and what is accepted.
#pragma once

#include <string>
#include <vector>

#include "host/config.hpp"
#include "host/runner.hpp"

namespace nholo {

struct CommandOptions {
  bool overwrite = false;
  bool quiet = false;
};

// `nholo run`: validates everything, writes PATH.partial, renames it to PATH
// when complete. Refuses to overwrite PATH (or a leftover PATH.partial) without
// `overwrite`. On SIGINT: stops at the next window, leaves PATH.partial as a
// valid file (root attribute complete = 0, finished trajectories' status set,
// the rest not_run) and returns the summary with interrupted = true.
RunSummary run_command(const RunConfig& cfg, const CommandOptions& opts);

// `nholo check`: validates the config and the output path, writes nothing;
// returns a human-readable description of the run.
std::string check_command(const RunConfig& cfg, const CommandOptions& opts);

// `nholo models [NAME] [--json]`
std::string models_command(const std::string& name, bool json);

// `nholo stats FILE`, `nholo compare FILE [--formulations a,b]`
std::string stats_command(const std::string& path);
std::string compare_command(const std::string& path, const std::vector<std::string>& formulations);

// Installs the SIGINT handler that sets interrupt_flag().
void install_interrupt_handler();

std::string nholo_version();
std::string nholo_git_revision();

}  // namespace nholo
