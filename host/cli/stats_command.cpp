// nholo/host/cli/stats_command.cpp — `nholo stats FILE`: the file opened as a
// result file; the report is host/analysis/stats.cpp's.
#include <algorithm>

#include "host/analysis/result_file.hpp"
#include "host/analysis/stats.hpp"
#include "host/cli/commands.hpp"

namespace nholo {

std::string stats_command(const std::string& path, int64_t block) {
  block = std::max<int64_t>(block, 1);
  h5::File f = open_result(path);
  return stats_report(f.root(), path, block);
}

std::vector<std::string> optional_result_lines(const std::string& path) {
  h5::File f = open_result(path);
  return optional_result_lines(f.root(), path, kReadBlock);
}

}  // namespace nholo
