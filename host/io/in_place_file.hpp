// nholo/host/io/in_place_file.hpp — the result file written where it stays.
//
// With output.compression = 0 (the default) the fields of every save (q,
// qdot, ...) are written once, straight into the file that becomes PATH:
//
//   PATH.partial.d/result.h5   the result file's layout, created at the start
//                              of a run (before any window), every chunk of
//                              every field given its place in the file
//                              (HDF5's early allocation) and nothing written.
//                              The writer thread puts each window's block
//                              into its chunks with pwrite, then fdatasync;
//                              HDF5 never has the file open for writing while
//                              the run integrates, so its metadata, written
//                              once, stays valid whatever happens.
//   window_S_W.h5              (host/io/pieces.hpp) committed after that, with
//                              the window's block moments and an external
//                              link per field to result.h5: the master's
//                              virtual datasets read a window's fields
//                              through it, so a window without its piece
//                              reads as the fill value (NaN), as before.
//
// When every slice is finished, the run adds what is not a field (initial
// states, statuses, statistics, root attributes) to result.h5 with HDF5 and
// renames it PATH: no second pass over the fields. That last step changes
// the file's metadata in place, so first every byte of the file that is not
// a field chunk is saved in result.h5.undo (committed whole): a run stopped
// during the step (SIGKILL, power loss) finds the undo file and puts the
// bytes back (restore_undo), and the file is as it was before the step.
//
// During that step the master PATH.partial is not where readers look: it
// reads the fields through result.h5, whose metadata is half rewritten while
// HDF5 works (and stays so if the run is killed then). The step moves it into
// the pieces' folder first (PATH.partial.d/master.h5) and a run killed in the
// step leaves no PATH.partial that would show finished trajectories with
// unreadable fields. The next `nholo run` of PATH (holding its lock) restores
// result.h5 and puts the master back (recover_last_step); readers asked for
// PATH.partial meanwhile say so (last_step_stopped).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "host/io/h5.hpp"
#include "host/io/pieces.hpp"

namespace nholo {

// One window's block of a field dataset of the result file (2-D: trajectory
// x save, or 3-D: trajectory x save x component): rows [row, row + count),
// saves [save, save + saves), data row-major (count, saves, components).
struct FieldBlock {
  std::string path;  // the dataset, from the root ("udwadia_kalaba/q")
  const double* data = nullptr;
  int64_t row = 0, count = 0, save = 0, saves = 0, components = 1;
};

// A block's checksum, kept in its window piece (attribute
// block_checksum_attr(path)) and compared when a run resumes: two running
// sums (Fletcher's scheme, modulo 2^64) over the values' 64-bit patterns, in
// the block's row-major order; any changed bit and any two values swapped
// change it.
uint64_t block_checksum(const double* data, int64_t values);
// The same over any bytes, as 64-bit words (the last one padded with zero
// bytes): block_checksum(data, n) == bytes_checksum(data, 8 n).
uint64_t bytes_checksum(const void* data, std::size_t bytes);
inline std::string block_checksum_attr(const std::string& path) { return "checksum " + path; }

class InPlaceFile {
 public:
  explicit InPlaceFile(const PieceDir& pieces);

  // The file's name in the pieces' folder (what window pieces link to).
  static const char* name() { return "result.h5"; }
  const std::string& path() const { return path_; }
  bool exists() const;

  // Claims the disk space of the file `path` (all of it, fallocate): a run
  // whose result does not fit stops at its start, not when its last window
  // is written. Where the file system cannot (EOPNOTSUPP), space is taken as
  // the fields are written. Throws std::runtime_error naming the size.
  static void reserve(const std::string& path);

  // Writes the blocks into their chunks (each block a whole number of
  // chunks along the trajectories, starting at a chunk along the saves),
  // then fdatasync: a piece that links to them may be committed once this
  // returns. Throws std::runtime_error naming the file and the dataset.
  void write(const std::vector<FieldBlock>& blocks) const;

  // Saves every byte of the file outside the chunks of datasets (and the
  // file's size) in the undo file, committed whole.
  void save_undo(const std::vector<std::string>& datasets) const;
  // Puts back what save_undo saved, when its file is there (and the result
  // file too), and removes it; true if it did.
  bool restore_undo() const;
  std::string undo_path() const { return path_ + ".undo"; }

  // The master's place in the pieces' folder during the last step.
  static const char* master_name() { return "master.h5"; }

 private:
  std::string path_;
  // each field's chunk places (h5::Dataset::chunk_places), found at its first
  // write: the file's layout does not change while the run integrates (the
  // writer thread's)
  mutable std::map<std::string, std::vector<h5::ChunkPlace>> places_;
};

// Writes a slice's rows of the result file's per-trajectory datasets that are
// not fields (initial states, statuses, steps, the drift statistic, events,
// ...: every axis but the trajectories' whole) straight into their chunks,
// each followed by the Fletcher-32 checksum that HDF5 checks when it reads
// the chunk (the datasets are made by h5::Group::create_allocated with its
// checksum). sync() makes what was written durable; the slice's pieces may
// link to it then. Throws std::runtime_error naming the file and the dataset.
class RowWriter {
 public:
  explicit RowWriter(const InPlaceFile& file);
  ~RowWriter();
  RowWriter(const RowWriter&) = delete;
  RowWriter& operator=(const RowWriter&) = delete;

  // Rows [row, row + count) of the dataset `path` (from the root) from data,
  // row-major, each element as the file stores it (native doubles and
  // integers, little-endian). row lies on the dataset's chunks, and so does
  // row + count unless it is the dataset's end. Returns bytes_checksum of
  // the block (what the piece records for --resume).
  uint64_t write(const std::string& path, int64_t row, int64_t count, const void* data);
  void sync() const;

 private:
  struct Open;
  std::unique_ptr<Open> open_;
};

// The master of the run writing `output_path` was moved into its pieces'
// folder for the last step and the run stopped there: PATH.partial is
// absent, PATH.partial.d/master.h5 is there (PATH is absent, or the result
// of another configuration that an --overwrite run was to replace).
bool last_step_stopped(const std::string& output_path);

// Undoes a last step that was stopped (last_step_stopped): restores result.h5
// and moves the master back to PATH.partial, so that `--resume` completes it.
// Call holding the output's lock. True if there was one to undo.
bool recover_last_step(const std::string& output_path);

}  // namespace nholo
