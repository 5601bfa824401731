// Tests of host/io/statistics.hpp: streaming moments, their merge, and bitwise
// independence of the slicing.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "host/io/statistics.hpp"

using namespace nholo;

namespace {

TEST(Moments, MatchTwoPassAndMergeAnyPartition) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> d(1e3, 2.0);  // large mean: cancellation-prone
  std::vector<double> x(10000);
  for (auto& v : x) v = d(rng);
  double mean = 0;
  for (double v : x) mean += v;
  mean /= x.size();
  double var = 0;
  for (double v : x) var += (v - mean) * (v - mean);
  var /= (x.size() - 1);
  Moments all;
  for (double v : x) all.add(v);
  EXPECT_NEAR(all.mean, mean, 1e-12 * std::abs(mean));
  EXPECT_NEAR(all.variance(), var, 1e-10 * var);
  // merge of an uneven partition
  Moments a, b, c;
  for (size_t i = 0; i < x.size(); ++i) (i < 17 ? a : i < 6000 ? b : c).add(x[i]);
  a.merge(b);
  a.merge(c);
  EXPECT_NEAR(a.mean, mean, 1e-12 * std::abs(mean));
  EXPECT_NEAR(a.variance(), var, 1e-10 * var);
  EXPECT_EQ(a.min, *std::min_element(x.begin(), x.end()));
  EXPECT_EQ(a.max, *std::max_element(x.begin(), x.end()));
  Moments empty;
  a.merge(empty);
  EXPECT_EQ(a.count, 10000);
}

// Slices made of whole kStatBlock blocks give bitwise-identical statistics,
// in either window layout.
TEST(FieldStatistics, IndependentOfSliceSize) {
  const int64_t N = 5 * kStatBlock + 123, T = 3;
  const int nc = 2;
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> data(N * T * nc);  // [i][k][c]
  for (auto& v : data) v = u(rng);
  data[7] = NAN;  // a failed trajectory is skipped
  auto run = [&](int64_t slice) {
    FieldStatistics fs(T, nc);
    for (int64_t b = 0; b < N; b += slice) {
      const int64_t e = std::min(N, b + slice), count = e - b;
      std::vector<double> soa(T * nc * count);
      for (int64_t k = 0; k < T; ++k)
        for (int c = 0; c < nc; ++c)
          for (int64_t i = 0; i < count; ++i) soa[(k * nc + c) * count + i] = data[((b + i) * T + k) * nc + c];
      fs.add_window(soa, count, 0, T);
    }
    return fs;
  };
  // the same slices handed over in trajectory-major order (the CPU backends' layout)
  auto run_tm = [&](int64_t slice) {
    FieldStatistics fs(T, nc);
    for (int64_t b = 0; b < N; b += slice) {
      const int64_t e = std::min(N, b + slice), count = e - b;
      std::vector<double> tm(data.begin() + b * T * nc, data.begin() + e * T * nc);
      fs.add_window(tm, count, 0, T, /*trajectory_major=*/true);
    }
    return fs;
  };
  const FieldStatistics a = run(kStatBlock), b = run(3 * kStatBlock), c = run(N);
  const FieldStatistics d = run_tm(kStatBlock), e = run_tm(2 * kStatBlock);
  for (int64_t k = 0; k < T; ++k)
    for (int cc = 0; cc < nc; ++cc) {
      for (const FieldStatistics* o : {&b, &c, &d, &e}) {
        EXPECT_EQ(0, std::memcmp(&a.at(k, cc), &o->at(k, cc), sizeof(Moments)));
      }
    }
  EXPECT_EQ(a.at(0, 1).count, N - 1);  // the NaN (i = 1, k = 0, c = 1) was skipped
}

// The model drift statistic's kernel (kernels/reduce.hpp): exact slope of a
// linear x(t), range of y, failed saves ignored, streamed over two windows.
TEST(LineFitKernel, ExactSlopeAndBandForLinearMotion) {
  const int64_t count = 2;
  const int n = 2;
  std::vector<double> acc(7 * count);
  LineFitResetKernel reset{count, acc.data()};
  for (int64_t i = 0; i < count; ++i) reset(i);
  for (int w = 0; w < 2; ++w) {
    const int64_t ns = 51;
    std::vector<double> times(ns), q(count * ns * n);  // trajectory-major
    for (int64_t k = 0; k < ns; ++k) {
      const double t = 0.1 * (w * ns + k);
      times[k] = t;
      q[(0 * ns + k) * n + 0] = 3.0 + 0.25 * t;
      q[(0 * ns + k) * n + 1] = std::sin(t);
      q[(1 * ns + k) * n + 0] = NAN;  // failed: ignored
      q[(1 * ns + k) * n + 1] = 0.0;
    }
    LineFitKernel<double> lf{q.data(), true, count, ns, n, 0, 1, times.data(), 5.0, acc.data()};
    for (int64_t i = 0; i < count; ++i) lf(i);
  }
  EXPECT_NEAR(line_fit_slope(acc.data(), count, 0), 0.25, 1e-14);
  EXPECT_NEAR(line_fit_range(acc.data(), count, 0), 2.0, 1e-3);  // sin over [0, 10.1] reaches close to +-1
  EXPECT_TRUE(std::isnan(line_fit_slope(acc.data(), count, 1)));
  EXPECT_TRUE(std::isnan(line_fit_range(acc.data(), count, 1)));
}

}  // namespace
