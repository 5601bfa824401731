// nholo/host/io/h5_internal.hpp — what the files of the HDF5 layer
// (h5.cpp, h5_copy.cpp) share and nothing else includes: error handling
// that names the file and object, dataspaces and block selections.
#pragma once

#include <hdf5.h>

#include <string>
#include <vector>

#include "host/io/h5.hpp"

namespace nholo::h5::internal {

using detail::Handle;

// Switches off HDF5's automatic error printing for the calling thread.
void quiet();
// The calling thread's HDF5 error stack as text ("func(): desc [minor]; ...",
// innermost last); clears it.
std::string take_stack();
// "file.h5:/group/name" for messages.
std::string where(hid_t loc, const std::string& name);
// id, or a std::runtime_error "nholo::h5: WHAT 'file:/loc/name': stack".
hid_t check_id(hid_t id, const std::string& what, hid_t loc, const std::string& name);
// the same for a status
void check(herr_t r, const std::string& what, hid_t loc, const std::string& name);
// A simple dataspace of shape dims.
Handle simple_space(const std::vector<hsize_t>& dims, hid_t loc, const std::string& name);
// The file dataspace of dataset d with [offset, offset + count) selected;
// throws on a rank mismatch or a block outside the dataset.
Handle select_block(hid_t d, const std::vector<hsize_t>& offset, const std::vector<hsize_t>& count);
using h5::shape_text;

}  // namespace nholo::h5::internal
