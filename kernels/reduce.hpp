// nholo/kernels/reduce.hpp — per-window reductions of an ensemble's outputs,
// run where the outputs are (GPU or CPU cores), so that only small results
// travel to the host. One work item per index, like the ensemble functor:
//
//   expression                                   one item computes
//   BlockMomentsKernel<S>{...}(j)                 moments of block b, save k,
//                                                 component c (j = (b ns + k) nc + c)
//   PairDistanceKernel<S>{...}(i)                 max_k |qa - qb|, first save above
//                                                 the threshold, trajectory i
//   LineFitKernel<S>{...}(i)                      running least-squares sums of
//                                                 one coordinate against t, and
//                                                 the range of another, trajectory i
//   TransposeKernel<S>{...}(j)                    one element SoA -> file layout
//
// Window layouts (kernels/ensemble.hpp): structure of arrays
// v[(k nc + c) count + i] (the GPU's coalesced stores) or trajectory-major
// v[(i ns + k) nc + c] (the file's order, written directly by CPU backends).
//
// Moments of a block are accumulated one trajectory at a time, in index order,
// with Welford's update (count, mean, M2 = sum of squared deviations, min,
// max), skipping non-finite values (failed trajectories). The host merges the
// blocks in block order with Chan's formulas (host/analysis/statistics.hpp), so the
// result does not depend on how the ensemble was sliced, on the thread count
// or on the device: each block is one sequential loop, the same on all.
#pragma once

#include <stdint.h>

#include "config.hpp"

namespace nholo {

// Trajectories per statistics block: slices are whole numbers of blocks.
constexpr int64_t kStatBlock = 1024;

// index of component c (of nc) of save k (of ns) of trajectory i (of count)
NHOLO_HDI int64_t window_index(bool trajectory_major, int64_t k, int c, int nc, int64_t i,
                               int64_t ns, int64_t count) {
  return trajectory_major ? (i * ns + k) * nc + c : (k * nc + c) * count + i;
}

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

// Distance between two formulations' coordinates, save by save, folded into
// per-trajectory running results:
//   max_dist[i] = max over saves of |qa - qb|_2 (NaN saves skipped),
//   first_exceed[i] = first save time at which it exceeded `threshold`
//   (left as it is once set; NaN until then).
template <class S>
struct PairDistanceKernel {
  const S* qa;
  const S* qb;
  bool ta, tb;  // layouts of qa and qb
  int64_t count, ns;
  int n;
  const double* save_times;  // the window's times [ns]
  double threshold;
  double* max_dist;
  double* first_exceed;

  NHOLO_HD void operator()(int64_t i) const {
    double md = max_dist[i], fe = first_exceed[i];
    for (int64_t k = 0; k < ns; ++k) {
      double d2 = 0;
      for (int c = 0; c < n; ++c) {
        const double d = static_cast<double>(qa[window_index(ta, k, c, n, i, ns, count)]) -
                         static_cast<double>(qb[window_index(tb, k, c, n, i, ns, count)]);
        d2 += d * d;
      }
      const double d = sqrt(d2);
      if (isnan(d)) continue;
      md = md < d ? d : md;
      if (d > threshold && isnan(fe)) fe = save_times[k];
    }
    max_dist[i] = md;
    first_exceed[i] = fe;
  }
};

// Least-squares fit of coordinate `x` against time and the range of
// coordinate `y`, streamed over saves (a model's drift statistic, e.g. the
// rolling coin's horizontal drift velocity and downslope band). Times are
// centred on t_mid against cancellation. Per-trajectory sums, 7 arrays:
//   acc[0] n, acc[1] sum tc, acc[2] sum x, acc[3] sum tc^2, acc[4] sum tc x,
//   acc[5] min y, acc[6] max y;  acc[a * count + i].
template <class S>
struct LineFitKernel {
  const S* q;
  bool trajectory_major;
  int64_t count, ns;
  int n;
  int x, y;                  // coordinates fitted / ranged
  const double* save_times;  // [ns]
  double t_mid;
  double* acc;

  NHOLO_HD void operator()(int64_t i) const {
    double* a = acc;
    for (int64_t k = 0; k < ns; ++k) {
      const double xv =
          static_cast<double>(q[window_index(trajectory_major, k, x, n, i, ns, count)]);
      const double yv =
          static_cast<double>(q[window_index(trajectory_major, k, y, n, i, ns, count)]);
      if (!isfinite(xv) || !isfinite(yv)) continue;
      const double tc = save_times[k] - t_mid;
      a[0 * count + i] += 1;
      a[1 * count + i] += tc;
      a[2 * count + i] += xv;
      a[3 * count + i] += tc * tc;
      a[4 * count + i] += tc * xv;
      a[5 * count + i] = yv < a[5 * count + i] ? yv : a[5 * count + i];
      a[6 * count + i] = a[6 * count + i] < yv ? yv : a[6 * count + i];
    }
  }
};

// Initial value of LineFitKernel's sums for trajectory i.
struct LineFitResetKernel {
  int64_t count;
  double* acc;
  NHOLO_HD void operator()(int64_t i) const {
    for (int a = 0; a < 5; ++a) acc[a * count + i] = 0.0;
    acc[5 * count + i] = HUGE_VAL;
    acc[6 * count + i] = -HUGE_VAL;
  }
};

// Slope of the fit and range of y from LineFitKernel's sums (NaN where undefined).
NHOLO_HDI double line_fit_slope(const double* acc, int64_t count, int64_t i) {
  const double n = acc[i], st = acc[count + i], sx = acc[2 * count + i], stt = acc[3 * count + i],
               stx = acc[4 * count + i];
  const double den = n * stt - st * st;
  return n >= 2 && den > 0 ? (n * stx - st * sx) / den : NAN;
}
NHOLO_HDI double line_fit_range(const double* acc, int64_t count, int64_t i) {
  return acc[i] >= 1 ? acc[6 * count + i] - acc[5 * count + i] : NAN;
}

// SoA window src[(k nc + c) count + i] -> file layout dst[(i ns + k) nc + c];
// one item per destination element, so consecutive items write consecutive
// addresses (coalesced stores on a GPU; the reads are strided).
template <class S>
struct TransposeKernel {
  const S* src;
  S* dst;
  int64_t count, ns;
  int nc;
  NHOLO_HD void operator()(int64_t j) const {
    const int c = static_cast<int>(j % nc);
    const int64_t k = (j / nc) % ns;
    const int64_t i = j / (nc * ns);
    dst[j] = src[(k * nc + c) * count + i];
  }
};

}  // namespace nholo
