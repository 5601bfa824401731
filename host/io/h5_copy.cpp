// nholo/host/io/h5_copy.cpp — the parts of host/io/h5.hpp that move a
// dataset's values through memory by tiles: copy_into (the assembly of a
// result, `nholo merge --copy`) and read_every_dataset (a piece read back
// whole, its checksums checked).
#include <hdf5.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "host/io/h5.hpp"
#include "host/io/h5_internal.hpp"

namespace nholo::h5 {

using detail::Handle;
using namespace internal;

void copy_into(const Dataset& src, Dataset& dst, const std::vector<hsize_t>& offset,
               std::size_t max_bytes, const std::atomic<bool>* stop) {
  quiet();
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
}

namespace {

herr_t collect_dataset(hid_t, const char* name, const H5O_info_t* info, void* data) {
  if (info->type == H5O_TYPE_DATASET) static_cast<std::vector<std::string>*>(data)->push_back(name);
  return 0;
}

}  // namespace

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
  std::vector<std::string> names;
  quiet();
  check(H5Ovisit2(f.root().id(), H5_INDEX_NAME, H5_ITER_NATIVE, collect_dataset, &names,
                  H5O_INFO_BASIC),
        "cannot list the datasets of", f.root().id(), "");
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
