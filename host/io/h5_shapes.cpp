// nholo/host/io/h5_shapes.cpp — the parts of host/io/h5.hpp that only shape
// data through its public calls: tiles of a dataset (for_each_tile), chunk
// shapes (default_chunk) and dimension scales (dimension, index_dimension).
#include <algorithm>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "host/io/h5.hpp"

namespace nholo::h5 {

void for_each_tile(const std::vector<hsize_t>& dims, hsize_t max_elements,
                   const std::function<void(const std::vector<hsize_t>& offset,
                                            const std::vector<hsize_t>& count)>& fn) {
  const std::size_t rank = dims.size();
  if (rank == 0) {
    fn({}, {});
    return;
  }
  for (hsize_t d : dims)
    if (d == 0) return;
  max_elements = std::max<hsize_t>(max_elements, 1);
  // the axis to split: the first whose trailing block fits
  std::size_t a = rank - 1;
  hsize_t inner = 1;  // the elements of one index of axis a (the axes after it)
  for (std::size_t i = rank - 1; i > 0; --i) {
    if (dims[i] > max_elements / inner) break;
    inner *= dims[i];
    a = i - 1;
  }
  hsize_t step = std::min<hsize_t>(dims[a], std::max<hsize_t>(max_elements / inner, 1));
  if (step >= 1024 && step < dims[a]) step -= step % 1024;
  std::vector<hsize_t> off(rank, 0), cnt(dims);
  for (std::size_t i = 0; i < a; ++i) cnt[i] = 1;
  for (;;) {
    for (hsize_t b = 0; b < dims[a]; b += step) {
      off[a] = b;
      cnt[a] = std::min(step, dims[a] - b);
      fn(off, cnt);
    }
    // the next index of the axes before a (odometer)
    std::size_t i = a;
    while (i > 0) {
      --i;
      if (++off[i] < dims[i]) break;
      off[i] = 0;
      if (i == 0) return;
    }
    if (a == 0) return;
  }
}

Dataset dimension(Group& g, const std::string& name, const std::vector<double>& values) {
  Dataset d = g.create_dataset<double>(name, {values.size()});
  d.write(values);
  d.make_scale(name);
  return d;
}

Dataset dimension(Group& g, const std::string& name, const std::vector<std::int64_t>& values) {
  Dataset d = g.create_dataset<std::int64_t>(name, {values.size()});
  d.write(values);
  d.make_scale(name);
  return d;
}

Dataset dimension(Group& g, const std::string& name, const std::vector<std::string>& values) {
  Dataset d = g.create_string_dataset(name, values);
  d.make_scale(name);
  return d;
}

Dataset index_dimension(Group& g, const std::string& name, hsize_t n) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int64_t>(i);
  return dimension(g, name, v);
}

std::vector<hsize_t> default_chunk(const std::vector<hsize_t>& dims, std::size_t bytes_per_element,
                                   const std::vector<hsize_t>& block, std::size_t target_bytes) {
  if (!block.empty() && block.size() != dims.size())
    throw std::runtime_error("nholo::h5: default_chunk: block rank " +
                             std::to_string(block.size()) + " != dataset rank " +
                             std::to_string(dims.size()));
  // Start from the block (clamped to the dataset), the largest aligned chunk.
  std::vector<hsize_t> base(dims.size()), c(dims.size());
  for (std::size_t i = 0; i < dims.size(); ++i) {
    hsize_t b = block.empty() ? dims[i] : std::min(block[i], dims[i]);
    base[i] = c[i] = std::max<hsize_t>(b, 1);
  }
  const hsize_t target =
      std::max<hsize_t>(target_bytes / std::max<std::size_t>(bytes_per_element, 1), 1);
  while (Dataset::product(c) > target) {
    // The largest axis steps down to the next smaller divisor of its block size.
    std::size_t i = static_cast<std::size_t>(std::max_element(c.begin(), c.end()) - c.begin());
    if (c[i] <= 1) break;
    hsize_t d = c[i] - 1;
    while (d > 1 && base[i] % d != 0) --d;
    c[i] = d;
  }
  return c;
}

}  // namespace nholo::h5
