// nholo/host/io/outcome.cpp — the outcome of a run, folded from its pieces.
#include "host/io/outcome.hpp"

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>

#include "host/io/block_moments.hpp"
#include "host/io/h5.hpp"

namespace nholo::detail {

Outcome Outcome::empty(int nf, int64_t n_saves, int n) {
  Outcome out;
  out.st_q.assign(nf, FieldStatistics(n_saves, n));
  out.st_qd.assign(nf, FieldStatistics(n_saves, n));
  out.drift_ratio.assign(nf, Moments());
  out.status_count.assign(static_cast<size_t>(nf) * kStatusCount, 0);
  return out;
}

namespace {

// slice s's initial states: the counts of its init piece (when written)
void add_initial_counts(const PieceDir& pieces, int64_t s, RunSummary& sum) {
  if (!pieces.has(PieceDir::init_name(s))) return;
  const h5::File fi = h5::File::open_ro(pieces.path(PieceDir::init_name(s)));
  const h5::Group r = fi.root();
  sum.completed_from_constraints += r.attr_int64("completed_from_constraints");
  sum.projected += r.attr_int64("projected");
  sum.rejected += r.attr_int64("rejected");
  sum.singular_initial += r.attr_int64("singular");
  if (r.has_attr("params_rejected")) sum.params_rejected += r.attr_int64("params_rejected");
}

// Rows [begin, begin + count) of the 1-D dataset `path` of a piece: its own
// dataset of count rows, or the whole dataset of the result file it links to
// (written in place: host/io/in_place_file.hpp, RowWriter).
template <class T>
std::vector<T> slice_rows(const h5::Group& r, const std::string& path, int64_t begin,
                          int64_t count) {
  const h5::Dataset d = r.open_dataset(path);
  const std::vector<hsize_t> dims = d.dims();
  if (dims.size() == 1 && dims[0] == static_cast<hsize_t>(count)) return d.read<T>();
  return d.read_block<T>({static_cast<hsize_t>(begin)}, {static_cast<hsize_t>(count)});
}

// finished slice s: statuses, steps and drift ratios of its slice piece
void add_slice_results(const PieceDir& pieces, const SlicePlan& plan, int64_t s,
                       const std::vector<std::string>& formulations, bool has_drift, Outcome& out,
                       RunSummary& sum) {
  const int64_t begin = plan.slice_begin(s), count = plan.slice_end(s) - begin;
  const h5::File fs_ = h5::File::open_ro(pieces.path(PieceDir::slice_name(s)));
  const h5::Group r = fs_.root();
  const int nf = static_cast<int>(formulations.size());
  for (int f = 0; f < nf; ++f) {
    const std::string& form = formulations[f];
    for (int32_t st : slice_rows<int32_t>(r, form + "/status", begin, count)) {
      if (st < 0 || st >= kStatusCount)
        throw std::runtime_error(pieces.path(PieceDir::slice_name(s)) + ": " + form +
                                 "/status holds " + std::to_string(st) +
                                 ", which is no status (0 to " + std::to_string(kStatusCount - 1) +
                                 ")");
      ++out.status_count[f * kStatusCount + st];
    }
    for (int64_t k : slice_rows<int64_t>(r, form + "/steps", begin, count)) sum.steps += k;
    if (has_drift)
      for (double x : slice_rows<double>(r, "statistics/" + form + "/drift_ratio", begin, count))
        if (std::isfinite(x)) out.drift_ratio[f].add(x);
  }
}

// finished slice s: the block moments of its windows, folded in block order
void add_block_moments(const PieceDir& pieces, const SlicePlan& plan, int64_t s, int64_t count,
                       const std::vector<std::string>& formulations, Outcome& out) {
  const int nf = static_cast<int>(formulations.size());
  for (int64_t w = 0; w < plan.n_windows; ++w) {
    const int64_t k0 = plan.window_begin(w), ns = plan.window_saves(w);
    const h5::File fw = h5::File::open_ro(pieces.path(PieceDir::window_name(s, w)));
    const h5::Group r = fw.root();
    for (int f = 0; f < nf; ++f)
      for (int which = 0; which < 2; ++which) {
        const std::vector<double> mom =
            r.open_dataset("statistics/" + formulations[f] +
                           (which ? "/block_moments_qdot" : "/block_moments_q"))
                .read<double>();
        (which ? out.st_qd : out.st_q)[f].add_block_moments(block_moment_parts(mom).part, count, k0,
                                                            ns);
      }
  }
}

}  // namespace

Outcome fold_pieces(const PieceDir& pieces, const SlicePlan& plan,
                    const std::vector<std::string>& formulations, int n, bool has_drift,
                    RunSummary& sum, bool save_moments) {
  const int nf = static_cast<int>(formulations.size());
  Outcome out = Outcome::empty(nf, save_moments ? plan.n_saves : 0, n);
  sum.completed = sum.steps = 0;
  for (int64_t s = 0; s < plan.n_slices(); ++s) {
    const int64_t count = plan.slice_end(s) - plan.slice_begin(s);
    add_initial_counts(pieces, s, sum);
    if (!pieces.has(PieceDir::slice_name(s))) {
      for (int f = 0; f < nf; ++f)
        out.status_count[f * kStatusCount + static_cast<int>(Status::not_run)] += count;
      continue;
    }
    sum.completed += count;
    add_slice_results(pieces, plan, s, formulations, has_drift, out, sum);
    if (save_moments) add_block_moments(pieces, plan, s, count, formulations, out);
  }
  return out;
}

void add_status_lines(const Outcome& out, const std::vector<std::string>& formulations,
                      RunSummary& sum) {
  const int nf = static_cast<int>(formulations.size());
  for (int f = 0; f < nf; ++f) {
    std::ostringstream line;
    line << formulations[f] << ":";
    for (int st = 0; st < kStatusCount; ++st)
      if (const int64_t c = out.status_count[f * kStatusCount + st])
        line << " " << status_name(static_cast<Status>(st)) << " " << c;
    sum.status_lines.push_back(line.str());
  }
}

}  // namespace nholo::detail
