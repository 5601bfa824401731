// nholo/host/io/merge.cpp — `nholo merge`: the outcome folded from the shards,
// in block order, and the merged file written with the run's output layout.
#include "host/io/merge.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "host/config/model_info.hpp"
#include "host/io/block_moments.hpp"
#include "host/io/device_info.hpp"
#include "host/io/file_names.hpp"
#include "host/io/h5.hpp"
#include "host/io/h5_library_faults.hpp"
#include "host/io/outcome.hpp"
#include "host/io/pieces.hpp"
#include "host/io/slice_plan.hpp"

namespace nholo {

namespace {

using detail::H;
using detail::kMergeBlock;
using detail::Outcome;

// The shard's root attributes that count trajectories, into sum.
void add_shard_counts(const h5::Group& r, RunSummary& sum) {
  sum.completed += r.attr_int64("completed_trajectories");
  sum.completed_from_constraints += r.attr_int64("initial_states_completed");
  sum.projected += r.attr_int64("initial_states_projected");
  sum.rejected += r.attr_int64("initial_states_rejected");
  sum.singular_initial += r.attr_int64("initial_states_singular");
  if (r.has_attr("initial_states_params_rejected"))
    sum.params_rejected += r.attr_int64("initial_states_params_rejected");
}

// What ran the shards, for the merged file's root attributes: their device
// when they agree, else the distinct values listed ("cuda, omp"); the
// shards' times, bytes and launches added up (wall_seconds: the sum of the
// shards' walls, not the merge's).
struct ShardDevices {
  std::vector<std::string> backends, names;
  int threads = 0;
  DeviceInfo first;
  bool first_read = false;

  void add(const h5::Group& r, RunSummary& sum) {
    const auto text = [&](const char* a) { return r.has_attr(a) ? r.attr_string(a) : "unknown"; };
    const auto number = [&](const char* a) { return r.has_attr(a) ? r.attr_double(a) : 0.0; };
    const auto count = [&](const char* a) { return r.has_attr(a) ? r.attr_int64(a) : int64_t(0); };
    for (auto [list, value] :
         {std::pair(&backends, text("backend")), std::pair(&names, text("device_name"))})
      if (std::find(list->begin(), list->end(), value) == list->end()) list->push_back(value);
    threads = std::max(threads, static_cast<int>(count("threads")));
    if (!first_read && r.has_attr("gpu")) {
      first.gpu = static_cast<int>(r.attr_int64("gpu"));
      first.compute_capability = text("compute_capability");
      first.driver_version = text("cuda_driver_version");
      first.runtime_version = text("cuda_runtime_version");
    }
    first_read = true;
    sum.seconds += number("wall_seconds");
    sum.output_seconds += number("output_seconds");
    sum.output_bytes += count("output_bytes");
    sum.compute_seconds += number("compute_seconds");
    sum.wait_seconds += number("output_wait_seconds");
    sum.device_busy_seconds += number("device_busy_seconds");
    sum.device_copy_seconds += number("device_copy_seconds");
    sum.launches += count("integration_launches");
    sum.cpu_tail_seconds += number("cpu_tail_seconds");
    sum.cpu_tail_trajectories += count("cpu_tail_trajectories");
  }

  // The device the merged file records (its backend when the shards agree
  // on one, else cpp, overwritten by backend_text())
  DeviceInfo device() const {
    DeviceInfo di = first;
    di.backend = Backend::cpp;
    for (Backend b : {Backend::omp, Backend::cpp, Backend::cuda})
      if (backends.size() == 1 && backends[0] == backend_name(b)) di.backend = b;
    di.name = join(names);
    di.threads = threads;
    return di;
  }
  std::string backend_text() const { return join(backends); }
};

// Formulation f of shard sh: statuses, steps and drift ratios, read in
// bounded blocks (kMergeBlock values), in trajectory order: the sums are
// those of reading the shard whole.
void add_shard_results(const ShardSource& sh, const h5::Group& r, const std::string& form, int f,
                       bool has_drift, Outcome& out, RunSummary& sum) {
  const int64_t count = sh.end - sh.begin;
  const h5::Dataset st = r.open_dataset(form + "/status");
  const h5::Dataset steps = r.open_dataset(form + "/steps");
  std::optional<h5::Dataset> ratio;
  if (has_drift) ratio = r.open_dataset("statistics/" + form + "/drift_ratio");
  for (int64_t b = 0; b < count; b += kMergeBlock) {
    const std::vector<hsize_t> off = {H(b)}, cnt = {H(std::min(count, b + kMergeBlock) - b)};
    for (int32_t x : st.read_block<int32_t>(off, cnt)) {
      if (x < 0 || x >= kStatusCount)
        throw ConfigError("merge", "'" + sh.path + "': " + form + "/status holds " +
                                       std::to_string(x) + ", not a status");
      ++out.status_count[f * kStatusCount + x];
    }
    for (int64_t k : steps.read_block<int64_t>(off, cnt)) sum.steps += k;
    if (ratio)
      for (double x : ratio->read_block<double>(off, cnt))
        if (std::isfinite(x)) out.drift_ratio[f].add(x);
  }
}

// Formulation f of shard sh: the block moments (5, blocks, saves, n), read
// in runs of blocks and saves, each (save, coordinate) folding its blocks
// in order.
void add_shard_moments(const ShardSource& sh, const h5::Group& r, const std::string& form, int f,
                       int64_t n_saves, int n, Outcome& out) {
  const int64_t count = sh.end - sh.begin;
  const int64_t blocks = (count + kStatBlock - 1) / kStatBlock;
  const int64_t per_save = 5 * static_cast<int64_t>(n);
  const int64_t ks = std::max<int64_t>(1, std::min<int64_t>(n_saves, kMergeBlock / per_save));
  const int64_t bs = std::max<int64_t>(1, kMergeBlock / (per_save * ks));
  for (int which = 0; which < 2; ++which) {
    const h5::Dataset bm =
        r.open_dataset("statistics/" + form + (which ? "/block_moments_qdot" : "/block_moments_q"));
    if (bm.dims() != std::vector<hsize_t>{5, H(blocks), H(n_saves), H(n)})
      throw ConfigError(
          "merge", "'" + sh.path + "': " + bm.path() + " is not (5, blocks, saves, coordinates)");
    for (int64_t b0 = 0; b0 < blocks; b0 += bs)
      for (int64_t k0 = 0; k0 < n_saves; k0 += ks) {
        const int64_t nb = std::min(blocks, b0 + bs) - b0;
        const int64_t nk = std::min(n_saves, k0 + ks) - k0;
        const std::vector<double> mom =
            bm.read_block<double>({0, H(b0), H(k0), 0}, {5, H(nb), H(nk), H(n)});
        (which ? out.st_qd : out.st_q)[f].add_block_moments(block_moment_parts(mom).part,
                                                            nb * kStatBlock, k0, nk);
      }
  }
}

// What the layout needs of the model, from the first shard: the sizes, and
// the drift statistic when the shard has one (statistics/<f>/drift_ratio,
// the group's attribute drift_prediction).
detail::LayoutShape shard_shape(const ModelInfo& mi, const RunConfig& cfg, const ShardSource& sh) {
  detail::LayoutShape shape;
  shape.n = static_cast<int>(mi.coordinates.size());
  shape.m = static_cast<int>(mi.constraints.size());
  const h5::File f = h5::File::open_ro(sh.path);
  const h5::Group r = f.root();
  const std::string sg = "statistics/" + cfg.formulations[0];
  shape.has_drift = r.exists(sg) && r.open_group(sg).exists("drift_ratio");
  if (shape.has_drift)
    shape.drift_prediction_doc = r.open_group(sg).attr_string("drift_prediction");
  return shape;
}

// Every dataset the merged file takes from the shards is in each shard, of
// the shape of the shard's range: a hand-edited shard (an events group
// deleted, a dataset replaced) is refused here instead of reading as fill
// through the merged file's virtual datasets.
void check_shard_datasets(const std::vector<detail::Spec>& specs,
                          const std::vector<ShardSource>& shards) {
  for (const auto& sh : shards) {
    const h5::File f = h5::File::open_ro(sh.path);
    const h5::Group r = f.root();
    for (const detail::Spec& sp : specs) {
      if (sp.master_only) continue;
      std::vector<hsize_t> want = sp.dims;
      const hsize_t b = H(sh.begin), e = H(sh.end), block = H(kStatBlock);
      want[sp.traj_axis] = sp.per_block ? (e - b + block - 1) / block : e - b;
      const std::string what = "'" + sh.path + "' is not a shard of this merge: ";
      if (!r.exists(sp.path))
        throw std::runtime_error(what + "it has no dataset /" + sp.path +
                                 ", which every shard of this configuration holds");
      const std::vector<hsize_t> got = r.open_dataset(sp.path).dims();
      if (got != want)
        throw std::runtime_error(what + "its /" + sp.path + " has the shape " +
                                 h5::shape_text(got) + ", not " + h5::shape_text(want) +
                                 " (its trajectories [" + std::to_string(sh.begin) + ", " +
                                 std::to_string(sh.end) + "))");
    }
  }
}

}  // namespace

RunSummary merge_shards(const RunConfig& cfg, const std::vector<ShardSource>& shards,
                        const std::string& out_path, bool copy, const std::atomic<bool>* stop) {
  const auto t_merge = detail::Clock::now();
  const ModelInfo& mi = *find_model(cfg.model);
  const int nf = static_cast<int>(cfg.formulations.size());
  const bool varied = !cfg.varied_params.empty();
  const detail::LayoutShape shape = shard_shape(mi, cfg, shards.at(0));
  const int n = shape.n;
  // the plan of a run of the whole ensemble (its slice size is recorded)
  const detail::SlicePlan plan = detail::plan_range(
      cfg, 0, n, shape.m, varied ? static_cast<int>(mi.params.size()) : 0, 0, cfg.size, 0);
  RunSummary sum;
  sum.trajectories = plan.size;
  sum.slice_size = plan.slice;
  // the outcome from the shards, in block order
  Outcome out = Outcome::empty(nf, plan.n_saves, n);
  ShardDevices devices;
  for (const auto& sh : shards) {
    const h5::File f = h5::File::open_ro(sh.path);
    const h5::Group r = f.root();
    add_shard_counts(r, sum);
    devices.add(r, sum);
    for (int f_ = 0; f_ < nf; ++f_) {
      add_shard_results(sh, r, cfg.formulations[f_], f_, shape.has_drift, out, sum);
      add_shard_moments(sh, r, cfg.formulations[f_], f_, plan.n_saves, n, out);
    }
  }
  detail::add_status_lines(out, cfg.formulations, sum);
  // the file, as virtual datasets over the shards (or a copy); the device it
  // records is what ran the shards
  const DeviceInfo di = devices.device();
  detail::LayoutSources sources;
  sources.path = out_path;
  sources.merged = shards;
  detail::OutputLayout layout(cfg, mi, di, plan, shape, sources);
  const std::string tmp = merging_path(out_path);
  std::error_code ec;
  std::filesystem::remove(tmp, ec);
  h5::remove_on_library_fault(tmp);  // (a shard HDF5 fails on: h5_library_faults.hpp)
  try {
    h5::File ff = h5::File::create(tmp);
    {
      h5::Group root = ff.root();
      layout.write(root, !copy, &out, &sum);
      // (the layout's datasets are known once it is written; the file is
      // still the temporary one, removed below if a shard lacks one)
      check_shard_datasets(layout.specs(), shards);
      // what check_merged_sources finds again on every read
      std::vector<std::string> names;
      std::vector<double> ranges, bytes;
      for (const auto& sh : shards) {
        names.push_back(sh.vds_file);
        ranges.push_back(static_cast<double>(sh.begin));
        ranges.push_back(static_cast<double>(sh.end));
        bytes.push_back(static_cast<double>(std::filesystem::file_size(sh.path)));
      }
      root.set_attr(kMergedShards, names);
      root.set_attr(kMergedShardRanges, ranges);
      root.set_attr(kMergedShardBytes, bytes);
      root.set_attr("merge", copy ? "copy" : "virtual");
      root.set_attr("backend", devices.backend_text());
      if (copy)
        for (const auto& sh : shards) {
          const h5::File sf = h5::File::open_ro(sh.path);
          const h5::Group sr = sf.root();
          for (const detail::Spec& sp : layout.specs()) {
            if (sp.master_only) continue;
            std::vector<hsize_t> off(sp.dims.size(), 0);
            off[sp.traj_axis] = H(sp.per_block ? sh.begin / kStatBlock : sh.begin);
            h5::Dataset dst = root.open_dataset(sp.path);
            h5::copy_into(sr.open_dataset(sp.path), dst, off, std::size_t(1) << 20, stop);
          }
        }
    }
    ff.close();
    commit_file(tmp, out_path, stop);
  } catch (...) {
    h5::remove_on_library_fault("");
    std::filesystem::remove(tmp, ec);
    throw;
  }
  h5::remove_on_library_fault("");
  sum.seconds = detail::seconds_since(t_merge);
  return sum;
}

void check_merged_sources(const h5::Group& root, const std::string& path) {
  if (!root.has_attr("merge") || root.attr_string("merge") != "virtual") return;
  namespace fs = std::filesystem;
  const auto names = root.attr_strings(kMergedShards);
  const std::vector<double> ranges =
      root.has_attr(kMergedShardRanges) ? root.attr_doubles(kMergedShardRanges) : std::vector<double>{};
  const std::vector<double> bytes =
      root.has_attr(kMergedShardBytes) ? root.attr_doubles(kMergedShardBytes) : std::vector<double>{};
  const bool recorded = ranges.size() == 2 * names.size() && bytes.size() == names.size();
  const std::string hash = root.attr_string("config_hash");
  const fs::path dir = fs::absolute(fs::path(path)).parent_path();
  const std::string advice =
      "; a merged file reads its trajectories from its shards, which stay beside it (or merge "
      "with --copy for a self-contained file)";
  for (size_t i = 0; i < names.size(); ++i) {
    const fs::path src = fs::path(names[i]).is_absolute() ? fs::path(names[i]) : dir / names[i];
    auto incomplete = [&](const std::string& why) {
      return std::runtime_error("'" + path + "' is incomplete: its shard '" + src.string() + "' " +
                                why + advice);
    };
    std::error_code ec;
    if (!fs::is_regular_file(src, ec)) throw incomplete("is missing");
    h5::File f;
    try {
      f = h5::File::open_ro(src.string());
    } catch (const std::exception& e) {
      throw incomplete(std::string("is not readable (") + e.what() + ")");
    }
    const h5::Group r = f.root();
    const std::string theirs = r.has_attr("config_hash") ? r.attr_string("config_hash") : "none";
    if (theirs != hash)
      throw incomplete("is foreign: a result of another configuration (config hash " + theirs +
                       ", not " + hash + ")");
    if (!recorded) continue;
    const auto b = static_cast<int64_t>(ranges[2 * i]), e = static_cast<int64_t>(ranges[2 * i + 1]);
    const int64_t rb = r.has_attr("shard_begin") ? r.attr_int64("shard_begin") : -1;
    const int64_t re = r.has_attr("shard_end") ? r.attr_int64("shard_end") : -1;
    if (rb != b || re != e)
      throw incomplete("is foreign: it holds trajectories [" + std::to_string(rb) + ", " +
                       std::to_string(re) + "), not [" + std::to_string(b) + ", " +
                       std::to_string(e) + ")");
    const auto size = static_cast<double>(fs::file_size(src, ec));
    if (ec || size != bytes[i])
      throw incomplete("has changed since the merge (" + std::to_string(static_cast<int64_t>(size)) +
                       " bytes, not " + std::to_string(static_cast<int64_t>(bytes[i])) + ")");
  }
}

}  // namespace nholo
