// Shards and merge (issue: beyond one machine): the ensemble run as R = 1, 2,
// 3 and 7 shards (`run --shard r/R`, and `--range`), merged by `nholo merge`
// (virtual datasets over the shards, and --copy), gives every dataset and
// statistic bitwise equal to a single run of the same configuration; a
// missing or duplicated shard is named with its trajectory and block ranges.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "host/io/h5.hpp"
#include "tests/nholo_cli.hpp"
#include "tests/coin_config.hpp"

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
    }
    std::printf("R = %d: merged (virtual and --copy) equal to the single run in every dataset\n", R);
  }
}

TEST(Shards, MergeNamesMissingAndDuplicatedRanges) {
  const fs::path dir = nholo_test::temp_dir("nholo_shards", "coverage");
  write_file(dir / "c.toml", kConfig);
  for (const char* r : {"0:2048", "2048:5120", "5120:7300"})
    ASSERT_EQ(run_nholo(std::string("run -q c.toml --range ") + r, dir).code, 0) << r;
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
