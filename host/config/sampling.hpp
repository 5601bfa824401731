// nholo/host/config/sampling.hpp — initial states (and per-trajectory parameters)
// of an ensemble: a pure function of the configuration and the model's
// description, so in config/ (whose validation reads state files and the
// distributions' bounds from here); the run (host/run/initial_states.hpp)
// draws its slices from it.
//
// Counter-based: the value of trajectory i is a pure function of (seed, i) —
// random draws hash (seed, i, dimension) with SplitMix64, Sobol points are
// computed directly from i — so any slice [begin, end) is generated alone, in
// any order, and the same seed gives the same states whatever the batch size
// or thread count.
//
//   Sampler s(cfg, model_info);
//   s.fill(begin, end, q0, qd0, lambda0);          // row-major [i * n + c]
//   s.fill(begin, end, q0, qd0, lambda0, &params); // and [i * nv + v]: the
//                                                  // varied parameters
//   s.q_given[c], s.qd_given[c]             // false: solve from the constraints
//   s.varied_params()                       // model parameter index of column v
// Grids are cartesian products in the order q0 (coordinate order), qd0,
// lambda0, params (the model's parameter order), the last listed varying
// fastest. Random and Sobol dimensions are numbered in the same order (the
// non-constant entries); Sobol uses up to 16, first point skipped. A derived
// parameter that varies (RunConfig::varied_params) is a column computed from
// the trajectory's other parameters (RunConfig::derive_params).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <ios>
#include <string>
#include <utility>
#include <vector>

#include "host/config/config.hpp"
#include "host/config/model_info.hpp"

namespace nholo {

// Rows of initial states in a state file (sampler = "file"): lines that are
// neither blank nor comments ('#'), after the header line. Throws ConfigError
// (key ensemble.file) when the file cannot be read or has no header or rows.
int64_t state_file_rows(const std::string& path);

// A state file read whole: the header's column names and the rows (every
// value a finite number, as many as the header has names); lines[r] is the
// file's line number of row r. Throws ConfigError (key ensemble.file).
// Its memory grows with the file: nholo itself streams it (below).
struct StateFile {
  std::vector<std::string> header;
  std::vector<std::vector<double>> rows;
  std::vector<int64_t> lines;
};
StateFile read_state_file(const std::string& path);
// The rows of a state file one at a time, checked as read_state_file checks
// them: row(r, values, line) for every row r from first (counted from 0) on,
// reading from the byte offset `from` (0: the start; else the offset of row
// first's line, as found by an earlier call); row returns false to stop.
// Returns the header. Memory: one line.
std::vector<std::string> for_each_state_row(
    const std::string& path,
    const std::function<bool(int64_t row, const std::vector<double>& values, int64_t line,
                             std::streamoff offset)>& row,
    int64_t first = 0, std::streamoff from = 0, int64_t first_line = 0);
// Only the header line of a state file (its column names).
std::vector<std::string> state_file_header(const std::string& path);

// Value k of a grid entry (linspace or values; a constant for the others).
double grid_value(const Distribution& d, int64_t k);
// The least and greatest value the sampler can draw from d: exact (the same
// floating-point formulas as the draws, which are monotone in their uniform
// variate or grid index), so a range check of the two covers every draw;
// -inf, +inf for a normal with std > 0.
std::pair<double, double> distribution_bounds(const Distribution& d);

class Sampler {
 public:
  Sampler(const RunConfig& cfg, const ModelInfo& mi);
  int64_t size() const { return size_; }
  // Fills trajectories [begin, end): q0[(i - begin) * n + c], qd0[...],
  // lambda0[(i - begin) * m + l] and, when params is given,
  // (*params)[(i - begin) * nv + v] for the nv = varied_params().size()
  // parameters that vary per trajectory. A set *stop (a signal) ends it
  // early, between two rows (what it filled is then not to be used). The
  // values drawn (each a function of its trajectory and column alone) are
  // drawn on `threads` threads: the same for any number; a state file is
  // read on one.
  void fill(int64_t begin, int64_t end, std::vector<double>& q0, std::vector<double>& qd0,
            std::vector<double>& lambda0, std::vector<double>* params = nullptr,
            const std::atomic<bool>* stop = nullptr, int threads = 1) const;
  std::vector<bool> q_given, qd_given;  // per coordinate
  // the model parameter (index into ModelInfo::params) of each column of the
  // varied parameters, in the model's order ([ensemble.params] entries and,
  // with sampler = "file", params.<name> columns)
  const std::vector<int>& varied_params() const { return varied_; }

 private:
  struct Spec {
    int group;  // 0: q0, 1: qd0, 2: lambda0, 3: params
    int index;  // coordinate / constraint index; for params the column v
    Distribution dist;
    int dim;    // random / sobol dimension (-1 for constants)
    int64_t stride, length;  // grid
    int column;  // file
  };
  double value(const Spec& s, int64_t i) const;
  // the derived parameters that vary (cfg.varied_params, cfg.derived_params)
  // made columns of their own, computed per trajectory from the others
  void add_derived_columns(const RunConfig& cfg);
  // one trajectory's row of varied parameters: its derived columns computed
  // (values: scratch for all the parameters)
  void derive_row(double* row, std::vector<double>& values) const;
  SamplerKind sampler_;
  uint64_t seed_;
  int64_t size_;
  int n_, m_;
  std::vector<Spec> specs_;
  std::vector<int> varied_;
  std::vector<std::string> pnames_;  // the model's parameters
  // with varied derived parameters: the derivation (RunConfig::derive_params),
  // every parameter's fixed value, and per column whether it is derived
  std::function<void(std::vector<double>&)> derive_;
  std::vector<double> base_params_;
  std::vector<bool> derived_column_;
  // sampler = "file": the file is streamed, never held: the byte offset and
  // line number of every kFileStride-th row, where fill() starts reading
  static constexpr int64_t kFileStride = 4096;
  std::string file_;
  std::vector<std::streamoff> file_offset_;
  std::vector<int64_t> file_line_;
};

// Sobol point i (i >= 0) in dimension d (0 <= d < kSobolMaxDims), in [0, 1).
constexpr int kSobolMaxDims = 16;
double sobol(uint64_t i, int d);
// Standard normal quantile (inverse CDF), 0 < p < 1.
double normal_quantile(double p);

}  // namespace nholo
