// nholo/tests/test_field_memory.cpp — the per-save fields held in memory
// (host/io/field_memory.hpp, the Python module's output): blocks land where
// their offsets say and a block outside its array is refused; a run with its
// fields in memory (several slices and windows, two formulations) gives
// arrays bitwise equal to the fields of `nholo run`'s file, and a file whose
// other datasets are bitwise those of `nholo run` and whose fields have
// their dimensions but no storage.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "host/cli/commands.hpp"
#include "host/config/config.hpp"
#include "host/io/field_memory.hpp"
#include "host/io/h5.hpp"
#include "tests/coin_config.hpp"
#include "tests/nholo_cli.hpp"

namespace fs = std::filesystem;
using nholo::FieldMemory;
using nholo::h5::File;

namespace {

TEST(FieldMemory, BlocksLandAtTheirTrajectoryAndSaveOffsets) {
  FieldMemory mem;
  mem.allocate("f/q", {5, 4, 2});  // trajectory, save, component
  mem.allocate("f/energy", {5, 4});
  ASSERT_TRUE(mem.has("f/q"));
  EXPECT_FALSE(mem.has("f/qdot"));
  // the four blocks of two slices ([0, 3), [3, 5)) and two windows (saves [0, 3), [3, 4))
  for (int64_t row : {0, 3})
    for (int64_t save : {0, 3}) {
      const int64_t count = row == 0 ? 3 : 2, saves = save == 0 ? 3 : 1;
      std::vector<double> q(count * saves * 2), e(count * saves);
      for (int64_t i = 0; i < count; ++i)
        for (int64_t k = 0; k < saves; ++k) {
          for (int c = 0; c < 2; ++c)
            q[(i * saves + k) * 2 + c] = 100 * (row + i) + 10 * (save + k) + c;
          e[i * saves + k] = -(100 * (row + i) + 10 * (save + k));
        }
      mem.write_block("f/q", row, count, save, saves, 2, q.data());
      mem.write_block("f/energy", row, count, save, saves, 1, e.data());
    }
  EXPECT_THROW(mem.write_block("f/q", 4, 2, 0, 1, 2, std::vector<double>(4).data()),
               std::logic_error);  // trajectories 4, 5 of 5
  EXPECT_THROW(mem.write_block("f/q", 0, 1, 3, 2, 2, std::vector<double>(4).data()),
               std::logic_error);  // saves 3, 4 of 4
  EXPECT_THROW(mem.write_block("f/q", 0, 1, 0, 1, 1, std::vector<double>(1).data()),
               std::logic_error);  // one component of two
  EXPECT_THROW(mem.allocate("f/status", {5}), std::logic_error);
  std::vector<FieldMemory::Array> arrays = mem.release();
  ASSERT_EQ(arrays.size(), 2u);
  EXPECT_FALSE(mem.has("f/q"));
  const FieldMemory::Array& energy = arrays[0];  // in the order of their paths
  const FieldMemory::Array& q = arrays[1];
  EXPECT_EQ(energy.path, "f/energy");
  EXPECT_EQ(q.dims, (std::vector<int64_t>{5, 4, 2}));
  for (int i = 0; i < 5; ++i)
    for (int k = 0; k < 4; ++k) {
      EXPECT_EQ(energy.data[i * 4 + k], -(100 * i + 10 * k));
      for (int c = 0; c < 2; ++c) EXPECT_EQ(q.data[(i * 4 + k) * 2 + c], 100 * i + 10 * k + c);
    }
}

bool same_bytes(const std::vector<double>& a, const double* b, size_t n) {
  return a.size() == n && std::memcmp(a.data(), b, n * sizeof(double)) == 0;
}

// Two formulations (and their comparison), 2,500 coins in three slices of a
// 1 MB budget, 13 saves in windows of 5: every block of the arrays is placed
// by a slice and a window offset.
TEST(FieldMemory, ARunsArraysAndFileEqualTheCommandsFile) {
  const fs::path dir = nholo_test::temp_dir("nholo_field_memory", "run");
  nholo_test::CoinConfig c = nholo_test::compared_coins();
  c.memory_budget_mb = 1;
  c.window = 5;
  nholo_test::write_file(dir / "c.toml", c.text());
  ASSERT_EQ(nholo_test::run_nholo("run -q c.toml", dir).code, 0);

  const nholo::RunConfig cfg = nholo::load_config(
      (dir / "c.toml").string(), {"output.path=\"" + (dir / "b.h5").string() + "\""});
  FieldMemory mem;
  nholo::CommandOptions opts;
  opts.quiet = true;
  opts.memory = &mem;
  const nholo::RunSummary sum = nholo::run_command(cfg, opts);
  ASSERT_EQ(sum.completed, 2500);
  ASSERT_FALSE(sum.interrupted);
  EXPECT_EQ(sum.slice_size, 1024);  // really sliced
  std::vector<FieldMemory::Array> arrays = mem.release();
  ASSERT_EQ(arrays.size(), 6u);  // 2 formulations x 3 fields

  const File a = File::open_ro((dir / "a.h5").string());
  const File b = File::open_ro((dir / "b.h5").string());
  for (const FieldMemory::Array& arr : arrays) {
    SCOPED_TRACE(arr.path);
    const nholo::h5::Dataset in_a = a.root().open_dataset(arr.path);
    const nholo::h5::Dataset in_b = b.root().open_dataset(arr.path);
    const std::vector<hsize_t> dims = in_a.dims();
    ASSERT_EQ(std::vector<int64_t>(dims.begin(), dims.end()), arr.dims);
    EXPECT_EQ(in_b.dims(), dims);
    EXPECT_TRUE(same_bytes(in_a.read<double>(), arr.data.get(), in_a.read<double>().size()));
    EXPECT_EQ(H5Dget_storage_size(in_b.id()), 0u);  // a dataset without storage
  }
  for (const char* form : {"udwadia_kalaba", "lagrange_multiplier"}) {
    const std::string f = form;
    for (const std::string& ds :
         {f + "/fail_time", "statistics/" + f + "/mean", "statistics/" + f + "/qdot_variance",
          "statistics/" + f + "/drift_ratio", std::string("initial/q0"),
          std::string("initial/qdot0"),
          std::string("compare/udwadia_kalaba__lagrange_multiplier/max_distance")}) {
      const std::vector<double> va = a.root().open_dataset(ds).read<double>();
      EXPECT_TRUE(same_bytes(va, b.root().open_dataset(ds).read<double>().data(), va.size())) << ds;
    }
    EXPECT_EQ(a.root().open_dataset(f + "/steps").read<int64_t>(),
              b.root().open_dataset(f + "/steps").read<int64_t>());
    EXPECT_EQ(a.root().open_dataset(f + "/status").read<int32_t>(),
              b.root().open_dataset(f + "/status").read<int32_t>());
  }
  EXPECT_EQ(b.root().attr_int64("complete"), 1);
  EXPECT_FALSE(fs::exists(dir / "b.h5.partial"));
  EXPECT_FALSE(fs::exists(dir / "b.h5.partial.d"));
}

}  // namespace
