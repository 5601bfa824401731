// nholo/host/runner_impl.hpp — the body of run_model<Model> (runner.hpp): the
// stages of a run, each a small type with one job, then the loop that drives
// them.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <sstream>

#include "host/output_sink.hpp"
#include "host/runner.hpp"

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

// ---- 1. slice plan
struct SlicePlan {
  int64_t size = 0, slice = 0;
  int window = 1;
  int64_t n_saves = 0, n_windows = 0;
};

inline SlicePlan plan_slices(const RunConfig& cfg, const Device& dev, int n, int m, int N) {
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
  const double host = (2.0 * n + m + N + 2) * 8 +
                      nf * ((N + 8) * 8 + 2 * W * fields * 8 + 2 * W * n * 8 + 7 * 8 + 40) +
                      pairs * 16;
  // device bytes (CUDA): state, every observable of a window (SoA), two
  // staging copies in the file layout, fit sums; pair sums
  const double device =
      nf * ((N + 8) * 8 + W * (3.0 * n + m + 2) * 8 + 2 * W * fields * 8 + 7 * 8) + pairs * 16;
  int64_t slice = static_cast<int64_t>(cfg.memory_budget_mb * 1048576.0 / host);
  if (dev.usable_memory() > 0)
    slice = std::min<int64_t>(slice, static_cast<int64_t>(dev.usable_memory() / device));
  slice = std::max<int64_t>(kStatBlock, slice / kStatBlock * kStatBlock);
  p.slice = std::min(slice, p.size);
  return p;
}

// ---- 2. output layout: the datasets of the file
struct FormulationOutput {
  h5::Group g;
  h5::Dataset traj;
  std::vector<h5::Dataset> fields;  // as cfg.fields
  h5::Dataset status, steps, rejected, fail_time;
};
struct PairOutput {
  int a, b;
  h5::Dataset traj, max_distance, first_exceed;
};
struct InitialOutput {
  h5::Dataset traj, q0, qd0, l0;
};

// A trajectory index scale written slice by slice (no ensemble-sized array).
inline h5::Dataset trajectory_dimension(h5::Group& g, int64_t size, hsize_t chunk, int gz) {
  h5::Dataset d = g.create_dataset<int64_t>("trajectory", {H(size)}, {chunk}, gz, gz > 0);
  d.make_scale("trajectory");
  return d;
}

// ---- 5/6. reducers on the host side: block moments folded in block order
// (statistics), pair accumulators, the model's drift statistic.
struct PairState {
  int a, b;
  DeviceArray max_dist, first_exceed;
};

}  // namespace detail

template <class Model>
RunSummary run_model(const RunConfig& cfg, const RunOptions& ro, h5::Group& root, Device& dev) {
  using namespace detail;
  constexpr int n = Model::n;
  constexpr int m = constraint_count<Model>();
  constexpr int N = 2 * n + m;  // upper bound of any formulation's state
  constexpr bool has_drift = has_drift_statistic<Model>::value;
  const ModelInfo& mi = *find_model(Model::name);
  const auto params = params_from_config<Model>(cfg);
  const int nf = static_cast<int>(cfg.formulations.size());
  const int gz = cfg.compression;  // deflate level of every per-trajectory dataset (0: none)
  RunSummary sum;
  sum.trajectories = cfg.size;

  // ---- 1. slice plan
  const SlicePlan plan = plan_slices(cfg, dev, n, m, N);
  const int64_t size = plan.size, n_saves = plan.n_saves;
  sum.slice_size = plan.slice;
  const hsize_t chunk_t = std::min<hsize_t>(H(size), 1024);
  const hsize_t chunk_k = std::min<hsize_t>(H(n_saves), H(plan.window));

  // ---- 2. output layout
  std::vector<FormulationOutput> fout(nf);
  for (int f = 0; f < nf; ++f) {
    FormulationOutput& G = fout[f];
    G.g = root.create_group(cfg.formulations[f]);
    G.g.set_attr("formulation", cfg.formulations[f]);
    G.traj = trajectory_dimension(G.g, size, chunk_t, gz);
    h5::Dataset time = h5::dimension(G.g, "time", cfg.save_times);
    h5::Dataset coord = h5::dimension(G.g, "coordinate", mi.coordinates);
    h5::Dataset cons = h5::dimension(G.g, "constraint", mi.constraints);
    for (const auto& fname : cfg.fields) {
      const int nc = field_components(fname, n, m);
      const bool per_coord =
          nc == n && fname != "multiplier" && fname != "constraint_residual" && fname != "energy";
      const bool per_cons = fname == "multiplier";
      std::vector<hsize_t> dims = {H(size), H(n_saves)};
      std::vector<hsize_t> chunk = {chunk_t, chunk_k};
      if (per_coord || per_cons) {
        dims.push_back(per_coord ? H(n) : H(m));
        chunk.push_back(per_coord ? H(n) : H(m));
      }
      h5::Dataset d = G.g.create_dataset<double>(fname, dims, chunk, gz, gz > 0);
      d.attach_scale(G.traj, 0);
      d.attach_scale(time, 1);
      if (per_coord) d.attach_scale(coord, 2);
      if (per_cons) d.attach_scale(cons, 2);
      G.fields.push_back(std::move(d));
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
  InitialOutput iout;
  {
    h5::Group init = root.create_group("initial");
    iout.traj = trajectory_dimension(init, size, chunk_t, gz);
    h5::Dataset icoord = h5::dimension(init, "coordinate", mi.coordinates);
    h5::Dataset icons = h5::dimension(init, "constraint", mi.constraints);
    iout.q0 = init.create_dataset<double>("q0", {H(size), H(n)}, {chunk_t, H(n)}, gz, gz > 0);
    iout.qd0 = init.create_dataset<double>("qdot0", {H(size), H(n)}, {chunk_t, H(n)}, gz, gz > 0);
    iout.l0 = init.create_dataset<double>("lambda0", {H(size), H(m)}, {chunk_t, H(m)}, gz, gz > 0);
    for (auto* d : {&iout.q0, &iout.qd0}) {
      d->attach_scale(iout.traj, 0);
      d->attach_scale(icoord, 1);
    }
    iout.l0.attach_scale(iout.traj, 0);
    iout.l0.attach_scale(icons, 1);
  }
  std::vector<PairOutput> pout;
  for (int a = 0; a < nf; ++a)
    for (int b = a + 1; b < nf; ++b) {
      h5::Group g =
          root.create_group("compare/" + cfg.formulations[a] + "__" + cfg.formulations[b]);
      g.set_attr("formulation_a", cfg.formulations[a]);
      g.set_attr("formulation_b", cfg.formulations[b]);
      g.set_attr("threshold", cfg.compare_threshold);
      PairOutput P{a, b, trajectory_dimension(g, size, chunk_t, gz), {}, {}};
      P.max_distance = g.create_dataset<double>("max_distance", {H(size)}, {chunk_t}, gz, gz > 0);
      P.first_exceed =
          g.create_dataset<double>("first_exceed_time", {H(size)}, {chunk_t}, gz, gz > 0);
      P.max_distance.attach_scale(P.traj, 0);
      P.first_exceed.attach_scale(P.traj, 0);
      P.max_distance.set_attr("long_name", "max over saves of |q_a - q_b|_2");
      P.first_exceed.set_attr("long_name",
                              "first save time with |q_a - q_b|_2 > threshold (NaN: never)");
      pout.push_back(std::move(P));
    }
  // the model's drift statistic, per trajectory, streamed slice by slice
  struct DriftOutput {
    h5::Dataset traj, velocity, band, ratio;
  };
  std::vector<DriftOutput> dout(has_drift ? nf : 0);
  for (auto& D : dout) {
    const size_t f = &D - dout.data();
    h5::Group sg = root.create_group("statistics/" + cfg.formulations[f]);
    D.traj = trajectory_dimension(sg, size, chunk_t, gz);
    D.velocity = sg.create_dataset<double>("drift_velocity", {H(size)}, {chunk_t}, gz, gz > 0);
    D.band = sg.create_dataset<double>("band", {H(size)}, {chunk_t}, gz, gz > 0);
    D.ratio = sg.create_dataset<double>("drift_ratio", {H(size)}, {chunk_t}, gz, gz > 0);
    D.velocity.set_attr("long_name", "least-squares slope of x(t) (horizontal drift)");
    D.band.set_attr("long_name", "max y - min y over the saves (downslope band)");
    D.ratio.set_attr("long_name",
                     "drift_velocity / prediction (statistics group attribute drift_prediction)");
    for (auto* d : {&D.velocity, &D.band, &D.ratio}) d->attach_scale(D.traj, 0);
  }

  // ---- 3. device ensembles (state allocated once, for the largest slice)
  EnsembleLayout layout;
  layout.max_count = plan.slice;
  layout.window = plan.window;
  layout.fields = cfg.fields;
  for (const auto& f : cfg.fields) layout.components.push_back(field_components(f, n, m));
  auto wants = [&](const char* f) {
    return std::find(cfg.fields.begin(), cfg.fields.end(), f) != cfg.fields.end();
  };
  layout.stop = &interrupt_flag();
  layout.sel.q = layout.sel.qdot = true;
  layout.sel.qddot = wants("qddot");
  layout.sel.force_ideal = wants("force_ideal");
  layout.sel.force_nonideal = wants("force_nonideal");
  layout.sel.multiplier = wants("multiplier");
  layout.sel.constraint_residual = wants("constraint_residual");
  layout.sel.energy = wants("energy");
  if constexpr (has_drift) {
    layout.line_fit = true;
    layout.fit_x = Model::DriftStatistic::drift_coordinate;
    layout.fit_y = Model::DriftStatistic::band_coordinate;
    layout.t_mid = 0.5 * (cfg.t_start + cfg.t_end);
  }
  dev.set_save_times(cfg.save_times);
  std::vector<std::unique_ptr<DeviceEnsemble>> ens;
  for (const auto& f : cfg.formulations)
    ens.push_back(make_formulation<Model>(f, cfg, dev, layout));
  std::vector<PairState> pairs;
  for (const auto& P : pout)
    pairs.push_back({P.a, P.b, DeviceArray(dev, plan.slice), DeviceArray(dev, plan.slice)});

  // ---- reducers folded on the writer thread, in block order
  std::vector<FieldStatistics> st_q, st_qd;
  for (int f = 0; f < nf; ++f) {
    st_q.emplace_back(n_saves, n);
    st_qd.emplace_back(n_saves, n);
  }
  std::vector<Moments> drift_ratio_moments(nf);
  std::vector<int64_t> status_count(static_cast<size_t>(nf) * kStatusCount, 0);

  // ---- 4. initial states
  Sampler sampler(cfg, mi);
  bool q_given[n], qd_given[n];
  bool any_free = false;
  for (int c = 0; c < n; ++c) {
    q_given[c] = sampler.q_given[c];
    qd_given[c] = sampler.qd_given[c];
    any_free = any_free || !q_given[c] || !qd_given[c];
  }
  const double t0 = cfg.t_start;
  auto initial_states = [&](int64_t begin, int64_t count, std::vector<double>& q0,
                            std::vector<double>& qd0, std::vector<double>& l0,
                            std::vector<uint8_t>& rejected) {
    sampler.fill(begin, begin + count, q0, qd0, l0);
    rejected.assign(count, 0);
    for (int64_t i = 0; i < count; ++i) {
      // an interrupt during setup: stop completing (the slice will not run)
      if (i % 4096 == 0 && interrupt_flag().load()) return;
      Vec<double, n> q, qd;
      for (int c = 0; c < n; ++c) {
        q[c] = q0[i * n + c];
        qd[c] = qd0[i * n + c];
      }
      if constexpr (m > 0) {
        ConsistencyResult<double> r =
            complete_state<Model, double>(params, q, q_given, qd, qd_given, t0);
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
  };

  // ---- 7. the output sink (writer thread)
  OutputSink sink(true);
  Progress progress(size * plan.n_windows * nf, ro.quiet, ro.tty,
                    static_cast<double>(plan.n_windows * nf));
  int64_t done_units = 0, reached = 0;
  int64_t written_end =
      0;  // trajectories [0, written_end) have their results in the file (writer thread)
  std::vector<double> q0, qd0, l0;
  std::vector<uint8_t> rejected;
  int64_t window_counter = 0;  // selects the host slot (double buffering)

  try {
    for (int64_t begin = 0; begin < size && !sum.interrupted; begin += plan.slice) {
      const int64_t end = std::min(size, begin + plan.slice), count = end - begin;
      // 4. initial states of the slice, written by the sink
      initial_states(begin, count, q0, qd0, l0, rejected);
      sink.post([&iout, begin, count, q0, qd0, l0] {
        std::vector<int64_t> idx(count);
        for (int64_t i = 0; i < count; ++i) idx[i] = begin + i;
        iout.traj.write_block({H(begin)}, {H(count)}, idx.data());
        iout.q0.write_block({H(begin), 0}, {H(count), H(n)}, q0.data());
        iout.qd0.write_block({H(begin), 0}, {H(count), H(n)}, qd0.data());
        iout.l0.write_block({H(begin), 0}, {H(count), H(m)}, l0.data());
      });
      const auto c0 = Clock::now();
      for (auto& e : ens)
        e->start_slice(count, q0.data(), qd0.data(), l0.data(), rejected.data(), t0);
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
        // 7. the writer: wait for the slot's data, write the fields, fold the statistics
        sink.post([&, slot, begin, count, k0, ns] {
          const auto o0 = Clock::now();
          for (int f = 0; f < nf; ++f) {
            ens[f]->wait(slot);
            const WindowSlot& S = ens[f]->slot(slot);
            for (size_t j = 0; j < cfg.fields.size(); ++j) {
              const int nc = layout.components[j];
              if (nc == 1 && cfg.fields[j] != "multiplier")
                fout[f].fields[j].write_block({H(begin), H(k0)}, {H(count), H(ns)}, S.fields[j]);
              else
                fout[f].fields[j].write_block({H(begin), H(k0), 0}, {H(count), H(ns), H(nc)},
                                              S.fields[j]);
              sum.output_bytes += count * ns * nc * static_cast<int64_t>(sizeof(double));
            }
            st_q[f].add_block_moments(S.moments[0], count, k0, ns);
            st_qd[f].add_block_moments(S.moments[1], count, k0, ns);
          }
          sum.output_seconds += seconds_since(o0);
          sink.release(slot);
        });
        done_units += count * nf;
        std::ostringstream what;
        what << end << "/" << size << " traj, window " << (w + 1) << "/" << plan.n_windows;
        progress.update(done_units, what.str());
      }

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
          pred[i] = Model::DriftStatistic::prediction(params, &q0[i * n], &qd0[i * n]);
      }
      sink.post([&, begin, count, slice_complete, results, pair_res, pred = std::move(pred)] {
        std::vector<int64_t> idx(count);
        for (int64_t i = 0; i < count; ++i) idx[i] = begin + i;
        for (int f = 0; f < nf; ++f) {
          SliceResults& R = (*results)[f];
          if (!slice_complete)
            for (auto& s : R.status) s = static_cast<int32_t>(Status::not_run);
          for (int64_t i = 0; i < count; ++i) {
            ++status_count[f * kStatusCount + R.status[i]];
            sum.steps += R.steps[i];
          }
          fout[f].traj.write_block({H(begin)}, {H(count)}, idx.data());
          fout[f].status.write_block({H(begin)}, {H(count)}, R.status.data());
          fout[f].steps.write_block({H(begin)}, {H(count)}, R.steps.data());
          fout[f].rejected.write_block({H(begin)}, {H(count)}, R.rejected.data());
          fout[f].fail_time.write_block({H(begin)}, {H(count)}, R.fail_time.data());
          if constexpr (has_drift) {
            std::vector<double> v(count), band(count), ratio(count);
            for (int64_t i = 0; i < count; ++i) {
              v[i] = slice_complete ? line_fit_slope(R.line_fit.data(), count, i) : NAN;
              band[i] = slice_complete ? line_fit_range(R.line_fit.data(), count, i) : NAN;
              ratio[i] = slice_complete ? v[i] / pred[i] : NAN;
              if (std::isfinite(ratio[i])) drift_ratio_moments[f].add(ratio[i]);
            }
            dout[f].traj.write_block({H(begin)}, {H(count)}, idx.data());
            dout[f].velocity.write_block({H(begin)}, {H(count)}, v.data());
            dout[f].band.write_block({H(begin)}, {H(count)}, band.data());
            dout[f].ratio.write_block({H(begin)}, {H(count)}, ratio.data());
          }
        }
        for (size_t p = 0; p < pout.size(); ++p) {
          auto& md = (*pair_res)[2 * p];
          auto& fe = (*pair_res)[2 * p + 1];
          // a pair is undefined where either formulation failed
          const auto& sa = (*results)[pout[p].a].status;
          const auto& sb = (*results)[pout[p].b].status;
          for (int64_t i = 0; i < count; ++i)
            if (sa[i] != 0 || sb[i] != 0 || !slice_complete) md[i] = fe[i] = NAN;
          pout[p].traj.write_block({H(begin)}, {H(count)}, idx.data());
          pout[p].max_distance.write_block({H(begin)}, {H(count)}, md.data());
          pout[p].first_exceed.write_block({H(begin)}, {H(count)}, fe.data());
        }
        // the slice is in the file (counted here, on the writer thread, so
        // that a device fault seen later counts only what was written)
        if (slice_complete) sum.completed += count;
        written_end = begin + count;
      });
      if (slice_complete) {
        std::ostringstream msg;
        msg << "trajectories [" << begin << ", " << end << ") finished";
        progress.message(msg.str());
      }
      reached = end;
    }
    sink.drain();
  } catch (const DeviceFault& e) {
    // the device failed: keep every slice whose results reached the file;
    // the rest keep the fill value not_run (the writer may have been a slice
    // behind the device, so this is the writer's count, not the loop's)
    sink.drain_quietly();
    sum.fault = e.what();
    sum.interrupted = true;
    reached = written_end;
    status_count.assign(status_count.size(), 0);
    for (int f = 0; f < nf && reached > 0; ++f) {
      const std::vector<int32_t> st = fout[f].status.read_block<int32_t>({0}, {H(reached)});
      for (int32_t s : st) ++status_count[f * kStatusCount + s];
    }
  } catch (...) {
    sink.drain_quietly();
    throw;
  }
  // trajectories never reached keep the fill value not_run
  for (int f = 0; f < nf; ++f)
    status_count[f * kStatusCount + static_cast<int>(Status::not_run)] += size - reached;
  // trajectory indices never reached (an interrupted run): still a valid scale
  if (reached < size) {
    std::vector<int64_t> idx(size - reached);
    for (int64_t i = reached; i < size; ++i) idx[i - reached] = i;
    for (auto& G : fout) G.traj.write_block({H(reached)}, {H(size - reached)}, idx.data());
    iout.traj.write_block({H(reached)}, {H(size - reached)}, idx.data());
    for (auto& P : pout) P.traj.write_block({H(reached)}, {H(size - reached)}, idx.data());
    for (auto& D : dout) D.traj.write_block({H(reached)}, {H(size - reached)}, idx.data());
  }

  // ---- ensemble statistics per formulation
  for (int f = 0; f < nf; ++f) {
    const std::string path = "statistics/" + cfg.formulations[f];
    h5::Group sg = root.exists(path) ? root.open_group(path) : root.create_group(path);
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
    if constexpr (has_drift) {
      const Moments& mr = drift_ratio_moments[f];
      sg.set_attr("drift_ratio_mean", mr.count ? mr.mean : NAN);
      sg.set_attr("drift_ratio_std", std::sqrt(mr.variance()));
      sg.set_attr("drift_prediction", Model::DriftStatistic::prediction_doc);
    }
  }
  sum.seconds = progress.elapsed();
  return sum;
}

}  // namespace nholo
