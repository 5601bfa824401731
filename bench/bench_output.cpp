// bench_output — the cost of output: the same run with and without the HDF5
// file, and a raw sequential write of the same bytes, side by side.
//
//   bench_output --config bench/output_coin.toml --n N --threads T --dir DIR [--reps R]
//                [--set KEY=VALUE ...]   (config overrides, as `nholo run --set`)
//
//   off   `nholo run` in-process in statistics-only mode (output.fields = []):
//         the same sampling, completion, device ensemble, reductions and
//         statistics, no per-save fields written
//   on    `nholo run` in-process with fields q and qdot (run_command: the same
//         computation plus the HDF5 file, chunked, with the default
//         output.compression = 0; the writer thread writes window w while
//         window w+1 integrates, host/io/output_sink.hpp)
//   on_deflate   the same with output.compression = 1 (shuffle + deflate 1)
//   raw   fwrite of as many bytes as the run's fields hold (N x saves x n x 8
//         per field), 1 MiB at a time, to a file in the same folder, then one
//         fsync and fclose (a run makes its result durable too)
//   h5_deflate, h5_plain   the same bytes written through host/io/h5.hpp as two
//         datasets (trajectory, time, coordinate) in the blocks nholo run
//         writes (all trajectories x one window of saves), chunked as nholo
//         run chunks them, with its filters (shuffle + deflate 1) and without
//         any: where the output time goes
// Output throughput = those bytes / the seconds nholo run itself spent in
// output, the final file included (RunSummary::output_seconds: transposition,
// writes, filters, commits; + assembly_seconds: completing or assembling the
// result file); (on - off) is reported as a cross-check. Compared with
// bytes / raw.
// One JSON line on stdout. With --reps R the fastest of R interleaved runs.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "host/cli/commands.hpp"
#include "host/config/config.hpp"
#include "host/config/model_info.hpp"
#include "host/io/h5.hpp"
#include "host/run/runner.hpp"
#include "models/rolling_coin.hpp"

using namespace nholo;

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The computation of `nholo run` without the per-save output: the same run
// in statistics-only mode (output.fields = []): the same sampling, device
// ensemble, reductions and statistics, no time series handed to HDF5.
double run_off(const RunConfig& cfg_on, const std::string& path) {
  RunConfig cfg = cfg_on;
  cfg.fields.clear();
  cfg.output_path = path;
  CommandOptions co;
  co.overwrite = true;
  co.quiet = true;
  const double t0 = now();
  run_command(cfg, co);
  const double dt = now() - t0;
  std::filesystem::remove(path);
  return dt;
}

double run_raw(const std::string& path, int64_t bytes) {
  std::vector<char> block(1 << 20, 1);
  const double t0 = now();
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) {
    std::fprintf(stderr, "bench_output: cannot write %s\n", path.c_str());
    std::exit(2);
  }
  for (int64_t done = 0; done < bytes;) {
    const size_t len = static_cast<size_t>(std::min<int64_t>(block.size(), bytes - done));
    if (std::fwrite(block.data(), 1, len, f) != len) {
      std::fprintf(stderr, "bench_output: write to %s failed\n", path.c_str());
      std::exit(2);
    }
    done += static_cast<int64_t>(len);
  }
  std::fflush(f);
  if (fsync(fileno(f)) != 0) {
    std::fprintf(stderr, "bench_output: fsync of %s failed\n", path.c_str());
    std::exit(2);
  }
  std::fclose(f);
  return now() - t0;
}

// q and qdot of `count` trajectories x `ns` saves, written window by window
// (W saves at a time) like host/run/runner.cpp, with or without its filters.
double run_h5(const std::string& path, int64_t count, int64_t ns, int W, bool filters) {
  constexpr int n = models::RollingCoin::n;
  // trajectory values carry full-precision mantissas: pseudo-random doubles
  // (xorshift64) in [-10, 10), as incompressible as real q, qdot
  std::vector<double> block(static_cast<size_t>(count) * W * n);
  uint64_t x = 88172645463325252ull;
  for (double& v : block) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v = -10.0 + 20.0 * static_cast<double>(x >> 11) * 0x1.0p-53;
  }
  std::filesystem::remove(path);
  const double t0 = now();
  {
    h5::File f = h5::File::create(path);
    h5::Group root = f.root();
    const hsize_t H = static_cast<hsize_t>(count), S = static_cast<hsize_t>(ns);
    const std::vector<hsize_t> chunk = {std::min<hsize_t>(H, 1024), std::min<hsize_t>(S, W), n};
    h5::Dataset dq = root.create_dataset<double>("q", {H, S, n}, chunk, filters ? 1 : 0, filters);
    h5::Dataset dqd =
        root.create_dataset<double>("qdot", {H, S, n}, chunk, filters ? 1 : 0, filters);
    for (int64_t k0 = 0; k0 < ns; k0 += W) {
      const hsize_t w = static_cast<hsize_t>(std::min<int64_t>(W, ns - k0));
      dq.write_block({0, static_cast<hsize_t>(k0), 0}, {H, w, n}, block.data());
      dqd.write_block({0, static_cast<hsize_t>(k0), 0}, {H, w, n}, block.data());
    }
  }
  const double dt = now() - t0;
  std::filesystem::remove(path);
  return dt;
}

}  // namespace

int main(int argc, char** argv) {
  std::string config = "bench/output_coin.toml", dir = "out";
  int64_t n = 10000;
  int threads = 1, reps = 1;
  std::vector<std::string> sets;
  for (int a = 1; a + 1 < argc; a += 2) {
    const std::string k = argv[a], v = argv[a + 1];
    if (k == "--set")
      sets.push_back(v);
    else if (k == "--config")
      config = v;
    else if (k == "--n")
      n = std::atoll(v.c_str());
    else if (k == "--threads")
      threads = std::atoi(v.c_str());
    else if (k == "--dir")
      dir = v;
    else if (k == "--reps")
      reps = std::atoi(v.c_str());
    else {
      std::fprintf(
          stderr,
          "bench_output: unknown option %s (accepted: --config --n --threads --dir --reps --set)\n",
          k.c_str());
      return 2;
    }
  }
  if ((argc - 1) % 2 != 0 || n < 1 || threads < 1 || reps < 1) {
    std::fprintf(stderr,
                 "usage: bench_output --config FILE --n N --threads T --dir DIR [--reps R]\n");
    return 2;
  }
  std::filesystem::create_directories(dir);
  const std::string h5 = dir + "/bench_output.h5", raw = dir + "/bench_output.raw";
  RunConfig cfg;
  try {
    sets.insert(sets.end(), {"ensemble.size=" + std::to_string(n),
                             "backend.threads=" + std::to_string(threads), "output.path=" + h5});
    cfg = load_config(config, sets);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_output: %s\n", e.what());
    return 2;
  }
  if (cfg.model != "rolling_coin") {
    std::fprintf(stderr, "bench_output: the config must use model rolling_coin\n");
    return 2;
  }
  const int64_t ns = static_cast<int64_t>(cfg.save_times.size());
  const int64_t bytes =
      n * ns * models::RollingCoin::n * 8 * static_cast<int64_t>(cfg.fields.size());
  if (cfg.fields.empty()) {
    std::fprintf(stderr, "bench_output: the config must write fields (output.fields)\n");
    return 2;
  }
  double off = 1e300, on = 1e300, on_z = 1e300, wr = 1e300, h5d = 1e300, h5p = 1e300;
  double z_bytes = 0, w_on = 1e300, w_z = 1e300;  // RunSummary::output_seconds
  double wait_on = 1e300;                         // RunSummary::wait_seconds
  double asm_on = 1e300;                          // RunSummary::assembly_seconds
  RunConfig cfg_z = cfg;
  cfg_z.compression = 1;
  cfg_z.output_path = dir + "/bench_output_z.h5";
  for (int r = 0; r < reps; ++r) {
    h5d = std::min(h5d, run_h5(dir + "/bench_output_deflate.h5", n, ns, cfg.window, true));
    h5p = std::min(h5p, run_h5(dir + "/bench_output_plain.h5", n, ns, cfg.window, false));
    off = std::min(off, run_off(cfg, dir + "/bench_output_off.h5"));
    CommandOptions co;
    co.overwrite = true;
    co.quiet = true;
    const double t0 = now();
    const RunSummary s_on = run_command(cfg, co);
    on = std::min(on, now() - t0);
    w_on = std::min(w_on, s_on.output_seconds + s_on.assembly_seconds);
    wait_on = std::min(wait_on, s_on.wait_seconds);
    asm_on = std::min(asm_on, s_on.assembly_seconds);
    const double t1 = now();
    const RunSummary s_z = run_command(cfg_z, co);
    on_z = std::min(on_z, now() - t1);
    w_z = std::min(w_z, s_z.output_seconds + s_z.assembly_seconds);
    if (s_on.output_bytes != bytes || s_z.output_bytes != bytes) {
      std::fprintf(stderr, "bench_output: nholo run wrote %lld bytes of fields, expected %lld\n",
                   static_cast<long long>(s_on.output_bytes), static_cast<long long>(bytes));
      return 1;
    }
    z_bytes = static_cast<double>(std::filesystem::file_size(cfg_z.output_path));
    std::filesystem::remove(cfg_z.output_path);
    wr = std::min(wr, run_raw(raw, bytes));
  }
  const double h5_bytes = static_cast<double>(std::filesystem::file_size(h5));
  std::filesystem::remove(raw);
  const double out_rate = bytes / w_on;
  const double raw_rate = bytes / wr;
  const double out_rate_z = bytes / w_z;
  std::printf(
      "{\"n\": %lld, \"threads\": %d, \"saves\": %lld, \"bytes\": %lld, \"h5_file_bytes\": %.0f, "
      "\"seconds_off\": %.6g, \"seconds_on\": %.6g, \"seconds_raw\": %.6g, "
      "\"output_bytes_per_s\": %.6g, \"raw_bytes_per_s\": %.6g, \"output_over_raw\": %.4g, "
      "\"seconds_h5_deflate\": %.6g, \"seconds_h5_plain\": %.6g, \"seconds_on_deflate\": %.6g, "
      "\"h5_deflate_file_bytes\": %.0f, \"output_deflate_bytes_per_s\": %.6g, "
      "\"seconds_writing\": %.6g, \"seconds_writing_deflate\": %.6g, \"seconds_waiting\": %.6g, "
      "\"seconds_assembling\": %.6g, \"assembling_share\": %.4g, \"on_over_off\": %.4g}\n",
      static_cast<long long>(n), threads, static_cast<long long>(ns), static_cast<long long>(bytes),
      h5_bytes, off, on, wr, out_rate, raw_rate, out_rate / raw_rate, h5d, h5p, on_z, z_bytes,
      out_rate_z, w_on, w_z, wait_on, asm_on, asm_on / on, on / off);
  return 0;
}
