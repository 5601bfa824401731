// nholo/host/run/initial_states.hpp — stage 4 of a run (host/run/runner.hpp): a
// slice's initial states, sampled (counter-based), with the parameters that
// vary per trajectory ([ensemble.params]), completed from the constraints
// with each trajectory's own parameters, projected / rejected / refused
// (ensemble.on_violation), degenerate ones marked singular.
#pragma once

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <iomanip>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "host/config/config.hpp"
#include "host/config/model_info.hpp"
#include "host/config/sampling.hpp"
#include "host/run/device_choice.hpp"
#include "host/run/interrupt.hpp"
#include "host/run/model_runtime.hpp"
#include "kernels/status.hpp"

namespace nholo::stages {

// An initial state is degenerate (status singular, in every formulation
// alike) when A has lost rank there — sigma_min below this times sigma_max,
// or A = 0 —, or when completing it from the constraints made a velocity more
// than kCompletionGrowth times the given ones (a division by a vanishing
// coefficient, e.g. the skate heading at +-pi/2 with xd given).
constexpr double kDegenerateRankRtol = 1e-10;
constexpr double kCompletionGrowth = 1e6;

// What happened to a slice's initial states.
struct InitCounts {
  int64_t completed = 0, projected = 0, rejected = 0, singular = 0, params_rejected = 0;
};

// A slice's initial states, in the file's layout: q0 [i n + c], qd0, l0
// [i m + l]; pv: the varied parameters as sampled, [i nv + v] (the file's
// layout); pk: with any varied, every parameter of every trajectory, [j
// count + i] (the kernels' layout), else empty; rejected: per trajectory 0
// or the status it has without being integrated.
struct SliceStates {
  std::vector<double> q0, qd0, l0, pv, pk;
  std::vector<uint8_t> rejected;
};

class InitialStates {
 public:
  // first: the global index of the run's trajectory 0 (a shard's start)
  InitialStates(const RunConfig& cfg, const ModelRuntime& model, int64_t first)
      : model_(model),
        n_(model.info().n),
        m_(model.info().m),
        n_params_(static_cast<int>(model.info().params.size())),
        cfg_(cfg),
        sampler_(cfg, model.info()),
        first_(first),
        nv_(static_cast<int>(cfg.varied_params.size())),
        t0_(cfg.t_start) {
    {
      // the sampler's varied parameters are the file's /initial/params columns
      std::vector<std::string> names;
      for (int j : sampler_.varied_params()) names.push_back(model.info().params[j].name);
      if (names != cfg.varied_params)
        throw std::logic_error("the sampler varies parameters " + join(names) + ", the config " +
                               join(cfg.varied_params));
    }
    // every parameter's fixed value (those that vary are replaced per trajectory)
    base_params_.assign(std::max(n_params_, 1), 0.0);
    for (int j = 0; j < n_params_; ++j)
      base_params_[j] = cfg.params.at(model.info().params[j].name);
    // the derived parameters that vary: their ranges checked per trajectory
    for (int j = 0; j < n_params_; ++j) {
      const std::string& name = model.info().params[static_cast<size_t>(j)].name;
      const auto named = [&](const std::vector<std::string>& v) {
        return std::find(v.begin(), v.end(), name) != v.end();
      };
      if (named(cfg.derived_params) && named(cfg.varied_params)) derived_varied_.push_back(j);
    }
    threads_ = run_host_threads(cfg);
    q_given_.reset(new bool[n_]);
    qd_given_.reset(new bool[n_]);
    for (int c = 0; c < n_; ++c) {
      q_given_[c] = sampler_.q_given[c];
      qd_given_[c] = sampler_.qd_given[c];
      any_free_ = any_free_ || !q_given_[c] || !qd_given_[c];
    }
  }

  double t0() const { return t0_; }
  const ModelRuntime& model() const { return model_; }

  // trajectory i's parameters (of a slice of count) into p (n_params values)
  // from the kernel layout pk[j * count + i], or the run's when none vary
  void params_of(const std::vector<double>& pk, int64_t count, int64_t i,
                 std::vector<double>& p) const {
    p = base_params_;
    if (nv_ == 0) return;
    for (int j = 0; j < n_params_; ++j) p[j] = pk[j * count + i];
  }

  // The initial states of trajectories [begin, begin + count) of the run's
  // range into st; stops early (the slice will not run) when interrupted.
  // Each trajectory is completed on its own (a pure function of its sampled
  // state and parameters), on the run's threads (one with the serial
  // backend): the same states and counts for any number of threads, and
  // with on_violation = "error" the error of the first trajectory that
  // violates the constraints, as one thread would give.
  void fill(int64_t begin, int64_t count, SliceStates& st, InitCounts& ic) {
    sampler_.fill(first_ + begin, first_ + begin + count, st.q0, st.qd0, st.l0, &st.pv,
                  &interrupt_flag(), threads_);
    if (interrupt_flag().load()) return;
    st.rejected.assign(count, 0);
    kernel_params(count, st);
    const int threads = static_cast<int>(std::min<int64_t>(threads_, count / 1024 + 1));
    std::vector<InitCounts> counts(static_cast<std::size_t>(threads));
    int64_t first_error = count;  // the lowest trajectory whose completion threw
    std::exception_ptr error;
    std::atomic<bool> stopped{false};
#pragma omp parallel num_threads(threads)
    {
      std::vector<double> params;  // the trajectory's being completed
      InitCounts mine;             // this thread's (apart: no shared cache line)
#pragma omp for schedule(dynamic, 1024)
      for (int64_t i = 0; i < count; ++i) {
        // an interrupt during setup: stop completing (the slice will not run)
        if (i % 1024 == 0 && interrupt_flag().load()) stopped = true;
        if (stopped.load(std::memory_order_relaxed)) continue;
        try {
          complete(begin, count, i, st, mine, params);
        } catch (...) {
#pragma omp critical(nholo_initial_states_error)
          if (i < first_error) {
            first_error = i;
            error = std::current_exception();
          }
        }
      }
      counts[static_cast<std::size_t>(omp_get_thread_num())] = mine;
    }
    if (error) std::rethrow_exception(error);
    for (const InitCounts& c : counts) {
      ic.completed += c.completed;
      ic.projected += c.projected;
      ic.rejected += c.rejected;
      ic.singular += c.singular;
      ic.params_rejected += c.params_rejected;
    }
  }

  // The message of a slice [begin, end) some of whose trajectories' sampled
  // parameters break the model's relation between parameters.
  std::string params_rejected_message(int64_t begin, int64_t end, const SliceStates& st,
                                      const InitCounts& ic) const {
    const int64_t count = end - begin;
    std::ostringstream msg;
    msg << "trajectories [" << (first_ + begin) << ", " << (first_ + end)
        << "): " << ic.params_rejected
        << " rejected (status rejected, not integrated): their sampled parameters break the "
           "model's "
           "relation between parameters"
        << (derived_varied_.empty() ? "" : " or put a derived parameter out of its range");
    std::vector<double> p;
    for (int64_t i = 0; i < count; ++i)
      if (st.rejected[i] == static_cast<uint8_t>(Status::rejected)) {
        params_of(st.pk, count, i, p);
        const std::string why = params_refusal(p.data());
        if (!why.empty()) {
          msg << " (" << why << ")";
          break;
        }
      }
    return msg.str();
  }

 private:
  // with varied parameters: every parameter of every trajectory, [j count + i]
  void kernel_params(int64_t count, SliceStates& st) const {
    st.pk.clear();
    if (nv_ == 0) return;
    st.pk.resize(static_cast<size_t>(n_params_) * count);
    for (int j = 0; j < n_params_; ++j)
      std::fill(st.pk.begin() + j * count, st.pk.begin() + (j + 1) * count, base_params_[j]);
    const std::vector<int>& col = sampler_.varied_params();
    for (int64_t i = 0; i < count; ++i)
      for (int v = 0; v < nv_; ++v) st.pk[col[v] * count + i] = st.pv[i * nv_ + v];
  }

  // trajectory i of the slice: its parameters checked, its state completed
  // (projected, rejected) and checked for degeneracy (p: the caller's
  // scratch for its parameters)
  void complete(int64_t begin, int64_t count, int64_t i, SliceStates& st, InitCounts& ic,
                std::vector<double>& p) const {
    // this trajectory's parameters
    params_of(st.pk, count, i, p);
    const double* params = p.data();
    // sampled parameters that break the model's relation, or a derived
    // parameter out of its range (those the config could not rule out): not
    // integrated, status rejected
    if (nv_ > 0 && !params_refusal(params).empty()) {
      st.rejected[i] = static_cast<uint8_t>(Status::rejected);
      ++ic.params_rejected;
      return;
    }
    if (m_ == 0) return;
    double* q = &st.q0[i * n_];
    double* qd = &st.qd0[i * n_];
    StateConsistency r = model_.complete_state(params, t0_, q, q_given_.get(), qd, qd_given_.get());
    if (any_free_ && r.converged) ++ic.completed;
    if (!r.converged) {
      if (cfg_.on_violation == OnViolation::error) {
        std::ostringstream os;
        os << "trajectory " << (first_ + begin + i) << ": initial state violates the constraints "
           << "(residual " << r.residual << ") after the coordinates and velocities not given "
           << "were completed (Newton steps over them, from 0 for those not given: a constraint "
           << "whose derivative along them vanishes there cannot move them; give them a value "
           << "near the solution) and on_violation = \"error\" (accepted: "
           << join(tables::names_of(tables::kOnViolation)) << ")";
        throw ConfigError("ensemble.on_violation", os.str());
      }
      if (cfg_.on_violation == OnViolation::project) {
        r = model_.project_state(params, t0_, q, qd);
        if (r.converged) ++ic.projected;
      }
      if (!r.converged) {
        st.rejected[i] = static_cast<uint8_t>(Status::rejected);
        ++ic.rejected;
      }
    }
    if (!st.rejected[i] && degenerate(params, q, qd)) {
      st.rejected[i] = static_cast<uint8_t>(Status::singular);
      ++ic.singular;
    }
  }

  // v with the fewest digits (up to 17) that read back as v, for messages
  static std::string value_text(double v) {
    std::ostringstream os;
    for (int digits = 1; digits <= 17; ++digits) {
      os.str("");
      os << std::setprecision(digits) << v;
      if (std::strtod(os.str().c_str(), nullptr) == v) break;
    }
    return os.str();
  }

  // why the model refuses a trajectory's parameters: a varied derived
  // parameter out of its range, or the model's relation broken; "" when not
  std::string params_refusal(const double* params) const {
    for (const int j : derived_varied_) {
      const ParamDescription& d = model_.info().params[static_cast<size_t>(j)];
      if (!d.admits(params[j]))
        return d.name + " = " + value_text(params[j]) + ", outside its range (" +
               (d.range_text().empty() ? "finite" : "finite, " + d.range_text()) + ")";
    }
    if (model_.has_check_params())
      if (const char* why = model_.check_params(params)) return why;
    return "";
  }

  // a degenerate state: A loses rank where the model says it does not, or
  // completion blew a velocity up
  bool degenerate(const double* params, const double* q, const double* qd) const {
    bool degenerate = model_.rank_deficient(params, t0_, q, qd, kDegenerateRankRtol);
    double given = 0, solved = 0;
    for (int c = 0; c < n_; ++c) {
      double& bound = qd_given_[c] ? given : solved;
      bound = std::max(bound, std::fabs(qd[c]));
    }
    if (solved > kCompletionGrowth * (1.0 + given) || !std::isfinite(solved)) degenerate = true;
    return degenerate;
  }

  const ModelRuntime& model_;
  int n_, m_, n_params_;
  const RunConfig& cfg_;
  Sampler sampler_;
  int64_t first_;
  int nv_;
  double t0_;
  std::vector<double> base_params_;  // every parameter's fixed value
  std::vector<int> derived_varied_;  // the derived parameters that vary (model order)
  int threads_ = 1;                  // threads completing a slice's states (fill)
  std::unique_ptr<bool[]> q_given_, qd_given_;
  bool any_free_ = false;
};

}  // namespace nholo::stages
