// nholo/host/analysis/stats.cpp — `nholo stats FILE` (host/analysis/stats.hpp):
// each part of the report written by its own function, in the report's order.
#include "host/analysis/stats.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "host/analysis/quantile.hpp"
#include "host/analysis/result_file.hpp"
#include "host/config/trajectory_results.hpp"
#include "host/io/block_moments.hpp"
#include "host/io/statistics.hpp"
#include "kernels/status.hpp"

namespace nholo {
namespace {

// "PATH: model M, [shard: trajectories [b, e) of] N trajectories, complete|INCOMPLETE (why)"
void write_file_line(std::ostream& os, const h5::Group& root, const std::string& path) {
  os << path << ": model " << root.attr_string("model") << ", "
     << (root.has_attr("shard_begin") && root.has_attr("shard_end")
             ? "shard: trajectories [" + std::to_string(root.attr_int64("shard_begin")) + ", " +
                   std::to_string(root.attr_int64("shard_end")) + ") of "
             : std::string())
     << root.attr_int64("ensemble_size") << " trajectories, "
     << (root.attr_int64("complete") ? "complete"
         : root.has_attr("fault")
             ? "INCOMPLETE (the device failed: " + root.attr_string("fault") + ")"
         : root.has_attr("interrupted")
             ? std::string("INCOMPLETE (interrupted run)")
             : std::string("INCOMPLETE (a run in progress, or one that was killed: `nholo run "
                           "CONFIG --resume` continues it)"))
     << "\n";
}

// The parameters that vary per trajectory (/initial/params): their range over
// the ensemble (trajectories whose initial states are not written yet read
// NaN: skipped).
void write_varied_params(std::ostream& os, const h5::Group& root, const std::string& path,
                         int64_t size, int64_t block) {
  h5::Dataset pd = root.open_dataset("initial/params");
  const std::vector<hsize_t> d = pd.dims();
  const std::vector<std::string> names =
      pd.has_attr("names") ? pd.attr_strings("names") : std::vector<std::string>{};
  std::vector<std::string> units =
      pd.has_attr("units") ? pd.attr_strings("units") : std::vector<std::string>{};
  if (d.size() != 2 || d[0] != static_cast<hsize_t>(size) || d[1] < 1 || d[1] > 4096 ||
      names.size() != d[1])
    throw std::runtime_error("'" + path +
                             "' is not an nholo result file (/initial/params does not have the "
                             "shape (ensemble_size, parameters) with one name per parameter)");
  const size_t nv = d[1];
  units.resize(nv);
  std::vector<double> lo(nv, INFINITY), hi(nv, -INFINITY);
  std::vector<int64_t> count(nv, 0);
  const int64_t rows = std::max<int64_t>(1, block / static_cast<int64_t>(nv));
  for (int64_t b = 0; b < size; b += rows) {
    const int64_t e = std::min(size, b + rows);
    const auto v =
        pd.read_block<double>({static_cast<hsize_t>(b), 0}, {static_cast<hsize_t>(e - b), nv});
    for (size_t k = 0; k < v.size(); ++k) {
      if (std::isnan(v[k])) continue;
      lo[k % nv] = std::min(lo[k % nv], v[k]);
      hi[k % nv] = std::max(hi[k % nv], v[k]);
      ++count[k % nv];
    }
  }
  os << "parameters varied per trajectory (/initial/params):\n";
  for (size_t j = 0; j < nv; ++j) {
    os << "  " << std::left << std::setw(10) << names[j];
    if (count[j])
      os << " min " << std::setw(12) << lo[j] << " max " << std::setw(12) << hi[j];
    else
      os << " (none sampled yet)";
    os << (units[j].empty() ? "" : " [" + units[j] + "]") << " over " << count[j]
       << " trajectories\n";
  }
}

// "  status: ok N ...": the counts stored with the merged statistics, else
// (a .partial being written, or killed) counted here from the status dataset
// (missing slices read as not_run).
void write_status_line(std::ostream& os, const h5::Group& root, const h5::Group& sg,
                       const std::string& fname, bool merged, int64_t size, int64_t block,
                       const std::string& path) {
  os << "  status:";
  std::vector<int64_t> counts(kStatusCount, 0);
  if (!merged) {
    h5::Dataset st = root.open_dataset(fname + "/status");
    if (st.dims() != std::vector<hsize_t>{static_cast<hsize_t>(size)})
      throw std::runtime_error("'" + path + "' is not an nholo result file (" + fname +
                               "/status does not have the ensemble's size)");
    std::vector<int32_t> v;
    for (int64_t i = 0; i < traj_blocks(size, block); ++i) {
      read_traj_block(st, size, block, i, v);
      for (int32_t x : v)
        if (x >= 0 && x < kStatusCount) ++counts[x];
    }
  }
  for (int s = 0; s < kStatusCount; ++s) {
    const std::string a = std::string("status_") + status_name(static_cast<Status>(s));
    const int64_t c = merged ? (sg.has_attr(a) ? sg.attr_int64(a) : 0) : counts[s];
    if (c) os << " " << status_name(static_cast<Status>(s)) << " " << c;
  }
  os << "\n";
}

// Ensemble moments of every (save, coordinate): mean, variance, min, max,
// each [k * nc + c].
struct SaveMoments {
  std::vector<double> mean, var, min, max;
};

// A .partial's moments of the last save, merged here in block order from the
// block moments of the windows written so far (the other saves NaN); read
// block / nc blocks at a time.
SaveMoments fold_last_save(const h5::Group& sg, size_t nt, size_t nc, int64_t block,
                           const std::string& path) {
  h5::Dataset bm = sg.open_dataset("block_moments_q");
  const std::vector<hsize_t> d = bm.dims();
  if (d.size() != 4 || d[0] != 5 || d[2] != nt || d[3] != nc)
    throw std::runtime_error("'" + path +
                             "' is not an nholo result file (block_moments_q has "
                             "an unexpected shape)");
  const hsize_t blocks = d[1];
  const hsize_t step = std::max<hsize_t>(1, static_cast<hsize_t>(block) / nc);
  std::vector<Moments> acc(nc);
  for (hsize_t b0 = 0; b0 < blocks; b0 += step) {
    const hsize_t nb = std::min(step, blocks - b0);
    const std::vector<double> last = read_block_moments(bm, b0, nb, nt - 1, 1, nc);
    fold_block_moments(
        block_moment_parts(last), static_cast<int64_t>(nb), 1, static_cast<int64_t>(nc),
        [&](int64_t, int64_t c) -> Moments& { return acc[c]; }, BlockFold::written_blocks);
  }
  SaveMoments m;
  m.mean.assign(nt * nc, NAN);
  m.var = m.min = m.max = m.mean;
  for (size_t c = 0; c < nc; ++c) {
    const size_t j = (nt - 1) * nc + c;
    m.mean[j] = acc[c].count ? acc[c].mean : NAN;
    m.var[j] = acc[c].variance();
    m.min[j] = acc[c].count ? acc[c].min : NAN;
    m.max[j] = acc[c].count ? acc[c].max : NAN;
  }
  return m;
}

// One merged per-save moment (mean, variance, min, max) of shape (saves,
// coordinates), its shape checked before anything is read: a file that
// declares another size (a damaged or crafted one) is refused, not read.
std::vector<double> read_save_moment(const h5::Group& sg, const char* name, size_t nt, size_t nc,
                                     const std::string& path) {
  h5::Dataset d = sg.open_dataset(name);
  const std::vector<hsize_t> dims = d.dims();
  if (dims != std::vector<hsize_t>{nt, nc})
    throw std::runtime_error("'" + path + "' is not an nholo result file (" + sg.path() + "/" +
                             name + " has the shape " + h5::shape_text(dims) + ", not (" +
                             std::to_string(nt) + ", " + std::to_string(nc) +
                             "): the saves of the statistics time axis by the coordinates)");
  return d.read<double>();
}

// The statistics time axis, then the last save's moments of every
// coordinate over the ensemble.
void write_last_save(std::ostream& os, const h5::Group& sg, bool merged,
                     const std::vector<std::string>& coords, int64_t block,
                     const std::string& path) {
  h5::Dataset time_ds = sg.open_dataset("time");
  if (time_ds.dims().size() != 1 || time_ds.dims()[0] > 10000001)
    throw std::runtime_error("'" + path +
                             "' is not an nholo result file (statistics time axis of "
                             "an unexpected shape)");
  const auto time = time_ds.read<double>();
  const size_t nc = coords.size(), nt = time.size();
  if (nt == 0 || nc == 0)
    throw std::runtime_error("'" + path + "' is not an nholo result file (no saves)");
  SaveMoments m;
  if (merged) {
    m.mean = read_save_moment(sg, "mean", nt, nc, path);
    m.var = read_save_moment(sg, "variance", nt, nc, path);
    m.min = read_save_moment(sg, "min", nt, nc, path);
    m.max = read_save_moment(sg, "max", nt, nc, path);
  } else {
    m = fold_last_save(sg, nt, nc, block, path);
    os << "  (merged here from the windows written so far)\n";
  }
  if (m.mean.size() != nt * nc || m.var.size() != nt * nc || m.min.size() != nt * nc ||
      m.max.size() != nt * nc)
    throw std::runtime_error("'" + path +
                             "' is not an nholo result file (statistics of an unexpected shape)");
  os << "  at t = " << time.back() << " (last save), over the ensemble:\n";
  if (std::isnan(m.mean[(nt - 1) * nc])) {
    // every value there NaN (it printed "mean nan std nan ...")
    os << "    no trajectory has a value there (each stopped at an event or failed before it; "
          "a stop event's state is its record, events/<name>)\n";
    return;
  }
  for (size_t c = 0; c < nc; ++c) {
    const size_t j = (nt - 1) * nc + c;
    os << "    " << std::left << std::setw(8) << coords[c] << " mean " << std::setw(12) << m.mean[j]
       << " std " << std::setw(12) << std::sqrt(m.var[j]) << " min " << std::setw(12) << m.min[j]
       << " max " << m.max[j] << "\n";
  }
}

// The model's drift statistic: block by block, in trajectory order (the
// moments add up as they always did); the quantiles exact, in bounded memory
// (host/analysis/quantile.hpp).
void write_drift_statistic(std::ostream& os, const h5::Group& sg, int64_t size, int64_t block,
                           const std::string& path) {
  const h5::Dataset rd = sg.open_dataset("drift_ratio"), bd = sg.open_dataset("band"),
                    dd = sg.open_dataset("drift_velocity");
  for (const h5::Dataset* d : {&rd, &bd, &dd}) check_per_trajectory(*d, size, path);
  Moments mr, mb, md;
  int64_t undefined = 0;  // a drift velocity, but no finite prediction to divide by
  std::vector<double> r, band, dv;
  for (int64_t i = 0; i < traj_blocks(size, block); ++i) {
    read_traj_block(rd, size, block, i, r);
    read_traj_block(bd, size, block, i, band);
    read_traj_block(dd, size, block, i, dv);
    for (size_t k = 0; k < r.size(); ++k) {
      if (std::isfinite(r[k])) mr.add(r[k]);
      if (std::isfinite(band[k])) mb.add(band[k]);
      if (std::isfinite(dv[k])) md.add(dv[k]);
      if (std::isfinite(dv[k]) && !std::isfinite(r[k])) ++undefined;
    }
  }
  const std::vector<double> q = exact_quantiles(
      traj_blocks(size, block),
      [&](int64_t i, std::vector<double>& v) { read_traj_block(rd, size, block, i, v); },
      {0.05, 0.5, 0.95}, QuantileOptions{static_cast<size_t>(block), 4096});
  const std::string pred =
      sg.has_attr("drift_prediction") ? sg.attr_string("drift_prediction") : "prediction";
  os << "  drift statistic of the model: ";
  if (md.count > 0)
    os << "drift velocity mean " << md.mean << " over " << static_cast<long long>(md.count)
       << " trajectories";
  else
    os << "drift velocity: no trajectory has one";
  if (mb.count > 0)
    os << ", band mean " << mb.mean << " (max " << mb.max << ")";
  else
    os << ", band: no trajectory has one";
  if (md.count == 0 || mb.count == 0)
    os << " (failed trajectories and those with fewer than two finite saves have none)";
  os << "\n  drift / (" << pred << "): ";
  const char* why = " trajectories, whose prediction is not a finite non-zero number";
  if (mr.count > 0) {
    os << "mean " << mr.mean << ", std " << std::sqrt(mr.variance()) << ", quantiles 5% " << q[0]
       << ", 50% " << q[1] << ", 95% " << q[2] << " over " << static_cast<long long>(mr.count)
       << " trajectories";
    if (undefined > 0) os << "; undefined for " << undefined << why;
  } else if (undefined > 0) {
    os << "undefined for all " << undefined << why;
  } else {
    os << "no trajectory has one";
  }
  os << "\n";
}

// The moments of a per-trajectory dataset's finite values, read in blocks.
Moments finite_moments(const h5::Dataset& d, int64_t size, int64_t block, const std::string& path) {
  check_per_trajectory(d, size, path);
  Moments m;
  std::vector<double> v;
  for (int64_t i = 0; i < traj_blocks(size, block); ++i) {
    read_traj_block(d, size, block, i, v);
    for (double x : v)
      if (std::isfinite(x)) m.add(x);
  }
  return m;
}

// A result of several values per trajectory (shape (trajectories, k), k at
// most kMaxLyapunovExponents): "<label>: means m1, ..., mk over N
// trajectories", each column's mean over its finite values (N: the
// trajectories whose values are all finite), in blocks of trajectories.
void write_column_means(std::ostream& os, const tables::TrajectoryResultEntry& r,
                        const h5::Dataset& d, int64_t size, int64_t block,
                        const std::string& path) {
  const std::vector<hsize_t> dims = d.dims();
  if (dims.size() != 2 || dims[0] != static_cast<hsize_t>(size) || dims[1] < 1 ||
      dims[1] > static_cast<hsize_t>(tables::kMaxLyapunovExponents))
    throw std::runtime_error("'" + path + "' is not an nholo result file (" + d.path() +
                             " does not have the shape (trajectories, 1 to " +
                             std::to_string(tables::kMaxLyapunovExponents) + "))");
  check_stored(d, path);
  const int64_t k = static_cast<int64_t>(dims[1]);
  std::vector<Moments> m(static_cast<size_t>(k));
  int64_t all_finite = 0;
  std::vector<double> v;
  for (int64_t i = 0; i < traj_blocks(size, block); ++i) {
    const int64_t b = i * block, e = std::min(size, b + block);
    v.resize(static_cast<size_t>((e - b) * k));
    d.read_block({static_cast<hsize_t>(b), 0}, {static_cast<hsize_t>(e - b), dims[1]}, v.data());
    for (int64_t t = 0; t < e - b; ++t) {
      bool finite = true;
      for (int64_t j = 0; j < k; ++j) {
        const double x = v[static_cast<size_t>(t * k + j)];
        if (std::isfinite(x))
          m[static_cast<size_t>(j)].add(x);
        else
          finite = false;
      }
      all_finite += finite;
    }
  }
  os << "  " << r.stats_label << ": ";
  if (all_finite == 0) {
    os << "none defined (every trajectory failed)\n";
    return;
  }
  os << "means";
  for (int64_t j = 0; j < k; ++j) os << (j ? ", " : " ") << m[static_cast<size_t>(j)].mean;
  os << " over " << all_finite << " trajectories\n";
}

// A per-trajectory result of formulation fname as its row of the table
// says (host/config/trajectory_results.hpp): the max and mean of its finite
// values, or their quantiles.
void write_trajectory_result(std::ostream& os, const tables::TrajectoryResultEntry& r,
                             const h5::Dataset& d, int64_t size, int64_t block,
                             const std::string& path) {
  if (r.stats == tables::ResultStats::column_means) {
    write_column_means(os, r, d, size, block, path);
    return;
  }
  const Moments m = finite_moments(d, size, block, path);
  os << "  " << r.stats_label << ": ";
  if (r.stats == tables::ResultStats::max_and_mean) {
    os << "max " << m.max << ", mean " << m.mean << " over " << m.count << " trajectories\n";
    return;
  }
  if (m.count == 0) {
    os << "none defined (every trajectory failed)\n";
    return;
  }
  auto part = [&](int64_t i, std::vector<double>& x) { read_traj_block(d, size, block, i, x); };
  const std::vector<double> q = exact_quantiles(traj_blocks(size, block), part, {0.05, 0.5, 0.95},
                                                QuantileOptions{static_cast<size_t>(block), 4096});
  os << "mean " << m.mean << ", quantiles 5% " << q[0] << ", 50% " << q[1] << ", 95% " << q[2]
     << ", max " << m.max << " over " << m.count << " trajectories\n";
}

// The warning about event `name` of group eg (`events/<name>`), "" when its
// samples followed g in every step: how many accepted steps of how many
// trajectories g changed faster than its samples across
// (undersampled_steps; files written before it have none).
std::string undersampled_warning(const h5::Group& eg, const std::string& name, int64_t size,
                                 int64_t block, const std::string& path) {
  if (!eg.exists("undersampled_steps")) return "";
  const h5::Dataset ud = eg.open_dataset("undersampled_steps");
  check_per_trajectory(ud, size, path);
  int64_t steps = 0, trajectories = 0;
  std::vector<int64_t> c;
  for (int64_t i = 0; i < traj_blocks(size, block); ++i) {
    read_traj_block(ud, size, block, i, c);
    for (int64_t v : c) {
      if (v <= 0) continue;
      steps = v > std::numeric_limits<int64_t>::max() - steps ? std::numeric_limits<int64_t>::max()
                                                              : steps + v;
      ++trajectories;
    }
  }
  if (trajectories == 0) return "";
  std::ostringstream os;
  os << "warning: event " << name << " (" << eg.attr_string("expr") << "): in " << steps
     << " steps of " << trajectories << " of " << size
     << " trajectories g changed faster than its samples (subdivisions = "
     << (eg.has_attr("subdivisions") ? std::to_string(eg.attr_int64("subdivisions")) : "?")
     << "): crossings there are likely missed; raise [[events]] subdivisions "
        "(docs/events.md)";
  return os.str();
}

// The events of formulation fname (`events/<name>`): crossings per
// trajectory, and the first crossing's time (for a stop event, each
// trajectory's first passage) by its quantiles, in bounded memory.
void write_events(std::ostream& os, const h5::Group& fg, int64_t size, int64_t block,
                  const std::string& path) {
  for (const std::string& name : fg.attr_strings("events")) {
    const h5::Group eg = fg.open_group("events/" + name);
    const h5::Dataset cd = eg.open_dataset("count");
    check_per_trajectory(cd, size, path);
    Moments mc;
    // the total saturates at the largest int64 ("at least ..."): a sum
    // that cannot wrap around to a negative count
    int64_t total = 0, crossed = 0;
    bool saturated = false;
    std::vector<int64_t> c;
    for (int64_t i = 0; i < traj_blocks(size, block); ++i) {
      read_traj_block(cd, size, block, i, c);
      for (int64_t v : c) {
        if (v < 0)
          throw std::runtime_error("'" + path + "' is not an nholo result file (" + eg.path() +
                                   "/count holds a negative count, " + std::to_string(v) + ")");
        mc.add(static_cast<double>(v));
        saturated = saturated || v > std::numeric_limits<int64_t>::max() - total;
        total = saturated ? std::numeric_limits<int64_t>::max() : total + v;
        crossed += v > 0;
      }
    }
    const std::string action = eg.attr_string("action");
    os << "  event " << name << " (" << eg.attr_string("expr") << ", "
       << eg.attr_string("direction") << ", " << action << "): " << (saturated ? "at least " : "")
       << total << " crossings, mean " << mc.mean << " (max " << mc.max << ") per trajectory; "
       << crossed << " of " << size << " trajectories crossed\n";
    if (const std::string w = undersampled_warning(eg, name, size, block, path); !w.empty())
      os << "    " << w << "\n";
    const h5::Dataset td = eg.open_dataset("time");
    if (crossed == 0 || td.dims().size() != 2 || td.dims()[1] == 0) continue;
    // column 0 of time: the first crossing (NaN where none: skipped)
    auto first = [&](int64_t i, std::vector<double>& v) {
      const int64_t b = i * block, e = std::min(size, b + block);
      v.resize(static_cast<size_t>(std::max<int64_t>(e - b, 0)));
      if (e > b)
        td.read_block({static_cast<hsize_t>(b), 0}, {static_cast<hsize_t>(e - b), 1}, v.data());
    };
    const std::vector<double> q =
        exact_quantiles(traj_blocks(size, block), first, {0.05, 0.5, 0.95},
                        QuantileOptions{static_cast<size_t>(block), 4096});
    os << "    " << (action == "stop" ? "first passage" : "first crossing")
       << " time: quantiles 5% " << q[0] << ", 50% " << q[1] << ", 95% " << q[2] << " over the "
       << crossed << " trajectories that crossed\n";
  }
}

// "[FORM]" and everything stats says about formulation fname.
void write_formulation(std::ostream& os, const h5::Group& root, const std::string& fname,
                       const std::vector<std::string>& coords, int64_t size, int64_t block,
                       const std::string& path) {
  h5::Group sg = root.open_group("statistics/" + fname);
  os << "\n[" << fname << "]\n";
  const bool merged = sg.exists("mean");  // else: a .partial being written, or killed
  write_status_line(os, root, sg, fname, merged, size, block, path);
  write_last_save(os, sg, merged, coords, block, path);
  if (sg.exists("drift_ratio")) write_drift_statistic(os, sg, size, block, path);
  const h5::Group fg = root.open_group(fname);
  if (fg.has_attr("events")) write_events(os, fg, size, block, path);
  for (const auto& r : tables::kTrajectoryResults)
    if (r.stats != tables::ResultStats::none && root.exists(fname + "/" + r.name))
      write_trajectory_result(os, r, root.open_dataset(fname + "/" + r.name), size, block, path);
}

}  // namespace

std::string stats_report(const h5::Group& root, const std::string& path, int64_t block) {
  std::ostringstream os;
  os << std::setprecision(6);
  write_file_line(os, root, path);
  const auto coords = root.attr_strings("coordinates");
  const int64_t size = trajectories_in(root, path);  // per-trajectory datasets: a shard's range
  if (root.exists("initial/params")) write_varied_params(os, root, path, size, block);
  for (const auto& fname : root.attr_strings("formulations"))
    write_formulation(os, root, fname, coords, size, block, path);
  return os.str();
}

std::vector<std::string> optional_result_lines(const h5::Group& root, const std::string& path,
                                               int64_t block) {
  std::vector<std::string> lines;
  const int64_t size = trajectories_in(root, path);
  for (const auto& fname : root.attr_strings("formulations")) {
    const h5::Group fg = root.open_group(fname);
    if (fg.has_attr("events"))
      for (const std::string& name : fg.attr_strings("events"))
        if (const std::string w =
                undersampled_warning(fg.open_group("events/" + name), name, size, block, path);
            !w.empty())
          lines.push_back(fname + ": " + w);
    for (const auto& r : tables::kTrajectoryResults) {
      if (r.presence == tables::ResultPresence::always || r.stats == tables::ResultStats::none ||
          !root.exists(fname + "/" + r.name))
        continue;
      std::ostringstream os;
      os << std::setprecision(6);
      write_trajectory_result(os, r, root.open_dataset(fname + "/" + r.name), size, block, path);
      std::string text = os.str();  // "  label: ...\n"
      text = text.substr(text.find_first_not_of(' '));
      if (!text.empty() && text.back() == '\n') text.pop_back();
      lines.push_back(fname + ": " + text);
    }
  }
  return lines;
}

}  // namespace nholo
