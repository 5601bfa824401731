// nholo/host/io/h5_copy.cpp — the parts of host/io/h5.hpp about a dataset's
// stored chunks and moving its contents: chunk_dims, chunk_place and
// stores_nothing (how it is stored), copy_into (the assembly of a result,
// `nholo merge --copy`: chunks as they are stored where they fit, values by
// tiles otherwise), fletcher32_matches (its check of a stored chunk) and
// read_every_dataset (a piece read back whole, its checksums checked).
#include <hdf5.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "host/io/h5.hpp"
#include "host/io/h5_internal.hpp"

namespace nholo::h5 {

using detail::Handle;
using namespace internal;

// ---- how a dataset's chunks are stored

std::vector<hsize_t> Dataset::chunk_dims() const {
  quiet();
  Handle dcpl(check_id(H5Dget_create_plist(id()), "cannot read the properties of", id(), ""),
              H5Pclose);
  if (H5Pget_layout(dcpl.get()) != H5D_CHUNKED) return {};
  const int rank = H5Pget_chunk(dcpl.get(), 0, nullptr);
  check(rank, "cannot read the chunk shape of", id(), "");
  std::vector<hsize_t> c(static_cast<std::size_t>(rank));
  check(H5Pget_chunk(dcpl.get(), rank, c.data()), "cannot read the chunk shape of", id(), "");
  return c;
}

ChunkPlace Dataset::chunk_place(const std::vector<hsize_t>& offset) const {
  quiet();
  unsigned filter_mask = 0;
  haddr_t addr = HADDR_UNDEF;
  hsize_t bytes = 0;
  check(H5Dget_chunk_info_by_coord(id(), offset.data(), &filter_mask, &addr, &bytes),
        "cannot find a chunk of", id(), "");
  if (addr == HADDR_UNDEF || bytes == 0) check(-1, "a chunk has no place in the file:", id(), "");
  return ChunkPlace{static_cast<std::uint64_t>(addr), static_cast<std::uint64_t>(bytes)};
}

bool Dataset::stores_nothing() const {
  quiet();
  if (size() == 0) return false;
  const Handle dcpl(check_id(H5Dget_create_plist(id()), "cannot read the properties of", id(), ""),
                    H5Pclose);
  if (H5Pget_layout(dcpl.get()) == H5D_VIRTUAL) return false;
  return H5Dget_storage_size(id()) == 0;
}

namespace {

// The two running sums of HDF5's Fletcher-32 over n bytes, taken as
// big-endian 16-bit words (an odd last byte is the high half of a word),
// folded to 16 bits every 360 words, before they can overflow 32 bits, and
// once more at the end, as HDF5 folds them.
std::pair<uint32_t, uint32_t> fletcher32_sums(const unsigned char* p, std::size_t n) {
  uint32_t a = 0, b = 0;
  auto fold = [](uint32_t v) { return (v & 0xffffu) + (v >> 16); };
  for (std::size_t words = n / 2; words > 0;) {
    const std::size_t block = std::min<std::size_t>(words, 360);
    words -= block;
    for (std::size_t i = 0; i < block; ++i, p += 2) {
      a += (uint32_t(p[0]) << 8) | p[1];
      b += a;
    }
    a = fold(a);
    b = fold(b);
  }
  if (n % 2 != 0) {
    a += uint32_t(p[0]) << 8;
    b += a;
    a = fold(a);
    b = fold(b);
  }
  return {fold(a), fold(b)};
}

}  // namespace

uint32_t fletcher32(const unsigned char* bytes, std::size_t n) {
  const auto [a, b] = fletcher32_sums(bytes, n);
  return b << 16 | a;
}

bool fletcher32_matches(const unsigned char* bytes, std::size_t n) {
  if (n < 4) return false;
  const std::size_t data = n - 4;
  const auto [a, b] = fletcher32_sums(bytes, data);
  // the stored value: b in the high half, a in the low, little-endian; each
  // half compared modulo 65535, where folding in another order may leave
  // 0xffff for 0
  const unsigned char* s = bytes + data;
  const uint32_t stored =
      uint32_t(s[0]) | uint32_t(s[1]) << 8 | uint32_t(s[2]) << 16 | uint32_t(s[3]) << 24;
  return a % 0xffffu == (stored & 0xffffu) % 0xffffu && b % 0xffffu == (stored >> 16) % 0xffffu;
}

namespace {

// failpoint (testing aid): NHOLO_FAILPOINT_COPY_PAUSE_MS=N makes each chunk
// or tile copy_into copies wait N ms first, so that a signal is sure to land
// inside a copy of a test's small file (tests/test_fault_stops.cpp)
void copy_pause() {
  static const long ms = [] {
    const char* v = std::getenv("NHOLO_FAILPOINT_COPY_PAUSE_MS");
    return v ? std::atol(v) : 0L;
  }();
  if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// One filter of a dataset's pipeline, as HDF5 describes it.
struct Filter {
  H5Z_filter_t id = 0;
  unsigned flags = 0;
  std::vector<unsigned> values;
  bool operator==(const Filter& o) const {
    return id == o.id && flags == o.flags && values == o.values;
  }
};

// How a dataset is stored: its chunk shape (empty: not chunked) and filters.
struct Storage {
  std::vector<hsize_t> chunk;
  std::vector<Filter> filters;
};

Storage storage_of(hid_t d) {
  Storage st;
  Handle dcpl(check_id(H5Dget_create_plist(d), "cannot read the properties of", d, ""), H5Pclose);
  if (H5Pget_layout(dcpl.get()) != H5D_CHUNKED) return st;
  const int rank = H5Pget_chunk(dcpl.get(), 0, nullptr);
  if (rank <= 0) return st;
  st.chunk.resize(static_cast<std::size_t>(rank));
  check(H5Pget_chunk(dcpl.get(), rank, st.chunk.data()), "cannot read the chunk shape of", d, "");
  const int n = H5Pget_nfilters(dcpl.get());
  check(n, "cannot read the filters of", d, "");
  for (int i = 0; i < n; ++i) {
    Filter f;
    std::size_t nv = 16;
    f.values.resize(nv);
    unsigned config = 0;
    f.id = H5Pget_filter2(dcpl.get(), static_cast<unsigned>(i), &f.flags, &nv, f.values.data(), 0,
                          nullptr, &config);
    check(f.id, "cannot read the filters of", d, "");
    f.values.resize(std::min<std::size_t>(nv, 16));
    st.filters.push_back(std::move(f));
  }
  return st;
}

// Whether every chunk of src, as stored (filtered), is a chunk of dst at
// offset: the same chunk shape, filters and file type, offset on dst's
// chunk grid, src's edge chunks (if partial) also dst's edge chunks, and
// every chunk of src written (an unwritten one reads as src's fill, which
// dst's may not be): src's storage where they are, nothing where not.
std::optional<Storage> stored_chunks_fit(const Dataset& src, const Dataset& dst,
                                         const std::vector<hsize_t>& offset) {
  const std::vector<hsize_t> dims = src.dims(), ddims = dst.dims();
  if (dims.empty() || dims.size() != ddims.size() || Dataset::product(dims) == 0) return {};
  Storage s = storage_of(src.id());
  const Storage d = storage_of(dst.id());
  if (s.chunk.empty() || s.chunk != d.chunk || !(s.filters == d.filters)) return {};
  hsize_t chunks = 1;
  for (std::size_t a = 0; a < dims.size(); ++a) {
    const hsize_t c = s.chunk[a];
    if (offset[a] % c != 0 || offset[a] + dims[a] > ddims[a]) return {};
    if (dims[a] % c != 0 && offset[a] + dims[a] != ddims[a]) return {};
    chunks *= (dims[a] + c - 1) / c;
  }
  Handle st(check_id(H5Dget_type(src.id()), "cannot read the type of", src.id(), ""), H5Tclose);
  Handle dt(check_id(H5Dget_type(dst.id()), "cannot read the type of", dst.id(), ""), H5Tclose);
  if (H5Tequal(st.get(), dt.get()) <= 0) return {};
  Handle space(check_id(H5Dget_space(src.id()), "cannot read the shape of", src.id(), ""),
               H5Sclose);
  hsize_t written = 0;
  check(H5Dget_num_chunks(src.id(), space.get(), &written), "cannot count the chunks of", src.id(),
        "");
  if (written != chunks) return {};
  return s;
}

// Reads the values of src's chunk at `at` through HDF5's filters, which
// check its checksum: throws, naming the block and HDF5's reason, where the
// chunk is damaged.
void read_chunk_values(const Dataset& src, const std::vector<hsize_t>& at,
                       const std::vector<hsize_t>& chunk, std::vector<unsigned char>& values) {
  const std::vector<hsize_t> dims = src.dims();
  std::vector<hsize_t> cnt(dims.size());
  for (std::size_t a = 0; a < dims.size(); ++a) cnt[a] = std::min(chunk[a], dims[a] - at[a]);
  values = src.read_block_native(at, cnt);
}

// src's chunks, as stored, into dst (stored_chunks_fit): no decoding, no
// filters run again, checksums carried over. Where Fletcher-32 is src's last
// filter, each chunk's checksum is checked first (fletcher32_matches); a
// chunk that fails it is read through HDF5's filters, which decide: a
// damaged chunk throws as the copy by values would, and none reaches dst.
void copy_stored_chunks(const Dataset& src, const Storage& storage, Dataset& dst,
                        const std::vector<hsize_t>& offset, const std::atomic<bool>* stop) {
  const std::vector<hsize_t> dims = src.dims();
  const std::vector<hsize_t>& chunk = storage.chunk;
  const int last = static_cast<int>(storage.filters.size()) - 1;
  const bool checksummed = last >= 0 && storage.filters.back().id == H5Z_FILTER_FLETCHER32;
  std::vector<hsize_t> at(dims.size(), 0), to(dims.size());
  std::vector<unsigned char> buf, values;
  for (;;) {
    copy_pause();
    if (stop && stop->load()) throw Stopped("stopped while copying " + where(src.id(), ""));
    hsize_t bytes = 0;
    check(H5Dget_chunk_storage_size(src.id(), at.data(), &bytes), "cannot find a chunk of",
          src.id(), "");
    buf.resize(static_cast<std::size_t>(bytes));
    uint32_t mask = 0;
    check(H5Dread_chunk(src.id(), H5P_DEFAULT, at.data(), &mask, buf.data()),
          "cannot read the chunk at " + shape_text(at) + " of", src.id(), "");
    if (checksummed && !(mask & (1u << last)) && !fletcher32_matches(buf.data(), buf.size()))
      read_chunk_values(src, at, chunk, values);
    for (std::size_t a = 0; a < at.size(); ++a) to[a] = offset[a] + at[a];
    check(H5Dwrite_chunk(dst.id(), H5P_DEFAULT, mask, to.data(), static_cast<std::size_t>(bytes),
                         buf.data()),
          "cannot write the chunk at " + shape_text(to) + " of", dst.id(), "");
    std::size_t a = dims.size();
    for (;;) {  // the next chunk, row-major
      if (a == 0) return;
      --a;
      at[a] += chunk[a];
      if (at[a] < dims[a]) break;
      at[a] = 0;
    }
  }
}

}  // namespace

std::vector<unsigned char> Dataset::read_block_native(const std::vector<hsize_t>& offset,
                                                      const std::vector<hsize_t>& count) const {
  quiet();
  Handle ftype(check_id(H5Dget_type(id()), "cannot read the type of", id(), ""), H5Tclose);
  Handle mtype(check_id(H5Tget_native_type(ftype.get(), H5T_DIR_ASCEND), "cannot read the type of",
                        id(), ""),
               H5Tclose);
  std::vector<unsigned char> values(static_cast<std::size_t>(product(count)) *
                                    H5Tget_size(mtype.get()));
  Handle sspace = select_block(id(), offset, count);
  Handle mspace = simple_space(count, id(), "");
  check(H5Dread(id(), mtype.get(), mspace.get(), sspace.get(), H5P_DEFAULT, values.data()),
        "cannot read a block " + shape_text(offset) + "+" + shape_text(count) + " of", id(), "");
  return values;
}

bool copy_into(const Dataset& src, Dataset& dst, const std::vector<hsize_t>& offset,
               std::size_t max_bytes, const std::atomic<bool>* stop) {
  quiet();
  if (offset.size() == src.dims().size())
    if (const std::optional<Storage> storage = stored_chunks_fit(src, dst, offset)) {
      copy_stored_chunks(src, *storage, dst, offset, stop);
      return true;
    }
  const std::vector<hsize_t> dims = src.dims();
  Handle ftype(check_id(H5Dget_type(src.id()), "cannot read the type of", src.id(), ""), H5Tclose);
  Handle mtype(check_id(H5Tget_native_type(ftype.get(), H5T_DIR_ASCEND), "cannot read the type of",
                        src.id(), ""),
               H5Tclose);
  const std::size_t esize = std::max<std::size_t>(H5Tget_size(mtype.get()), 1);
  // the whole block must fit dst (checked once, also for an empty src)
  select_block(dst.id(), offset, dims);
  std::vector<unsigned char> buf;
  std::vector<hsize_t> at(dims.size());
  for_each_tile(
      dims, std::max<hsize_t>(max_bytes / esize, 1),
      [&](const std::vector<hsize_t>& off, const std::vector<hsize_t>& cnt) {
        copy_pause();
        if (stop && stop->load()) throw Stopped("stopped while copying " + where(src.id(), ""));
        const hsize_t n = Dataset::product(cnt);
        buf.resize(static_cast<std::size_t>(n) * esize);
        Handle sspace = select_block(src.id(), off, cnt);
        Handle mspace = simple_space(cnt, src.id(), "");
        check(H5Dread(src.id(), mtype.get(), mspace.get(), sspace.get(), H5P_DEFAULT, buf.data()),
              "cannot read a block " + shape_text(off) + "+" + shape_text(cnt) + " of", src.id(),
              "");
        for (std::size_t i = 0; i < at.size(); ++i) at[i] = offset[i] + off[i];
        Handle fspace = select_block(dst.id(), at, cnt);
        check(H5Dwrite(dst.id(), mtype.get(), mspace.get(), fspace.get(), H5P_DEFAULT, buf.data()),
              "cannot write a block " + shape_text(at) + "+" + shape_text(cnt) + " of", dst.id(),
              "");
      });
  return false;
}

namespace {

herr_t collect_dataset(hid_t, const char* name, const H5O_info_t* info, void* data) {
  if (info->type == H5O_TYPE_DATASET) static_cast<std::vector<std::string>*>(data)->push_back(name);
  return 0;
}

}  // namespace

std::vector<std::string> dataset_names(const Group& g) {
  std::vector<std::string> names;
  quiet();
  check(H5Ovisit2(g.id(), H5_INDEX_NAME, H5_ITER_INC, collect_dataset, &names, H5O_INFO_BASIC),
        "cannot list the datasets of", g.id(), "");
  return names;
}

bool holds_strings(const Dataset& d) {
  quiet();
  Handle ftype(check_id(H5Dget_type(d.id()), "cannot read the type of", d.id(), ""), H5Tclose);
  return H5Tget_class(ftype.get()) == H5T_STRING;
}

std::string innermost_reason(const std::string& text) {
  const size_t at = text.rfind("(): ");
  return at == std::string::npos ? text : text.substr(at + 4);
}

void read_every_dataset(const std::string& path, std::size_t max_bytes) {
  const auto innermost = innermost_reason;
  std::optional<File> opened;
  try {
    opened.emplace(File::open_ro(path));
  } catch (const std::runtime_error& e) {
    throw std::runtime_error("the file cannot be opened: " + innermost(e.what()));
  }
  const File& f = *opened;
  const std::vector<std::string> names = dataset_names(f.root());
  std::vector<unsigned char> buf;
  for (const std::string& name : names) {
    const Dataset d = f.root().open_dataset(name);
    const std::vector<hsize_t> dims = d.dims();
    Handle ftype(check_id(H5Dget_type(d.id()), "cannot read the type of", d.id(), ""), H5Tclose);
    Handle mtype(check_id(H5Tget_native_type(ftype.get(), H5T_DIR_ASCEND),
                          "cannot read the type of", d.id(), ""),
                 H5Tclose);
    if (H5Tis_variable_str(mtype.get()) > 0 || H5Tget_class(mtype.get()) == H5T_VLEN) continue;
    const std::size_t esize = std::max<std::size_t>(H5Tget_size(mtype.get()), 1);
    for_each_tile(dims, std::max<hsize_t>(max_bytes / esize, 1),
                  [&](const std::vector<hsize_t>& off, const std::vector<hsize_t>& cnt) {
                    buf.resize(static_cast<std::size_t>(Dataset::product(cnt)) * esize);
                    Handle sspace = select_block(d.id(), off, cnt);
                    Handle mspace = simple_space(cnt, d.id(), "");
                    if (H5Dread(d.id(), mtype.get(), mspace.get(), sspace.get(), H5P_DEFAULT,
                                buf.data()) >= 0)
                      return;
                    throw std::runtime_error("'" + name +
                                             "' cannot be read: " + innermost(take_stack()));
                  });
  }
}

}  // namespace nholo::h5
