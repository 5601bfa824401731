// nholo/host/analysis/diff.cpp — `nholo diff A B` (host/analysis/diff.hpp).
#include "host/analysis/diff.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <ostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "host/analysis/result_file.hpp"
#include "host/config/config.hpp"
#include "host/config/tables.hpp"
#include "host/config/trajectory_results.hpp"

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

// How diff compares a dataset. A residual (a field the tables mark so,
// e.g. constraint_residual) against a natural scale instead of its own
// largest value: the state's (the largest |q| and |qdot| of the formulation
// in the file, its terms' size); so is the distance between two
// formulations (compare/A__B/max_distance, rounding where they agree: the
// largest state's scale of the file). The embedded formulation's Euler–Poisson
// residual is shown but not counted: it is the running maximum of a residual
// relative to its largest term, which near rest is rounding of terms growing
// like powers of 1/v (docs/formulations.md), so two compilers' values of it
// differ at any scale while their paths agree. The integrator's counts
// (steps, rejected) are compared exactly under --rtol 0 and shown otherwise:
// a last-bit difference of one error estimate accepts or rejects one step
// more while the results agree to far better than rtol. Everything else
// (the fields, the statistics, the initial states, the comparisons, the save
// times, events, exponents) against its own largest value; strings (the
// coordinates' and constraints' names) must be equal.
enum class Scale { own, state, shown, count };

// The formulation of forms whose group holds dataset `name` ("" for none).
std::string formulation_of(const std::string& name, const std::vector<std::string>& forms) {
  for (const auto& form : forms)
    if (name.compare(0, form.size() + 1, form + "/") == 0) return form;
  return std::string();
}

// The comparison of dataset `name` (a path from the root) of a file with
// formulations `forms`.
Scale scale_of(const std::string& name, const std::vector<std::string>& forms) {
  // two formulations' distance: rounding of the state's size where they agree
  const std::string distance = "/max_distance";
  if (name.rfind("compare/", 0) == 0 && name.size() > distance.size() &&
      name.compare(name.size() - distance.size(), distance.size(), distance) == 0)
    return Scale::state;
  const std::string form = formulation_of(name, forms);
  if (form.empty()) return Scale::own;
  const std::string rest = name.substr(form.size() + 1);
  if (const tables::TrajectoryResultEntry* r = tables::find_trajectory_result(rest))
    return r->diff == tables::ResultDiff::shown   ? Scale::shown
           : r->diff == tables::ResultDiff::count ? Scale::count
                                                  : Scale::own;
  const tables::FieldEntry* e = tables::find_field(rest);
  return e && e->residual ? Scale::state : Scale::own;
}

// One dataset of both files (the same shape), tile by tile, compared relative
// to its largest |b| (scale <= 0) or to scale: its line of the report and
// the statistic; good false when the values differ (always true when only
// shown).
DiffStat diff_values(std::ostream& os, const h5::Dataset& da, const h5::Dataset& db,
                     const std::string& ds, double rtol, double scale, int64_t block, bool& good,
                     const char* shown = nullptr) {
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
    os << " max |a-b| = " << d.worst << " (shown, not compared: " << shown << ")";
  else if (scale > 0)
    os << " max |a-b| / " << scale << " = " << rel
       << " (against the state's scale, max |q|, |qdot|)";
  else
    os << " max |a-b| / max |b| = " << rel;
  if (d.nan_mismatch) os << ", " << d.nan_mismatch << " NaN mismatches";
  os << "\n";
  return d;
}

// A dataset of strings in both files: its line; false when they differ.
bool diff_strings(std::ostream& os, const h5::Dataset& da, const h5::Dataset& db,
                  const std::string& ds) {
  const bool same = da.read_strings() == db.read_strings();
  os << (same ? "  ok   " : "  FAIL ") << std::left << std::setw(44) << ds
     << (same ? " the same names\n" : " the names differ\n");
  return same;
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

// A and B are two runs of one model's trajectories (a shard's range), else
// std::runtime_error naming what differs.
void check_comparable(const h5::Group& ra, const h5::Group& rb, const std::string& path_a,
                      const std::string& path_b) {
  if (ra.attr_string("model") != rb.attr_string("model"))
    throw std::runtime_error("diff: " + path_a + " is model " + ra.attr_string("model") + ", " +
                             path_b + " is model " + rb.attr_string("model"));
  const auto trajectories = [](const h5::Group& r, const std::string& path) {
    const auto forms = r.attr_strings("formulations");
    if (forms.empty() || !r.exists(forms[0] + "/status"))
      throw std::runtime_error(
          "diff: '" + path + "' has no " +
          (forms.empty() ? std::string("formulations") : "dataset '" + forms[0] + "/status'") +
          ": it is damaged or not an nholo result file");
    return static_cast<int64_t>(r.open_dataset(forms[0] + "/status").size());
  };
  const auto range = [](const h5::Group& r) {
    return r.has_attr("shard_begin") ? std::to_string(r.attr_int64("shard_begin")) + ":" +
                                           std::to_string(r.attr_int64("shard_end"))
                                     : std::string("all");
  };
  const int64_t na = trajectories(ra, path_a), nb = trajectories(rb, path_b);
  if (na != nb || range(ra) != range(rb))
    throw std::runtime_error("diff: " + path_a + " holds " + std::to_string(na) +
                             " trajectories (range " + range(ra) + "), " + path_b + " " +
                             std::to_string(nb) + " (range " + range(rb) +
                             "): diff compares two runs of one configuration's trajectories");
}

}  // namespace

bool diff_results(const h5::Group& ra, const h5::Group& rb, const std::string& path_a,
                  const std::string& path_b, double rtol, int64_t block, std::string& report) {
  std::ostringstream os;
  os << std::setprecision(3);
  check_comparable(ra, rb, path_a, path_b);
  const auto hash = [](const h5::Group& r) {
    return r.has_attr("config_hash") ? r.attr_string("config_hash") : std::string("none");
  };
  if (hash(ra) != hash(rb))
    os << "  info config_hash differs (" << hash(ra) << " vs " << hash(rb)
       << "): results of different configurations; their datasets decide\n";
  bool ok = true;
  int compared = 0;
  const std::vector<std::string> forms_a = ra.attr_strings("formulations"),
                                 forms_b = rb.attr_strings("formulations");
  std::vector<std::string> only;  // formulations in one file only: named once, not walked
  for (const auto& [forms, other, path] :
       {std::tuple(forms_b, &ra, path_b), std::tuple(forms_a, &rb, path_a)})
    for (const auto& form : forms)
      if (!other->exists(form)) {
        os << form << ": only in " << path << "\n";
        only.push_back(form);
        ok = false;
      }
  // every dataset of either file; a residual after its formulation's q, qdot
  const std::vector<std::string> in_a = h5::dataset_names(ra), in_b = h5::dataset_names(rb);
  const std::set<std::string> known(in_a.begin(), in_a.end());
  std::vector<std::string> names = in_a;
  for (const auto& n : in_b)
    if (!known.count(n)) names.push_back(n);
  std::stable_sort(names.begin(), names.end(), [&](const std::string& x, const std::string& y) {
    return (scale_of(x, forms_a) == Scale::state) < (scale_of(y, forms_a) == Scale::state);
  });
  std::map<std::string, double> state_scale;  // per formulation: max |q|, |qdot|
  for (const std::string& ds : names) {
    if (!formulation_of(ds, only).empty()) continue;  // its formulation is in one file only
    const std::string form = formulation_of(ds, forms_a);
    if (!form.empty() && ds == form + "/status") continue;  // diff_status, below
    const bool has_a = ra.exists(ds), has_b = rb.exists(ds);
    if (!has_a || !has_b) {
      os << "  FAIL " << std::left << std::setw(44) << ds << " only in "
         << (has_a ? path_a : path_b) << "\n";
      ok = false;
      continue;
    }
    const h5::Dataset da = ra.open_dataset(ds), db = rb.open_dataset(ds);
    if (da.dims() != db.dims()) {
      os << "  FAIL " << std::left << std::setw(44) << ds << " shapes differ (" << da.size()
         << " vs " << db.size() << " values)\n";
      ok = false;
      continue;
    }
    ++compared;
    if (h5::holds_strings(da) || h5::holds_strings(db)) {
      if (!(h5::holds_strings(da) && h5::holds_strings(db) && diff_strings(os, da, db, ds)))
        ok = false;
      continue;
    }
    check_stored(da, path_a);
    check_stored(db, path_b);
    const Scale sc = scale_of(ds, forms_a);
    const char* shown = sc == Scale::shown ? "a diagnostic dominated by rounding near rest"
                        : sc == Scale::count && rtol > 0
                            ? "the integrator's counts, compared exactly under --rtol 0"
                            : nullptr;
    // a formulation's residual: its state's scale; a distance between two
    // formulations: the largest of the states'
    double state = 0;
    for (const auto& [f, v] : state_scale)
      if (form.empty() || f == form) state = std::max(state, v);
    const double scale = sc != Scale::state ? 0.0 : state > 0 ? state : 1.0;
    bool good = true;
    const DiffStat d = diff_values(os, da, db, ds, rtol, scale, block, good, shown);
    if (ds == form + "/q" || ds == form + "/qdot")
      state_scale[form] = std::max(state_scale[form], d.scale);
    if (!good) ok = false;
  }
  for (const auto& form : forms_a)
    if (rb.exists(form) && !diff_status(os, ra, rb, form, block)) ok = false;
  if (compared == 0)
    throw std::runtime_error("diff: no common datasets in " + path_a + " and " + path_b);
  os << (ok ? "agree" : "DIFFER") << " to " << rtol
     << " relative (residuals and formulations' distances: relative to the state's scale; "
     << ra.attr_string("backend") << " vs " << rb.attr_string("backend") << ")\n";
  report = os.str();
  return ok;
}

}  // namespace nholo
