// nholo/tests/test_piece_dir.cpp — the pieces of a run (host/io/pieces.hpp):
// PieceDir's names and paths, its folder (create, remove_temporaries,
// remove_all), a Piece visible only once committed (written as NAME.tmp,
// renamed), a piece dropped when not committed, commit_file / fsync_path,
// and the result file written in place (host/io/in_place_file.hpp): blocks
// into their chunks, read back by HDF5 itself, directly and through a
// piece's external link; the undo file of the last step.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "host/io/h5.hpp"
#include "host/io/in_place_file.hpp"
#include "host/io/pieces.hpp"
#include "tests/chunk_damage.hpp"
#include "tests/h5_test_fixture.hpp"
#include "tests/nholo_cli.hpp"

namespace fs = std::filesystem;
using nholo::FieldBlock;
using nholo::InPlaceFile;
using nholo::Piece;
using nholo::PieceDir;
using nholo::RowWriter;

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

std::string file_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// A result file of one field, 5 trajectories x 7 saves x 2 components,
// chunked 2 x 3 x 2 (edge chunks along both axes), every chunk placed.
PieceDir allocated_result(const fs::path& dir) {
  const PieceDir d((dir / "out.h5").string());
  d.create();
  nholo::h5::File f = nholo::h5::File::create(InPlaceFile(d).path());
  nholo::h5::Group r = f.root();
  r.create_allocated(nholo::h5::detail::Scalar::f64, "f/q", {5, 7, 2}, {2, 3, 2}, NAN);
  return d;
}

// The value of trajectory i, save k, component c (distinct everywhere).
double value_at(int64_t i, int64_t k, int64_t c) {
  return 100.0 * i + 10.0 * k + c + 0.5;
}

// Block rows [row, row + count), saves [save, save + saves), as a window slot holds it.
std::vector<double> block_values(int64_t row, int64_t count, int64_t save, int64_t saves) {
  std::vector<double> v;
  for (int64_t i = row; i < row + count; ++i)
    for (int64_t k = save; k < save + saves; ++k)
      for (int c = 0; c < 2; ++c) v.push_back(value_at(i, k, c));
  return v;
}

TEST(InPlaceFile, BlocksLandInTheirChunksAndReadBackThroughHdf5AndLinks) {
  const fs::path dir = temp_dir("in_place");
  const PieceDir d = allocated_result(dir);
  const InPlaceFile file(d);
  // slices of 2 (and a last one of 1) x windows of 3 saves (and a last of 1)
  for (int64_t row = 0; row < 5; row += 2)
    for (int64_t save = 0; save < 7; save += 3) {
      const int64_t count = std::min<int64_t>(2, 5 - row), saves = std::min<int64_t>(3, 7 - save);
      const std::vector<double> v = block_values(row, count, save, saves);
      file.write({FieldBlock{"f/q", v.data(), row, count, save, saves, 2}});
    }
  {
    const nholo::h5::File f = nholo::h5::File::open_ro(file.path());
    EXPECT_EQ(f.root().open_dataset("f/q").read<double>(), block_values(0, 5, 0, 7));
  }
  // a piece's external link, and a virtual dataset reading one block through it
  {
    Piece p(d, PieceDir::window_name(0, 1));
    p.root().create_external_link("f/q", InPlaceFile::name(), "/f/q");
    p.commit();
  }
  {
    nholo::h5::File m = nholo::h5::File::create((dir / "m.h5").string());
    nholo::h5::Group r = m.root();
    nholo::h5::VirtualSource v;
    v.offset = {0, 3, 0};
    v.count = {2, 3, 2};
    v.file = d.relative(PieceDir::window_name(0, 1));
    v.dataset = "f/q";
    v.source_dims = {5, 7, 2};
    v.source_offset = v.offset;
    r.create_virtual(nholo::h5::detail::Scalar::f64, "q", {5, 7, 2}, NAN, {v});
  }
  const nholo::h5::File m = nholo::h5::File::open_ro((dir / "m.h5").string());
  const std::vector<double> got = m.root().open_dataset("q").read<double>();
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t k = 0; k < 7; ++k) {
      const double x = got[(i * 7 + k) * 2];
      if (i < 2 && k >= 3 && k < 6)
        EXPECT_EQ(x, value_at(i, k, 0));
      else
        EXPECT_TRUE(std::isnan(x)) << "trajectory " << i << " save " << k << ": " << x;
    }
}

TEST(InPlaceFile, ABlockOffTheChunksIsRefusedByName) {
  const PieceDir d = allocated_result(temp_dir("in_place_off"));
  const std::vector<double> v = block_values(1, 2, 0, 3);
  try {
    InPlaceFile(d).write({FieldBlock{"f/q", v.data(), 1, 2, 0, 3, 2}});  // row 1: inside a chunk
    FAIL() << "a block that starts inside a chunk was written";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("'f/q' does not lie on the chunks"), std::string::npos)
        << e.what();
  }
}

TEST(InPlaceFile, TheUndoFilePutsBackEveryByteOfTheLastStep) {
  const fs::path dir = temp_dir("in_place_undo");
  const PieceDir d = allocated_result(dir);
  const InPlaceFile file(d);
  const std::vector<double> v = block_values(0, 5, 0, 3);
  file.write({FieldBlock{"f/q", v.data(), 0, 5, 0, 3, 2}});
  EXPECT_FALSE(file.restore_undo()) << "no undo file: nothing to do";
  const std::string before = file_bytes(file.path());
  file.save_undo({"f/q"});
  ASSERT_TRUE(fs::exists(file.undo_path()));
  {
    // what the last step does (attributes, datasets, groups), then damage
    // where a write stopped half-way would
    nholo::h5::File f = nholo::h5::File::open_rw(file.path(), false);
    nholo::h5::Group r = f.root();
    for (int a = 0; a < 50; ++a)
      r.set_attr("attribute_" + std::to_string(a), std::string(300, 'x'));
    r.create_dataset<double>("statistics/mean", {1000}).write(std::vector<double>(1000, 1.0));
    r.open_group("f").set_attr("complete", int64_t(1));
  }
  std::string damaged = file_bytes(file.path());
  ASSERT_NE(damaged, before);
  damaged.replace(0, 64, std::string(64, '\xff'));
  std::ofstream(file.path(), std::ios::binary | std::ios::trunc) << damaged;
  EXPECT_TRUE(file.restore_undo());
  EXPECT_FALSE(fs::exists(file.undo_path()));
  EXPECT_EQ(file_bytes(file.path()), before) << "the file is not what it was before the last step";
  // a damaged undo file is a clear error, and the file is left alone
  file.save_undo({"f/q"});
  std::ofstream(file.undo_path(), std::ios::binary | std::ios::trunc) << "nholo undo v1\n";
  try {
    file.restore_undo();
    FAIL() << "a damaged undo file was applied";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("is damaged"), std::string::npos) << e.what();
  }
  EXPECT_EQ(file_bytes(file.path()), before);
}

}  // namespace

// A piece's datasets carry HDF5's Fletcher-32 checksum: a changed byte makes
// read_every_dataset fail naming the dataset; an intact piece reads.
TEST(PieceDir, PieceDatasetsAreChecksummed) {
  const fs::path dir = nholo_test::temp_dir("nholo_piece_dir", "checksum");
  const PieceDir pieces((dir / "out.h5").string());
  pieces.create();
  {
    Piece p(pieces, "p.h5");
    std::vector<double> v(4096);
    for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.001 * static_cast<double>(i));
    p.write("g/v", {4096}, {}, 0, v.data());
    p.commit();
  }
  EXPECT_NO_THROW(nholo::h5::read_every_dataset(pieces.path("p.h5")));
  uint64_t at = 0;
  {
    const nholo::h5::File f = nholo::h5::File::open_ro(pieces.path("p.h5"));
    at = f.root().open_dataset("g/v").chunk_place({100}).address + 100;
  }
  {
    std::fstream f(pieces.path("p.h5"), std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(static_cast<std::streamoff>(at));
    f.put('\x5a');
  }
  const auto read_piece = [&] { nholo::h5::read_every_dataset(pieces.path("p.h5")); };
  const std::string changed = nholo_test::error_of(read_piece);  // a changed byte
  EXPECT_NE(changed.find("'g/v' cannot be read: data error detected by Fletcher32"),
            std::string::npos)
      << changed;
  fs::resize_file(pieces.path("p.h5"), 1000);
  const std::string truncated = nholo_test::error_of(read_piece);
  EXPECT_NE(truncated.find("the file cannot be opened: truncated file"), std::string::npos)
      << truncated;
}

// The in-place blocks' checksum (block_checksum): equal values give equal
// sums; one changed bit anywhere, or two different values swapped, change it.
TEST(InPlaceFile, BlockChecksumSeesAChangedBitAndSwappedValues) {
  std::vector<double> v(1000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 1.0 / (1.0 + static_cast<double>(i));
  const uint64_t sum = nholo::block_checksum(v.data(), static_cast<int64_t>(v.size()));
  EXPECT_EQ(sum, nholo::block_checksum(std::vector<double>(v).data(), static_cast<int64_t>(v.size())));
  int unchanged = 0;
  for (size_t i = 0; i < v.size(); i += 37)
    for (int bit = 0; bit < 64; bit += 7) {
      std::vector<double> w = v;
      uint64_t x;
      std::memcpy(&x, &w[i], sizeof x);
      x ^= uint64_t(1) << bit;
      std::memcpy(&w[i], &x, sizeof x);
      unchanged += nholo::block_checksum(w.data(), static_cast<int64_t>(w.size())) == sum;
    }
  EXPECT_EQ(unchanged, 0);
  std::vector<double> w = v;
  std::swap(w[3], w[500]);
  EXPECT_NE(nholo::block_checksum(w.data(), static_cast<int64_t>(w.size())), sum);
}

namespace {

// A result file with two per-trajectory datasets that are not fields: 2500
// trajectories in chunks of 1024 (a short last one), checksummed.
PieceDir allocated_rows(const fs::path& dir) {
  const PieceDir d((dir / "out.h5").string());
  d.create();
  nholo::h5::File f = nholo::h5::File::create(InPlaceFile(d).path());
  nholo::h5::Group r = f.root();
  using nholo::h5::detail::Scalar;
  r.create_allocated(Scalar::i32, "f/status", {2500}, {1024}, -1, true);
  r.create_allocated(Scalar::f64, "initial/q0", {2500, 3}, {1024, 3}, NAN, true);
  return d;
}

// Slices of 1024 trajectories (the last of 452) written out of order, as a
// run's slices may finish: each lands in its chunks with the Fletcher-32
// HDF5 checks on reading, the file does not grow, the checksum returned is
// that of the block read back (what --resume compares), and a bit flipped
// in a chunk makes HDF5 refuse that chunk only.
TEST(RowWriter, RowsLandInChecksummedChunksThatHdf5Reads) {
  const fs::path dir = temp_dir("rows");
  const PieceDir d = allocated_rows(dir);
  const InPlaceFile file(d);
  const auto size0 = fs::file_size(file.path());
  std::vector<int32_t> status(2500);
  std::vector<double> q0(2500 * 3);
  for (int i = 0; i < 2500; ++i) {
    status[i] = i % 7 - 3;
    for (int c = 0; c < 3; ++c) q0[i * 3 + c] = 10.0 * i + c + 0.25;
  }
  std::vector<uint64_t> sums;
  {
    RowWriter rows(file);
    for (int64_t row : {2048, 0, 1024}) {
      const int64_t count = std::min<int64_t>(1024, 2500 - row);
      sums.push_back(rows.write("f/status", row, count, status.data() + row));
      sums.push_back(rows.write("initial/q0", row, count, q0.data() + row * 3));
    }
    rows.sync();
  }
  EXPECT_EQ(fs::file_size(file.path()), size0);
  {
    const nholo::h5::File f = nholo::h5::File::open_ro(file.path());
    const nholo::h5::Group r = f.root();
    EXPECT_EQ(r.open_dataset("f/status").read<int32_t>(), status);
    EXPECT_EQ(r.open_dataset("initial/q0").read<double>(), q0);
    size_t k = 0;
    for (hsize_t row : {2048, 0, 1024}) {
      const hsize_t count = std::min<hsize_t>(1024, 2500 - row);
      const auto st = r.open_dataset("f/status").read_block<int32_t>({row}, {count});
      const auto q = r.open_dataset("initial/q0").read_block<double>({row, 0}, {count, 3});
      EXPECT_EQ(sums[k++], nholo::bytes_checksum(st.data(), st.size() * sizeof(int32_t)));
      EXPECT_EQ(sums[k++], nholo::block_checksum(q.data(), static_cast<int64_t>(q.size())));
    }
    EXPECT_NE(sums[0], sums[4]) << "two slices' statuses with one checksum";
  }
  nholo_test::flip_a_bit(file.path(), "initial/q0", {1024, 0});
  const nholo::h5::File f = nholo::h5::File::open_ro(file.path());
  const nholo::h5::Dataset q = f.root().open_dataset("initial/q0");
  EXPECT_EQ(q.read_block<double>({0, 0}, {1024, 3}),
            std::vector<double>(q0.begin(), q0.begin() + 3072));
  try {
    (void)q.read_block<double>({1024, 0}, {1024, 3});
    FAIL() << "a damaged chunk was read";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("Fletcher32"), std::string::npos) << e.what();
  }
}

TEST(RowWriter, RowsOffTheChunksOrInADatasetWithoutItsChecksumAreRefusedByName) {
  const fs::path dir = temp_dir("rows_refused");
  const PieceDir d = allocated_rows(dir);
  {
    nholo::h5::File f = nholo::h5::File::open_rw(InPlaceFile(d).path());
    nholo::h5::Group r = f.root();
    r.create_allocated(nholo::h5::detail::Scalar::f64, "plain", {2500}, {1024}, NAN);
  }
  const std::vector<double> v(2500, 1.5);
  const std::vector<int32_t> st(2500, 0);
  RowWriter rows{InPlaceFile(d)};
  auto refused = [&](const std::string& path, int64_t row, int64_t count, const void* data) {
    try {
      rows.write(path, row, count, data);
      return std::string("written");
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
  };
  // starting inside a chunk, ending inside one (not the dataset's end), past the end
  EXPECT_NE(refused("f/status", 100, 924, st.data())
                .find("rows [100, 1024) of 'f/status' do not lie on the chunks of the result file"),
            std::string::npos);
  EXPECT_NE(refused("f/status", 0, 1000, st.data()).find("rows [0, 1000) of 'f/status' do not lie"),
            std::string::npos);
  EXPECT_NE(refused("f/status", 2048, 1024, st.data()).find("rows [2048, 3072)"),
            std::string::npos);
  // a dataset whose chunks have no room for the checksum
  const std::string e = refused("plain", 0, 1024, v.data());
  EXPECT_NE(e.find("a chunk of 'plain' in the result file"), std::string::npos) << e;
  EXPECT_NE(e.find("has 8192 bytes, not the 8196 of its values and checksum"), std::string::npos)
      << e;
}

}  // namespace
