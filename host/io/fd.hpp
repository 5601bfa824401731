// nholo/host/io/fd.hpp — a POSIX file descriptor with whole reads and
// writes at an offset, the syncs and the space claims the output needs
// (in_place_file.cpp), and the chunk-index walk's reads (h5_chunk_index.cpp).
// Every failure throws std::runtime_error naming the file.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace nholo {

// A file descriptor, closed when it goes.
class Fd {
 public:
  Fd(const std::string& path, int flags, mode_t mode = 0644)
      : fd_(::open(path.c_str(), flags | O_CLOEXEC, mode)), path_(path) {
    if (fd_ < 0) throw std::runtime_error("cannot open '" + path + "': " + std::strerror(errno));
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { ::close(fd_); }

  void pwrite_all(const void* data, uint64_t bytes, uint64_t offset) const {
    const char* p = static_cast<const char*>(data);
    while (bytes > 0) {
      const ssize_t r = ::pwrite(fd_, p, bytes, static_cast<off_t>(offset));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) fail("write");
      p += r;
      bytes -= static_cast<uint64_t>(r);
      offset += static_cast<uint64_t>(r);
    }
  }
  void pread_all(void* data, uint64_t bytes, uint64_t offset) const {
    char* p = static_cast<char*>(data);
    while (bytes > 0) {
      const ssize_t r = ::pread(fd_, p, bytes, static_cast<off_t>(offset));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) fail("read");
      if (r == 0) throw std::runtime_error("'" + path_ + "' ends before its expected size");
      p += r;
      bytes -= static_cast<uint64_t>(r);
      offset += static_cast<uint64_t>(r);
    }
  }
  uint64_t size() const {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) fail("inspect");
    return static_cast<uint64_t>(st.st_size);
  }
  // Starts writing [offset, offset + bytes) back to the disk now, without
  // waiting (Linux): the window's fdatasync then waits only for what is left,
  // and the disk works while the writer goes on with the next chunks.
  void start_writeback(uint64_t offset, uint64_t bytes) const {
#ifdef SYNC_FILE_RANGE_WRITE
    (void)::sync_file_range(fd_, static_cast<off_t>(offset), static_cast<off_t>(bytes),
                            SYNC_FILE_RANGE_WRITE);
#else
    (void)offset;
    (void)bytes;
#endif
  }
  void sync_data() const {
    if (::fdatasync(fd_) != 0) fail("write to disk (fdatasync)");
  }
  void sync() const {
    if (::fsync(fd_) != 0) fail("write to disk (fsync)");
  }
  // Claims the blocks of [0, bytes) (nothing where the file system cannot).
  void allocate(uint64_t bytes) const {
    if (::fallocate(fd_, 0, 0, static_cast<off_t>(bytes)) == 0) return;
    if (errno == EOPNOTSUPP || errno == ENOSYS) return;
    throw std::runtime_error("cannot reserve the " + std::to_string(bytes) +
                             " bytes of the result file '" + path_ + "': " + std::strerror(errno));
  }
  void truncate(uint64_t bytes) const {
    if (::ftruncate(fd_, static_cast<off_t>(bytes)) != 0) fail("truncate");
  }

 private:
  [[noreturn]] void fail(const char* what) const {
    throw std::runtime_error(std::string("cannot ") + what + " '" + path_ +
                             "': " + std::strerror(errno));
  }
  int fd_;
  std::string path_;
};

}  // namespace nholo
