// nholo/host/io/result_layout.hpp — stage 2 of a run (host/run/runner.hpp): the
// output layout. Every group, attribute and scale of a result file, and
// where each per-trajectory dataset lives: written as the master
// PATH.partial (virtual datasets over pieces still to be written, at the
// start), again with the outcome when a run stops, as the result file (real
// datasets, assembled from the pieces) when every slice is finished, and by
// `nholo merge` over (or as a copy of) its shards (host/io/merge.hpp). It
// knows nothing of the model's type: only its sizes (LayoutShape).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "host/config/config.hpp"
#include "host/config/model_info.hpp"
#include "host/config/trajectory_results.hpp"
#include "host/io/device_info.hpp"
#include "host/io/h5.hpp"
#include "host/io/outcome.hpp"
#include "host/io/pieces.hpp"
#include "host/io/run_summary.hpp"
#include "host/io/slice_plan.hpp"

namespace nholo {

// A complete shard file merged by `nholo merge` (host/io/merge.hpp):
// trajectories [begin, end), referred to as vds_file by the merged file's
// virtual datasets.
struct ShardSource {
  std::string path, vds_file;
  int64_t begin = 0, end = 0;
};

}  // namespace nholo

namespace nholo::detail {

enum class PieceKind { init, window, slice };

// The most values (saves x coordinates) of the per-save statistics a
// stopped run's master holds; above, `nholo stats` merges the block moments.
inline constexpr int64_t kStoppedMasterStatistics = int64_t(1) << 18;

// A per-trajectory dataset: its place in the file and in the pieces. Along
// axis `traj_axis` it is split by slices (in units of trajectories, or of
// kStatBlock blocks when per_block), along axis `time_axis` (>= 0) by
// windows; each (slice[, window]) block is the whole dataset `path` of one
// piece of kind `kind`.
struct Spec {
  std::string path;
  h5::detail::Scalar type = h5::detail::Scalar::f64;
  std::vector<hsize_t> dims, chunk;
  double fill = NAN;
  PieceKind kind = PieceKind::slice;
  int traj_axis = 0, time_axis = -1;
  bool per_block = false;
  bool master_only = false;  // block moments: in PATH.partial only (the statistics replace them)
  // written straight into the result file (host/io/in_place_file.hpp): a
  // field by the window (InPlaceFile::write), any other per-trajectory
  // dataset by the slice (RowWriter, checksummed chunks); the piece links to it
  bool in_place = false;
  // a field held in memory (host/io/field_memory.hpp): in every file a
  // dataset with no storage, in no piece
  bool in_memory = false;
};

// The block of slice s (and window w) of a dataset: offset and count.
void spec_block(const Spec& sp, const SlicePlan& p, int64_t s, int64_t w, std::vector<hsize_t>& off,
                std::vector<hsize_t>& cnt);

// The piece of kind k of slice s (and window w).
std::string piece_name(PieceKind k, int64_t s, int64_t w);

// The trajectory index first..first+size-1 (global indices: a shard's
// start at its range) as the dataset `name` of g, written in blocks of
// kMergeBlock, with Fletcher-32 as every chunked dataset of a result or
// piece; a set *stop (a signal) ends it between two blocks (h5::Stopped).
h5::Dataset write_trajectory_index(h5::Group& g, const std::string& name, int64_t size,
                                   hsize_t chunk, int gz, int64_t first,
                                   const std::atomic<bool>* stop);

// What the layout needs to know of the model: its sizes and whether it has a
// drift statistic (Model::DriftStatistic, with the text of its prediction).
struct LayoutShape {
  int n = 0, m = 0;
  bool has_drift = false;
  std::string drift_prediction_doc;
};

// Where the layout's per-trajectory datasets come from when virtual.
struct LayoutSources {
  // PATH of the run: the pieces PATH.partial.d/ (when merged is empty)
  std::string path;
  // `nholo merge`: the shards, sorted, covering the ensemble once
  std::vector<ShardSource> merged;
  bool sharded = false;  // a shard's file: its range and its block moments kept
  int64_t first = 0;     // the first trajectory (global index) of the range
  // the per-save fields held in memory (host/io/field_memory.hpp), not in
  // the pieces or the file
  bool fields_in_memory = false;
};

class OutputLayout {
 public:
  OutputLayout(const RunConfig& cfg, const ModelInfo& mi, const DeviceInfo& di,
               const SlicePlan& plan, LayoutShape shape, LayoutSources sources);

  // Every group, attribute and scale into root: per-trajectory datasets
  // virtual (virt: over the pieces, or the merged shards) or real (empty, to
  // be filled); with out, the ensemble statistics; rs: the run's summary for
  // the root attributes (nullptr: the master at the start).
  void write(h5::Group& root, bool virt, const Outcome* out, const RunSummary* rs);

  // The global index of the range's first trajectory (a shard's begin).
  int64_t first() const { return src_.first; }

  // The per-trajectory datasets of the last write, in the order written.
  const std::vector<Spec>& specs() const { return specs_; }
  // Keeps the specs of the last write for spec() and chunk() (read by the
  // writer thread while the run goes on).
  void index_specs();
  const Spec& spec(const std::string& path) const { return spec_of_.at(path); }
  const std::vector<hsize_t>& chunk(const std::string& path) const { return spec(path).chunk; }

  // The block of slice s (and window w) of dataset sp.
  void block(const Spec& sp, int64_t s, int64_t w, std::vector<hsize_t>& off,
             std::vector<hsize_t>& cnt) const {
    spec_block(sp, plan_, s, w, off, cnt);
  }

  // The trajectory index piece (pieces.hpp: PATH.partial.d/index.h5) that
  // the master's trajectory scales read, unless it is there for this range.
  void write_index_piece(const PieceDir& pieces) const;
  // The master PATH.partial (written as PATH.partial.tmp, then committed).
  void write_master(const Outcome* out, const RunSummary* rs);

  // Whether the per-trajectory datasets are written in place
  // (output.compression = 0, not a merge, not in memory): the result file
  // grows in the pieces' folder from the start (host/io/in_place_file.hpp);
  // else it is assembled at the end.
  bool in_place() const { return in_place_; }
  // The result file in the pieces' folder, with every field's chunks placed
  // (kept when it is there: a resumed run; its undo file applied first).
  // Throws when it is missing but windows were committed (their fields lost).
  // With handoff (a thread of its own): marked once the file's HDF5 writes
  // are done and only its commit's system calls are left, after which this
  // object is not touched again (pieces.hpp, CommitHandoff).
  void create_in_place_file(const PieceDir& pieces, CommitHandoff* handoff = nullptr);
  // Before a resumed run: every piece of every finished slice read whole
  // (h5::read_every_dataset: the pieces' Fletcher-32 checksums), their
  // stamps checked (config hash, slice, window: pieces.hpp) and, in place,
  // each piece's blocks in the result file against the checksums it
  // recorded (bytes_checksum; read through HDF5, which checks the chunks'
  // Fletcher-32 where they have it). A slice with a piece missing,
  // unreadable or not matching is no longer finished (its slice piece is
  // removed): it is integrated again. One line per such slice says which
  // piece or block and why (trajectory numbers from the run's range start).
  std::vector<std::string> discard_damaged_slices(const PieceDir& pieces) const;
  // A flag (a signal handler's) that stops the set-up's trajectory indexes
  // between two blocks, and finish_in_place and assemble between two tiles
  // of the pieces they copy (h5::Stopped; the file as it was before the
  // step, the master in place: --resume completes it).
  void set_stop(const std::atomic<bool>* stop) { stop_ = stop; }
  // Every slice finished, fields in place: the rest into the result file,
  // renamed PATH.
  void finish_in_place(const PieceDir& pieces, const Outcome& out, const RunSummary& rs);
  // Every slice finished, compressed fields: PATH from the layout (real
  // datasets) and every piece of every slice.
  void assemble(const PieceDir& pieces, const Outcome& out, const RunSummary& rs);

 private:
  h5::Dataset make(h5::Group& g, const std::string& name, Spec sp);
  hsize_t row_chunk(h5::detail::Scalar type, const std::vector<hsize_t>& dims) const;
  Spec per_traj(h5::detail::Scalar type, double fill, PieceKind kind,
                std::vector<hsize_t> dims) const;
  h5::Dataset trajectory_scale(h5::Group& g);
  void formulation_group(h5::Group& root, int f);
  void result_attributes(h5::Dataset& d, tables::TrajectoryResult r) const;
  void event_group(h5::Group& g, const EventConfig& ev);
  void initial_group(h5::Group& root);
  void compare_groups(h5::Group& root);
  void statistics_group(h5::Group& root, int f, const Outcome* out);
  void ensemble_statistics(h5::Group& sg, int f, const Outcome& out, h5::Dataset& st_time,
                           h5::Dataset& st_coord);
  void ensemble_save_statistics(h5::Group& sg, int f, const Outcome& out, h5::Dataset& st_time,
                                h5::Dataset& st_coord);
  void copy_piece(h5::Group& root, const PieceDir& pieces, PieceKind kind, int64_t s,
                  int64_t w) const;
  void copy_pieces(h5::Group& root, const PieceDir& pieces) const;
  std::string slice_damage(const PieceDir& pieces, const h5::File* in_place, int64_t s) const;
  std::string piece_stamp_mismatch(const std::string& path, int64_t s,
                                   const std::string& name) const;
  void write_last_step(const std::string& file_path, const PieceDir& pieces, const Outcome& out,
                       const RunSummary& rs);

  const RunConfig& cfg_;
  const ModelInfo& mi_;
  const DeviceInfo& di_;  // the device's, as it is when each file is written
  SlicePlan plan_;
  LayoutShape shape_;
  LayoutSources src_;
  PieceDir pieces_;
  int nf_ = 0, gz_ = 0;
  int64_t size_ = 0, last_ = 0;
  hsize_t chunk_t_ = 0, chunk_k_ = 0;
  bool virt_ = false;  // of the write going on
  // of the write going on, a stopped run's master: the pieces committed,
  // the only ones it maps (not every piece a whole run would: the stop
  // costs what was done); empty: every piece
  std::optional<std::set<std::string>> committed_;
  // the write going on: where its one real trajectory index is (the other
  // groups' scales are virtual datasets over it); empty: none yet
  std::string index_path_;
  bool in_place_ = false;
  const std::atomic<bool>* stop_ = nullptr;
  std::vector<Spec> specs_;
  std::map<std::string, Spec> spec_of_;
};

}  // namespace nholo::detail
