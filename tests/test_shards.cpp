// Shards and merge (issue: beyond one machine): the ensemble run as R = 1, 2,
// 3 and 7 shards (`run --shard r/R`, and `--range`), merged by `nholo merge`
// (virtual datasets over the shards, and --copy), gives every dataset and
// statistic bitwise equal to a single run of the same configuration; a
// missing or duplicated shard is named with its trajectory and block ranges.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "host/io/h5.hpp"
#include "tests/coin_config.hpp"
#include "tests/nholo_cli.hpp"

namespace fs = std::filesystem;

namespace {

using nholo_test::Result;
using nholo_test::run_nholo;
using nholo_test::write_file;

// 7300 trajectories: 8 blocks of 1024 (the last partial), two formulations.
const std::string kConfig = [] {
  return nholo_test::shard_coins(1.0, 0.125, 7300).text();
}();


}  // namespace

TEST(Shards, MergedShardsEqualASingleRunBitwise) {
  const fs::path dir = nholo_test::temp_dir("nholo_shards", "merge");
  write_file(dir / "c.toml", kConfig);
  ASSERT_EQ(run_nholo("run -q c.toml --set output.path=single.h5", dir).code, 0);
  for (int R : {1, 2, 3, 7}) {
    SCOPED_TRACE("R = " + std::to_string(R));
    const fs::path sub = dir / ("R" + std::to_string(R));
    fs::create_directories(sub);
    write_file(sub / "c.toml", kConfig);
    for (int r = 0; r < R; ++r) {
      // shards may use other thread counts and memory budgets (slices)
      const Result res = run_nholo("run -q c.toml --shard " + std::to_string(r) + "/" + std::to_string(R) +
                                       " --threads " + std::to_string(1 + r % 2) +
                                       " --set output.memory_budget_mb=" + std::to_string(1 + 3 * (r % 2)),
                                   sub);
      ASSERT_EQ(res.code, 0) << res.output;
    }
    std::vector<std::string> shards;
    for (const auto& e : fs::directory_iterator(sub))
      if (e.path().extension() == ".h5") shards.push_back(e.path().filename().string());
    ASSERT_EQ(shards.size(), static_cast<size_t>(R));
    std::string list;
    for (const auto& s : shards) list += " " + s;
    for (const char* how : {"", "--copy "}) {
      fs::remove(sub / "merged.h5");
      const Result m = run_nholo(std::string("merge ") + how + "merged.h5" + list, sub);
      ASSERT_EQ(m.code, 0) << m.output;
      const Result same = nholo_test::fault_check("same", dir / "single.h5", sub / "merged.h5");
      EXPECT_EQ(same.code, 0) << how << same.output;
      const auto root = nholo::h5::File::open_ro((sub / "merged.h5").string()).root();
      EXPECT_EQ(root.attr_string("merge"), *how ? "copy" : "virtual");
      // what ran the shards (OpenMP, 1 or 2 threads), their launches and bytes added up
      EXPECT_EQ(root.attr_string("backend"), "omp");
      EXPECT_EQ(root.attr_int64("threads"), R > 1 ? 2 : 1);
      EXPECT_NE(root.attr_string("device_name").find("OpenMP"), std::string::npos);
      int64_t launches = 0, bytes = 0;
      for (const auto& sh : shards) {
        const auto r = nholo::h5::File::open_ro((sub / sh).string()).root();
        launches += r.attr_int64("integration_launches");
        bytes += r.attr_int64("output_bytes");
      }
      EXPECT_EQ(root.attr_int64("integration_launches"), launches);
      EXPECT_EQ(root.attr_int64("output_bytes"), bytes);
      EXPECT_GT(bytes, 0);
    }
    std::printf("R = %d: merged (virtual and --copy) equal to the single run in every dataset\n", R);
  }
}

TEST(Shards, MergeNamesMissingAndDuplicatedRanges) {
  const fs::path dir = nholo_test::temp_dir("nholo_shards", "coverage");
  write_file(dir / "c.toml", kConfig);
  for (const char* r : {"0:2048", "2048:5120", "5120:7300"}) {
    const Result run = run_nholo(std::string("run c.toml --range ") + r, dir);
    ASSERT_EQ(run.code, 0) << r << "\n" << run.output;
    // the run names the file it wrote, its shard's
    std::string file = std::string("out.shard-") + r + ".h5";
    file[file.find(':')] = '-';
    EXPECT_NE(run.output.find("nholo: wrote " + file + " ("), std::string::npos) << run.output;
  }
  const Result missing =
      run_nholo("merge m.h5 out.shard-0-2048.h5 out.shard-5120-7300.h5", dir);
  EXPECT_EQ(missing.code, 2) << missing.output;
  EXPECT_NE(missing.output.find("missing trajectories [2048, 5120) (blocks 2 to 4)"), std::string::npos)
      << missing.output;
  const Result dup = run_nholo(
      "merge m.h5 out.shard-0-2048.h5 out.shard-2048-5120.h5 out.shard-2048-5120.h5 "
      "out.shard-5120-7300.h5",
      dir);
  EXPECT_EQ(dup.code, 2) << dup.output;
  EXPECT_NE(dup.output.find("duplicated trajectories [2048, 5120) (blocks 2 to 4)"), std::string::npos)
      << dup.output;
  EXPECT_FALSE(fs::exists(dir / "m.h5"));
  // shards of another configuration are refused
  ASSERT_EQ(run_nholo("run -q c.toml --range 5120:7300 --set params.slope=0.2 --set output.path=o.h5", dir).code, 0);
  const Result other = run_nholo("merge m.h5 out.shard-0-2048.h5 out.shard-2048-5120.h5 o.shard-5120-7300.h5", dir);
  EXPECT_EQ(other.code, 2) << other.output;
  EXPECT_NE(other.output.find("different configurations"), std::string::npos) << other.output;
  // bad shard specifications
  for (const char* bad : {"--shard 3/3", "--shard 1/9", "--shard x", "--range 100:2048", "--range 0:9000",
                          "--shard 0/2 --range 0:1024"}) {
    const Result r = run_nholo(std::string("run -q c.toml ") + bad, dir);
    EXPECT_EQ(r.code, 2) << bad << "\n" << r.output;
  }
}

// A virtual merged file reads its trajectories from its shards: every read
// (stats, compare, diff) checks that each shard is beside it and is the one
// it was merged from, and HDF5 looks for them there, never first in the
// current folder.
TEST(Shards, AMergedFileReadsOnlyItsOwnShards) {
  const fs::path dir = nholo_test::temp_dir("nholo_shards", "sources");
  write_file(dir / "c.toml", kConfig);
  for (const char* r : {"0:2048", "2048:7300"})
    ASSERT_EQ(run_nholo(std::string("run -q c.toml --range ") + r, dir).code, 0) << r;
  ASSERT_EQ(run_nholo("merge m.h5 out.shard-0-2048.h5 out.shard-2048-7300.h5", dir).code, 0);
  const std::string merged = (dir / "m.h5").string();
  const Result stats = run_nholo("stats '" + merged + "'", dir);
  const Result cmp = run_nholo("compare '" + merged + "'", dir);
  ASSERT_EQ(stats.code, 0) << stats.output;
  ASSERT_EQ(cmp.code, 0) << cmp.output;
  EXPECT_NE(stats.output.find("complete"), std::string::npos) << stats.output;

  // a folder holding same-named shards of another configuration: read from
  // there, the merged file still reads its own shards
  const fs::path other = dir / "other";
  fs::create_directories(other);
  write_file(other / "c.toml", kConfig);
  for (const char* r : {"0:2048", "2048:7300"})
    ASSERT_EQ(run_nholo(std::string("run -q c.toml --set params.slope=0.2 --range ") + r, other).code, 0);
  EXPECT_EQ(run_nholo("stats '" + merged + "'", other).output, stats.output);
  EXPECT_EQ(run_nholo("compare '" + merged + "'", other).output, cmp.output);

  auto refused = [&](const fs::path& file, const std::string& shard, const std::string& why) {
    const std::string message = "is incomplete: its shard '" + shard + "' " + why;
    // the figure scripts' reader (scripts/nholo_plot_common.py) checks the same
    const std::string py = "cd '" + dir.string() + "' && '" + NHOLO_PYTHON3 +
                           "' -c 'import sys; sys.path.insert(0, \"" + NHOLO_SOURCE_DIR +
                           "/scripts\"); import nholo_plot_common as c; c.open_result(sys.argv[1])' '" +
                           file.string() + "' > py.log 2>&1";
    const int rc = std::system(py.c_str());
    std::ifstream log(dir / "py.log");
    const std::string py_out((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 2) << py_out;
    EXPECT_NE(py_out.find(message), std::string::npos) << py_out;
    for (const std::string cmd : {"stats", "compare", "diff"}) {
      const std::string args =
          cmd + " '" + file.string() + "'" + (cmd == "diff" ? " '" + file.string() + "'" : "");
      const Result r = run_nholo(args, dir);
      EXPECT_EQ(r.code, 2) << args << "\n" << r.output;
      EXPECT_NE(r.output.find(message), std::string::npos) << args << "\n" << r.output;
    }
  };
  // copied among the other configuration's shards: foreign
  fs::copy_file(dir / "m.h5", other / "m.h5");
  refused(other / "m.h5", (other / "out.shard-0-2048.h5").string(), "is foreign");
  // copied away from its shards: missing
  fs::create_directories(dir / "away");
  fs::copy_file(dir / "m.h5", dir / "away" / "m.h5");
  refused(dir / "away" / "m.h5", (dir / "away" / "out.shard-0-2048.h5").string(), "is missing");
  // a shard changed after the merge (bytes appended)
  fs::copy_file(dir / "out.shard-2048-7300.h5", dir / "keep.h5");
  {
    std::ofstream app(dir / "out.shard-2048-7300.h5", std::ios::binary | std::ios::app);
    app << "appended";
  }
  refused(dir / "m.h5", (dir / "out.shard-2048-7300.h5").string(), "has changed since the merge");
  // a shard deleted
  fs::remove(dir / "out.shard-2048-7300.h5");
  refused(dir / "m.h5", (dir / "out.shard-2048-7300.h5").string(), "is missing");
  // put back, the file reads as before
  fs::rename(dir / "keep.h5", dir / "out.shard-2048-7300.h5");
  EXPECT_EQ(run_nholo("stats '" + merged + "'", dir).output, stats.output);
  // --copy makes a self-contained file that needs no shards
  ASSERT_EQ(run_nholo("merge --copy c.h5 out.shard-0-2048.h5 out.shard-2048-7300.h5", dir).code, 0);
  fs::copy_file(dir / "c.h5", dir / "away" / "c.h5");
  EXPECT_EQ(run_nholo("stats '" + (dir / "away" / "c.h5").string() + "'", dir).code, 0);
}

// A shard edited by hand (its events group deleted, a per-trajectory dataset
// of another shape) is refused by the merge, which names the shard and the
// dataset, instead of merging fill values in its place.
TEST(Shards, MergeRefusesAShardWithoutADatasetOrWithAnotherShape) {
  const fs::path dir = nholo_test::temp_dir("nholo_shards", "edited");
  write_file(dir / "c.toml", nholo_test::shard_coins(0.5, 0.125, 2048).text() + R"toml(
[[events]]
name = "half_turn"
expr = "sin(theta)"
max_records = 3
)toml");
  for (const char* r : {"0:1024", "1024:2048"})
    ASSERT_EQ(run_nholo(std::string("run -q c.toml --range ") + r, dir).code, 0) << r;
  const std::string a = "out.shard-0-1024.h5", b = "out.shard-1024-2048.h5";
  ASSERT_EQ(run_nholo("merge whole.h5 " + a + " " + b, dir).code, 0);
  fs::copy_file(dir / b, dir / "b_copy.h5");
  {
    const hid_t f = H5Fopen((dir / b).c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    ASSERT_GE(H5Ldelete(f, "null_space/events/half_turn", H5P_DEFAULT), 0);
    H5Fclose(f);
  }
  for (const char* how : {"", "--copy "}) {
    const Result m = run_nholo(std::string("merge ") + how + "m.h5 " + a + " " + b, dir);
    EXPECT_EQ(m.code, 2) << how << m.output;
    EXPECT_NE(m.output.find("'" + b +
                            "' is not a shard of this merge: it has no dataset "
                            "/null_space/events/half_turn/count"),
              std::string::npos)
        << m.output;
    EXPECT_FALSE(fs::exists(dir / "m.h5"));
  }
  // the same dataset of another shape: named with both shapes
  fs::remove(dir / b);
  fs::rename(dir / "b_copy.h5", dir / b);
  {
    const hid_t f = H5Fopen((dir / b).c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    ASSERT_GE(H5Ldelete(f, "udwadia_kalaba/events/half_turn/time", H5P_DEFAULT), 0);
    const hsize_t dims[2] = {1000, 3};
    const hid_t space = H5Screate_simple(2, dims, nullptr);
    const hid_t d = H5Dcreate2(f, "udwadia_kalaba/events/half_turn/time", H5T_IEEE_F64LE, space,
                               H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(d, 0);
    H5Dclose(d);
    H5Sclose(space);
    H5Fclose(f);
  }
  const Result m = run_nholo("merge m.h5 " + a + " " + b, dir);
  EXPECT_EQ(m.code, 2) << m.output;
  EXPECT_NE(m.output.find("its /udwadia_kalaba/events/half_turn/time has the shape (1000, 3), "
                          "not (1024, 3)"),
            std::string::npos)
      << m.output;
}
