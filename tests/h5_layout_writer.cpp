// nholo/tests/h5_layout_writer.cpp — writes nholo's output layout (docs/usage.md,
// "Output (HDF5)") with synthetic values through host/io/h5.hpp, the way the real
// writer streams it: trajectory slices [b, e) x time windows [k0, k1), blocks
// written out of order, into chunks that do not line up with the blocks.
//
//   h5_layout_writer PATH [--partial]
//
// --partial leaves the last trajectory slice unwritten and `complete` = 0, as
// an interrupted run would. tests/python/test_h5_layout.py runs this program
// and reads the file with h5py and xarray; tests/test_h5_layout.cpp includes this file
// (with NHOLO_H5_LAYOUT_NO_MAIN) and reads the same file back in C++.
//
// Layout (dimension scales are per group, so that every group opens on its
// own with xarray.open_dataset(path, engine="h5netcdf", group=...)):
//   /                      attrs model, formulations (string list), nholo_version,
//                          git_revision, config (full TOML text), created (ISO 8601 UTC),
//                          complete (int64: 0 while writing, 1 when finished)
//   /udwadia_kalaba/       trajectory(trajectory) int64 0..N-1
//                          time(time) double
//                          coordinate(coordinate) vlen UTF-8 names "x", "y", "phi", "theta"
//                          constraint(constraint) int64 0..m-1
//                          q, qdot (trajectory, time, coordinate) double
//                          multiplier (trajectory, time, constraint) double
//                          constraint_residual, energy (trajectory, time) double
//                          status (trajectory) int32 (fill -1: not finished)
//                          steps (trajectory) int64
//   /initial/              trajectory, coordinate; q0 (trajectory, coordinate)
//   /statistics/udwadia_kalaba/   time, coordinate; mean (time, coordinate)
//
// Synthetic values (i trajectory, k time index, c coordinate, j constraint):
//   time = 0.1 k,  q = 1000 i + k + 0.1 c,  qdot = -0.5 q,
//   multiplier = i + 0.01 k + 100 j,  constraint_residual = 1e-12 (i + 1)(k + 1),
//   energy = 1 + i + 0.25 k,  status = (i % 3 == 2),  steps = 100 + 10 i,
//   q0 = q(k = 0),  mean = mean over i of q.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <exception>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "host/io/h5.hpp"

namespace nholo::h5::layout_test {

struct Sizes {
  hsize_t trajectories = 10, times = 7, coordinates = 4, constraints = 2;
  hsize_t slice = 4, window = 3;  // block shape: trajectories x time indices
};

inline const std::vector<std::string>& coordinate_names() {
  static const std::vector<std::string> names = {"x", "y", "phi", "theta"};
  return names;
}

inline double time_value(hsize_t k) {
  return 0.1 * double(k);
}
inline double q_value(hsize_t i, hsize_t k, hsize_t c) {
  return 1000.0 * double(i) + double(k) + 0.1 * double(c);
}
inline double qdot_value(hsize_t i, hsize_t k, hsize_t c) {
  return -0.5 * q_value(i, k, c);
}
inline double multiplier_value(hsize_t i, hsize_t k, hsize_t j) {
  return double(i) + 0.01 * double(k) + 100.0 * double(j);
}
inline double residual_value(hsize_t i, hsize_t k) {
  return 1e-12 * double(i + 1) * double(k + 1);
}
inline double energy_value(hsize_t i, hsize_t k) {
  return 1.0 + double(i) + 0.25 * double(k);
}
inline std::int32_t status_value(hsize_t i) {
  return i % 3 == 2 ? 1 : 0;
}
inline std::int64_t steps_value(hsize_t i) {
  return 100 + 10 * std::int64_t(i);
}

inline const char* config_text() {
  return "model = \"rolling_coin\"\n"
         "formulations = [\"udwadia_kalaba\"]\n"
         "[params]\nslope = 0.3\n"
         "[time]\nt_end = 0.6\nsave_every = 0.1\n"
         "[integrator]\nmethod = \"dopri5\"\nrtol = 1e-10\natol = 1e-12\n"
         "[ensemble]\nsize = 10\nseed = 42\n"
         "[output]\npath = \"coin.h5\"  # \"quoted\", naïve UTF-8: φ θ\n";
}

inline std::string utc_now_iso() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Writes the layout to path (which must not exist). partial: the last
// trajectory slice is never written and `complete` stays 0.
inline void write_layout(const std::string& path, const Sizes& s = Sizes(), bool partial = false) {
  const hsize_t N = s.trajectories, T = s.times, n = s.coordinates, m = s.constraints;
  File file = File::create(path);
  Group root = file.root();

  // Root attributes; `complete` flips to 1 after the last block.
  root.set_attr("model", "rolling_coin");
  root.set_attr("formulations", std::vector<std::string>{"udwadia_kalaba"});
#ifdef NHOLO_VERSION
  root.set_attr("nholo_version", NHOLO_VERSION);
#else
  root.set_attr("nholo_version", "0.1.0");
#endif
  root.set_attr("git_revision", "unknown");
  root.set_attr("config", config_text());
  root.set_attr("created", utc_now_iso());
  root.set_attr("complete", std::int64_t{0});

  std::vector<double> times(T);
  for (hsize_t k = 0; k < T; ++k) times[k] = time_value(k);

  // /udwadia_kalaba: its own dimension scales, then the data variables.
  Group uk = root.create_group("udwadia_kalaba");
  Dataset trajectory = index_dimension(uk, "trajectory", N);
  Dataset time = dimension(uk, "time", times);
  time.set_attr("units", "s");
  Dataset coordinate = dimension(uk, "coordinate", coordinate_names());
  Dataset constraint = index_dimension(uk, "constraint", m);

  // Chunks deliberately misaligned with the blocks (partial-chunk writes).
  Dataset q = uk.create_dataset<double>("q", {N, T, n}, {3, 2, n});
  Dataset qdot = uk.create_dataset<double>("qdot", {N, T, n}, {3, 2, n});
  Dataset multiplier = uk.create_dataset<double>("multiplier", {N, T, m}, {3, 2, m});
  Dataset residual = uk.create_dataset<double>("constraint_residual", {N, T}, {3, 2});
  Dataset energy = uk.create_dataset<double>("energy", {N, T}, {3, 2});
  Dataset status = uk.create_dataset<std::int32_t>("status", {N}, {4}, 4, true, -1);
  Dataset steps = uk.create_dataset<std::int64_t>("steps", {N}, {4});
  for (Dataset* d : {&q, &qdot}) {
    d->attach_scale(trajectory, 0);
    d->attach_scale(time, 1);
    d->attach_scale(coordinate, 2);
  }
  multiplier.attach_scale(trajectory, 0);
  multiplier.attach_scale(time, 1);
  multiplier.attach_scale(constraint, 2);
  for (Dataset* d : {&residual, &energy}) {
    d->attach_scale(trajectory, 0);
    d->attach_scale(time, 1);
  }
  status.attach_scale(trajectory, 0);
  steps.attach_scale(trajectory, 0);
  q.set_attr("long_name", "generalized coordinates");
  status.set_attr("flag_meanings", "ok max_steps step_underflow non_finite singular");

  // /initial
  Group initial = root.create_group("initial");
  Dataset itraj = index_dimension(initial, "trajectory", N);
  Dataset icoord = dimension(initial, "coordinate", coordinate_names());
  Dataset q0 = initial.create_dataset<double>("q0", {N, n}, {4, n});
  q0.attach_scale(itraj, 0);
  q0.attach_scale(icoord, 1);

  // /statistics/udwadia_kalaba
  Group stats = root.create_group("statistics/udwadia_kalaba");
  Dataset stime = dimension(stats, "time", times);
  stime.set_attr("units", "s");
  Dataset scoord = dimension(stats, "coordinate", coordinate_names());
  Dataset mean = stats.create_dataset<double>("mean", {T, n}, {2, n});
  mean.attach_scale(stime, 0);
  mean.attach_scale(scoord, 1);

  // The blocks: slices x windows, visited out of order (stride 4 mod count).
  std::vector<std::pair<hsize_t, hsize_t>> slices, windows;
  for (hsize_t b = 0; b < N; b += s.slice) slices.push_back({b, std::min(N, b + s.slice)});
  for (hsize_t k0 = 0; k0 < T; k0 += s.window) windows.push_back({k0, std::min(T, k0 + s.window)});
  const std::size_t nblocks = slices.size() * windows.size();
  std::size_t stride = 4;
  while (std::gcd(stride, nblocks) != 1) ++stride;  // coprime: visits every block once

  for (std::size_t j = 0; j < nblocks; ++j) {
    const std::size_t idx = (j * stride) % nblocks;
    const std::size_t si = idx / windows.size(), wi = idx % windows.size();
    if (partial && si + 1 == slices.size()) continue;
    const auto [b, e] = slices[si];
    const auto [k0, k1] = windows[wi];
    const hsize_t nb = e - b, nk = k1 - k0;

    // Row-major blocks (trajectory, time, coordinate).
    std::vector<double> qb(nb * nk * n), qdb(nb * nk * n), mb(nb * nk * m), rb(nb * nk),
        eb(nb * nk);
    for (hsize_t i = 0; i < nb; ++i)
      for (hsize_t k = 0; k < nk; ++k) {
        for (hsize_t c = 0; c < n; ++c) {
          qb[(i * nk + k) * n + c] = q_value(b + i, k0 + k, c);
          qdb[(i * nk + k) * n + c] = qdot_value(b + i, k0 + k, c);
        }
        for (hsize_t c = 0; c < m; ++c)
          mb[(i * nk + k) * m + c] = multiplier_value(b + i, k0 + k, c);
        rb[i * nk + k] = residual_value(b + i, k0 + k);
        eb[i * nk + k] = energy_value(b + i, k0 + k);
      }
    q.write_block({b, k0, 0}, {nb, nk, n}, qb);
    qdot.write_block({b, k0, 0}, {nb, nk, n}, qdb);
    multiplier.write_block({b, k0, 0}, {nb, nk, m}, mb);
    residual.write_block({b, k0}, {nb, nk}, rb);
    energy.write_block({b, k0}, {nb, nk}, eb);

    // Per-slice outputs, once (with the slice's first window).
    if (k0 == 0) {
      std::vector<double> q0b(nb * n);
      std::vector<std::int32_t> sb(nb);
      std::vector<std::int64_t> stb(nb);
      for (hsize_t i = 0; i < nb; ++i) {
        for (hsize_t c = 0; c < n; ++c) q0b[i * n + c] = q_value(b + i, 0, c);
        sb[i] = status_value(b + i);
        stb[i] = steps_value(b + i);
      }
      q0.write_block({b, 0}, {nb, n}, q0b);
      status.write_block({b}, {nb}, sb);
      steps.write_block({b}, {nb}, stb);
    }
    // Statistics of a window, once (with the window's first slice).
    if (b == 0) {
      std::vector<double> meanb(nk * n);
      for (hsize_t k = 0; k < nk; ++k)
        for (hsize_t c = 0; c < n; ++c) {
          double sum = 0;
          for (hsize_t i = 0; i < N; ++i) sum += q_value(i, k0 + k, c);
          meanb[k * n + c] = sum / double(N);
        }
      mean.write_block({k0, 0}, {nk, n}, meanb);
    }
    file.flush();  // what was written so far is readable after a crash
  }

  if (!partial) root.set_attr("complete", std::int64_t{1});
  file.close();
}

}  // namespace nholo::h5::layout_test

#ifndef NHOLO_H5_LAYOUT_NO_MAIN
int main(int argc, char** argv) {
  if (argc < 2 || argc > 3 || (argc == 3 && std::string(argv[2]) != "--partial")) {
    std::fprintf(stderr, "usage: %s PATH [--partial]\n", argv[0]);
    return 2;
  }
  try {
    nholo::h5::layout_test::write_layout(argv[1], {}, argc == 3);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "h5_layout_writer: %s\n", e.what());
    return 1;
  }
  return 0;
}
#endif
