// nholo/kernels/reduce/block_moments.hpp — per-window moments of each block
// of kStatBlock trajectories, one work item per (block, save, component):
//
//   BlockMomentsKernel<S>{...}(j)   moments of block b, save k, component c
//                                   (j = (b ns + k) nc + c)
//
// Moments of a block are accumulated one trajectory at a time, in index order,
// with Welford's update (count, mean, M2 = sum of squared deviations, min,
// max), skipping non-finite values (failed trajectories). The host merges the
// blocks in block order with Chan's formulas (host/io/statistics.hpp), so the
// result does not depend on how the ensemble was sliced, on the thread count
// or on the device: each block is one sequential loop, the same on all.
#pragma once

#include <stdint.h>

#include "kernels/window_layout.hpp"

namespace nholo {

// Moments of one (block, save, component) of a window:
//   out_{count,mean,m2,min,max}[(b ns + k) nc + c]
template <class S>
struct BlockMomentsKernel {
  const S* v;             // the window's values
  bool trajectory_major;  // layout of v
  int64_t count;          // trajectories in the slice (blocks of kStatBlock from 0)
  int64_t ns;             // saves in the window
  int nc;                 // components per save
  double* out_count;
  double* out_mean;
  double* out_m2;
  double* out_min;
  double* out_max;

  NHOLO_HD void operator()(int64_t j) const {
    const int c = static_cast<int>(j % nc);
    const int64_t k = (j / nc) % ns;
    const int64_t b = j / (nc * ns);
    const int64_t i0 = b * kStatBlock;
    const int64_t i1 = i0 + kStatBlock < count ? i0 + kStatBlock : count;
    double n = 0, mean = 0, m2 = 0, mn = HUGE_VAL, mx = -HUGE_VAL;
    for (int64_t i = i0; i < i1; ++i) {
      const double x =
          static_cast<double>(v[window_index(trajectory_major, k, c, nc, i, ns, count)]);
      if (!isfinite(x)) continue;
      // Welford: the same operations, in the same order, as Moments::add
      n += 1;
      const double d = x - mean;
      mean += d / n;
      m2 += d * (x - mean);
      mn = x < mn ? x : mn;
      mx = mx < x ? x : mx;
    }
    out_count[j] = n;
    out_mean[j] = mean;
    out_m2[j] = m2;
    out_min[j] = mn;
    out_max[j] = mx;
  }
};

}  // namespace nholo
