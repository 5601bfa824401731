// nholo/kernels/model.hpp — the Model concept and compile-time detection of a
// model's optional parts.
//
// A model is a struct (models/*.hpp) with compile-time sizes and templated
// static member functions that work for double, float and the AD types of
// dual.hpp. S is the scalar type, P the model's Params, q and qd Vec<S,n>.
//
// Required                                           meaning
//   Model::name, Model::description                  registry name, one line of what it is
//   Model::n                                         generalized coordinates
//   Model::m_position, m_velocity, m_acceleration    constraint counts by kind
//   Model::coordinates[n]                            coordinate names
//   Model::constraint_names[m]                       constraint row names
//   Model::n_params, Model::param_info[]             {name, default, unit, doc, range}; a model
//                                                    without parameters has n_params = 0
//                                                    and one sentinel entry
//   Model::Params, Model::make_params(const double*) parameters in param_info order
//   Model::lagrangian(P, q, qd, t) -> S              L = T - V of the UNCONSTRAINED system
// Optional (detected; absent means "none")
//   position_constraints(P, q, t) -> Vec<S,m_position>           phi(q,t) = 0
//   velocity_constraints(P, q, qd, t) -> Vec<S,m_velocity>       g(q,qd,t) = 0, any in qd
//   acceleration_constraints(P, q, qd, qdd, t) -> Vec<S,m_acc>   h = A qdd - b, linear in qdd
//   nonpotential_force(P, q, qd, t) -> Vec<S,n>                  impressed Q_np
//   nonideal_force(P, q, qd, t) -> Vec<S,n>                      Udwadia's C (work-doing
//                                                                constraints)
//   energy(P, q, qd, t) -> S                                     total energy
//   conflated_lagrangian(P, q, qd, t) -> S                       Hamel-style L+ (formulation
//                                                                `conflated`)
//   coordinate_units[n] (const char*)                            each coordinate's unit
//                                                                ("m", "rad")
//   hand_dynamics(P, q, qd, t, M, F)                             hand-written M, F (must
//                                                                equal AD)
//   conflated_hand_dynamics(P, q, qd, t, M, F)                   the same for the conflated
//                                                                Lagrangian (Conflated<Model>
//                                                                uses it; a model file's,
//                                                                symbolic)
//   separable_lagrangian (static constexpr bool)                 L = T(qd) + U(q, t): no term
//                                                                couples the rates with q or t
//                                                                (M then depends on qd at
//                                                                most, F = dU/dq); dynamics.hpp
//                                                                skips the (qd, v) second
//                                                                derivatives. A structural
//                                                                promise, checked against the
//                                                                general AD in tests
//   constant_mass (static constexpr bool)                        M = d2L/dqd2 depends on none
//                                                                of q, qd, t (only on the
//                                                                parameters): the
//                                                                Udwadia–Kalaba system factors
//                                                                it once per trajectory
//                                                                (system.hpp, prepare)
//   constant_force (static constexpr bool)                       with constant_mass: the
//                                                                Lagrangian's F = dL/dq -
//                                                                (d2L/dqd dq) qd - d2L/dqd dt
//                                                                depends on none of q, qd, t
//                                                                (uniform gravity, constant
//                                                                impressed forces;
//                                                                nonpotential_force is still
//                                                                evaluated every time): F and
//                                                                M^-1 F are cached too. Both
//                                                                are structural promises,
//                                                                checked against the general
//                                                                AD in tests
//   check_params(P) -> const char*                               host only: nullptr, or the
//                                                                relation the parameters break
//                                                                (I_B > m s^2)
//   DriftStatistic                                               a drifting coordinate's
//                                                                ensemble statistic (see
//                                                                has_drift_statistic)
//
// Constraint rows are ordered position, velocity, acceleration.
#pragma once

#include <type_traits>

#include "linalg.hpp"

namespace nholo {

// Admissible values of a parameter (checked when a run is configured):
// lo < v or lo <= v when has_lo, v < hi or v <= hi when has_hi.
struct ParamRange {
  bool has_lo = false;
  double lo = 0;
  bool lo_open = false;
  bool has_hi = false;
  double hi = 0;
  bool hi_open = false;
};
constexpr ParamRange positive() {
  return {true, 0.0, true, false, 0.0, false};
}  // v > 0
constexpr ParamRange nonnegative() {
  return {true, 0.0, false, false, 0.0, false};
}  // v >= 0
constexpr ParamRange closed(double lo, double hi) {
  return {true, lo, false, true, hi, false};
}
constexpr ParamRange open_interval(double lo, double hi) {
  return {true, lo, true, true, hi, true};
}
// |v| < pi/2: an inclination that keeps a plane a plane
constexpr ParamRange inclination() {
  return open_interval(-1.5707963267948966, 1.5707963267948966);
}

struct ParamInfo {
  const char* name;
  double default_value;
  const char* unit;
  const char* doc;
  ParamRange range = {};  // default: any finite value
};

enum class ConstraintKind : int { position = 0, velocity = 1, acceleration = 2 };

template <class Model>
constexpr int constraint_count() {
  return Model::m_position + Model::m_velocity + Model::m_acceleration;
}

// The rank the model's constraint matrix A has at its regular states: m,
// unless the model declares redundant rows (static constexpr int
// constraint_rank, e.g. the redundant coin). A state where A has a lower rank
// is degenerate: every formulation reports it singular (Udwadia–Kalaba and
// null space still return the Moore–Penrose accelerations there).
template <class Model, class = void>
struct declared_constraint_rank {
  static constexpr int value = Model::m_position + Model::m_velocity + Model::m_acceleration;
};
template <class Model>
struct declared_constraint_rank<Model, std::void_t<decltype(Model::constraint_rank)>> {
  static constexpr int value = Model::constraint_rank;
};

#define NHOLO_DETECT_MEMBER(trait, expr) \
  template <class Model, class = void>   \
  struct trait : std::false_type {};     \
  template <class Model>                 \
  struct trait<Model, std::void_t<decltype(expr)>> : std::true_type {};

namespace detail {
template <class Model>
using VecN = Vec<double, Model::n>;
template <class Model>
const typename Model::Params& params_v();
template <class Model>
const VecN<Model>& vec_v();
}  // namespace detail

NHOLO_DETECT_MEMBER(has_nonpotential_force,
                    Model::nonpotential_force(detail::params_v<Model>(), detail::vec_v<Model>(),
                                              detail::vec_v<Model>(), 0.0))
NHOLO_DETECT_MEMBER(has_nonideal_force,
                    Model::nonideal_force(detail::params_v<Model>(), detail::vec_v<Model>(),
                                          detail::vec_v<Model>(), 0.0))
NHOLO_DETECT_MEMBER(has_energy, Model::energy(detail::params_v<Model>(), detail::vec_v<Model>(),
                                              detail::vec_v<Model>(), 0.0))
NHOLO_DETECT_MEMBER(has_conflated_lagrangian,
                    Model::conflated_lagrangian(detail::params_v<Model>(), detail::vec_v<Model>(),
                                                detail::vec_v<Model>(), 0.0))
NHOLO_DETECT_MEMBER(has_hand_dynamics,
                    Model::hand_dynamics(detail::params_v<Model>(), detail::vec_v<Model>(),
                                         detail::vec_v<Model>(), 0.0,
                                         std::declval<Mat<double, Model::n, Model::n>&>(),
                                         std::declval<Vec<double, Model::n>&>()))
NHOLO_DETECT_MEMBER(has_conflated_hand_dynamics,
                    Model::conflated_hand_dynamics(detail::params_v<Model>(),
                                                   detail::vec_v<Model>(), detail::vec_v<Model>(),
                                                   0.0,
                                                   std::declval<Mat<double, Model::n, Model::n>&>(),
                                                   std::declval<Vec<double, Model::n>&>()))
// check_params(P) -> const char*: nullptr when the parameters are
// admissible together, else the relation they break (e.g. the skate's
// I_B > m s^2); host-side, checked when a run is configured
NHOLO_DETECT_MEMBER(has_check_params, Model::check_params(detail::params_v<Model>()))
NHOLO_DETECT_MEMBER(has_coordinate_units, Model::coordinate_units[0])
#undef NHOLO_DETECT_MEMBER

// lagrangian_is_separable<M>::value: M declares separable_lagrangian = true
template <class Model, class = void>
struct lagrangian_is_separable : std::false_type {};
template <class Model>
struct lagrangian_is_separable<Model, std::void_t<decltype(Model::separable_lagrangian)>>
    : std::integral_constant<bool, Model::separable_lagrangian> {};

// mass_is_constant<M>::value: M declares constant_mass = true;
// force_is_constant<M>::value: M declares constant_mass and constant_force
template <class Model, class = void>
struct mass_is_constant : std::false_type {};
template <class Model>
struct mass_is_constant<Model, std::void_t<decltype(Model::constant_mass)>>
    : std::integral_constant<bool, Model::constant_mass> {};
template <class Model, class = void>
struct force_is_constant : std::false_type {};
template <class Model>
struct force_is_constant<Model, std::void_t<decltype(Model::constant_force)>>
    : std::integral_constant<bool, Model::constant_force && mass_is_constant<Model>::value> {};

// has_drift_statistic<M>: the model supplies an ensemble statistic of a
// drifting coordinate (a nested `DriftStatistic` with drift_coordinate,
// band_coordinate, prediction(params, q0, qd0) and prediction_doc): the
// run fits the drift velocity and the band per trajectory on the device
// (kernels/reduce.hpp LineFitKernel) and compares it with the prediction.
template <class Model, class = void>
struct has_drift_statistic : std::false_type {};
template <class Model>
struct has_drift_statistic<Model, std::void_t<typename Model::DriftStatistic>> : std::true_type {};

// Conflated<Model>: the same system with its conflated Lagrangian L+ taken as
// the "unconstrained" Lagrangian (Hamel's paradox, Udwadia & Wanichanon
// (2010)). Constraints, forces and parameters are the model's own; only L
// changes.
template <class Model>
struct Conflated : Model {
  static_assert(has_conflated_lagrangian<Model>::value,
                "the conflated formulation needs Model::conflated_lagrangian");
  template <class S>
  NHOLO_HDI static S lagrangian(const typename Model::Params& p, const Vec<S, Model::n>& q,
                                const Vec<S, Model::n>& qd, const S& t) {
    return Model::conflated_lagrangian(p, q, qd, t);
  }
  // A hand-written M, F belongs to the true Lagrangian; hide it, unless the
  // model has one for its conflated Lagrangian (conflated_hand_dynamics).
  static void hand_dynamics() = delete;
  template <class S, class M = Model,
            std::enable_if_t<has_conflated_hand_dynamics<M>::value, int> = 0>
  NHOLO_HDI static void hand_dynamics(const typename M::Params& p, const Vec<S, M::n>& q,
                                      const Vec<S, M::n>& qd, const S& t, Mat<S, M::n, M::n>& Mq,
                                      Vec<S, M::n>& F) {
    M::conflated_hand_dynamics(p, q, qd, t, Mq, F);
  }
  // ... and so does a declared structure
  static constexpr bool separable_lagrangian = false;
  static constexpr bool constant_mass = false;
  static constexpr bool constant_force = false;
};

// is_conflated<M>::value: M is Conflated<Model> for some Model (formulation
// name "conflated" rather than "udwadia_kalaba", system.hpp).
template <class Model>
struct is_conflated : std::false_type {};
template <class Model>
struct is_conflated<Conflated<Model>> : std::true_type {};

}  // namespace nholo
