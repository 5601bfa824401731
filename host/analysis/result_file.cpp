// nholo/host/analysis/result_file.cpp — opening and checking result files
// (host/analysis/result_file.hpp).
#include "host/analysis/result_file.hpp"

#include <filesystem>
#include <system_error>
#include <stdexcept>

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

int64_t trajectories_in(const h5::Group& root, const std::string& path) {
  const int64_t size = root.attr_int64("ensemble_size");
  if (!root.has_attr("shard_begin") || !root.has_attr("shard_end")) return size;
  const int64_t b = root.attr_int64("shard_begin"), e = root.attr_int64("shard_end");
  if (b < 0 || e > size || b >= e)
    throw std::runtime_error("'" + path + "' is not an nholo result file (shard_begin, shard_end " +
                             std::to_string(b) + ", " + std::to_string(e) +
                             " are not a range of the ensemble)");
  return e - b;
}

void check_per_trajectory(const h5::Dataset& d, int64_t size, const std::string& path) {
  if (d.dims() != std::vector<hsize_t>{static_cast<hsize_t>(size)})
    throw std::runtime_error("'" + path + "' is not an nholo result file (" + d.path() +
                             " does not have the shape (trajectories,))");
  check_stored(d, path);
}

void check_stored(const h5::Dataset& d, const std::string& path) {
  if (d.stores_nothing())
    throw std::runtime_error("'" + path + "' is damaged or not an nholo result file: " + d.path() +
                             " declares " + std::to_string(d.size()) +
                             " values but stores none of them (nholo writes every value of a "
                             "result; reading them would take long and give only fill values)");
}

std::vector<double> read_block_moments(const h5::Dataset& d, hsize_t b0, hsize_t nb, hsize_t k0,
                                       hsize_t nk, hsize_t n_comp) {
  return d.read_block<double>({0, b0, k0, 0}, {5, nb, nk, n_comp});
}

}  // namespace nholo
