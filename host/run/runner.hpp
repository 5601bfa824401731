// nholo/host/run/runner.hpp — one run of one model, as a list of stages:
//
//   RunSummary s = run_model<Model>(cfg, opts, device);
//
//   1. slice plan      slices [begin, end) of whole kStatBlock blocks, sized
//                      from output.memory_budget_mb and the device's free memory
//   2. output layout   the master PATH.partial: every group, attribute and
//                      scale of the file, each per-trajectory dataset a
//                      virtual dataset over pieces still to be written
//                      (host/io/pieces.hpp: crash-consistent output)
//   3. device ensembles one per formulation (host/backends/device_ensemble.hpp), state
//                      allocated once, kept on the device for a whole slice
//   for each slice:
//   4. initial states  sampled (counter-based), with the parameters that vary
//                      per trajectory ([ensemble.params]), completed from the
//                      constraints with each trajectory's own parameters,
//                      projected / rejected / refused (on_violation)
//      for each window of saves:
//   5.   integrate     every formulation, on the device
//   6.   reduce        on the device: block moments of q and qdot, pairwise
//                      distances between formulations, the model's own
//                      statistic (e.g. the coin's drift), transposition
//   7.   output sink   the writer thread commits window w as a piece (fields,
//                      block moments) while the device runs window w+1; host
//                      slots are double-buffered; each slice ends with its
//                      own piece (status, steps, comparisons, drift)
//   8. outcome         statistics merged in block order from the pieces of the
//                      finished slices; PATH completed in place (uncompressed
//                      fields, io/in_place_file.hpp) or assembled (all
//                      finished), or the master replaced by one with the
//                      statistics (stopped)
//      interrupts (SIGINT, SIGTERM, SIGHUP) are honoured between windows and,
//      on the CPU backends, between chunks of trajectories inside a window
//      (about 0.1 s apart) and during the initial states.
// Peak memory is set by the slice size and the window, never by the ensemble
// size or the number of saves.
//
// Each stage is a type of its own, in its own header (runner_impl.hpp
// includes them and drives them): 1 io/slice_plan.hpp, 2 io/result_layout.hpp,
// 3, 5, 6 run/device_ensembles.hpp, 4 run/initial_states.hpp, 7
// run/piece_writers.hpp, the loop over slices and windows
// run/window_loop.hpp, 8 io/outcome.hpp; the root attributes
// io/root_attributes.hpp, interrupts run/interrupt.hpp. `nholo merge` is not
// a run: host/io/merge.hpp writes its file with the same output layout.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "host/backends/cpu_ensemble.hpp"
#include "host/backends/device_ensemble.hpp"
#include "host/config/config.hpp"
#include "host/config/model_info.hpp"
#include "host/config/sampling.hpp"
#include "host/config/tables.hpp"
#include "host/io/h5.hpp"
#include "host/io/statistics.hpp"
#include "host/run/interrupt.hpp"
#include "host/run/progress.hpp"
#include "host/run/run_options.hpp"
#include "kernels/consistency.hpp"
#include "kernels/formulations.hpp"
#include "kernels/formulations/embedded.hpp"
#include "models/registry.hpp"
#ifdef NHOLO_WITH_CUDA
#include "host/backends/cuda_ensemble.hpp"
#endif

namespace nholo {

template <class Model>
typename Model::Params params_from_config(const RunConfig& cfg) {
  double v[Model::n_params > 0 ? Model::n_params : 1] = {0};
  for (int j = 0; j < Model::n_params; ++j) v[j] = cfg.params.at(Model::param_info[j].name);
  return Model::make_params(v);
}

// fn(Sys{}) for the system of formulation f of Model (the formulations
// make_formulation can build); ConfigError when Model has no such formulation.
template <class Model, class Fn>
auto with_formulation(const std::string& f, Fn&& fn) -> decltype(fn(UdwadiaKalabaSystem<Model>{})) {
  using tables::Formulation;
  if (const tables::FormulationEntry* e = tables::find_formulation(f)) {
    switch (e->id) {
      case Formulation::udwadia_kalaba: return fn(UdwadiaKalabaSystem<Model>{});
      case Formulation::lagrange_multiplier: return fn(LagrangeMultiplierSystem<Model>{});
      case Formulation::null_space: return fn(NullSpaceSystem<Model>{});
      case Formulation::vakonomic:
        // velocity/position constraints only, and at least one (tables.hpp)
        if constexpr (tables::position_or_velocity_constraints_only(constraint_count<Model>(),
                                                                    Model::m_acceleration))
          return fn(VakonomicSystem<Model>{});
        break;
      case Formulation::conflated:
        if constexpr (has_conflated_lagrangian<Model>::value)
          return fn(UdwadiaKalabaSystem<Conflated<Model>>{});
        break;
      case Formulation::embedded:
        if constexpr (has_embedded_constraints<Model>::value) return fn(EmbeddedSystem<Model>{});
        break;
    }
  }
  throw ConfigError("formulations", "'" + f + "' is not available for model " + Model::name);
}

// The device ensemble of formulation f of Model on dev (CPU or CUDA). On a
// CUDA device, a formulation with a GPU module registered (a model file's
// kernel compiled by NVRTC, Device::add_module) runs that module; the
// models built into a CUDA-enabled nholo run their own kernels.
template <class Model>
std::unique_ptr<DeviceEnsemble> make_formulation(const std::string& f, const RunConfig& cfg,
                                                 Device& dev, const EnsembleLayout& layout) {
  const auto p = params_from_config<Model>(cfg);
  return with_formulation<Model>(f, [&](auto sys) -> std::unique_ptr<DeviceEnsemble> {
    using Sys = decltype(sys);
    sys.params = p;
    sys.eval = cfg.eval;
    if (dev.info().backend == Backend::cuda) {
      if (dev.has_module(f))
        return dev.module_ensemble(f, module_system(sys, cfg.integrator), cfg.integrator, layout);
#ifdef NHOLO_WITH_CUDA
      return cuda_backend::make_ensemble<Sys>(f, dev, sys, cfg.integrator, layout);
#else
      throw std::runtime_error("backend cuda: no GPU module of formulation " + f + " for model " +
                               Model::name + " (a model file runs on a GPU through the kernels "
                               "nholo compiles for it with NVRTC)");
#endif
    }
    return std::make_unique<CpuEnsemble<Sys>>(f, static_cast<CpuDevice&>(dev), sys, cfg.integrator,
                                              layout);
  });
}

// The whole run for one model on dev, writing ro.path (through its pieces).
template <class Model>
RunSummary run_model(const RunConfig& cfg, const RunOptions& ro, Device& dev);

}  // namespace nholo

// The definition of run_model is in host/run/runner_impl.hpp; it is instantiated
// once per model in generated translation units (CMakeLists.txt,
// reading AllModels of models/registry.hpp), so that the models compile in
// parallel; a model plugin holds its own (host/model_files/plugin_define.hpp).
