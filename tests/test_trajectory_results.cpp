// The table of per-trajectory results (host/config/trajectory_results.hpp)
// and the one reader every backend uses (host/backends/slice_results.hpp):
// a slice state written by hand is read into the columns the table names,
// the derived results computed from the rows they come from.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "host/backends/slice_results.hpp"
#include "host/config/tables.hpp"
#include "host/config/trajectory_results.hpp"

namespace {

using nholo::SliceResults;
using nholo::SliceState;
using nholo::Status;
using nholo::tables::TrajectoryResult;

// A slice of three trajectories: the second failed. State y in the backends'
// layout (component c of trajectory i at y[c * 3 + i]): two base components,
// then (as a tangent system with N0 = 2) the tangent's two rows, log_sum,
// tau, T; component 1 doubles as a path residual row.
struct HandSlice {
  static constexpr int64_t count = 3;
  std::vector<int32_t> status = {static_cast<int32_t>(Status::ok),
                                 static_cast<int32_t>(Status::non_finite),
                                 static_cast<int32_t>(Status::event)};
  std::vector<int64_t> steps = {10, 20, 30}, rejected = {1, 2, 3};
  std::vector<double> fail_time = {NAN, 0.5, 0.75};
  std::vector<double> y = {
      0.0,  0.0,  0.0,   // base component 0
      1e-9, 2e-9, 3e-9,  // base component 1: the path residual row
      3.0,  1.0,  0.6,   // tangent row 0
      4.0,  1.0,  0.8,   // tangent row 1
      2.0,  7.0,  -1.0,  // log_sum
      0.0,  0.0,  0.0,   // tau
      4.0,  1.0,  2.0,   // T
  };

  SliceState state(int path_residual_index, int tangent_base_size) {
    SliceState st;
    st.arrays.y = y.data();
    st.arrays.status = status.data();
    st.arrays.steps = steps.data();
    st.arrays.rejected = rejected.data();
    st.arrays.fail_time = fail_time.data();
    st.count = count;
    st.path_residual_index = path_residual_index;
    st.tangent_base_size = tangent_base_size;
    st.tangent_exponents = tangent_base_size >= 0 ? 1 : 0;
    st.to_host = [](void* host, const void* from, std::size_t bytes) {
      std::memcpy(host, from, bytes);
    };
    return st;
  }
};

TEST(TrajectoryResults, TableNamesAreUniqueAndNoField) {
  std::set<std::string> names;
  for (const auto& r : nholo::tables::kTrajectoryResults) {
    EXPECT_TRUE(names.insert(r.name).second) << r.name;
    // a result and a per-save field share the formulation's group
    EXPECT_EQ(nholo::tables::find_field(r.name), nullptr) << r.name;
    EXPECT_EQ(nholo::tables::find_trajectory_result(r.name), &r);
  }
  EXPECT_EQ(nholo::tables::find_trajectory_result("q"), nullptr);
}

TEST(TrajectoryResults, PresenceFollowsFormulationAndLyapunov) {
  using nholo::tables::find_formulation;
  using nholo::tables::result_present;
  using nholo::tables::trajectory_result;
  const auto& ep = trajectory_result(TrajectoryResult::euler_poisson_residual);
  const auto& ly = trajectory_result(TrajectoryResult::lyapunov);
  const auto& st = trajectory_result(TrajectoryResult::status);
  const auto& sp = trajectory_result(TrajectoryResult::lyapunov_spectrum);
  // the third argument: [lyapunov] exponents (0: no [lyapunov])
  EXPECT_TRUE(result_present(ep, find_formulation("embedded"), 0));
  EXPECT_FALSE(result_present(ep, find_formulation("udwadia_kalaba"), 1));
  EXPECT_TRUE(result_present(ly, find_formulation("udwadia_kalaba"), 1));
  EXPECT_FALSE(result_present(ly, find_formulation("udwadia_kalaba"), 0));
  EXPECT_TRUE(result_present(st, find_formulation("vakonomic"), 0));
  // the spectrum's columns only with more than one exponent
  EXPECT_FALSE(result_present(sp, find_formulation("udwadia_kalaba"), 1));
  EXPECT_TRUE(result_present(sp, find_formulation("udwadia_kalaba"), 3));
  EXPECT_EQ(nholo::tables::result_width(sp, 3), 3);
  EXPECT_EQ(nholo::tables::result_width(ly, 3), 1);
  // the observed exponent only with [lyapunov] and observables
  const auto& ob = trajectory_result(TrajectoryResult::lyapunov_observed);
  EXPECT_FALSE(result_present(ob, find_formulation("udwadia_kalaba"), 1));
  EXPECT_FALSE(result_present(ob, find_formulation("udwadia_kalaba"), 0, true));
  EXPECT_TRUE(result_present(ob, find_formulation("udwadia_kalaba"), 1, true));
}

TEST(TrajectoryResults, ResultsFromTheTangentRowsHaveAReader) {
  for (const auto& r : nholo::tables::kTrajectoryResults)
    EXPECT_EQ(r.source == nholo::tables::ResultSource::tangent, r.from_tangent != nullptr)
        << r.name;
}

TEST(TrajectoryResults, IntegratorColumnsAreCopied) {
  HandSlice h;
  SliceResults r;
  nholo::read_slice_results(h.state(-1, -1), r);
  EXPECT_EQ(r.status(), h.status);
  EXPECT_EQ(r.steps(), h.steps);
  EXPECT_EQ(r.rejected(), h.rejected);
  ASSERT_EQ(r.fail_time().size(), 3u);
  EXPECT_TRUE(std::isnan(r.fail_time()[0]));
  EXPECT_EQ(r.fail_time()[1], 0.5);
  EXPECT_EQ(r.fail_time()[2], 0.75);
  // a system without a path residual or a tangent: those columns empty
  EXPECT_TRUE(r.column<TrajectoryResult::euler_poisson_residual>().empty());
  EXPECT_TRUE(r.column<TrajectoryResult::lyapunov>().empty());
}

TEST(TrajectoryResults, DerivedColumnsComeFromTheirRows) {
  HandSlice h;
  SliceResults r;
  // a result read before (another slice's) is replaced, not appended to
  r.column<TrajectoryResult::lyapunov>() = {9.0, 9.0, 9.0, 9.0};
  nholo::read_slice_results(h.state(1, 2), r);
  EXPECT_EQ(r.column<TrajectoryResult::euler_poisson_residual>(),
            (std::vector<double>{1e-9, 2e-9, 3e-9}));
  const auto& ly = r.column<TrajectoryResult::lyapunov>();
  ASSERT_EQ(ly.size(), 3u);
  // (log_sum + log |delta|) / T: |(3, 4)| = 5, |(0.6, 0.8)| = 1
  EXPECT_DOUBLE_EQ(ly[0], (2.0 + std::log(5.0)) / 4.0);
  EXPECT_TRUE(std::isnan(ly[1]));  // failed: no exponent
  EXPECT_DOUBLE_EQ(ly[2], -1.0 / 2.0);
}

// Two tangent vectors (exponents = 2) of one trajectory, N0 = 2: delta_1 =
// (3, 4), delta_2 = (1, 0), log sums 2 and -1, T = 4. Gram-Schmidt: r_1 = 5,
// q_1 = (0.6, 0.8); delta_2 - 0.6 q_1 = (0.64, -0.48), r_2 = 0.8.
TEST(TrajectoryResults, TheSpectrumsColumnsComeFromTheQRFactorisation) {
  std::vector<int32_t> status = {static_cast<int32_t>(Status::ok)};
  std::vector<int64_t> steps = {1}, rejected = {0};
  std::vector<double> fail_time = {NAN};
  std::vector<double> y = {0.0, 0.0, 3.0, 4.0, 1.0, 0.0, 2.0, -1.0, 0.0, 4.0};
  SliceState st;
  st.arrays.y = y.data();
  st.arrays.status = status.data();
  st.arrays.steps = steps.data();
  st.arrays.rejected = rejected.data();
  st.arrays.fail_time = fail_time.data();
  st.count = 1;
  st.tangent_base_size = 2;
  st.tangent_exponents = 2;
  st.to_host = [](void* host, const void* from, std::size_t bytes) {
    std::memcpy(host, from, bytes);
  };
  SliceResults r;
  nholo::read_slice_results(st, r);
  const double l1 = (2.0 + std::log(5.0)) / 4.0, l2 = (-1.0 + std::log(0.8)) / 4.0;
  const auto& spectrum = r.column<TrajectoryResult::lyapunov_spectrum>();
  ASSERT_EQ(spectrum.size(), 2u);
  EXPECT_DOUBLE_EQ(spectrum[0], l1);
  EXPECT_DOUBLE_EQ(spectrum[1], l2);
  EXPECT_EQ(r.column<TrajectoryResult::lyapunov>(), std::vector<double>{spectrum[0]});
  EXPECT_DOUBLE_EQ(r.column<TrajectoryResult::lyapunov_sum>()[0], l1 + l2);
  // l1 = 0.902, l2 = -0.306: the sum stays >= 0 over the state's two exponents, D = 2
  EXPECT_EQ(r.column<TrajectoryResult::kaplan_yorke>()[0], 2.0);
  // a faster contraction: log sum -4, l2 = -1.056: D = 1 + l1 / |l2|
  y[7] = -4.0;
  nholo::read_slice_results(st, r);
  const double l2b = (-4.0 + std::log(0.8)) / 4.0;
  EXPECT_DOUBLE_EQ(r.column<TrajectoryResult::kaplan_yorke>()[0], 1.0 + l1 / -l2b);
}

}  // namespace
