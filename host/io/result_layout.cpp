// nholo/host/io/result_layout.cpp — the layout of a result file: groups,
// attributes, scales, per-trajectory datasets (virtual or real), statistics.
#include "host/io/result_layout.hpp"

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cmath>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "host/config/tables.hpp"
#include "host/config/trajectory_results.hpp"
#include "host/io/file_names.hpp"
#include "host/io/in_place_file.hpp"
#include "host/io/root_attributes.hpp"

namespace nholo::detail {

using Scalar = h5::detail::Scalar;

void spec_block(const Spec& sp, const SlicePlan& p, int64_t s, int64_t w, std::vector<hsize_t>& off,
                std::vector<hsize_t>& cnt) {
  off.assign(sp.dims.size(), 0);
  cnt = sp.dims;
  const int64_t b = s * p.slice, e = std::min(p.size, b + p.slice);
  if (sp.per_block) {
    off[sp.traj_axis] = H(b / kStatBlock);
    cnt[sp.traj_axis] = H((e - b + kStatBlock - 1) / kStatBlock);
  } else {
    off[sp.traj_axis] = H(b);
    cnt[sp.traj_axis] = H(e - b);
  }
  if (sp.time_axis >= 0) {
    const int64_t k0 = w * p.window;
    off[sp.time_axis] = H(k0);
    cnt[sp.time_axis] = H(std::min(p.n_saves, k0 + p.window) - k0);
  }
}

namespace {

// The file's type of a per-trajectory result's values.
Scalar scalar_of(tables::ResultType t) {
  switch (t) {
    case tables::ResultType::i32:
      return Scalar::i32;
    case tables::ResultType::i64:
      return Scalar::i64;
    case tables::ResultType::f64:
      return Scalar::f64;
  }
  return Scalar::f64;
}

}  // namespace

std::string piece_name(PieceKind k, int64_t s, int64_t w) {
  return k == PieceKind::init     ? PieceDir::init_name(s)
         : k == PieceKind::window ? PieceDir::window_name(s, w)
                                  : PieceDir::slice_name(s);
}

h5::Dataset write_trajectory_index(h5::Group& g, const std::string& name, int64_t size,
                                   hsize_t chunk, int gz, int64_t first,
                                   const std::atomic<bool>* stop) {
  h5::Dataset d = g.create_checksummed<int64_t>(name, {H(size)}, {chunk}, gz);
  std::vector<int64_t> idx;
  for (int64_t b = 0; b < size; b += kMergeBlock) {
    if (stop && stop->load())
      throw h5::Stopped("stopped while writing the trajectory index '" + d.path() + "'");
    const int64_t e = std::min(size, b + kMergeBlock);
    idx.resize(e - b);
    for (int64_t i = b; i < e; ++i) idx[i - b] = first + i;
    d.write_block({H(b)}, {H(e - b)}, idx.data());
  }
  return d;
}

OutputLayout::OutputLayout(const RunConfig& cfg, const ModelInfo& mi, const DeviceInfo& di,
                           const SlicePlan& plan, LayoutShape shape, LayoutSources sources)
    : cfg_(cfg),
      mi_(mi),
      di_(di),
      plan_(plan),
      shape_(std::move(shape)),
      src_(std::move(sources)),
      pieces_(src_.path),
      nf_(static_cast<int>(cfg.formulations.size())),
      gz_(cfg.compression),
      size_(plan.size),
      last_(src_.first + plan.size),
      chunk_t_(std::min<hsize_t>(H(plan.size), 1024)),
      chunk_k_(std::min<hsize_t>(H(plan.n_saves), H(plan.window))),
      in_place_(gz_ == 0 && src_.merged.empty() && !src_.fields_in_memory) {}

void OutputLayout::write(h5::Group& root, bool virt, const Outcome* out, const RunSummary* rs) {
  specs_.clear();
  virt_ = virt;
  // the master at the start maps every piece, so that it shows each as it is
  // committed; a stopped run's (with its outcome) only those there are: no
  // more come
  committed_.reset();
  if (virt && out) committed_ = pieces_.committed();
  index_path_.clear();
  write_root_attrs(root, cfg_, di_, rs);
  root.set_attr("slice_size", plan_.slice);  // what --resume keeps
  if (src_.sharded) {
    root.set_attr("shard_begin", src_.first);
    root.set_attr("shard_end", last_);
  }
  for (int f = 0; f < nf_; ++f) formulation_group(root, f);
  initial_group(root);
  compare_groups(root);
  for (int f = 0; f < nf_; ++f) statistics_group(root, f, out);
}

void OutputLayout::index_specs() {
  for (const Spec& sp : specs_) spec_of_[sp.path] = sp;
}

// The dataset `name` of g as sp says: real, or virtual over the pieces (or
// the merged shards).
h5::Dataset OutputLayout::make(h5::Group& g, const std::string& name, Spec sp) {
  sp.path = g.path().substr(1) + "/" + name;
  specs_.push_back(sp);
  if (!virt_ || sp.in_memory) {
    if (sp.in_memory)
      return g.create_dataset_as(sp.type, name, sp.dims, sp.chunk, 0, false, sp.fill);
    if (sp.in_place)  // the per-save fields without a filter, the rest checksummed
      return g.create_allocated(sp.type, name, sp.dims, sp.chunk, sp.fill,
                                sp.kind != PieceKind::window);
    return g.create_dataset_as(sp.type, name, sp.dims, sp.chunk, gz_, gz_ > 0, sp.fill, true);
  }
  std::vector<h5::VirtualSource> src;
  if (!src_.merged.empty()) {
    // merged: each shard's whole dataset at its range
    for (const auto& sh : src_.merged) {
      h5::VirtualSource v;
      v.offset.assign(sp.dims.size(), 0);
      v.count = sp.dims;
      v.offset[sp.traj_axis] = H(sp.per_block ? sh.begin / kStatBlock : sh.begin);
      v.count[sp.traj_axis] =
          H(sp.per_block ? (sh.end - sh.begin + kStatBlock - 1) / kStatBlock : sh.end - sh.begin);
      v.file = sh.vds_file;
      v.dataset = sp.path;
      src.push_back(std::move(v));
    }
    return g.create_virtual(sp.type, name, sp.dims, sp.fill, src);
  }
  for (int64_t s = 0; s < plan_.n_slices(); ++s)
    for (int64_t w = 0; w < (sp.time_axis >= 0 ? plan_.n_windows : 1); ++w) {
      const std::string piece = piece_name(sp.kind, s, w);
      if (committed_ && !committed_->count(piece)) continue;  // reads as the fill anyway
      h5::VirtualSource v;
      spec_block(sp, plan_, s, w, v.offset, v.count);
      v.file = pieces_.relative(piece);
      v.dataset = sp.path;
      if (sp.in_place) {  // the piece links to the whole dataset in the result file
        v.source_dims = sp.dims;
        v.source_offset = v.offset;
      }
      src.push_back(std::move(v));
    }
  return g.create_virtual(sp.type, name, sp.dims, sp.fill, src);
}

// The trajectory scale of group g. Written for real once per file, in the
// first group that has one; every other group's is a virtual dataset over
// it (the same values, no bytes). The master's read the index piece, so
// that neither the master at the start nor the one a stopped run writes
// grows with the ensemble.
h5::Dataset OutputLayout::trajectory_scale(h5::Group& g) {
  h5::VirtualSource v;
  v.offset = {0};
  v.count = {H(size_)};
  v.dataset = "trajectory";
  if (virt_ && src_.merged.empty()) {
    v.file = pieces_.relative(PieceDir::index_name());
  } else if (!index_path_.empty()) {
    v.file = ".";  // this file
    v.dataset = index_path_;
  } else {
    h5::Dataset d =
        write_trajectory_index(g, "trajectory", size_, chunk_t_, gz_, src_.first, stop_);
    index_path_ = d.path();
    d.make_scale("trajectory");
    return d;
  }
  h5::Dataset d = g.create_virtual(Scalar::i64, "trajectory", {H(size_)}, -1, {v});
  d.make_scale("trajectory");
  return d;
}

void OutputLayout::write_index_piece(const PieceDir& pieces) const {
  const char* kFirst = "first_trajectory";
  if (pieces.has(PieceDir::index_name())) {
    try {
      const h5::File f = h5::File::open_ro(pieces.path(PieceDir::index_name()));
      const h5::Group r = f.root();
      const h5::Dataset d = r.open_dataset("trajectory");
      if (d.dims() == std::vector<hsize_t>{H(size_)} && r.has_attr(kFirst) &&
          r.attr_int64(kFirst) == src_.first)
        return;
    } catch (const std::exception&) {  // unreadable: written again
    }
  }
  Piece p(pieces, PieceDir::index_name());
  h5::Group r = p.root();
  r.set_attr(kFirst, src_.first);
  const hsize_t chunk = H(std::max<int64_t>(1, std::min<int64_t>(size_, kMergeBlock)));
  write_trajectory_index(r, "trajectory", size_, chunk, 0, src_.first, stop_);
  p.commit();
}

// A per-trajectory dataset of the given dimensions (trajectory first, then
// the saves for a window dataset), chunked by 1024 trajectories and windows.
Spec OutputLayout::per_traj(Scalar type, double fill, PieceKind kind,
                            std::vector<hsize_t> dims) const {
  Spec sp;
  sp.type = type;
  sp.fill = fill;
  sp.kind = kind;
  sp.dims = dims;
  sp.chunk.assign(dims.size(), 0);
  for (size_t a = 0; a < dims.size(); ++a) sp.chunk[a] = dims[a];
  sp.chunk[0] = chunk_t_;
  if (kind == PieceKind::window) {
    sp.time_axis = 1;
    sp.chunk[1] = chunk_k_;
  } else {  // a slice's rows, written straight into the result file (RowWriter)
    sp.chunk[0] = row_chunk(type, dims);
    sp.in_place = in_place_ && h5::Dataset::product(dims) > 0;
  }
  return sp;
}

// Trajectories per chunk of a per-trajectory dataset that is not a field: as
// many as fit kRowChunkBytes, doubling from chunk_t_ up to kSliceAlign while
// they divide the slice (or fit the one slice). Few chunks per dataset: HDF5
// 1.10 finds a chunk's place in the file by walking the dataset's chunks from
// the first (H5Dget_chunk_info_by_coord), which the writer does for each
// chunk it writes, and the last step for each chunk it leaves alone.
hsize_t OutputLayout::row_chunk(Scalar type, const std::vector<hsize_t>& dims) const {
  constexpr uint64_t kRowChunkBytes = uint64_t(1) << 20;
  uint64_t row_bytes = h5::detail::scalar_bytes(type);
  for (size_t a = 1; a < dims.size(); ++a) row_bytes *= std::max<hsize_t>(dims[a], 1);
  const bool one_slice = plan_.n_slices() <= 1;
  hsize_t rows = chunk_t_;
  while (2 * rows * row_bytes <= kRowChunkBytes && 2 * rows <= H(kSliceAlign) &&
         (one_slice ? 2 * rows <= H(size_) : H(plan_.slice) % (2 * rows) == 0))
    rows *= 2;
  // rows of many values (an event's records with a large max_records):
  // fewer rows than chunk_t_, down to one, so that a chunk stays far below
  // HDF5's limit of 4 GiB (plan_slices refused a single row above it) and
  // its compression buffers stay small
  constexpr uint64_t kLargeChunkBytes = uint64_t(64) << 20;
  while (rows > 1 && rows * row_bytes > kLargeChunkBytes) rows /= 2;
  return rows;
}

// /<formulation>: the fields of every save, the per-trajectory results
// (status, steps, ...: those of the table the run has) and the events
void OutputLayout::formulation_group(h5::Group& root, int f) {
  const int n = shape_.n, m = shape_.m;
  const int64_t n_saves = plan_.n_saves;
  h5::Group g = root.create_group(cfg_.formulations[f]);
  g.set_attr("formulation", cfg_.formulations[f]);
  h5::Dataset traj = trajectory_scale(g);
  h5::Dataset time = h5::dimension(g, "time", cfg_.save_times);
  h5::Dataset coord = h5::dimension(g, "coordinate", mi_.coordinates);
  h5::Dataset cons = h5::dimension(g, "constraint", mi_.constraints);
  // the exponents' axis (1, 2, ..., K), where a dataset has one: the
  // spectrum's results, the observed exponents and the running estimates
  // (no other file has it)
  const int k = cfg_.lyapunov ? cfg_.lyapunov_exponents : 0;
  const auto has_field = [&](const char* name) {
    return std::find(cfg_.fields.begin(), cfg_.fields.end(), name) != cfg_.fields.end();
  };
  const bool per_exponent_data = has_field("lyapunov_estimate") ||
                                 has_field("lyapunov_observed_estimate") ||
                                 !cfg_.lyapunov_observables.empty();
  h5::Dataset exponent;
  if (k > 1 || (k > 0 && per_exponent_data)) {
    std::vector<std::int64_t> index(static_cast<size_t>(k));
    for (int j = 0; j < k; ++j) index[static_cast<size_t>(j)] = j + 1;
    exponent = h5::dimension(g, "exponent", index);
  }
  for (const auto& fname : cfg_.fields) {
    const tables::FieldEntry* e = tables::find_field(fname);
    const bool per_coord = e && e->components == tables::Components::per_coordinate;
    const bool per_cons = e && e->components == tables::Components::per_constraint;
    const bool per_exponent = e && e->components == tables::Components::per_exponent;
    std::vector<hsize_t> dims = {H(size_), H(n_saves)};
    if (per_coord || per_cons) dims.push_back(per_coord ? H(n) : H(m));
    if (per_exponent) dims.push_back(H(cfg_.lyapunov_exponents));
    Spec sp = per_traj(Scalar::f64, NAN, PieceKind::window, dims);
    sp.in_memory = src_.fields_in_memory && h5::Dataset::product(dims) > 0;
    sp.in_place = in_place_ && h5::Dataset::product(dims) > 0;
    h5::Dataset d = make(g, fname, sp);
    d.attach_scale(traj, 0);
    d.attach_scale(time, 1);
    if (per_coord) d.attach_scale(coord, 2);
    if (per_cons) d.attach_scale(cons, 2);
    if (per_exponent) d.attach_scale(exponent, 2);
  }
  // the per-trajectory results (host/config/trajectory_results.hpp)
  const tables::FormulationEntry* fe = tables::find_formulation(cfg_.formulations[f]);
  for (const auto& r : tables::kTrajectoryResults) {
    if (!tables::result_present(r, fe, k, !cfg_.lyapunov_observables.empty())) continue;
    std::vector<hsize_t> dims = {H(size_)};
    if (r.width != tables::ResultWidth::one) dims.push_back(H(tables::result_width(r, k)));
    h5::Dataset d = make(g, r.name, per_traj(scalar_of(r.type), r.fill, PieceKind::slice, dims));
    d.attach_scale(traj, 0);
    if (r.width == tables::ResultWidth::exponents) d.attach_scale(exponent, 1);
    if (*r.long_name) d.set_attr("long_name", r.long_name);
    if (*r.units) d.set_attr("units", r.units);
    result_attributes(d, r.id);
  }
  std::vector<std::string> event_names;
  for (const EventConfig& ev : cfg_.events) {
    event_group(g, ev);
    event_names.push_back(ev.name);
  }
  if (!event_names.empty()) g.set_attr("events", event_names);
}

// What the file says of per-trajectory result r beyond its long name and
// units: the status' flags (CF conventions), the exponent's renormalisation
void OutputLayout::result_attributes(h5::Dataset& d, tables::TrajectoryResult r) const {
  if (r == tables::TrajectoryResult::status) {
    std::vector<std::string> names;
    std::vector<double> values;
    for (int st = 0; st < kStatusCount; ++st) {
      names.push_back(status_name(static_cast<Status>(st)));
      values.push_back(st);
    }
    d.set_attr("flag_meanings", join(names, " "));
    d.set_attr("flag_values", values);
  }
  if (tables::trajectory_result(r).source == tables::ResultSource::tangent)
    d.set_attr("renormalize_every", cfg_.lyapunov_renormalize_every);
}

// /<formulation>/events/<name>: every crossing counted per trajectory, the
// first max_records of each stored (time, q, qdot at the crossing; NaN past
// the stored ones): per trajectory a fixed block, like every other field
void OutputLayout::event_group(h5::Group& g, const EventConfig& ev) {
  const int n = shape_.n;
  h5::Group eg = g.create_group("events/" + ev.name);
  eg.set_attr("expr", ev.expr);
  eg.set_attr("direction", ev.direction);
  eg.set_attr("action", ev.action);
  eg.set_attr("max_records", static_cast<int64_t>(ev.max_records));
  eg.set_attr("subdivisions", static_cast<int64_t>(ev.subdivisions));
  h5::Dataset tr = trajectory_scale(eg);
  h5::Dataset rec = h5::index_dimension(eg, "record", H(ev.max_records));
  h5::Dataset cd = h5::dimension(eg, "coordinate", mi_.coordinates);
  h5::Dataset count = make(eg, "count", per_traj(Scalar::i64, 0, PieceKind::slice, {H(size_)}));
  count.attach_scale(tr, 0);
  count.set_attr("long_name", "crossings of " + ev.expr + " (" + ev.direction +
                                  "), all of them, also those past max_records");
  h5::Dataset under =
      make(eg, "undersampled_steps", per_traj(Scalar::i64, 0, PieceKind::slice, {H(size_)}));
  under.attach_scale(tr, 0);
  under.set_attr("long_name",
                 "accepted steps across which " + ev.expr +
                     " changed faster than its samples (crossings there likely missed: raise "
                     "subdivisions)");
  h5::Dataset time = make(eg, "time",
                          per_traj(Scalar::f64, NAN, PieceKind::slice, {H(size_), H(ev.max_records)}));
  time.attach_scale(tr, 0);
  time.attach_scale(rec, 1);
  time.set_attr("long_name", "time of each stored crossing (NaN: none)");
  for (const char* name : {"q", "qdot"}) {
    h5::Dataset d = make(eg, name, per_traj(Scalar::f64, NAN, PieceKind::slice,
                                            {H(size_), H(ev.max_records), H(n)}));
    d.attach_scale(tr, 0);
    d.attach_scale(rec, 1);
    d.attach_scale(cd, 2);
  }
}

// /initial: the initial states (and the parameters that vary per trajectory)
void OutputLayout::initial_group(h5::Group& root) {
  const int n = shape_.n, m = shape_.m;
  const int nv = static_cast<int>(cfg_.varied_params.size());
  h5::Group init = root.create_group("initial");
  h5::Dataset traj = trajectory_scale(init);
  h5::Dataset icoord = h5::dimension(init, "coordinate", mi_.coordinates);
  h5::Dataset icons = h5::dimension(init, "constraint", mi_.constraints);
  h5::Dataset q0 = make(init, "q0", per_traj(Scalar::f64, NAN, PieceKind::init, {H(size_), H(n)}));
  h5::Dataset qd0 =
      make(init, "qdot0", per_traj(Scalar::f64, NAN, PieceKind::init, {H(size_), H(n)}));
  h5::Dataset l0 =
      make(init, "lambda0", per_traj(Scalar::f64, NAN, PieceKind::init, {H(size_), H(m)}));
  for (auto* d : {&q0, &qd0}) {
    d->attach_scale(traj, 0);
    d->attach_scale(icoord, 1);
  }
  l0.attach_scale(traj, 0);
  l0.attach_scale(icons, 1);
  if (nv > 0) {
    // the parameters that vary per trajectory, in the model's order
    std::vector<std::string> units;
    for (const auto& name : cfg_.varied_params)
      for (const auto& p : mi_.params)
        if (p.name == name) units.push_back(p.unit);
    h5::Dataset ipar = h5::dimension(init, "parameter", cfg_.varied_params);
    h5::Dataset pd =
        make(init, "params", per_traj(Scalar::f64, NAN, PieceKind::init, {H(size_), H(nv)}));
    pd.attach_scale(traj, 0);
    pd.attach_scale(ipar, 1);
    pd.set_attr("names", cfg_.varied_params);
    pd.set_attr("units", units);
    pd.set_attr("long_name",
                "the model parameters that vary per trajectory ([ensemble.params]); "
                "the others are the root attributes param_<name>");
  }
}

// /compare/<a>__<b>: every pair of formulations
void OutputLayout::compare_groups(h5::Group& root) {
  for (int a = 0; a < nf_; ++a)
    for (int b = a + 1; b < nf_; ++b) {
      h5::Group g =
          root.create_group("compare/" + cfg_.formulations[a] + "__" + cfg_.formulations[b]);
      g.set_attr("formulation_a", cfg_.formulations[a]);
      g.set_attr("formulation_b", cfg_.formulations[b]);
      g.set_attr("threshold", cfg_.compare_threshold);
      h5::Dataset traj = trajectory_scale(g);
      h5::Dataset md =
          make(g, "max_distance", per_traj(Scalar::f64, NAN, PieceKind::slice, {H(size_)}));
      h5::Dataset fe =
          make(g, "first_exceed_time", per_traj(Scalar::f64, NAN, PieceKind::slice, {H(size_)}));
      md.attach_scale(traj, 0);
      fe.attach_scale(traj, 0);
      md.set_attr("long_name", "max over saves of |q_a - q_b|_2");
      fe.set_attr("long_name", "first save time with |q_a - q_b|_2 > threshold (NaN: never)");
    }
}

// /statistics/<formulation>: the drift statistic, the block moments (a
// master's, a shard's) and, with an outcome, the ensemble statistics
void OutputLayout::statistics_group(h5::Group& root, int f, const Outcome* out) {
  const int n = shape_.n;
  const std::string fname = cfg_.formulations[f];
  h5::Group sg = root.create_group("statistics/" + fname);
  h5::Dataset st_time = h5::dimension(sg, "time", cfg_.save_times);
  h5::Dataset st_coord = h5::dimension(sg, "coordinate", mi_.coordinates);
  if (shape_.has_drift) {
    h5::Dataset traj = trajectory_scale(sg);
    h5::Dataset v =
        make(sg, "drift_velocity", per_traj(Scalar::f64, NAN, PieceKind::slice, {H(size_)}));
    h5::Dataset band = make(sg, "band", per_traj(Scalar::f64, NAN, PieceKind::slice, {H(size_)}));
    h5::Dataset ratio =
        make(sg, "drift_ratio", per_traj(Scalar::f64, NAN, PieceKind::slice, {H(size_)}));
    v.set_attr("long_name", "least-squares slope of x(t) (horizontal drift)");
    band.set_attr("long_name", "max y - min y over the saves (downslope band)");
    ratio.set_attr("long_name",
                   "drift_velocity / prediction (statistics group attribute drift_prediction)");
    for (auto* d : {&v, &band, &ratio}) d->attach_scale(traj, 0);
    // the formula, in every file (a .partial too: `nholo stats` prints it)
    sg.set_attr("drift_prediction", shape_.drift_prediction_doc);
  }
  // the block moments of q and qdot (count, mean, M2, min, max per block
  // of kStatBlock trajectories, save and coordinate): in PATH.partial
  // only, where `nholo stats` merges them while a run goes on
  for (const char* which : {"block_moments_q", "block_moments_qdot"}) {
    Spec sp;
    sp.kind = PieceKind::window;
    sp.dims = {5, H(plan_.n_blocks()), H(plan_.n_saves), H(n)};
    sp.traj_axis = 1;
    sp.time_axis = 2;
    sp.per_block = true;
    sp.master_only = !src_.sharded;  // a shard keeps them, for `nholo merge`
    if (!src_.merged.empty()) {
      continue;  // a merged file has the merged statistics, as a single run
    } else if (virt_ || src_.sharded) {
      h5::Dataset d = make(sg, which, sp);
      d.set_attr("long_name",
                 "moments of each block of 1024 trajectories: count, mean, M2 "
                 "(sum of squared deviations), min, max");
    } else {
      sp.path = sg.path().substr(1) + "/" + which;
      specs_.push_back(sp);
    }
  }
  if (out) ensemble_statistics(sg, f, *out, st_time, st_coord);
}

// The ensemble statistics of formulation f, merged in block order.
void OutputLayout::ensemble_statistics(h5::Group& sg, int f, const Outcome& out,
                                       h5::Dataset& st_time, h5::Dataset& st_coord) {
  const int n = shape_.n;
  const int64_t n_saves = plan_.n_saves;
  // a stopped run's master: the per-save statistics of the finished slices
  // only where they are small, so that a stop never waits on them (10^6
  // saves made 9 datasets of 32 MB); `nholo stats` computes them from the
  // block moments, as for a master whose run was killed
  const bool stopped_master = virt_ && src_.merged.empty();
  if (stopped_master && n_saves * n > kStoppedMasterStatistics) {
    sg.set_attr("statistics_omitted",
                "the run was stopped; its per-save statistics (" + std::to_string(n_saves) +
                    " saves x " + std::to_string(n) +
                    " coordinates) are left to `nholo stats`, which merges block_moments_q "
                    "and block_moments_qdot");
  } else {
    ensemble_save_statistics(sg, f, out, st_time, st_coord);
  }
  for (int st = 0; st < kStatusCount; ++st)
    sg.set_attr(std::string("status_") + status_name(static_cast<Status>(st)),
                out.status_count[f * kStatusCount + st]);
  if (shape_.has_drift) {
    const Moments& mr = out.drift_ratio[f];
    sg.set_attr("drift_ratio_mean", mr.count ? mr.mean : NAN);
    sg.set_attr("drift_ratio_std", std::sqrt(mr.variance()));
  }
}

// The per-save moments of q and qdot over the finished trajectories, and
// their count, in /statistics/<formulation>.
void OutputLayout::ensemble_save_statistics(h5::Group& sg, int f, const Outcome& out,
                                            h5::Dataset& st_time, h5::Dataset& st_coord) {
  const int n = shape_.n;
  const int64_t n_saves = plan_.n_saves;
  auto put = [&](const std::string& name, const FieldStatistics& fs, auto getter) {
    std::vector<double> v(static_cast<size_t>(n_saves) * n);
    for (int64_t k = 0; k < n_saves; ++k)
      for (int c = 0; c < n; ++c) v[k * n + c] = getter(fs.at(k, c));
    h5::Dataset d = sg.create_dataset<double>(name, {H(n_saves), H(n)});
    d.write(v.data());
    d.attach_scale(st_time, 0);
    d.attach_scale(st_coord, 1);
  };
  for (auto [prefix, fs] :
       {std::pair<std::string, const FieldStatistics*>{"", &out.st_q[f]},
        std::pair<std::string, const FieldStatistics*>{"qdot_", &out.st_qd[f]}}) {
    put(prefix + "mean", *fs, [](const Moments& mo) { return mo.count ? mo.mean : NAN; });
    put(prefix + "variance", *fs, [](const Moments& mo) { return mo.variance(); });
    put(prefix + "min", *fs, [](const Moments& mo) { return mo.count ? mo.min : NAN; });
    put(prefix + "max", *fs, [](const Moments& mo) { return mo.count ? mo.max : NAN; });
  }
  {
    std::vector<double> cnt(n_saves);
    for (int64_t k = 0; k < n_saves; ++k) cnt[k] = out.st_q[f].at(k, 0).count;
    h5::Dataset d = sg.create_dataset<double>("count", {H(n_saves)});
    d.write(cnt.data());
    d.attach_scale(st_time, 0);
  }
}

void OutputLayout::write_master(const Outcome* out, const RunSummary* rs) {
  const std::string partial = partial_path(src_.path);
  const std::string tmp = temporary_path(partial);
  std::error_code ec;
  std::filesystem::remove(tmp, ec);
  {
    h5::File mf = h5::File::create(tmp);
    {
      h5::Group root = mf.root();
      write(root, true, out, rs);
    }  // every object closed before the file (a failed close leaves none open)
    mf.close();
  }
  commit_file(tmp, partial);
}

void OutputLayout::assemble(const PieceDir& pieces, const Outcome& out, const RunSummary& rs) {
  const std::string tmp = assembling_path(src_.path);
  std::error_code ec;
  std::filesystem::remove(tmp, ec);
  try {
    h5::File ff = h5::File::create(tmp);
    {
      h5::Group root = ff.root();
      write(root, false, &out, &rs);
      copy_pieces(root, pieces);
    }  // every object closed before the file
    ff.close();
    commit_file(tmp, src_.path, stop_);
  } catch (...) {
    std::filesystem::remove(tmp, ec);  // stopped or failed: no half-assembled file stays
    throw;
  }
}

void OutputLayout::create_in_place_file(const PieceDir& pieces, CommitHandoff* handoff) {
  const InPlaceFile file(pieces);
  file.restore_undo();  // a run stopped in its last step
  if (file.exists()) return;
  for (int64_t s = 0; s < plan_.n_slices(); ++s)
    for (int64_t w = 0; w < plan_.n_windows; ++w)
      if (pieces.has(PieceDir::window_name(s, w)))
        throw std::runtime_error("'" + file.path() + "' is missing, but '" +
                                 pieces.path(PieceDir::window_name(s, w)) +
                                 "' links to it: the fields of the finished windows are lost; "
                                 "start the run again with --overwrite");
  const std::string tmp = temporary_path(file.path());
  std::error_code ec;
  std::filesystem::remove(tmp, ec);
  {
    h5::File ff = h5::File::create(tmp);
    {
      h5::Group root = ff.root();
      write(root, false, nullptr, nullptr);
    }  // every object closed before the file
    ff.close();
  }
  // from here on locals only: a waiter stopped by a signal may leave
  const std::atomic<bool>* stop = stop_;
  if (handoff) handoff->system_calls_only();
  InPlaceFile::reserve(tmp);
  commit_file(tmp, file.path(), stop, handoff);
}

void OutputLayout::finish_in_place(const PieceDir& pieces, const Outcome& out,
                                   const RunSummary& rs) {
  const InPlaceFile file(pieces);
  file.restore_undo();
  // the master out of readers' way while result.h5 changes (in_place_file.hpp)
  const std::string partial = partial_path(src_.path);
  const std::string master = pieces.path(InPlaceFile::master_name());
  commit_file(partial, master);
  const std::filesystem::path out_dir = std::filesystem::path(partial).parent_path();
  fsync_path(out_dir.empty() ? std::string(".") : out_dir.string(), true);
  std::vector<std::string> fields;
  for (const Spec& sp : specs_)
    if (sp.in_place) fields.push_back(sp.path);
  try {
    file.save_undo(fields);
    write_last_step(file.path(), pieces, out, rs);
  } catch (...) {
    recover_last_step(src_.path);  // the master back, for --resume
    throw;
  }
  commit_file(file.path(), src_.path);
  std::error_code ec;
  std::filesystem::remove(file.undo_path(), ec);
}

// What finish_in_place adds to the result file with HDF5 (not the fields).
void OutputLayout::write_last_step(const std::string& file_path, const PieceDir& pieces,
                                   const Outcome& out, const RunSummary& rs) {
  // without HDF5's lock: a reader of PATH.partial may hold the file open
  h5::File ff = h5::File::open_rw(file_path, false);
  {
    h5::Group root = ff.root();
    write_root_attrs(root, cfg_, di_, &rs);
    for (int f = 0; f < nf_; ++f) {
      h5::Group sg = root.open_group("statistics/" + cfg_.formulations[f]);
      h5::Dataset st_time = sg.open_dataset("time"), st_coord = sg.open_dataset("coordinate");
      ensemble_statistics(sg, f, out, st_time, st_coord);
    }
    copy_pieces(root, pieces);
    // failpoint (testing aid): the run killed in the middle of this step
    if (std::getenv("NHOLO_FAILPOINT_KILL_IN_LAST_STEP")) {
      ff.flush();
      std::raise(SIGKILL);
    }
  }  // every object closed before the file
  ff.close();
}

// Every piece of every slice into root's datasets (what is not in place).
void OutputLayout::copy_pieces(h5::Group& root, const PieceDir& pieces) const {
  bool window_data = false;  // anything in the window pieces to copy
  for (const Spec& sp : specs_)
    window_data = window_data || (sp.kind == PieceKind::window && !sp.master_only && !sp.in_place &&
                                  !sp.in_memory);
  for (int64_t s = 0; s < plan_.n_slices(); ++s)
    for (PieceKind kind : {PieceKind::init, PieceKind::window, PieceKind::slice}) {
      if (kind == PieceKind::window && !window_data) continue;
      for (int64_t w = 0; w < (kind == PieceKind::window ? plan_.n_windows : 1); ++w)
        copy_piece(root, pieces, kind, s, w);
    }
}

// The datasets of piece (kind, s, w) into their blocks of root's.
void OutputLayout::copy_piece(h5::Group& root, const PieceDir& pieces, PieceKind kind, int64_t s,
                              int64_t w) const {
  const h5::File pf = h5::File::open_ro(pieces.path(piece_name(kind, s, w)));
  const h5::Group pr = pf.root();
  for (const Spec& sp : specs_) {
    if (sp.kind != kind || sp.master_only || sp.in_place || sp.in_memory) continue;
    std::vector<hsize_t> off, cnt;
    spec_block(sp, plan_, s, w, off, cnt);
    h5::Dataset dst = root.open_dataset(sp.path);
    h5::copy_into(pr.open_dataset(sp.path), dst, off, std::size_t(1) << 20, stop_);
  }
}

}  // namespace nholo::detail

namespace nholo::detail {

// Whose piece the file at path says it is (pieces.hpp's stamp), against
// slice s and the window its name says: empty when it matches, or when the
// piece has no stamp (written by an nholo before stamps).
std::string OutputLayout::piece_stamp_mismatch(const std::string& path, int64_t s,
                                               const std::string& name) const {
  const h5::File f = h5::File::open_ro(path);
  const h5::Group r = f.root();
  if (!r.has_attr(kPieceConfigAttr)) return "";
  if (r.attr_string(kPieceConfigAttr) != cfg_.result_hash)
    return "a piece of another configuration (config hash " + r.attr_string(kPieceConfigAttr) +
           ", not " + cfg_.result_hash + ")";
  int64_t w = -1;
  for (int64_t k = 0; k < plan_.n_windows; ++k)
    if (name == PieceDir::window_name(s, k)) w = k;
  if (r.attr_int64(kPieceSliceAttr) != s || r.attr_int64(kPieceWindowAttr) != w)
    return "it was written for slice " + std::to_string(r.attr_int64(kPieceSliceAttr)) +
           (r.attr_int64(kPieceWindowAttr) >= 0
                ? ", window " + std::to_string(r.attr_int64(kPieceWindowAttr))
                : std::string()) +
           ", not for slice " + std::to_string(s) +
           (w >= 0 ? ", window " + std::to_string(w) : std::string());
  return "";
}

// What is wrong with finished slice s's pieces (and, in_place given, its
// blocks in the result file); empty when nothing is.
std::string OutputLayout::slice_damage(const PieceDir& pieces, const h5::File* in_place,
                                       int64_t s) const {
  std::vector<std::string> names = {PieceDir::init_name(s)};
  for (int64_t w = 0; w < plan_.n_windows; ++w) names.push_back(PieceDir::window_name(s, w));
  names.push_back(PieceDir::slice_name(s));
  for (const std::string& name : names) {
    const std::string path = pieces.path(name);
    if (!pieces.has(name)) return "its piece '" + path + "' is missing";
    try {
      h5::read_every_dataset(path);
    } catch (const std::exception& e) {
      return "its piece '" + path + "' is damaged (" + e.what() + ")";
    }
    const std::string foreign = piece_stamp_mismatch(path, s, name);
    if (!foreign.empty()) return "its piece '" + path + "' is foreign: " + foreign;
  }
  if (!in_place) return "";
  // each piece's blocks in the result file: init (w = -1), windows, slice
  for (int64_t w = -1; w <= plan_.n_windows; ++w) {
    const PieceKind kind = w < 0                  ? PieceKind::init
                           : w == plan_.n_windows ? PieceKind::slice
                                                  : PieceKind::window;
    const std::string path = pieces.path(piece_name(kind, s, w));
    const h5::File piece = h5::File::open_ro(path);
    const std::string which = kind == PieceKind::init    ? "initial states"
                              : kind == PieceKind::slice ? "slice"
                                                         : "window " + std::to_string(w);
    for (const Spec& sp : specs_) {
      if (!sp.in_place || sp.kind != kind) continue;
      const std::string attr = block_checksum_attr(sp.path);
      if (!piece.root().has_attr(attr)) continue;  // a piece of an nholo before checksums
      std::vector<hsize_t> off, cnt;
      spec_block(sp, plan_, s, w, off, cnt);
      const std::string block = "its block of '" + sp.path + "' (" + which + ") in '" +
                                pieces.path(InPlaceFile::name()) + "'";
      uint64_t sum = 0;
      try {
        const std::vector<unsigned char> v =
            in_place->root().open_dataset(sp.path).read_block_native(off, cnt);
        sum = bytes_checksum(v.data(), v.size());
      } catch (const std::exception& e) {
        return block + " cannot be read (" + h5::innermost_reason(e.what()) + ")";
      }
      if (static_cast<int64_t>(sum) != piece.root().attr_int64(attr))
        return block + " has changed since it was written (checksum mismatch)";
    }
  }
  return "";
}

std::vector<std::string> OutputLayout::discard_damaged_slices(const PieceDir& pieces) const {
  std::vector<std::string> notes;
  std::optional<h5::File> in_place;
  if (in_place_ && InPlaceFile(pieces).exists())
    in_place.emplace(h5::File::open_ro(pieces.path(InPlaceFile::name())));
  for (int64_t s = 0; s < plan_.n_slices(); ++s) {
    if (!pieces.has(PieceDir::slice_name(s))) continue;
    const std::string why = slice_damage(pieces, in_place ? &*in_place : nullptr, s);
    if (why.empty()) continue;
    std::error_code ec;
    std::filesystem::remove(pieces.path(PieceDir::slice_name(s)), ec);
    if (ec)
      throw std::runtime_error("slice " + std::to_string(s) + ": " + why +
                               ", and its slice piece cannot be removed to integrate it again: " +
                               ec.message());
    notes.push_back("slice " + std::to_string(s) + " (trajectories [" +
                    std::to_string(src_.first + plan_.slice_begin(s)) + ", " +
                    std::to_string(src_.first + plan_.slice_end(s)) + ")) is integrated again: " +
                    why);
  }
  return notes;
}

}  // namespace nholo::detail
