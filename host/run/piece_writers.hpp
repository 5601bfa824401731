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
#include <variant>
#include <vector>

#include "host/config/config.hpp"
#include "host/config/trajectory_results.hpp"
#include "host/io/field_memory.hpp"
#include "host/io/in_place_file.hpp"
#include "host/io/output_sink.hpp"
#include "host/io/pieces.hpp"
#include "host/io/result_layout.hpp"
#include "host/run/device_ensembles.hpp"
#include "host/run/initial_states.hpp"
#include "host/run/progress.hpp"
#include "host/run/run_context.hpp"
#include "host/run/run_options.hpp"
#include "kernels/reduce.hpp"

namespace nholo::stages {

// the slice plan's and the output layout's names (io/slice_plan.hpp,
// io/result_layout.hpp)
using detail::Clock;
using detail::H;
using detail::LayoutShape;
using detail::OutputLayout;
using detail::seconds_since;
using detail::Spec;

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
  explicit PieceWriters(const RunContext& run)
      : cfg_(run.config),
        shape_(run.shape),
        pieces_(run.pieces),
        layout_(run.layout),
        ens_(run.ensembles),
        sink_(run.sink),
        progress_(run.progress),
        sum_(run.summary),
        nf_(static_cast<int>(run.config.formulations.size())),
        nv_(static_cast<int>(run.config.varied_params.size())),
        gz_(run.config.compression),
        in_place_(run.pieces),
        memory_(run.options.memory),
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

  // A piece's datasets written into the result file (RowWriter, opened at
  // the first) and their checksums, for the piece's links to them.
  struct InPlaceRows {
    std::unique_ptr<RowWriter> writer;
    std::vector<std::pair<std::string, uint64_t>> written;
  };

  // Slice s's rows of the per-trajectory dataset `path` (shape dims, the
  // slice's trajectories first): into the result file where the layout has
  // it in place, else into the piece.
  template <class T>
  void put(Piece& p, InPlaceRows& rows, int64_t s, const std::string& path,
           const std::vector<hsize_t>& dims, const T* data) {
    const Spec& sp = layout_.spec(path);
    if (!sp.in_place) {
      p.write(path, dims, sp.chunk, gz_, data);
      return;
    }
    std::vector<hsize_t> off, cnt;
    layout_.block(sp, s, 0, off, cnt);
    // the values' bytes are what the file stores: the same type
    if (dims.empty() || cnt != dims || h5::detail::scalar_of<T>() != sp.type)
      throw std::logic_error("the slice's block of '" + path + "' is not the layout's");
    if (!rows.writer) rows.writer = std::make_unique<RowWriter>(in_place_);
    rows.written.emplace_back(path, rows.writer->write(path, static_cast<int64_t>(off[0]),
                                                       static_cast<int64_t>(dims[0]), data));
  }

  // What put wrote into the result file made durable, then linked from the
  // piece with its checksums (checked when a run resumes)
  void link_rows(Piece& p, InPlaceRows& rows) {
    if (rows.written.empty()) return;
    rows.writer->sync();
    h5::Group r = p.root();
    for (const auto& [path, sum] : rows.written) {
      r.create_external_link(path, InPlaceFile::name(), "/" + path);
      r.set_attr(block_checksum_attr(path), static_cast<int64_t>(sum));
    }
  }

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
    const auto o0 = Clock::now();
    Piece p(pieces_, PieceDir::init_name(s));
    stamp(p, s, -1);
    InPlaceRows rows;
    put(p, rows, s, "initial/q0", {H(count), H(n)}, q0.data());
    put(p, rows, s, "initial/qdot0", {H(count), H(n)}, qd0.data());
    put(p, rows, s, "initial/lambda0", {H(count), H(m)}, l0.data());
    if (nv_ > 0) put(p, rows, s, "initial/params", {H(count), H(nv_)}, pv.data());
    link_rows(p, rows);
    {
      h5::Group r = p.root();
      r.set_attr("completed_from_constraints", ic.completed);
      r.set_attr("projected", ic.projected);
      r.set_attr("rejected", ic.rejected);
      r.set_attr("singular", ic.singular);
      r.set_attr("params_rejected", ic.params_rejected);
    }
    p.commit();
    sum_.output_seconds += seconds_since(o0);
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
    const auto o0 = Clock::now();
    Piece p(pieces_, PieceDir::slice_name(s));
    stamp(p, s, -1);
    InPlaceRows rows;
    const std::vector<hsize_t> one = {H(count)};
    for (int f = 0; f < nf_; ++f) {
      const SliceResults& R = (*so.results)[f];
      const std::string& form = cfg_.formulations[f];
      write_results(p, rows, s, form, count, R);
      if (shape_.has_drift) write_drift(p, rows, s, form, count, R, so.pred);
      if (!cfg_.events.empty()) write_events(p, rows, s, form, count, R);
    }
    for (size_t q = 0; q < ens_.n_pairs(); ++q) {
      auto& md = (*so.pair_res)[2 * q];
      auto& fe = (*so.pair_res)[2 * q + 1];
      // a pair is undefined where either formulation failed
      const auto& sa = (*so.results)[ens_.pair(q).first].status();
      const auto& sb = (*so.results)[ens_.pair(q).second].status();
      for (int64_t i = 0; i < count; ++i)
        if (sa[i] != 0 || sb[i] != 0) md[i] = fe[i] = NAN;
      put(p, rows, s, ens_.pair_path(q, "max_distance"), one, md.data());
      put(p, rows, s, ens_.pair_path(q, "first_exceed_time"), one, fe.data());
    }
    link_rows(p, rows);
    p.commit();  // the slice is finished: it is in the file
    sum_.output_seconds += seconds_since(o0);
    std::ostringstream msg;
    msg << "trajectories [" << layout_.first() + begin << ", " << layout_.first() + end
        << ") finished";  // global indices (a shard's)
    progress_.message(msg.str());
  }

  // the per-trajectory results of formulation form the run has
  // (host/config/trajectory_results.hpp)
  void write_results(Piece& p, InPlaceRows& rows, int64_t s, const std::string& form,
                     int64_t count, const SliceResults& R) {
    const tables::FormulationEntry* fe = tables::find_formulation(form);
    const int k = cfg_.lyapunov ? cfg_.lyapunov_exponents : 0;
    for (const auto& r : tables::kTrajectoryResults) {
      if (!tables::result_present(r, fe, k, !cfg_.lyapunov_observables.empty())) continue;
      const int width = tables::result_width(r, k);
      std::vector<hsize_t> dims = {H(count)};
      if (r.width != tables::ResultWidth::one) dims.push_back(H(width));
      std::visit(
          [&](const auto& column) {
            if (column.size() != static_cast<size_t>(count * width))
              throw std::logic_error("formulation " + form + ": the slice has no values of '" +
                                     r.name + "'");
            put(p, rows, s, form + "/" + r.name, dims, column.data());
          },
          R.columns[static_cast<size_t>(r.id)]);
    }
  }

  // the events of formulation form: counts, and the records (t, q, qd per
  // crossing, kernels/trajectory_events.hpp) split into time, q and qdot
  void write_events(Piece& p, InPlaceRows& rows, int64_t s, const std::string& form, int64_t count,
                    const SliceResults& R) {
    const int n = shape_.n, len = 1 + 2 * n;
    const size_t ne = cfg_.events.size();
    if (R.event_count.size() != 2 * ne * static_cast<size_t>(count))
      throw std::logic_error("the slice's event counts do not match its events");
    int64_t offset = 0;  // records per trajectory of the events before
    for (size_t e = 0; e < cfg_.events.size(); ++e) {
      const std::string g = form + "/events/" + cfg_.events[e].name + "/";
      const int64_t mr = cfg_.events[e].max_records, k_end = count * mr;
      put(p, rows, s, g + "count", {H(count)}, R.event_count.data() + e * count);
      put(p, rows, s, g + "undersampled_steps", {H(count)},
          R.event_count.data() + (ne + e) * count);
      std::vector<double> t(k_end), q(k_end * n), qd(k_end * n);
      const double* rec = R.event_records.data() + offset * count * len;
      for (int64_t k = 0; k < k_end; ++k) {
        t[k] = rec[k * len];
        for (int c = 0; c < n; ++c) {
          q[k * n + c] = rec[k * len + 1 + c];
          qd[k * n + c] = rec[k * len + 1 + n + c];
        }
      }
      put(p, rows, s, g + "time", {H(count), H(mr)}, t.data());
      put(p, rows, s, g + "q", {H(count), H(mr), H(n)}, q.data());
      put(p, rows, s, g + "qdot", {H(count), H(mr), H(n)}, qd.data());
      offset += mr;
    }
  }

  // the drift statistic of formulation form: slope, band, ratio to the prediction
  void write_drift(Piece& p, InPlaceRows& rows, int64_t s, const std::string& form, int64_t count,
                   const SliceResults& R, const std::vector<double>& pred) {
    std::vector<double> v(count), band(count), ratio(count);
    for (int64_t i = 0; i < count; ++i) {
      // a whole-run statistic: undefined for a trajectory that failed (its
      // saves before the failure would bias the ensemble's mean); one that a
      // stop event ended has it over its saves up to the event
      const Status st = static_cast<Status>(R.status()[i]);
      const bool whole = st == Status::ok || st == Status::event;
      v[i] = whole ? line_fit_slope(R.line_fit.data(), count, i) : std::nan("");
      band[i] = whole ? line_fit_range(R.line_fit.data(), count, i) : std::nan("");
      // undefined (NaN), not 0 or inf, where the prediction is not a finite
      // non-zero number (the coin with theta_dot = 0: no bounded drift)
      const double r = v[i] / pred[i];
      ratio[i] = std::isfinite(pred[i]) && std::isfinite(r) ? r : std::nan("");
    }
    const std::string sg = "statistics/" + form + "/";
    const std::vector<hsize_t> one = {H(count)};
    put(p, rows, s, sg + "drift_velocity", one, v.data());
    put(p, rows, s, sg + "band", one, band.data());
    put(p, rows, s, sg + "drift_ratio", one, ratio.data());
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

}  // namespace nholo::stages
