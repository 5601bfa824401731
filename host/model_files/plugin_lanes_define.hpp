// nholo/host/model_files/plugin_lanes_define.hpp — NHOLO_DEFINE_LANE_PLUGIN(Model,
// W, "isa"): the one line that makes a translation unit a model plugin's SIMD
// lane add-on (host/model_files/plugin_abi.h, nholo_lane_plugin): the lanes'
// kernels (kernels/ensemble_lanes.hpp) of the model's Udwadia–Kalaba
// formulation with W lanes. host/model_files/plugin.cpp (lane_plugin) writes
// the unit after the model's generated header and compiles it for the
// instruction set (-mavx2 -mfma [-mavx512f]) with `nholo` renamed to
// `nholo_<isa>`, as CMakeLists.txt compiles the built-in models' lane units:
// nothing it instantiates shares a symbol with code for the x86-64 baseline.
#pragma once

#include "host/backends/lane_call.hpp"
#include "host/model_files/plugin_abi.h"
#include "host/model_files/plugin_model_calls.hpp"
#include "kernels/formulations.hpp"

#if !defined(NHOLO_VERSION)
#error "a lane add-on is compiled with -DNHOLO_VERSION of its nholo"
#endif

// The one-lane kernels (parameters per trajectory) are a function of their
// own, defined by NHOLO_DEFINE_LANE_PLUGIN_ONE_LANE in the add-on's second
// unit, compiled at the same time as the first. The add-on of a plugin with
// the tangent systems (NHOLO_PLUGIN_TANGENT, a run with [lyapunov]) holds
// the lanes' kernels of the formulation's tangent system
// (kernels/lane_tangent.hpp) with NHOLO_PLUGIN_TANGENT_EXPONENTS tangent
// vectors, whose window is that plugin's.
#ifdef NHOLO_PLUGIN_TANGENT
#include "kernels/lane_tangent.hpp"
#ifndef NHOLO_PLUGIN_TANGENT_EXPONENTS
#define NHOLO_PLUGIN_TANGENT_EXPONENTS 1
#endif
#define NHOLO_LANE_PLUGIN_SYSTEM(ModelType)                                       \
  nholo::TangentSystem<nholo::UdwadiaKalabaSystem<NHOLO_PLUGIN_MODEL(ModelType)>, \
                       NHOLO_PLUGIN_TANGENT_EXPONENTS>
#else
#define NHOLO_LANE_PLUGIN_SYSTEM(ModelType) \
  nholo::UdwadiaKalabaSystem<NHOLO_PLUGIN_MODEL(ModelType)>
#endif
namespace nholo {
void lane_plugin_one_lane(const nholo_lane_run_c* r);
}

#define NHOLO_DEFINE_LANE_PLUGIN(ModelType, W, ISA)                          \
  extern "C" __attribute__((visibility("default"))) const nholo_lane_plugin* \
  nholo_lane_plugin_entry_v1(void) {                                         \
    using Sys = NHOLO_LANE_PLUGIN_SYSTEM(ModelType);                         \
    static const nholo_lane_plugin table = {                                 \
        NHOLO_PLUGIN_ABI_VERSION,                                            \
        W,                                                                   \
        NHOLO_VERSION,                                                       \
        NHOLO_PLUGIN_MODEL(ModelType)::name,                                 \
        ISA,                                                                 \
        sizeof(nholo::EnsembleWindow<Sys>),                                  \
        &nholo::run_lane_call<Sys, W, &nholo::lane_plugin_one_lane>};        \
    return &table;                                                           \
  }

#define NHOLO_DEFINE_LANE_PLUGIN_ONE_LANE(ModelType)                      \
  void nholo::lane_plugin_one_lane(const nholo_lane_run_c* r) {           \
    nholo::run_lanes_of_width<NHOLO_LANE_PLUGIN_SYSTEM(ModelType), 1>(r); \
  }
