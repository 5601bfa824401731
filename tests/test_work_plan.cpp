// The work plan of an MPI run (host/run/work_plan.hpp): parcels cover the ensemble
// exactly once in whole blocks, shard files found on disk are adopted as they
// are, overlapping or misaligned ones are refused by name, the static
// partition gives every rank a contiguous, balanced run of parcels, and the
// shard files of an output are recognised by name (and nothing else is).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "host/config/config.hpp"
#include "host/run/work_plan.hpp"
#include "tests/nholo_cli.hpp"

namespace fs = std::filesystem;
using nholo::Parcel;
using nholo::ShardFile;

namespace {

// Every trajectory of [0, size) in exactly one parcel, parcels in order,
// block-aligned starts.
void expect_cover(const std::vector<Parcel>& c, int64_t size) {
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c.front().begin, 0);
  for (size_t i = 0; i < c.size(); ++i) {
    EXPECT_LT(c[i].begin, c[i].end);
    EXPECT_EQ(c[i].begin % 1024, 0);
    if (i + 1 < c.size()) {
      EXPECT_EQ(c[i].end, c[i + 1].begin);
    }
  }
  EXPECT_EQ(c.back().end, size);
}

}  // namespace

TEST(WorkPlan, ParcelsCoverTheEnsembleOnceInWholeBlocks) {
  for (int64_t size : {1, 1023, 1024, 1025, 7300, 65536, 1000000})
    for (int64_t pb : {1, 3, 64}) {
      SCOPED_TRACE(std::to_string(size) + " / " + std::to_string(pb));
      const auto c = nholo::plan_parcels(size, pb, {});
      expect_cover(c, size);
      for (size_t i = 0; i + 1 < c.size(); ++i) EXPECT_EQ(c[i].end - c[i].begin, pb * 1024);
      const int64_t blocks = (size + 1023) / 1024;
      EXPECT_EQ(static_cast<int64_t>(c.size()), (blocks + pb - 1) / pb);
    }
  EXPECT_THROW(nholo::plan_parcels(7300, 0, {}), nholo::ConfigError);
}

TEST(WorkPlan, FoundShardFilesAreAdoptedAsTheyAre) {
  // an earlier run with other parcels: [2048, 5120) complete, [6144, 7300) partial
  std::vector<ShardFile> found = {{"b", 6144, 7300, false, true}, {"a", 2048, 5120, true, false}};
  const auto c = nholo::plan_parcels(7300, 2, found);
  expect_cover(c, 7300);
  std::vector<std::pair<int64_t, int64_t>> got;
  for (const auto& x : c) got.push_back({x.begin, x.end});
  const std::vector<std::pair<int64_t, int64_t>> want = {
      {0, 2048}, {2048, 5120}, {5120, 6144}, {6144, 7300}};
  EXPECT_EQ(got, want);
  EXPECT_FALSE(c[0].found);
  EXPECT_TRUE(c[1].found && c[1].complete);
  EXPECT_FALSE(c[2].found);
  EXPECT_TRUE(c[3].found);
  EXPECT_FALSE(c[3].complete);  // a .partial to continue
}

TEST(WorkPlan, OverlappingOrMisalignedShardFilesAreRefusedByName) {
  auto message = [](const std::vector<ShardFile>& f) {
    try {
      nholo::plan_parcels(7300, 2, f);
    } catch (const nholo::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string overlap =
      message({{"x.shard-0-4096.h5", 0, 4096, true, false}, {"x.shard-2048-3072.h5", 2048, 3072, true, false}});
  EXPECT_NE(overlap.find("'x.shard-0-4096.h5' and 'x.shard-2048-3072.h5' overlap"), std::string::npos)
      << overlap;
  const std::string misaligned = message({{"x.shard-100-2048.h5", 100, 2048, true, false}});
  EXPECT_NE(misaligned.find("'x.shard-100-2048.h5' holds trajectories [100, 2048)"), std::string::npos)
      << misaligned;
  const std::string outside = message({{"x.shard-0-9216.h5", 0, 9216, true, false}});
  EXPECT_NE(outside.find("not a block-aligned part of this ensemble of 7300"), std::string::npos)
      << outside;
}

TEST(WorkPlan, StaticPartitionIsContiguousAndBalanced) {
  for (int64_t parcels : {1, 2, 7, 8, 64, 1000})
    for (int ranks : {1, 2, 3, 7, 64}) {
      SCOPED_TRACE(std::to_string(parcels) + " parcels, " + std::to_string(ranks) + " ranks");
      std::vector<int64_t> count(ranks, 0);
      int prev = 0;
      for (int64_t i = 0; i < parcels; ++i) {
        const int r = nholo::static_owner(i, parcels, ranks);
        ASSERT_GE(r, 0);
        ASSERT_LT(r, ranks);
        EXPECT_GE(r, prev);  // contiguous runs, in rank order
        prev = r;
        ++count[r];
      }
      // r owns [r*C/R, (r+1)*C/R): sizes differ by at most one
      for (int r = 0; r < ranks; ++r)
        EXPECT_EQ(count[r], (r + 1) * parcels / ranks - r * parcels / ranks);
    }
}

TEST(WorkPlan, DefaultParcelsGiveEveryRankSeveralAndStayBounded) {
  EXPECT_EQ(nholo::default_parcel_blocks(7300, 3), 1);      // 8 blocks: one per parcel
  EXPECT_EQ(nholo::default_parcel_blocks(1 << 20, 4), 64);  // 1024 blocks over 16 parcels
  EXPECT_EQ(nholo::default_parcel_blocks(int64_t(1) << 34, 2),
            1024);  // capped at 2^20 trajectories
  EXPECT_EQ(nholo::default_parcel_blocks(1, 64), 1);
}

TEST(WorkPlan, ShardFilesOfAnOutputAreFoundByName) {
  const fs::path dir = nholo_test::temp_dir("nholo_work_plan", "find");
  for (const char* f : {"out.shard-0-1024.h5", "out.shard-1024-4096.h5.partial", "out.shard-1024-4096.h5",
                        "out.shard-4096-7300.h5.partial", "out.h5", "other.shard-0-1024.h5",
                        "out.shard-a-1024.h5", "out.shard-0-1024.nc", "out.shard--5-1024.h5",
                        "out.shard-0-1024.h5.lock"})
    std::ofstream(dir / f) << "x";
  const auto found = nholo::find_shard_files((dir / "out.h5").string());
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0].begin, 0);
  EXPECT_EQ(found[0].end, 1024);
  EXPECT_TRUE(found[0].complete && !found[0].partial);
  EXPECT_EQ(found[1].begin, 1024);
  EXPECT_TRUE(found[1].complete && found[1].partial);
  EXPECT_EQ(found[2].end, 7300);
  EXPECT_TRUE(!found[2].complete && found[2].partial);
  EXPECT_EQ(fs::path(found[2].path).filename(), "out.shard-4096-7300.h5");
  fs::remove_all(dir);
}

// make_plan: a fresh output is cut into parcels; what is in the way is refused
// without --overwrite and removed with it (the shard files of an earlier run).
TEST(WorkPlan, MakePlanRefusesOrDiscardsWhatIsInTheWay) {
  const fs::path dir = nholo_test::temp_dir("nholo_work_plan", "make");
  nholo::RunConfig cfg;
  cfg.output_path = (dir / "out.h5").string();
  cfg.size = 5000;
  cfg.result_hash = "h";
  nholo::WorkRequest req;
  req.parcel_blocks = 2;
  nholo::WorkPlan plan = nholo::make_plan(cfg, req);
  EXPECT_FALSE(plan.complete);
  expect_cover(plan.parcels, 5000);
  EXPECT_EQ(plan.parcels.size(), 3u);
  std::ofstream(dir / "out.shard-0-1024.h5") << "x";
  try {
    nholo::make_plan(cfg, req);
    ADD_FAILURE() << "shard files in the way";
  } catch (const nholo::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("pass --resume to continue them, or --overwrite"),
              std::string::npos)
        << e.what();
  }
  req.overwrite = true;
  plan = nholo::make_plan(cfg, req);
  EXPECT_FALSE(fs::exists(dir / "out.shard-0-1024.h5"));
  expect_cover(plan.parcels, 5000);
  fs::remove_all(dir);
}
