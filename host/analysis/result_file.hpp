// nholo/host/analysis/result_file.hpp — reading an nholo result file (complete,
// a .partial, or a shard) for stats, compare, diff and merge: opening it with
// an error that says why it is not one, its trajectories, and its
// per-trajectory datasets and block moments read a bounded block at a time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "host/config/config.hpp"
#include "host/io/h5.hpp"
#include "host/io/open_result.hpp"

namespace nholo {

// Per-trajectory values read at once by stats, compare and diff (and held
// at once by the quantiles of stats): their memory does not grow with the
// ensemble. Tests pass a smaller block to go through many blocks.
constexpr int64_t kReadBlock = int64_t(1) << 16;

// open_result, kMaxReadableEnsemble: host/io/open_result.hpp

// The trajectories a result file holds: a shard's range (root attributes
// shard_begin, shard_end), else the whole ensemble.
int64_t trajectories_in(const h5::Group& root, const std::string& path);

// A per-trajectory dataset of a result file: its shape must be the file's
// trajectories (a crafted shape cannot make a reader go past what the file
// says it holds).
void check_per_trajectory(const h5::Dataset& d, int64_t size, const std::string& path);
// A dataset a reader goes through value by value must store some of them:
// a file that declares values it holds none of is refused at once.
void check_stored(const h5::Dataset& d, const std::string& path);

// Per-trajectory datasets are read `block` values at a time (kReadBlock
// unless a test asks for less): memory does not grow with the ensemble.
// The number of blocks of `block` trajectories that cover `size`.
inline int64_t traj_blocks(int64_t size, int64_t block) {
  return (size + block - 1) / block;
}

// Block i (of `block` trajectories) of a per-trajectory dataset, into v.
template <class T>
void read_traj_block(const h5::Dataset& d, int64_t size, int64_t block, int64_t i,
                     std::vector<T>& v) {
  const int64_t b = i * block, e = std::min(size, b + block);
  v.resize(static_cast<size_t>(std::max<int64_t>(e - b, 0)));
  if (e > b) d.read_block({static_cast<hsize_t>(b)}, {static_cast<hsize_t>(e - b)}, v.data());
}

// Blocks [b0, b0 + nb) of saves [k0, k0 + nk) of a block-moments dataset
// (5, blocks, saves, n_comp) (statistics/FORM/block_moments_q|qdot): 5 * nb *
// nk * n_comp values in the layout of host/io/block_moments.hpp
// (block_moment_parts splits them, fold_block_moments folds them).
std::vector<double> read_block_moments(const h5::Dataset& d, hsize_t b0, hsize_t nb, hsize_t k0,
                                       hsize_t nk, hsize_t n_comp);

}  // namespace nholo
