// nholo/kernels/reduce/pair_distance.hpp — the distance between two
// formulations' trajectories, folded window by window, one work item per
// trajectory:
//
//   PairDistanceKernel<S>{...}(i)   max_k |qa - qb|, first save above the
//                                   threshold, trajectory i
#pragma once

#include <stdint.h>

#include "kernels/window_layout.hpp"

namespace nholo {

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

}  // namespace nholo
