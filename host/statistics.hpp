// nholo/host/statistics.hpp — ensemble statistics computed as the ensemble
// streams, mergeable across slices (and, later, nodes).
//
//   Moments: count, mean, M2 (sum of squared deviations), min, max, updated
//   one value at a time (Welford) and merged pairwise (Chan et al.):
//     n = na + nb, delta = mb - ma, mean = ma + delta nb / n,
//     M2 = M2a + M2b + delta^2 na nb / n.
//   Determinism: values are accumulated in blocks of kStatBlock consecutive
//   trajectories, in index order, and blocks are merged in index order; slices
//   are whole numbers of blocks. The result is then bitwise independent of the
//   slice size and the thread count.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace nholo {

constexpr int64_t kStatBlock = 1024;

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
  // Window data in SoA layout v[(k * n_comp + c) * count + i], saves k0 + k.
  // v holds one window of n_saves saves: v[(k * n_comp + c) * count + i], or
  // v[(i * n_saves + k) * n_comp + c] when trajectory_major. Each trajectory
  // enters its (k, c) moments in the same order either way: same bits.
  void add_window(const std::vector<double>& v, int64_t count, int64_t k0, int64_t n_saves,
                  bool trajectory_major = false) {
    const int64_t stride = trajectory_major ? n_saves * n_comp_ : 1;
    for (int64_t k = 0; k < n_saves; ++k)
      for (int c = 0; c < n_comp_; ++c) {
        const double* row =
            v.data() + (trajectory_major ? k * n_comp_ + c : (k * n_comp_ + c) * count);
        // blocks of kStatBlock trajectories (slices start at multiples of it),
        // folded one by one in index order by end_slice()
        for (int64_t b = 0; b < count; b += kStatBlock) {
          Moments blk;
          const int64_t e = std::min(count, b + kStatBlock);
          for (int64_t i = b; i < e; ++i) {
            const double x = row[i * stride];
            if (std::isfinite(x)) blk.add(x);
          }
          pending_(k0 + k, c).push_back(blk);
        }
      }
  }
  // Fold the slices seen so far, in slice order (call after each slice).
  void end_slice() {
    for (size_t j = 0; j < m_.size(); ++j) {
      for (const Moments& s : pend_[j]) m_[j].merge(s);
      pend_[j].clear();
    }
  }
  const Moments& at(int64_t k, int c) const { return m_[k * n_comp_ + c]; }
  int n_comp() const { return n_comp_; }
  int64_t n_times() const { return n_comp_ ? static_cast<int64_t>(m_.size()) / n_comp_ : 0; }

 private:
  std::vector<Moments>& pending_(int64_t k, int c) {
    if (pend_.size() != m_.size()) pend_.resize(m_.size());
    return pend_[k * n_comp_ + c];
  }
  int n_comp_ = 0;
  std::vector<Moments> m_;
  std::vector<std::vector<Moments>> pend_;
};

// Least-squares slope of x(t) and the range of y, per trajectory, streamed
// over saves (times centred on t_mid to avoid cancellation).
struct DriftAccumulator {
  double t_mid = 0;
  std::vector<double> n, st, sx, stt, stx, ymin, ymax;
  void reset(int64_t count, double t_mid_) {
    t_mid = t_mid_;
    for (auto* v : {&n, &st, &sx, &stt, &stx}) v->assign(count, 0.0);
    ymin.assign(count, std::numeric_limits<double>::infinity());
    ymax.assign(count, -std::numeric_limits<double>::infinity());
  }
  void add(int64_t i, double t, double x, double y) {
    if (!std::isfinite(x) || !std::isfinite(y)) return;
    const double tc = t - t_mid;
    n[i] += 1;
    st[i] += tc;
    sx[i] += x;
    stt[i] += tc * tc;
    stx[i] += tc * x;
    ymin[i] = std::min(ymin[i], y);
    ymax[i] = std::max(ymax[i], y);
  }
  double slope(int64_t i) const {
    const double den = n[i] * stt[i] - st[i] * st[i];
    return n[i] >= 2 && den > 0 ? (n[i] * stx[i] - st[i] * sx[i]) / den : NAN;
  }
  double band(int64_t i) const { return n[i] >= 1 ? ymax[i] - ymin[i] : NAN; }
};

}  // namespace nholo
