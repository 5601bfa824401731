// nholo/host/io/h5.hpp — a thin RAII layer over the HDF5 C library (+ H5DS
// dimension scales from hdf5_hl), enough to stream nholo's output layout
// (docs/usage.md, "Output (HDF5)") so that h5py and xarray (engine="h5netcdf") read it
// with named dimensions.
//
// Ownership: every hid_t lives in exactly one detail::Handle, which closes it
// with the matching H5*close; File, Group, Dataset are move-only. An object
// keeps its file open (HDF5's default "weak" close degree): the file is really
// closed when the File and every Group/Dataset opened from it are gone.
//
// Errors: every failure throws std::runtime_error
//   "nholo::h5: <what> '<file>:<object path>': <HDF5 error stack, outermost first>"
// HDF5's automatic error printing is switched off (per thread, the first time
// a thread calls into this layer).
//
// Usage, as expressions (g a Group, d a Dataset, T one of double, float,
// int32_t, int64_t, uint8_t):
//
//   File::create(path)              new file; throws if path exists
//   File::open_rw(path), open_ro(path)
//   f.root(), f.flush(), f.close()
//   g.create_group("a/b")           intermediate groups are created too
//   g.open_group(name), g.exists(name), g.open_dataset(name)
//   g.set_attr(name, v)             v: std::string, const char*, double,
//                                   any integer (stored int64), vector<double>,
//                                   vector<string> (vlen UTF-8 strings);
//                                   replaces an existing attribute
//   g.attr_string(name), attr_double, attr_int64, attr_doubles, attr_strings,
//   g.has_attr(name)                (Datasets have the same attribute calls)
//   g.create_dataset<T>(name, dims, chunk = {}, gzip = 4, shuffle = true, fill)
//                                   fixed dims; chunk non-empty -> chunked
//                                   (+ shuffle + deflate); unwritten elements
//                                   read as fill (NaN for floating T, 0 else)
//   g.create_dataset_as(type, name, dims, chunk, gzip, shuffle, fill[, checksum])
//                                   the same with the type chosen at run time
//   g.create_checksummed<T>(name, dims, chunk, gzip)
//                                   chunked, + Fletcher-32: reads verify it
//   g.create_allocated(type, name, dims, chunk, fill)
//                                   chunked, unfiltered, every chunk placed in
//                                   the file at once and nothing written;
//                                   d.chunk_place(offset): a chunk's address
//   g.create_external_link(name, file, target)
//   g.create_virtual(type, name, dims, fill, sources)
//                                   an HDF5 virtual dataset (VDS): each source
//                                   (a whole dataset in another file, named
//                                   relative to this file's folder) fills the
//                                   block [offset, offset + count); blocks
//                                   whose file is missing read as fill
//   copy_into(src, dst, offset)     src, whole, into dst's block at offset
//                                   (chunk by chunk as stored where they fit)
//   read_every_dataset(path)        every dataset of a file read (checksums checked)
//   dataset_names(g), holds_strings(d)  the datasets below g; strings or numbers
//                                   (through a bounded buffer, tile by tile)
//   for_each_tile(dims, max, fn)    fn(offset, count) for row-major blocks of
//                                   at most max elements that tile dims
//   g.create_string_dataset(name, strings)   1-D vlen UTF-8
//   d.write(const T* all) / d.write(vector<T>)           row-major, whole
//   d.write_block(offset, count, const T*|vector<T>)      row-major block
//   d.read<T>(), d.read(T*), d.read_block<T>(offset, count), d.read_strings()
//   d.dims(), d.size()
//   d.make_scale(dim_name), d.attach_scale(scale, axis), d.is_scale()
//   dimension(g, name, values)      1-D coordinate dataset made a scale
//                                   (values: vector<double|int64_t|string>)
//   index_dimension(g, name, n)     the same with values 0..n-1 (int64)
//   default_chunk(dims, bytes_per_element, block)   a <= 1 MiB chunk shape that
//                                   tiles the write blocks
#pragma once

#include <hdf5.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace nholo::h5 {

namespace detail {

// One HDF5 identifier and the function that releases it.
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() noexcept = default;
  Handle(hid_t id, Closer closer) noexcept : id_(id), closer_(closer) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& o) noexcept : id_(o.id_), closer_(o.closer_) { o.id_ = H5I_INVALID_HID; }
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = o.id_;
      closer_ = o.closer_;
      o.id_ = H5I_INVALID_HID;
    }
    return *this;
  }
  ~Handle() { reset(); }

  hid_t get() const noexcept { return id_; }
  bool valid() const noexcept { return id_ >= 0; }
  // Gives up ownership without closing.
  hid_t release() noexcept {
    hid_t id = id_;
    id_ = H5I_INVALID_HID;
    return id;
  }
  // Closes now (errors while closing are swallowed: this runs in destructors).
  void reset() noexcept {
    if (id_ >= 0 && closer_ != nullptr) closer_(id_);
    id_ = H5I_INVALID_HID;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer closer_ = nullptr;
};

// The element types datasets and blocks may hold.
enum class Scalar { f64, f32, i32, i64, u8 };

// Bytes of one element of type s.
constexpr std::size_t scalar_bytes(Scalar s) {
  return s == Scalar::f64 || s == Scalar::i64 ? 8 : s == Scalar::u8 ? 1 : 4;
}

template <class T>
constexpr Scalar scalar_of() {
  using U = std::remove_cv_t<T>;
  static_assert(std::is_same_v<U, double> || std::is_same_v<U, float> ||
                    std::is_same_v<U, std::int32_t> || std::is_same_v<U, std::int64_t> ||
                    std::is_same_v<U, std::uint8_t>,
                "nholo::h5 supports double, float, int32_t, int64_t, uint8_t");
  if constexpr (std::is_same_v<U, double>)
    return Scalar::f64;
  else if constexpr (std::is_same_v<U, float>)
    return Scalar::f32;
  else if constexpr (std::is_same_v<U, std::int32_t>)
    return Scalar::i32;
  else if constexpr (std::is_same_v<U, std::int64_t>)
    return Scalar::i64;
  else
    return Scalar::u8;
}

}  // namespace detail

// The most bytes HDF5 stores in one chunk (its limit: less than 4 GiB).
constexpr std::uint64_t kMaxChunkBytes = 0xFFFFFFFFu;

// "(a, b, c)": a shape for messages.
std::string shape_text(const std::vector<hsize_t>& dims);

// The most bytes one read of this layer allocates for what it returns (a
// whole dataset, a block, a string dataset, an attribute's values): the
// environment's NHOLO_READ_BUDGET_MB if set, else half of the machine's
// memory, at most 4 GiB; set_read_budget replaces it (0: the default again).
// nholo's readers (stats, compare, diff, merge, --resume) read large datasets
// in blocks, so only a file that declares more than it should (damaged or
// crafted) meets the limit: the read then throws, naming the dataset, its
// declared shape and the bytes the file stores of it, before allocating.
void set_read_budget(std::uint64_t bytes);
std::uint64_t read_budget();

class Dataset;

// One block of a virtual dataset: the whole dataset `dataset` of `file`
// (relative to the virtual dataset's folder, or absolute) shown at
// [offset, offset + count).
struct VirtualSource {
  std::vector<hsize_t> offset, count;
  std::string file, dataset;
  // The block of the source dataset (of shape source_dims) read, at
  // source_offset; empty: the whole source, of shape count.
  std::vector<hsize_t> source_dims, source_offset;
};

// Where a chunk of an unfiltered dataset lies in its file.
struct ChunkPlace {
  std::uint64_t address = 0, bytes = 0;
};

// What Groups and Datasets share: an identifier and attributes.
class Object {
 public:
  hid_t id() const noexcept { return h_.get(); }
  bool valid() const noexcept { return h_.valid(); }
  // The object's path inside its file ("/udwadia_kalaba/q") and the file name.
  std::string path() const;
  std::string file_name() const;

  bool has_attr(const std::string& name) const;
  void set_attr(const std::string& name, const std::string& value);
  void set_attr(const std::string& name, const char* value) { set_attr(name, std::string(value)); }
  void set_attr(const std::string& name, double value);
  void set_attr(const std::string& name, std::int64_t value);
  template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool> &&
                                          !std::is_same_v<I, std::int64_t>,
                                      int> = 0>
  void set_attr(const std::string& name, I value) {
    set_attr(name, static_cast<std::int64_t>(value));
  }
  void set_attr(const std::string& name, const std::vector<double>& values);
  void set_attr(const std::string& name, const std::vector<std::string>& values);

  std::string attr_string(const std::string& name) const;
  double attr_double(const std::string& name) const;
  std::int64_t attr_int64(const std::string& name) const;
  std::vector<double> attr_doubles(const std::string& name) const;
  std::vector<std::string> attr_strings(const std::string& name) const;

 protected:
  Object() = default;
  explicit Object(detail::Handle h) noexcept : h_(std::move(h)) {}
  detail::Handle h_;
};

class Group : public Object {
 public:
  Group() = default;

  // Creates name (a relative path; missing intermediate groups are created).
  Group create_group(const std::string& name);
  Group open_group(const std::string& name) const;
  // Whether a link name (a relative path, every part of which must exist) exists.
  bool exists(const std::string& name) const;

  // A dataset of fixed shape dims. A non-empty chunk (one entry per dimension,
  // each clamped to [1, dims[i]]) gives chunked storage with the shuffle filter
  // (if shuffle) and deflate at gzip_level (0 = none); empty chunk gives
  // contiguous storage without filters. Unwritten elements read as fill
  // (default: NaN for float/double, 0 for integers).
  template <class T>
  Dataset create_dataset(const std::string& name, std::vector<hsize_t> dims,
                         std::vector<hsize_t> chunk = {}, int gzip_level = 4, bool shuffle = true,
                         std::optional<T> fill = std::nullopt);

  // create_dataset with HDF5's Fletcher-32 checksum on every chunk (chunked
  // always: an empty chunk means one chunk of dims): every read verifies it
  // and fails ("data error detected by Fletcher32 checksum") on a changed byte.
  // Chunks keep their shape where dims are smaller (the dataset's maximum
  // shape is then one chunk along that axis): a piece's chunks are those of
  // the result it is copied into, also for a short last window or slice.
  template <class T>
  Dataset create_checksummed(const std::string& name, std::vector<hsize_t> dims,
                             std::vector<hsize_t> chunk, int gzip_level);

  // create_dataset with the element type given at run time, fill converted
  // from double; checksum: with Fletcher-32 (as create_checksummed) where chunked.
  Dataset create_dataset_as(detail::Scalar type, const std::string& name, std::vector<hsize_t> dims,
                            std::vector<hsize_t> chunk, int gzip_level, bool shuffle, double fill,
                            bool checksum = false);
  // A virtual dataset of shape dims over sources (blocks that do not
  // overlap); elements no source covers, or whose file does not exist (yet),
  // read as fill.
  Dataset create_virtual(detail::Scalar type, const std::string& name,
                         const std::vector<hsize_t>& dims, double fill,
                         const std::vector<VirtualSource>& sources);

  // A chunked dataset whose every chunk is given its place in the file now
  // (HDF5's early allocation) and nothing written: its values are written
  // later straight into the file (Dataset::chunk_place), and read as
  // whatever is there until then (the fill value is recorded, not written).
  // checksum: with Fletcher-32 as its one filter, each chunk's place then 4
  // bytes longer for the checksum its writer must put after the values
  // (fletcher32); without, no filter.
  Dataset create_allocated(detail::Scalar type, const std::string& name,
                           const std::vector<hsize_t>& dims, std::vector<hsize_t> chunk,
                           double fill, bool checksum = false);
  // An external link name -> file:target (file named relative to this
  // file's folder).
  void create_external_link(const std::string& name, const std::string& file,
                            const std::string& target);

  // A 1-D dataset of variable-length UTF-8 strings (h5py/xarray read str).
  Dataset create_string_dataset(const std::string& name, const std::vector<std::string>& values);
  Dataset open_dataset(const std::string& name) const;

 private:
  friend class File;
  explicit Group(detail::Handle h) noexcept : Object(std::move(h)) {}
  Dataset create_dataset_raw(const std::string& name, detail::Scalar type,
                             const std::vector<hsize_t>& dims, std::vector<hsize_t> chunk,
                             int gzip_level, bool shuffle, const void* fill, bool checksum = false,
                             bool whole_chunks = false);
};

class Dataset : public Object {
 public:
  Dataset() = default;

  std::vector<hsize_t> dims() const;
  // Number of elements (product of dims).
  hsize_t size() const;
  // Bytes of one element as stored in the file.
  std::size_t element_bytes() const;

  // Whole dataset from row-major data (T converted to the stored type by HDF5).
  template <class T>
  void write(const T* data) {
    write_raw(detail::scalar_of<T>(), data);
  }
  // The same; throws unless values.size() == size().
  template <class T>
  void write(const std::vector<T>& values) {
    check_count(values.size(), size(), "write");
    write_raw(detail::scalar_of<T>(), values.data());
  }
  // The hyperslab [offset, offset + count) from a row-major block of
  // prod(count) elements. Throws on a rank mismatch or a block that does not
  // fit inside dims().
  template <class T>
  void write_block(const std::vector<hsize_t>& offset, const std::vector<hsize_t>& count,
                   const T* data) {
    write_block_raw(detail::scalar_of<T>(), offset, count, data);
  }
  template <class T>
  void write_block(const std::vector<hsize_t>& offset, const std::vector<hsize_t>& count,
                   const std::vector<T>& values) {
    check_count(values.size(), product(count), "write_block");
    write_block_raw(detail::scalar_of<T>(), offset, count, values.data());
  }

  template <class T>
  void read(T* out) const {
    read_raw(detail::scalar_of<T>(), out);
  }
  template <class T>
  std::vector<T> read() const {
    check_read_budget(dims(), sizeof(T));
    std::vector<T> out(static_cast<std::size_t>(size()));
    read_raw(detail::scalar_of<T>(), out.data());
    return out;
  }
  template <class T>
  void read_block(const std::vector<hsize_t>& offset, const std::vector<hsize_t>& count,
                  T* out) const {
    read_block_raw(detail::scalar_of<T>(), offset, count, out);
  }
  template <class T>
  std::vector<T> read_block(const std::vector<hsize_t>& offset,
                            const std::vector<hsize_t>& count) const {
    check_read_budget(count, sizeof(T));
    std::vector<T> out(static_cast<std::size_t>(product(count)));
    read_block_raw(detail::scalar_of<T>(), offset, count, out.data());
    return out;
  }
  // The block [offset, offset + count) as the bytes of its values in the
  // native form of the stored type (on a little-endian machine: the bytes
  // the file stores), read through the filters, which check the checksums.
  std::vector<unsigned char> read_block_native(const std::vector<hsize_t>& offset,
                                               const std::vector<hsize_t>& count) const;
  // A 1-D string dataset (variable- or fixed-length) as std::strings.
  std::vector<std::string> read_strings() const;

  // Makes this dataset the dimension scale of dimension dim_name (H5DSset_scale).
  void make_scale(const std::string& dim_name);
  // Attaches scale to axis of this dataset (H5DSattach_scale). Throws if the
  // scale's length differs from dims()[axis].
  void attach_scale(const Dataset& scale, unsigned axis);
  bool is_scale() const;

  // The chunk shape (empty: not chunked).
  std::vector<hsize_t> chunk_dims() const;
  // The place in the file of the chunk that starts at offset (a multiple of
  // chunk_dims()); throws if it has none (not allocated).
  ChunkPlace chunk_place(const std::vector<hsize_t>& offset) const;
  // Every chunk's place, in the order of the chunk grid (row-major): one
  // walk of the dataset's chunk index where it is the version-1 B-tree of
  // the files nholo writes (h5_chunk_index.cpp; *walked set true), else
  // chunk_place for each (HDF5 1.10 walks its index from the first chunk at
  // each: the square of their number). Throws if a chunk is not allocated.
  std::vector<ChunkPlace> chunk_places(bool* walked = nullptr) const;
  // Whether it has elements but not one byte of them is stored (it reads as
  // its fill value throughout); false for a virtual dataset.
  bool stores_nothing() const;

  static hsize_t product(const std::vector<hsize_t>& v) {
    hsize_t p = 1;
    for (hsize_t x : v) p *= x;
    return p;
  }

 private:
  friend class Group;
  explicit Dataset(detail::Handle h) noexcept : Object(std::move(h)) {}
  void check_count(std::size_t got, hsize_t want, const char* what) const;
  // throws unless `shape` values of bytes_each bytes fit in read_budget()
  void check_read_budget(const std::vector<hsize_t>& shape, std::size_t bytes_each) const;
  void write_raw(detail::Scalar type, const void* data);
  void write_block_raw(detail::Scalar type, const std::vector<hsize_t>& offset,
                       const std::vector<hsize_t>& count, const void* data);
  void read_raw(detail::Scalar type, void* out) const;
  void read_block_raw(detail::Scalar type, const std::vector<hsize_t>& offset,
                      const std::vector<hsize_t>& count, void* out) const;
};

class File {
 public:
  File() = default;
  // A new file; throws (naming path) if it exists (H5F_ACC_EXCL).
  static File create(const std::string& path);
  // lock = false: without HDF5's file lock (a file that readers may hold
  // open while nholo adds to it: host/io/in_place_file.hpp)
  static File open_rw(const std::string& path, bool lock = true);
  static File open_ro(const std::string& path);

  Group root() const;
  void flush();
  // Flushes and releases the file handle. Groups/Datasets still alive keep
  // the file open until they go.
  void close();
  bool is_open() const noexcept { return h_.valid(); }
  const std::string& path() const noexcept { return path_; }

 private:
  File(detail::Handle h, std::string path) noexcept : h_(std::move(h)), path_(std::move(path)) {}
  detail::Handle h_;
  std::string path_;
};

template <class T>
Dataset Group::create_dataset(const std::string& name, std::vector<hsize_t> dims,
                              std::vector<hsize_t> chunk, int gzip_level, bool shuffle,
                              std::optional<T> fill) {
  constexpr detail::Scalar type = detail::scalar_of<T>();
  if (!fill) {
    if constexpr (std::is_floating_point_v<T>) {
      fill = std::numeric_limits<T>::quiet_NaN();
    } else {
      fill = T(0);
    }
  }
  return create_dataset_raw(name, type, dims, std::move(chunk), gzip_level, shuffle, &*fill);
}

template <class T>
Dataset Group::create_checksummed(const std::string& name, std::vector<hsize_t> dims,
                                  std::vector<hsize_t> chunk, int gzip_level) {
  constexpr detail::Scalar type = detail::scalar_of<T>();
  T fill{};
  if constexpr (std::is_floating_point_v<T>) fill = std::numeric_limits<T>::quiet_NaN();
  if (chunk.empty()) chunk = dims;
  return create_dataset_raw(name, type, dims, std::move(chunk), gzip_level, gzip_level > 0, &fill,
                            true, true);
}

// Keeps the HDF5 library from closing its files at process exit (call first
// thing in main). After a failed write (a full disk) HDF5 1.10 can leave a
// file it could not close whose clean-up at exit crashes; nholo closes every
// file it writes explicitly, so nothing is lost by skipping it.
void skip_library_cleanup_at_exit();

// Thrown by copy_into when its stop flag is set: the copy is abandoned
// between two tiles (what the caller was writing is incomplete).
class Stopped : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Writes the whole of src into the block of dst at offset (count =
// src.dims()). Where src's chunks are dst's chunks (the same chunk shape,
// filters and file type, offset on dst's chunk grid, every chunk of src
// written), each chunk is copied as it is stored: nothing decoded, no filter
// run again, a Fletcher-32 checksum carried into dst unchecked (it is checked
// wherever dst is read); returns true. Otherwise the values are copied in
// src's own element type through a buffer of at most max_bytes (one tile of
// for_each_tile at a time), the checksums checked on reading; returns false.
// Memory does not grow with the dataset either way. stop (may be null):
// checked before each chunk or tile; set, it throws Stopped (a signal
// handler's flag: a long copy stops within a tile).
bool copy_into(const Dataset& src, Dataset& dst, const std::vector<hsize_t>& offset,
               std::size_t max_bytes = std::size_t(1) << 20,
               const std::atomic<bool>* stop = nullptr);

// Whether a chunk as stored with Fletcher-32 as its last filter (its bytes,
// then their 4-byte checksum) is intact: HDF5's Fletcher-32 of the bytes
// equals the stored one. copy_into's check of the chunks it copies as
// stored; HDF5's own reading of a chunk decides where this says no.
bool fletcher32_matches(const unsigned char* bytes, std::size_t n);
// HDF5's Fletcher-32 of n bytes, the value its filter stores (little-endian)
// after a chunk's bytes: what a chunk written straight into the file carries
// (host/io/in_place_file.hpp).
std::uint32_t fletcher32(const unsigned char* bytes, std::size_t n);

// Reads every dataset of the file at path (hard links only: external links
// are not followed) through a buffer of at most max_bytes, so that HDF5
// checks what it can (the Fletcher-32 checksums of create_checksummed, the
// chunk index, the file's structure). Throws std::runtime_error, naming the
// dataset and HDF5's reason, at the first one that cannot be read.
void read_every_dataset(const std::string& path, std::size_t max_bytes = std::size_t(1) << 22);

// Every dataset below g reached by hard links, each once (by the name HDF5
// visits first), as paths relative to g in name order ("a/b" before "a/c").
std::vector<std::string> dataset_names(const Group& g);
// Whether d holds strings (fixed or variable length) rather than numbers.
bool holds_strings(const Dataset& d);

// HDF5's innermost reason in the text of an error of this layer (the last
// call of its stack, e.g. "file signature not found [Not an HDF5 file]"):
// what is wrong, without the call chain; the text itself when it has none.
std::string innermost_reason(const std::string& text);

// Calls fn(offset, count) for hyperslabs that tile a dataset of shape dims,
// in row-major order, each of at most max_elements (>= 1) elements: the
// first axis whose trailing block (the axes after it, whole) fits is split
// into runs of as many indices as fit (a multiple of 1024 when at least 1024
// fit: whole chunks of nholo's trajectory axes), the axes before it are taken
// one index at a time. A dataset with no element calls fn never; a scalar
// (dims empty) once.
void for_each_tile(const std::vector<hsize_t>& dims, hsize_t max_elements,
                   const std::function<void(const std::vector<hsize_t>& offset,
                                            const std::vector<hsize_t>& count)>& fn);

// A 1-D coordinate dataset name(name) holding values, made the dimension
// scale of dimension name. Attach it to the axes that run along it.
Dataset dimension(Group& g, const std::string& name, const std::vector<double>& values);
Dataset dimension(Group& g, const std::string& name, const std::vector<std::int64_t>& values);
Dataset dimension(Group& g, const std::string& name, const std::vector<std::string>& values);
// dimension(g, name, {0, 1, ..., n-1}) for dimensions without natural values.
Dataset index_dimension(Group& g, const std::string& name, hsize_t n);

// A chunk shape for a dataset of shape dims that is written in blocks of
// shape block (e.g. {slice, window, n}; empty: one block, the whole dataset).
// Each chunk size divides the block size along its axis (block sizes larger
// than dims count as dims), so that every chunk lies inside one block and is
// written whole, once: no read-modify-write of compressed chunks, which costs
// several times the write time when blocks and chunks do not line up. The
// chunk holds at most about target_bytes (the largest axis shrinks first, to
// the next divisor), and stays >= 1 along every axis.
std::vector<hsize_t> default_chunk(const std::vector<hsize_t>& dims, std::size_t bytes_per_element,
                                   const std::vector<hsize_t>& block = {},
                                   std::size_t target_bytes = std::size_t(1) << 20);

}  // namespace nholo::h5
