// nholo/host/runner_impl.hpp — the body of run_model<Model> (runner.hpp).
#pragma once

#include "host/runner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <sstream>

namespace nholo {

namespace detail {

// SoA window block v[(k * nc + c) * count + i] -> file block [i][k][c]
// (with the OpenMP threads of the run when `parallel`: the copy is memory-bound)
inline void soa_to_file(const std::vector<double>& v, int64_t count, int64_t ns, int nc,
                        std::vector<double>& buf, bool parallel) {
  buf.resize(static_cast<size_t>(count) * ns * nc);
  // in blocks of 64 trajectories: each block's destination (64 x ns x nc
  // doubles) stays in cache while the sources are read contiguously; the plain
  // double loop wrote one cache line per element and cost ~5x the HDF5 write
  constexpr int64_t B = 64;
  const int64_t row = ns * nc;
  const int64_t blocks = (count + B - 1) / B;
#pragma omp parallel for schedule(static) if (parallel && blocks > 16)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t i0 = blk * B;
    const int64_t i1 = i0 + B < count ? i0 + B : count;
    for (int64_t kc = 0; kc < row; ++kc) {
      const double* src = v.data() + kc * count;
      double* dst = buf.data() + kc;
      for (int64_t i = i0; i < i1; ++i) dst[i * row] = src[i];
    }
  }
}

// The datasets of one formulation's group.
struct OutputGroup {
  h5::Group g;
  h5::Dataset traj, time, coord, cons;
  std::map<std::string, h5::Dataset> fields;
  h5::Dataset status, steps, rejected, fail_time;
};

// Running comparison of two formulations over the current slice.
struct FormulationPair {
  int a, b;
  std::vector<double> max_dist, first_exceed;
};

inline bool wants(const RunConfig& cfg, const std::string& f) {
  return std::find(cfg.fields.begin(), cfg.fields.end(), f) != cfg.fields.end();
}

}  // namespace detail

template <class Model>
RunSummary run_model(const RunConfig& cfg, const RunOptions& ro, h5::Group& root) {
  constexpr int n = Model::n;
  constexpr int m = constraint_count<Model>();
  const ModelInfo& mi = *find_model(Model::name);
  const auto params = params_from_config<Model>(cfg);
  const Backend backend = cfg.device == "cpp" ? Backend::cpp : cfg.device == "cuda" ? Backend::cuda : Backend::omp;
  const int64_t size = cfg.size;
  const int nf = static_cast<int>(cfg.formulations.size());
  const int64_t n_saves = static_cast<int64_t>(cfg.save_times.size());
  const int W = static_cast<int>(std::min<int64_t>(cfg.window, n_saves));
  const int64_t n_windows = (n_saves + W - 1) / W;
  const int gz = cfg.compression;  // deflate level of every per-trajectory dataset (0: none)
  RunSummary sum;
  sum.trajectories = size;

  // slice size from the memory budget
  const double per_traj = nf * ((2.0 * n + m + 6) * 8 + W * 8.0 * (6 * n + m + 2)) + W * 8.0 * n +
                          64.0 * (n + m);
  int64_t slice = static_cast<int64_t>(cfg.memory_budget_mb * 1048576.0 / per_traj);
  slice = std::max<int64_t>(kStatBlock, slice / kStatBlock * kStatBlock);
  slice = std::min(slice, size);

  // which observables the kernels compute (q, qdot always: statistics, comparisons)
  OutputSelection sel;
  sel.q = sel.qdot = true;
  sel.qddot = detail::wants(cfg, "qddot");
  sel.force_ideal = detail::wants(cfg, "force_ideal");
  sel.force_nonideal = detail::wants(cfg, "force_nonideal");
  sel.multiplier = detail::wants(cfg, "multiplier");
  sel.constraint_residual = detail::wants(cfg, "constraint_residual");
  sel.energy = detail::wants(cfg, "energy");

  // ---- file layout
  const auto H = [](int64_t v) { return static_cast<hsize_t>(v); };
  std::vector<int64_t> traj_index(size);
  for (int64_t i = 0; i < size; ++i) traj_index[i] = i;
  const hsize_t chunk_t = std::min<hsize_t>(H(size), 1024), chunk_k = std::min<hsize_t>(H(n_saves), H(W));
  std::vector<detail::OutputGroup> groups(nf);
  for (int f = 0; f < nf; ++f) {
    detail::OutputGroup& G = groups[f];
    G.g = root.create_group(cfg.formulations[f]);
    G.g.set_attr("formulation", cfg.formulations[f]);
    G.traj = h5::dimension(G.g, "trajectory", traj_index);
    G.time = h5::dimension(G.g, "time", cfg.save_times);
    G.coord = h5::dimension(G.g, "coordinate", mi.coordinates);
    G.cons = h5::dimension(G.g, "constraint", mi.constraints);
    for (const auto& fname : cfg.fields) {
      const bool per_coord = fname == "q" || fname == "qdot" || fname == "qddot" ||
                             fname == "force_ideal" || fname == "force_nonideal";
      const bool per_cons = fname == "multiplier";
      std::vector<hsize_t> dims = {H(size), H(n_saves)};
      std::vector<hsize_t> chunk = {chunk_t, chunk_k};
      if (per_coord || per_cons) {
        dims.push_back(per_coord ? H(n) : H(m));
        chunk.push_back(per_coord ? H(n) : H(m));
      }
      h5::Dataset d = G.g.create_dataset<double>(fname, dims, chunk, gz, gz > 0);
      d.attach_scale(G.traj, 0);
      d.attach_scale(G.time, 1);
      if (per_coord) d.attach_scale(G.coord, 2);
      if (per_cons) d.attach_scale(G.cons, 2);
      G.fields.emplace(fname, std::move(d));
    }
    G.status = G.g.create_dataset<int32_t>("status", {H(size)}, {chunk_t}, gz, gz > 0,
                                           static_cast<int32_t>(Status::not_run));
    G.steps = G.g.create_dataset<int64_t>("steps", {H(size)}, {chunk_t}, gz, gz > 0);
    G.rejected = G.g.create_dataset<int64_t>("rejected", {H(size)}, {chunk_t}, gz, gz > 0);
    G.fail_time = G.g.create_dataset<double>("fail_time", {H(size)}, {chunk_t}, gz, gz > 0);
    for (auto* d : {&G.status, &G.steps, &G.rejected, &G.fail_time}) d->attach_scale(G.traj, 0);
    std::vector<std::string> names;
    for (int s = 0; s < kStatusCount; ++s) names.push_back(status_name(static_cast<Status>(s)));
    G.status.set_attr("flag_meanings", join(names, " "));
    G.status.set_attr("flag_values", std::vector<double>{0, 1, 2, 3, 4, 5, 6});
  }
  h5::Group init = root.create_group("initial");
  h5::Dataset itraj = h5::dimension(init, "trajectory", traj_index);
  h5::Dataset icoord = h5::dimension(init, "coordinate", mi.coordinates);
  h5::Dataset icons = h5::dimension(init, "constraint", mi.constraints);
  h5::Dataset d_q0 = init.create_dataset<double>("q0", {H(size), H(n)}, {chunk_t, H(n)}, gz, gz > 0);
  h5::Dataset d_qd0 = init.create_dataset<double>("qdot0", {H(size), H(n)}, {chunk_t, H(n)}, gz, gz > 0);
  h5::Dataset d_l0 = init.create_dataset<double>("lambda0", {H(size), H(m)}, {chunk_t, H(m)}, gz, gz > 0);
  for (auto* d : {&d_q0, &d_qd0}) {
    d->attach_scale(itraj, 0);
    d->attach_scale(icoord, 1);
  }
  d_l0.attach_scale(itraj, 0);
  d_l0.attach_scale(icons, 1);

  // ---- statistics and comparisons
  std::vector<FieldStatistics> st_q, st_qd;
  for (int f = 0; f < nf; ++f) {
    st_q.emplace_back(n_saves, n);
    st_qd.emplace_back(n_saves, n);
  }
  constexpr bool is_coin = std::is_same<Model, models::RollingCoin>::value;
  std::vector<DriftAccumulator> drift(nf);
  std::vector<std::vector<double>> drift_v(nf), band(nf), ratio(nf);
  using Pair = detail::FormulationPair;
  std::vector<Pair> pairs;
  for (int a = 0; a < nf; ++a)
    for (int b = a + 1; b < nf; ++b) pairs.push_back({a, b, {}, {}});
  std::vector<h5::Group> pair_groups;
  std::vector<h5::Dataset> pair_max, pair_first;
  for (auto& P : pairs) {
    h5::Group g = root.create_group("compare/" + cfg.formulations[P.a] + "__" + cfg.formulations[P.b]);
    g.set_attr("formulation_a", cfg.formulations[P.a]);
    g.set_attr("formulation_b", cfg.formulations[P.b]);
    g.set_attr("threshold", cfg.compare_threshold);
    h5::Dataset tr = h5::dimension(g, "trajectory", traj_index);
    pair_max.push_back(g.create_dataset<double>("max_distance", {H(size)}, {chunk_t}, gz, gz > 0));
    pair_first.push_back(g.create_dataset<double>("first_exceed_time", {H(size)}, {chunk_t}, gz, gz > 0));
    pair_max.back().attach_scale(tr, 0);
    pair_first.back().attach_scale(tr, 0);
    pair_max.back().set_attr("long_name", "max over saves of |q_a - q_b|_2");
    pair_first.back().set_attr("long_name", "first save time with |q_a - q_b|_2 > threshold (NaN: never)");
    pair_groups.push_back(std::move(g));
  }

  // ---- formulations
  std::vector<std::unique_ptr<FormulationRunner>> runners;
  for (const auto& f : cfg.formulations) runners.push_back(make_formulation<Model>(f, cfg, backend));

  Sampler sampler(cfg, mi);
  bool q_given[n], qd_given[n];
  for (int c = 0; c < n; ++c) {
    q_given[c] = sampler.q_given[c];
    qd_given[c] = sampler.qd_given[c];
  }
  bool any_free = false;
  for (int c = 0; c < n; ++c) any_free = any_free || !q_given[c] || !qd_given[c];
  const double t0 = cfg.t_start;
  std::vector<int64_t> status_count(static_cast<size_t>(nf) * kStatusCount, 0);
  Progress progress(size * n_windows * nf, ro.quiet, ro.tty, static_cast<double>(n_windows * nf));
  int64_t done_units = 0, reached = 0;
  std::vector<double> q0, qd0, l0, buf;
  std::vector<uint8_t> rejected;

  for (int64_t begin = 0; begin < size && !sum.interrupted; begin += slice) {
    const int64_t end = std::min(size, begin + slice), count = end - begin;
    // initial states: sample, complete from the constraints, check
    sampler.fill(begin, end, q0, qd0, l0);
    rejected.assign(count, 0);
    for (int64_t i = 0; i < count; ++i) {
      Vec<double, n> q, qd;
      for (int c = 0; c < n; ++c) {
        q[c] = q0[i * n + c];
        qd[c] = qd0[i * n + c];
      }
      ConsistencyResult<double> r{0.0, true};
      if constexpr (m > 0) {
        r = complete_state<Model, double>(params, q, q_given, qd, qd_given, t0);
        if (any_free && r.converged) ++sum.completed_from_constraints;
        if (!r.converged) {
          if (cfg.on_violation == "error") {
            std::ostringstream os;
            os << "trajectory " << (begin + i) << ": initial state violates the constraints "
               << "(residual " << r.residual << ") and on_violation = \"error\" (accepted: "
               << "project, reject, error)";
            throw ConfigError("ensemble.on_violation", os.str());
          }
          if (cfg.on_violation == "project") {
            r = project_state<Model, double>(params, q, qd, t0);
            if (r.converged) ++sum.projected;
          }
          if (!r.converged) {
            rejected[i] = 1;
            ++sum.rejected;
          }
        }
      }
      for (int c = 0; c < n; ++c) {
        q0[i * n + c] = q[c];
        qd0[i * n + c] = qd[c];
      }
    }
    d_q0.write_block({H(begin), 0}, {H(count), H(n)}, q0.data());
    d_qd0.write_block({H(begin), 0}, {H(count), H(n)}, qd0.data());
    d_l0.write_block({H(begin), 0}, {H(count), H(m)}, l0.data());
    for (auto& r : runners) r->start_slice(count, q0, qd0, l0, rejected, t0);
    for (int f = 0; f < nf; ++f) drift[f].reset(count, 0.5 * (cfg.t_start + cfg.t_end));
    for (auto& P : pairs) {
      P.max_dist.assign(count, 0.0);
      P.first_exceed.assign(count, NAN);
    }

    bool slice_complete = true;
    for (int64_t w = 0; w < n_windows; ++w) {
      if (interrupt_flag().load()) {
        sum.interrupted = true;
        slice_complete = false;
        break;
      }
      const int64_t k0 = w * W, k1 = std::min(n_saves, k0 + W), ns = k1 - k0;
      const std::vector<double> saves(cfg.save_times.begin() + k0, cfg.save_times.begin() + k1);
      // index of component c (of nc) of save k of trajectory i in a window's field
      auto at = [&](bool tm, int64_t k, int c, int nc, int64_t i) {
        return tm ? (i * ns + k) * nc + c : (k * nc + c) * count + i;
      };
      for (int f = 0; f < nf; ++f) {
        FormulationRunner& R = *runners[f];
        R.run_window(saves, sel);
        const auto out_start = std::chrono::steady_clock::now();
        for (auto& [fname, ds] : groups[f].fields) {
          const bool per_coord = fname == "q" || fname == "qdot" || fname == "qddot" ||
                                 fname == "force_ideal" || fname == "force_nonideal";
          const int nc = per_coord ? n : fname == "multiplier" ? m : 1;
          // CPU backends store the file's order already; CUDA's SoA is transposed here
          const double* data = R.field(fname).data();
          if (!R.trajectory_major()) {
            detail::soa_to_file(R.field(fname), count, ns, nc, buf, backend == Backend::omp);
            data = buf.data();
          }
          if (nc == 1 && fname != "multiplier")
            ds.write_block({H(begin), H(k0)}, {H(count), H(ns)}, data);
          else
            ds.write_block({H(begin), H(k0), 0}, {H(count), H(ns), H(nc)}, data);
          sum.output_bytes += count * ns * nc * static_cast<int64_t>(sizeof(double));
        }
        sum.output_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - out_start).count();
        const bool tm = R.trajectory_major();
        st_q[f].add_window(R.field("q"), count, k0, ns, tm);
        st_qd[f].add_window(R.field("qdot"), count, k0, ns, tm);
        if constexpr (is_coin) {
          const auto& q = R.field("q");
          for (int64_t k = 0; k < ns; ++k)
            for (int64_t i = 0; i < count; ++i)
              drift[f].add(i, saves[k], q[at(tm, k, 0, n, i)], q[at(tm, k, 1, n, i)]);
        }
        done_units += count;
        std::ostringstream what;
        what << (begin + count) << "/" << size << " traj, window " << (w + 1) << "/" << n_windows;
        progress.update(done_units, what.str());
      }
      // pairwise distances between formulations
      for (auto& P : pairs) {
        const auto& qa = runners[P.a]->field("q");
        const auto& qb = runners[P.b]->field("q");
        const bool ta = runners[P.a]->trajectory_major(), tb = runners[P.b]->trajectory_major();
        for (int64_t k = 0; k < ns; ++k)
          for (int64_t i = 0; i < count; ++i) {
            double d2 = 0;
            for (int c = 0; c < n; ++c) {
              const double d = qa[at(ta, k, c, n, i)] - qb[at(tb, k, c, n, i)];
              d2 += d * d;
            }
            const double d = std::sqrt(d2);
            if (std::isnan(d)) continue;
            P.max_dist[i] = std::max(P.max_dist[i], d);
            if (d > cfg.compare_threshold && std::isnan(P.first_exceed[i])) P.first_exceed[i] = saves[k];
          }
      }
    }
    // per-slice results
    for (int f = 0; f < nf; ++f) {
      FormulationRunner& R = *runners[f];
      std::vector<int32_t> st = R.status();
      if (!slice_complete)
        for (auto& s : st) s = static_cast<int32_t>(Status::not_run);
      for (int64_t i = 0; i < count; ++i) ++status_count[f * kStatusCount + st[i]];
      groups[f].status.write_block({H(begin)}, {H(count)}, st.data());
      groups[f].steps.write_block({H(begin)}, {H(count)}, R.steps().data());
      groups[f].rejected.write_block({H(begin)}, {H(count)}, R.rejected_steps().data());
      groups[f].fail_time.write_block({H(begin)}, {H(count)}, R.fail_time().data());
      st_q[f].end_slice();
      st_qd[f].end_slice();
      if constexpr (is_coin) {
        for (int64_t i = 0; i < count; ++i) {
          const double v = drift[f].slope(i);
          const double pred = cfg.params.at("g") * std::sin(cfg.params.at("slope")) / (3.0 * qd0[i * n + 3]);
          drift_v[f].push_back(slice_complete ? v : NAN);
          band[f].push_back(slice_complete ? drift[f].band(i) : NAN);
          ratio[f].push_back(slice_complete ? v / pred : NAN);
        }
      }
    }
    for (size_t p = 0; p < pairs.size(); ++p) {
      // a pair is undefined where either formulation failed
      const auto& sa = runners[pairs[p].a]->status();
      const auto& sb = runners[pairs[p].b]->status();
      for (int64_t i = 0; i < count; ++i)
        if (sa[i] != 0 || sb[i] != 0) {
          pairs[p].max_dist[i] = NAN;
          pairs[p].first_exceed[i] = NAN;
        }
      if (!slice_complete) {
        std::fill(pairs[p].max_dist.begin(), pairs[p].max_dist.end(), NAN);
        std::fill(pairs[p].first_exceed.begin(), pairs[p].first_exceed.end(), NAN);
      }
      pair_max[p].write_block({H(begin)}, {H(count)}, pairs[p].max_dist.data());
      pair_first[p].write_block({H(begin)}, {H(count)}, pairs[p].first_exceed.data());
    }
    if (slice_complete) {
      sum.completed += count;
      std::ostringstream msg;
      msg << "trajectories [" << begin << ", " << end << ") finished";
      progress.message(msg.str());
    }
    reached = end;
  }
  // trajectories never reached keep the fill value not_run
  for (int f = 0; f < nf; ++f)
    status_count[f * kStatusCount + static_cast<int>(Status::not_run)] += size - reached;

  // ---- statistics
  for (int f = 0; f < nf; ++f) {
    h5::Group sg = root.create_group("statistics/" + cfg.formulations[f]);
    h5::Dataset st_time = h5::dimension(sg, "time", cfg.save_times);
    h5::Dataset st_coord = h5::dimension(sg, "coordinate", mi.coordinates);
    auto put = [&](const std::string& name, const FieldStatistics& fs, auto getter) {
      std::vector<double> v(static_cast<size_t>(n_saves) * n);
      for (int64_t k = 0; k < n_saves; ++k)
        for (int c = 0; c < n; ++c) v[k * n + c] = getter(fs.at(k, c));
      h5::Dataset d = sg.create_dataset<double>(name, {H(n_saves), H(n)});
      d.write(v.data());
      d.attach_scale(st_time, 0);
      d.attach_scale(st_coord, 1);
    };
    for (auto [prefix, fs] : {std::pair<std::string, FieldStatistics*>{"", &st_q[f]},
                              std::pair<std::string, FieldStatistics*>{"qdot_", &st_qd[f]}}) {
      put(prefix + "mean", *fs, [](const Moments& mo) { return mo.count ? mo.mean : NAN; });
      put(prefix + "variance", *fs, [](const Moments& mo) { return mo.variance(); });
      put(prefix + "min", *fs, [](const Moments& mo) { return mo.count ? mo.min : NAN; });
      put(prefix + "max", *fs, [](const Moments& mo) { return mo.count ? mo.max : NAN; });
    }
    {
      std::vector<double> cnt(n_saves);
      for (int64_t k = 0; k < n_saves; ++k) cnt[k] = st_q[f].at(k, 0).count;
      h5::Dataset d = sg.create_dataset<double>("count", {H(n_saves)});
      d.write(cnt.data());
      d.attach_scale(st_time, 0);
    }
    std::ostringstream line;
    line << cfg.formulations[f] << ":";
    for (int s = 0; s < kStatusCount; ++s) {
      const int64_t c = status_count[f * kStatusCount + s];
      sg.set_attr(std::string("status_") + status_name(static_cast<Status>(s)), c);
      if (c) line << " " << status_name(static_cast<Status>(s)) << " " << c;
    }
    sum.status_lines.push_back(line.str());
    if constexpr (is_coin) {
      h5::Dataset st_traj = h5::dimension(sg, "trajectory", traj_index);
      auto put_traj = [&](const std::string& name, const std::vector<double>& v, const std::string& doc) {
        std::vector<double> full(size, NAN);
        std::copy(v.begin(), v.end(), full.begin());
        h5::Dataset d = sg.create_dataset<double>(name, {H(size)}, {chunk_t}, gz, gz > 0);
        d.write(full.data());
        d.attach_scale(st_traj, 0);
        d.set_attr("long_name", doc);
      };
      put_traj("drift_velocity", drift_v[f], "least-squares slope of x(t) (horizontal drift)");
      put_traj("band", band[f], "max y - min y over the saves (downslope band)");
      put_traj("drift_ratio", ratio[f], "drift_velocity / (g sin(slope) / (3 theta_dot))");
      Moments mr;
      for (double r : ratio[f])
        if (std::isfinite(r)) mr.add(r);
      sg.set_attr("drift_ratio_mean", mr.count ? mr.mean : NAN);
      sg.set_attr("drift_ratio_std", std::sqrt(mr.variance()));
      sg.set_attr("drift_prediction", "g sin(slope) / (3 theta_dot)  (PHYSICS.md item 10)");
    }
  }
  sum.seconds = progress.elapsed();
  return sum;
}

}  // namespace nholo
