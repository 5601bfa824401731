// nholo/host/io/block_moments.hpp — per-block moments as the reductions
// write them (kernels/reduce.hpp BlockMomentsKernel) and result files hold them
// (statistics/FORM/block_moments_q|qdot, shape (5, blocks, saves, components)),
// and the one fold of them: every (save, component) merges its blocks in block
// order (host/io/statistics.hpp explains why that order makes results
// bitwise independent of slices, threads and devices).
//
// Layout: five parts (count, mean, M2, min, max), part p of block b, save k,
// component c at parts[p][(b * n_saves + k) * n_comp + c]. A contiguous array
// of 5 * len values (a device slot, or a (5, nb, nk, n) slab read from a file)
// is split into its parts by block_moment_parts.
//
// The fold is a template over the accumulator (Moments, statistics.hpp: any
// type with count, mean, m2, min, max and merge(const Acc&)), so that this
// header depends on nothing and statistics.hpp may use it too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

namespace nholo {

// The five parts of a block-moment array, each `len` values long.
struct BlockMomentParts {
  const double* part[5] = {nullptr, nullptr, nullptr, nullptr, nullptr};
};

// The parts of a contiguous array of 5 * len values: count, mean, M2, min, max.
inline BlockMomentParts block_moment_parts(const double* data, size_t len) {
  BlockMomentParts p;
  for (size_t i = 0; i < 5; ++i) p.part[i] = data + i * len;
  return p;
}
inline BlockMomentParts block_moment_parts(const std::vector<double>& data) {
  return block_moment_parts(data.data(), data.size() / 5);
}

// Which blocks the fold merges.
enum class BlockFold {
  every_block,     // all (a finished window or shard: an empty block's count 0 merges as nothing)
  written_blocks,  // only blocks with count > 0 (a .partial's windows not written yet read NaN)
};

// Block j's moments (j = (b * n_saves + k) * n_comp + c) as an accumulator.
template <class Acc>
Acc block_moment(const double* const parts[5], size_t j) {
  Acc m;
  m.count = parts[0][j];
  m.mean = parts[1][j];
  m.m2 = parts[2][j];
  m.min = parts[3][j];
  m.max = parts[4][j];
  return m;
}

// For each save k < n_saves and component c < n_comp: acc_at(k, c) (an
// accumulator reference) merges blocks 0, 1, ..., blocks - 1 of (k, c), in
// that order. Called again with the next blocks, it continues the fold.
template <class AccAt>
void fold_block_moments(const double* const parts[5], int64_t blocks, int64_t n_saves,
                        int64_t n_comp, AccAt&& acc_at, BlockFold which = BlockFold::every_block) {
  for (int64_t k = 0; k < n_saves; ++k)
    for (int64_t c = 0; c < n_comp; ++c) {
      auto& acc = acc_at(k, c);
      using Acc = std::remove_reference_t<decltype(acc)>;
      for (int64_t b = 0; b < blocks; ++b) {
        const size_t j = static_cast<size_t>((b * n_saves + k) * n_comp + c);
        if (which == BlockFold::written_blocks && !(parts[0][j] > 0)) continue;
        acc.merge(block_moment<Acc>(parts, j));
      }
    }
}
template <class AccAt>
void fold_block_moments(const BlockMomentParts& parts, int64_t blocks, int64_t n_saves,
                        int64_t n_comp, AccAt&& acc_at, BlockFold which = BlockFold::every_block) {
  fold_block_moments(parts.part, blocks, n_saves, n_comp, std::forward<AccAt>(acc_at), which);
}

}  // namespace nholo
