// nholo/host/cli/diff_command.cpp — `nholo diff A B [--rtol R]`: both files
// opened as result files; the comparison is host/analysis/diff.cpp's.
#include <algorithm>

#include "host/analysis/diff.hpp"
#include "host/analysis/result_file.hpp"
#include "host/cli/commands.hpp"

namespace nholo {

bool diff_command(const std::string& path_a, const std::string& path_b, double rtol,
                  std::string& report, int64_t block) {
  block = std::max<int64_t>(block, 1);
  h5::File fa = open_result(path_a), fb = open_result(path_b);
  return diff_results(fa.root(), fb.root(), path_a, path_b, rtol, block, report);
}

}  // namespace nholo
