// nholo/host/io/h5_library_faults.hpp — what nholo does when the HDF5 library
// itself fails on a damaged file. HDF5 1.10 (Debian 12's, and the bundle's)
// loops forever in its reader of a global heap collection whose free-space
// object has size 0, and reads past its buffers on some flipped bits of a
// file's metadata (SIGSEGV, or glibc's SIGABRT). nholo's own checks cannot
// see these coming (docs/usage.md, "Memory of each command"), so:
//   - a crash (SIGSEGV, SIGBUS, SIGABRT) whose innermost frame outside the C
//     library is libhdf5's ends the command with exit 2 and a message naming
//     the file being read; any other crash keeps its default action (a bug
//     of nholo's stays a crash with its core dump);
//   - a WatchedCall, one call into HDF5 that reads a file's metadata (opening
//     a file, group or dataset, reading an attribute), that has not returned
//     after library_hang_seconds() ends the command the same way.
// A temporary that the command writes (a merge's OUT.merging) is removed
// first. Not in sanitizer builds: AddressSanitizer owns SIGSEGV there.
#pragma once

#include <hdf5.h>

#include <string>

namespace nholo::h5 {

// Installs the crash handlers (once per process; nothing under
// AddressSanitizer) and arms the watch of WatchedCall (in a process that
// never calls this, e.g. the Python module's, nothing is watched). Called
// by nholo's main() before any command.
void install_library_fault_handlers();

// The limit of one watched call: NHOLO_HDF5_HANG_SECONDS (a positive number)
// from the environment, else 60 s.
double library_hang_seconds();

// A call into HDF5 that reads metadata of obj's file (or of `path`, before
// the file is open), watched while this object lives. Watched calls do not
// nest (an inner one leaves the outer one's watch as it is).
class WatchedCall {
 public:
  WatchedCall(const char* what, hid_t obj);
  WatchedCall(const char* what, const std::string& path);
  ~WatchedCall();
  WatchedCall(const WatchedCall&) = delete;
  WatchedCall& operator=(const WatchedCall&) = delete;

 private:
  bool outer_ = false;
};

// The file a crash outside a watched call names: the one opened for reading
// last (File::open_ro).
void note_file_read(const std::string& path);

// The temporary that a fault removes before ending the command (empty: none).
void remove_on_library_fault(const std::string& path);

}  // namespace nholo::h5
