#include "host/io/pieces.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "host/io/file_names.hpp"

extern char** environ;

namespace fs = std::filesystem;

namespace nholo {

namespace {

// failpoint (testing aid): NHOLO_FAILPOINT_SLOW_FSYNC=NAME makes the fsync of
// a file or folder named NAME wait 3 s first, a system call of a loaded disk
// that no signal interrupts
void slow_fsync_failpoint(const std::string& path) {
  static const char* name = std::getenv("NHOLO_FAILPOINT_SLOW_FSYNC");
  if (!name || fs::path(path).filename() != name) return;
  std::fprintf(stderr, "nholo: failpoint: a slow fsync of '%s' (3 s)\n", path.c_str());
  std::this_thread::sleep_for(std::chrono::seconds(3));
}

}  // namespace

void fsync_path(const std::string& path, bool folder) {
  slow_fsync_failpoint(path);
  const int fd = ::open(path.c_str(), (folder ? O_RDONLY | O_DIRECTORY : O_RDWR) | O_CLOEXEC);
  if (fd < 0)
    throw std::runtime_error("cannot open '" + path + "' to sync it: " + std::strerror(errno));
  const int r = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (r != 0)
    throw std::runtime_error("cannot write '" + path + "' to disk (fsync): " + std::strerror(err));
}

namespace {

// failpoint (testing aid): NHOLO_FAILPOINT_SYNC_PAUSE_MS=N makes each range
// that write_back_until_stopped writes back wait N ms first: a slow disk
long sync_pause_ms() {
  static const long ms = [] {
    const char* v = std::getenv("NHOLO_FAILPOINT_SYNC_PAUSE_MS");
    return v ? std::atol(v) : 0L;
  }();
  return ms;
}

// path's data written back to the disk range by range (Linux
// sync_file_range), *stop looked at before each; h5::Stopped when it is set
void write_back_until_stopped(const std::string& path, const std::atomic<bool>& stop) {
  constexpr off_t kRange = off_t(8) << 20;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw std::runtime_error("cannot open '" + path + "' to sync it: " + std::strerror(errno));
  struct stat st {};
  const off_t size = ::fstat(fd, &st) == 0 ? st.st_size : 0;
  if (sync_pause_ms() > 0)  // (for a test to wait for)
    std::fprintf(stderr, "nholo: failpoint: writing '%s' back slowly\n", path.c_str());
  for (off_t at = 0; at < size; at += kRange) {
    if (stop.load()) {
      ::close(fd);
      throw h5::Stopped("stopped while writing '" + path + "' to disk");
    }
    if (sync_pause_ms() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(sync_pause_ms()));
    // (a failure here is found again by the fsync that follows)
    ::sync_file_range(fd, at, kRange,
                      SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                          SYNC_FILE_RANGE_WAIT_AFTER);
  }
  ::close(fd);
  if (stop.load()) throw h5::Stopped("stopped while writing '" + path + "' to disk");
}

}  // namespace

namespace {

void rename_file(const std::string& tmp, const std::string& final_path) {
  if (std::rename(tmp.c_str(), final_path.c_str()) != 0)
    throw std::runtime_error("cannot rename '" + tmp + "' to '" + final_path +
                             "': " + std::strerror(errno));
}

}  // namespace

void CommitHandoff::system_calls_only() {
  const std::lock_guard<std::mutex> lock(m_);
  system_calls_only_ = true;
}

bool CommitHandoff::abandon() {
  const std::lock_guard<std::mutex> lock(m_);
  abandoned_ = system_calls_only_;
  return abandoned_;
}

void CommitHandoff::rename(const std::string& tmp, const std::string& final_path) {
  const std::lock_guard<std::mutex> lock(m_);
  if (abandoned_) throw h5::Stopped("'" + tmp + "' was abandoned before its rename");
  rename_file(tmp, final_path);
}

void commit_file(const std::string& tmp, const std::string& final_path,
                 const std::atomic<bool>* stop, CommitHandoff* handoff) {
  if (stop) write_back_until_stopped(tmp, *stop);
  fsync_path(tmp);
  if (handoff)
    handoff->rename(tmp, final_path);
  else
    rename_file(tmp, final_path);
  const fs::path p(final_path);
  fsync_path(p.has_parent_path() ? p.parent_path().string() : std::string("."), true);
}

PieceDir::PieceDir(const std::string& output_path) {
  dir_ = pieces_dir_path(output_path);
  rel_ = pieces_dir_path(fs::path(output_path).filename().string());
}

std::string PieceDir::init_name(int64_t s) {
  return "init_" + std::to_string(s) + ".h5";
}
std::string PieceDir::window_name(int64_t s, int64_t w) {
  return "window_" + std::to_string(s) + "_" + std::to_string(w) + ".h5";
}
std::string PieceDir::slice_name(int64_t s) {
  return "slice_" + std::to_string(s) + ".h5";
}

bool PieceDir::has(const std::string& name) const {
  std::error_code ec;
  return fs::is_regular_file(path(name), ec);
}

std::set<std::string> PieceDir::committed() const {
  std::set<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_, ec))
    if (e.path().extension() != temporary_extension() && e.is_regular_file(ec))
      names.insert(e.path().filename().string());
  return names;
}

void PieceDir::create() const {
  std::error_code ec;
  fs::create_directory(dir_, ec);
  if (!fs::is_directory(dir_))
    throw std::runtime_error("cannot create the folder '" + dir_ + "'" +
                             (ec ? ": " + ec.message() : std::string()));
}

void PieceDir::remove_all() const {
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

std::string PieceDir::trash_prefix() const {
  const fs::path d(dir_);
  return (d.parent_path() / ("." + d.filename().string() + ".removing-")).string();
}

void PieceDir::remove_all_without_waiting() const {
  std::error_code ec;
  uintmax_t bytes = 0;
  for (const auto& e : fs::directory_iterator(dir_, ec))
    if (e.is_regular_file(ec)) bytes += e.file_size(ec);
  if (bytes <= kBackgroundRemovalBytes) return remove_all();
  const std::string trash = trash_prefix() + std::to_string(::getpid());
  fs::remove_all(trash, ec);  // (a pid's earlier folder: not ours to wait for)
  if (std::rename(dir_.c_str(), trash.c_str()) != 0) return remove_all();
  // a group of its own: a Ctrl-C to nholo's group does not stop it
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  const char* argv[] = {"rm", "-rf", "--", trash.c_str(), nullptr};
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, "rm", nullptr, &attr, const_cast<char* const*>(argv), environ);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) fs::remove_all(trash, ec);  // no rm: here, however long it takes
}

void PieceDir::remove_temporaries() const {
  std::error_code ec;
  if (!fs::is_directory(dir_, ec)) return;
  for (const auto& e : fs::directory_iterator(dir_, ec))
    if (e.path().extension() == temporary_extension()) fs::remove(e.path(), ec);
}

Piece::Piece(const PieceDir& dir, const std::string& name)
    : tmp_(temporary_path(dir.path(name))), final_(dir.path(name)) {
  std::error_code ec;
  fs::remove(tmp_, ec);  // a leftover of a killed run
  file_ = h5::File::create(tmp_);
}

Piece::~Piece() {
  if (committed_) return;
  try {
    file_ = h5::File();
  } catch (...) {
  }
  std::error_code ec;
  fs::remove(tmp_, ec);
}

void Piece::commit() {
  file_.close();
  commit_file(tmp_, final_);
  committed_ = true;
}

}  // namespace nholo
