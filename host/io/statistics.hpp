// nholo/host/io/statistics.hpp — ensemble statistics computed as the ensemble
// streams, mergeable across slices (and, later, nodes). In io/ with the
// block moments (block_moments.hpp) because they are what a result file's
// statistics are made of: the layout writes them, the outcome of a run and
// `nholo merge` fold them, `nholo stats` / `compare` (host/analysis/) read them.
//
//   Moments: count, mean, M2 (sum of squared deviations), min, max, updated
//   one value at a time (Welford) and merged pairwise (Chan et al.):
//     n = na + nb, delta = mb - ma, mean = ma + delta nb / n,
//     M2 = M2a + M2b + delta^2 na nb / n.
//   Determinism: values are accumulated in blocks of kStatBlock consecutive
//   trajectories, in index order (kernels/reduce.hpp BlockMomentsKernel, on
//   the device), and blocks are merged in index order; slices are whole
//   numbers of blocks, and every window covers all blocks of its slice, so
//   each (save, component) sees its blocks in global block order. The result
//   is then bitwise independent of the slice size, the thread count and the
//   device.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "host/io/block_moments.hpp"
#include "kernels/reduce.hpp"

namespace nholo {

struct Moments {
  double count = 0, mean = 0, m2 = 0;
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();

  void add(double x) {
    count += 1;
    const double d = x - mean;
    mean += d / count;
    m2 += d * (x - mean);
    min = std::min(min, x);
    max = std::max(max, x);
  }
  void merge(const Moments& o) {
    if (o.count == 0) return;
    if (count == 0) {
      *this = o;
      return;
    }
    const double n = count + o.count, d = o.mean - mean;
    mean += d * o.count / n;
    m2 += o.m2 + d * d * count * o.count / n;
    count = n;
    min = std::min(min, o.min);
    max = std::max(max, o.max);
  }
  double variance() const { return count > 1 ? m2 / (count - 1) : NAN; }
};

// Per (time, coordinate) moments over the ensemble, NaN values (failed
// trajectories) skipped.
class FieldStatistics {
 public:
  FieldStatistics() = default;
  FieldStatistics(int64_t n_times, int n_comp) : n_comp_(n_comp), m_(n_times * n_comp) {}
  // Window data v[(k * n_comp + c) * count + i] (SoA), or
  // v[(i * n_saves + k) * n_comp + c] when trajectory_major, saves k0 + k:
  // moments of each block of kStatBlock trajectories (kernels/reduce.hpp),
  // merged in block order. Each trajectory enters its (k, c) moments in the
  // same order in either layout: same bits.
  void add_window(const std::vector<double>& v, int64_t count, int64_t k0, int64_t n_saves,
                  bool trajectory_major = false) {
    const int64_t blocks = (count + kStatBlock - 1) / kStatBlock;
    const size_t len = static_cast<size_t>(blocks * n_saves * n_comp_);
    std::vector<double> out(5 * len);
    BlockMomentsKernel<double> k{v.data(),
                                 trajectory_major,
                                 count,
                                 n_saves,
                                 n_comp_,
                                 out.data(),
                                 out.data() + len,
                                 out.data() + 2 * len,
                                 out.data() + 3 * len,
                                 out.data() + 4 * len};
    for (int64_t j = 0; j < static_cast<int64_t>(len); ++j) k(j);
    add_block_moments(block_moment_parts(out.data(), len).part, count, k0, n_saves);
  }
  // Block moments of a window (BlockMomentsKernel's output: count, mean, M2,
  // min, max, each [(b * n_saves + k) * n_comp + c]) for saves k0 + k, folded
  // in block order.
  void add_block_moments(const double* const parts[5], int64_t count, int64_t k0, int64_t n_saves) {
    const int64_t blocks = (count + kStatBlock - 1) / kStatBlock;
    fold_block_moments(parts, blocks, n_saves, n_comp_, [&](int64_t k, int64_t c) -> Moments& {
      return m_[(k0 + k) * n_comp_ + c];
    });
  }
  const Moments& at(int64_t k, int c) const { return m_[k * n_comp_ + c]; }
  int n_comp() const { return n_comp_; }
  int64_t n_times() const { return n_comp_ ? static_cast<int64_t>(m_.size()) / n_comp_ : 0; }

 private:
  int n_comp_ = 0;
  std::vector<Moments> m_;
};

}  // namespace nholo
