// nholo/python/src/module.cpp — nholo._nholo, the Python module over the
// commands (host/cli/commands.hpp): what `import nholo` calls (python/nholo/).
//
//   _nholo.run(config, is_text, source, overrides, overwrite, quiet,
//              fields_in_memory, on_progress)
//       -> dict (the run's summary; with fields_in_memory, "fields": path ->
//       numpy array owning the field's values, host/io/field_memory.hpp,
//       which the result file then holds without storage); the run on a
//       thread of its own while the calling thread, without the GIL, waits
//       for it, and every 0.1 s takes the GIL to let Python handle its
//       signals (Ctrl-C: KeyboardInterrupt stops the run at its next safe
//       point, then is raised) and to report the progress.
//   _nholo.check(...) -> str, config_info(...) -> dict, models(name, json),
//   model_file(path, build), version()
// Errors are the command's messages, raised as nholo.ConfigError (a bad
// configuration), nholo.ModelError (a bad model file or plugin) and
// nholo.DeviceError (the device asked for is not here, or it failed).
//
// HDF5 as nholo is built with it is not thread-safe, so one run (or check)
// of this process holds the HDF5 library at a time: runs from several Python
// threads take turns, each releasing the GIL while it waits or runs.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <exception>
#include <functional>
#include <future>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "host/cli/commands.hpp"
#include "host/config/config.hpp"
#include "host/config/model_catalog.hpp"
#include "host/config/model_info.hpp"
#include "host/io/field_memory.hpp"
#include "host/io/root_attributes.hpp"
#include "host/model_language/model_file.hpp"
#include "host/model_files/plugin.hpp"
#include "host/run/interrupt.hpp"
#include "host/run/progress.hpp"

namespace nb = nanobind;

namespace {

// one run of this process at a time (HDF5), see the header
std::mutex& run_mutex() {
  static std::mutex mu;
  return mu;
}

// config: a path, or TOML text whose relative paths are relative to the
// folder of source (the file it came from; "" for the working directory)
nholo::RunConfig read_config(const std::string& config, bool is_text, const std::string& source,
                             const std::vector<std::string>& overrides) {
  return is_text ? nholo::parse_config(config, overrides,
                                       source.empty() ? std::string("<config text>") : source)
                 : nholo::load_config(config, overrides);
}

nb::dict summary_dict(const nholo::RunSummary& s, const std::string& path) {
  nb::dict d;
  d["path"] = path;
  d["trajectories"] = s.trajectories;
  d["completed"] = s.completed;
  d["completed_from_constraints"] = s.completed_from_constraints;
  d["projected"] = s.projected;
  d["rejected"] = s.rejected;
  d["singular_initial"] = s.singular_initial;
  d["params_rejected"] = s.params_rejected;
  d["interrupted"] = s.interrupted;
  d["already_complete"] = s.already_complete;
  d["fault"] = s.fault;
  d["seconds"] = s.seconds;
  d["device_busy_seconds"] = s.device_busy_seconds;
  d["device_copy_seconds"] = s.device_copy_seconds;
  d["output_seconds"] = s.output_seconds;
  d["wait_seconds"] = s.wait_seconds;
  d["assembly_seconds"] = s.assembly_seconds;
  d["launches"] = s.launches;
  d["steps"] = s.steps;
  d["status_lines"] = s.status_lines;
  return d;
}

// f() on a thread of its own; the caller waits without the GIL and, every
// 0.1 s with it, lets Python run its signal handlers and on_tick. A Python
// exception there (KeyboardInterrupt, or one raised by on_tick) sets nholo's
// interrupt flag, waits for f to stop at its next safe point and is raised.
template <class R>
R run_beside_python(const std::function<R()>& f, const std::function<void()>& on_tick) {
  std::packaged_task<R()> task(f);
  std::future<R> result = task.get_future();
  std::thread worker(std::move(task));
  bool interrupted = false;
  nb::object py_error_type, py_error_value, py_error_tb;
  for (;;) {
    std::future_status st;
    {
      nb::gil_scoped_release nogil;
      st = result.wait_for(std::chrono::milliseconds(100));
    }
    if (st == std::future_status::ready) break;
    if (interrupted) {
      // the run clears the flag as it starts (run_command, after its set-up):
      // an interruption during the set-up is set again until the run stops
      nholo::interrupt_flag().store(true);
      continue;
    }
    bool failed = PyErr_CheckSignals() != 0;
    if (!failed && on_tick) {
      try {
        on_tick();
      } catch (nb::python_error& e) {
        e.restore();
        failed = true;
      }
    }
    if (failed) {
      PyObject *t = nullptr, *v = nullptr, *tb = nullptr;
      PyErr_Fetch(&t, &v, &tb);
      py_error_type = nb::steal(t);
      py_error_value = nb::steal(v);
      py_error_tb = nb::steal(tb);
      nholo::interrupt_flag().store(true);
      interrupted = true;
    }
  }
  {
    nb::gil_scoped_release nogil;
    worker.join();
  }
  if (interrupted) {
    // the run stopped (or finished) after the Python exception: raise it;
    // an error of the run itself would only repeat the interruption
    PyErr_Restore(py_error_type.release().ptr(), py_error_value.release().ptr(),
                  py_error_tb.release().ptr());
    throw nb::python_error();
  }
  return result.get();
}

// run_mutex(), taken without holding the GIL
std::unique_lock<std::mutex> hold_run_mutex() {
  std::unique_lock<std::mutex> lock(run_mutex(), std::defer_lock);
  nb::gil_scoped_release nogil;
  lock.lock();
  return lock;
}

// The arrays of a run's fields as numpy arrays that own them (no copy).
nb::dict field_arrays(nholo::FieldMemory& memory) {
  nb::dict d;
  for (nholo::FieldMemory::Array& a : memory.release()) {
    std::vector<size_t> shape(a.dims.begin(), a.dims.end());
    double* data = a.data.release();
    nb::capsule owner(data, [](void* p) noexcept { delete[] static_cast<double*>(p); });
    d[a.path.c_str()] = nb::ndarray<nb::numpy, double>(data, shape.size(), shape.data(), owner);
  }
  return d;
}

nb::dict run(const std::string& config, bool is_text, const std::string& source,
             const std::vector<std::string>& overrides, bool overwrite, bool quiet,
             bool fields_in_memory, nb::object on_progress) {
  const nholo::RunConfig cfg = read_config(config, is_text, source, overrides);
  const auto lock = hold_run_mutex();
  nholo::ProgressCounter counter;
  nholo::FieldMemory memory;
  nholo::CommandOptions opts;
  opts.overwrite = overwrite;
  opts.quiet = quiet;
  opts.progress = &counter;
  if (fields_in_memory) opts.memory = &memory;
  const std::function<void()> tick = [&] {
    if (!on_progress.is_none()) on_progress(counter.done.load(), counter.total.load());
  };
  const nholo::RunSummary s =
      run_beside_python<nholo::RunSummary>([&] { return nholo::run_command(cfg, opts); }, tick);
  if (!on_progress.is_none() && s.completed == s.trajectories && !s.interrupted)
    on_progress(counter.total.load(), counter.total.load());
  nb::dict d = summary_dict(s, cfg.output_path);
  d["fields"] = field_arrays(memory);
  return d;
}

std::string check(const std::string& config, bool is_text, const std::string& source,
                  const std::vector<std::string>& overrides) {
  const nholo::RunConfig cfg = read_config(config, is_text, source, overrides);
  const auto lock = hold_run_mutex();  // it may read an existing result (HDF5)
  nholo::CommandOptions opts;
  opts.overwrite = true;  // nholo.run's own output is a fresh temporary file
  return nholo::check_command(cfg, opts);
}

// What Python needs to lay out initial states and parameters given as arrays.
nb::dict config_info(const std::string& config, bool is_text, const std::string& source,
                     const std::vector<std::string>& overrides) {
  const nholo::RunConfig cfg = read_config(config, is_text, source, overrides);
  const nholo::ModelInfo* mi = nholo::find_model(cfg.model);
  if (!mi) throw std::logic_error("config_info: model '" + cfg.model + "' is not registered");
  nb::dict d;
  d["model"] = cfg.model;
  d["coordinates"] = mi->coordinates;
  d["constraints"] = mi->constraints;
  std::vector<std::string> params;
  nb::dict ranges;  // name -> (lo, hi, lo_open, hi_open, text): +-inf where unbounded
  for (const auto& p : mi->params) {
    params.push_back(p.name);
    const double inf = std::numeric_limits<double>::infinity();
    ranges[p.name.c_str()] =
        nb::make_tuple(p.range.has_lo ? p.range.lo : -inf, p.range.has_hi ? p.range.hi : inf,
                       p.range.lo_open, p.range.hi_open, p.range_text());
  }
  d["parameters"] = params;
  d["parameter_ranges"] = ranges;
  d["formulations"] = cfg.formulations;
  d["size"] = cfg.size;
  d["sampler"] = name_of(cfg.sampler);
  d["output_path"] = cfg.output_path;
  d["fields"] = cfg.fields;
  return d;
}

}  // namespace

NB_MODULE(_nholo, m) {
  m.doc() = "nholo's commands in this process (the Python API is the package nholo)";
  // a configuration's plugin "path.so" is loaded by the toolchain
  nholo::set_plugin_model_loader(nholo::plugin_model_info);
  static nb::object config_error =
      nb::steal(PyErr_NewException("nholo.ConfigError", PyExc_ValueError, nullptr));
  static nb::object model_error =
      nb::steal(PyErr_NewException("nholo.ModelError", PyExc_ValueError, nullptr));
  static nb::object device_error =
      nb::steal(PyErr_NewException("nholo.DeviceError", PyExc_RuntimeError, nullptr));
  m.attr("ConfigError") = config_error;
  m.attr("ModelError") = model_error;
  m.attr("DeviceError") = device_error;
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const nholo::ModelConfigError& e) {
      PyErr_SetString(model_error.ptr(), e.what());
    } catch (const nholo::DeviceUnavailable& e) {
      // the device asked for is not in this build or on this machine
      PyErr_SetString(device_error.ptr(), e.what());
    } catch (const nholo::ConfigError& e) {
      PyErr_SetString(config_error.ptr(), e.what());
    } catch (const nholo::ModelFileError& e) {
      PyErr_SetString(model_error.ptr(), e.what());
    } catch (const nholo::DeviceFault& e) {
      PyErr_SetString(device_error.ptr(), e.what());
    } catch (const nholo::Interrupted& e) {
      PyErr_SetString(PyExc_KeyboardInterrupt, e.what());
    }
  });
  m.def("run", &run, nb::arg("config"), nb::arg("is_text"), nb::arg("source"), nb::arg("overrides"),
        nb::arg("overwrite"), nb::arg("quiet"), nb::arg("fields_in_memory"),
        nb::arg("on_progress").none());
  m.def("check", &check, nb::arg("config"), nb::arg("is_text"), nb::arg("source"),
        nb::arg("overrides"));
  m.def("config_info", &config_info, nb::arg("config"), nb::arg("is_text"), nb::arg("source"),
        nb::arg("overrides"));
  m.def(
      "models",
      [](const std::string& name, bool json) { return nholo::models_command(name, json); },
      nb::arg("name"), nb::arg("json"));
  m.def(
      "model_file",
      [](const std::string& path, bool build) {
        const auto lock = hold_run_mutex();
        nb::gil_scoped_release nogil;  // a plugin may take a minute to compile
        return nholo::model_file_command(path, build, false);
      },
      nb::arg("path"), nb::arg("build"));
  m.def("version",
        [] { return nholo::nholo_version() + " (" + nholo::nholo_git_revision() + ")"; });
}
