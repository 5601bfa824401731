// nholo/host/backends/model_functions.hpp — the functions of a model the run pipeline
// calls once per trajectory (its initial states, its drift statistic's
// prediction), on plain arrays: parameters as n_params values in param_info
// order, states as n values. Compiled with the model's type into nholo (a
// built-in model, host/run/typed_model_runtime.hpp) or into its plugin
// (host/model_files/plugin_define.hpp), so both compute them alike.
#pragma once

#include "host/backends/formulation_system.hpp"
#include "kernels/consistency.hpp"
#include "kernels/model.hpp"
#include "kernels/pinv.hpp"

namespace nholo {

template <class Model>
struct ModelFunctions {
  static constexpr int n = Model::n;
  static constexpr int m = constraint_count<Model>();
  using Params = typename Model::Params;

  // nullptr: admissible; else why not
  static const char* check_params(const double* p) {
    if constexpr (has_check_params<Model>::value)
      return Model::check_params(params_of_values<Model>(p));
    (void)p;
    return nullptr;
  }

  static ConsistencyResult<double> complete_state(const double* p, double t0, double* q,
                                                  const bool* q_given, double* qd,
                                                  const bool* qd_given) {
    Vec<double, n> qv, qdv;
    load(q, qd, qv, qdv);
    const ConsistencyResult<double> r = nholo::complete_state<Model, double>(
        params_of_values<Model>(p), qv, q_given, qdv, qd_given, t0);
    store(qv, qdv, q, qd);
    return r;
  }

  static ConsistencyResult<double> project_state(const double* p, double t0, double* q,
                                                 double* qd) {
    Vec<double, n> qv, qdv;
    load(q, qd, qv, qdv);
    const ConsistencyResult<double> r =
        nholo::project_state<Model, double>(params_of_values<Model>(p), qv, qdv, t0);
    store(qv, qdv, q, qd);
    return r;
  }

  // A(q) has lost rank: sigma_min below rtol sigma_max, or A = 0, where the
  // model declares full rank
  static bool rank_deficient(const double* p, double t0, const double* q, const double* qd,
                             double rtol) {
    if constexpr (m > 0) {
      Vec<double, n> qv, qdv;
      for (int c = 0; c < n; ++c) {
        qv[c] = q[c];
        qdv[c] = qd[c];
      }
      Mat<double, m, n> A;
      Vec<double, m> b, res, vres;
      constraint_terms<Model, double>(params_of_values<Model>(p), qv, qdv, t0, A, b, &res, &vres);
      return numerical_rank(A, rtol) < declared_constraint_rank<Model>::value;
    }
    (void)p, (void)t0, (void)q, (void)qd, (void)rtol;
    return false;
  }

  static double drift_prediction(const double* p, const double* q0, const double* qd0) {
    if constexpr (has_drift_statistic<Model>::value)
      return Model::DriftStatistic::prediction(params_of_values<Model>(p), q0, qd0);
    (void)p, (void)q0, (void)qd0;
    return 0;
  }

 private:
  static void load(const double* q, const double* qd, Vec<double, n>& qv, Vec<double, n>& qdv) {
    for (int c = 0; c < n; ++c) {
      qv[c] = q[c];
      qdv[c] = qd[c];
    }
  }
  static void store(const Vec<double, n>& qv, const Vec<double, n>& qdv, double* q, double* qd) {
    for (int c = 0; c < n; ++c) {
      q[c] = qv[c];
      qd[c] = qdv[c];
    }
  }
};

}  // namespace nholo
