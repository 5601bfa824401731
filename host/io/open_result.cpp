// nholo/host/io/open_result.cpp — opening a result file for reading
// (host/io/open_result.hpp).
#include "host/io/open_result.hpp"

#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "host/io/file_names.hpp"
#include "host/io/in_place_file.hpp"
#include "host/io/merge.hpp"

namespace fs = std::filesystem;

namespace nholo {

h5::File open_result(const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)  // a symlink loop, a folder not readable
    throw std::runtime_error("cannot open '" + path + "': " + ec.message());
  if (!fs::exists(st)) {
    // PATH or PATH.partial of a run in its last step (in_place_file.hpp)
    const std::string suffix = partial_suffix();
    const bool partial = path.size() > suffix.size() &&
                         path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
    const std::string output = partial ? path.substr(0, path.size() - suffix.size()) : path;
    if (last_step_stopped(output))
      throw std::runtime_error("cannot open '" + path + "': the run writing '" + output +
                               "' is in its last step, or was stopped there (its pieces are in '" +
                               pieces_dir_path(output) + "'); `nholo run CONFIG --resume` " +
                               "completes it");
    throw std::runtime_error("cannot open '" + path + "': no such file");
  }
  if (!fs::is_regular_file(st)) throw std::runtime_error("'" + path + "' is not a regular file");
  h5::File f;
  try {
    f = h5::File::open_ro(path);
  } catch (const std::exception& e) {
    throw std::runtime_error(
        "'" + path + "' is not an nholo result file (not a readable HDF5 file: " +
        h5::innermost_reason(e.what()) + ")");
  }
  const h5::Group root = f.root();
  for (const char* a : {"nholo_version", "model", "formulations", "coordinates", "ensemble_size"})
    if (!root.has_attr(a))
      throw std::runtime_error("'" + path +
                               "' is not an nholo result file (an HDF5 file without the root "
                               "attribute '" +
                               a + "' that nholo writes)");
  const int64_t size = root.attr_int64("ensemble_size");
  if (size < 1 || size > kMaxReadableEnsemble)
    throw std::runtime_error("'" + path + "' is not an nholo result file (ensemble_size " +
                             std::to_string(size) + " is not in [1, 2^34])");
  check_merged_sources(root, path);
  return f;
}

}  // namespace nholo
