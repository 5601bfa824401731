// nholo/host/run/runner_impl.hpp — the body of run_model<Model> (runner.hpp): the
// stages of a run, each a small type with one job, then the loop that drives
// them.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include "host/io/output_sink.hpp"
#include "host/io/pieces.hpp"
#include "host/run/runner.hpp"

namespace nholo {

namespace detail {

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}
inline hsize_t H(int64_t v) {
  return static_cast<hsize_t>(v);
}

// Components per save of an output field.
inline int field_components(const std::string& f, int n, int m) {
  if (f == "q" || f == "qdot" || f == "qddot" || f == "force_ideal" || f == "force_nonideal")
    return n;
  if (f == "multiplier") return m;
  return 1;
}

// Values read or written at once by the steps that go over a whole file's
// trajectories (the trajectory scales, `nholo merge` reading its shards), so
// that their memory does not grow with the ensemble.
constexpr int64_t kMergeBlock = int64_t(1) << 16;

// ---- 1. slice plan
struct SlicePlan {
  int64_t size = 0, slice = 0;
  int window = 1;
  int64_t n_saves = 0, n_windows = 0;
};

// n_params > 0 when parameters vary per trajectory: each trajectory of a
// slice then holds its sampled (varied) parameters and all n_params of them
// in the kernel's layout, on the host and, per formulation, on the device.
inline SlicePlan plan_slices(const RunConfig& cfg, const Device& dev, int n, int m, int N,
                             int n_params = 0) {
  SlicePlan p;
  p.size = cfg.size;
  p.n_saves = static_cast<int64_t>(cfg.save_times.size());
  p.window = static_cast<int>(std::min<int64_t>(cfg.window, p.n_saves));
  p.n_windows = (p.n_saves + p.window - 1) / p.window;
  const double W = p.window, nf = static_cast<double>(cfg.formulations.size());
  double fields = 0;  // doubles per save of the fields written
  for (const auto& f : cfg.fields) fields += field_components(f, n, m);
  const double pairs = nf * (nf - 1) / 2;
  // host bytes per trajectory: initial states, per formulation the state, two
  // output slots, q/qdot scratch, fit sums and per-slice results; pair sums
  const double varied = static_cast<double>(cfg.varied_params.size());
  const double host = (2.0 * n + m + N + 2) * 8 + (varied + n_params) * 8 +
                      nf * ((N + 8) * 8 + 2 * W * fields * 8 + 2 * W * n * 8 + 7 * 8 + 40 +
                            n_params * 8.0) +
                      pairs * 16;
  // device bytes (CUDA): state, every observable of a window (SoA), two
  // staging copies in the file layout, fit sums; pair sums
  const double device =
      nf * ((N + 8) * 8 + W * (3.0 * n + m + 2) * 8 + 2 * W * fields * 8 + 7 * 8 + n_params * 8.0) +
      pairs * 16;
  int64_t slice = static_cast<int64_t>(cfg.memory_budget_mb * 1048576.0 / host);
  if (dev.usable_memory() > 0)
    slice = std::min<int64_t>(slice, static_cast<int64_t>(dev.usable_memory() / device));
  slice = std::max<int64_t>(kStatBlock, slice / kStatBlock * kStatBlock);
  p.slice = std::min(slice, p.size);
  return p;
}

// ---- 2. output layout: the datasets of the file and the pieces they live in
enum class PieceKind { init, window, slice };

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
};

// The block of slice s (and window w) of a dataset: offset and count.
inline void spec_block(const Spec& sp, const SlicePlan& p, int64_t s, int64_t w,
                       std::vector<hsize_t>& off, std::vector<hsize_t>& cnt) {
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

inline std::string piece_name(PieceKind k, int64_t s, int64_t w) {
  return k == PieceKind::init     ? PieceDir::init_name(s)
         : k == PieceKind::window ? PieceDir::window_name(s, w)
                                  : PieceDir::slice_name(s);
}

// A trajectory index scale first..first+size-1 (global indices: a shard's
// start at its range), written in pieces of kMergeBlock.
inline h5::Dataset trajectory_dimension(h5::Group& g, int64_t size, hsize_t chunk, int gz,
                                        int64_t first = 0) {
  h5::Dataset d = g.create_dataset<int64_t>("trajectory", {H(size)}, {chunk}, gz, gz > 0);
  std::vector<int64_t> idx;
  for (int64_t b = 0; b < size; b += kMergeBlock) {
    const int64_t e = std::min(size, b + kMergeBlock);
    idx.resize(e - b);
    for (int64_t i = b; i < e; ++i) idx[i - b] = first + i;
    d.write_block({H(b)}, {H(e - b)}, idx.data());
  }
  d.make_scale("trajectory");
  return d;
}

// An initial state is degenerate (status singular, in every formulation
// alike) when A has lost rank there — sigma_min below this times sigma_max,
// or A = 0 —, or when completing it from the constraints made a velocity more
// than kCompletionGrowth times the given ones (a division by a vanishing
// coefficient, e.g. the skate heading at +-pi/2 with xd given).
constexpr double kDegenerateRankRtol = 1e-10;
constexpr double kCompletionGrowth = 1e6;

// What a run's finished slices add up to (read back from the pieces).
struct Outcome {
  std::vector<FieldStatistics> st_q, st_qd;
  std::vector<Moments> drift_ratio;
  std::vector<int64_t> status_count;
};

// ---- 5/6. reducers on the host side: pair accumulators
struct PairState {
  int a, b;
  DeviceArray max_dist, first_exceed;
};

}  // namespace detail

template <class Model>
RunSummary run_model(const RunConfig& cfg, const RunOptions& ro, Device& dev) {
  using namespace detail;
  using Scalar = h5::detail::Scalar;
  constexpr int n = Model::n;
  constexpr int m = constraint_count<Model>();
  constexpr int N = 2 * n + m;  // upper bound of any formulation's state
  constexpr bool has_drift = has_drift_statistic<Model>::value;
  const ModelInfo& mi = *find_model(Model::name);
  const auto run_params = params_from_config<Model>(cfg);
  const int nf = static_cast<int>(cfg.formulations.size());
  // parameters that vary per trajectory (cfg.varied_params, the columns of
  // /initial/params): nv of the model's n_params
  constexpr int n_params = Model::n_params;
  const int nv = static_cast<int>(cfg.varied_params.size());
  const int gz = cfg.compression;  // deflate level of every per-trajectory dataset (0: none)
  RunSummary sum;
  const auto t_merge = Clock::now();

  // ---- 1. slice plan (a resumed run keeps the slices of the run it continues;
  // a shard plans its range only)
  const int64_t first = ro.merge.empty() ? ro.range_begin : 0;
  const int64_t last = ro.merge.empty() && ro.range_end >= 0 ? ro.range_end : cfg.size;
  const bool sharded = ro.shard && ro.merge.empty();
  SlicePlan plan = plan_slices(cfg, dev, n, m, N, nv > 0 ? n_params : 0);
  plan.size = last - first;
  plan.slice = std::min(plan.slice, plan.size);
  if (ro.slice_size > 0) {
    if (ro.slice_size > plan.slice && ro.slice_size < plan.size)
      throw ConfigError("--resume", "the run being resumed used slices of " +
                                        std::to_string(ro.slice_size) +
                                        " trajectories; this device and output.memory_budget_mb "
                                        "allow " + std::to_string(plan.slice) +
                                        " (raise output.memory_budget_mb or resume on a larger device)");
    plan.slice = std::min(ro.slice_size, plan.size);
  }
  const int64_t size = plan.size, n_saves = plan.n_saves;
  sum.trajectories = size;
  const int64_t n_slices = (size + plan.slice - 1) / plan.slice;
  const int64_t n_blocks = (size + kStatBlock - 1) / kStatBlock;
  sum.slice_size = plan.slice;
  const hsize_t chunk_t = std::min<hsize_t>(H(size), 1024);
  const hsize_t chunk_k = std::min<hsize_t>(H(n_saves), H(plan.window));
  const PieceDir pieces(ro.path);
  const std::string partial = ro.path + ".partial";

  // ---- 2. output layout: written as the master (virtual datasets over the
  // pieces, at the start), again with the outcome when the run stops, or as
  // the result file (real datasets) when every slice is finished
  std::vector<Spec> specs;
  auto layout = [&](h5::Group& root, bool virt, const Outcome* out, const RunSummary* rs) {
    specs.clear();
    ro.root_attrs(root, rs);
    root.set_attr("slice_size", plan.slice);  // what --resume keeps
    if (sharded) {
      root.set_attr("shard_begin", first);
      root.set_attr("shard_end", last);
    }
    auto make = [&](h5::Group& g, const std::string& name, Spec sp) -> h5::Dataset {
      sp.path = g.path().substr(1) + "/" + name;
      specs.push_back(sp);
      if (!virt) {
        return g.create_dataset_as(sp.type, name, sp.dims, sp.chunk, gz, gz > 0, sp.fill);
      }
      std::vector<h5::VirtualSource> src;
      if (!ro.merge.empty()) {
        // merged: each shard's whole dataset at its range
        for (const auto& sh : ro.merge) {
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
      for (int64_t s = 0; s < n_slices; ++s)
        for (int64_t w = 0; w < (sp.time_axis >= 0 ? plan.n_windows : 1); ++w) {
          h5::VirtualSource v;
          spec_block(sp, plan, s, w, v.offset, v.count);
          v.file = pieces.relative(piece_name(sp.kind, s, w));
          v.dataset = sp.path;
          src.push_back(std::move(v));
        }
      return g.create_virtual(sp.type, name, sp.dims, sp.fill, src);
    };
    auto per_traj = [&](Scalar type, double fill, PieceKind kind, std::vector<hsize_t> dims) {
      Spec sp;
      sp.type = type;
      sp.fill = fill;
      sp.kind = kind;
      sp.dims = dims;
      sp.chunk.assign(dims.size(), 0);
      for (size_t a = 0; a < dims.size(); ++a) sp.chunk[a] = dims[a];
      sp.chunk[0] = chunk_t;
      if (kind == PieceKind::window) {
        sp.time_axis = 1;
        sp.chunk[1] = chunk_k;
      }
      return sp;
    };
    std::vector<h5::Dataset> trajs;  // one scale per group, as in every nholo file
    for (int f = 0; f < nf; ++f) {
      h5::Group g = root.create_group(cfg.formulations[f]);
      g.set_attr("formulation", cfg.formulations[f]);
      h5::Dataset traj = trajectory_dimension(g, size, chunk_t, gz, first);
      h5::Dataset time = h5::dimension(g, "time", cfg.save_times);
      h5::Dataset coord = h5::dimension(g, "coordinate", mi.coordinates);
      h5::Dataset cons = h5::dimension(g, "constraint", mi.constraints);
      for (const auto& fname : cfg.fields) {
        const int nc = field_components(fname, n, m);
        const bool per_coord =
            nc == n && fname != "multiplier" && fname != "constraint_residual" && fname != "energy";
        const bool per_cons = fname == "multiplier";
        std::vector<hsize_t> dims = {H(size), H(n_saves)};
        if (per_coord || per_cons) dims.push_back(per_coord ? H(n) : H(m));
        h5::Dataset d = make(g, fname, per_traj(Scalar::f64, NAN, PieceKind::window, dims));
        d.attach_scale(traj, 0);
        d.attach_scale(time, 1);
        if (per_coord) d.attach_scale(coord, 2);
        if (per_cons) d.attach_scale(cons, 2);
      }
      h5::Dataset status =
          make(g, "status",
               per_traj(Scalar::i32, static_cast<double>(Status::not_run), PieceKind::slice, {H(size)}));
      status.attach_scale(traj, 0);
      make(g, "steps", per_traj(Scalar::i64, 0, PieceKind::slice, {H(size)})).attach_scale(traj, 0);
      make(g, "rejected", per_traj(Scalar::i64, 0, PieceKind::slice, {H(size)})).attach_scale(traj, 0);
      make(g, "fail_time", per_traj(Scalar::f64, NAN, PieceKind::slice, {H(size)})).attach_scale(traj, 0);
      // the embedded formulation's Euler–Poisson check (kernels/embedded.hpp)
      if (cfg.formulations[f] == "embedded") {
        h5::Dataset ep = make(g, "euler_poisson_residual",
                              per_traj(Scalar::f64, NAN, PieceKind::slice, {H(size)}));
        ep.attach_scale(traj, 0);
        ep.set_attr("long_name", "max over the accepted steps of the Euler-Poisson (Wang & Gao eq 26) "
                                 "residual relative to its largest term");
      }
      std::vector<std::string> names;
      for (int st = 0; st < kStatusCount; ++st) names.push_back(status_name(static_cast<Status>(st)));
      status.set_attr("flag_meanings", join(names, " "));
      status.set_attr("flag_values", std::vector<double>{0, 1, 2, 3, 4, 5, 6});
    }
    {
      h5::Group init = root.create_group("initial");
      h5::Dataset traj = trajectory_dimension(init, size, chunk_t, gz, first);
      h5::Dataset icoord = h5::dimension(init, "coordinate", mi.coordinates);
      h5::Dataset icons = h5::dimension(init, "constraint", mi.constraints);
      h5::Dataset q0 = make(init, "q0", per_traj(Scalar::f64, NAN, PieceKind::init, {H(size), H(n)}));
      h5::Dataset qd0 =
          make(init, "qdot0", per_traj(Scalar::f64, NAN, PieceKind::init, {H(size), H(n)}));
      h5::Dataset l0 =
          make(init, "lambda0", per_traj(Scalar::f64, NAN, PieceKind::init, {H(size), H(m)}));
      for (auto* d : {&q0, &qd0}) {
        d->attach_scale(traj, 0);
        d->attach_scale(icoord, 1);
      }
      l0.attach_scale(traj, 0);
      l0.attach_scale(icons, 1);
      if (nv > 0) {
        // the parameters that vary per trajectory, in the model's order
        std::vector<std::string> units;
        for (const auto& name : cfg.varied_params)
          for (const auto& p : mi.params)
            if (p.name == name) units.push_back(p.unit);
        h5::Dataset ipar = h5::dimension(init, "parameter", cfg.varied_params);
        h5::Dataset pd =
            make(init, "params", per_traj(Scalar::f64, NAN, PieceKind::init, {H(size), H(nv)}));
        pd.attach_scale(traj, 0);
        pd.attach_scale(ipar, 1);
        pd.set_attr("names", cfg.varied_params);
        pd.set_attr("units", units);
        pd.set_attr("long_name", "the model parameters that vary per trajectory ([ensemble.params]); "
                                 "the others are the root attributes param_<name>");
      }
    }
    for (int a = 0; a < nf; ++a)
      for (int b = a + 1; b < nf; ++b) {
        h5::Group g =
            root.create_group("compare/" + cfg.formulations[a] + "__" + cfg.formulations[b]);
        g.set_attr("formulation_a", cfg.formulations[a]);
        g.set_attr("formulation_b", cfg.formulations[b]);
        g.set_attr("threshold", cfg.compare_threshold);
        h5::Dataset traj = trajectory_dimension(g, size, chunk_t, gz, first);
        h5::Dataset md =
            make(g, "max_distance", per_traj(Scalar::f64, NAN, PieceKind::slice, {H(size)}));
        h5::Dataset fe =
            make(g, "first_exceed_time", per_traj(Scalar::f64, NAN, PieceKind::slice, {H(size)}));
        md.attach_scale(traj, 0);
        fe.attach_scale(traj, 0);
        md.set_attr("long_name", "max over saves of |q_a - q_b|_2");
        fe.set_attr("long_name", "first save time with |q_a - q_b|_2 > threshold (NaN: never)");
      }
    for (int f = 0; f < nf; ++f) {
      const std::string fname = cfg.formulations[f];
      h5::Group sg = root.create_group("statistics/" + fname);
      h5::Dataset st_time = h5::dimension(sg, "time", cfg.save_times);
      h5::Dataset st_coord = h5::dimension(sg, "coordinate", mi.coordinates);
      if constexpr (has_drift) {
        h5::Dataset traj = trajectory_dimension(sg, size, chunk_t, gz, first);
        h5::Dataset v =
            make(sg, "drift_velocity", per_traj(Scalar::f64, NAN, PieceKind::slice, {H(size)}));
        h5::Dataset band = make(sg, "band", per_traj(Scalar::f64, NAN, PieceKind::slice, {H(size)}));
        h5::Dataset ratio =
            make(sg, "drift_ratio", per_traj(Scalar::f64, NAN, PieceKind::slice, {H(size)}));
        v.set_attr("long_name", "least-squares slope of x(t) (horizontal drift)");
        band.set_attr("long_name", "max y - min y over the saves (downslope band)");
        ratio.set_attr("long_name",
                       "drift_velocity / prediction (statistics group attribute drift_prediction)");
        for (auto* d : {&v, &band, &ratio}) d->attach_scale(traj, 0);
      }
      // the block moments of q and qdot (count, mean, M2, min, max per block
      // of kStatBlock trajectories, save and coordinate): in PATH.partial
      // only, where `nholo stats` merges them while a run goes on
      for (const char* which : {"block_moments_q", "block_moments_qdot"}) {
        Spec sp;
        sp.kind = PieceKind::window;
        sp.dims = {5, H(n_blocks), H(n_saves), H(n)};
        sp.traj_axis = 1;
        sp.time_axis = 2;
        sp.per_block = true;
        sp.master_only = !sharded;  // a shard keeps them, for `nholo merge`
        if (!ro.merge.empty()) {
          continue;  // a merged file has the merged statistics, as a single run
        } else if (virt || sharded) {
          h5::Dataset d = make(sg, which, sp);
          d.set_attr("long_name", "moments of each block of 1024 trajectories: count, mean, M2 "
                                  "(sum of squared deviations), min, max");
        } else {
          sp.path = sg.path().substr(1) + "/" + which;
          specs.push_back(sp);
        }
      }
      if (!out) continue;
      // ensemble statistics, merged in block order
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
           {std::pair<std::string, const FieldStatistics*>{"", &out->st_q[f]},
            std::pair<std::string, const FieldStatistics*>{"qdot_", &out->st_qd[f]}}) {
        put(prefix + "mean", *fs, [](const Moments& mo) { return mo.count ? mo.mean : NAN; });
        put(prefix + "variance", *fs, [](const Moments& mo) { return mo.variance(); });
        put(prefix + "min", *fs, [](const Moments& mo) { return mo.count ? mo.min : NAN; });
        put(prefix + "max", *fs, [](const Moments& mo) { return mo.count ? mo.max : NAN; });
      }
      {
        std::vector<double> cnt(n_saves);
        for (int64_t k = 0; k < n_saves; ++k) cnt[k] = out->st_q[f].at(k, 0).count;
        h5::Dataset d = sg.create_dataset<double>("count", {H(n_saves)});
        d.write(cnt.data());
        d.attach_scale(st_time, 0);
      }
      for (int st = 0; st < kStatusCount; ++st)
        sg.set_attr(std::string("status_") + status_name(static_cast<Status>(st)),
                    out->status_count[f * kStatusCount + st]);
      if constexpr (has_drift) {
        const Moments& mr = out->drift_ratio[f];
        sg.set_attr("drift_ratio_mean", mr.count ? mr.mean : NAN);
        sg.set_attr("drift_ratio_std", std::sqrt(mr.variance()));
        sg.set_attr("drift_prediction", Model::DriftStatistic::prediction_doc);
      }
    }
  };
  std::map<std::string, Spec> spec_of;
  auto write_master = [&](const Outcome* out, const RunSummary* rs) {
    const std::string tmp = partial + ".tmp";
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    {
      h5::File mf = h5::File::create(tmp);
      {
        h5::Group root = mf.root();
        layout(root, true, out, rs);
      }  // every object closed before the file (a failed close leaves none open)
      mf.close();
    }
    commit_file(tmp, partial);
  };
  if (!ro.merge.empty()) {
    // ---- `nholo merge`: the outcome from the shards, in block order, and the
    // file as virtual datasets over them (or a copy)
    Outcome out;
    out.st_q.assign(nf, FieldStatistics(n_saves, n));
    out.st_qd.assign(nf, FieldStatistics(n_saves, n));
    out.drift_ratio.assign(nf, Moments());
    out.status_count.assign(static_cast<size_t>(nf) * kStatusCount, 0);
    for (const auto& sh : ro.merge) {
      const h5::File f = h5::File::open_ro(sh.path);
      const h5::Group r = f.root();
      const int64_t count = sh.end - sh.begin;
      sum.completed += r.attr_int64("completed_trajectories");
      sum.completed_from_constraints += r.attr_int64("initial_states_completed");
      sum.projected += r.attr_int64("initial_states_projected");
      sum.rejected += r.attr_int64("initial_states_rejected");
      sum.singular_initial += r.attr_int64("initial_states_singular");
      if (r.has_attr("initial_states_params_rejected"))
        sum.params_rejected += r.attr_int64("initial_states_params_rejected");
      // read in bounded blocks (kMergeBlock values), in trajectory and block
      // order: the sums are those of reading each shard whole
      for (int f_ = 0; f_ < nf; ++f_) {
        const std::string& form = cfg.formulations[f_];
        const h5::Dataset st = r.open_dataset(form + "/status");
        const h5::Dataset steps = r.open_dataset(form + "/steps");
        std::optional<h5::Dataset> ratio;
        if constexpr (has_drift) ratio = r.open_dataset("statistics/" + form + "/drift_ratio");
        for (int64_t b = 0; b < count; b += kMergeBlock) {
          const std::vector<hsize_t> off = {H(b)}, cnt = {H(std::min(count, b + kMergeBlock) - b)};
          for (int32_t x : st.read_block<int32_t>(off, cnt)) {
            if (x < 0 || x >= kStatusCount)
              throw ConfigError("merge", "'" + sh.path + "': " + form + "/status holds " +
                                             std::to_string(x) + ", not a status");
            ++out.status_count[f_ * kStatusCount + x];
          }
          for (int64_t k : steps.read_block<int64_t>(off, cnt)) sum.steps += k;
          if (ratio)
            for (double x : ratio->read_block<double>(off, cnt))
              if (std::isfinite(x)) out.drift_ratio[f_].add(x);
        }
        // block moments (5, blocks, saves, n): runs of blocks and saves, each
        // (save, coordinate) folding its blocks in order
        const int64_t blocks = (count + kStatBlock - 1) / kStatBlock;
        const int64_t per_save = 5 * static_cast<int64_t>(n);
        const int64_t ks = std::max<int64_t>(1, std::min<int64_t>(n_saves, kMergeBlock / per_save));
        const int64_t bs = std::max<int64_t>(1, kMergeBlock / (per_save * ks));
        for (int which = 0; which < 2; ++which) {
          const h5::Dataset bm = r.open_dataset(
              "statistics/" + form + (which ? "/block_moments_qdot" : "/block_moments_q"));
          if (bm.dims() != std::vector<hsize_t>{5, H(blocks), H(n_saves), H(n)})
            throw ConfigError("merge", "'" + sh.path + "': " + bm.path() +
                                           " is not (5, blocks, saves, coordinates)");
          for (int64_t b0 = 0; b0 < blocks; b0 += bs)
            for (int64_t k0 = 0; k0 < n_saves; k0 += ks) {
              const int64_t nb = std::min(blocks, b0 + bs) - b0;
              const int64_t nk = std::min(n_saves, k0 + ks) - k0;
              const std::vector<double> mom =
                  bm.read_block<double>({0, H(b0), H(k0), 0}, {5, H(nb), H(nk), H(n)});
              const size_t len = mom.size() / 5;
              const double* parts[5] = {mom.data(), mom.data() + len, mom.data() + 2 * len,
                                        mom.data() + 3 * len, mom.data() + 4 * len};
              (which ? out.st_qd : out.st_q)[f_].add_block_moments(parts, nb * kStatBlock, k0, nk);
            }
        }
      }
    }
    for (int f_ = 0; f_ < nf; ++f_) {
      std::ostringstream line;
      line << cfg.formulations[f_] << ":";
      for (int st = 0; st < kStatusCount; ++st)
        if (const int64_t c = out.status_count[f_ * kStatusCount + st])
          line << " " << status_name(static_cast<Status>(st)) << " " << c;
      sum.status_lines.push_back(line.str());
    }
    const std::string tmp = ro.path + ".merging";
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    try {
      h5::File ff = h5::File::create(tmp);
      {
        h5::Group root = ff.root();
        layout(root, !ro.merge_copy, &out, &sum);
        std::vector<std::string> names;
        for (const auto& sh : ro.merge) names.push_back(sh.vds_file);
        root.set_attr("merged_shards", names);
        root.set_attr("merge", ro.merge_copy ? "copy" : "virtual");
        if (ro.merge_copy)
          for (const auto& sh : ro.merge) {
            const h5::File sf = h5::File::open_ro(sh.path);
            const h5::Group sr = sf.root();
            for (const Spec& sp : specs) {
              if (sp.master_only) continue;
              std::vector<hsize_t> off(sp.dims.size(), 0);
              off[sp.traj_axis] = H(sp.per_block ? sh.begin / kStatBlock : sh.begin);
              h5::Dataset dst = root.open_dataset(sp.path);
              h5::copy_into(sr.open_dataset(sp.path), dst, off);
            }
          }
      }
      ff.close();
      commit_file(tmp, ro.path);
    } catch (...) {
      std::filesystem::remove(tmp, ec);
      throw;
    }
    sum.seconds = seconds_since(t_merge);
    return sum;
  }
  pieces.create();
  pieces.remove_temporaries();
  write_master(nullptr, nullptr);
  for (const Spec& sp : specs) spec_of[sp.path] = sp;
  auto chunk_of = [&](const std::string& path) { return spec_of.at(path).chunk; };

  // ---- 3. device ensembles (state allocated once, for the largest slice)
  EnsembleLayout layout_e;
  layout_e.max_count = plan.slice;
  layout_e.window = plan.window;
  layout_e.fields = cfg.fields;
  for (const auto& f : cfg.fields) layout_e.components.push_back(field_components(f, n, m));
  auto wants = [&](const char* f) {
    return std::find(cfg.fields.begin(), cfg.fields.end(), f) != cfg.fields.end();
  };
  layout_e.stop = &interrupt_flag();
  layout_e.per_trajectory_params = nv > 0;
  layout_e.sel.q = layout_e.sel.qdot = true;
  layout_e.sel.qddot = wants("qddot");
  layout_e.sel.force_ideal = wants("force_ideal");
  layout_e.sel.force_nonideal = wants("force_nonideal");
  layout_e.sel.multiplier = wants("multiplier");
  layout_e.sel.constraint_residual = wants("constraint_residual");
  layout_e.sel.energy = wants("energy");
  if constexpr (has_drift) {
    layout_e.line_fit = true;
    layout_e.fit_x = Model::DriftStatistic::drift_coordinate;
    layout_e.fit_y = Model::DriftStatistic::band_coordinate;
    layout_e.t_mid = 0.5 * (cfg.t_start + cfg.t_end);
  }
  dev.set_save_times(cfg.save_times);
  std::vector<std::unique_ptr<DeviceEnsemble>> ens;
  for (const auto& f : cfg.formulations)
    ens.push_back(make_formulation<Model>(f, cfg, dev, layout_e));
  std::vector<PairState> pairs;
  std::vector<std::pair<int, int>> pair_ab;
  for (int a = 0; a < nf; ++a)
    for (int b = a + 1; b < nf; ++b) {
      pairs.push_back({a, b, DeviceArray(dev, plan.slice), DeviceArray(dev, plan.slice)});
      pair_ab.emplace_back(a, b);
    }
  auto pair_path = [&](size_t p, const char* what) {
    return "compare/" + cfg.formulations[pair_ab[p].first] + "__" +
           cfg.formulations[pair_ab[p].second] + "/" + what;
  };

  // ---- 4. initial states
  Sampler sampler(cfg, mi);
  {
    // the sampler's varied parameters are the file's /initial/params columns
    std::vector<std::string> names;
    for (int j : sampler.varied_params()) names.push_back(mi.params[j].name);
    if (names != cfg.varied_params)
      throw std::logic_error("the sampler varies parameters " + join(names) + ", the config " +
                             join(cfg.varied_params));
  }
  // every parameter's fixed value (those that vary are replaced per trajectory)
  double base_params[n_params > 0 ? n_params : 1] = {0};
  for (int j = 0; j < n_params; ++j) base_params[j] = cfg.params.at(Model::param_info[j].name);
  // trajectory i's parameters from the kernel layout pk[j * count + i]
  auto params_of = [&](const std::vector<double>& pk, int64_t count, int64_t i) {
    double v[n_params > 0 ? n_params : 1] = {0};
    for (int j = 0; j < n_params; ++j) v[j] = pk[j * count + i];
    return Model::make_params(v);
  };
  bool q_given[n], qd_given[n];
  bool any_free = false;
  for (int c = 0; c < n; ++c) {
    q_given[c] = sampler.q_given[c];
    qd_given[c] = sampler.qd_given[c];
    any_free = any_free || !q_given[c] || !qd_given[c];
  }
  const double t0 = cfg.t_start;
  struct InitCounts {
    int64_t completed = 0, projected = 0, rejected = 0, singular = 0, params_rejected = 0;
  };
  // pv: the varied parameters as sampled, [i nv + v] (the file's layout); pk:
  // with any varied, every parameter of every trajectory, [j count + i] (the
  // kernels' layout), else empty
  auto initial_states = [&](int64_t begin, int64_t count, std::vector<double>& q0,
                            std::vector<double>& qd0, std::vector<double>& l0,
                            std::vector<double>& pv, std::vector<double>& pk,
                            std::vector<uint8_t>& rejected, InitCounts& ic) {
    sampler.fill(first + begin, first + begin + count, q0, qd0, l0, &pv);
    rejected.assign(count, 0);
    pk.clear();
    if (nv > 0) {
      pk.resize(static_cast<size_t>(n_params) * count);
      for (int j = 0; j < n_params; ++j)
        std::fill(pk.begin() + j * count, pk.begin() + (j + 1) * count, base_params[j]);
      const std::vector<int>& col = sampler.varied_params();
      for (int64_t i = 0; i < count; ++i)
        for (int v = 0; v < nv; ++v) pk[col[v] * count + i] = pv[i * nv + v];
    }
    for (int64_t i = 0; i < count; ++i) {
      // an interrupt during setup: stop completing (the slice will not run)
      if (i % 4096 == 0 && interrupt_flag().load()) return;
      // this trajectory's parameters
      const typename Model::Params params = nv > 0 ? params_of(pk, count, i) : run_params;
      if constexpr (has_check_params<Model>::value) {
        // sampled parameters that break the model's relation (those the
        // config could not rule out): not integrated, status rejected
        if (nv > 0 && Model::check_params(params) != nullptr) {
          rejected[i] = static_cast<uint8_t>(Status::rejected);
          ++ic.params_rejected;
          continue;
        }
      }
      Vec<double, n> q, qd;
      for (int c = 0; c < n; ++c) {
        q[c] = q0[i * n + c];
        qd[c] = qd0[i * n + c];
      }
      if constexpr (m > 0) {
        ConsistencyResult<double> r =
            complete_state<Model, double>(params, q, q_given, qd, qd_given, t0);
        if (any_free && r.converged) ++ic.completed;
        if (!r.converged) {
          if (cfg.on_violation == "error") {
            std::ostringstream os;
            os << "trajectory " << (first + begin + i) << ": initial state violates the constraints "
               << "(residual " << r.residual << ") and on_violation = \"error\" (accepted: "
               << "project, reject, error)";
            throw ConfigError("ensemble.on_violation", os.str());
          }
          if (cfg.on_violation == "project") {
            r = project_state<Model, double>(params, q, qd, t0);
            if (r.converged) ++ic.projected;
          }
          if (!r.converged) {
            rejected[i] = static_cast<uint8_t>(Status::rejected);
            ++ic.rejected;
          }
        }
        if (!rejected[i]) {
          // a degenerate state: A loses rank where the model says it does
          // not, or completion blew a velocity up
          Mat<double, m, n> A;
          Vec<double, m> b, res, vres;
          constraint_terms<Model, double>(params, q, qd, t0, A, b, &res, &vres);
          bool degenerate =
              numerical_rank(A, kDegenerateRankRtol) < declared_constraint_rank<Model>::value;
          double given = 0, solved = 0;
          for (int c = 0; c < n; ++c) {
            double& bound = qd_given[c] ? given : solved;
            bound = std::max(bound, std::fabs(qd[c]));
          }
          if (solved > kCompletionGrowth * (1.0 + given) || !std::isfinite(solved))
            degenerate = true;
          if (degenerate) {
            rejected[i] = static_cast<uint8_t>(Status::singular);
            ++ic.singular;
          }
        }
      }
      for (int c = 0; c < n; ++c) {
        q0[i * n + c] = q[c];
        qd0[i * n + c] = qd[c];
      }
    }
  };

  // ---- 7. the output sink (writer thread): every piece is written and
  // committed there, in order
  OutputSink sink(true);
  int64_t todo_slices = 0, todo_traj = 0;
  for (int64_t s = 0; s < n_slices; ++s)
    if (!pieces.has(PieceDir::slice_name(s))) {
      ++todo_slices;
      todo_traj += std::min(size, (s + 1) * plan.slice) - s * plan.slice;
    }
  Progress progress(std::max<int64_t>(1, todo_traj * plan.n_windows * nf), ro.quiet, ro.tty,
                    static_cast<double>(plan.n_windows * nf));
  if (ro.resume && todo_slices < n_slices)
    progress.message("resuming: " + std::to_string(n_slices - todo_slices) + " of " +
                     std::to_string(n_slices) + " slices are finished in " + partial);
  int64_t done_units = 0;
  std::vector<double> q0, qd0, l0, pv, pk;
  std::vector<uint8_t> rejected;
  int64_t window_counter = 0;  // selects the host slot (double buffering)

  try {
    for (int64_t s = 0; s < n_slices && !sum.interrupted; ++s) {
      if (pieces.has(PieceDir::slice_name(s))) continue;  // finished by the run resumed
      const int64_t begin = s * plan.slice;
      const int64_t end = std::min(size, begin + plan.slice), count = end - begin;
      // 4. initial states of the slice, committed by the sink
      InitCounts ic;
      initial_states(begin, count, q0, qd0, l0, pv, pk, rejected, ic);
      if (interrupt_flag().load()) {
        sum.interrupted = true;
        break;
      }
      if (ic.params_rejected > 0) {
        std::ostringstream msg;
        msg << "trajectories [" << (first + begin) << ", " << (first + end) << "): " << ic.params_rejected
            << " rejected (status rejected, not integrated): their sampled parameters break the model's "
               "relation between parameters";
        if constexpr (has_check_params<Model>::value)
          for (int64_t i = 0; i < count; ++i)
            if (rejected[i] == static_cast<uint8_t>(Status::rejected))
              if (const char* why = Model::check_params(params_of(pk, count, i))) {
                msg << " (" << why << ")";
                break;
              }
        progress.message(msg.str());
      }
      sink.post([&, s, count, q0, qd0, l0, pv, ic] {
        Piece p(pieces, PieceDir::init_name(s));
        p.write("initial/q0", {H(count), H(n)}, chunk_of("initial/q0"), gz, q0.data());
        p.write("initial/qdot0", {H(count), H(n)}, chunk_of("initial/qdot0"), gz, qd0.data());
        p.write("initial/lambda0", {H(count), H(m)}, chunk_of("initial/lambda0"), gz, l0.data());
        if (nv > 0)
          p.write("initial/params", {H(count), H(nv)}, chunk_of("initial/params"), gz, pv.data());
        {
          h5::Group r = p.root();
          r.set_attr("completed_from_constraints", ic.completed);
          r.set_attr("projected", ic.projected);
          r.set_attr("rejected", ic.rejected);
          r.set_attr("singular", ic.singular);
          r.set_attr("params_rejected", ic.params_rejected);
        }
        p.commit();
      });
      const auto c0 = Clock::now();
      for (auto& e : ens)
        e->start_slice(count, q0.data(), qd0.data(), l0.data(), pk.empty() ? nullptr : pk.data(),
                       rejected.data(), t0);
      for (auto& P : pairs) {
        dev.fill(P.max_dist.get(), 0.0, count);
        dev.fill(P.first_exceed.get(), NAN, count);
      }
      sum.compute_seconds += seconds_since(c0);

      bool slice_complete = true;
      for (int64_t w = 0; w < plan.n_windows; ++w) {
        if (interrupt_flag().load()) {
          sum.interrupted = true;
          slice_complete = false;
          break;
        }
        const int64_t k0 = w * plan.window, ns = std::min(n_saves, k0 + plan.window) - k0;
        const int slot = static_cast<int>(window_counter++ % 2);
        // wait until the writer has finished with this slot (double buffering)
        const auto a0 = Clock::now();
        sink.acquire(slot);
        sum.wait_seconds += seconds_since(a0);
        // 5. integrate, 6. reduce (on the device; may return before it is done)
        const auto w0 = Clock::now();
        for (auto& e : ens) e->run_window(k0, static_cast<int>(ns), slot);
        bool window_done = true;
        for (auto& e : ens) window_done = window_done && e->window_complete();
        if (!window_done) {
          // interrupted inside the window: nothing of it is written, the
          // slice's trajectories stay not_run
          sink.release(slot);
          sum.compute_seconds += seconds_since(w0);
          sum.interrupted = true;
          slice_complete = false;
          break;
        }
        for (auto& P : pairs) {
          bool ta = true, tb = true;
          const double* qa = ens[P.a]->device_q(&ta);
          const double* qb = ens[P.b]->device_q(&tb);
          PairDistanceKernel<double> k{qa,
                                       qb,
                                       ta,
                                       tb,
                                       count,
                                       ns,
                                       n,
                                       dev.save_times() + k0,
                                       cfg.compare_threshold,
                                       P.max_dist.get(),
                                       P.first_exceed.get()};
          dev.pair_distance(k, count);
        }
        sum.compute_seconds += seconds_since(w0);
        // 7. the writer: wait for the slot's data, write the window's piece
        sink.post([&, slot, s, w, count, ns] {
          const auto o0 = Clock::now();
          Piece p(pieces, PieceDir::window_name(s, w));
          const int64_t blocks = (count + kStatBlock - 1) / kStatBlock;
          const size_t len = static_cast<size_t>(blocks * ns * n);
          std::vector<double> mom(5 * len);
          for (int f = 0; f < nf; ++f) {
            ens[f]->wait(slot);
            const WindowSlot& S = ens[f]->slot(slot);
            const std::string& form = cfg.formulations[f];
            for (size_t j = 0; j < cfg.fields.size(); ++j) {
              const int nc = layout_e.components[j];
              const std::string path = form + "/" + cfg.fields[j];
              std::vector<hsize_t> dims = {H(count), H(ns)};
              if (spec_of.at(path).dims.size() == 3) dims.push_back(H(nc));
              p.write(path, dims, chunk_of(path), gz, S.fields[j]);
              sum.output_bytes += count * ns * nc * static_cast<int64_t>(sizeof(double));
            }
            for (int which = 0; which < 2; ++which) {
              for (int part = 0; part < 5; ++part)
                std::copy(S.moments[which][part], S.moments[which][part] + len,
                          mom.begin() + part * len);
              p.write("statistics/" + form + (which ? "/block_moments_qdot" : "/block_moments_q"),
                      {5, H(blocks), H(ns), H(n)}, {}, 0, mom.data());
            }
          }
          sink.release(slot);
          p.commit();
          sum.output_seconds += seconds_since(o0);
        });
        done_units += count * nf;
        std::ostringstream what;
        what << end << "/" << size << " traj, window " << (w + 1) << "/" << plan.n_windows;
        progress.update(done_units, what.str());
      }
      if (!slice_complete) break;  // its pieces so far stay; the slice is not finished

      // per-slice results (synchronous: waits for the device)
      const auto r0 = Clock::now();
      auto results = std::make_shared<std::vector<SliceResults>>(nf);
      for (int f = 0; f < nf; ++f) ens[f]->finish_slice((*results)[f]);
      auto pair_res = std::make_shared<std::vector<std::vector<double>>>(2 * pairs.size());
      for (size_t p = 0; p < pairs.size(); ++p) {
        auto& md = (*pair_res)[2 * p];
        auto& fe = (*pair_res)[2 * p + 1];
        md.resize(count);
        fe.resize(count);
        dev.to_host(md.data(), pairs[p].max_dist.get(), count * sizeof(double));
        dev.to_host(fe.data(), pairs[p].first_exceed.get(), count * sizeof(double));
      }
      sum.compute_seconds += seconds_since(r0);
      // initial theta_dot etc. for the drift prediction
      std::vector<double> pred;
      if constexpr (has_drift) {
        pred.resize(count);
        for (int64_t i = 0; i < count; ++i)
          pred[i] = Model::DriftStatistic::prediction(nv > 0 ? params_of(pk, count, i) : run_params,
                                                      &q0[i * n], &qd0[i * n]);
      }
      sink.post([&, s, begin, end, count, results, pair_res, pred = std::move(pred)] {
        Piece p(pieces, PieceDir::slice_name(s));
        const std::vector<hsize_t> one = {H(count)};
        for (int f = 0; f < nf; ++f) {
          SliceResults& R = (*results)[f];
          const std::string& form = cfg.formulations[f];
          p.write(form + "/status", one, chunk_of(form + "/status"), gz, R.status.data());
          p.write(form + "/steps", one, chunk_of(form + "/steps"), gz, R.steps.data());
          p.write(form + "/rejected", one, chunk_of(form + "/rejected"), gz, R.rejected.data());
          p.write(form + "/fail_time", one, chunk_of(form + "/fail_time"), gz, R.fail_time.data());
          if (!R.path_residual.empty())  // the embedded formulation's residual
            p.write(form + "/euler_poisson_residual", one, chunk_of(form + "/euler_poisson_residual"),
                    gz, R.path_residual.data());
          if constexpr (has_drift) {
            std::vector<double> v(count), band(count), ratio(count);
            for (int64_t i = 0; i < count; ++i) {
              v[i] = line_fit_slope(R.line_fit.data(), count, i);
              band[i] = line_fit_range(R.line_fit.data(), count, i);
              ratio[i] = v[i] / pred[i];
            }
            const std::string sg = "statistics/" + form + "/";
            p.write(sg + "drift_velocity", one, chunk_of(sg + "drift_velocity"), gz, v.data());
            p.write(sg + "band", one, chunk_of(sg + "band"), gz, band.data());
            p.write(sg + "drift_ratio", one, chunk_of(sg + "drift_ratio"), gz, ratio.data());
          }
        }
        for (size_t q = 0; q < pair_ab.size(); ++q) {
          auto& md = (*pair_res)[2 * q];
          auto& fe = (*pair_res)[2 * q + 1];
          // a pair is undefined where either formulation failed
          const auto& sa = (*results)[pair_ab[q].first].status;
          const auto& sb = (*results)[pair_ab[q].second].status;
          for (int64_t i = 0; i < count; ++i)
            if (sa[i] != 0 || sb[i] != 0) md[i] = fe[i] = NAN;
          p.write(pair_path(q, "max_distance"), one, chunk_of(pair_path(q, "max_distance")), gz,
                  md.data());
          p.write(pair_path(q, "first_exceed_time"), one,
                  chunk_of(pair_path(q, "first_exceed_time")), gz, fe.data());
        }
        p.commit();  // the slice is finished: it is in the file
        std::ostringstream msg;
        msg << "trajectories [" << begin << ", " << end << ") finished";
        progress.message(msg.str());
      });
    }
    sink.drain();
  } catch (const DeviceFault& e) {
    // the device failed: every slice whose piece was committed is kept; the
    // rest keep the fill value not_run
    sink.drain_quietly();
    sum.fault = e.what();
    sum.interrupted = true;
  } catch (...) {
    sink.drain_quietly();
    throw;
  }

  // ---- 8. the outcome, from the pieces of the finished slices, in block order
  Outcome out;
  out.st_q.assign(nf, FieldStatistics(n_saves, n));
  out.st_qd.assign(nf, FieldStatistics(n_saves, n));
  out.drift_ratio.assign(nf, Moments());
  out.status_count.assign(static_cast<size_t>(nf) * kStatusCount, 0);
  sum.completed = sum.steps = 0;
  for (int64_t s = 0; s < n_slices; ++s) {
    const int64_t begin = s * plan.slice, count = std::min(size, begin + plan.slice) - begin;
    if (pieces.has(PieceDir::init_name(s))) {
      const h5::File fi = h5::File::open_ro(pieces.path(PieceDir::init_name(s)));
      const h5::Group r = fi.root();
      sum.completed_from_constraints += r.attr_int64("completed_from_constraints");
      sum.projected += r.attr_int64("projected");
      sum.rejected += r.attr_int64("rejected");
      sum.singular_initial += r.attr_int64("singular");
      if (r.has_attr("params_rejected")) sum.params_rejected += r.attr_int64("params_rejected");
    }
    if (!pieces.has(PieceDir::slice_name(s))) {
      for (int f = 0; f < nf; ++f)
        out.status_count[f * kStatusCount + static_cast<int>(Status::not_run)] += count;
      continue;
    }
    sum.completed += count;
    {
      const h5::File fs_ = h5::File::open_ro(pieces.path(PieceDir::slice_name(s)));
      const h5::Group r = fs_.root();
      for (int f = 0; f < nf; ++f) {
        const std::string& form = cfg.formulations[f];
        for (int32_t st : r.open_dataset(form + "/status").read<int32_t>())
          ++out.status_count[f * kStatusCount + st];
        for (int64_t k : r.open_dataset(form + "/steps").read<int64_t>()) sum.steps += k;
        if constexpr (has_drift)
          for (double x : r.open_dataset("statistics/" + form + "/drift_ratio").read<double>())
            if (std::isfinite(x)) out.drift_ratio[f].add(x);
      }
    }
    for (int64_t w = 0; w < plan.n_windows; ++w) {
      const int64_t k0 = w * plan.window, ns = std::min(n_saves, k0 + plan.window) - k0;
      const h5::File fw = h5::File::open_ro(pieces.path(PieceDir::window_name(s, w)));
      const h5::Group r = fw.root();
      for (int f = 0; f < nf; ++f)
        for (int which = 0; which < 2; ++which) {
          const std::vector<double> mom =
              r.open_dataset("statistics/" + cfg.formulations[f] +
                             (which ? "/block_moments_qdot" : "/block_moments_q"))
                  .read<double>();
          const size_t len = mom.size() / 5;
          const double* parts[5] = {mom.data(), mom.data() + len, mom.data() + 2 * len,
                                    mom.data() + 3 * len, mom.data() + 4 * len};
          (which ? out.st_qd : out.st_q)[f].add_block_moments(parts, count, k0, ns);
        }
    }
  }
  for (int f = 0; f < nf; ++f) {
    std::ostringstream line;
    line << cfg.formulations[f] << ":";
    for (int st = 0; st < kStatusCount; ++st)
      if (const int64_t c = out.status_count[f * kStatusCount + st])
        line << " " << status_name(static_cast<Status>(st)) << " " << c;
    sum.status_lines.push_back(line.str());
  }
  sum.seconds = progress.elapsed();

  if (sum.completed < size) {
    // stopped: the master again, with the statistics of the finished slices
    sum.interrupted = true;
    write_master(&out, &sum);
    return sum;
  }
  // every slice finished: the result file, assembled from the pieces
  const std::string tmp = ro.path + ".partial.assembling";
  const auto as0 = Clock::now();
  {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    h5::File ff = h5::File::create(tmp);
    {
    h5::Group root = ff.root();
    layout(root, false, &out, &sum);
    for (int64_t s = 0; s < n_slices; ++s)
      for (PieceKind kind : {PieceKind::init, PieceKind::window, PieceKind::slice})
        for (int64_t w = 0; w < (kind == PieceKind::window ? plan.n_windows : 1); ++w) {
          const h5::File pf = h5::File::open_ro(pieces.path(piece_name(kind, s, w)));
          const h5::Group pr = pf.root();
          for (const Spec& sp : specs) {
            if (sp.kind != kind || sp.master_only) continue;
            std::vector<hsize_t> off, cnt;
            spec_block(sp, plan, s, w, off, cnt);
            h5::Dataset dst = root.open_dataset(sp.path);
            h5::copy_into(pr.open_dataset(sp.path), dst, off);
          }
        }
    }  // every object closed before the file
    ff.close();
  }
  commit_file(tmp, ro.path);
  std::error_code ec;
  std::filesystem::remove(partial, ec);
  pieces.remove_all();
  sum.assembly_seconds = seconds_since(as0);
  sum.seconds = progress.elapsed();
  return sum;
}

}  // namespace nholo
