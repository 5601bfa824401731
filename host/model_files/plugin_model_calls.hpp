// nholo/host/model_files/plugin_model_calls.hpp — OutOfLineModel<Model>: the model a
// plugin instantiates its formulations with (host/model_files/plugin_define.hpp).
// The same model (it derives from Model: sizes, names, parameters, structural
// declarations), but each of its functions is called through a member
// template kept out of line (NHOLO_NOINLINE), so that a plugin compiles the
// model's Lagrangian, symbolic M and F, constraints, forces and energy once
// per scalar type they are called with, not once per right-hand side that
// inlines them: every formulation's right-hand side is flattened
// (kernels/execution_space.hpp NHOLO_FLATTEN), and with a model file's
// generated functions (tens of thousands of operations) inlined into each of
// them, the compiler spends its time optimising copies of the same code
// (docs/BENCHMARKS.md, "Plugin compile time"). The arithmetic is the same
// operations in the same order; only where the code sits changes, so a run
// gives the same bits.
//
// A member exists exactly where Model has it (each forwards through a
// trailing decltype of the model's own call), so kernels/model.hpp detects the
// same optional parts.
#pragma once

#include "kernels/execution_space.hpp"
#include "kernels/linalg.hpp"
#include "kernels/model.hpp"

namespace nholo {

template <class Model>
struct OutOfLineModel : Model {
  using Params = typename Model::Params;
  static constexpr int n = Model::n;

  template <class S, class M = Model>
  NHOLO_NOINLINE static auto lagrangian(const Params& p, const Vec<S, n>& q, const Vec<S, n>& qd,
                                        const S& t) -> decltype(M::lagrangian(p, q, qd, t)) {
    return M::lagrangian(p, q, qd, t);
  }
  template <class S, class M = Model>
  NHOLO_NOINLINE static auto hand_dynamics(const Params& p, const Vec<S, n>& q, const Vec<S, n>& qd,
                                           const S& t, Mat<S, n, n>& Mq, Vec<S, n>& F)
      -> decltype(M::hand_dynamics(p, q, qd, t, Mq, F)) {
    M::hand_dynamics(p, q, qd, t, Mq, F);
  }
  template <class S, class M = Model>
  NHOLO_NOINLINE static auto conflated_lagrangian(const Params& p, const Vec<S, n>& q,
                                                  const Vec<S, n>& qd, const S& t)
      -> decltype(M::conflated_lagrangian(p, q, qd, t)) {
    return M::conflated_lagrangian(p, q, qd, t);
  }
  template <class S, class M = Model>
  NHOLO_NOINLINE static auto conflated_hand_dynamics(const Params& p, const Vec<S, n>& q,
                                                     const Vec<S, n>& qd, const S& t,
                                                     Mat<S, n, n>& Mq, Vec<S, n>& F)
      -> decltype(M::conflated_hand_dynamics(p, q, qd, t, Mq, F)) {
    M::conflated_hand_dynamics(p, q, qd, t, Mq, F);
  }
  template <class S, class M = Model>
  NHOLO_NOINLINE static auto position_constraints(const Params& p, const Vec<S, n>& q, const S& t)
      -> decltype(M::position_constraints(p, q, t)) {
    return M::position_constraints(p, q, t);
  }
  template <class S, class M = Model>
  NHOLO_NOINLINE static auto velocity_constraints(const Params& p, const Vec<S, n>& q,
                                                  const Vec<S, n>& qd, const S& t)
      -> decltype(M::velocity_constraints(p, q, qd, t)) {
    return M::velocity_constraints(p, q, qd, t);
  }
  template <class S, class M = Model>
  NHOLO_NOINLINE static auto acceleration_constraints(const Params& p, const Vec<S, n>& q,
                                                      const Vec<S, n>& qd, const Vec<S, n>& qdd,
                                                      const S& t)
      -> decltype(M::acceleration_constraints(p, q, qd, qdd, t)) {
    return M::acceleration_constraints(p, q, qd, qdd, t);
  }
  template <class S, class M = Model>
  NHOLO_NOINLINE static auto nonpotential_force(const Params& p, const Vec<S, n>& q,
                                                const Vec<S, n>& qd, const S& t)
      -> decltype(M::nonpotential_force(p, q, qd, t)) {
    return M::nonpotential_force(p, q, qd, t);
  }
  template <class S, class M = Model>
  NHOLO_NOINLINE static auto nonideal_force(const Params& p, const Vec<S, n>& q,
                                            const Vec<S, n>& qd, const S& t)
      -> decltype(M::nonideal_force(p, q, qd, t)) {
    return M::nonideal_force(p, q, qd, t);
  }
  template <class S, class M = Model>
  NHOLO_NOINLINE static auto energy(const Params& p, const Vec<S, n>& q, const Vec<S, n>& qd,
                                    const S& t) -> decltype(M::energy(p, q, qd, t)) {
    return M::energy(p, q, qd, t);
  }
};

}  // namespace nholo
