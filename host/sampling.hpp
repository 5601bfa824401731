// nholo/host/sampling.hpp — initial states of an ensemble.
//
// Counter-based: the value of trajectory i is a pure function of (seed, i) —
// random draws hash (seed, i, dimension) with SplitMix64, Sobol points are
// computed directly from i — so any slice [begin, end) is generated alone, in
// any order, and the same seed gives the same states whatever the batch size
// or thread count.
//
//   Sampler s(cfg, model_info);
//   s.fill(begin, end, q0, qd0, lambda0);   // row-major [i * n + c]
//   s.q_given[c], s.qd_given[c]             // false: solve from the constraints
// Grids are cartesian products in the order q0 (coordinate order), qd0,
// lambda0, the last listed varying fastest. Sobol uses up to 16 dimensions
// (the non-constant entries), first point skipped.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "host/config.hpp"
#include "host/model_info.hpp"

namespace nholo {

// Rows of initial states in a state file (sampler = "file"): lines that are
// neither blank nor comments ('#'), after the header line. Throws ConfigError
// (key ensemble.file) when the file cannot be read or has no header or rows.
int64_t state_file_rows(const std::string& path);

class Sampler {
 public:
  Sampler(const RunConfig& cfg, const ModelInfo& mi);
  int64_t size() const { return size_; }
  // Fills trajectories [begin, end): q0[(i - begin) * n + c], qd0[...], lambda0[(i - begin) * m + l]
  void fill(int64_t begin, int64_t end, std::vector<double>& q0, std::vector<double>& qd0,
            std::vector<double>& lambda0) const;
  std::vector<bool> q_given, qd_given;  // per coordinate

 private:
  struct Spec {
    int group;  // 0: q0, 1: qd0, 2: lambda0
    int index;  // coordinate / constraint index
    Distribution dist;
    int dim;    // random / sobol dimension (-1 for constants)
    int64_t stride, length;  // grid
    int column;  // file
  };
  double value(const Spec& s, int64_t i) const;
  std::string sampler_;
  uint64_t seed_;
  int64_t size_;
  int n_, m_;
  std::vector<Spec> specs_;
  std::vector<std::vector<double>> file_rows_;
};

// Sobol point i (i >= 0) in dimension d (0 <= d < kSobolMaxDims), in [0, 1).
constexpr int kSobolMaxDims = 16;
double sobol(uint64_t i, int d);
// Standard normal quantile (inverse CDF), 0 < p < 1.
double normal_quantile(double p);

}  // namespace nholo
