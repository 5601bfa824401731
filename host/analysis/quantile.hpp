// nholo/host/analysis/quantile.hpp — exact quantiles of a sequence too large to hold,
// in bounded memory.
//
//   std::vector<double> q = exact_quantiles(blocks, read, {0.05, 0.5, 0.95});
//
// read(i, v) fills v with the values of block i (0 <= i < blocks; any number
// of values, blocks read in order, possibly several times). Only the finite
// values count (NaN and +-inf are skipped). Quantile p is the element that
// sorting the N finite values and taking index floor(p (N - 1)) gives — the
// same element, not an interpolation; NaN when N = 0.
//
// Memory: one block, a histogram of `bins` counts per quantile, and at most
// `max_collect` values. Passes over the data:
//   1. count the finite values and their least and greatest (collecting them
//      while there are at most max_collect: then this pass is the only one);
//   2. per quantile, the values inside its candidate interval are counted
//      into bins by comparison of their order-preserving 64-bit keys (exact;
//      bins split the key range evenly), the bin holding the wanted rank
//      becomes the new interval (at most ceil(64 / log2(bins)) such passes);
//   3. once an interval holds at most max_collect values (or one key), they
//      are collected and std::nth_element picks the element.
// -0.0 and +0.0 have one key (they are equal values).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <stdexcept>
#include <vector>

namespace nholo {

struct QuantileOptions {
  size_t max_collect = size_t(1) << 20;  // values held at once (>= 1)
  int bins = 4096;                       // histogram bins per pass (>= 2)
};

namespace quantile_detail {

// An unsigned key whose order is the order of the doubles (finite ones).
inline uint64_t key_of(double x) {
  if (x == 0) x = 0.0;  // -0.0 -> +0.0
  uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  return (u & (uint64_t(1) << 63)) ? ~u : u | (uint64_t(1) << 63);
}

inline double value_of(uint64_t k) {
  const uint64_t u = (k & (uint64_t(1) << 63)) ? k & ~(uint64_t(1) << 63) : ~k;
  double x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

}  // namespace quantile_detail

inline std::vector<double> exact_quantiles(
    int64_t blocks, const std::function<void(int64_t, std::vector<double>&)>& read,
    const std::vector<double>& ps, const QuantileOptions& opt = {}) {
  using quantile_detail::key_of;
  using quantile_detail::value_of;
  if (opt.max_collect < 1 || opt.bins < 2)
    throw std::invalid_argument("exact_quantiles: need max_collect >= 1 and bins >= 2");
  const size_t nq = ps.size();
  std::vector<double> result(nq, NAN);
  if (nq == 0) return result;
  std::vector<double> buf;

  // pass 1: count, least and greatest key; the values too while they fit
  int64_t n = 0;
  uint64_t kmin = std::numeric_limits<uint64_t>::max(), kmax = 0;
  std::vector<double> all;
  bool all_fit = true;
  for (int64_t b = 0; b < blocks; ++b) {
    buf.clear();
    read(b, buf);
    for (double x : buf) {
      if (!std::isfinite(x)) continue;
      ++n;
      const uint64_t k = key_of(x);
      kmin = std::min(kmin, k);
      kmax = std::max(kmax, k);
      if (all_fit) {
        if (all.size() < opt.max_collect) {
          all.push_back(x);
        } else {
          all_fit = false;
          std::vector<double>().swap(all);
        }
      }
    }
  }
  if (n == 0) return result;
  auto rank_of = [&](double p) {
    // the index sorting would pick: floor(p (N - 1)), as size_t arithmetic did
    const double r = p * static_cast<double>(static_cast<uint64_t>(n - 1));
    if (!(r >= 0)) return int64_t(0);
    return std::min<int64_t>(n - 1, static_cast<int64_t>(r));
  };
  if (all_fit) {
    for (size_t j = 0; j < nq; ++j) {
      const int64_t r = rank_of(ps[j]);
      std::nth_element(all.begin(), all.begin() + r, all.end());
      result[j] = all[static_cast<size_t>(r)];
    }
    return result;
  }

  // per quantile: the keys [lo, hi] that hold it, `below` values less than lo,
  // `inside` values in [lo, hi], and the rank wanted
  struct Cand {
    uint64_t lo, hi;
    int64_t below, inside, rank;
    bool done;
  };
  std::vector<Cand> cand(nq);
  for (size_t j = 0; j < nq; ++j) cand[j] = {kmin, kmax, 0, n, rank_of(ps[j]), false};
  const uint64_t bins = static_cast<uint64_t>(opt.bins);
  std::vector<std::vector<int64_t>> hist(nq);
  std::vector<int> shift(nq, 0);
  std::vector<std::vector<double>> coll(nq);
  for (;;) {
    // what each unresolved quantile does in this pass
    enum Mode { none, histogram, collect };
    std::vector<Mode> mode(nq, none);
    bool any = false;
    size_t collected_budget = opt.max_collect;
    for (size_t j = 0; j < nq; ++j) {
      Cand& c = cand[j];
      if (c.done) continue;
      if (c.lo == c.hi) {  // a single value
        result[j] = value_of(c.lo);
        c.done = true;
        continue;
      }
      any = true;
      if (static_cast<uint64_t>(c.inside) <= collected_budget) {
        // collect (several quantiles share the budget; the others wait)
        mode[j] = collect;
        collected_budget -= static_cast<size_t>(c.inside);
        coll[j].clear();
        coll[j].reserve(static_cast<size_t>(c.inside));
      } else {
        mode[j] = histogram;
        const uint64_t width = c.hi - c.lo;  // >= 1; bins of 2^shift keys
        int s = 0;
        while (s < 64 && (width >> s) >= bins) ++s;
        shift[j] = s;
        hist[j].assign(static_cast<size_t>((width >> s) + 1), 0);
      }
    }
    if (!any) break;
    for (int64_t b = 0; b < blocks; ++b) {
      buf.clear();
      read(b, buf);
      for (double x : buf) {
        if (!std::isfinite(x)) continue;
        const uint64_t k = key_of(x);
        for (size_t j = 0; j < nq; ++j) {
          if (mode[j] == none) continue;
          const Cand& c = cand[j];
          if (k < c.lo || k > c.hi) continue;
          if (mode[j] == histogram)
            ++hist[j][static_cast<size_t>((k - c.lo) >> shift[j])];
          else
            coll[j].push_back(x);
        }
      }
    }
    for (size_t j = 0; j < nq; ++j) {
      Cand& c = cand[j];
      if (mode[j] == collect) {
        std::vector<double>& v = coll[j];
        const int64_t r = c.rank - c.below;
        if (r < 0 || r >= static_cast<int64_t>(v.size()))
          throw std::runtime_error("exact_quantiles: the values changed between passes");
        std::nth_element(v.begin(), v.begin() + r, v.end());
        result[j] = v[static_cast<size_t>(r)];
        c.done = true;
        std::vector<double>().swap(v);
      } else if (mode[j] == histogram) {
        const std::vector<int64_t>& h = hist[j];
        int64_t below = c.below;
        size_t i = 0;
        while (i < h.size() && below + h[i] <= c.rank) below += h[i++];
        if (i == h.size())
          throw std::runtime_error("exact_quantiles: the values changed between passes");
        const uint64_t lo = c.lo + (static_cast<uint64_t>(i) << shift[j]);
        const uint64_t span = (uint64_t(1) << shift[j]) - 1;  // shift <= 63 (bins >= 2)
        if (c.hi - lo > span) c.hi = lo + span;
        c.lo = lo;
        c.below = below;
        c.inside = h[i];
        std::vector<int64_t>().swap(hist[j]);
      }
    }
  }
  return result;
}

}  // namespace nholo
