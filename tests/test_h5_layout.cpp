// Tests of host/io/h5.hpp (the RAII layer over the HDF5 C library), whole
// files: dimension scales, files written alike are the same bytes, virtual
// datasets, default chunks, the output layout of docs/usage.md ("Output
// (HDF5)") as tests/h5_layout_writer.cpp writes it (included here), read
// back; the copies of stored chunks. Round trips, attributes, errors, fill
// and RAII: test_h5.cpp.
#include <gtest/gtest.h>
#include <hdf5_hl.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "host/io/h5.hpp"
#include "tests/chunk_damage.hpp"
#include "tests/h5_test_fixture.hpp"

#define NHOLO_H5_LAYOUT_NO_MAIN
#include "h5_layout_writer.cpp"

namespace fs = std::filesystem;
using namespace nholo::h5;
using namespace nholo_test;  // H5Test, contains, error_of, ramp

// ---------------------------------------------------------------- 1. scales + layout

TEST_F(H5Test, DimensionScales) {
  File f = File::create(path("scales.h5"));
  Group g = f.root().create_group("udwadia_kalaba");
  Dataset traj = index_dimension(g, "trajectory", 3);
  Dataset time = dimension(g, "time", std::vector<double>{0.0, 0.5});
  Dataset coord = dimension(g, "coordinate", std::vector<std::string>{"x", "y", "phi", "theta"});
  Dataset q = g.create_dataset<double>("q", {3, 2, 4}, {3, 2, 4});
  q.attach_scale(traj, 0);
  q.attach_scale(time, 1);
  q.attach_scale(coord, 2);
  EXPECT_TRUE(traj.is_scale());
  EXPECT_TRUE(coord.is_scale());
  EXPECT_FALSE(q.is_scale());
  EXPECT_EQ(traj.read<std::int64_t>(), (std::vector<std::int64_t>{0, 1, 2}));
  EXPECT_EQ(coord.read_strings(), (std::vector<std::string>{"x", "y", "phi", "theta"}));
  EXPECT_GT(H5DSis_attached(q.id(), traj.id(), 0), 0);
  EXPECT_GT(H5DSis_attached(q.id(), time.id(), 1), 0);
  EXPECT_GT(H5DSis_attached(q.id(), coord.id(), 2), 0);
  EXPECT_EQ(H5DSis_attached(q.id(), coord.id(), 0), 0);
  char name[32] = "";
  H5DSget_scale_name(coord.id(), name, sizeof name);
  EXPECT_STREQ(name, "coordinate");
}

// Files written the same way a second apart are the same bytes: no object
// header holds a modification time (HDF5 writes one by default), so two
// runs of one configuration differ only in their timing attributes.
TEST_F(H5Test, FilesWrittenAlikeAreTheSameBytesWhenever) {
  auto write = [&](const std::string& name) {
    File f = File::create(path(name));
    Group g = f.root().create_group("udwadia_kalaba");
    Group s = f.root().create_group("statistics/udwadia_kalaba");
    Dataset time = dimension(g, "time", std::vector<double>{0.0, 0.5});
    Dataset q = g.create_dataset<double>("q", {3, 2}, {3, 2});
    q.write(ramp<double>(6, 0.5));
    q.attach_scale(time, 1);
    s.create_checksummed<double>("mean", {2}, {2}, 0).write(ramp<double>(2, 1.0));
    g.create_string_dataset("names", {"a", "b"});
    VirtualSource v;
    v.offset = {0, 0};
    v.count = {3, 2};
    v.file = ".";
    v.dataset = "/udwadia_kalaba/q";
    g.create_virtual(detail::Scalar::f64, "q_view", {3, 2}, NAN, {v});
    f.close();
  };
  auto bytes = [&](const std::string& name) {
    std::ifstream in(path(name), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  write("first.h5");
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // another second on the clock
  write("second.h5");
  const std::string a = bytes("first.h5"), b = bytes("second.h5");
  ASSERT_EQ(a.size(), b.size());
  std::size_t differ = 0;
  for (std::size_t i = 0; i < a.size(); ++i) differ += a[i] != b[i];
  EXPECT_EQ(differ, 0u) << "of " << a.size() << " bytes";
}

// A virtual dataset without a source (a stopped run's master where no piece
// of it was written) is still virtual: every value the fill, and readers do
// not take it for a dataset whose storage was never written.
TEST_F(H5Test, VirtualDatasetWithoutSourcesReadsAsItsFill) {
  {
    File f = File::create(path("v.h5"));
    Group r = f.root();
    r.create_virtual(detail::Scalar::f64, "q", {4, 3}, NAN, {});
    r.create_virtual(detail::Scalar::i32, "status", {4}, 7, {});
    f.close();
  }
  const File f = File::open_ro(path("v.h5"));
  const Dataset q = f.root().open_dataset("q"), st = f.root().open_dataset("status");
  EXPECT_FALSE(q.stores_nothing());
  EXPECT_FALSE(st.stores_nothing());
  const detail::Handle dcpl(H5Dget_create_plist(q.id()), H5Pclose);
  EXPECT_EQ(H5Pget_layout(dcpl.get()), H5D_VIRTUAL);
  size_t sources = 99;
  ASSERT_GE(H5Pget_virtual_count(dcpl.get(), &sources), 0);
  EXPECT_EQ(sources, 0u);
  for (double v : q.read_block<double>({0, 0}, {4, 3})) EXPECT_TRUE(std::isnan(v));
  EXPECT_EQ(st.read_block<int32_t>({0}, {4}), (std::vector<int32_t>{7, 7, 7, 7}));
}

TEST_F(H5Test, DefaultChunkTilesTheWriteBlocks) {
  EXPECT_EQ(default_chunk({10, 7, 4}, 8), (std::vector<hsize_t>{10, 7, 4}));  // fits whole
  EXPECT_EQ(default_chunk({0, 3}, 8), (std::vector<hsize_t>{1, 3}));
  // Blocks of 4096 trajectories x 50 saves x 4: chunks divide the block.
  std::vector<hsize_t> c = default_chunk({100000, 501, 4}, 8, {4096, 50, 4});
  EXPECT_EQ(c, (std::vector<hsize_t>{512, 50, 4}));
  // A block larger than the dataset counts as the dataset.
  c = default_chunk({300, 501, 4}, 8, {4096, 50, 4});
  EXPECT_EQ(c, (std::vector<hsize_t>{300, 50, 4}));
  // Non-power-of-two blocks: still divisors, still within the target.
  c = default_chunk({100000, 1000, 3}, 8, {3000, 120, 3}, 64 * 1024);
  EXPECT_EQ(3000 % c[0], 0u);
  EXPECT_EQ(120 % c[1], 0u);
  EXPECT_LE(Dataset::product(c) * 8, 64u * 1024);
  EXPECT_GE(Dataset::product(c) * 8, 16u * 1024);
  EXPECT_NE(error_of([] { default_chunk({3, 4}, 8, {3}); }), "<no exception>");
}

namespace {

// The dimension-scale names attached to each axis of d.
std::vector<std::string> scale_names(const Dataset& d) {
  std::vector<std::string> out;
  for (unsigned axis = 0; axis < d.dims().size(); ++axis) {
    std::string found;
    H5DSiterate_scales(
        d.id(), axis, nullptr,
        [](hid_t, unsigned, hid_t scale, void* data) -> herr_t {
          char buf[64] = "";
          H5DSget_scale_name(scale, buf, sizeof buf);
          *static_cast<std::string*>(data) = buf;
          return 1;
        },
        &found);
    out.push_back(found);
  }
  return out;
}

}  // namespace

TEST_F(H5Test, OutputLayoutReadsBack) {
  namespace L = nholo::h5::layout_test;
  const L::Sizes s;
  const hsize_t N = s.trajectories, T = s.times, n = s.coordinates, m = s.constraints;
  L::write_layout(path("layout.h5"), s);

  File f = File::open_ro(path("layout.h5"));
  Group r = f.root();
  EXPECT_EQ(r.attr_string("model"), "rolling_coin");
  EXPECT_EQ(r.attr_strings("formulations"), std::vector<std::string>{"udwadia_kalaba"});
  EXPECT_EQ(r.attr_string("nholo_version"), "0.1.0");
  EXPECT_EQ(r.attr_string("git_revision"), "unknown");
  EXPECT_EQ(r.attr_string("config"), L::config_text());
  EXPECT_EQ(r.attr_string("created").size(), 20u);  // YYYY-MM-DDTHH:MM:SSZ
  EXPECT_EQ(r.attr_int64("complete"), 1);

  Group uk = r.open_group("udwadia_kalaba");
  using V = std::vector<hsize_t>;
  using S = std::vector<std::string>;
  struct Expect {
    const char* name;
    V dims;
    S scales;
  };
  for (const Expect& e :
       {Expect{"q", {N, T, n}, {"trajectory", "time", "coordinate"}},
        Expect{"qdot", {N, T, n}, {"trajectory", "time", "coordinate"}},
        Expect{"multiplier", {N, T, m}, {"trajectory", "time", "constraint"}},
        Expect{"constraint_residual", {N, T}, {"trajectory", "time"}},
        Expect{"energy", {N, T}, {"trajectory", "time"}}, Expect{"status", {N}, {"trajectory"}},
        Expect{"steps", {N}, {"trajectory"}}}) {
    Dataset d = uk.open_dataset(e.name);
    EXPECT_EQ(d.dims(), e.dims) << e.name;
    EXPECT_EQ(scale_names(d), e.scales) << e.name;
  }
  EXPECT_EQ(uk.open_dataset("coordinate").read_strings(), L::coordinate_names());
  EXPECT_EQ(uk.open_dataset("constraint").read<std::int64_t>(), (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(uk.open_dataset("trajectory").size(), N);
  EXPECT_EQ(scale_names(r.open_dataset("initial/q0")), (S{"trajectory", "coordinate"}));
  EXPECT_EQ(scale_names(r.open_dataset("statistics/udwadia_kalaba/mean")),
            (S{"time", "coordinate"}));

  std::vector<double> time = uk.open_dataset("time").read<double>();
  std::vector<double> q = uk.open_dataset("q").read<double>();
  std::vector<double> qd = uk.open_dataset("qdot").read<double>();
  std::vector<double> mu = uk.open_dataset("multiplier").read<double>();
  std::vector<double> res = uk.open_dataset("constraint_residual").read<double>();
  std::vector<double> en = uk.open_dataset("energy").read<double>();
  std::vector<std::int32_t> st = uk.open_dataset("status").read<std::int32_t>();
  std::vector<std::int64_t> steps = uk.open_dataset("steps").read<std::int64_t>();
  std::vector<double> q0 = r.open_dataset("initial/q0").read<double>();
  std::vector<double> mean = r.open_dataset("statistics/udwadia_kalaba/mean").read<double>();
  for (hsize_t k = 0; k < T; ++k) EXPECT_EQ(time[k], L::time_value(k));
  for (hsize_t i = 0; i < N; ++i) {
    EXPECT_EQ(st[i], L::status_value(i));
    EXPECT_EQ(steps[i], L::steps_value(i));
    for (hsize_t c = 0; c < n; ++c) EXPECT_EQ(q0[i * n + c], L::q_value(i, 0, c));
    for (hsize_t k = 0; k < T; ++k) {
      EXPECT_EQ(res[i * T + k], L::residual_value(i, k));
      EXPECT_EQ(en[i * T + k], L::energy_value(i, k));
      for (hsize_t c = 0; c < n; ++c) {
        EXPECT_EQ(q[(i * T + k) * n + c], L::q_value(i, k, c));
        EXPECT_EQ(qd[(i * T + k) * n + c], L::qdot_value(i, k, c));
      }
      for (hsize_t j = 0; j < m; ++j)
        EXPECT_EQ(mu[(i * T + k) * m + j], L::multiplier_value(i, k, j));
    }
  }
  for (hsize_t k = 0; k < T; ++k)
    for (hsize_t c = 0; c < n; ++c)
      EXPECT_NEAR(mean[k * n + c], 1000.0 * double(N - 1) / 2 + double(k) + 0.1 * double(c), 1e-9);
}

TEST_F(H5Test, InterruptedLayoutMarksTheUnfinished) {
  namespace L = nholo::h5::layout_test;
  const L::Sizes s;
  L::write_layout(path("partial.h5"), s, /*partial=*/true);
  File f = File::open_ro(path("partial.h5"));
  Group r = f.root();
  EXPECT_EQ(r.attr_int64("complete"), 0);
  Group uk = r.open_group("udwadia_kalaba");
  std::vector<std::int32_t> st = uk.open_dataset("status").read<std::int32_t>();
  std::vector<double> q = uk.open_dataset("q").read<double>();
  const hsize_t done = 8;  // slices [0,4) [4,8) written, [8,10) not
  for (hsize_t i = 0; i < s.trajectories; ++i) {
    EXPECT_EQ(st[i], i < done ? L::status_value(i) : -1) << i;
    for (hsize_t k = 0; k < s.times; ++k)
      for (hsize_t c = 0; c < s.coordinates; ++c) {
        double v = q[(i * s.times + k) * s.coordinates + c];
        if (i < done) {
          EXPECT_EQ(v, L::q_value(i, k, c));
        } else {
          EXPECT_TRUE(std::isnan(v));
        }
      }
  }
}

// ---------------------------------------------------------------- 2. copies

namespace {

// Values that deflate to chunks of many sizes, odd ones among them.
std::vector<double> varied(std::size_t n, unsigned seed) {
  std::vector<double> v(n);
  uint64_t x = 0x9e3779b97f4a7c15ull * (seed + 1);
  for (std::size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v[i] = (i % 5 == 0) ? double(x % 1000) : double(i % 17) * 0.25;  // partly compressible
  }
  return v;
}

// The stored bytes of the chunk of `dataset` (in the closed file `file`) at offset.
std::string stored_chunk(const std::string& file, const std::string& dataset,
                         const std::vector<hsize_t>& offset) {
  ChunkPlace place{};
  {
    const File f = File::open_ro(file);
    place = f.root().open_dataset(dataset).chunk_place(offset);
  }
  std::ifstream in(file, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(place.address));
  std::string bytes(place.bytes, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return bytes;
}

}  // namespace

// chunk_places reads the whole chunk index in one walk (h5_chunk_index.cpp)
// for the datasets nholo allocates in place, several levels of B-tree deep,
// with a continuation block in the object header, in 2 and 3 dimensions,
// with partial edge chunks and checksums: every place equal to HDF5's own
// answer for that chunk, chunk by chunk. A dataset whose chunks are not
// all allocated is refused, as chunk_place refuses one.
TEST_F(H5Test, ChunkPlacesWalkTheIndexAndAgreeWithHdf5ChunkByChunk) {
  using detail::Scalar;
  {
    File f = File::create(path("c.h5"));
    Group r = f.root();
    // (3000 x 101 x 4) in (64, 16, 4): 47 x 7 = 329 chunks (a B-tree of 2 levels)
    Dataset q = r.create_allocated(Scalar::f64, "u/q", {3000, 101, 4}, {64, 16, 4}, NAN, false);
    for (int a = 0; a < 12; ++a) q.set_attr("note " + std::to_string(a), std::string(200, 'x'));
    r.create_allocated(Scalar::f64, "u/energy", {70000, 9}, {1024, 4}, NAN, false);
    r.create_allocated(Scalar::i32, "u/status", {150000}, {65536}, 0, true);
    r.create_allocated(Scalar::f64, "one", {5, 3}, {8, 3}, NAN, false);
    r.create_dataset<double>("sparse", {4096, 2}, {1024, 2})
        .write_block({0, 0}, {1024, 2}, std::vector<double>(2048, 1.0));
    f.close();
  }
  const File f = File::open_ro(path("c.h5"));
  for (const char* name : {"u/q", "u/energy", "u/status", "one"}) {
    SCOPED_TRACE(name);
    const Dataset d = f.root().open_dataset(name);
    bool walked = false;
    const std::vector<ChunkPlace> places = d.chunk_places(&walked);
    EXPECT_TRUE(walked);
    const std::vector<hsize_t> dims = d.dims(), chunk = d.chunk_dims();
    std::vector<hsize_t> at(dims.size(), 0);
    std::size_t g = 0;
    for (bool more = true; more; ++g) {
      ASSERT_LT(g, places.size());
      const ChunkPlace h = d.chunk_place(at);
      EXPECT_EQ(places[g].address, h.address) << g;
      EXPECT_EQ(places[g].bytes, h.bytes) << g;
      more = false;
      for (std::size_t a = dims.size(); a-- > 0 && !more;) {
        at[a] += chunk[a];
        more = at[a] < dims[a];
        if (!more) at[a] = 0;
      }
    }
    EXPECT_EQ(g, places.size());
  }
  EXPECT_EQ(f.root().open_dataset("u/q").chunk_places().size(), 47u * 7);
  EXPECT_NE(error_of([&] { f.root().open_dataset("sparse").chunk_places(); }), "<no exception>");
}

// copy_into copies src's chunks as they are stored (no decoding, no filter
// run again) exactly where they are dst's chunks, and copies values
// otherwise; the values arrive either way.
TEST_F(H5Test, CopyIntoCopiesStoredChunksWhereTheyAreTheDestinationsChunks) {
  const std::vector<double> whole = varied(2048 * 3, 1), edge = varied(1476 * 3, 2),
                            tail = varied(452 * 3, 4);
  std::vector<std::int64_t> ints(2048);
  for (std::size_t i = 0; i < ints.size(); ++i) ints[i] = std::int64_t(i * i);
  {
    File f = File::create(path("src.h5"));
    Group r = f.root();
    r.create_checksummed<double>("whole", {2048, 3}, {1024, 3}, 4).write(whole);
    r.create_checksummed<double>("edge", {1476, 3}, {1024, 3}, 4).write(edge);
    // smaller than a chunk: the chunk keeps its shape (a short last slice or window)
    r.create_checksummed<double>("short", {452, 3}, {1024, 3}, 4).write(tail);
    r.create_checksummed<std::int64_t>("ints", {2048}, {1024}, 0).write(ints);
  }
  using detail::Scalar;
  {
    const File sf = File::open_ro(path("src.h5"));
    const Group s = sf.root();
    const Dataset sw = s.open_dataset("whole"), se = s.open_dataset("edge");
    File df = File::create(path("dst.h5"));
    Group d = df.root();
    // as the result file's datasets are made (OutputLayout::make)
    auto like = [&](const std::string& name, hsize_t rows, bool checksum, int gzip = 4) {
      return d.create_dataset_as(Scalar::f64, name, {rows, 3}, {1024, 3}, gzip, gzip > 0, NAN,
                                 checksum);
    };
    Dataset a = like("a", 4548, true);
    EXPECT_TRUE(copy_into(sw, a, {1024, 0}));  // whole chunks on a's grid
    EXPECT_TRUE(copy_into(se, a, {3072, 0}));  // its partial chunk is a's last
    Dataset t = like("t", 2500, true);
    EXPECT_TRUE(copy_into(sw, t, {0, 0}));
    EXPECT_TRUE(copy_into(s.open_dataset("short"), t, {2048, 0}));  // t's last chunk
    Dataset b = like("b", 5120, true);
    EXPECT_FALSE(copy_into(se, b, {0, 0}));     // its partial chunk is not b's last
    EXPECT_FALSE(copy_into(sw, b, {2000, 0}));  // off b's chunk grid
    Dataset c = like("c", 2048, false);
    EXPECT_FALSE(copy_into(sw, c, {0, 0}));  // c has no checksum
    Dataset g = like("g", 2048, true, 2);
    EXPECT_FALSE(copy_into(sw, g, {0, 0}));  // another gzip level
    Dataset i = d.create_dataset_as(Scalar::i64, "i", {4096}, {1024}, 0, false, -1, true);
    EXPECT_TRUE(copy_into(s.open_dataset("ints"), i, {1024}));
    Dataset x = d.create_dataset_as(Scalar::f32, "x", {2048, 3}, {1024, 3}, 4, true, NAN, true);
    EXPECT_FALSE(copy_into(sw, x, {0, 0}));  // another element type

    EXPECT_EQ(a.read_block<double>({1024, 0}, {2048, 3}), whole);
    EXPECT_EQ(a.read_block<double>({3072, 0}, {1476, 3}), edge);
    EXPECT_EQ(t.read_block<double>({0, 0}, {2048, 3}), whole);
    EXPECT_EQ(t.read_block<double>({2048, 0}, {452, 3}), tail);
    EXPECT_EQ(b.read_block<double>({0, 0}, {1476, 3}), edge);
    EXPECT_EQ(b.read_block<double>({2000, 0}, {2048, 3}), whole);
    EXPECT_EQ(c.read<double>(), whole);
    EXPECT_EQ(g.read<double>(), whole);
    EXPECT_EQ(i.read_block<std::int64_t>({1024}, {2048}), ints);
    EXPECT_EQ(i.read_block<std::int64_t>({0}, {1024}), std::vector<std::int64_t>(1024, -1));
    const std::vector<float> xf = x.read<float>();
    for (std::size_t k = 0; k < whole.size(); ++k) ASSERT_EQ(xf[k], float(whole[k])) << k;
  }
  // the stored chunks are src's, byte for byte (a decoded and recompressed
  // copy would also be, with the same zlib: c's are not, having no checksum)
  EXPECT_EQ(stored_chunk(path("dst.h5"), "a", {2048, 0}),
            stored_chunk(path("src.h5"), "whole", {1024, 0}));
  EXPECT_EQ(stored_chunk(path("dst.h5"), "a", {4096, 0}),
            stored_chunk(path("src.h5"), "edge", {1024, 0}));
  EXPECT_NE(stored_chunk(path("dst.h5"), "c", {0, 0}),
            stored_chunk(path("src.h5"), "whole", {0, 0}));
}

// Each chunk copied as stored has its Fletcher-32 checksum checked first
// (fletcher32_matches, which agrees with HDF5's on chunks of odd and even
// lengths): a damaged chunk of src is refused as HDF5's reading refuses it,
// and does not reach dst. fletcher32 is the value HDF5's filter stores after
// a chunk's bytes (its last four, little-endian): what RowWriter puts after
// the chunks it writes itself.
TEST_F(H5Test, ChunksCopiedAsStoredHaveTheirChecksumsChecked) {
  const std::vector<double> v = varied(64 * 64 * 3, 3);
  {
    File f = File::create(path("src.h5"));
    f.root().create_checksummed<double>("v", {4096, 3}, {64, 3}, 6).write(v);
  }
  int odd = 0;
  for (hsize_t r = 0; r < 4096; r += 64) {
    std::string chunk = stored_chunk(path("src.h5"), "v", {r, 0});
    odd += chunk.size() % 2;
    const auto* p = reinterpret_cast<const unsigned char*>(chunk.data());
    ASSERT_TRUE(fletcher32_matches(p, chunk.size()))
        << "chunk at " << r << ", " << chunk.size() << " bytes";
    const std::size_t n = chunk.size() - 4;
    const uint32_t stored = uint32_t(p[n]) | uint32_t(p[n + 1]) << 8 | uint32_t(p[n + 2]) << 16 |
                            uint32_t(p[n + 3]) << 24;
    EXPECT_EQ(fletcher32(p, n), stored) << "chunk at " << r << ", " << n << " bytes";
    chunk[chunk.size() / 3] = static_cast<char>(chunk[chunk.size() / 3] ^ 0x10);
    EXPECT_FALSE(fletcher32_matches(p, chunk.size())) << "chunk at " << r;
  }
  EXPECT_GT(odd, 0) << "no chunk of odd length: the test lost half its cases";
  nholo_test::flip_a_bit(path("src.h5"), "v", {128, 0}, 0x01);  // in the file
  const File sf = File::open_ro(path("src.h5"));
  File df = File::create(path("dst.h5"));
  Group d = df.root();
  Dataset dst =
      d.create_dataset_as(detail::Scalar::f64, "v", {4096, 3}, {64, 3}, 6, true, NAN, true);
  const std::string e = error_of([&] { copy_into(sf.root().open_dataset("v"), dst, {0, 0}); });
  EXPECT_TRUE(contains(e, "Fletcher32")) << e;
  EXPECT_TRUE(contains(e, "(128, 0)")) << e;  // the block, named
  const std::vector<double> got = dst.read_block<double>({128, 0}, {64, 3});
  for (double x : got) EXPECT_TRUE(std::isnan(x));  // the damaged chunk is not in dst
  EXPECT_EQ(dst.read_block<double>({0, 0}, {128, 3}),
            std::vector<double>(v.begin(), v.begin() + 128 * 3));
}
