// nholo/kernels/window_layout.hpp — where the values of an output window
// are: the statistics block (slices are whole numbers of kStatBlock
// trajectories), the index of one value in either layout, and the
// transposition from one layout to the other.
//
// Window layouts (kernels/ensemble.hpp): structure of arrays
// v[(k nc + c) count + i] (the GPU's coalesced stores) or trajectory-major
// v[(i ns + k) nc + c] (the file's order, written directly by CPU backends).
//
//   TransposeKernel<S>{...}(j)   one element SoA -> file layout (one work
//                                item per index, like the ensemble functor)
#pragma once

#include <stdint.h>

#include "scalar_math.hpp"

namespace nholo {

// Trajectories per statistics block: slices are whole numbers of blocks.
constexpr int64_t kStatBlock = 1024;

// index of component c (of nc) of save k (of ns) of trajectory i (of count)
NHOLO_HDI int64_t window_index(bool trajectory_major, int64_t k, int c, int nc, int64_t i,
                               int64_t ns, int64_t count) {
  return trajectory_major ? (i * ns + k) * nc + c : (k * nc + c) * count + i;
}

// SoA window src[(k nc + c) count + i] -> file layout dst[(i ns + k) nc + c];
// one item per destination element, so consecutive items write consecutive
// addresses (coalesced stores on a GPU; the reads are strided).
template <class S>
struct TransposeKernel {
  const S* src;
  S* dst;
  int64_t count, ns;
  int nc;
  NHOLO_HD void operator()(int64_t j) const {
    const int c = static_cast<int>(j % nc);
    const int64_t k = (j / nc) % ns;
    const int64_t i = j / (nc * ns);
    dst[j] = src[(k * nc + c) * count + i];
  }
};

}  // namespace nholo
