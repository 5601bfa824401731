// nholo/host/io/output_path.hpp — the output path of a command (run, check,
// merge): its folder usable, no result or leftover in the way, and the lock
// that gives one process at a time the use of it.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace nholo {

// Exclusive use of an output path: an advisory lock (flock) on PATH.lock,
// held for the whole run. A second run on the same path is refused at once,
// naming the process that holds it; --overwrite never touches a path another
// run holds. The lock file records "pid host time" and is removed when the
// holder finishes; a holder killed outright leaves the file but not the lock
// (the kernel releases flock), so the next run takes it over.
class OutputLock {
 public:
  OutputLock() = default;
  // Takes the lock of path; ConfigError (key output.path) naming the holder
  // when another process has it.
  explicit OutputLock(const std::string& path);
  OutputLock(OutputLock&& o) noexcept : path_(std::move(o.path_)), fd_(o.fd_) { o.fd_ = -1; }
  OutputLock& operator=(OutputLock&& o) noexcept {
    std::swap(path_, o.path_);
    std::swap(fd_, o.fd_);
    return *this;
  }
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;
  ~OutputLock();

 private:
  std::string read_holder() const;
  std::string path_;
  int fd_ = -1;
};

// The output path's folder exists and is writable, and the path is not a
// folder; throws ConfigError naming what is wrong.
void check_output_folder(const std::string& path);

// The output path is usable (check_output_folder), and neither PATH nor
// PATH.partial exists (unless overwrite).
void check_output_path(const std::string& path, bool overwrite);

// The output path is none of the run's inputs (its config file, state file,
// model file or plugin: `inputs`, paths that need not exist): ConfigError
// naming the input otherwise, even with --overwrite.
void check_not_an_input(const std::string& path, const std::vector<std::string>& inputs);

// The root attribute config_hash of an nholo file (complete, .partial or a
// shard): "" when it has none; "" with *unreadable set (or, with it null, an
// exception) when the file cannot be opened.
std::string config_hash_of(const std::string& file, bool* unreadable = nullptr);

}  // namespace nholo
