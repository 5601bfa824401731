// nholo/host/run/initial_states.hpp — stage 4 of a run (host/run/runner.hpp): a
// slice's initial states, sampled (counter-based), with the parameters that
// vary per trajectory ([ensemble.params]), completed from the constraints
// with each trajectory's own parameters, projected / rejected / refused
// (ensemble.on_violation), degenerate ones marked singular.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "host/config/config.hpp"
#include "host/config/model_info.hpp"
#include "host/config/sampling.hpp"
#include "host/run/interrupt.hpp"
#include "host/run/runner.hpp"
#include "kernels/consistency.hpp"
#include "kernels/model.hpp"
#include "kernels/pinv.hpp"

namespace nholo::detail {

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

template <class Model>
class InitialStates {
  static constexpr int n = Model::n;
  static constexpr int m = constraint_count<Model>();
  static constexpr int n_params = Model::n_params;

 public:
  // first: the global index of the run's trajectory 0 (a shard's start)
  InitialStates(const RunConfig& cfg, const ModelInfo& mi, int64_t first)
      : cfg_(cfg),
        sampler_(cfg, mi),
        run_params_(params_from_config<Model>(cfg)),
        first_(first),
        nv_(static_cast<int>(cfg.varied_params.size())),
        t0_(cfg.t_start) {
    {
      // the sampler's varied parameters are the file's /initial/params columns
      std::vector<std::string> names;
      for (int j : sampler_.varied_params()) names.push_back(mi.params[j].name);
      if (names != cfg.varied_params)
        throw std::logic_error("the sampler varies parameters " + join(names) + ", the config " +
                               join(cfg.varied_params));
    }
    // every parameter's fixed value (those that vary are replaced per trajectory)
    for (int j = 0; j < n_params; ++j) base_params_[j] = cfg.params.at(Model::param_info[j].name);
    for (int c = 0; c < n; ++c) {
      q_given_[c] = sampler_.q_given[c];
      qd_given_[c] = sampler_.qd_given[c];
      any_free_ = any_free_ || !q_given_[c] || !qd_given_[c];
    }
  }

  double t0() const { return t0_; }

  // trajectory i's parameters (of a slice of count) from the kernel layout
  // pk[j * count + i], or the run's when none vary
  typename Model::Params params_of(const std::vector<double>& pk, int64_t count, int64_t i) const {
    if (nv_ == 0) return run_params_;
    double v[n_params > 0 ? n_params : 1] = {0};
    for (int j = 0; j < n_params; ++j) v[j] = pk[j * count + i];
    return Model::make_params(v);
  }

  // The initial states of trajectories [begin, begin + count) of the run's
  // range into st; stops early (the slice will not run) when interrupted.
  void fill(int64_t begin, int64_t count, SliceStates& st, InitCounts& ic) {
    sampler_.fill(first_ + begin, first_ + begin + count, st.q0, st.qd0, st.l0, &st.pv);
    st.rejected.assign(count, 0);
    kernel_params(count, st);
    for (int64_t i = 0; i < count; ++i) {
      // an interrupt during setup: stop completing (the slice will not run)
      if (i % 4096 == 0 && interrupt_flag().load()) return;
      complete(begin, count, i, st, ic);
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
           "relation between parameters";
    if constexpr (has_check_params<Model>::value)
      for (int64_t i = 0; i < count; ++i)
        if (st.rejected[i] == static_cast<uint8_t>(Status::rejected))
          if (const char* why = Model::check_params(params_of(st.pk, count, i))) {
            msg << " (" << why << ")";
            break;
          }
    return msg.str();
  }

 private:
  // with varied parameters: every parameter of every trajectory, [j count + i]
  void kernel_params(int64_t count, SliceStates& st) const {
    st.pk.clear();
    if (nv_ == 0) return;
    st.pk.resize(static_cast<size_t>(n_params) * count);
    for (int j = 0; j < n_params; ++j)
      std::fill(st.pk.begin() + j * count, st.pk.begin() + (j + 1) * count, base_params_[j]);
    const std::vector<int>& col = sampler_.varied_params();
    for (int64_t i = 0; i < count; ++i)
      for (int v = 0; v < nv_; ++v) st.pk[col[v] * count + i] = st.pv[i * nv_ + v];
  }

  // trajectory i of the slice: its parameters checked, its state completed
  // (projected, rejected) and checked for degeneracy
  void complete(int64_t begin, int64_t count, int64_t i, SliceStates& st, InitCounts& ic) const {
    // this trajectory's parameters
    const typename Model::Params params = nv_ > 0 ? params_of(st.pk, count, i) : run_params_;
    if constexpr (has_check_params<Model>::value) {
      // sampled parameters that break the model's relation (those the
      // config could not rule out): not integrated, status rejected
      if (nv_ > 0 && Model::check_params(params) != nullptr) {
        st.rejected[i] = static_cast<uint8_t>(Status::rejected);
        ++ic.params_rejected;
        return;
      }
    }
    Vec<double, n> q, qd;
    for (int c = 0; c < n; ++c) {
      q[c] = st.q0[i * n + c];
      qd[c] = st.qd0[i * n + c];
    }
    if constexpr (m > 0) {
      ConsistencyResult<double> r =
          complete_state<Model, double>(params, q, q_given_, qd, qd_given_, t0_);
      if (any_free_ && r.converged) ++ic.completed;
      if (!r.converged) {
        if (cfg_.on_violation == "error") {
          std::ostringstream os;
          os << "trajectory " << (first_ + begin + i) << ": initial state violates the constraints "
             << "(residual " << r.residual << ") and on_violation = \"error\" (accepted: "
             << "project, reject, error)";
          throw ConfigError("ensemble.on_violation", os.str());
        }
        if (cfg_.on_violation == "project") {
          r = project_state<Model, double>(params, q, qd, t0_);
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
    for (int c = 0; c < n; ++c) {
      st.q0[i * n + c] = q[c];
      st.qd0[i * n + c] = qd[c];
    }
  }

  // a degenerate state: A loses rank where the model says it does not, or
  // completion blew a velocity up
  bool degenerate(const typename Model::Params& params, const Vec<double, n>& q,
                  const Vec<double, n>& qd) const {
    Mat<double, m, n> A;
    Vec<double, m> b, res, vres;
    constraint_terms<Model, double>(params, q, qd, t0_, A, b, &res, &vres);
    bool degenerate =
        numerical_rank(A, kDegenerateRankRtol) < declared_constraint_rank<Model>::value;
    double given = 0, solved = 0;
    for (int c = 0; c < n; ++c) {
      double& bound = qd_given_[c] ? given : solved;
      bound = std::max(bound, std::fabs(qd[c]));
    }
    if (solved > kCompletionGrowth * (1.0 + given) || !std::isfinite(solved)) degenerate = true;
    return degenerate;
  }

  const RunConfig& cfg_;
  Sampler sampler_;
  typename Model::Params run_params_;
  int64_t first_;
  int nv_;
  double t0_;
  double base_params_[n_params > 0 ? n_params : 1] = {0};
  bool q_given_[n], qd_given_[n];
  bool any_free_ = false;
};

}  // namespace nholo::detail
