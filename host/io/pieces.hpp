// nholo/host/io/pieces.hpp — crash-consistent output: a run's results are
// written as small HDF5 files ("pieces"), each committed atomically, and
// shown as one file by virtual datasets (docs/usage.md, "Interruptions,
// crashes and --resume").
//
//   PATH.partial      the master: every group, attribute and scale of the
//                     result file; each per-trajectory dataset a virtual
//                     dataset (HDF5 VDS) over the pieces. Written once at the
//                     start (and replaced atomically, with the statistics, when
//                     a run stops cleanly); never open for writing while the
//                     run integrates, so it is readable after any
//                     interruption, SIGKILL and power loss included.
//   PATH.partial.d/   the pieces:
//                       init_S.h5       initial states of slice S
//                       window_S_W.h5   block moments of window W of slice S and
//                                       its fields (compressed), or links to
//                                       them in result.h5 (in_place_file.hpp)
//                       result.h5       the result file, fields written in place
//                       index.h5        the trajectory index (the master's scales
//                                       read it: written once, at the start)
//                       slice_S.h5      status, steps, comparisons, drift of slice S
//                     each written as NAME.tmp, flushed, fsync'ed, renamed to
//                     NAME, the folder fsync'ed: a piece exists whole or not
//                     at all. A missing piece reads as the fill value (NaN,
//                     status not_run). slice_S.h5 is written last: it marks
//                     the slice finished. Every piece dataset carries HDF5's
//                     Fletcher-32 checksum (checked on every read); a
//                     resumed run reads the pieces it keeps back whole
//                     (OutputLayout::discard_damaged_slices).
//   PATH              result.h5 completed and renamed (fields in place), or
//                     assembled from the master's layout and the pieces (real
//                     datasets), when every slice is finished; then the master
//                     and the pieces go.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "host/io/h5.hpp"

namespace nholo {

// The end of a commit made on a thread of its own, which a waiter stopped by
// a signal may leave to finish alone: once the committing thread has only
// system calls left (reserving space, writing back, fsync, rename: under I/O
// contention they took seconds, and a system call does not look at the stop
// flag), a waiter may abandon it and remove the folder; the rename then does
// not happen (h5::Stopped in the committing thread), so nothing appears in a
// folder that is being removed. Shared by both threads (std::shared_ptr):
// host/run/runner.cpp, the result file's skeleton.
class CommitHandoff {
 public:
  // The committing thread: from here on, system calls only (no HDF5, no
  // object of the waiter's).
  void system_calls_only();
  // The waiter: true when it may go (system calls only; the rename will not
  // happen), false when the committing thread is still in its own code.
  bool abandon();
  // The committing thread: rename(tmp, final_path) unless abandoned.
  void rename(const std::string& tmp, const std::string& final_path);

 private:
  std::mutex m_;
  bool system_calls_only_ = false, abandoned_ = false;
};

// fsync of a file or folder; throws std::runtime_error naming the path.
void fsync_path(const std::string& path, bool folder = false);
// tmp -> final, durably: fsync(tmp), rename, fsync(folder). With stop, tmp
// is first written back 8 MiB at a time with a look at *stop between
// (h5::Stopped when set: tmp is left as it is, not renamed), so that a
// signal does not wait for the sync of a file of gigabytes, which under I/O
// contention took tens of seconds (merge --copy).
// With handoff, another thread may stop waiting for the commit once only
// its system calls are left (CommitHandoff).
void commit_file(const std::string& tmp, const std::string& final_path,
                 const std::atomic<bool>* stop = nullptr, CommitHandoff* handoff = nullptr);

class PieceDir {
 public:
  PieceDir() = default;
  // The pieces of the output PATH: PATH.partial.d
  explicit PieceDir(const std::string& output_path);

  const std::string& dir() const { return dir_; }
  // A piece's name as the master refers to it (relative to the master's folder).
  std::string relative(const std::string& name) const { return rel_ + "/" + name; }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  static std::string init_name(int64_t slice);
  static std::string window_name(int64_t slice, int64_t window);
  static std::string slice_name(int64_t slice);
  static std::string index_name() { return "index.h5"; }

  bool has(const std::string& name) const;  // committed
  // The names of every committed piece (a listing of the folder, *.tmp left out).
  std::set<std::string> committed() const;
  void create() const;                      // the folder (fine if it exists)
  void remove_all() const;                  // the folder and everything in it
  // The same without waiting for the disk: a folder holding more than
  // kBackgroundRemovalBytes is renamed at once to a hidden sibling
  // (.NAME.removing-PID, trash_prefix()) and removed by a child `rm -rf`
  // that may outlive nholo, so that a stopped run exits within a second
  // (freeing the extents of a result file of gigabytes takes seconds under
  // I/O load); smaller folders, or when no child starts, are removed here.
  void remove_all_without_waiting() const;
  std::string trash_prefix() const;  // the hidden siblings' names begin so
  static constexpr uintmax_t kBackgroundRemovalBytes = uintmax_t(256) << 20;
  void remove_temporaries() const;          // *.tmp left by a killed run

 private:
  std::string dir_, rel_;
};

// Root attributes of every piece: the configuration (RunConfig::result_hash)
// and the slice and window (-1: none) it belongs to; a resumed run checks them.
inline constexpr const char* kPieceConfigAttr = "config_hash";
inline constexpr const char* kPieceSliceAttr = "slice";
inline constexpr const char* kPieceWindowAttr = "window";

// One piece being written; commit() makes it visible, whole.
class Piece {
 public:
  Piece(const PieceDir& dir, const std::string& name);
  Piece(const Piece&) = delete;
  Piece& operator=(const Piece&) = delete;
  ~Piece();

  h5::Group root() { return file_.root(); }
  // The dataset `path` (intermediate groups created) of shape dims holding data.
  template <class T>
  void write(const std::string& path, const std::vector<hsize_t>& dims,
             const std::vector<hsize_t>& chunk, int gzip, const T* data) {
    h5::Group r = file_.root();
    h5::Dataset d = r.create_checksummed<T>(path, dims, chunk, gzip);
    if (h5::Dataset::product(dims) > 0) d.write(data);
  }
  void commit();

 private:
  std::string tmp_, final_;
  h5::File file_;
  bool committed_ = false;
};

}  // namespace nholo
