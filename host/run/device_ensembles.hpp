// nholo/host/run/device_ensembles.hpp — stage 3 of a run (host/run/runner.hpp):
// the device ensembles, one per formulation (host/backends/device_ensemble.hpp),
// their state allocated once for the largest slice, and the pairs of
// formulations whose distances are reduced on the device (stages 5 and 6:
// integrate and reduce, window by window).
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "host/backends/device_ensemble.hpp"
#include "host/config/config.hpp"
#include "host/config/tables.hpp"
#include "host/io/slice_plan.hpp"
#include "host/run/device_choice.hpp"
#include "host/run/interrupt.hpp"
#include "host/run/model_runtime.hpp"

namespace nholo::stages {

// The host-side view of a pair of formulations a, b: per trajectory, the max
// distance and the first time it exceeded the threshold, on the device.
struct PairState {
  int a, b;
  DeviceArray max_dist, first_exceed;
};

// The ensembles' layout of the host slots: the slice, the window, the fields
// and what the kernels compute (and, with a drift statistic, the line fit).
inline EnsembleLayout ensemble_layout(const RunConfig& cfg, const detail::SlicePlan& plan,
                                      const ModelRuntime& model, const EventTable* events,
                                      const ObservableTable* observables) {
  const int n = model.info().n, m = model.info().m;
  EnsembleLayout layout_e;
  layout_e.max_count = plan.slice;
  layout_e.window = plan.window;
  layout_e.fields = cfg.fields;
  for (const auto& f : cfg.fields)
    layout_e.components.push_back(tables::field_components(f, n, m, cfg.lyapunov_exponents));
  layout_e.stop = &interrupt_flag();
  layout_e.steps_per_launch = cfg.steps_per_launch;
  layout_e.host_threads = run_host_threads(cfg);
  layout_e.cpu_tail = cfg.cpu_tail >= 0 ? cfg.cpu_tail : kCpuTailPerThread * layout_e.host_threads;
  layout_e.per_trajectory_params = !cfg.varied_params.empty();
  layout_e.events = events;
  layout_e.observables = observables;
  if (model.drift().has_drift) {
    layout_e.line_fit = true;
    layout_e.fit_x = model.drift().drift_coordinate;
    layout_e.fit_y = model.drift().band_coordinate;
    layout_e.t_mid = 0.5 * (cfg.t_start + cfg.t_end);
  }
  return layout_e;
}

// Every formulation's ensemble on one device, and the pairs compared.
class DeviceEnsembles {
 public:
  // make(f) builds formulation f's ensemble (ModelRuntime::make_formulation)
  template <class Make>
  DeviceEnsembles(const RunConfig& cfg, Device& dev, const detail::SlicePlan& plan,
                  EnsembleLayout layout, Make&& make)
      : cfg_(cfg), dev_(dev), layout_(std::move(layout)) {
    dev.set_save_times(cfg.save_times);
    for (const auto& f : cfg.formulations) ens_.push_back(make(f, layout_));
    const int nf = static_cast<int>(cfg.formulations.size());
    for (int a = 0; a < nf; ++a)
      for (int b = a + 1; b < nf; ++b) {
        pairs_.push_back({a, b, DeviceArray(dev, plan.slice), DeviceArray(dev, plan.slice)});
        pair_ab_.emplace_back(a, b);
      }
  }

  const EnsembleLayout& layout() const { return layout_; }
  DeviceEnsemble& operator[](int f) { return *ens_[f]; }
  size_t n_pairs() const { return pairs_.size(); }
  const std::pair<int, int>& pair(size_t p) const { return pair_ab_[p]; }
  // "compare/<a>__<b>/<what>" of pair p
  std::string pair_path(size_t p, const char* what) const {
    return "compare/" + cfg_.formulations[pair_ab_[p].first] + "__" +
           cfg_.formulations[pair_ab_[p].second] + "/" + what;
  }

  // A slice's initial states into every ensemble; the pair sums reset.
  void start_slice(int64_t count, const double* q0, const double* qd0, const double* l0,
                   const double* pk, const uint8_t* rejected, double t0) {
    for (auto& e : ens_) e->start_slice(count, q0, qd0, l0, pk, rejected, t0);
    for (auto& P : pairs_) {
      dev_.fill(P.max_dist.get(), 0.0, count);
      dev_.fill(P.first_exceed.get(), NAN, count);
    }
  }

  // Saves [k0, k0 + ns) integrated into host slot `slot` (may return before
  // the device is done); false when interrupted inside the window.
  bool run_window(int64_t k0, int64_t ns, int slot) {
    for (auto& e : ens_) {
      e->run_window(k0, static_cast<int>(ns), slot);
      if (!e->window_complete()) return false;
    }
    return true;
  }

  // Every ensemble's device time so far (DeviceEnsemble::times).
  DeviceTimes times() const {
    DeviceTimes t;
    for (const auto& e : ens_) {
      const DeviceTimes et = e->times();
      t.busy_seconds += et.busy_seconds;
      t.copy_seconds += et.copy_seconds;
      t.launches += et.launches;
      t.tail_seconds += et.tail_seconds;
      t.tail_trajectories += et.tail_trajectories;
    }
    return t;
  }

  // The window's pair distances, reduced on the device.
  void pair_distances(int64_t count, int64_t k0, int64_t ns, int n) {
    for (auto& P : pairs_) {
      bool ta = true, tb = true;
      const double* qa = ens_[P.a]->device_q(&ta);
      const double* qb = ens_[P.b]->device_q(&tb);
      PairDistanceKernel<double> k{qa,
                                   qb,
                                   ta,
                                   tb,
                                   count,
                                   ns,
                                   n,
                                   dev_.save_times() + k0,
                                   cfg_.compare_threshold,
                                   P.max_dist.get(),
                                   P.first_exceed.get()};
      dev_.pair_distance(k, count);
    }
  }

  // The slice's per-trajectory results (synchronous: waits for the device):
  // per formulation, and per pair its max distances and first exceed times
  // (pair p: [2 p], [2 p + 1]).
  void finish_slice(int64_t count, std::vector<SliceResults>& results,
                    std::vector<std::vector<double>>& pair_res) {
    const int nf = static_cast<int>(ens_.size());
    for (int f = 0; f < nf; ++f) {
      ens_[f]->finish_slice(results[f]);
      check_results(*ens_[f], results[f], count);
    }
    for (size_t p = 0; p < pairs_.size(); ++p) {
      auto& md = pair_res[2 * p];
      auto& fe = pair_res[2 * p + 1];
      md.resize(count);
      fe.resize(count);
      dev_.to_host(md.data(), pairs_[p].max_dist.get(), count * sizeof(double));
      dev_.to_host(fe.data(), pairs_[p].first_exceed.get(), count * sizeof(double));
    }
  }

 private:
  // What a device hands back must be what a kernel can write: count results,
  // every status one of kernels/status.hpp's; anything else is a device
  // fault (the run stops with its finished slices), never counted.
  static void check_results(const DeviceEnsemble& e, const SliceResults& r, int64_t count) {
    if (static_cast<int64_t>(r.status().size()) != count ||
        static_cast<int64_t>(r.steps().size()) != count)
      throw DeviceFault(e.name() + ": the device returned " + std::to_string(r.status().size()) +
                        " statuses for " + std::to_string(count) + " trajectories");
    for (int64_t i = 0; i < count; ++i)
      if (r.status()[i] < 0 || r.status()[i] >= kStatusCount || r.steps()[i] < 0)
        throw DeviceFault(e.name() + ": the device returned status " + std::to_string(r.status()[i]) +
                          " and " + std::to_string(r.steps()[i]) + " steps for trajectory " +
                          std::to_string(i) +
                          " of the slice: not a result a kernel writes (corrupted device memory)");
  }

  const RunConfig& cfg_;
  Device& dev_;
  EnsembleLayout layout_;
  std::vector<std::unique_ptr<DeviceEnsemble>> ens_;
  std::vector<PairState> pairs_;
  std::vector<std::pair<int, int>> pair_ab_;
};

}  // namespace nholo::stages
