// nholo/tests/cpu_ensemble_run.hpp — a system's ensemble integrated by the
// production CPU backend (host/backends/cpu_ensemble.hpp: CpuDevice and
// CpuEnsemble (formulation_system(Sys)) with an EnsembleLayout, as the run pipeline builds them),
// for the tests that check the backends' determinism and layouts.
//
//   CpuEnsembleRun<Sys> run(Backend::omp, 2, sys, opt, save_times, count, window,
//                           {"q", "qdot", "energy"});
//   run.start(q0, qd0, l0);             // row-major [i n + c], [i m + l] (l0 may be empty)
//   int slot = run.window(k0, ns);      // saves [k0, k0 + ns), into slot 0 or 1 (alternating)
//   run.field(slot, "q", ns)            // a copy, trajectory-major [(i ns + k) nc + c]
//   run.finish()                        // status, steps, ... (SliceResults)
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "host/backends/cpu_ensemble.hpp"
#include "host/config/tables.hpp"

namespace nholo_test {

template <class Sys>
class CpuEnsembleRun {
  static constexpr int n = Sys::n, m = Sys::m;

 public:
  CpuEnsembleRun(nholo::Backend backend, int threads, const Sys& sys,
                 const nholo::IntegratorOptions& opt, const std::vector<double>& save_times,
                 int64_t count, int window, const std::vector<std::string>& fields)
      : dev_(backend, threads), count_(count) {
    nholo::EnsembleLayout layout;
    layout.max_count = count;
    layout.window = window;
    layout.fields = fields;
    for (const auto& f : fields)
      layout.components.push_back(nholo::tables::field_components(f, n, m));
    fields_ = fields;
    components_ = layout.components;
    dev_.set_save_times(save_times);
    ens_ = std::make_unique<nholo::CpuEnsemble>("test", dev_, nholo::formulation_system(sys, opt),
                                                layout);
  }
  CpuEnsembleRun(const CpuEnsembleRun&) = delete;  // the ensemble refers to dev_
  CpuEnsembleRun& operator=(const CpuEnsembleRun&) = delete;

  // The slice's initial states (none rejected), t0 = 0.
  void start(const std::vector<double>& q0, const std::vector<double>& qd0,
             std::vector<double> l0 = {}) {
    if (l0.empty()) l0.assign(static_cast<std::size_t>(m > 0 ? m : 1) * count_, 0.0);
    const std::vector<uint8_t> rejected(static_cast<std::size_t>(count_), 0);
    ens_->start_slice(count_, q0.data(), qd0.data(), l0.data(), nullptr, rejected.data(), 0.0);
    next_slot_ = 0;
  }

  // Integrates saves [k0, k0 + ns) into the next slot; returns that slot.
  int window(int64_t k0, int ns) {
    const int slot = next_slot_;
    ens_->run_window(k0, ns, slot);
    ens_->wait(slot);
    next_slot_ = 1 - slot;
    return slot;
  }

  // Field `name` of the window in `slot` (ns saves), trajectory-major.
  std::vector<double> field(int slot, const std::string& name, int ns) const {
    for (std::size_t j = 0; j < fields_.size(); ++j)
      if (fields_[j] == name) {
        const double* p = ens_->slot(slot).fields[j];
        return std::vector<double>(p, p + count_ * ns * components_[j]);
      }
    throw std::invalid_argument("field " + name + " is not in the layout");
  }

  const nholo::WindowSlot& slot(int s) const { return ens_->slot(s); }

  nholo::SliceResults finish() {
    nholo::SliceResults r;
    ens_->finish_slice(r);
    return r;
  }

 private:
  nholo::CpuDevice dev_;
  int64_t count_;
  std::vector<std::string> fields_;
  std::vector<int> components_;
  std::unique_ptr<nholo::CpuEnsemble> ens_;
  int next_slot_ = 0;
};

}  // namespace nholo_test
