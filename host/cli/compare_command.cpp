// nholo/host/cli/compare_command.cpp — `nholo compare FILE [--formulations a,b]`:
// the file opened as a result file; the report is host/analysis/compare.cpp's.
#include <algorithm>

#include "host/analysis/compare.hpp"
#include "host/analysis/result_file.hpp"
#include "host/cli/commands.hpp"

namespace nholo {

std::string compare_command(const std::string& path, const std::vector<std::string>& formulations,
                            int64_t block) {
  block = std::max<int64_t>(block, 1);
  h5::File f = open_result(path);
  return compare_report(f.root(), path, formulations, block);
}

}  // namespace nholo
