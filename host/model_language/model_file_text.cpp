// nholo/host/model_language/model_file_text.cpp — read_model_file_text
// (host/model_language/model_file.hpp): a model file's text, read through the
// descriptor that was checked to be a regular file of at most 64 MiB.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "host/model_language/model_file.hpp"

namespace nholo {

namespace {
// The largest model file read (as a config file; docs/models.md, "Limits").
constexpr std::uintmax_t kMaxModelFileBytes = 64u << 20;
}  // namespace

std::string read_model_file_text(const std::string& path) {
  // a regular file of sane size (not /dev/zero, a FIFO or a folder), read
  // through the descriptor that was checked; O_NONBLOCK: a FIFO does not block
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw ModelFileError(path + ": cannot open the model file: " + std::strerror(errno));
  struct ::stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const char* kind = S_ISDIR(st.st_mode)    ? "a folder"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a file";
    ::close(fd);
    throw ModelFileError(path + ": not a regular file (" + kind + "): a model file is a TOML file");
  }
  if (static_cast<std::uintmax_t>(st.st_size) > kMaxModelFileBytes) {
    ::close(fd);
    throw ModelFileError(path + ": larger than 64 MiB (" + std::to_string(st.st_size) +
                         " bytes); a model file is accepted up to 64 MiB");
  }
  std::string text;
  char buf[1 << 16];
  for (;;) {
    const ssize_t got = ::read(fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      throw ModelFileError(path + ": cannot read the model file: " + why);
    }
    if (got == 0) break;
    text.append(buf, static_cast<size_t>(got));
    if (text.size() > kMaxModelFileBytes) break;
  }
  ::close(fd);
  if (text.size() > kMaxModelFileBytes)  // it grew while it was read
    throw ModelFileError(path + ": larger than 64 MiB (more than " + std::to_string(text.size()) +
                         " bytes); a model file is accepted up to 64 MiB");
  return text;
}

}  // namespace nholo
