// nholo/host/analysis/diff.cpp — `nholo diff A B` (host/analysis/diff.hpp).
#include "host/analysis/diff.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "host/analysis/result_file.hpp"
#include "host/config/config.hpp"
#include "host/config/tables.hpp"

namespace nholo {
namespace {

// Largest |a - b| over a dataset relative to its largest |b| (NaN positions
// must agree: a NaN against a number counts as a mismatch); accumulated
// block by block (maxima and counts: the order does not matter). A residual
// (relative_to > 0) is compared relative to that scale instead.
struct DiffStat {
  double rel = 0, scale = 0, worst = 0;
  int64_t nan_mismatch = 0;
  size_t count = 0;
  void add(const std::vector<double>& a, const std::vector<double>& b) {
    count += a.size();
    for (size_t i = 0; i < a.size(); ++i) {
      const bool na = std::isnan(a[i]), nb = std::isnan(b[i]);
      if (na != nb) {
        ++nan_mismatch;
        continue;
      }
      if (na) continue;
      scale = std::max(scale, std::abs(b[i]));
      worst = std::max(worst, std::abs(a[i] - b[i]));
    }
    rel = scale > 0 ? worst / scale : worst;
  }
};

// A dataset diff compares; a residual is compared against a natural scale
// instead of its own largest value: the state's (the largest |q| and |qdot|
// of the formulation in the file, its terms' size). The embedded
// formulation's Euler–Poisson residual is shown but not counted: it is the
// running maximum of a residual relative to its largest term, which near
// rest is rounding of terms growing like powers of 1/v (docs/formulations.md),
// so two compilers' values of it differ at any scale while their paths agree.
struct Compared {
  std::string path;
  enum class Scale { own, state, shown } scale = Scale::own;
};

// The datasets of formulation `form` that diff compares when both files
// have them (`events`: the names of its events in file a).
std::vector<Compared> compared_datasets(const std::string& form,
                                        const std::vector<std::string>& events) {
  std::vector<Compared> names;
  for (const auto& f : known_fields()) {
    const tables::FieldEntry* e = tables::find_field(f);
    names.push_back({form + "/" + f,
                     e && e->residual ? Compared::Scale::state : Compared::Scale::own});
  }
  names.push_back({form + "/fail_time"});
  names.push_back({form + "/euler_poisson_residual", Compared::Scale::shown});
  names.push_back({form + "/lyapunov"});
  for (const auto& ev : events)
    for (const char* d : {"count", "time", "q", "qdot"})
      names.push_back({form + "/events/" + ev + "/" + d});
  for (const char* st : {"mean", "variance", "min", "max", "qdot_mean", "qdot_variance"})
    names.push_back({"statistics/" + form + "/" + st});
  return names;
}

// One dataset of both files (the same shape), tile by tile, compared relative
// to its largest |b| (scale <= 0) or to scale: its line of the report and
// the statistic; good false when the values differ (always true when only
// shown).
DiffStat diff_values(std::ostream& os, const h5::Dataset& da, const h5::Dataset& db,
                     const std::string& ds, double rtol, double scale, int64_t block,
                     bool& good, bool shown = false) {
  DiffStat d;
  std::vector<double> a, b;
  h5::for_each_tile(da.dims(), static_cast<hsize_t>(block),
                    [&](const std::vector<hsize_t>& off, const std::vector<hsize_t>& cnt) {
                      a = da.read_block<double>(off, cnt);
                      b = db.read_block<double>(off, cnt);
                      d.add(a, b);
                    });
  const double rel = scale > 0 ? d.worst / scale : d.rel;
  good = shown || (rel <= rtol && d.nan_mismatch == 0);
  os << (shown ? "  info " : good ? "  ok   " : "  FAIL ") << std::left << std::setw(44) << ds;
  if (shown)
    os << " max |a-b| = " << d.worst << " (shown, not compared: a diagnostic dominated by "
       << "rounding near rest)";
  else if (scale > 0)
    os << " max |a-b| / " << scale
       << " = " << rel << " (a residual: against the state's scale, max |q|, |qdot|)";
  else
    os << " max |a-b| / max |b| = " << rel;
  if (d.nan_mismatch) os << ", " << d.nan_mismatch << " NaN mismatches";
  os << "\n";
  return d;
}

// FORM/status of both files, trajectory by trajectory: its line of the
// report; false when the sizes or any status differ.
bool diff_status(std::ostream& os, const h5::Group& ra, const h5::Group& rb,
                 const std::string& form, int64_t block) {
  const h5::Dataset sta = ra.open_dataset(form + "/status");
  const h5::Dataset stb = rb.open_dataset(form + "/status");
  const int64_t na = static_cast<int64_t>(sta.size()), nb = static_cast<int64_t>(stb.size());
  const int64_t common = std::min(na, nb);
  if (sta.dims().size() != 1 || stb.dims().size() != 1)
    throw std::runtime_error("diff: " + form + "/status is not one value per trajectory");
  int64_t differ = 0;
  std::vector<int32_t> sa, sb;
  for (int64_t i = 0; i < traj_blocks(common, block); ++i) {
    read_traj_block(sta, common, block, i, sa);
    read_traj_block(stb, common, block, i, sb);
    for (size_t k = 0; k < sa.size(); ++k) differ += sa[k] != sb[k];
  }
  os << (na == nb && !differ ? "  ok   " : "  FAIL ") << std::left << std::setw(44)
     << (form + "/status") << " ";
  if (na != nb)
    os << "sizes differ (" << na << " vs " << nb << " trajectories)\n";
  else
    os << differ << " trajectories differ\n";
  return na == nb && !differ;
}

}  // namespace

bool diff_results(const h5::Group& ra, const h5::Group& rb, const std::string& path_a,
                  const std::string& path_b, double rtol, int64_t block, std::string& report) {
  std::ostringstream os;
  os << std::setprecision(3);
  if (ra.attr_string("model") != rb.attr_string("model"))
    throw std::runtime_error("diff: " + path_a + " is model " + ra.attr_string("model") + ", " +
                             path_b + " is model " + rb.attr_string("model"));
  // two runs of one configuration: the same trajectories (a shard's range)
  const auto trajectories = [](const h5::Group& r) {
    const auto forms = r.attr_strings("formulations");
    return forms.empty() || !r.exists(forms[0] + "/status")
               ? int64_t(-1)
               : static_cast<int64_t>(r.open_dataset(forms[0] + "/status").size());
  };
  const auto range = [](const h5::Group& r) {
    return r.has_attr("shard_begin") ? std::to_string(r.attr_int64("shard_begin")) + ":" +
                                           std::to_string(r.attr_int64("shard_end"))
                                     : std::string("all");
  };
  if (trajectories(ra) != trajectories(rb) || range(ra) != range(rb))
    throw std::runtime_error("diff: " + path_a + " holds " + std::to_string(trajectories(ra)) +
                             " trajectories (range " + range(ra) + "), " + path_b + " " +
                             std::to_string(trajectories(rb)) + " (range " + range(rb) +
                             "): diff compares two runs of one configuration's trajectories");
  bool ok = true;
  int compared = 0;
  for (const auto& form : rb.attr_strings("formulations"))
    if (!ra.exists(form)) {
      os << form << ": only in " << path_b << "\n";
      ok = false;
    }
  for (const auto& form : ra.attr_strings("formulations")) {
    if (!rb.exists(form)) {
      os << form << ": only in " << path_a << "\n";
      ok = false;
      continue;
    }
    // the state's scale (q and qdot come first), for the residuals
    double state_scale = 0;
    const h5::Group fa = ra.open_group(form);
    const std::vector<std::string> events =
        fa.has_attr("events") ? fa.attr_strings("events") : std::vector<std::string>();
    for (const Compared& c : compared_datasets(form, events)) {
      const std::string& ds = c.path;
      if (!ra.exists(ds) || !rb.exists(ds)) continue;
      const h5::Dataset da = ra.open_dataset(ds), db = rb.open_dataset(ds);
      if (da.dims() != db.dims()) {
        os << ds << ": shapes differ (" << da.size() << " vs " << db.size() << " values)\n";
        ok = false;
        continue;
      }
      check_stored(da, path_a);
      check_stored(db, path_b);
      const double scale = c.scale != Compared::Scale::state ? 0.0
                           : state_scale > 0                 ? state_scale
                                                             : 1.0;
      bool good = true;
      const DiffStat d = diff_values(os, da, db, ds, rtol, scale, block, good,
                                     c.scale == Compared::Scale::shown);
      if (ds == form + "/q" || ds == form + "/qdot") state_scale = std::max(state_scale, d.scale);
      if (!good) ok = false;
      ++compared;
    }
    if (!diff_status(os, ra, rb, form, block)) ok = false;
  }
  if (compared == 0)
    throw std::runtime_error("diff: no common datasets in " + path_a + " and " + path_b);
  os << (ok ? "agree" : "DIFFER") << " to " << rtol
     << " relative (residuals: relative to the state's scale; " << ra.attr_string("backend")
     << " vs " << rb.attr_string("backend") << ")\n";
  report = os.str();
  return ok;
}

}  // namespace nholo
