// nholo/host/io/output_path.cpp — the checks of a command's output path and
// its lock (PATH.lock).
#include "host/io/output_path.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "host/config/config.hpp"
#include "host/io/file_names.hpp"
#include "host/io/h5.hpp"
#include "host/io/root_attributes.hpp"

namespace fs = std::filesystem;

namespace nholo {

OutputLock::OutputLock(const std::string& path) : path_(lock_path(path)) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw ConfigError("output.path",
                        "cannot create the lock file '" + path_ + "': " + std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      // the holder writes its name right after taking the lock: give it a moment
      std::string holder = read_holder();
      for (int i = 0; i < 20 && holder.empty() && err == EWOULDBLOCK; ++i) {
        ::usleep(10000);
        holder = read_holder();
      }
      ::close(fd_);
      fd_ = -1;
      if (err == EWOULDBLOCK)
        throw ConfigError("output.path",
                          "'" + path + "' is being written by another nholo run (" +
                              (holder.empty() ? std::string("see ") + path_ : holder) +
                              "); wait for it to finish or choose another output.path");
      throw ConfigError("output.path", "cannot lock '" + path_ + "': " + std::strerror(err));
    }
    // the file may have been removed by its previous holder between our
    // open and our lock: then the lock is on a dead inode, and we retry
    struct stat a {
    }, b{};
    if (::fstat(fd_, &a) == 0 && ::stat(path_.c_str(), &b) == 0 && a.st_ino == b.st_ino &&
        a.st_dev == b.st_dev) {
      char host[256] = "?";
      ::gethostname(host, sizeof host - 1);
      const std::string me =
          "pid " + std::to_string(::getpid()) + " on " + host + ", since " + now_iso8601();
      if (::ftruncate(fd_, 0) == 0) {
        const ssize_t w = ::write(fd_, me.data(), me.size());
        (void)w;
      }
      return;
    }
    ::close(fd_);
    fd_ = -1;
  }
  throw ConfigError("output.path",
                    "could not take the lock '" + path_ + "' (it keeps being replaced)");
}

OutputLock::~OutputLock() {
  if (fd_ >= 0) {
    ::unlink(path_.c_str());  // while still holding it: a waiting opener retries
    ::close(fd_);
  }
}

std::string OutputLock::read_holder() const {
  char buf[512] = {0};
  const ssize_t r = ::pread(fd_, buf, sizeof buf - 1, 0);
  return r > 0 ? std::string(buf, static_cast<size_t>(r)) : std::string();
}

// The output path's folder exists and is writable, and the path is not a folder.
void check_output_folder(const std::string& path) {
  const fs::path p(path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::error_code ec;
  const bool folder = fs::is_directory(dir, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)  // a symlink loop, no permission
    throw ConfigError("output.path", "folder '" + dir.string() + "': " + ec.message());
  if (!folder)
    throw ConfigError("output.path",
                      "folder '" + dir.string() + "' does not exist (create it first)");
  if (access(dir.c_str(), W_OK) != 0)
    throw ConfigError("output.path", "folder '" + dir.string() + "' is not writable");
  if (p.has_filename() == false || fs::is_directory(p, ec))
    throw ConfigError("output.path", "'" + path + "' is a folder; expected a file name");
}

void check_output_path(const std::string& path, bool overwrite) {
  check_output_folder(path);
  if (fs::exists(path) && !overwrite)
    throw ConfigError("output.path", "'" + path + "' exists; pass --overwrite to replace it");
  if (fs::exists(partial_path(path)) && !overwrite)
    throw ConfigError("output.path",
                      "'" + partial_path(path) +
                          "' exists: the incomplete result of an earlier run "
                          "that was interrupted, failed on its device or was killed (no run is "
                          "writing it now; it holds the slices that finished, `nholo stats` "
                          "reads it). Pass --resume to continue it, or --overwrite to discard "
                          "it and run again");
}

void check_not_an_input(const std::string& path, const std::vector<std::string>& inputs) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return;
  for (const std::string& in : inputs)
    if (!in.empty() && fs::exists(in, ec) && fs::equivalent(path, in, ec))
      throw ConfigError("output.path", "'" + path + "' is an input of the run ('" + in +
                                           "'); choose another output.path (--overwrite never "
                                           "replaces an input)");
}

std::string config_hash_of(const std::string& file, bool* unreadable) {
  if (unreadable) *unreadable = false;
  try {
    h5::File f = h5::File::open_ro(file);
    const h5::Group r = f.root();
    return r.has_attr("config_hash") ? r.attr_string("config_hash") : std::string();
  } catch (const std::exception&) {
    if (!unreadable) throw;
    *unreadable = true;
    return std::string();
  }
}

}  // namespace nholo
