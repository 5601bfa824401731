// nholo/host/io/field_memory.hpp — the per-save fields of a run (q, qdot and
// the other `output.fields`: trajectory x save [x component], the bulk of a
// result) held in memory instead of in the result file: the output of a run
// made from Python (python/src/module.cpp), whose arrays become numpy arrays
// without a copy.
//
//   FieldMemory mem;
//   ro.memory = &mem;                      // RunOptions (host/run/run_options.hpp)
//   run_model(...);                        // the layout allocates one array per
//                                          // field, the writer thread fills it
//   for (FieldMemory::Array& a : mem.release()) ...   // the caller owns a.data
//
// Everything else of the run (initial states, statuses, statistics,
// comparisons, attributes) goes through the result file as usual; in that
// file each field is a dataset with its dimensions and attributes but no
// storage (never written: reading it gives its fill value, NaN).
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace nholo {

// The memory this machine has available for new arrays, in bytes: Linux's
// MemAvailable (/proc/meminfo), else the free physical pages; -1 unknown.
inline int64_t available_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (meminfo >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
#ifdef _SC_AVPHYS_PAGES
  const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) return static_cast<int64_t>(pages) * page;
#endif
  return -1;
}

class FieldMemory {
 public:
  struct Array {
    std::string path;           // the dataset's path in the result file ("udwadia_kalaba/q")
    std::vector<int64_t> dims;  // trajectory, save[, component]
    std::unique_ptr<double[]> data;
  };

  // The array of dataset path, dims (trajectory, save[, component]), its
  // values left unset (every block is written before a run completes).
  void allocate(const std::string& path, const std::vector<int64_t>& dims) {
    if (dims.size() != 2 && dims.size() != 3)
      throw std::logic_error("FieldMemory: " + path + " is not (trajectory, save[, component])");
    int64_t len = 1;
    for (int64_t d : dims) len *= d;
    Array a;
    a.path = path;
    a.dims = dims;
    try {
      a.data.reset(new double[static_cast<size_t>(len)]);
    } catch (const std::bad_alloc&) {
      throw std::runtime_error("the field " + path + " (" + std::to_string(len * 8 / 1000000) +
                               " MB) does not fit in memory; write the results to a file instead "
                               "(nholo.run(..., output=PATH))");
    }
    arrays_[path] = std::move(a);
  }

  bool has(const std::string& path) const { return arrays_.count(path) != 0; }

  // The block of `count` trajectories from `row`, `saves` saves from `save`,
  // `components` values each, row-major (count x saves x components) at src.
  void write_block(const std::string& path, int64_t row, int64_t count, int64_t save, int64_t saves,
                   int64_t components, const double* src) {
    Array& a = arrays_.at(path);
    const int64_t n_saves = a.dims[1];
    const int64_t nc = a.dims.size() == 3 ? a.dims[2] : 1;
    if (nc != components || row < 0 || row + count > a.dims[0] || save < 0 ||
        save + saves > n_saves)
      throw std::logic_error("FieldMemory: a block outside " + path);
    const size_t run = static_cast<size_t>(saves * nc) * sizeof(double);
    for (int64_t i = 0; i < count; ++i)
      std::memcpy(a.data.get() + ((row + i) * n_saves + save) * nc, src + i * saves * nc, run);
  }

  // The arrays, handed to the caller (in the order of their paths).
  std::vector<Array> release() {
    std::vector<Array> out;
    for (auto& kv : arrays_) out.push_back(std::move(kv.second));
    arrays_.clear();
    return out;
  }

 private:
  std::map<std::string, Array> arrays_;
};

}  // namespace nholo
