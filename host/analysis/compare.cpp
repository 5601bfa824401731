// nholo/host/analysis/compare.cpp — `nholo compare FILE` (host/analysis/compare.hpp).
#include "host/analysis/compare.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "host/analysis/result_file.hpp"
#include "host/io/statistics.hpp"
#include "host/config/config.hpp"

namespace nholo {
namespace {

bool selected(const std::vector<std::string>& formulations, const std::string& f) {
  return std::find(formulations.begin(), formulations.end(), f) != formulations.end();
}

// "A vs B: max |q_a - q_b| over time: ...": the pair's group compare/A__B,
// read block by block in trajectory order.
void write_pair(std::ostream& os, const h5::Group& root, const std::string& path,
                const std::string& fa, const std::string& fb, int64_t block) {
  h5::Group g = root.open_group("compare/" + fa + "__" + fb);
  const int64_t size = trajectories_in(root, path);
  const h5::Dataset mdd = g.open_dataset("max_distance");
  const h5::Dataset fed = g.open_dataset("first_exceed_time");
  check_per_trajectory(mdd, size, path);
  check_per_trajectory(fed, size, path);
  Moments m;
  int64_t exceeded = 0;
  Moments t;
  std::vector<double> md, fe;
  for (int64_t blk = 0; blk < traj_blocks(size, block); ++blk) {
    read_traj_block(mdd, size, block, blk, md);
    read_traj_block(fed, size, block, blk, fe);
    for (size_t i = 0; i < md.size(); ++i) {
      if (std::isfinite(md[i])) m.add(md[i]);
      if (std::isfinite(fe[i])) {
        ++exceeded;
        t.add(fe[i]);
      }
    }
  }
  if (m.count == 0) {
    // (a distance is NaN where either formulation failed)
    os << fa << " vs " << fb << ": no trajectory of " << size
       << " finished in both formulations (status ok or event): nothing to compare\n";
    return;
  }
  os << fa << " vs " << fb << ": max |q_a - q_b| over time: mean " << m.mean << ", max " << m.max
     << " (" << m.count << " trajectories); exceeds " << g.attr_double("threshold") << " in "
     << exceeded << " trajectories";
  if (exceeded) os << ", first at t = " << t.min << " (mean " << t.mean << ")";
  os << "\n";
}

}  // namespace

std::string compare_report(const h5::Group& root, const std::string& path,
                           const std::vector<std::string>& formulations, int64_t block) {
  const auto all = root.attr_strings("formulations");
  for (const auto& x : formulations)
    if (!selected(all, x))
      throw ConfigError("--formulations",
                        "'" + x + "' is not in " + path + " (it has: " + join(all) + ")");
  std::ostringstream os;
  os << std::setprecision(6);
  int pairs = 0;
  for (size_t a = 0; a < all.size(); ++a)
    for (size_t b = a + 1; b < all.size(); ++b) {
      if (!formulations.empty() &&
          (!selected(formulations, all[a]) || !selected(formulations, all[b])))
        continue;
      write_pair(os, root, path, all[a], all[b], block);
      ++pairs;
    }
  if (pairs == 0 && all.size() < 2)
    os << path
       << " holds a single formulation: nothing to compare (run with formulations = [\"a\", "
          "\"b\"])\n";
  else if (pairs == 0)
    throw ConfigError("--formulations", "a comparison needs two of " + path + "'s formulations (" +
                                            join(all) + "), not " + std::to_string(formulations.size()));
  return os.str();
}

}  // namespace nholo
