// nholo/host/io/output_file.cpp — a run's output from its opening to its end
// (host/io/output_file.hpp).
#include "host/io/output_file.hpp"

#include <filesystem>
#include <system_error>
#include <utility>

#include "host/io/file_names.hpp"
#include "host/io/h5.hpp"
#include "host/io/in_place_file.hpp"
#include "host/io/open_result.hpp"
#include "host/io/root_attributes.hpp"

namespace fs = std::filesystem;

namespace nholo {

namespace {

// The lock of path, taken once its folder is known to be usable.
OutputLock checked_lock(const std::string& path) {
  check_output_folder(path);
  return OutputLock(path);
}

}  // namespace

OutputFile::OutputFile(const RunConfig& cfg, Request req)
    : req_(std::move(req)),
      path_(cfg.output_path),
      partial_(partial_path(cfg.output_path)),
      lock_(checked_lock(cfg.output_path)),
      pieces_(cfg.output_path) {
  // everything below, --overwrite's removals included, happens under the lock;
  // leftovers of a run killed outright (no run owns them)
  std::error_code ec;
  fs::remove(temporary_path(partial_), ec);
  fs::remove(assembling_path(path_), ec);
  // a run killed in its last step: its result file restored, its master back
  if (recover_last_step(path_))
    tell("the run that wrote " + path_ + " was stopped in its last step; its finished slices are "
         "restored to " + partial_);
  // pieces without their master: a run killed at its start or end
  if (!fs::exists(partial_)) pieces_.remove_all();
  if (!req_.resume) {
    check_output_path(path_, req_.overwrite);
    return;
  }
  if (fs::exists(path_) && resume_finds_complete(cfg)) {
    complete_ = true;
    return;
  }
  if (fs::exists(partial_)) {
    slice_size_ = check_resumable(cfg);
    resuming_ = true;
  }
}

void OutputFile::begin_writing() {
  if (req_.overwrite && !req_.resume) remove_master_and_pieces();
}

void OutputFile::commit() { remove_master_and_pieces(); }

void OutputFile::abandon() {
  std::error_code ec;
  fs::remove(temporary_path(partial_), ec);
  fs::remove(assembling_path(path_), ec);
  if (!resuming_) remove_master_and_pieces();
}

std::string OutputFile::keep_stopped(const std::string& what) {
  std::error_code ec;
  fs::remove(temporary_path(partial_), ec);
  if (!resuming_ && finished_slices() == 0) {
    remove_master_and_pieces(true);  // a signal's stop: within a second
    return what;
  }
  return what + " (" + partial_ + " is kept as it was; --resume continues it)";
}

std::string OutputFile::keep_failed(const std::string& what) {
  std::error_code ec;
  fs::remove(temporary_path(partial_), ec);
  fs::remove(assembling_path(path_), ec);
  const int64_t kept = finished_slices();
  if (!resuming_ && kept == 0) {
    remove_master_and_pieces();
    return what;
  }
  return what + "\nnholo: the " + std::to_string(kept) + " finished slices are kept in " +
         partial_ + "; once the cause is fixed, `nholo run CONFIG --resume` continues";
}

void OutputFile::remove_master_and_pieces(bool without_waiting) {
  std::error_code ec;
  fs::remove(partial_, ec);
  if (without_waiting)
    pieces_.remove_all_without_waiting();
  else
    pieces_.remove_all();
}

void OutputFile::tell(const std::string& line) const {
  if (req_.note) req_.note(line);
}

int64_t OutputFile::finished_slices() const {
  int64_t k = 0;
  std::error_code ec;
  if (!fs::is_directory(pieces_.dir(), ec)) return 0;
  for (const auto& e : fs::directory_iterator(pieces_.dir(), ec)) {
    const std::string name = e.path().filename().string();
    k += name.rfind("slice_", 0) == 0 && e.path().extension() == ".h5";
  }
  return k;
}

// What `run --resume` continues: the master PATH.partial of the same
// config, written by this nholo. Returns its slice size.
int64_t OutputFile::check_resumable(const RunConfig& cfg) const {
  const std::string& partial = partial_;
  h5::File f;
  try {
    f = h5::File::open_ro(partial);
  } catch (const std::exception& e) {
    throw ConfigError("--resume",
                      "'" + partial + "' cannot be read (" + e.what() +
                          "); pass --overwrite (without --resume) to discard it and start again");
  }
  const h5::Group root = f.root();
  for (const char* a : {"config_hash", "nholo_version", "git_revision"})
    if (!root.has_attr(a))
      throw ConfigError("--resume", "'" + partial +
                                        "' was not written by this version of nholo "
                                        "(no attribute '" +
                                        a +
                                        "'); pass --overwrite (without --resume) to start again");
  const std::string hash = root.attr_string("config_hash");
  if (hash != cfg.result_hash)
    throw ConfigError("--resume",
                      "'" + partial +
                          "' is the result of another configuration "
                          "(config hash " +
                          hash + ", this one " + cfg.result_hash +
                          "; only backend.*, output.path and output.memory_budget_mb may "
                          "change); run with the same config and --set options, or pass "
                          "--overwrite (without --resume) to discard it");
  const std::string version = root.attr_string("nholo_version") + " (" +
                              root.attr_string("git_revision") + ")";
  const std::string mine = nholo_version() + " (" + nholo_git_revision() + ")";
  if (version != mine)
    throw ConfigError("--resume",
                      "'" + partial + "' was written by nholo " + version + ", this is " + mine +
                          ": the results could differ in the last bits; finish it "
                          "with that nholo, or pass --overwrite (without --resume) to start again");
  if (!root.has_attr("slice_size"))
    throw ConfigError("--resume", "'" + partial + "' does not record its slice size");
  return root.attr_int64("slice_size");
}

// `run --resume` where PATH exists: true when PATH is this configuration's
// complete result (nothing to run; the master and pieces of a run killed
// after writing it removed, another configuration's PATH.partial kept);
// false when --overwrite lets the run continue and replace PATH at the end.
// Anything else is refused, naming the way on.
bool OutputFile::resume_finds_complete(const RunConfig& cfg) const {
  const std::string& path = path_;
  const std::string& partial = partial_;
  const bool overwrite = req_.overwrite;
  check_output_folder(path);
  h5::File f;
  try {
    f = open_result(path);
  } catch (const std::exception& e) {
    if (overwrite) return false;
    throw ConfigError("--resume", "'" + path + "' exists but is not a readable result (" +
                                      e.what() +
                                      "); move it away, or pass --resume --overwrite "
                                      "to replace it when the run completes");
  }
  const h5::Group root = f.root();
  if (!root.has_attr("config_hash") || root.attr_string("config_hash") != cfg.result_hash) {
    if (overwrite) return false;
    bool unreadable = false;
    const bool ours =
        fs::exists(partial) && config_hash_of(partial, &unreadable) == cfg.result_hash;
    throw ConfigError("--resume",
                      "'" + path +
                          "' exists and is the result of another "
                          "configuration; " +
                          (ours ? "'" + partial +
                                      "' is this configuration's "
                                      "unfinished run (started with --overwrite): "
                                      "--resume --overwrite continues it and replaces '" +
                                      path + "' when it completes"
                                : std::string("choose another output.path, or pass "
                                              "--resume --overwrite to replace it "
                                              "when the run completes")));
  }
  // what a finished run writes (a file damaged or cut down since is run again only on request)
  std::string missing = root.has_attr("complete") && root.attr_int64("complete") == 1
                            ? ""
                            : "its root attribute complete is not 1";
  for (const auto& form : cfg.formulations)
    for (const std::string& obj : {form + "/status", "statistics/" + form})
      if (missing.empty() && !root.exists(obj)) missing = "'" + obj + "' is missing";
  if (!missing.empty()) {
    if (overwrite) return false;
    throw ConfigError("--resume", "'" + path + "' exists but is not a complete result (" + missing +
                                      "); move it away, or pass --overwrite to run it again");
  }
  // complete already: the master and pieces of a run killed after writing
  // it go; an unfinished run of another configuration stays
  if (fs::exists(partial)) {
    bool unreadable = false;
    const std::string hash = config_hash_of(partial, &unreadable);
    if (hash != cfg.result_hash) {
      tell("'" + partial + "' is " +
           (unreadable ? "not readable" : "the unfinished run of another configuration") +
           " and is kept (resume it with its own configuration, or remove it)");
      return true;
    }
    std::error_code ec;
    fs::remove(partial, ec);
  }
  pieces_.remove_all();
  return true;
}

}  // namespace nholo
