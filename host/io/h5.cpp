// nholo/host/io/h5.cpp — the compiled part of host/io/h5.hpp: every call into the
// HDF5 C library, its error handling, and the H5DS (hdf5_hl) dimension scales.
#include "host/io/h5.hpp"

#include <hdf5_hl.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <stdexcept>

#include "host/io/h5_internal.hpp"
#include "host/io/h5_library_faults.hpp"

namespace nholo::h5 {

using detail::Handle;
using detail::Scalar;
using namespace internal;  // host/io/h5_internal.hpp

namespace internal {

// Switches off HDF5's automatic error printing for the calling thread (the
// library is built thread-safe: error stacks and their settings are per thread).
void quiet() {
  thread_local bool done = false;
  if (!done) {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    done = true;
  }
}

}  // namespace internal

namespace {

// One line per entry of an HDF5 error stack, outermost (the API call) first.
herr_t append_error(unsigned /*n*/, const H5E_error2_t* err, void* data) {
  auto* text = static_cast<std::string*>(data);
  if (!text->empty()) *text += "; ";
  *text += err->func_name ? err->func_name : "?";
  *text += "(): ";
  *text += err->desc ? err->desc : "";
  char minor[128] = "";
  if (H5Eget_msg(err->min_num, nullptr, minor, sizeof minor) > 0 && minor[0] != '\0') {
    *text += " [";
    *text += minor;
    *text += "]";
  }
  return 0;
}

}  // namespace

namespace internal {

// The calling thread's HDF5 error stack as text; clears it. Must run before
// any other HDF5 call after the failure (every API call clears the stack).
std::string take_stack() {
  hid_t stack = H5Eget_current_stack();  // a copy; the default stack is cleared
  std::string text;
  if (stack >= 0) {
    H5Ewalk2(stack, H5E_WALK_DOWNWARD, append_error, &text);
    H5Eclose_stack(stack);
  }
  return text;
}

}  // namespace internal

namespace {

std::string file_name_of(hid_t loc) {
  ssize_t n = H5Fget_name(loc, nullptr, 0);
  if (n <= 0) return "?";
  std::string s(static_cast<std::size_t>(n) + 1, '\0');
  H5Fget_name(loc, s.data(), s.size());
  s.resize(static_cast<std::size_t>(n));
  return s;
}

std::string object_path_of(hid_t loc) {
  ssize_t n = H5Iget_name(loc, nullptr, 0);
  if (n <= 0) return "?";
  std::string s(static_cast<std::size_t>(n) + 1, '\0');
  H5Iget_name(loc, s.data(), s.size());
  s.resize(static_cast<std::size_t>(n));
  return s;
}

}  // namespace

namespace internal {

// "file.h5:/group/name" for messages.
std::string where(hid_t loc, const std::string& name) {
  std::string p = object_path_of(loc);
  if (!name.empty()) {
    if (p.empty() || p.back() != '/') p += '/';
    p += name;
  }
  return file_name_of(loc) + ":" + p;
}

}  // namespace internal

namespace {

[[noreturn]] void throw_error(const std::string& what, const std::string& place,
                              const std::string& stack) {
  std::string msg = "nholo::h5: " + what + " '" + place + "'";
  if (!stack.empty()) msg += ": " + stack;
  throw std::runtime_error(msg);
}

// A failure at loc/name (name may be empty: loc itself).
[[noreturn]] void fail_at(const std::string& what, hid_t loc, const std::string& name) {
  std::string stack = take_stack();
  throw_error(what, where(loc, name), stack);
}

// A failure concerning a file path (nothing open to ask HDF5 about).
[[noreturn]] void fail_path(const std::string& what, const std::string& path) {
  std::string stack = take_stack();
  throw_error(what, path, stack);
}

}  // namespace

namespace internal {

hid_t check_id(hid_t id, const std::string& what, hid_t loc, const std::string& name) {
  if (id < 0) fail_at(what, loc, name);
  return id;
}

void check(herr_t r, const std::string& what, hid_t loc, const std::string& name) {
  if (r < 0) fail_at(what, loc, name);
}

}  // namespace internal

namespace {

Handle make_plist(hid_t cls, hid_t loc) {
  Handle p(check_id(H5Pcreate(cls), "cannot create a property list at", loc, ""), H5Pclose);
  // no modification times in object headers: two runs of one configuration
  // write the same bytes but for their timing attributes
  if (cls == H5P_DATASET_CREATE || cls == H5P_GROUP_CREATE)
    check(H5Pset_obj_track_times(p.get(), 0), "cannot set object properties at", loc, "");
  return p;
}

// Link creation: make missing intermediate groups.
Handle intermediate_lcpl(hid_t loc) {
  Handle lcpl = make_plist(H5P_LINK_CREATE, loc);
  check(H5Pset_create_intermediate_group(lcpl.get(), 1), "cannot set link properties at", loc, "");
  return lcpl;
}

hid_t mem_type(Scalar s) {
  switch (s) {
    case Scalar::f64: return H5T_NATIVE_DOUBLE;
    case Scalar::f32: return H5T_NATIVE_FLOAT;
    case Scalar::i32: return H5T_NATIVE_INT32;
    case Scalar::i64: return H5T_NATIVE_INT64;
    case Scalar::u8: return H5T_NATIVE_UINT8;
  }
  return H5T_NATIVE_DOUBLE;
}

// Stored types are little-endian standard types whatever the host.
hid_t file_type(Scalar s) {
  switch (s) {
    case Scalar::f64: return H5T_IEEE_F64LE;
    case Scalar::f32: return H5T_IEEE_F32LE;
    case Scalar::i32: return H5T_STD_I32LE;
    case Scalar::i64: return H5T_STD_I64LE;
    case Scalar::u8: return H5T_STD_U8LE;
  }
  return H5T_IEEE_F64LE;
}

// Variable-length, NUL-terminated UTF-8 string type.
Handle vlen_utf8(hid_t loc) {
  Handle t(check_id(H5Tcopy(H5T_C_S1), "cannot create a string type at", loc, ""), H5Tclose);
  check(H5Tset_size(t.get(), H5T_VARIABLE), "cannot create a string type at", loc, "");
  check(H5Tset_cset(t.get(), H5T_CSET_UTF8), "cannot create a string type at", loc, "");
  return t;
}

}  // namespace

namespace internal {

Handle simple_space(const std::vector<hsize_t>& dims, hid_t loc, const std::string& name) {
  hid_t id = dims.empty() ? H5Screate(H5S_SCALAR)
                          : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  return Handle(check_id(id, "cannot create a dataspace for", loc, name), H5Sclose);
}

}  // namespace internal

namespace {

std::vector<hsize_t> extent(hid_t space, hid_t loc, const std::string& name) {
  int rank = H5Sget_simple_extent_ndims(space);
  if (rank < 0) fail_at("cannot read the shape of", loc, name);
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  if (rank > 0 && H5Sget_simple_extent_dims(space, dims.data(), nullptr) < 0)
    fail_at("cannot read the shape of", loc, name);
  return dims;
}

std::vector<const char*> c_strings(const std::vector<std::string>& values) {
  std::vector<const char*> p(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) p[i] = values[i].c_str();
  return p;
}

// Reads n strings of file type ftype with read(mem_type, buffer), variable- or
// fixed-length alike.
template <class Read>
std::vector<std::string> read_string_values(hid_t ftype, std::size_t n, Read read, hid_t loc,
                                            const std::string& name) {
  if (H5Tget_class(ftype) != H5T_STRING) fail_at("not a string:", loc, name);
  std::vector<std::string> out(n);
  if (n == 0) return out;
  H5T_cset_t cset = H5Tget_cset(ftype);
  htri_t vlen = H5Tis_variable_str(ftype);
  if (vlen < 0) fail_at("cannot inspect the string type of", loc, name);
  if (vlen > 0) {
    Handle mtype = vlen_utf8(loc);
    check(H5Tset_cset(mtype.get(), cset), "cannot create a string type at", loc, name);
    std::vector<char*> buf(n, nullptr);
    check(read(mtype.get(), buf.data()), "cannot read strings from", loc, name);
    for (std::size_t i = 0; i < n; ++i) {
      if (buf[i] != nullptr) out[i] = buf[i];
      H5free_memory(buf[i]);
    }
  } else {
    std::size_t size = H5Tget_size(ftype);
    if (size == 0) fail_at("cannot inspect the string type of", loc, name);
    Handle mtype(check_id(H5Tcopy(H5T_C_S1), "cannot create a string type at", loc, name),
                 H5Tclose);
    check(H5Tset_size(mtype.get(), size), "cannot create a string type at", loc, name);
    check(H5Tset_cset(mtype.get(), cset), "cannot create a string type at", loc, name);
    check(H5Tset_strpad(mtype.get(), H5T_STR_NULLPAD), "cannot create a string type at", loc, name);
    std::vector<char> buf(n * size, '\0');
    check(read(mtype.get(), buf.data()), "cannot read strings from", loc, name);
    for (std::size_t i = 0; i < n; ++i) {
      const char* s = buf.data() + i * size;
      std::size_t len = 0;
      while (len < size && s[len] != '\0') ++len;
      while (len > 0 && s[len - 1] == ' ') --len;  // space-padded (Fortran) strings
      out[i].assign(s, len);
    }
  }
  return out;
}

// Attribute helpers (obj: a group or dataset id).
void write_attr(hid_t obj, const std::string& name, hid_t ftype, hid_t mtype, hid_t space,
                const void* buf) {
  quiet();
  htri_t ex = H5Aexists(obj, name.c_str());
  if (ex < 0) fail_at("cannot look up attribute", obj, "@" + name);
  if (ex > 0) check(H5Adelete(obj, name.c_str()), "cannot replace attribute", obj, "@" + name);
  Handle a(check_id(H5Acreate2(obj, name.c_str(), ftype, space, H5P_DEFAULT, H5P_DEFAULT),
                    "cannot create attribute", obj, "@" + name),
           H5Aclose);
  if (buf != nullptr)  // nullptr: an empty (zero-length) attribute
    check(H5Awrite(a.get(), mtype, buf), "cannot write attribute", obj, "@" + name);
}

Handle open_attr(hid_t obj, const std::string& name) {
  quiet();
  return Handle(
      check_id(H5Aopen(obj, name.c_str(), H5P_DEFAULT), "cannot open attribute", obj, "@" + name),
      H5Aclose);
}

// The number of values of an attribute, refused when they would take more
// than the read budget (read_budget()) at bytes_each bytes each.
std::size_t attr_points(hid_t attr, hid_t obj, const std::string& name, std::size_t bytes_each) {
  Handle space(check_id(H5Aget_space(attr), "cannot read the shape of attribute", obj, "@" + name),
               H5Sclose);
  hssize_t n = H5Sget_simple_extent_npoints(space.get());
  if (n < 0) fail_at("cannot read the shape of attribute", obj, "@" + name);
  if (static_cast<std::uint64_t>(n) > read_budget() / bytes_each)
    throw_error("cannot read the " + std::to_string(n) +
                    " values of an attribute, more than the read budget of " +
                    std::to_string(read_budget() >> 20) + " MiB (NHOLO_READ_BUDGET_MB):",
                where(obj, "@" + name), "");
  return static_cast<std::size_t>(n);
}

// Reads a one-value attribute into *one (converted to mtype), or, with
// one == nullptr, all values as doubles.
std::vector<double> read_numeric_attr(hid_t obj, const std::string& name, hid_t mtype, void* one) {
  const WatchedCall watch("reading an attribute", obj);
  Handle a = open_attr(obj, name);
  std::size_t n = attr_points(a.get(), obj, name, sizeof(double));
  if (one != nullptr) {
    if (n != 1)
      throw_error(
          "attribute holds " + std::to_string(n) + " values, not 1:", where(obj, "@" + name), "");
    check(H5Aread(a.get(), mtype, one), "cannot read attribute", obj, "@" + name);
    return {};
  }
  std::vector<double> v(n);
  if (n > 0) check(H5Aread(a.get(), mtype, v.data()), "cannot read attribute", obj, "@" + name);
  return v;
}

}  // namespace

// ---------------------------------------------------------------- Object

std::string Object::path() const {
  quiet();
  return object_path_of(id());
}

std::string Object::file_name() const {
  quiet();
  return file_name_of(id());
}

bool Object::has_attr(const std::string& name) const {
  quiet();
  htri_t ex = H5Aexists(id(), name.c_str());
  if (ex < 0) fail_at("cannot look up attribute", id(), "@" + name);
  return ex > 0;
}

void Object::set_attr(const std::string& name, const std::string& value) {
  quiet();
  Handle t = vlen_utf8(id());
  Handle space(check_id(H5Screate(H5S_SCALAR), "cannot create a dataspace for", id(), "@" + name),
               H5Sclose);
  const char* p = value.c_str();
  write_attr(id(), name, t.get(), t.get(), space.get(), &p);
}

void Object::set_attr(const std::string& name, double value) {
  quiet();
  Handle space(check_id(H5Screate(H5S_SCALAR), "cannot create a dataspace for", id(), "@" + name),
               H5Sclose);
  write_attr(id(), name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, space.get(), &value);
}

void Object::set_attr(const std::string& name, std::int64_t value) {
  quiet();
  Handle space(check_id(H5Screate(H5S_SCALAR), "cannot create a dataspace for", id(), "@" + name),
               H5Sclose);
  write_attr(id(), name, H5T_STD_I64LE, H5T_NATIVE_INT64, space.get(), &value);
}

void Object::set_attr(const std::string& name, const std::vector<double>& values) {
  quiet();
  Handle space = simple_space({values.size()}, id(), "@" + name);
  write_attr(id(), name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, space.get(),
             values.empty() ? nullptr : values.data());
}

void Object::set_attr(const std::string& name, const std::vector<std::string>& values) {
  quiet();
  Handle t = vlen_utf8(id());
  Handle space = simple_space({values.size()}, id(), "@" + name);
  std::vector<const char*> p = c_strings(values);
  write_attr(id(), name, t.get(), t.get(), space.get(), p.empty() ? nullptr : p.data());
}

std::string Object::attr_string(const std::string& name) const {
  std::vector<std::string> v = attr_strings(name);
  if (v.size() != 1)
    throw_error("attribute holds " + std::to_string(v.size()) + " strings, not 1:",
                where(id(), "@" + name), "");
  return v[0];
}

std::vector<std::string> Object::attr_strings(const std::string& name) const {
  const WatchedCall watch("reading a text attribute", id());
  Handle a = open_attr(id(), name);
  std::size_t n = attr_points(a.get(), id(), name, sizeof(std::string) + sizeof(char*));
  Handle ftype(
      check_id(H5Aget_type(a.get()), "cannot read the type of attribute", id(), "@" + name),
      H5Tclose);
  hid_t aid = a.get();
  return read_string_values(
      ftype.get(), n, [aid](hid_t mtype, void* buf) { return H5Aread(aid, mtype, buf); }, id(),
      "@" + name);
}

double Object::attr_double(const std::string& name) const {
  double v = 0;
  read_numeric_attr(id(), name, H5T_NATIVE_DOUBLE, &v);
  return v;
}

std::int64_t Object::attr_int64(const std::string& name) const {
  std::int64_t v = 0;
  read_numeric_attr(id(), name, H5T_NATIVE_INT64, &v);
  return v;
}

std::vector<double> Object::attr_doubles(const std::string& name) const {
  return read_numeric_attr(id(), name, H5T_NATIVE_DOUBLE, nullptr);
}

// ---------------------------------------------------------------- Group

Group Group::create_group(const std::string& name) {
  quiet();
  Handle lcpl = intermediate_lcpl(id());
  Handle gcpl = make_plist(H5P_GROUP_CREATE, id());
  // Keep links in creation order (netCDF-4 and ncdump list them that way).
  check(H5Pset_link_creation_order(gcpl.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED),
        "cannot set group properties for", id(), name);
  hid_t g = H5Gcreate2(id(), name.c_str(), lcpl.get(), gcpl.get(), H5P_DEFAULT);
  return Group(Handle(check_id(g, "cannot create group", id(), name), H5Gclose));
}

Group Group::open_group(const std::string& name) const {
  quiet();
  const WatchedCall watch("opening a group", id());
  hid_t g = H5Gopen2(id(), name.c_str(), H5P_DEFAULT);
  return Group(Handle(check_id(g, "cannot open group", id(), name), H5Gclose));
}

bool Group::exists(const std::string& name) const {
  quiet();
  const WatchedCall watch("looking up a link", id());
  // Walk the path one link at a time: H5Lexists fails (rather than answering
  // false) when an intermediate link is missing.
  std::string prefix = (!name.empty() && name[0] == '/') ? "/" : "";
  std::size_t pos = 0;
  bool first = true;
  while (pos <= name.size()) {
    std::size_t next = name.find('/', pos);
    if (next == std::string::npos) next = name.size();
    std::string part = name.substr(pos, next - pos);
    pos = next + 1;
    if (part.empty()) continue;
    if (!first) {
      // The previous part must be a group to hold this one.
      hid_t o = H5Oopen(id(), prefix.c_str(), H5P_DEFAULT);
      if (o < 0) fail_at("cannot open", id(), prefix);
      Handle obj(o, H5Oclose);
      if (H5Iget_type(o) != H5I_GROUP) return false;
      if (prefix.back() != '/') prefix += '/';
    }
    prefix += part;
    first = false;
    htri_t ex = H5Lexists(id(), prefix.c_str(), H5P_DEFAULT);
    if (ex < 0) fail_at("cannot look up", id(), prefix);
    if (ex == 0) return false;
  }
  return !first;
}

namespace {

// The fill value of a dataset to be created (dcpl), converted from double.
void set_fill_value(hid_t dcpl, Scalar type, double fill, hid_t loc, const std::string& name) {
  union {
    double d;
    float f;
    std::int32_t i32;
    std::int64_t i64;
    std::uint8_t u8;
  } fv{};
  switch (type) {
    case Scalar::f64: fv.d = fill; break;
    case Scalar::f32: fv.f = static_cast<float>(fill); break;
    case Scalar::i32: fv.i32 = static_cast<std::int32_t>(fill); break;
    case Scalar::i64: fv.i64 = static_cast<std::int64_t>(fill); break;
    case Scalar::u8: fv.u8 = static_cast<std::uint8_t>(fill); break;
  }
  check(H5Pset_fill_value(dcpl, mem_type(type), &fv), "cannot set the fill value of", loc, name);
}

}  // namespace

Dataset Group::create_dataset_raw(const std::string& name, Scalar type,
                                  const std::vector<hsize_t>& dims, std::vector<hsize_t> chunk,
                                  int gzip_level, bool shuffle, const void* fill, bool checksum,
                                  bool whole_chunks) {
  quiet();
  if (gzip_level < 0 || gzip_level > 9)
    throw_error("gzip level " + std::to_string(gzip_level) + " not in [0, 9] for",
                where(id(), name), "");
  // whole_chunks: chunks of the given shape also where the dataset is
  // smaller (its largest shape a whole chunk there)
  const bool any_zero = std::any_of(dims.begin(), dims.end(), [](hsize_t d) { return d == 0; });
  std::vector<hsize_t> maxdims = dims;
  if (whole_chunks && chunk.size() == dims.size() && !any_zero)
    for (std::size_t i = 0; i < dims.size(); ++i) maxdims[i] = std::max(dims[i], chunk[i]);
  Handle space(check_id(dims.empty() ? H5Screate(H5S_SCALAR)
                                     : H5Screate_simple(static_cast<int>(dims.size()), dims.data(),
                                                        maxdims.data()),
                        "cannot create a dataspace for", id(), name),
               H5Sclose);
  Handle dcpl = make_plist(H5P_DATASET_CREATE, id());
  check(H5Pset_fill_value(dcpl.get(), mem_type(type), fill), "cannot set the fill value of", id(),
        name);
  if (!chunk.empty()) {
    if (chunk.size() != dims.size())
      throw_error("chunk rank " + std::to_string(chunk.size()) + " != dataset rank " +
                      std::to_string(dims.size()) + " for",
                  where(id(), name), "");
    if (!any_zero) {  // an empty dataset stays contiguous (chunk dims must be >= 1)
      for (std::size_t i = 0; i < dims.size(); ++i)
        chunk[i] = std::clamp<hsize_t>(chunk[i], 1, maxdims[i]);
      check(H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()),
            "cannot set the chunk shape of", id(), name);
      if (shuffle)
        check(H5Pset_shuffle(dcpl.get()), "cannot set the shuffle filter of", id(), name);
      if (gzip_level > 0) {
        if (H5Zfilter_avail(H5Z_FILTER_DEFLATE) <= 0)
          fail_at("deflate (gzip) filter not available for", id(), name);
        check(H5Pset_deflate(dcpl.get(), static_cast<unsigned>(gzip_level)),
              "cannot set the deflate filter of", id(), name);
      }
      if (checksum)
        check(H5Pset_fletcher32(dcpl.get()), "cannot set the Fletcher-32 filter of", id(), name);
    }
  }
  Handle lcpl = intermediate_lcpl(id());
  hid_t d = H5Dcreate2(id(), name.c_str(), file_type(type), space.get(), lcpl.get(), dcpl.get(),
                       H5P_DEFAULT);
  return Dataset(Handle(check_id(d, "cannot create dataset", id(), name), H5Dclose));
}

Dataset Group::create_dataset_as(Scalar type, const std::string& name, std::vector<hsize_t> dims,
                                 std::vector<hsize_t> chunk, int gzip_level, bool shuffle,
                                 double fill, bool checksum) {
  union {
    double f64;
    float f32;
    std::int32_t i32;
    std::int64_t i64;
    std::uint8_t u8;
  } value{};
  switch (type) {
    case Scalar::f64: value.f64 = fill; break;
    case Scalar::f32: value.f32 = static_cast<float>(fill); break;
    case Scalar::i32: value.i32 = static_cast<std::int32_t>(fill); break;
    case Scalar::i64: value.i64 = static_cast<std::int64_t>(fill); break;
    case Scalar::u8: value.u8 = static_cast<std::uint8_t>(fill); break;
  }
  return create_dataset_raw(name, type, dims, std::move(chunk), gzip_level, shuffle, &value,
                            checksum);
}

Dataset Group::create_virtual(Scalar type, const std::string& name,
                              const std::vector<hsize_t>& dims, double fill,
                              const std::vector<VirtualSource>& sources) {
  quiet();
  Handle vspace = simple_space(dims, id(), name);
  Handle dcpl = make_plist(H5P_DATASET_CREATE, id());
  set_fill_value(dcpl.get(), type, fill, id(), name);
  // virtual even without a source (every value the fill): H5Pset_virtual
  // would set it, but only when it is called
  check(H5Pset_layout(dcpl.get(), H5D_VIRTUAL), "cannot make a virtual layout for", id(), name);
  for (const VirtualSource& s : sources) {
    bool ok = s.offset.size() == dims.size() && s.count.size() == dims.size();
    for (std::size_t i = 0; ok && i < dims.size(); ++i)
      ok = s.count[i] <= dims[i] && s.offset[i] <= dims[i] - s.count[i];
    if (!ok) throw_error("a virtual source block does not fit", where(id(), name), "");
    if (Dataset::product(s.count) == 0) continue;
    check(H5Sselect_hyperslab(vspace.get(), H5S_SELECT_SET, s.offset.data(), nullptr,
                              s.count.data(), nullptr),
          "cannot select a virtual block of", id(), name);
    Handle sspace = simple_space(s.source_dims.empty() ? s.count : s.source_dims, id(), name);
    if (!s.source_dims.empty()) {
      ok = s.source_offset.size() == s.source_dims.size() && s.source_dims.size() == dims.size();
      for (std::size_t i = 0; ok && i < dims.size(); ++i)
        ok = s.count[i] <= s.source_dims[i] && s.source_offset[i] <= s.source_dims[i] - s.count[i];
      if (!ok) throw_error("a virtual source block does not fit its source", where(id(), name), "");
      check(H5Sselect_hyperslab(sspace.get(), H5S_SELECT_SET, s.source_offset.data(), nullptr,
                                s.count.data(), nullptr),
            "cannot select a source block of", id(), name);
    }
    check(H5Pset_virtual(dcpl.get(), vspace.get(), s.file.c_str(), s.dataset.c_str(), sspace.get()),
          "cannot map '" + s.file + ":" + s.dataset + "' into", id(), name);
  }
  H5Sselect_all(vspace.get());
  Handle lcpl = intermediate_lcpl(id());
  hid_t d = H5Dcreate2(id(), name.c_str(), file_type(type), vspace.get(), lcpl.get(), dcpl.get(),
                       H5P_DEFAULT);
  return Dataset(Handle(check_id(d, "cannot create virtual dataset", id(), name), H5Dclose));
}

Dataset Group::create_allocated(Scalar type, const std::string& name,
                                const std::vector<hsize_t>& dims, std::vector<hsize_t> chunk,
                                double fill, bool checksum) {
  quiet();
  if (chunk.size() != dims.size() ||
      std::any_of(dims.begin(), dims.end(), [](hsize_t d) { return d == 0; }))
    throw_error("an allocated dataset needs a chunk shape of its rank and no empty axis:",
                where(id(), name), "");
  for (std::size_t i = 0; i < dims.size(); ++i)
    chunk[i] = std::clamp<hsize_t>(chunk[i], 1, dims[i]);
  Handle space = simple_space(dims, id(), name);
  Handle dcpl = make_plist(H5P_DATASET_CREATE, id());
  check(H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()),
        "cannot set the chunk shape of", id(), name);
  if (checksum) check(H5Pset_fletcher32(dcpl.get()), "cannot add Fletcher-32 to", id(), name);
  check(H5Pset_alloc_time(dcpl.get(), H5D_ALLOC_TIME_EARLY), "cannot set the allocation of", id(),
        name);
  check(H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER), "cannot set the fill time of", id(),
        name);
  set_fill_value(dcpl.get(), type, fill, id(), name);
  Handle lcpl = intermediate_lcpl(id());
  hid_t d = H5Dcreate2(id(), name.c_str(), file_type(type), space.get(), lcpl.get(), dcpl.get(),
                       H5P_DEFAULT);
  return Dataset(Handle(check_id(d, "cannot create dataset", id(), name), H5Dclose));
}

void Group::create_external_link(const std::string& name, const std::string& file,
                                 const std::string& target) {
  quiet();
  Handle lcpl = intermediate_lcpl(id());
  check(
      H5Lcreate_external(file.c_str(), target.c_str(), id(), name.c_str(), lcpl.get(), H5P_DEFAULT),
      "cannot link '" + file + ":" + target + "' as", id(), name);
}

Dataset Group::create_string_dataset(const std::string& name,
                                     const std::vector<std::string>& values) {
  quiet();
  Handle t = vlen_utf8(id());
  Handle space = simple_space({values.size()}, id(), name);
  Handle lcpl = intermediate_lcpl(id());
  Handle dcpl = make_plist(H5P_DATASET_CREATE, id());
  hid_t d =
      H5Dcreate2(id(), name.c_str(), t.get(), space.get(), lcpl.get(), dcpl.get(), H5P_DEFAULT);
  Dataset ds(Handle(check_id(d, "cannot create dataset", id(), name), H5Dclose));
  if (!values.empty()) {
    std::vector<const char*> p = c_strings(values);
    check(H5Dwrite(ds.id(), t.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, p.data()),
          "cannot write dataset", ds.id(), "");
  }
  return ds;
}

// Datasets are opened with a virtual prefix of "${ORIGIN}": a virtual
// dataset's relatively named sources (a merged file's shards) are looked up
// in the folder of the file that holds it before anywhere else, never first
// in the current folder (HDF5's last resort, which nholo's readers rule out
// by checking the sources first: host/analysis/result_file.hpp). The list
// lives as long as the call: no identifier outlives the objects it serves.
Dataset Group::open_dataset(const std::string& name) const {
  quiet();
  Handle dapl(check_id(H5Pcreate(H5P_DATASET_ACCESS), "cannot make the access list of", id(), name),
              H5Pclose);
  check(H5Pset_virtual_prefix(dapl.get(), "${ORIGIN}"), "cannot set the virtual prefix of", id(),
        name);
  const WatchedCall watch("opening a dataset", id());
  hid_t d = H5Dopen2(id(), name.c_str(), dapl.get());
  return Dataset(Handle(check_id(d, "cannot open dataset", id(), name), H5Dclose));
}

// ---------------------------------------------------------------- Dataset

std::vector<hsize_t> Dataset::dims() const {
  quiet();
  Handle space(check_id(H5Dget_space(id()), "cannot read the shape of", id(), ""), H5Sclose);
  return extent(space.get(), id(), "");
}

hsize_t Dataset::size() const {
  return product(dims());
}

std::size_t Dataset::element_bytes() const {
  quiet();
  Handle t(check_id(H5Dget_type(id()), "cannot read the type of", id(), ""), H5Tclose);
  return H5Tget_size(t.get());
}

void Dataset::check_count(std::size_t got, hsize_t want, const char* what) const {
  if (static_cast<hsize_t>(got) != want)
    throw_error(std::string(what) + ": " + std::to_string(got) + " values given, " +
                    std::to_string(want) + " expected, for",
                where(id(), ""), "");
}

void Dataset::write_raw(Scalar type, const void* data) {
  quiet();
  if (size() == 0) return;
  check(H5Dwrite(id(), mem_type(type), H5S_ALL, H5S_ALL, H5P_DEFAULT, data), "cannot write dataset",
        id(), "");
}

void Dataset::read_raw(Scalar type, void* out) const {
  quiet();
  if (size() == 0) return;
  check(H5Dread(id(), mem_type(type), H5S_ALL, H5S_ALL, H5P_DEFAULT, out), "cannot read dataset",
        id(), "");
}

namespace internal {

// The file dataspace of d with the block [offset, offset + count) selected;
// throws on a rank mismatch or a block outside the dataset.
Handle select_block(hid_t d, const std::vector<hsize_t>& offset,
                    const std::vector<hsize_t>& count) {
  Handle space(check_id(H5Dget_space(d), "cannot read the shape of", d, ""), H5Sclose);
  std::vector<hsize_t> dims = extent(space.get(), d, "");
  bool ok = offset.size() == dims.size() && count.size() == dims.size();
  for (std::size_t i = 0; ok && i < dims.size(); ++i)
    ok = count[i] <= dims[i] && offset[i] <= dims[i] - count[i];
  if (!ok)
    throw_error("block offset " + shape_text(offset) + " count " + shape_text(count) +
                    " does not fit dims " + shape_text(dims) + " of",
                where(d, ""), "");
  if (!dims.empty())
    check(H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, offset.data(), nullptr, count.data(),
                              nullptr),
          "cannot select a block of", d, "");
  return space;
}

}  // namespace internal

void Dataset::write_block_raw(Scalar type, const std::vector<hsize_t>& offset,
                              const std::vector<hsize_t>& count, const void* data) {
  quiet();
  Handle fspace = select_block(id(), offset, count);
  if (product(count) == 0) return;
  Handle mspace = simple_space(count, id(), "");
  check(H5Dwrite(id(), mem_type(type), mspace.get(), fspace.get(), H5P_DEFAULT, data),
        "cannot write a block " + shape_text(offset) + "+" + shape_text(count) + " of", id(), "");
}

void Dataset::read_block_raw(Scalar type, const std::vector<hsize_t>& offset,
                             const std::vector<hsize_t>& count, void* out) const {
  quiet();
  Handle fspace = select_block(id(), offset, count);
  if (product(count) == 0) return;
  Handle mspace = simple_space(count, id(), "");
  check(H5Dread(id(), mem_type(type), mspace.get(), fspace.get(), H5P_DEFAULT, out),
        "cannot read a block " + shape_text(offset) + "+" + shape_text(count) + " of", id(), "");
}

std::vector<std::string> Dataset::read_strings() const {
  quiet();
  std::vector<hsize_t> d = dims();
  if (d.size() > 1) throw_error("not a 1-D string dataset:", where(id(), ""), "");
  check_read_budget(d, sizeof(std::string) + sizeof(char*));
  Handle ftype(check_id(H5Dget_type(id()), "cannot read the type of", id(), ""), H5Tclose);
  hid_t did = id();
  return read_string_values(
      ftype.get(), static_cast<std::size_t>(product(d)),
      [did](hid_t mtype, void* buf) {
        return H5Dread(did, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
      },
      id(), "");
}

void Dataset::make_scale(const std::string& dim_name) {
  quiet();
  check(H5DSset_scale(id(), dim_name.c_str()),
        "cannot make a dimension scale (" + dim_name + ") of", id(), "");
}

void Dataset::attach_scale(const Dataset& scale, unsigned axis) {
  quiet();
  std::vector<hsize_t> d = dims();
  std::vector<hsize_t> s = scale.dims();
  if (axis >= d.size() || s.size() != 1 || s[0] != d[axis])
    throw_error("cannot attach scale " + scale.path() + " of shape " + shape_text(s) + " to axis " +
                    std::to_string(axis) + " (dims " + shape_text(d) + ") of",
                where(id(), ""), "");
  check(H5DSattach_scale(id(), scale.id(), axis),
        "cannot attach scale " + scale.path() + " to axis " + std::to_string(axis) + " of", id(),
        "");
}

bool Dataset::is_scale() const {
  quiet();
  htri_t r = H5DSis_scale(id());
  if (r < 0) fail_at("cannot inspect", id(), "");
  return r > 0;
}

// ---------------------------------------------------------------- File

namespace {

// The file access properties of every file: HDF5's metadata cache (object
// headers, chunk index nodes) fixed at kMetadataCacheBytes, and an object's
// metadata evicted when the object is closed. The cache counts its entries'
// size on disk; in memory a chunk index node takes several times that and a
// virtual dataset's decoded mappings (a few KiB per source) far more. With
// HDF5's defaults (2 MiB, growing up to 32 MiB as it sees fit, closed
// objects kept) a process that reads or writes large files (the chunk
// indexes) or a master over many pieces (the mappings) held memory that grew
// with the ensemble; now about 8 MiB per open file, whatever its size
// (nholo's reads and writes are sequential and need few nodes at a time).
constexpr std::size_t kMetadataCacheBytes = std::size_t(1) << 20;

Handle file_access(const std::string& path) {
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  if (fapl < 0) fail_path("cannot create the access properties of", path);
  Handle h(fapl, H5Pclose);
  H5AC_cache_config_t c;
  c.version = H5AC__CURR_CACHE_CONFIG_VERSION;
  if (H5Pget_mdc_config(fapl, &c) < 0)
    fail_path("cannot read the metadata cache settings of", path);
  c.max_size = c.min_size = c.initial_size = kMetadataCacheBytes;
  c.set_initial_size = true;
  if (H5Pset_mdc_config(fapl, &c) < 0) fail_path("cannot set the metadata cache of", path);
  // an object's metadata leaves the cache when the object is closed: a
  // virtual dataset's decoded mappings (a few KiB per source) and a chunk
  // index are not kept after their dataset (the cache counts their size on
  // disk, far smaller)
  if (H5Pset_evict_on_close(fapl, 1) < 0) fail_path("cannot set the metadata cache of", path);
  return h;
}

}  // namespace

File File::create(const std::string& path) {
  quiet();
  hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
  if (fcpl < 0) fail_path("cannot create file", path);
  Handle fcpl_h(fcpl, H5Pclose);
  if (H5Pset_link_creation_order(fcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED) < 0 ||
      H5Pset_obj_track_times(fcpl, 0) < 0)
    fail_path("cannot create file", path);
  const Handle fapl = file_access(path);
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_EXCL, fcpl, fapl.get());
  if (f < 0) fail_path("cannot create file (it must not exist)", path);
  return File(Handle(f, H5Fclose), path);
}

File File::open_rw(const std::string& path, bool lock) {
  quiet();
  const Handle fapl = file_access(path);
  if (!lock && H5Pset_file_locking(fapl.get(), false, true) < 0)
    fail_path("cannot set the file locking of", path);
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, fapl.get());
  if (f < 0) fail_path("cannot open file for writing", path);
  return File(Handle(f, H5Fclose), path);
}

File File::open_ro(const std::string& path) {
  quiet();
  note_file_read(path);
  const WatchedCall watch("opening the file", path);
  const Handle fapl = file_access(path);
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get());
  if (f < 0) fail_path("cannot open file for reading", path);
  return File(Handle(f, H5Fclose), path);
}

Group File::root() const {
  quiet();
  if (!h_.valid()) fail_path("file is closed:", path_);
  const WatchedCall watch("opening the root group", path_);
  hid_t g = H5Gopen2(h_.get(), "/", H5P_DEFAULT);
  if (g < 0) fail_path("cannot open the root group of", path_);
  return Group(Handle(g, H5Gclose));
}

void File::flush() {
  quiet();
  if (!h_.valid()) fail_path("file is closed:", path_);
  if (H5Fflush(h_.get(), H5F_SCOPE_LOCAL) < 0) fail_path("cannot flush", path_);
}

void File::close() {
  quiet();
  if (!h_.valid()) return;
  herr_t flushed = H5Fflush(h_.get(), H5F_SCOPE_LOCAL);
  std::string stack = flushed < 0 ? take_stack() : std::string();
  hid_t f = h_.release();
  herr_t closed = H5Fclose(f);
  if (flushed < 0) throw_error("cannot flush", path_, stack);
  if (closed < 0) fail_path("cannot close", path_);
}

// ---------------------------------------------------------------- helpers

void skip_library_cleanup_at_exit() {
  H5dont_atexit();
}

}  // namespace nholo::h5
