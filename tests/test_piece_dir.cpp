// nholo/tests/test_piece_dir.cpp — the pieces of a run (host/io/pieces.hpp):
// PieceDir's names and paths, its folder (create, remove_temporaries,
// remove_all), a Piece visible only once committed (written as NAME.tmp,
// renamed), a piece dropped when not committed, and commit_file / fsync_path.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "host/io/h5.hpp"
#include "host/io/pieces.hpp"
#include "tests/nholo_cli.hpp"

namespace fs = std::filesystem;
using nholo::Piece;
using nholo::PieceDir;

namespace {

fs::path temp_dir(const std::string& name) {
  return nholo_test::temp_dir("nholo_pieces", name);
}

TEST(PieceDir, NamesAndPaths) {
  EXPECT_EQ(PieceDir::init_name(3), "init_3.h5");
  EXPECT_EQ(PieceDir::window_name(2, 15), "window_2_15.h5");
  EXPECT_EQ(PieceDir::slice_name(0), "slice_0.h5");
  const PieceDir d("/data/runs/out.h5");
  EXPECT_EQ(d.dir(), "/data/runs/out.h5.partial.d");
  EXPECT_EQ(d.path("slice_1.h5"), "/data/runs/out.h5.partial.d/slice_1.h5");
  // the master (next to the folder) refers to its pieces by relative paths
  EXPECT_EQ(d.relative("slice_1.h5"), "out.h5.partial.d/slice_1.h5");
  EXPECT_EQ(PieceDir("out.h5").relative("init_0.h5"), "out.h5.partial.d/init_0.h5");
}

TEST(PieceDir, CreateIsIdempotentAndFailsWithThePath) {
  const fs::path dir = temp_dir("create");
  const PieceDir d((dir / "out.h5").string());
  d.create();
  EXPECT_TRUE(fs::is_directory(d.dir()));
  d.create();  // fine when it exists
  EXPECT_TRUE(fs::is_directory(d.dir()));
  const PieceDir bad((dir / "missing" / "out.h5").string());
  try {
    bad.create();
    ADD_FAILURE() << "create() in a missing folder did not throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(bad.dir()), std::string::npos) << e.what();
  }
  d.remove_all();
  EXPECT_FALSE(fs::exists(d.dir()));
  d.remove_all();  // nothing to remove: fine
}

// A piece is written under NAME.tmp and shows under NAME, whole, at commit().
TEST(PieceDir, PieceIsVisibleOnlyOnceCommitted) {
  const fs::path dir = temp_dir("commit");
  const PieceDir d((dir / "out.h5").string());
  d.create();
  const std::string name = PieceDir::window_name(0, 1);
  const std::vector<double> data = {1.0, 2.0, 3.0, 4.0, 5.0, 6.0};
  {
    Piece p(d, name);
    p.write<double>("fields/q", {2, 3}, {2, 3}, 0, data.data());
    EXPECT_FALSE(d.has(name));
    EXPECT_TRUE(fs::exists(d.path(name) + ".tmp"));
    p.commit();
    EXPECT_TRUE(d.has(name));
    EXPECT_FALSE(fs::exists(d.path(name) + ".tmp"));
  }
  EXPECT_TRUE(d.has(name));  // the destructor keeps a committed piece
  const auto f = nholo::h5::File::open_ro(d.path(name));
  EXPECT_EQ(f.root().open_dataset("fields/q").read<double>(), data);
}

// A piece not committed (an error while writing it) leaves nothing behind.
TEST(PieceDir, UncommittedPieceLeavesNothing) {
  const fs::path dir = temp_dir("drop");
  const PieceDir d((dir / "out.h5").string());
  d.create();
  const std::string name = PieceDir::slice_name(4);
  {
    Piece p(d, name);
    const std::vector<int32_t> status = {0, 1, 2};
    p.write<int32_t>("status", {3}, {3}, 0, status.data());
  }
  EXPECT_FALSE(d.has(name));
  EXPECT_FALSE(fs::exists(d.path(name) + ".tmp"));
  EXPECT_TRUE(fs::is_empty(d.dir()));
}

// A killed run's temporaries: a new Piece of the same name replaces its
// leftover; remove_temporaries() removes every *.tmp and nothing else.
TEST(PieceDir, LeftoverTemporaries) {
  const fs::path dir = temp_dir("leftover");
  const PieceDir d((dir / "out.h5").string());
  d.create();
  nholo_test::write_file(d.path("init_0.h5.tmp"), "half-written");
  nholo_test::write_file(d.path("window_0_0.h5.tmp"), "half-written");
  {
    Piece p(d, PieceDir::init_name(0));
    const std::vector<double> q0 = {0.5};
    p.write<double>("initial/q0", {1}, {1}, 0, q0.data());
    p.commit();
  }
  EXPECT_TRUE(d.has(PieceDir::init_name(0)));
  EXPECT_EQ(nholo::h5::File::open_ro(d.path("init_0.h5"))
                .root()
                .open_dataset("initial/q0")
                .read<double>(),
            std::vector<double>{0.5});
  EXPECT_TRUE(fs::exists(d.path("window_0_0.h5.tmp")));
  d.remove_temporaries();
  EXPECT_FALSE(fs::exists(d.path("window_0_0.h5.tmp")));
  EXPECT_TRUE(d.has(PieceDir::init_name(0)));
  d.remove_all();
  EXPECT_FALSE(fs::exists(d.dir()));
  d.remove_temporaries();  // no folder: nothing to do
}

TEST(PieceDir, CommitFileRenamesDurably) {
  const fs::path dir = temp_dir("commit_file");
  const std::string tmp = (dir / "a.h5.tmp").string(), final_path = (dir / "a.h5").string();
  nholo_test::write_file(tmp, "contents");
  nholo::commit_file(tmp, final_path);
  EXPECT_FALSE(fs::exists(tmp));
  std::ifstream f(final_path);
  std::string s;
  std::getline(f, s);
  EXPECT_EQ(s, "contents");
  // a missing file: the error names it
  const std::string missing = (dir / "missing.tmp").string();
  try {
    nholo::commit_file(missing, final_path);
    ADD_FAILURE() << "commit_file of a missing file did not throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
  EXPECT_THROW(nholo::fsync_path((dir / "nowhere").string(), true), std::runtime_error);
  EXPECT_NO_THROW(nholo::fsync_path(dir.string(), true));
}

}  // namespace
