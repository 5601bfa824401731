// Result files that declare more than they hold (damaged or crafted): the
// readers refuse them with a message that names the dataset and its shape,
// before allocating what the file declares (host/io/h5.hpp's read budget and
// the shape checks of host/analysis/stats.cpp).
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "tests/cli_coin_run.hpp"

namespace {

namespace fs = std::filesystem;
using nholo_test::Result;
using nholo_test::write_file;
using nholo_test::cli::kCoinConfig;
using nholo_test::cli::nholo;
using nholo_test::cli::temp_dir;

// Replaces the dataset `name` of the HDF5 file `file` by a chunked one of
// doubles of shape dims of which nothing is written (the file stores no
// value of it; a read returns the fill value).
void replace_by_unwritten(const fs::path& file, const std::string& name,
                          const std::vector<hsize_t>& dims) {
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  ASSERT_GE(H5Ldelete(f, name.c_str(), H5P_DEFAULT), 0) << name;
  const hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  std::vector<hsize_t> chunk(dims.size(), 1);
  chunk[0] = 4096;
  ASSERT_GE(H5Pset_chunk(dcpl, static_cast<int>(chunk.size()), chunk.data()), 0);
  const hid_t d =
      H5Dcreate2(f, name.c_str(), H5T_IEEE_F64LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  ASSERT_GE(d, 0) << name;
  H5Dclose(d);
  H5Pclose(dcpl);
  H5Sclose(space);
  H5Fclose(f);
}

TEST(CraftedFiles, StatsRefusesDeclaredSizesInsteadOfAllocatingThem) {
  const fs::path dir = temp_dir("crafted_stats");
  write_file(dir / "coin.toml", kCoinConfig);
  const std::string quick = " --set time.t_end=0.5 --set ensemble.size=16";
  ASSERT_EQ(nholo("run -q coin.toml --set output.path=a.h5" + quick, dir).code, 0);
  ASSERT_EQ(nholo("stats a.h5", dir).code, 0);
  fs::copy_file(dir / "a.h5", dir / "b.h5");

  // the per-save mean declared (10^9, 3): 24 GB that the file does not hold
  replace_by_unwritten(dir / "a.h5", "statistics/udwadia_kalaba/mean", {1000000000, 3});
  Result r = nholo("stats a.h5", dir);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("/statistics/udwadia_kalaba/mean has the shape (1000000000, 3)"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("bad_alloc"), std::string::npos) << r.output;

  // a time axis of 10^7 saves, within the shape check: the read budget
  // (here 1 MiB) refuses it, naming the dataset, its shape and what it stores
  replace_by_unwritten(dir / "b.h5", "statistics/udwadia_kalaba/time", {10000000});
  r = nholo_test::run_nholo("stats b.h5", dir, "NHOLO_READ_BUDGET_MB=1");
  EXPECT_EQ(r.code, 2) << r.output;
  for (const char* w :
       {"/statistics/udwadia_kalaba/time", "(10000000)", "read budget of 1 MiB", "stores 0 bytes"})
    EXPECT_NE(r.output.find(w), std::string::npos) << w << "\n" << r.output;
}

// Overwrites the int64 dataset `name` of `file` with `value` everywhere.
void fill_int64(const fs::path& file, const std::string& name, int64_t value) {
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  const hid_t d = H5Dopen2(f, name.c_str(), H5P_DEFAULT);
  ASSERT_GE(d, 0) << name;
  const hid_t space = H5Dget_space(d);
  const std::vector<int64_t> v(static_cast<size_t>(H5Sget_simple_extent_npoints(space)), value);
  EXPECT_GE(H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), 0);
  H5Sclose(space);
  H5Dclose(d);
  H5Fclose(f);
}

// event counts: a negative one is a damaged file; a total beyond int64
// is printed as "at least" the largest, never as a wrapped negative number
TEST(CraftedFiles, StatsRefusesNegativeEventCountsAndNeverPrintsAWrappedTotal) {
  const fs::path dir = temp_dir("crafted_counts");
  write_file(dir / "coin.toml", kCoinConfig + R"toml(
[[events]]
name = "half_turn"
expr = "sin(theta)"
direction = "both"
max_records = 4
)toml");
  const std::string quick = " --set time.t_end=0.5 --set ensemble.size=16";
  for (const char* f : {"neg.h5", "big.h5"})
    ASSERT_EQ(nholo("run -q coin.toml --set output.path=" + std::string(f) + quick, dir).code, 0);
  const std::string count = "udwadia_kalaba/events/half_turn/count";
  fill_int64(dir / "neg.h5", count, -5);
  Result r = nholo("stats neg.h5", dir);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("half_turn/count holds a negative count, -5"), std::string::npos)
      << r.output;
  fill_int64(dir / "big.h5", count, std::numeric_limits<int64_t>::max() / 4);
  r = nholo("stats big.h5", dir);
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("at least 9223372036854775807 crossings"), std::string::npos) << r.output;
}

}  // namespace
