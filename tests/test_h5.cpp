// Tests of host/io/h5.hpp (the RAII layer over the HDF5 C library); the
// dimension scales, the output layout and the copies of stored chunks:
// test_h5_layout.cpp.
//
//  1. Round trips: every element type, contiguous and chunked+compressed;
//     blocks written out of order equal the whole; read_block; strings.
//  2. Attributes: every kind, on groups and datasets, replacement, UTF-8,
//     a 256 KiB text (vlen strings are not bound by the 64 KiB header limit).
//  3. Errors: create on an existing path (message names the path), opening a
//     missing file, wrong-size / wrong-rank / out-of-range blocks, missing
//     objects and attributes, bad gzip level, a scale of the wrong length.
//  4. Fill: unwritten regions read NaN (float types) or the given fill.
//  5. RAII: no HDF5 identifier outlives the objects (checked after every
//     test), moved-from objects are empty, a file reopens after its objects
//     are gone.
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
#include "tests/h5_test_fixture.hpp"

namespace fs = std::filesystem;
using namespace nholo::h5;
using namespace nholo_test;  // H5Test, contains, error_of, ramp

namespace {

template <class T>
void round_trip(Group& g, const std::string& name, std::vector<hsize_t> chunk) {
  const std::vector<hsize_t> dims = {5, 6, 7};
  const std::vector<T> v = ramp<T>(5 * 6 * 7, std::is_floating_point_v<T> ? 0.37 : 1.0);
  {
    Dataset d = g.create_dataset<T>(name, dims, chunk);
    d.write(v);
  }
  Dataset d = g.open_dataset(name);
  EXPECT_EQ(d.dims(), dims);
  EXPECT_EQ(d.size(), 210u);
  EXPECT_EQ(d.read<T>(), v) << name;
  std::vector<T> raw(v.size());
  d.read(raw.data());
  EXPECT_EQ(raw, v) << name;
}

}  // namespace

// ---------------------------------------------------------------- 1. round trips

TEST_F(H5Test, RoundTripEveryTypeContiguousAndChunked) {
  File f = File::create(path("types.h5"));
  Group g = f.root();
  round_trip<double>(g, "f64", {});
  round_trip<float>(g, "f32", {});
  round_trip<std::int32_t>(g, "i32", {});
  round_trip<std::int64_t>(g, "i64", {});
  round_trip<std::uint8_t>(g, "u8", {});
  round_trip<double>(g, "f64z", {2, 3, 7});
  round_trip<float>(g, "f32z", {2, 3, 7});
  round_trip<std::int32_t>(g, "i32z", {2, 3, 7});
  round_trip<std::int64_t>(g, "i64z", {2, 3, 7});
  round_trip<std::uint8_t>(g, "u8z", {64, 64, 64});  // clamped to the dims

  // Stored types and filters: little-endian standard types; shuffle + deflate.
  Dataset z = g.open_dataset("f64z");
  hid_t dcpl = H5Dget_create_plist(z.id());
  EXPECT_EQ(H5Pget_layout(dcpl), H5D_CHUNKED);
  hsize_t chunk[3] = {0, 0, 0};
  EXPECT_EQ(H5Pget_chunk(dcpl, 3, chunk), 3);
  EXPECT_EQ(chunk[0], 2u);
  EXPECT_EQ(chunk[1], 3u);
  EXPECT_EQ(chunk[2], 7u);
  ASSERT_EQ(H5Pget_nfilters(dcpl), 2);
  unsigned flags = 0, level = 0;
  std::size_t nvals = 0;
  EXPECT_EQ(H5Pget_filter2(dcpl, 0, &flags, &nvals, nullptr, 0, nullptr, nullptr),
            H5Z_FILTER_SHUFFLE);
  nvals = 1;
  EXPECT_EQ(H5Pget_filter2(dcpl, 1, &flags, &nvals, &level, 0, nullptr, nullptr),
            H5Z_FILTER_DEFLATE);
  EXPECT_EQ(level, 4u);  // the default gzip level
  H5Pclose(dcpl);
  hid_t t = H5Dget_type(z.id());
  EXPECT_GT(H5Tequal(t, H5T_IEEE_F64LE), 0);
  H5Tclose(t);
  Dataset u8 = g.open_dataset("u8z");
  dcpl = H5Dget_create_plist(u8.id());
  EXPECT_EQ(H5Pget_chunk(dcpl, 3, chunk), 3);
  EXPECT_EQ(chunk[0], 5u);
  EXPECT_EQ(chunk[2], 7u);
  H5Pclose(dcpl);

  // Conversion on write and read (float data into a double dataset).
  Dataset c = g.create_dataset<double>("converted", {3});
  c.write(std::vector<float>{0.5f, 1.5f, -2.0f});
  EXPECT_EQ(c.read<double>(), (std::vector<double>{0.5, 1.5, -2.0}));
  EXPECT_EQ(c.read<std::int64_t>(), (std::vector<std::int64_t>{0, 1, -2}));  // truncation
}

TEST_F(H5Test, BlocksOutOfOrderEqualTheWhole) {
  const hsize_t N = 11, T = 9, n = 3;
  auto value = [](hsize_t i, hsize_t k, hsize_t c) { return 100.0 * i + k + 0.25 * c; };
  {
    File f = File::create(path("blocks.h5"));
    Group g = f.root();
    Dataset d = g.create_dataset<double>("q", {N, T, n}, {4, 2, n}, 6);
    // Slices [0,5) [5,10) [10,11) x windows [0,4) [4,8) [8,9), in a scrambled order.
    const std::vector<std::pair<hsize_t, hsize_t>> slices = {{0, 5}, {5, 10}, {10, 11}};
    const std::vector<std::pair<hsize_t, hsize_t>> windows = {{0, 4}, {4, 8}, {8, 9}};
    for (int idx : {7, 2, 4, 0, 8, 3, 6, 1, 5}) {
      auto [b, e] = slices[idx / 3];
      auto [k0, k1] = windows[idx % 3];
      std::vector<double> block;
      for (hsize_t i = b; i < e; ++i)
        for (hsize_t k = k0; k < k1; ++k)
          for (hsize_t c = 0; c < n; ++c) block.push_back(value(i, k, c));
      d.write_block({b, k0, 0}, {e - b, k1 - k0, n}, block.data());
    }
  }
  File f = File::open_ro(path("blocks.h5"));
  Dataset d = f.root().open_dataset("q");
  std::vector<double> all = d.read<double>();
  for (hsize_t i = 0; i < N; ++i)
    for (hsize_t k = 0; k < T; ++k)
      for (hsize_t c = 0; c < n; ++c) ASSERT_EQ(all[(i * T + k) * n + c], value(i, k, c));
  // A block read back: trajectories [3,6), times [2,7), coordinate 1 only.
  std::vector<double> blk = d.read_block<double>({3, 2, 1}, {3, 5, 1});
  ASSERT_EQ(blk.size(), 15u);
  for (hsize_t i = 0; i < 3; ++i)
    for (hsize_t k = 0; k < 5; ++k) EXPECT_EQ(blk[i * 5 + k], value(3 + i, 2 + k, 1));
  // Empty blocks are fine.
  EXPECT_TRUE(d.read_block<double>({0, 0, 0}, {0, 4, 3}).empty());
}

TEST_F(H5Test, StringDatasets) {
  File f = File::create(path("strings.h5"));
  Group g = f.root();
  const std::vector<std::string> names = {"x", "y", "phi", "theta", "φ θ naïve", ""};
  g.create_string_dataset("names", names);
  g.create_string_dataset("none", {});
  EXPECT_EQ(g.open_dataset("names").read_strings(), names);
  EXPECT_TRUE(g.open_dataset("none").read_strings().empty());
  EXPECT_EQ(g.open_dataset("none").dims(), std::vector<hsize_t>{0});
  // Reading numbers as strings is an error naming the dataset.
  g.create_dataset<double>("numbers", {2});
  EXPECT_TRUE(contains(error_of([&] { g.open_dataset("numbers").read_strings(); }), "/numbers"));
}

// ---------------------------------------------------------------- 2. attributes

TEST_F(H5Test, AttributesRoundTrip) {
  const std::string long_text(256 * 1024, 'c');
  {
    File f = File::create(path("attrs.h5"));
    Group r = f.root();
    r.set_attr("model", "rolling_coin");
    r.set_attr("config", long_text);
    r.set_attr("utf8", std::string("φ = θ/2, naïve"));
    r.set_attr("pi", 3.141592653589793);
    r.set_attr("big", std::int64_t{1} << 40);
    r.set_attr("small", 7);  // int -> int64
    r.set_attr("unsigned", 9u);
    r.set_attr("rtol", std::vector<double>{1e-10, 1e-12});
    r.set_attr("empty", std::vector<double>{});
    r.set_attr("formulations", std::vector<std::string>{"udwadia_kalaba", "lagrange", "φ"});
    r.set_attr("complete", std::int64_t{0});
    r.set_attr("complete", std::int64_t{1});    // replaced
    r.set_attr("model", std::string("skate"));  // replaced, same type
    Dataset d = r.create_dataset<double>("d", {2});
    d.set_attr("units", "s");
    d.set_attr("scale", 2.5);
  }
  File f = File::open_ro(path("attrs.h5"));
  Group r = f.root();
  EXPECT_EQ(r.attr_string("model"), "skate");
  EXPECT_EQ(r.attr_string("config"), long_text);
  EXPECT_EQ(r.attr_string("utf8"), "φ = θ/2, naïve");
  EXPECT_EQ(r.attr_double("pi"), 3.141592653589793);
  EXPECT_EQ(r.attr_int64("big"), std::int64_t{1} << 40);
  EXPECT_EQ(r.attr_int64("small"), 7);
  EXPECT_EQ(r.attr_int64("unsigned"), 9);
  EXPECT_EQ(r.attr_double("small"), 7.0);  // converted on read
  EXPECT_EQ(r.attr_doubles("rtol"), (std::vector<double>{1e-10, 1e-12}));
  EXPECT_TRUE(r.attr_doubles("empty").empty());
  EXPECT_EQ(r.attr_strings("formulations"),
            (std::vector<std::string>{"udwadia_kalaba", "lagrange", "φ"}));
  EXPECT_EQ(r.attr_int64("complete"), 1);
  EXPECT_TRUE(r.has_attr("model"));
  EXPECT_FALSE(r.has_attr("nope"));
  Dataset d = r.open_dataset("d");
  EXPECT_EQ(d.attr_string("units"), "s");
  EXPECT_EQ(d.attr_double("scale"), 2.5);
  EXPECT_EQ(d.path(), "/d");
  EXPECT_EQ(d.file_name(), path("attrs.h5"));

  // Stored as vlen UTF-8 (h5py/xarray read str, not bytes).
  hid_t a = H5Aopen(r.id(), "model", H5P_DEFAULT);
  hid_t t = H5Aget_type(a);
  EXPECT_GT(H5Tis_variable_str(t), 0);
  EXPECT_EQ(H5Tget_cset(t), H5T_CSET_UTF8);
  H5Tclose(t);
  H5Aclose(a);

  // Errors name the attribute.
  EXPECT_TRUE(contains(error_of([&] { r.attr_string("nope"); }), "@nope"));
  EXPECT_TRUE(contains(error_of([&] { r.attr_double("rtol"); }), "2 values"));
  EXPECT_TRUE(contains(error_of([&] { r.attr_string("pi"); }), "@pi"));
  EXPECT_TRUE(contains(error_of([&] { r.attr_string("formulations"); }), "@formulations"));
}

TEST_F(H5Test, FixedLengthStringAttributesAreReadToo) {
  {
    File f = File::create(path("fixed.h5"));
    Group r = f.root();
    // A fixed-length, NUL-padded ASCII attribute as other writers make them.
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, 8);
    H5Tset_strpad(t, H5T_STR_NULLPAD);
    hid_t s = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(r.id(), "fixed", t, s, H5P_DEFAULT, H5P_DEFAULT);
    const char buf[8] = {'a', 'b', 'c', '\0', '\0', '\0', '\0', '\0'};
    H5Awrite(a, t, buf);
    H5Aclose(a);
    H5Sclose(s);
    H5Tclose(t);
  }
  File f = File::open_ro(path("fixed.h5"));
  EXPECT_EQ(f.root().attr_string("fixed"), "abc");
}

// ---------------------------------------------------------------- 3. errors

TEST_F(H5Test, CreateOnAnExistingPathThrowsNamingIt) {
  const std::string p = path("exists.h5");
  {
    File f = File::create(p);
    f.root().set_attr("keep", "me");
  }
  std::string msg = error_of([&] { File::create(p); });
  EXPECT_TRUE(contains(msg, p)) << msg;
  EXPECT_TRUE(contains(msg, "nholo::h5")) << msg;
  EXPECT_TRUE(contains(msg, "File exists")) << msg;  // from the HDF5 error stack
  // The existing file is untouched.
  EXPECT_EQ(File::open_ro(p).root().attr_string("keep"), "me");
}

TEST_F(H5Test, OpeningAMissingFileThrowsNamingIt) {
  const std::string p = path("missing.h5");
  std::string ro = error_of([&] { File::open_ro(p); });
  std::string rw = error_of([&] { File::open_rw(p); });
  EXPECT_TRUE(contains(ro, p)) << ro;
  EXPECT_TRUE(contains(rw, p)) << rw;
  EXPECT_TRUE(contains(ro, "No such file")) << ro;
  EXPECT_FALSE(fs::exists(p));
  // Not an HDF5 file.
  const std::string junk = path("junk.h5");
  {
    std::FILE* fp = std::fopen(junk.c_str(), "w");
    std::fputs("not hdf5", fp);
    std::fclose(fp);
  }
  EXPECT_TRUE(contains(error_of([&] { File::open_ro(junk); }), junk));
}

TEST_F(H5Test, WrongBlocksThrowNamingTheDataset) {
  File f = File::create(path("bad.h5"));
  Group g = f.root().create_group("udwadia_kalaba");
  Dataset d = g.create_dataset<double>("q", {4, 5, 2}, {2, 5, 2});
  std::vector<double> six(6, 1.0);
  // Block past the end in one dimension.
  std::string m = error_of([&] { d.write_block({3, 0, 0}, {2, 1, 2}, std::vector<double>(4)); });
  EXPECT_TRUE(contains(m, "/udwadia_kalaba/q")) << m;
  EXPECT_TRUE(contains(m, path("bad.h5"))) << m;
  EXPECT_TRUE(contains(m, "does not fit")) << m;
  // Wrong rank.
  EXPECT_TRUE(contains(error_of([&] {
                         d.write_block({0, 0}, {1, 1}, six.data());
                       }),
                       "/udwadia_kalaba/q"));
  // Data of the wrong size for the block / the dataset.
  m = error_of([&] { d.write_block({0, 0, 0}, {1, 2, 2}, six); });
  EXPECT_TRUE(contains(m, "6 values given, 4 expected")) << m;
  m = error_of([&] { d.write(six); });
  EXPECT_TRUE(contains(m, "6 values given, 40 expected")) << m;
  // Offsets that would overflow do not wrap around.
  EXPECT_NE(error_of([&] {
              d.write_block({~hsize_t{0}, 0, 0}, {2, 1, 1}, six.data());
            }),
            "<no exception>");
  // Reading out of range likewise.
  EXPECT_NE(error_of([&] { d.read_block<double>({0, 5, 0}, {1, 1, 1}); }), "<no exception>");
  // Nothing was written by the failed calls.
  for (double x : d.read<double>()) EXPECT_TRUE(std::isnan(x));
}

TEST_F(H5Test, OtherErrorsThrowNamingTheObject) {
  File f = File::create(path("errs.h5"));
  Group r = f.root();
  Group g = r.create_group("g");
  EXPECT_TRUE(contains(error_of([&] { r.open_group("nope"); }), "/nope"));
  EXPECT_TRUE(contains(error_of([&] { g.open_dataset("q"); }), "/g/q"));
  EXPECT_TRUE(contains(error_of([&] { r.create_group("g"); }), "/g"));  // exists
  g.create_dataset<double>("q", {3});
  EXPECT_TRUE(contains(error_of([&] { g.create_dataset<float>("q", {3}); }), "/g/q"));
  EXPECT_TRUE(contains(error_of([&] { g.create_dataset<double>("z", {3}, {1}, 10); }), "gzip"));
  EXPECT_TRUE(contains(error_of([&] {
                         g.create_dataset<double>("c", {3, 4}, {1});
                       }),
                       "chunk rank"));
  Dataset q = g.open_dataset("q");
  Dataset t = dimension(g, "time", std::vector<double>{0.0, 1.0});  // 2 != 3
  EXPECT_TRUE(contains(error_of([&] { q.attach_scale(t, 0); }), "/g/time"));
  EXPECT_TRUE(contains(error_of([&] { q.attach_scale(t, 1); }), "axis 1"));
  // A read-only file refuses writes.
  f.close();
  q = Dataset();
  t = Dataset();
  g = Group();
  r = Group();
  File ro = File::open_ro(path("errs.h5"));
  Group rr = ro.root();
  EXPECT_TRUE(contains(error_of([&] { rr.set_attr("x", 1.0); }), "@x"));
  EXPECT_TRUE(contains(error_of([&] { rr.create_group("new"); }), "/new"));
}

// A file that declares more than it stores (damaged or crafted) is refused
// before anything is allocated: whole reads, blocks, strings and attributes
// are bounded by the read budget, and the message names the dataset, its
// declared shape and what the file stores.
TEST_F(H5Test, ReadsBeyondTheReadBudgetAreRefusedBeforeAllocating) {
  File f = File::create(path("budget.h5"));
  Group g = f.root();
  // 10^9 x 3 doubles declared (24 GB), chunked, nothing written
  Dataset big = g.create_dataset<double>("big", {1000000000, 3}, {1024, 3});
  Dataset small = g.create_dataset<double>("small", {100, 3}, {10, 3});
  small.write(ramp<double>(300, 0.5));
  g.set_attr("values", std::vector<double>(200, 1.0));
  set_read_budget(1000 * sizeof(double));
  EXPECT_EQ(read_budget(), 1000 * sizeof(double));
  std::string m = error_of([&] { big.read<double>(); });
  EXPECT_TRUE(contains(m, "/big")) << m;
  EXPECT_TRUE(contains(m, "(1000000000, 3)")) << m;
  EXPECT_TRUE(contains(m, "read budget")) << m;
  EXPECT_TRUE(contains(m, "stores 0 bytes")) << m;
  // a block within the budget reads (fill: NaN); one beyond it does not
  EXPECT_EQ(big.read_block<double>({5, 0}, {300, 3}).size(), 900u);
  EXPECT_TRUE(contains(error_of([&] { big.read_block<double>({0, 0}, {400, 3}); }), "(400, 3)"));
  EXPECT_EQ(small.read<double>(), ramp<double>(300, 0.5));  // within the budget
  EXPECT_EQ(g.attr_doubles("values").size(), 200u);
  set_read_budget(100 * sizeof(double));
  EXPECT_TRUE(contains(error_of([&] { small.read<double>(); }), "/small"));
  EXPECT_TRUE(contains(error_of([&] { g.attr_doubles("values"); }), "@values"));
  // a shape whose byte count overflows 64 bits is refused too, not wrapped
  Dataset huge = g.create_dataset<double>("huge", {hsize_t(1) << 31, hsize_t(1) << 31}, {1, 1});
  EXPECT_TRUE(contains(error_of([&] { huge.read<double>(); }), "read budget"));
  set_read_budget(0);  // the default again
  EXPECT_GE(read_budget(), std::uint64_t(1) << 20);
  EXPECT_LE(read_budget(), std::uint64_t(4) << 30);
}

// ---------------------------------------------------------------- 4. fill

TEST_F(H5Test, UnwrittenRegionsReadAsFill) {
  File f = File::create(path("fill.h5"));
  Group g = f.root();
  Dataset dz = g.create_dataset<double>("chunked", {6, 4}, {2, 2});
  Dataset dc = g.create_dataset<double>("contiguous", {6, 4});
  Dataset fz = g.create_dataset<float>("float", {6, 4}, {4, 4});
  Dataset iz = g.create_dataset<std::int32_t>("status", {6}, {2});
  Dataset jz = g.create_dataset<std::int32_t>("status_m1", {6}, {2}, 4, true, -1);
  Dataset never = g.create_dataset<double>("never", {3, 3}, {3, 3});
  // Write rows 2..3 only (a partial chunk for "float").
  std::vector<double> rows(8, 5.0);
  dz.write_block({2, 0}, {2, 4}, rows);
  dc.write_block({2, 0}, {2, 4}, rows);
  fz.write_block({2, 0}, {2, 4}, std::vector<float>(8, 5.0f));
  iz.write_block({2}, {2}, std::vector<std::int32_t>{7, 8});
  jz.write_block({2}, {2}, std::vector<std::int32_t>{7, 8});
  f.flush();

  for (Dataset* d : {&dz, &dc}) {
    std::vector<double> v = d->read<double>();
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i / 4 == 2 || i / 4 == 3) {
        EXPECT_EQ(v[i], 5.0);
      } else {
        EXPECT_TRUE(std::isnan(v[i])) << d->path() << " " << i << " " << v[i];
      }
    }
  }
  std::vector<float> vf = fz.read<float>();
  for (std::size_t i = 0; i < vf.size(); ++i) {
    if (i / 4 == 2 || i / 4 == 3) {
      EXPECT_EQ(vf[i], 5.0f);
    } else {
      EXPECT_TRUE(std::isnan(vf[i])) << i;
    }
  }
  EXPECT_EQ(iz.read<std::int32_t>(), (std::vector<std::int32_t>{0, 0, 7, 8, 0, 0}));
  EXPECT_EQ(jz.read<std::int32_t>(), (std::vector<std::int32_t>{-1, -1, 7, 8, -1, -1}));
  for (double x : never.read<double>()) EXPECT_TRUE(std::isnan(x));
  // The fill value is stored in the dataset (h5py's .fillvalue sees it).
  double fill = 0;
  hid_t dcpl = H5Dget_create_plist(dz.id());
  H5Pget_fill_value(dcpl, H5T_NATIVE_DOUBLE, &fill);
  H5Pclose(dcpl);
  EXPECT_TRUE(std::isnan(fill));
}

// ---------------------------------------------------------------- 5. RAII

TEST_F(H5Test, ObjectsCloseWhenTheyGoAndTheFileReopens) {
  const std::string p = path("raii.h5");
  {
    File f = File::create(p);
    Group g = f.root().create_group("a/b/c");  // intermediates created
    Dataset d = g.create_dataset<std::int64_t>("n", {3});
    d.write(std::vector<std::int64_t>{1, 2, 3});
    EXPECT_GT(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0);
  }
  EXPECT_EQ(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0);
  {
    File f = File::open_rw(p);  // would fail if the file were still open read-only...
    Group r = f.root();
    EXPECT_TRUE(r.exists("a"));
    EXPECT_TRUE(r.exists("a/b/c"));
    EXPECT_TRUE(r.exists("a/b/c/n"));
    EXPECT_TRUE(r.exists("/a/b"));
    EXPECT_FALSE(r.exists("a/x/c"));           // missing intermediate: false, not an error
    EXPECT_FALSE(r.exists("a/b/c/n/deeper"));  // through a dataset: false
    EXPECT_FALSE(r.exists("zzz"));
    Dataset d = r.open_group("a/b").open_group("c").open_dataset("n");
    d.write_block({1}, {1}, std::vector<std::int64_t>{20});
  }
  {
    File f = File::open_ro(p);
    EXPECT_EQ(f.root().open_dataset("a/b/c/n").read<std::int64_t>(),
              (std::vector<std::int64_t>{1, 20, 3}));
  }

  // Moves transfer ownership; the moved-from object is empty.
  File f = File::open_ro(p);
  File g = std::move(f);
  EXPECT_FALSE(f.is_open());  // NOLINT(bugprone-use-after-move)
  EXPECT_TRUE(g.is_open());
  Group r = g.root();
  Group r2 = std::move(r);
  EXPECT_FALSE(r.valid());  // NOLINT(bugprone-use-after-move)
  Dataset d = r2.open_dataset("a/b/c/n");
  Dataset d2;
  d2 = std::move(d);
  EXPECT_FALSE(d.valid());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(d2.size(), 3u);

  // close() releases the file handle; objects still alive keep the file
  // usable until they go, then everything is closed.
  g.close();
  EXPECT_FALSE(g.is_open());
  EXPECT_EQ(d2.read<std::int64_t>()[1], 20);
  g.close();  // twice is fine
  d2 = Dataset();
  r2 = Group();
  EXPECT_EQ(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0);
  // Closed File: a clear error.
  EXPECT_TRUE(contains(error_of([&] { g.root(); }), p));
}

TEST_F(H5Test, ErrorsLeakNoIdentifiers) {
  // Every failing call above runs through here too; TearDown counts ids.
  const std::string p = path("leak.h5");
  File f = File::create(p);
  Group r = f.root();
  Dataset d = r.create_dataset<double>("d", {2, 2}, {1, 2});
  for (int i = 0; i < 50; ++i) {
    (void)error_of([&] { File::create(p); });
    (void)error_of([&] { r.open_dataset("missing"); });
    (void)error_of([&] { d.write_block({1, 1}, {1, 2}, std::vector<double>(2)); });
    (void)error_of([&] { r.attr_string("missing"); });
    (void)error_of([&] { d.read_strings(); });
  }
}
