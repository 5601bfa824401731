// nholo/host/run/work_plan.cpp — the work plan of a run over many processes
// (host/run/work_plan.hpp).
#include "host/run/work_plan.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "host/config/config.hpp"
#include "host/io/file_names.hpp"
#include "host/io/output_path.hpp"
#include "kernels/window_layout.hpp"

namespace fs = std::filesystem;

namespace nholo {

namespace {

// "123" -> 123; false for anything but digits (no sign, no spaces)
bool parse_count(const std::string& s, int64_t& v) {
  if (s.empty() || s.size() > 18) return false;
  v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  return true;
}

}  // namespace

std::vector<ShardFile> find_shard_files(const std::string& output_path) {
  const fs::path p(output_path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  const std::string head = p.stem().string() + shard_infix(), ext = p.extension().string();
  const std::string partial = partial_suffix();
  std::map<std::pair<int64_t, int64_t>, ShardFile> by_range;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    bool is_partial = false;
    if (name.size() > partial.size() &&
        name.compare(name.size() - partial.size(), partial.size(), partial) == 0) {
      is_partial = true;
      name.resize(name.size() - partial.size());
    }
    if (name.rfind(head, 0) != 0 || name.size() <= head.size() + ext.size() ||
        name.compare(name.size() - ext.size(), ext.size(), ext) != 0)
      continue;
    const std::string range = name.substr(head.size(), name.size() - head.size() - ext.size());
    const size_t dash = range.find('-');
    int64_t b = 0, en = 0;
    if (dash == std::string::npos || !parse_count(range.substr(0, dash), b) ||
        !parse_count(range.substr(dash + 1), en))
      continue;
    ShardFile& f = by_range[{b, en}];
    f.path = p.has_parent_path() ? (dir / name).string() : name;
    f.begin = b;
    f.end = en;
    (is_partial ? f.partial : f.complete) = true;
  }
  std::vector<ShardFile> v;
  for (auto& kv : by_range) v.push_back(kv.second);
  return v;
}

int64_t default_parcel_blocks(int64_t size, int ranks) {
  const int64_t blocks = (size + kStatBlock - 1) / kStatBlock;
  const int64_t want = 4 * std::max(1, ranks);
  return std::clamp<int64_t>((blocks + want - 1) / want, 1, 1024);
}

std::vector<Parcel> plan_parcels(int64_t size, int64_t parcel_blocks,
                                 const std::vector<ShardFile>& found) {
  if (parcel_blocks < 1)
    throw ConfigError("--chunk-blocks", "must be at least 1 (a block is 1024 trajectories)");
  std::vector<ShardFile> f = found;
  std::sort(f.begin(), f.end(),
            [](const ShardFile& a, const ShardFile& b) { return a.begin < b.begin; });
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i].begin < 0 || f[i].end > size || f[i].begin >= f[i].end || f[i].begin % kStatBlock != 0 ||
        (f[i].end % kStatBlock != 0 && f[i].end != size))
      throw ConfigError("--resume", "'" + f[i].path + "' holds trajectories [" +
                                        std::to_string(f[i].begin) + ", " + std::to_string(f[i].end) +
                                        "), which is not a block-aligned part of this ensemble of " +
                                        std::to_string(size) +
                                        "; move it away or pass --overwrite to discard it");
    if (i > 0 && f[i].begin < f[i - 1].end)
      throw ConfigError("--resume", "'" + f[i - 1].path + "' and '" + f[i].path +
                                        "' overlap (shards of two different cuts of the ensemble); "
                                        "merge or remove one of them by hand, or pass --overwrite "
                                        "to discard both");
  }
  const int64_t step = parcel_blocks * kStatBlock;
  std::vector<Parcel> parcels;
  auto fill = [&](int64_t b, int64_t e) {
    for (int64_t x = b; x < e; x += step)
      parcels.push_back({x, std::min(e, x + step), false, false});
  };
  int64_t at = 0;
  for (const auto& s : f) {
    fill(at, s.begin);
    parcels.push_back({s.begin, s.end, true, s.complete && !s.partial});
    at = s.end;
  }
  fill(at, size);
  return parcels;
}

WorkPlan make_plan(const RunConfig& cfg, const WorkRequest& req) {
  WorkPlan plan;
  const std::string& out = cfg.output_path;
  std::error_code ec;
  // --resume --overwrite: the shard files continued, OUT (another
  // configuration's) replaced by the merge at the end
  if (fs::exists(out)) {
    if (req.resume) {
      bool unreadable = false;
      if (config_hash_of(out, &unreadable) == cfg.result_hash) {
        plan.complete = true;
        return plan;
      }
      if (!req.overwrite)
        throw ConfigError("--resume", "'" + out +
                                          "' exists and is not the result of this "
                                          "configuration; choose another output.path, or pass "
                                          "--resume --overwrite to continue this configuration's "
                                          "shard files and replace it when they are merged");
    } else if (!req.overwrite) {
      throw ConfigError("output.path", "'" + out + "' exists; pass --overwrite to replace it");
    }
  }
  if (fs::exists(partial_path(out))) {
    if (!req.overwrite || req.resume)
      throw ConfigError("output.path",
                        "'" + partial_path(out) +
                            "' exists: the incomplete result of a "
                            "single-process run; continue it with `nholo run CONFIG "
                            "--resume` (one process), or pass --overwrite to discard it");
    fs::remove(partial_path(out), ec);
    fs::remove_all(pieces_dir_path(out), ec);
  }
  std::vector<ShardFile> found = find_shard_files(out);
  if (!found.empty() && !req.resume) {
    if (!req.overwrite) {
      std::string names;
      for (size_t i = 0; i < found.size() && i < 3; ++i)
        names += (i ? ", '" : "'") +
                 (found[i].complete ? found[i].path : partial_path(found[i].path)) + "'";
      if (found.size() > 3) names += " and " + std::to_string(found.size() - 3) + " more";
      throw ConfigError("output.path", "shard files of '" + out + "' exist (" + names +
                                           "), from an earlier run; pass --resume to continue "
                                           "them, or --overwrite to discard them");
    }
    for (const auto& s : found) {
      fs::remove(s.path, ec);
      fs::remove(partial_path(s.path), ec);
      fs::remove_all(pieces_dir_path(s.path), ec);
    }
    found.clear();
  }
  for (const auto& s : found) {
    // a shard of another configuration would only fail later, in its rank
    const std::string file = s.complete ? s.path : partial_path(s.path);
    std::string h;
    try {
      h = config_hash_of(file);
    } catch (const std::exception& e) {
      if (s.complete)
        throw ConfigError(
            "--resume",
            "'" + file + "' cannot be read (" + e.what() +
                "); move it away, or run with --overwrite alone to discard the shard files");
      continue;  // a .partial its rank could not finish writing: its run replaces it
    }
    if (h != cfg.result_hash)
      throw ConfigError(
          "--resume",
          "'" + file +
              "' is the result of another configuration (config "
              "hash " +
              h + ", this one " + cfg.result_hash +
              "); move it away, or run with --overwrite alone to discard the shard files");
  }
  const int64_t blocks = (cfg.size + kStatBlock - 1) / kStatBlock;
  int64_t pb = req.parcel_blocks;
  if (pb <= 0)
    pb = req.static_partition ? (blocks + req.ranks - 1) / req.ranks
                              : default_parcel_blocks(cfg.size, req.ranks);
  plan.parcels = plan_parcels(cfg.size, pb, found);
  return plan;
}

int static_owner(int64_t i, int64_t parcels, int ranks) {
  // rank r owns parcels [r*C/R, (r+1)*C/R): the inverse of that split
  int r = static_cast<int>(i * ranks / std::max<int64_t>(1, parcels));
  while (r + 1 < ranks && i >= (r + 1) * parcels / ranks) ++r;
  while (r > 0 && i < r * parcels / ranks) --r;
  return r;
}

}  // namespace nholo
