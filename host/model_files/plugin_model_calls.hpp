// nholo/host/model_files/plugin_model_calls.hpp — OutOfLineModel<Model>: the model a
// plugin instantiates its formulations with (host/model_files/plugin_define.hpp).
// The same model (it derives from Model: sizes, names, parameters, structural
// declarations), but each of its functions, called with a plain floating-point
// scalar (double, float), goes through a member template kept out of line
// (NHOLO_NOINLINE), so that a plugin compiles the model's Lagrangian,
// symbolic M and F, constraints, forces and energy once per unit, not once
// per right-hand side that inlines them: every formulation's right-hand side
// is flattened (kernels/execution_space.hpp NHOLO_FLATTEN), and with a model
// file's generated functions (tens of thousands of operations) inlined into
// each of them, the compiler spends its time optimising copies of the same
// code (docs/BENCHMARKS.md, "Plugin compile time"). Calls with an AD scalar
// (the constraints differentiated by Dual numbers, the Lagrangian by jets)
// stay inlined: there the compiler folds the seeds' zeros and ones into the
// model's code, and out of line the large model's right-hand sides took
// twice as long. The arithmetic is the same operations in the same order;
// only where the code sits changes, so a run gives the same bits.
//
// A member exists exactly where Model has it (each forwards through a
// trailing decltype of the model's own call), so kernels/model.hpp detects the
// same optional parts.
#pragma once

#include <type_traits>

#include "kernels/dynamics.hpp"
#include "kernels/execution_space.hpp"
#include "kernels/linalg.hpp"
#include "kernels/model.hpp"

namespace nholo {

template <class Model>
struct OutOfLineModel : Model {
  using Params = typename Model::Params;
  static constexpr int n = Model::n;
  static constexpr int m = constraint_count<Model>();

  // A, b and the residuals (kernels/dynamics.hpp constraint_terms) for a
  // plain scalar: the model's constraints differentiated by Dual numbers
  // with their seeds inside one out-of-line function, where the compiler
  // folds the seeds' zeros and ones as it does inlined
  static constexpr bool constraint_terms_out_of_line = true;
  template <class S>
  NHOLO_NOINLINE static void constraint_terms(const Params& p, const Vec<S, n>& q,
                                              const Vec<S, n>& qd, S t, Mat<S, m, n>& A,
                                              Vec<S, m>& b, Vec<S, m>* residual,
                                              Vec<S, m>* velocity_residual) {
    constraint_terms_by_ad<Model>(p, q, qd, t, A, b, residual, velocity_residual);
  }

  template <class S, class M = Model>
  NHOLO_HDI static auto lagrangian(const Params& p, const Vec<S, n>& q, const Vec<S, n>& qd,
                                   const S& t) -> decltype(M::lagrangian(p, q, qd, t)) {
    if constexpr (std::is_floating_point<S>::value) {
      return lagrangian_out_of_line<S, M>(p, q, qd, t);
    } else {
      return M::lagrangian(p, q, qd, t);
    }
  }
  template <class S, class M>
  NHOLO_NOINLINE static auto lagrangian_out_of_line(const Params& p, const Vec<S, n>& q,
                                                    const Vec<S, n>& qd, const S& t)
      -> decltype(M::lagrangian(p, q, qd, t)) {
    return M::lagrangian(p, q, qd, t);
  }

  template <class S, class M = Model>
  NHOLO_HDI static auto hand_dynamics(const Params& p, const Vec<S, n>& q, const Vec<S, n>& qd,
                                      const S& t, Mat<S, n, n>& Mq, Vec<S, n>& F)
      -> decltype(M::hand_dynamics(p, q, qd, t, Mq, F)) {
    if constexpr (std::is_floating_point<S>::value) {
      hand_dynamics_out_of_line<S, M>(p, q, qd, t, Mq, F);
    } else {
      M::hand_dynamics(p, q, qd, t, Mq, F);
    }
  }
  template <class S, class M>
  NHOLO_NOINLINE static auto hand_dynamics_out_of_line(const Params& p, const Vec<S, n>& q,
                                                       const Vec<S, n>& qd, const S& t,
                                                       Mat<S, n, n>& Mq, Vec<S, n>& F)
      -> decltype(M::hand_dynamics(p, q, qd, t, Mq, F)) {
    M::hand_dynamics(p, q, qd, t, Mq, F);
  }

  template <class S, class M = Model>
  NHOLO_HDI static auto conflated_lagrangian(const Params& p, const Vec<S, n>& q,
                                             const Vec<S, n>& qd, const S& t)
      -> decltype(M::conflated_lagrangian(p, q, qd, t)) {
    if constexpr (std::is_floating_point<S>::value) {
      return conflated_lagrangian_out_of_line<S, M>(p, q, qd, t);
    } else {
      return M::conflated_lagrangian(p, q, qd, t);
    }
  }
  template <class S, class M>
  NHOLO_NOINLINE static auto conflated_lagrangian_out_of_line(const Params& p, const Vec<S, n>& q,
                                                              const Vec<S, n>& qd, const S& t)
      -> decltype(M::conflated_lagrangian(p, q, qd, t)) {
    return M::conflated_lagrangian(p, q, qd, t);
  }

  template <class S, class M = Model>
  NHOLO_HDI static auto conflated_hand_dynamics(const Params& p, const Vec<S, n>& q,
                                                const Vec<S, n>& qd, const S& t, Mat<S, n, n>& Mq,
                                                Vec<S, n>& F)
      -> decltype(M::conflated_hand_dynamics(p, q, qd, t, Mq, F)) {
    if constexpr (std::is_floating_point<S>::value) {
      conflated_hand_dynamics_out_of_line<S, M>(p, q, qd, t, Mq, F);
    } else {
      M::conflated_hand_dynamics(p, q, qd, t, Mq, F);
    }
  }
  template <class S, class M>
  NHOLO_NOINLINE static auto conflated_hand_dynamics_out_of_line(const Params& p,
                                                                 const Vec<S, n>& q,
                                                                 const Vec<S, n>& qd, const S& t,
                                                                 Mat<S, n, n>& Mq, Vec<S, n>& F)
      -> decltype(M::conflated_hand_dynamics(p, q, qd, t, Mq, F)) {
    M::conflated_hand_dynamics(p, q, qd, t, Mq, F);
  }

  template <class S, class M = Model>
  NHOLO_HDI static auto position_constraints(const Params& p, const Vec<S, n>& q, const S& t)
      -> decltype(M::position_constraints(p, q, t)) {
    if constexpr (std::is_floating_point<S>::value) {
      return position_constraints_out_of_line<S, M>(p, q, t);
    } else {
      return M::position_constraints(p, q, t);
    }
  }
  template <class S, class M>
  NHOLO_NOINLINE static auto position_constraints_out_of_line(const Params& p, const Vec<S, n>& q,
                                                              const S& t)
      -> decltype(M::position_constraints(p, q, t)) {
    return M::position_constraints(p, q, t);
  }

  template <class S, class M = Model>
  NHOLO_HDI static auto velocity_constraints(const Params& p, const Vec<S, n>& q,
                                             const Vec<S, n>& qd, const S& t)
      -> decltype(M::velocity_constraints(p, q, qd, t)) {
    if constexpr (std::is_floating_point<S>::value) {
      return velocity_constraints_out_of_line<S, M>(p, q, qd, t);
    } else {
      return M::velocity_constraints(p, q, qd, t);
    }
  }
  template <class S, class M>
  NHOLO_NOINLINE static auto velocity_constraints_out_of_line(const Params& p, const Vec<S, n>& q,
                                                              const Vec<S, n>& qd, const S& t)
      -> decltype(M::velocity_constraints(p, q, qd, t)) {
    return M::velocity_constraints(p, q, qd, t);
  }

  template <class S, class M = Model>
  NHOLO_HDI static auto acceleration_constraints(const Params& p, const Vec<S, n>& q,
                                                 const Vec<S, n>& qd, const Vec<S, n>& qdd,
                                                 const S& t)
      -> decltype(M::acceleration_constraints(p, q, qd, qdd, t)) {
    if constexpr (std::is_floating_point<S>::value) {
      return acceleration_constraints_out_of_line<S, M>(p, q, qd, qdd, t);
    } else {
      return M::acceleration_constraints(p, q, qd, qdd, t);
    }
  }
  template <class S, class M>
  NHOLO_NOINLINE static auto acceleration_constraints_out_of_line(const Params& p,
                                                                  const Vec<S, n>& q,
                                                                  const Vec<S, n>& qd,
                                                                  const Vec<S, n>& qdd, const S& t)
      -> decltype(M::acceleration_constraints(p, q, qd, qdd, t)) {
    return M::acceleration_constraints(p, q, qd, qdd, t);
  }

  template <class S, class M = Model>
  NHOLO_HDI static auto nonpotential_force(const Params& p, const Vec<S, n>& q, const Vec<S, n>& qd,
                                           const S& t)
      -> decltype(M::nonpotential_force(p, q, qd, t)) {
    if constexpr (std::is_floating_point<S>::value) {
      return nonpotential_force_out_of_line<S, M>(p, q, qd, t);
    } else {
      return M::nonpotential_force(p, q, qd, t);
    }
  }
  template <class S, class M>
  NHOLO_NOINLINE static auto nonpotential_force_out_of_line(const Params& p, const Vec<S, n>& q,
                                                            const Vec<S, n>& qd, const S& t)
      -> decltype(M::nonpotential_force(p, q, qd, t)) {
    return M::nonpotential_force(p, q, qd, t);
  }

  template <class S, class M = Model>
  NHOLO_HDI static auto nonideal_force(const Params& p, const Vec<S, n>& q, const Vec<S, n>& qd,
                                       const S& t) -> decltype(M::nonideal_force(p, q, qd, t)) {
    if constexpr (std::is_floating_point<S>::value) {
      return nonideal_force_out_of_line<S, M>(p, q, qd, t);
    } else {
      return M::nonideal_force(p, q, qd, t);
    }
  }
  template <class S, class M>
  NHOLO_NOINLINE static auto nonideal_force_out_of_line(const Params& p, const Vec<S, n>& q,
                                                        const Vec<S, n>& qd, const S& t)
      -> decltype(M::nonideal_force(p, q, qd, t)) {
    return M::nonideal_force(p, q, qd, t);
  }

  template <class S, class M = Model>
  NHOLO_HDI static auto energy(const Params& p, const Vec<S, n>& q, const Vec<S, n>& qd, const S& t)
      -> decltype(M::energy(p, q, qd, t)) {
    if constexpr (std::is_floating_point<S>::value) {
      return energy_out_of_line<S, M>(p, q, qd, t);
    } else {
      return M::energy(p, q, qd, t);
    }
  }
  template <class S, class M>
  NHOLO_NOINLINE static auto energy_out_of_line(const Params& p, const Vec<S, n>& q,
                                                const Vec<S, n>& qd, const S& t)
      -> decltype(M::energy(p, q, qd, t)) {
    return M::energy(p, q, qd, t);
  }
};

}  // namespace nholo

// The model type a plugin's formulations see (plugin_define.hpp, and its lane
// add-on, plugin_lanes_define.hpp): OutOfLineModel with
// NHOLO_PLUGIN_OUT_OF_LINE (host/model_files/plugin.cpp defines it for a large
// model), else the model itself.
#ifdef NHOLO_PLUGIN_OUT_OF_LINE
#define NHOLO_PLUGIN_MODEL(ModelType) nholo::OutOfLineModel<ModelType>
#else
#define NHOLO_PLUGIN_MODEL(ModelType) ModelType
#endif
