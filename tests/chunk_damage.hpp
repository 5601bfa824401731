// nholo/tests/chunk_damage.hpp — what a bad sector or a stray write does to
// a piece or a result file, for the tests of the checksums that find it.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "host/io/h5.hpp"

namespace nholo_test {

// Flips the bits `mask` of the byte in the middle of the chunk of `dataset`
// (in the closed file `path`) that holds element `at`.
inline void flip_a_bit(const std::filesystem::path& path, const std::string& dataset,
                       const std::vector<hsize_t>& at, char mask = 0x04) {
  uint64_t address = 0;
  {
    const nholo::h5::File f = nholo::h5::File::open_ro(path.string());
    const nholo::h5::ChunkPlace place = f.root().open_dataset(dataset).chunk_place(at);
    ASSERT_GT(place.bytes, 16u);
    address = place.address + place.bytes / 2;
  }
  std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
  f.seekg(static_cast<std::streamoff>(address));
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ mask);
  f.seekp(static_cast<std::streamoff>(address));
  f.write(&c, 1);
}

}  // namespace nholo_test
