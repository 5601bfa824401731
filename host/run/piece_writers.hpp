// nholo/host/run/piece_writers.hpp — stage 7 of a run (host/run/runner.hpp): the
// jobs the output sink (host/io/output_sink.hpp, the writer thread) runs, in
// order, each writing and committing one piece (host/io/pieces.hpp): a
// slice's initial states, a window's fields and block moments (while the
// device integrates the next window), a finished slice's results.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "host/config/config.hpp"
#include "host/io/field_memory.hpp"
#include "host/io/in_place_file.hpp"
#include "host/io/output_sink.hpp"
#include "host/io/pieces.hpp"
#include "host/io/result_layout.hpp"
#include "host/run/device_ensembles.hpp"
#include "host/run/initial_states.hpp"
#include "host/run/progress.hpp"
#include "host/run/run_options.hpp"
#include "kernels/reduce.hpp"

namespace nholo::detail {

// The results of a finished slice, handed to the writer: per formulation,
// per pair (max distance [2 p], first exceed time [2 p + 1]), and with a
// drift statistic each trajectory's predicted drift.
struct SliceOutput {
  std::shared_ptr<std::vector<SliceResults>> results;
  std::shared_ptr<std::vector<std::vector<double>>> pair_res;
  std::vector<double> pred;
};

class PieceWriters {
 public:
  PieceWriters(const RunConfig& cfg, const LayoutShape& shape, const PieceDir& pieces,
               const OutputLayout& layout, DeviceEnsembles& ens, OutputSink& sink,
               Progress& progress, RunSummary& sum, FieldMemory* memory = nullptr)
      : cfg_(cfg),
        shape_(shape),
        pieces_(pieces),
        layout_(layout),
        ens_(ens),
        sink_(sink),
        progress_(progress),
        sum_(sum),
        nf_(static_cast<int>(cfg.formulations.size())),
        nv_(static_cast<int>(cfg.varied_params.size())),
        gz_(cfg.compression),
        in_place_(pieces),
        memory_(memory),
        poison_released_slots_(std::getenv("NHOLO_FAILPOINT_POISON_RELEASED_SLOTS") != nullptr) {}

  // slice s's initial states (copied: the caller reuses st) and counts
  void post_init(int64_t s, int64_t count, const SliceStates& st, const InitCounts& ic) {
    sink_.post([this, s, count, q0 = st.q0, qd0 = st.qd0, l0 = st.l0, pv = st.pv, ic] {
      write_init(s, count, q0, qd0, l0, pv, ic);
    });
  }

  // window w of slice s, from host slot `slot` (waited for there, then
  // released to the integrating thread)
  void post_window(int slot, int64_t s, int64_t w, int64_t count, int64_t ns) {
    sink_.post([this, slot, s, w, count, ns] { write_window(slot, s, w, count, ns); });
  }

  // slice s [begin, end) finished: its results; the slice is in the file
  // once this piece is committed
  void post_slice(int64_t s, int64_t begin, int64_t end, SliceOutput so) {
    sink_.post([this, s, begin, end, so = std::move(so)] { write_slice(s, begin, end, so); });
  }

 private:
  const std::vector<hsize_t>& chunk(const std::string& path) const { return layout_.chunk(path); }

  // whose piece it is (checked when a run resumes: piece_stamp_attrs)
  void stamp(Piece& p, int64_t s, int64_t w) {
    h5::Group r = p.root();
    r.set_attr(kPieceConfigAttr, cfg_.result_hash);
    r.set_attr(kPieceSliceAttr, s);
    r.set_attr(kPieceWindowAttr, w);
  }

  void write_init(int64_t s, int64_t count, const std::vector<double>& q0,
                  const std::vector<double>& qd0, const std::vector<double>& l0,
                  const std::vector<double>& pv, const InitCounts& ic) {
    const int n = shape_.n, m = shape_.m;
    Piece p(pieces_, PieceDir::init_name(s));
    stamp(p, s, -1);
    p.write("initial/q0", {H(count), H(n)}, chunk("initial/q0"), gz_, q0.data());
    p.write("initial/qdot0", {H(count), H(n)}, chunk("initial/qdot0"), gz_, qd0.data());
    p.write("initial/lambda0", {H(count), H(m)}, chunk("initial/lambda0"), gz_, l0.data());
    if (nv_ > 0)
      p.write("initial/params", {H(count), H(nv_)}, chunk("initial/params"), gz_, pv.data());
    {
      h5::Group r = p.root();
      r.set_attr("completed_from_constraints", ic.completed);
      r.set_attr("projected", ic.projected);
      r.set_attr("rejected", ic.rejected);
      r.set_attr("singular", ic.singular);
      r.set_attr("params_rejected", ic.params_rejected);
    }
    p.commit();
  }

  void write_window(int slot, int64_t s, int64_t w, int64_t count, int64_t ns) {
    const int n = shape_.n;
    const auto o0 = Clock::now();
    Piece p(pieces_, PieceDir::window_name(s, w));
    stamp(p, s, w);
    const int64_t blocks = (count + kStatBlock - 1) / kStatBlock;
    const size_t len = static_cast<size_t>(blocks * ns * n);
    std::vector<double> mom(5 * len);
    std::vector<FieldBlock> in_place;  // written into the result file, linked from the piece
    for (int f = 0; f < nf_; ++f) {
      ens_[f].wait(slot);
      const WindowSlot& S = ens_[f].slot(slot);
      const std::string& form = cfg_.formulations[f];
      for (size_t j = 0; j < cfg_.fields.size(); ++j) {
        const int nc = ens_.layout().components[j];
        const std::string path = form + "/" + cfg_.fields[j];
        const Spec& sp = layout_.spec(path);
        sum_.output_bytes += count * ns * nc * static_cast<int64_t>(sizeof(double));
        if (sp.in_memory) {  // the Python module's arrays (host/io/field_memory.hpp)
          std::vector<hsize_t> off, cnt;
          layout_.block(sp, s, w, off, cnt);
          memory_->write_block(path, static_cast<int64_t>(off[0]), count,
                               static_cast<int64_t>(off[1]), ns, nc, S.fields[j]);
          continue;
        }
        if (sp.in_place) {
          std::vector<hsize_t> off, cnt;
          layout_.block(sp, s, w, off, cnt);
          in_place.push_back(FieldBlock{path, S.fields[j], static_cast<int64_t>(off[0]), count,
                                        static_cast<int64_t>(off[1]), ns, nc});
          continue;
        }
        std::vector<hsize_t> dims = {H(count), H(ns)};
        if (sp.dims.size() == 3) dims.push_back(H(nc));
        p.write(path, dims, chunk(path), gz_, S.fields[j]);
      }
      for (int which = 0; which < 2; ++which) {
        for (int part = 0; part < 5; ++part)
          std::copy(S.moments[which][part], S.moments[which][part] + len, mom.begin() + part * len);
        p.write("statistics/" + form + (which ? "/block_moments_qdot" : "/block_moments_q"),
                {5, H(blocks), H(ns), H(n)}, {}, 0, mom.data());
      }
    }
    // the fields into the result file (durably), then the links to them
    in_place_.write(in_place);
    // checked when a run resumes (OutputLayout::discard_damaged_slices); taken
    // before the slot is released: its buffers then take the next window
    std::vector<uint64_t> sums;
    for (const FieldBlock& b : in_place)
      sums.push_back(block_checksum(b.data, b.count * b.saves * b.components));
    if (poison_released_slots_) poison_slot(slot, count, ns);
    sink_.release(slot);
    for (size_t i = 0; i < in_place.size(); ++i) {
      const FieldBlock& b = in_place[i];
      p.root().create_external_link(b.path, InPlaceFile::name(), "/" + b.path);
      p.root().set_attr(block_checksum_attr(b.path), static_cast<int64_t>(sums[i]));
    }
    p.commit();
    sum_.output_seconds += seconds_since(o0);
  }

  // failpoint (testing aid): NHOLO_FAILPOINT_POISON_RELEASED_SLOTS fills a
  // window's fields with NaN as the writer hands the slot back, as the next
  // window overwriting it at once would: whatever the writer still reads
  // from a released slot then shows (tests/test_faults.cpp)
  void poison_slot(int slot, int64_t count, int64_t ns) {
    for (int f = 0; f < nf_; ++f)
      for (size_t j = 0; j < cfg_.fields.size(); ++j)
        std::fill_n(ens_[f].slot(slot).fields[j], count * ns * ens_.layout().components[j], NAN);
  }

  void write_slice(int64_t s, int64_t begin, int64_t end, const SliceOutput& so) {
    const int64_t count = end - begin;
    Piece p(pieces_, PieceDir::slice_name(s));
    stamp(p, s, -1);
    const std::vector<hsize_t> one = {H(count)};
    for (int f = 0; f < nf_; ++f) {
      SliceResults& R = (*so.results)[f];
      const std::string& form = cfg_.formulations[f];
      p.write(form + "/status", one, chunk(form + "/status"), gz_, R.status.data());
      p.write(form + "/steps", one, chunk(form + "/steps"), gz_, R.steps.data());
      p.write(form + "/rejected", one, chunk(form + "/rejected"), gz_, R.rejected.data());
      p.write(form + "/fail_time", one, chunk(form + "/fail_time"), gz_, R.fail_time.data());
      if (!R.path_residual.empty())  // the embedded formulation's residual
        p.write(form + "/euler_poisson_residual", one, chunk(form + "/euler_poisson_residual"), gz_,
                R.path_residual.data());
      if (cfg_.lyapunov) {  // the tangent system's exponent (kernels/lyapunov.hpp)
        if (R.lyapunov.size() != static_cast<size_t>(count))
          throw std::logic_error("formulation " + form + ": the slice has no Lyapunov exponents");
        p.write(form + "/lyapunov", one, chunk(form + "/lyapunov"), gz_, R.lyapunov.data());
      }
      if (shape_.has_drift) write_drift(p, form, count, R, so.pred);
      if (!cfg_.events.empty()) write_events(p, form, count, R);
    }
    for (size_t q = 0; q < ens_.n_pairs(); ++q) {
      auto& md = (*so.pair_res)[2 * q];
      auto& fe = (*so.pair_res)[2 * q + 1];
      // a pair is undefined where either formulation failed
      const auto& sa = (*so.results)[ens_.pair(q).first].status;
      const auto& sb = (*so.results)[ens_.pair(q).second].status;
      for (int64_t i = 0; i < count; ++i)
        if (sa[i] != 0 || sb[i] != 0) md[i] = fe[i] = NAN;
      p.write(ens_.pair_path(q, "max_distance"), one, chunk(ens_.pair_path(q, "max_distance")), gz_,
              md.data());
      p.write(ens_.pair_path(q, "first_exceed_time"), one,
              chunk(ens_.pair_path(q, "first_exceed_time")), gz_, fe.data());
    }
    p.commit();  // the slice is finished: it is in the file
    std::ostringstream msg;
    msg << "trajectories [" << begin << ", " << end << ") finished";
    progress_.message(msg.str());
  }

  // the events of formulation form: counts, and the records (t, q, qd per
  // crossing, kernels/trajectory_events.hpp) split into time, q and qdot
  void write_events(Piece& p, const std::string& form, int64_t count, const SliceResults& R) {
    const int n = shape_.n, len = 1 + 2 * n;
    if (R.event_count.size() != cfg_.events.size() * static_cast<size_t>(count))
      throw std::logic_error("the slice's event counts do not match its events");
    int64_t offset = 0;  // records per trajectory of the events before
    for (size_t e = 0; e < cfg_.events.size(); ++e) {
      const std::string g = form + "/events/" + cfg_.events[e].name + "/";
      const int64_t mr = cfg_.events[e].max_records, k_end = count * mr;
      p.write(g + "count", {H(count)}, chunk(g + "count"), gz_, R.event_count.data() + e * count);
      std::vector<double> t(k_end), q(k_end * n), qd(k_end * n);
      const double* rec = R.event_records.data() + offset * count * len;
      for (int64_t k = 0; k < k_end; ++k) {
        t[k] = rec[k * len];
        for (int c = 0; c < n; ++c) {
          q[k * n + c] = rec[k * len + 1 + c];
          qd[k * n + c] = rec[k * len + 1 + n + c];
        }
      }
      p.write(g + "time", {H(count), H(mr)}, chunk(g + "time"), gz_, t.data());
      p.write(g + "q", {H(count), H(mr), H(n)}, chunk(g + "q"), gz_, q.data());
      p.write(g + "qdot", {H(count), H(mr), H(n)}, chunk(g + "qdot"), gz_, qd.data());
      offset += mr;
    }
  }

  // the drift statistic of formulation form: slope, band, ratio to the prediction
  void write_drift(Piece& p, const std::string& form, int64_t count, const SliceResults& R,
                   const std::vector<double>& pred) {
    std::vector<double> v(count), band(count), ratio(count);
    for (int64_t i = 0; i < count; ++i) {
      v[i] = line_fit_slope(R.line_fit.data(), count, i);
      band[i] = line_fit_range(R.line_fit.data(), count, i);
      // undefined (NaN), not 0 or inf, where the prediction is not a finite
      // non-zero number (the coin with theta_dot = 0: no bounded drift)
      const double r = v[i] / pred[i];
      ratio[i] = std::isfinite(pred[i]) && std::isfinite(r) ? r : std::nan("");
    }
    const std::string sg = "statistics/" + form + "/";
    const std::vector<hsize_t> one = {H(count)};
    p.write(sg + "drift_velocity", one, chunk(sg + "drift_velocity"), gz_, v.data());
    p.write(sg + "band", one, chunk(sg + "band"), gz_, band.data());
    p.write(sg + "drift_ratio", one, chunk(sg + "drift_ratio"), gz_, ratio.data());
  }

  const RunConfig& cfg_;
  const LayoutShape& shape_;
  const PieceDir& pieces_;
  const OutputLayout& layout_;
  DeviceEnsembles& ens_;
  OutputSink& sink_;
  Progress& progress_;
  RunSummary& sum_;
  int nf_, nv_, gz_;
  InPlaceFile in_place_;
  FieldMemory* memory_;  // the fields held in memory (nullptr: none)
  bool poison_released_slots_;
};

}  // namespace nholo::detail
