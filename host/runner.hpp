// nholo/host/runner.hpp — one run: config -> ensemble of initial states ->
// slices integrated window by window on the backend -> statistics and HDF5.
//
//   RunSummary s = run_model<Model>(cfg, opts, file_root);
//
// Loop structure (peak memory is set by the slice size and the window, never
// by the ensemble size or the number of saves):
//   for each slice [begin, end) of trajectories (a whole number of
//   kStatBlock-sized blocks, sized to the memory budget):
//     sample the initial states, complete them from the constraints, project /
//     reject / refuse the inconsistent ones (on_violation);
//     for each formulation: pack the states (same initial conditions for all);
//     for each window of saves:
//       for each formulation: integrate the window (kernels/ensemble.hpp),
//         write the blocks [begin, end) x [k0, k1) of every field, update the
//         statistics;
//       compare the formulations pairwise (max distance, first exceedance);
//       check for an interrupt (SIGINT) between windows.
#pragma once

#include <atomic>
#include <csignal>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "host/backend.hpp"
#include "host/config.hpp"
#include "host/h5.hpp"
#include "host/model_info.hpp"
#include "host/progress.hpp"
#include "host/sampling.hpp"
#include "host/statistics.hpp"
#include "kernels/consistency.hpp"
#include "kernels/formulations.hpp"
#include "models/registry.hpp"

namespace nholo {

// Set by the SIGINT handler; the run stops at the next window boundary.
std::atomic<bool>& interrupt_flag();

struct RunOptions {
  bool quiet = false;
  bool tty = false;
};

struct RunSummary {
  int64_t trajectories = 0;
  int64_t completed = 0;  // trajectories whose integration finished (any status)
  int64_t completed_from_constraints = 0, projected = 0, rejected = 0;
  bool interrupted = false;
  double seconds = 0;
  // the per-save fields (q, qdot, ...): bytes handed to HDF5, and the seconds
  // spent transposing them to the file layout and writing them (filters included)
  int64_t output_bytes = 0;
  double output_seconds = 0;
  std::vector<std::string> status_lines;  // "udwadia_kalaba: ok 1000, max_steps 2"
};

// ---------------------------------------------------------------------------
// One formulation of one model, behind a host-side interface.
class FormulationRunner {
 public:
  virtual ~FormulationRunner() = default;
  virtual const std::string& name() const = 0;
  virtual int n_extra() const = 0;
  // Row-major inputs [i * n + c], [i * m + l]; rejected[i] != 0: not integrated.
  virtual void start_slice(int64_t count, const std::vector<double>& q0,
                           const std::vector<double>& qd0, const std::vector<double>& lambda0,
                           const std::vector<uint8_t>& rejected, double t0) = 0;
  virtual void run_window(const std::vector<double>& saves, const OutputSelection& sel) = 0;
  virtual const std::vector<double>& field(const std::string& f) const = 0;
  // layout of field(): false = SoA [(k * nc + c) * count + i] (CUDA),
  // true = trajectory-major [(i * ns + k) * nc + c] (CPU backends: the file's order)
  virtual bool trajectory_major() const = 0;
  virtual const std::vector<int32_t>& status() const = 0;
  virtual const std::vector<int64_t>& steps() const = 0;
  virtual const std::vector<int64_t>& rejected_steps() const = 0;
  virtual const std::vector<double>& fail_time() const = 0;
};

template <class Sys>
class FormulationRunnerT final : public FormulationRunner {
 public:
  FormulationRunnerT(std::string name, const Sys& sys, const IntegratorOptions& opt,
                     Backend backend, int threads)
      : name_(std::move(name)), sys_(sys), opt_(opt), backend_(backend), threads_(threads) {}
  const std::string& name() const override { return name_; }
  int n_extra() const override { return Sys::n_extra; }

  void start_slice(int64_t count, const std::vector<double>& q0, const std::vector<double>& qd0,
                   const std::vector<double>& lambda0, const std::vector<uint8_t>& rejected,
                   double t0) override {
    constexpr int n = Sys::n, m = Sys::m, N = Sys::N;
    std::vector<double> y0(static_cast<size_t>(N) * count);
    for (int64_t i = 0; i < count; ++i) {
      Vec<double, n> q, qd;
      Vec<double, m> lam = Vec<double, m>::zero();
      for (int c = 0; c < n; ++c) {
        q[c] = q0[i * n + c];
        qd[c] = qd0[i * n + c];
      }
      for (int l = 0; l < m; ++l) lam[l] = lambda0[i * m + l];
      Vec<double, N> y;
      sys_.pack(q, qd, lam, y);
      for (int c = 0; c < N; ++c) y0[c * count + i] = y[c];
    }
    ens_.start(y0, count, t0, opt_);
    for (int64_t i = 0; i < count; ++i)
      if (rejected[i]) ens_.status[i] = static_cast<int32_t>(Status::rejected);
  }
  void run_window(const std::vector<double>& saves, const OutputSelection& sel) override {
    nholo::run_window(backend_, threads_, sys_, opt_, ens_, saves, sel, out_,
                      /*trajectory_major=*/backend_ != Backend::cuda);
  }
  bool trajectory_major() const override { return out_.trajectory_major; }
  const std::vector<double>& field(const std::string& f) const override {
    if (f == "q") return out_.q;
    if (f == "qdot") return out_.qdot;
    if (f == "qddot") return out_.qddot;
    if (f == "force_ideal") return out_.force_ideal;
    if (f == "force_nonideal") return out_.force_nonideal;
    if (f == "multiplier") return out_.multiplier;
    if (f == "constraint_residual") return out_.constraint_residual;
    return out_.energy;
  }
  const std::vector<int32_t>& status() const override { return ens_.status; }
  const std::vector<int64_t>& steps() const override { return ens_.steps; }
  const std::vector<int64_t>& rejected_steps() const override { return ens_.rejected; }
  const std::vector<double>& fail_time() const override { return ens_.fail_time; }

 private:
  std::string name_;
  Sys sys_;
  IntegratorOptions opt_;
  Backend backend_;
  int threads_;
  HostEnsemble<Sys> ens_;
  WindowOutputs<Sys> out_;
};

template <class Model>
typename Model::Params params_from_config(const RunConfig& cfg) {
  double v[Model::n_params > 0 ? Model::n_params : 1] = {0};
  for (int j = 0; j < Model::n_params; ++j) v[j] = cfg.params.at(Model::param_info[j].name);
  return Model::make_params(v);
}

template <class Model>
std::unique_ptr<FormulationRunner> make_formulation(const std::string& f, const RunConfig& cfg,
                                                    Backend backend) {
  const auto p = params_from_config<Model>(cfg);
  auto make = [&](auto sys) -> std::unique_ptr<FormulationRunner> {
    using Sys = decltype(sys);
    sys.params = p;
    sys.eval = cfg.eval;
    return std::make_unique<FormulationRunnerT<Sys>>(f, sys, cfg.integrator, backend, cfg.threads);
  };
  if (f == "udwadia_kalaba") return make(UdwadiaKalabaSystem<Model>{});
  if (f == "lagrange_multiplier") return make(LagrangeMultiplierSystem<Model>{});
  if (f == "null_space") return make(NullSpaceSystem<Model>{});
  if (f == "vakonomic") return make(VakonomicSystem<Model>{});
  if constexpr (has_conflated_lagrangian<Model>::value) {
    if (f == "conflated") return make(UdwadiaKalabaSystem<Conflated<Model>>{});
  }
  throw ConfigError("formulations", "'" + f + "' is not available for model " + Model::name);
}

// The whole run for one model, writing into the open file's root group.
template <class Model>
RunSummary run_model(const RunConfig& cfg, const RunOptions& ro, h5::Group& root);

}  // namespace nholo

// The definition of run_model is in host/runner_impl.hpp; it is instantiated
// once per model in generated translation units (CMakeLists.txt,
// NHOLO_MODEL_TYPES), so that the models compile in parallel.
