// nholo/kernels/formulations.hpp — every formulation of constrained mechanics,
// one header each in kernels/formulations/, all fed by the same model
// definition (Lagrangian + constraints, nothing derived per model). Each
// system follows the System concept of system.hpp, so host code and the
// ensemble functor treat all formulations alike:
//
//   name                  system                            state            header
//   udwadia_kalaba        UdwadiaKalabaSystem<Model>        (q, qd)          udwadia_kalaba.hpp
//   conflated             ConflatedSystem<Model>            (q, qd)          conflated.hpp
//   lagrange_multiplier   LagrangeMultiplierSystem<Model>   (q, qd)          lagrange_multipliers.hpp
//   null_space            NullSpaceSystem<Model>            (q, qd)          null_space.hpp
//   vakonomic             VakonomicSystem<Model>            (q, qd, lambda)  vakonomic.hpp
//   embedded              EmbeddedSystem<Model>             (q, qd, ell, r)  embedded.hpp
//
// The four with state (q, qd) are SecondOrderSystem (second_order_system.hpp)
// with a formulation tag; the vakonomic and embedded systems share its drift
// projection (project_state_onto_constraints), observables
// (observe_acceleration) and state layout (split_state, store_state).
//
// Notation of the formulation headers: M qdd = F is the unconstrained system
// (F includes Q_np), A qdd = b the constraints differentiated once (velocity
// rows) or twice (position rows), C Udwadia's nonideal vector (zero for ideal
// constraints); see dynamics.hpp and constrained_terms.hpp. Drift control
// (eval.drift) as for every formulation: Baumgarte corrects b, projection
// moves (q, qd) (never the multipliers of the vakonomic and embedded states).
#pragma once

#include "formulations/conflated.hpp"
#include "formulations/embedded.hpp"
#include "formulations/lagrange_multipliers.hpp"
#include "formulations/null_space.hpp"
#include "formulations/udwadia_kalaba.hpp"
#include "formulations/vakonomic.hpp"
