// nholo/kernels/formulations/conflated.hpp — the conflated formulation
// (Hamel's paradox), "conflated": the Udwadia–Kalaba system of the model with
// its conflated Lagrangian (Conflated<Model>, model.hpp), with the
// singular-mass form (Udwadia & Wanichanon (2010) eq 2.7) chosen
// automatically. y = (q, qd).
#pragma once

#include "kernels/formulations/udwadia_kalaba.hpp"
#include "kernels/model.hpp"

namespace nholo {

// The conflated formulation (Hamel's paradox): the Udwadia–Kalaba system of
// the model with its conflated Lagrangian, formulation_name "conflated".
template <class Model, class S = double>
using ConflatedSystem = UdwadiaKalabaSystem<Conflated<Model>, S>;

}  // namespace nholo
