// Tests of host/io/h5.hpp (the RAII layer over the HDF5 C library).
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
//  6. Dimension scales and the output layout of docs/usage.md ("Output (HDF5)") as
//     tests/h5_layout_writer.cpp writes it (included here), read back.
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

#define NHOLO_H5_LAYOUT_NO_MAIN
#include "h5_layout_writer.cpp"

namespace fs = std::filesystem;
using namespace nholo::h5;

namespace {

// Leak detection. HDF5 1.10 numbers the identifiers of each kind (dataspace,
// property list, datatype, error stack) consecutively; a marker identifier
// made before and one made after a test bound the ones the test made, and
// none of those may still be valid. Files, groups, datasets and attributes
// are counted by H5Fget_obj_count.
struct IdMarkers {
  hid_t space, plist, type, stack;
};

IdMarkers make_markers() {
  IdMarkers m{H5Screate(H5S_SCALAR), H5Pcreate(H5P_DATASET_XFER), H5Tcopy(H5T_NATIVE_INT),
              H5Ecreate_stack()};
  H5Sclose(m.space);
  H5Pclose(m.plist);
  H5Tclose(m.type);
  H5Eclose_stack(m.stack);
  return m;
}

// Identifiers strictly between the markers that are still open.
std::vector<hid_t> leaked_between(const IdMarkers& a, const IdMarkers& b) {
  std::vector<hid_t> leaked;
  for (auto [lo, hi] : {std::pair{a.space, b.space}, std::pair{a.plist, b.plist},
                        std::pair{a.type, b.type}, std::pair{a.stack, b.stack}})
    for (hid_t id = lo + 1; id < hi; ++id)
      if (H5Iis_valid(id) > 0) leaked.push_back(id);
  return leaked;
}

// A fresh temporary directory per test; checks that every identifier the
// test opened has been closed when it ends.
class H5Test : public ::testing::Test {
 protected:
  void SetUp() override {
    H5open();
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // the raw H5 calls below
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("nholo_test_h5_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    before_ = make_markers();
  }
  void TearDown() override {
    EXPECT_EQ(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0)
        << "files, groups, datasets or attributes left open";
    std::vector<hid_t> leaked = leaked_between(before_, make_markers());
    EXPECT_TRUE(leaked.empty()) << leaked.size() << " dataspace/plist/type/error-stack ids leaked";
    fs::remove_all(dir_);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
  IdMarkers before_{};
};

template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "<no exception>";
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

template <class T>
std::vector<T> ramp(std::size_t n, double scale) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<T>(double(i % 251) * scale);
  return v;
}

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

// ---------------------------------------------------------------- 6. scales + layout

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

// ---------------------------------------------------------------- 7. copies

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
