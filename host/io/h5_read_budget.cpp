// nholo/host/io/h5_read_budget.cpp — the HDF5 layer's bound on what one read
// allocates (read_budget, host/io/h5.hpp): a damaged or crafted file that
// declares more than it stores is refused before anything is allocated.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "host/io/h5.hpp"
#include "host/io/h5_internal.hpp"

namespace nholo::h5 {

using internal::quiet;
using internal::where;

std::string shape_text(const std::vector<hsize_t>& dims) {
  std::string s = "(";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + ")";
}

namespace {

std::atomic<std::uint64_t> g_read_budget{0};  // 0: the default

std::uint64_t default_read_budget() {
  constexpr std::uint64_t cap = std::uint64_t(4) << 30;
  if (const char* env = std::getenv("NHOLO_READ_BUDGET_MB")) {
    char* end = nullptr;
    const unsigned long long mb = std::strtoull(env, &end, 10);
    if (end != env && *end == '\0' && mb > 0 && mb < (std::uint64_t(1) << 44)) return mb << 20;
  }
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return cap;
  return std::min(cap, static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) / 2);
}

}  // namespace

void set_read_budget(std::uint64_t bytes) {
  g_read_budget = bytes;
}

std::uint64_t read_budget() {
  const std::uint64_t b = g_read_budget;
  return b != 0 ? b : default_read_budget();
}

void Dataset::check_read_budget(const std::vector<hsize_t>& shape, std::size_t bytes_each) const {
  const std::uint64_t budget = read_budget();
  // the product saturates instead of wrapping around
  std::uint64_t bytes = bytes_each;
  for (hsize_t d : shape)
    bytes = d != 0 && bytes > std::numeric_limits<std::uint64_t>::max() / d
                ? std::numeric_limits<std::uint64_t>::max()
                : bytes * d;
  if (bytes <= budget) return;
  quiet();
  const auto mb = [](std::uint64_t b) {
    return std::to_string((b + (1u << 20) - 1) >> 20) + " MiB";
  };
  throw std::runtime_error("nholo::h5: cannot read " + shape_text(shape) + " values (" + mb(bytes) +
                           ", more than the read budget of " + mb(budget) +
                           ", NHOLO_READ_BUDGET_MB) of a dataset of shape " + shape_text(dims()) +
                           " that stores " + std::to_string(H5Dget_storage_size(id())) +
                           " bytes in the file (damaged or not written by nholo?): '" +
                           where(id(), "") + "'");
}

}  // namespace nholo::h5
