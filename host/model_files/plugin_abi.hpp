// nholo/host/model_files/plugin_abi.hpp — the entry point of a model plugin: a shared
// library holding the run pipeline of one model (docs/models.md, "Plugins").
//
// A plugin exports one C symbol, `nholo_plugin_entry_v1`, returning a table
//
//   abi_version   NHOLO_PLUGIN_ABI_VERSION when it was compiled
//   identity      the nholo release, git revision and compiler it was compiled
//                 against (NHOLO_PLUGIN_IDENTITY)
//   model_name    the model it runs
//   describe      fills a ModelInfo (names, units, parameters, formulations)
//   run           run_model<Model> (host/run/runner.hpp): the type-erased runner
//   window_layout the sizes and alignments of EnsembleWindow<Sys> as this
//                 plugin's compiler lays it out, for formulation `f` (0: the
//                 model has no such formulation). The GPU module of the model
//                 (NVRTC, host/model_files/plugin.hpp) is compiled with static_asserts
//                 that its compiler lays the window out the same, since the
//                 plugin writes the kernel argument's bytes.
//
// The table's functions take nholo's own C++ types (RunConfig, RunOptions,
// Device, ModelInfo). That is sound because nholo loads a plugin only when its
// abi_version and identity equal its own: the same release, revision and
// compiler, hence the same layout of every type passed. A plugin from another
// nholo or compiler is refused before any of its functions is called, and
// rebuilt when nholo has its source (host/model_files/plugin.hpp).
//
// A plugin is compiled from one translation unit:
//   #include "my_model.hpp"          // struct MyModel, the Model concept
//   #include "host/model_files/plugin_define.hpp"
//   NHOLO_DEFINE_PLUGIN(MyModel)
// nholo writes that unit itself for a model file; nholo_add_model (CMake)
// writes it for a hand-written C++ model.
#pragma once

#include <cstdint>

#include "host/config/model_info.hpp"
#include "host/run/runner.hpp"

// 3: issue 26 (one room per job) changed the types a plugin shares with nholo
// (RunOptions lost fields; RunSummary, DeviceInfo moved to host/io/): plugins
// compiled before are refused and rebuilt.
// 4: the window scheduler (EnsembleArrays gained save_k and interval_start,
// RunSummary and EnsembleLayout new fields; a GPU module's kernel takes a
// WindowLaunch).
// 5: fields written in place (OutputLayout and Spec new members, PieceWriters
// holds an InPlaceFile).
#define NHOLO_PLUGIN_ABI_VERSION 5u

// The identity a plugin must share with the nholo that loads it. The
// compiling nholo passes NHOLO_VERSION and NHOLO_GIT_REVISION (-D).
#if defined(NHOLO_VERSION) && defined(NHOLO_GIT_REVISION)
#define NHOLO_PLUGIN_IDENTITY \
  "nholo " NHOLO_VERSION " (" NHOLO_GIT_REVISION "), g++ " __VERSION__ ", C++ " NHOLO_PLUGIN_STR(__cplusplus)
#define NHOLO_PLUGIN_STR(x) NHOLO_PLUGIN_STR2(x)
#define NHOLO_PLUGIN_STR2(x) #x
#endif

extern "C" {
// Sizes and alignments of EnsembleWindow<Sys> (kernels/ensemble.hpp) and of
// its members' types (NVRTC has no constant-expression offsetof; equal sizes
// and alignments of every member type give equal offsets).
struct nholo_window_layout {
  std::uint64_t bytes, align, sys, sys_align, params, opt, opt_align, arr;
};
struct nholo_plugin_v1 {
  std::uint32_t abi_version;
  const char* identity;
  const char* model_name;
  void (*describe)(nholo::ModelInfo* out);
  nholo::RunSummary (*run)(const nholo::RunConfig&, const nholo::RunOptions&, nholo::Device&);
  int (*window_layout)(const char* formulation, nholo_window_layout* out);
};
typedef const nholo_plugin_v1* (*nholo_plugin_entry_v1_fn)(void);
}

#define NHOLO_PLUGIN_ENTRY_SYMBOL "nholo_plugin_entry_v1"
