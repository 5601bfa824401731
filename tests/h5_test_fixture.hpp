// nholo/tests/h5_test_fixture.hpp — the fixture of the tests of host/io/h5.hpp
// (tests/test_h5.cpp, test_h5_layout.cpp): H5Test gives each test a fresh
// temporary folder and checks that no HDF5 identifier the test opened
// outlives it; error_of, contains and ramp are what those tests check with.
#pragma once

#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <cstddef>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace nholo_test {

namespace fs = std::filesystem;

// Leak detection. HDF5 1.10 numbers the identifiers of each kind (dataspace,
// property list, datatype, error stack) consecutively; a marker identifier
// made before and one made after a test bound the ones the test made, and
// none of those may still be valid. Files, groups, datasets and attributes
// are counted by H5Fget_obj_count.
struct IdMarkers {
  hid_t space, plist, type, stack;
};

inline IdMarkers make_markers() {
  IdMarkers m{H5Screate(H5S_SCALAR), H5Pcreate(H5P_DATASET_XFER), H5Tcopy(H5T_NATIVE_INT),
              H5Ecreate_stack()};
  H5Sclose(m.space);
  H5Pclose(m.plist);
  H5Tclose(m.type);
  H5Eclose_stack(m.stack);
  return m;
}

// Identifiers strictly between the markers that are still open.
inline std::vector<hid_t> leaked_between(const IdMarkers& a, const IdMarkers& b) {
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

inline bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

template <class T>
std::vector<T> ramp(std::size_t n, double scale) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<T>(double(i % 251) * scale);
  return v;
}

}  // namespace nholo_test
