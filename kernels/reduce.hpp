// nholo/kernels/reduce.hpp — every per-window reduction of an ensemble's
// outputs, run where the outputs are (GPU or CPU cores), so that only small
// results travel to the host. One work item per index, like the ensemble
// functor:
//
//   kernels/reduce/block_moments.hpp   BlockMomentsKernel: Welford moments per
//                                      block of kStatBlock trajectories
//   kernels/reduce/pair_distance.hpp   PairDistanceKernel: distance between
//                                      two formulations' trajectories
//   kernels/reduce/line_fit.hpp        LineFitKernel: a model's drift fit
// and the window layout they read (kernels/window_layout.hpp: kStatBlock,
// window_index, TransposeKernel).
#pragma once

#include "reduce/block_moments.hpp"
#include "reduce/line_fit.hpp"
#include "reduce/pair_distance.hpp"
#include "window_layout.hpp"
