// nholo/kernels/reduce/line_fit.hpp — a streamed least-squares line fit per
// trajectory (a model's drift statistic), one work item per trajectory:
//
//   LineFitKernel<S>{...}(i)        running least-squares sums of one
//                                   coordinate against t, and the range of
//                                   another, trajectory i
//   LineFitResetKernel{...}(i)      their initial values
//   line_fit_slope, line_fit_range  the results from the sums
#pragma once

#include <stdint.h>

#include "kernels/window_layout.hpp"

namespace nholo {

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

// Slope of the fit and range of y from LineFitKernel's sums: NaN with fewer
// than two finite saves (no line, and a "range" of one point would read as a
// measured 0).
NHOLO_HDI double line_fit_slope(const double* acc, int64_t count, int64_t i) {
  const double n = acc[i], st = acc[count + i], sx = acc[2 * count + i], stt = acc[3 * count + i],
               stx = acc[4 * count + i];
  const double den = n * stt - st * st;
  return n >= 2 && den > 0 ? (n * stx - st * sx) / den : NAN;
}
NHOLO_HDI double line_fit_range(const double* acc, int64_t count, int64_t i) {
  return acc[i] >= 2 ? acc[6 * count + i] - acc[5 * count + i] : NAN;
}

}  // namespace nholo
