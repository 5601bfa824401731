// nholo/host/backends/slice_results.hpp — a finished slice's per-trajectory
// results on the host: one column per row of the table of per-trajectory
// results (host/config/trajectory_results.hpp), read from a backend's slice
// state by one function for every backend (read_slice_results), and the
// events' and the drift fit's arrays, which have shapes of their own.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "host/config/trajectory_results.hpp"
#include "kernels/ensemble.hpp"
#include "kernels/lyapunov.hpp"
#include "kernels/status.hpp"

namespace nholo {

// The C++ type of a per-trajectory result's values.
template <tables::ResultType T>
struct result_value;
template <>
struct result_value<tables::ResultType::i32> {
  using type = int32_t;
};
template <>
struct result_value<tables::ResultType::i64> {
  using type = int64_t;
};
template <>
struct result_value<tables::ResultType::f64> {
  using type = double;
};
template <tables::TrajectoryResult R>
using result_value_t = typename result_value<tables::trajectory_result(R).type>::type;

// One per-trajectory result of a slice: a value per trajectory (or its
// row's width of them, [i * width + j]), of its row's type; empty when the
// run does not compute it.
using ResultColumn = std::variant<std::vector<int32_t>, std::vector<int64_t>, std::vector<double>>;

struct SliceResults {
  // columns[r] is the column of kTrajectoryResults[r], of its type
  std::array<ResultColumn, tables::kTrajectoryResultCount> columns;
  std::vector<double> line_fit;  // LineFitKernel sums [a * count + i], when line_fit
  // the events' counts and records (EnsembleLayout::events; empty: none)
  std::vector<int64_t> event_count;
  std::vector<double> event_records;

  SliceResults() {
    for (std::size_t r = 0; r < columns.size(); ++r) {
      switch (tables::kTrajectoryResults[r].type) {
        case tables::ResultType::i32: columns[r] = std::vector<int32_t>(); break;
        case tables::ResultType::i64: columns[r] = std::vector<int64_t>(); break;
        case tables::ResultType::f64: columns[r] = std::vector<double>(); break;
      }
    }
  }

  template <tables::TrajectoryResult R>
  std::vector<result_value_t<R>>& column() {
    return std::get<std::vector<result_value_t<R>>>(columns[static_cast<std::size_t>(R)]);
  }
  template <tables::TrajectoryResult R>
  const std::vector<result_value_t<R>>& column() const {
    return std::get<std::vector<result_value_t<R>>>(columns[static_cast<std::size_t>(R)]);
  }
  // the columns every run has, by name
  const std::vector<int32_t>& status() const { return column<tables::TrajectoryResult::status>(); }
  const std::vector<int64_t>& steps() const { return column<tables::TrajectoryResult::steps>(); }
  const std::vector<int64_t>& rejected() const {
    return column<tables::TrajectoryResult::rejected>();
  }
  const std::vector<double>& fail_time() const {
    return column<tables::TrajectoryResult::fail_time>();
  }
};

// A backend's slice once its last window ran: the integrator's arrays and the
// state y (component c of trajectory i at y[c count + i], kernels/ensemble.hpp)
// in the backend's memory, and how to copy from there to the host.
struct SliceState {
  EnsembleArrays<double> arrays;  // y, status, steps, rejected, fail_time
  int64_t count = 0;
  int path_residual_index = -1;  // Sys::path_residual_index, -1: none
  int tangent_base_size = -1;    // a tangent system's N0 (kernels/lyapunov.hpp), -1: none
  int tangent_exponents = 0;     // and its K (exponents)
  // the observed exponents' (kernels/lyapunov.hpp): the run's observables
  // on the host (null: none), the model's n, and arrays.t and arrays.params
  const ObservableTable* observables = nullptr;
  int n = 0;
  std::function<void(void* host, const void* device, std::size_t bytes)> to_host;
};

namespace detail {

template <class T>
void copy_column(const SliceState& st, const T* from, std::vector<T>& to) {
  to.resize(static_cast<std::size_t>(st.count));
  if (st.count > 0) st.to_host(to.data(), from, to.size() * sizeof(T));
}

// The slice's final tangent system's rows on the host, copied once for
// every result read from them: the state's N0 rows, the K deltas' K N0 rows,
// then the K log sums, tau, T; with observables also the times and the
// varied parameters' rows they read.
struct HostTangentRows {
  std::vector<double> rows, t, varied;
  std::vector<double> work;
  bool copied = false;
  TangentRows of(const SliceState& st) {
    const int N0 = st.tangent_base_size, K = st.tangent_exponents;
    const int64_t count = st.count;
    if (!copied) {
      rows.resize(static_cast<std::size_t>(N0 + K * N0 + K + 2) * count);
      if (!rows.empty()) st.to_host(rows.data(), st.arrays.y, rows.size() * sizeof(double));
      if (st.observables) {
        t.resize(static_cast<std::size_t>(count));
        if (count > 0) st.to_host(t.data(), st.arrays.t, t.size() * sizeof(double));
        varied.resize(static_cast<std::size_t>(st.observables->n_varied_read) * count);
        if (!varied.empty()) {
          if (!st.arrays.params)
            throw std::logic_error("observables read varied parameters the slice lacks");
          st.to_host(varied.data(), st.arrays.params, varied.size() * sizeof(double));
        }
      }
      work.resize(static_cast<std::size_t>(K) * (N0 + kMaxObservables + 1));
      copied = true;
    }
    TangentRows tr{rows.data() + static_cast<std::size_t>(N0) * count, count, N0, K, work.data()};
    tr.state = rows.data();
    if (st.observables) {
      tr.t = t.data();
      tr.n = st.n;
      tr.observables = st.observables;
      tr.varied = varied.empty() ? nullptr : varied.data();
    }
    return tr;
  }
};

// The columns the system has of result r, or it empty.
inline void read_column(const SliceState& st, const tables::TrajectoryResultEntry& r,
                        SliceResults& out, HostTangentRows& tangent) {
  ResultColumn& col = out.columns[static_cast<std::size_t>(r.id)];
  const int64_t count = st.count;
  switch (r.source) {
    case tables::ResultSource::integrator:
      if (r.array_i32) copy_column(st, st.arrays.*r.array_i32, std::get<std::vector<int32_t>>(col));
      if (r.array_i64) copy_column(st, st.arrays.*r.array_i64, std::get<std::vector<int64_t>>(col));
      if (r.array_f64) copy_column(st, st.arrays.*r.array_f64, std::get<std::vector<double>>(col));
      return;
    case tables::ResultSource::path_residual: {
      auto& v = std::get<std::vector<double>>(col);
      v.clear();
      if (st.path_residual_index >= 0)
        copy_column(st, st.arrays.y + st.path_residual_index * count, v);
      return;
    }
    case tables::ResultSource::tangent: {
      auto& v = std::get<std::vector<double>>(col);
      v.clear();
      if (st.tangent_base_size < 0) return;
      // NaN where the trajectory failed (a status other than ok and event)
      const int K = st.tangent_exponents;
      if (K < 1) throw std::logic_error("a tangent system without tangent vectors");
      const int width = tables::result_width(r, K);
      const TangentRows tr = tangent.of(st);
      const std::vector<int32_t>& status = out.status();
      v.assign(static_cast<std::size_t>(count * width), NAN);
      for (int64_t i = 0; i < count; ++i)
        if (status[i] == static_cast<int32_t>(Status::ok) ||
            status[i] == static_cast<int32_t>(Status::event))
          r.from_tangent(tr, i, v.data() + i * width);
      return;
    }
  }
}

}  // namespace detail

// Every per-trajectory result the slice's system has, in table order (the
// status first: the results derived from the state read it).
inline void read_slice_results(const SliceState& st, SliceResults& out) {
  static_assert(tables::kTrajectoryResults[0].id == tables::TrajectoryResult::status,
                "the status is read first");
  detail::HostTangentRows tangent;
  for (const auto& r : tables::kTrajectoryResults) detail::read_column(st, r, out, tangent);
}

}  // namespace nholo
