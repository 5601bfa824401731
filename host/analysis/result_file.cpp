// nholo/host/analysis/result_file.cpp — checking and reading result files
// (host/analysis/result_file.hpp).
#include "host/analysis/result_file.hpp"

#include <stdexcept>

namespace nholo {

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
