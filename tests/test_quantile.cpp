// Tests of host/analysis/quantile.hpp: exact quantiles in bounded memory pick the same
// element as sorting every finite value (index floor(p (N - 1))), whatever
// the block size, the collection limit and the number of passes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "host/analysis/quantile.hpp"

using namespace nholo;

namespace {

const std::vector<double> kPs = {0.0, 0.05, 0.25, 0.5, 0.75, 0.95, 1.0, 0.999, 1e-9};

// What `nholo stats` did before: sort the finite values, take index floor(p (N - 1)).
std::vector<double> by_sorting(const std::vector<double>& x, const std::vector<double>& ps) {
  std::vector<double> fin;
  for (double v : x)
    if (std::isfinite(v)) fin.push_back(v);
  std::sort(fin.begin(), fin.end());
  std::vector<double> q;
  for (double p : ps)
    q.push_back(fin.empty() ? NAN : fin[static_cast<size_t>(p * (fin.size() - 1))]);
  return q;
}

// x read in blocks of `block` values; counts the values handed out and the
// largest block, to check the passes and the memory bound.
struct Source {
  const std::vector<double>& x;
  size_t block;
  int64_t values_read = 0;
  int64_t blocks() const { return static_cast<int64_t>((x.size() + block - 1) / block); }
  std::function<void(int64_t, std::vector<double>&)> reader() {
    return [this](int64_t i, std::vector<double>& v) {
      const size_t b = static_cast<size_t>(i) * block, e = std::min(x.size(), b + block);
      v.assign(x.begin() + static_cast<std::ptrdiff_t>(b),
               x.begin() + static_cast<std::ptrdiff_t>(e));
      values_read += static_cast<int64_t>(e - b);
    };
  }
};

void expect_same(const std::vector<double>& x, size_t block, QuantileOptions opt,
                 const char* what) {
  Source s{x, block};
  const std::vector<double> got = exact_quantiles(s.blocks(), s.reader(), kPs, opt);
  const std::vector<double> want = by_sorting(x, kPs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t j = 0; j < want.size(); ++j) {
    if (std::isnan(want[j])) {
      EXPECT_TRUE(std::isnan(got[j])) << what << " p = " << kPs[j];
    } else {
      // the same element: equal values (and so equal bits, -0 aside)
      EXPECT_EQ(got[j], want[j]) << what << " p = " << kPs[j] << " block " << block
                                 << " max_collect " << opt.max_collect << " bins " << opt.bins;
    }
  }
}

std::vector<double> random_values(size_t n, uint64_t seed, bool specials) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0.0, 1.0);
  std::uniform_int_distribution<int> pick(0, 19);
  std::vector<double> x(n);
  for (auto& v : x) {
    const int k = pick(rng);
    if (specials && k == 0)
      v = NAN;
    else if (specials && k == 1)
      v = (g(rng) > 0 ? 1 : -1) * std::numeric_limits<double>::infinity();
    else if (k < 6)
      v = std::round(g(rng) * 4) / 4;  // many duplicates
    else if (k == 6)
      v = g(rng) * 1e300;  // a huge range
    else if (k == 7)
      v = g(rng) * 1e-300;
    else
      v = g(rng);
  }
  return x;
}

TEST(Quantile, MatchesSortingOnRandomDataWithDuplicatesAndSpecials) {
  for (uint64_t seed : {1u, 2u, 3u}) {
    const std::vector<double> x = random_values(20000, seed, true);
    // everything at once, then forced through several passes and blocks
    expect_same(x, 1 << 20, {}, "one pass");
    expect_same(x, 7, {}, "small blocks");
    expect_same(x, 7, {100, 2}, "2 bins, 100 values held");
    expect_same(x, 333, {1, 2}, "one value held");
    expect_same(x, 64, {500, 16}, "16 bins");
    expect_same(x, 1, {4096, 4096}, "blocks of one value");
  }
}

TEST(Quantile, UsesBoundedMemoryAndFewPasses) {
  const std::vector<double> x = random_values(100000, 9, false);
  Source s{x, 1000};
  QuantileOptions opt;
  opt.max_collect = 1000;
  opt.bins = 256;
  const std::vector<double> got = exact_quantiles(s.blocks(), s.reader(), kPs, opt);
  const std::vector<double> want = by_sorting(x, kPs);
  for (size_t j = 0; j < want.size(); ++j) EXPECT_EQ(got[j], want[j]);
  // at most the count pass, ceil(64 / 8) histogram passes and the collect
  // passes (max_collect shared by the quantiles: up to one each)
  const int64_t passes = s.values_read / static_cast<int64_t>(x.size());
  EXPECT_EQ(s.values_read % static_cast<int64_t>(x.size()), 0);
  EXPECT_GE(passes, 2);
  EXPECT_LE(passes, 1 + 8 + static_cast<int64_t>(kPs.size()));
}

TEST(Quantile, AllEqualValues) {
  std::vector<double> x(5000, 2.5);
  x[17] = NAN;
  x[4000] = -INFINITY;
  expect_same(x, 10, {}, "all equal");
  expect_same(x, 10, {1, 2}, "all equal, one value held");
  // two distinct values, far more of each than may be held
  std::vector<double> y(5000, -1.0);
  for (size_t i = 0; i < y.size(); i += 3) y[i] = 1e10;
  expect_same(y, 13, {10, 2}, "two values");
  expect_same(y, 13, {10, 4096}, "two values, many bins");
}

TEST(Quantile, ExtremesAndSignedZeros) {
  const double big = std::numeric_limits<double>::max(),
               tiny = std::numeric_limits<double>::denorm_min();
  std::vector<double> x = {big, -big, tiny, -tiny, 0.0, 1.0, -1.0, big, -big, 3.0, NAN, INFINITY};
  for (size_t i = 0; i < 200; ++i) x.push_back(static_cast<double>(i % 7) - 3.0);
  expect_same(x, 5, {3, 2}, "extremes");
  expect_same(x, 5, {}, "extremes, one pass");
  // -0.0 and +0.0 are one value (either may be picked)
  std::vector<double> z = {-0.0, 0.0, -0.0, 0.0, 1.0};
  Source s{z, 2};
  const auto q = exact_quantiles(s.blocks(), s.reader(), {0.0, 0.5, 1.0}, {1, 2});
  EXPECT_EQ(q[0], 0.0);
  EXPECT_EQ(q[1], 0.0);
  EXPECT_EQ(q[2], 1.0);
}

TEST(Quantile, EmptyOrNoFiniteValuesGiveNaN) {
  std::vector<double> none;
  Source s{none, 4};
  for (double q : exact_quantiles(s.blocks(), s.reader(), kPs)) EXPECT_TRUE(std::isnan(q));
  std::vector<double> bad = {NAN, INFINITY, -INFINITY, NAN};
  Source t{bad, 3};
  for (double q : exact_quantiles(t.blocks(), t.reader(), kPs, {1, 2})) EXPECT_TRUE(std::isnan(q));
  // empty blocks among full ones
  std::vector<double> x = {3.0, 1.0, 2.0};
  const auto q = exact_quantiles(5,
                                 [&](int64_t i, std::vector<double>& v) {
                                   v.assign(i % 2 ? 0 : 1, x[static_cast<size_t>(i / 2)]);
                                 },
                                 {0.0, 0.5, 1.0}, {1, 2});
  EXPECT_EQ(q, (std::vector<double>{1.0, 2.0, 3.0}));
  EXPECT_TRUE(exact_quantiles(1, [](int64_t, std::vector<double>&) {}, {}).empty());
}

TEST(Quantile, OneValueAndRejectedOptions) {
  std::vector<double> x = {NAN, 4.0};
  Source s{x, 1};
  EXPECT_EQ(exact_quantiles(s.blocks(), s.reader(), {0.05, 0.95}, {1, 2}),
            (std::vector<double>{4.0, 4.0}));
  EXPECT_THROW(exact_quantiles(s.blocks(), s.reader(), {0.5}, {0, 2}), std::invalid_argument);
  EXPECT_THROW(exact_quantiles(s.blocks(), s.reader(), {0.5}, {1, 1}), std::invalid_argument);
}

}  // namespace
