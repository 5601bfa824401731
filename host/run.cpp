#include "host/run.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include <cmath>
#include <csignal>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "host/model_info.hpp"
#include "models/registry.hpp"
#ifdef NHOLO_WITH_CUDA
#include "host/cuda_ensemble.hpp"
#endif

#ifndef NHOLO_VERSION
#define NHOLO_VERSION "0.0.0"
#endif
#ifndef NHOLO_GIT_REVISION
#define NHOLO_GIT_REVISION "unknown"
#endif

namespace fs = std::filesystem;

namespace nholo {

std::atomic<bool>& interrupt_flag() {
  static std::atomic<bool> flag{false};
  return flag;
}

namespace {
std::atomic<int> g_interrupt_signal{0};
extern "C" void on_interrupt(int sig) {
  g_interrupt_signal.store(sig);
  interrupt_flag().store(true);
}
}  // namespace

int interrupt_signal() { return g_interrupt_signal.load(); }

void install_interrupt_handler() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) std::signal(sig, on_interrupt);
}

std::string nholo_version() { return NHOLO_VERSION; }
std::string nholo_git_revision() { return NHOLO_GIT_REVISION; }

namespace {

std::string now_iso8601() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Exclusive use of an output path: an advisory lock (flock) on PATH.lock,
// held for the whole run. A second run on the same path is refused at once,
// naming the process that holds it; --overwrite never touches a path another
// run holds. The lock file records "pid host time" and is removed when the
// holder finishes; a holder killed outright leaves the file but not the lock
// (the kernel releases flock), so the next run takes it over.
class OutputLock {
 public:
  OutputLock() = default;
  explicit OutputLock(const std::string& path) : path_(path + ".lock") {
    for (int attempt = 0; attempt < 100; ++attempt) {
      fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
      if (fd_ < 0)
        throw ConfigError("output.path", "cannot create the lock file '" + path_ + "': " + std::strerror(errno));
      if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
        const int err = errno;
        // the holder writes its name right after taking the lock: give it a moment
        std::string holder = read_holder();
        for (int i = 0; i < 20 && holder.empty() && err == EWOULDBLOCK; ++i) {
          ::usleep(10000);
          holder = read_holder();
        }
        ::close(fd_);
        fd_ = -1;
        if (err == EWOULDBLOCK)
          throw ConfigError("output.path", "'" + path + "' is being written by another nholo run (" +
                                               (holder.empty() ? std::string("see ") + path_ : holder) +
                                               "); wait for it to finish or choose another output.path");
        throw ConfigError("output.path", "cannot lock '" + path_ + "': " + std::strerror(err));
      }
      // the file may have been removed by its previous holder between our
      // open and our lock: then the lock is on a dead inode, and we retry
      struct stat a {}, b {};
      if (::fstat(fd_, &a) == 0 && ::stat(path_.c_str(), &b) == 0 && a.st_ino == b.st_ino &&
          a.st_dev == b.st_dev) {
        char host[256] = "?";
        ::gethostname(host, sizeof host - 1);
        const std::string me = "pid " + std::to_string(::getpid()) + " on " + host + ", since " + now_iso8601();
        if (::ftruncate(fd_, 0) == 0) {
          const ssize_t w = ::write(fd_, me.data(), me.size());
          (void)w;
        }
        return;
      }
      ::close(fd_);
      fd_ = -1;
    }
    throw ConfigError("output.path", "could not take the lock '" + path_ + "' (it keeps being replaced)");
  }
  OutputLock(OutputLock&& o) noexcept : path_(std::move(o.path_)), fd_(o.fd_) { o.fd_ = -1; }
  OutputLock& operator=(OutputLock&& o) noexcept {
    std::swap(path_, o.path_);
    std::swap(fd_, o.fd_);
    return *this;
  }
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;
  ~OutputLock() {
    if (fd_ >= 0) {
      ::unlink(path_.c_str());  // while still holding it: a waiting opener retries
      ::close(fd_);
    }
  }

 private:
  std::string read_holder() const {
    char buf[512] = {0};
    const ssize_t r = ::pread(fd_, buf, sizeof buf - 1, 0);
    return r > 0 ? std::string(buf, static_cast<size_t>(r)) : std::string();
  }
  std::string path_;
  int fd_ = -1;
};

// The output path's folder exists and is writable, and the path is not a folder.
void check_output_folder(const std::string& path) {
  const fs::path p(path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(dir))
    throw ConfigError("output.path", "folder '" + dir.string() + "' does not exist (create it first)");
  if (access(dir.c_str(), W_OK) != 0)
    throw ConfigError("output.path", "folder '" + dir.string() + "' is not writable");
  if (p.has_filename() == false || fs::is_directory(p))
    throw ConfigError("output.path", "'" + path + "' is a folder; expected a file name");
}

// The output path is usable (check_output_folder), and neither PATH nor
// PATH.partial exists (unless overwrite).
void check_output_path(const std::string& path, bool overwrite) {
  check_output_folder(path);
  if (fs::exists(path) && !overwrite)
    throw ConfigError("output.path", "'" + path + "' exists; pass --overwrite to replace it");
  if (fs::exists(path + ".partial") && !overwrite)
    throw ConfigError("output.path", "'" + path + ".partial' exists: the incomplete result of an earlier run "
                                     "that was interrupted, failed on its device or was killed (no run is "
                                     "writing it now; after a signal or a device fault it holds the "
                                     "trajectories that finished, `nholo stats` reads it). Move it away to "
                                     "keep it, or pass --overwrite to discard it and run again");
}

// Refuses a backend this build or machine cannot give, before anything is written.
void check_backend(const RunConfig& cfg) {
  if (cfg.device != "cuda") return;
#ifdef NHOLO_WITH_CUDA
  if (cuda_backend::device_count() == 0)
    throw ConfigError("backend.device", "'cuda' requested but " + cuda_backend::describe_devices() +
                                            "; accepted here: auto, omp, cpp");
  if (cfg.gpu >= cuda_backend::device_count())
    throw ConfigError("backend.gpu", std::to_string(cfg.gpu) + " is not a CUDA device here (" +
                                         cuda_backend::describe_devices() + ")");
#else
  throw ConfigError("backend.device", "'cuda' is not available: this nholo was built without CUDA "
                                      "(configure with -DNHOLO_WITH_CUDA=ON); accepted: auto, omp, cpp");
#endif
}

}  // namespace

std::unique_ptr<Device> open_run_device(const RunConfig& cfg, std::string* note) {
  check_backend(cfg);
  if (note) note->clear();
  if (cfg.device == "cpp") return std::make_unique<CpuDevice>(Backend::cpp, 1);
  if (cfg.device == "omp") return std::make_unique<CpuDevice>(Backend::omp, cfg.threads);
#ifdef NHOLO_WITH_CUDA
  if (cfg.device == "cuda" || cuda_backend::device_count() > 0)
    return cuda_backend::open_device(cfg.gpu);
  if (note) *note = "auto: " + cuda_backend::describe_devices();
#else
  if (note) *note = "auto: this nholo was built without CUDA";
#endif
  return std::make_unique<CpuDevice>(Backend::omp, cfg.threads);
}

std::string describe_device(const DeviceInfo& d) {
  std::string s = std::string(backend_name(d.backend)) + ": " + d.name;
  if (d.backend == Backend::cuda)
    s += " (GPU " + std::to_string(d.gpu) + ", compute " + d.compute_capability + ", driver " +
         d.driver_version + ", runtime " + d.runtime_version + ", " +
         std::to_string(d.memory_bytes >> 20) + " MiB)";
  return s;
}

namespace {

}  // namespace

std::string check_command(const RunConfig& cfg, const CommandOptions& opts) {
  std::string note;
  const std::unique_ptr<Device> dev = open_run_device(cfg, &note);
  check_output_folder(cfg.output_path);
  { const OutputLock probe(cfg.output_path); }  // refused while another run writes the path
  check_output_path(cfg.output_path, opts.overwrite);
  const ModelInfo& mi = *find_model(cfg.model);
  std::ostringstream os;
  os << "config ok: model " << cfg.model << " (n = " << mi.n << ", m = " << mi.m << "), "
     << cfg.size << " trajectories (" << cfg.sampler << " sampler), formulations "
     << join(cfg.formulations) << ", " << cfg.save_times.size() << " saves in [" << cfg.t_start
     << ", " << cfg.t_end << "], output " << cfg.output_path
     << (cfg.fields.empty() ? " (statistics only)" : "") << ", backend "
     << describe_device(dev->info()) << (note.empty() ? "" : " (" + note + ")") << "\n";
  return os.str();
}

RunSummary run_command(const RunConfig& cfg, const CommandOptions& opts) {
  // everything below, --overwrite's removals included, happens under the lock
  check_output_folder(cfg.output_path);
  const OutputLock lock(cfg.output_path);
  check_output_path(cfg.output_path, opts.overwrite);
  std::string note;
  const std::unique_ptr<Device> dev = open_run_device(cfg, &note);
  const DeviceInfo& di = dev->info();
  if (!opts.quiet)
    std::fprintf(stderr, "nholo: backend %s%s\n", describe_device(di).c_str(),
                 note.empty() ? "" : (" (" + note + ")").c_str());
  const std::string partial = cfg.output_path + ".partial";
  if (opts.overwrite) fs::remove(partial);
  interrupt_flag().store(false);
  RunSummary sum;
  try {
    h5::File file = h5::File::create(partial);
    h5::Group root = file.root();
    const ModelInfo& mi = *find_model(cfg.model);
    root.set_attr("title", "nholo ensemble: " + cfg.model);
    root.set_attr("model", cfg.model);
    root.set_attr("model_description", mi.description);
    root.set_attr("coordinates", mi.coordinates);
    root.set_attr("constraints", mi.constraints);
    root.set_attr("formulations", cfg.formulations);
    std::vector<std::string> pn;
    std::vector<double> pv;
    for (const auto& p : mi.params) {
      pn.push_back(p.name);
      pv.push_back(cfg.params.at(p.name));
      root.set_attr("param_" + p.name, cfg.params.at(p.name));
    }
    root.set_attr("parameter_names", pn);
    root.set_attr("parameter_values", pv);
    const char* methods[] = {"rk4", "dopri5", "dop853"};
    const char* drifts[] = {"none", "baumgarte", "project"};
    root.set_attr("integrator_method", methods[static_cast<int>(cfg.integrator.method)]);
    root.set_attr("integrator_rtol", cfg.integrator.rtol);
    root.set_attr("integrator_atol", cfg.integrator.atol);
    root.set_attr("integrator_dt", cfg.integrator.dt);
    root.set_attr("integrator_drift", drifts[static_cast<int>(cfg.eval.drift)]);
    root.set_attr("ensemble_size", cfg.size);
    root.set_attr("ensemble_sampler", cfg.sampler);
    root.set_attr("ensemble_seed", static_cast<int64_t>(cfg.seed));
    root.set_attr("backend", backend_name(di.backend));
    root.set_attr("backend_requested", cfg.device);
    root.set_attr("device_name", di.name);
    root.set_attr("threads", static_cast<int64_t>(di.threads));
    if (di.backend == Backend::cuda) {
      root.set_attr("gpu", static_cast<int64_t>(di.gpu));
      root.set_attr("compute_capability", di.compute_capability);
      root.set_attr("cuda_driver_version", di.driver_version);
      root.set_attr("cuda_runtime_version", di.runtime_version);
    }
    root.set_attr("output_mode", cfg.fields.empty() ? "statistics" : "full");
    root.set_attr("output_compression", static_cast<int64_t>(cfg.compression));
    root.set_attr("config", cfg.text);
    root.set_attr("nholo_version", nholo_version());
    root.set_attr("git_revision", nholo_git_revision());
    root.set_attr("created", now_iso8601());
    root.set_attr("complete", int64_t(0));
    RunOptions ro;
    ro.quiet = opts.quiet;
    ro.tty = isatty(STDERR_FILENO);
    bool found = models::visit_model(cfg.model.c_str(), [&](auto tag) {
      using M = typename decltype(tag)::type;
      sum = run_model<M>(cfg, ro, root, *dev);
    });
    if (!found) throw ConfigError("model", "unknown model '" + cfg.model + "'");
    root.set_attr("completed_trajectories", sum.completed);
    root.set_attr("initial_states_completed", sum.completed_from_constraints);
    root.set_attr("initial_states_projected", sum.projected);
    root.set_attr("initial_states_rejected", sum.rejected);
    root.set_attr("interrupted", int64_t(sum.interrupted ? 1 : 0));
    root.set_attr("wall_seconds", sum.seconds);
    root.set_attr("output_seconds", sum.output_seconds);
    root.set_attr("output_bytes", sum.output_bytes);
    root.set_attr("compute_seconds", sum.compute_seconds);
    root.set_attr("output_wait_seconds", sum.wait_seconds);
    root.set_attr("slice_size", sum.slice_size);
    if (!sum.fault.empty()) root.set_attr("fault", sum.fault);
    if (!sum.interrupted) root.set_attr("complete", int64_t(1));
    file.flush();
    file.close();
  } catch (...) {
    // a failed run leaves nothing that could pass for a result
    std::error_code ec;
    fs::remove(partial, ec);
    throw;
  }
  if (!sum.interrupted) fs::rename(partial, cfg.output_path);
  return sum;
}

std::string models_command(const std::string& name, bool json) {
  std::ostringstream os;
  auto quote = [](const std::string& s) {
    std::string r = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') r += '\\';
      r += c;
    }
    return r + "\"";
  };
  auto list = [&](const std::vector<std::string>& v) {
    std::string r = "[";
    for (size_t i = 0; i < v.size(); ++i) r += (i ? ", " : "") + quote(v[i]);
    return r + "]";
  };
  std::vector<const ModelInfo*> sel;
  for (const auto& mi : model_infos())
    if (name.empty() || mi.name == name) sel.push_back(&mi);
  if (sel.empty())
    throw ConfigError("model", "unknown model '" + name + "' (accepted: " + join(model_names()) + ")");
  if (json) {
    os << "[\n";
    for (size_t k = 0; k < sel.size(); ++k) {
      const ModelInfo& mi = *sel[k];
      os << "  {\"name\": " << quote(mi.name) << ", \"description\": " << quote(mi.description)
         << ", \"n\": " << mi.n << ", \"m\": " << mi.m << ", \"coordinates\": " << list(mi.coordinates)
         << ", \"constraints\": " << list(mi.constraints)
         << ", \"constraint_kinds\": " << list(mi.constraint_kinds)
         << ", \"formulations\": " << list(mi.formulations) << ", \"parameters\": [";
      for (size_t j = 0; j < mi.params.size(); ++j) {
        const auto& p = mi.params[j];
        os << (j ? ", " : "") << "{\"name\": " << quote(p.name) << ", \"default\": "
           << std::setprecision(17) << p.default_value << ", \"unit\": " << quote(p.unit)
           << ", \"doc\": " << quote(p.doc) << ", \"range\": " << quote(p.range_text()) << "}";
      }
      os << "], \"energy\": " << (mi.has_energy ? "true" : "false")
         << ", \"nonideal\": " << (mi.has_nonideal ? "true" : "false") << "}"
         << (k + 1 < sel.size() ? "," : "") << "\n";
    }
    os << "]\n";
    return os.str();
  }
  for (const ModelInfo* mp : sel) {
    const ModelInfo& mi = *mp;
    os << mi.name << " — " << mi.description << "\n";
    os << "  coordinates: " << join(mi.coordinates) << "\n";
    os << "  constraints: ";
    for (int l = 0; l < mi.m; ++l) os << (l ? ", " : "") << mi.constraints[l] << " (" << mi.constraint_kinds[l] << ")";
    os << "\n  formulations: " << join(mi.formulations) << "\n";
    os << "  parameters:";
    if (mi.params.empty()) os << " none";
    os << "\n";
    for (const auto& p : mi.params)
      os << "    " << std::left << std::setw(12) << p.name << " = " << std::setw(8) << p.default_value
         << " [" << p.unit << "]  " << p.doc
         << (p.range_text().empty() ? "" : "; " + p.range_text()) << "\n";
    if (name.empty()) os << "\n";
  }
  return os.str();
}

namespace {

// An nholo result file (complete or .partial), or an error that says why not.
h5::File open_result(const std::string& path) {
  if (!fs::exists(path)) throw std::runtime_error("cannot open '" + path + "': no such file");
  if (!fs::is_regular_file(path)) throw std::runtime_error("'" + path + "' is not a regular file");
  h5::File f;
  try {
    f = h5::File::open_ro(path);
  } catch (const std::exception& e) {
    throw std::runtime_error("'" + path + "' is not an nholo result file (not a readable HDF5 file: " +
                             e.what() + ")");
  }
  const h5::Group root = f.root();
  for (const char* a : {"nholo_version", "model", "formulations", "coordinates", "ensemble_size"})
    if (!root.has_attr(a))
      throw std::runtime_error("'" + path + "' is not an nholo result file (an HDF5 file without the root "
                               "attribute '" + a + "' that nholo writes)");
  return f;
}

}  // namespace

std::string stats_command(const std::string& path) {
  h5::File f = open_result(path);
  h5::Group root = f.root();
  std::ostringstream os;
  os << std::setprecision(6);
  os << path << ": model " << root.attr_string("model") << ", "
     << root.attr_int64("ensemble_size") << " trajectories, "
     << (root.attr_int64("complete") ? "complete"
         : root.has_attr("fault")    ? "INCOMPLETE (the device failed: " + root.attr_string("fault") + ")"
                                     : std::string("INCOMPLETE (interrupted run)"))
     << "\n";
  const auto coords = root.attr_strings("coordinates");
  for (const auto& fname : root.attr_strings("formulations")) {
    h5::Group sg = root.open_group("statistics/" + fname);
    os << "\n[" << fname << "]\n  status:";
    for (int s = 0; s < kStatusCount; ++s) {
      const std::string a = std::string("status_") + status_name(static_cast<Status>(s));
      if (sg.has_attr(a) && sg.attr_int64(a)) os << " " << status_name(static_cast<Status>(s)) << " " << sg.attr_int64(a);
    }
    os << "\n";
    const auto time = sg.open_dataset("time").read<double>();
    const auto mean = sg.open_dataset("mean").read<double>();
    const auto var = sg.open_dataset("variance").read<double>();
    const auto mn = sg.open_dataset("min").read<double>();
    const auto mx = sg.open_dataset("max").read<double>();
    const size_t nc = coords.size(), nt = time.size();
    os << "  at t = " << time.back() << " (last save), over the ensemble:\n";
    for (size_t c = 0; c < nc; ++c) {
      const size_t j = (nt - 1) * nc + c;
      os << "    " << std::left << std::setw(8) << coords[c] << " mean " << std::setw(12) << mean[j]
         << " std " << std::setw(12) << std::sqrt(var[j]) << " min " << std::setw(12) << mn[j]
         << " max " << mx[j] << "\n";
    }
    if (sg.exists("drift_ratio")) {
      const auto r = sg.open_dataset("drift_ratio").read<double>();
      const auto band = sg.open_dataset("band").read<double>();
      const auto dv = sg.open_dataset("drift_velocity").read<double>();
      Moments mr, mb, md;
      std::vector<double> fin;
      for (size_t i = 0; i < r.size(); ++i) {
        if (std::isfinite(r[i])) {
          mr.add(r[i]);
          fin.push_back(r[i]);
        }
        if (std::isfinite(band[i])) mb.add(band[i]);
        if (std::isfinite(dv[i])) md.add(dv[i]);
      }
      std::sort(fin.begin(), fin.end());
      auto quant = [&](double p) { return fin.empty() ? NAN : fin[static_cast<size_t>(p * (fin.size() - 1))]; };
      const std::string pred = sg.has_attr("drift_prediction") ? sg.attr_string("drift_prediction") : "prediction";
      os << "  drift statistic of the model: drift velocity mean " << md.mean
         << ", band mean " << mb.mean << " (max " << mb.max << ")\n"
         << "  drift / (" << pred << "): mean " << mr.mean << ", std "
         << std::sqrt(mr.variance()) << ", quantiles 5% " << quant(0.05) << ", 50% " << quant(0.5)
         << ", 95% " << quant(0.95) << " over " << mr.count << " trajectories\n";
    }
  }
  return os.str();
}

std::string compare_command(const std::string& path, const std::vector<std::string>& formulations) {
  h5::File f = open_result(path);
  h5::Group root = f.root();
  const auto all = root.attr_strings("formulations");
  for (const auto& x : formulations)
    if (std::find(all.begin(), all.end(), x) == all.end())
      throw ConfigError("--formulations", "'" + x + "' is not in " + path + " (it has: " + join(all) + ")");
  std::ostringstream os;
  os << std::setprecision(6);
  int pairs = 0;
  for (size_t a = 0; a < all.size(); ++a)
    for (size_t b = a + 1; b < all.size(); ++b) {
      if (!formulations.empty() &&
          (std::find(formulations.begin(), formulations.end(), all[a]) == formulations.end() ||
           std::find(formulations.begin(), formulations.end(), all[b]) == formulations.end()))
        continue;
      h5::Group g = root.open_group("compare/" + all[a] + "__" + all[b]);
      const auto md = g.open_dataset("max_distance").read<double>();
      const auto fe = g.open_dataset("first_exceed_time").read<double>();
      Moments m;
      int64_t exceeded = 0;
      Moments t;
      for (size_t i = 0; i < md.size(); ++i) {
        if (std::isfinite(md[i])) m.add(md[i]);
        if (std::isfinite(fe[i])) {
          ++exceeded;
          t.add(fe[i]);
        }
      }
      os << all[a] << " vs " << all[b] << ": max |q_a - q_b| over time: mean " << m.mean << ", max "
         << m.max << " (" << m.count << " trajectories); exceeds " << g.attr_double("threshold")
         << " in " << exceeded << " trajectories";
      if (exceeded) os << ", first at t = " << t.min << " (mean " << t.mean << ")";
      os << "\n";
      ++pairs;
    }
  if (pairs == 0) os << path << " holds a single formulation: nothing to compare (run with formulations = [\"a\", \"b\"])\n";
  return os.str();
}

std::string devices_command() {
  std::ostringstream os;
  os << "nholo " << nholo_version() << " (" << nholo_git_revision() << ")\n";
  os << "backends: omp (OpenMP, " << CpuDevice(Backend::omp, 0).info().threads
     << " threads here), cpp (serial)";
#ifdef NHOLO_WITH_CUDA
  os << ", cuda\n";
  os << "CUDA devices: " << cuda_backend::describe_devices() << "\n";
  os << "backend.device = \"auto\" runs on "
     << (cuda_backend::device_count() > 0 ? "the GPU backend.gpu (default 0)" : "OpenMP") << "\n";
#else
  os << "\nCUDA: not built in (configure with -DNHOLO_WITH_CUDA=ON); auto runs on OpenMP\n";
#endif
  return os.str();
}

namespace {

// Largest |a - b| over a dataset relative to its largest |b| (NaN positions
// must agree: a NaN against a number counts as a mismatch).
struct DiffStat {
  double rel = 0;
  int64_t nan_mismatch = 0;
  size_t count = 0;
};

DiffStat diff_values(const std::vector<double>& a, const std::vector<double>& b) {
  DiffStat d;
  d.count = a.size();
  double scale = 0, worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const bool na = std::isnan(a[i]), nb = std::isnan(b[i]);
    if (na != nb) {
      ++d.nan_mismatch;
      continue;
    }
    if (na) continue;
    scale = std::max(scale, std::abs(b[i]));
    worst = std::max(worst, std::abs(a[i] - b[i]));
  }
  d.rel = scale > 0 ? worst / scale : worst;
  return d;
}

}  // namespace

bool diff_command(const std::string& path_a, const std::string& path_b, double rtol,
                  std::string& report) {
  h5::File fa = open_result(path_a), fb = open_result(path_b);
  h5::Group ra = fa.root(), rb = fb.root();
  std::ostringstream os;
  os << std::setprecision(3);
  if (ra.attr_string("model") != rb.attr_string("model"))
    throw std::runtime_error("diff: " + path_a + " is model " + ra.attr_string("model") + ", " + path_b +
                             " is model " + rb.attr_string("model"));
  bool ok = true;
  int compared = 0;
  for (const auto& form : ra.attr_strings("formulations")) {
    if (!rb.exists(form)) {
      os << form << ": only in " << path_a << "\n";
      ok = false;
      continue;
    }
    std::vector<std::string> names;
    for (const auto& f : known_fields()) names.push_back(form + "/" + f);
    names.push_back(form + "/fail_time");
    for (const char* st : {"mean", "variance", "min", "max", "qdot_mean", "qdot_variance"})
      names.push_back("statistics/" + form + "/" + st);
    for (const auto& ds : names) {
      if (!ra.exists(ds) || !rb.exists(ds)) continue;
      const auto a = ra.open_dataset(ds).read<double>();
      const auto b = rb.open_dataset(ds).read<double>();
      if (a.size() != b.size()) {
        os << ds << ": shapes differ (" << a.size() << " vs " << b.size() << " values)\n";
        ok = false;
        continue;
      }
      const DiffStat d = diff_values(a, b);
      const bool good = d.rel <= rtol && d.nan_mismatch == 0;
      ok = ok && good;
      ++compared;
      os << (good ? "  ok   " : "  FAIL ") << std::left << std::setw(44) << ds << " max |a-b| / max |b| = "
         << d.rel;
      if (d.nan_mismatch) os << ", " << d.nan_mismatch << " NaN mismatches";
      os << "\n";
    }
    const auto sa = ra.open_dataset(form + "/status").read<int32_t>();
    const auto sb = rb.open_dataset(form + "/status").read<int32_t>();
    int64_t differ = 0;
    for (size_t i = 0; i < std::min(sa.size(), sb.size()); ++i) differ += sa[i] != sb[i];
    if (sa.size() != sb.size() || differ) ok = false;
    os << (sa.size() == sb.size() && !differ ? "  ok   " : "  FAIL ") << std::left << std::setw(44)
       << (form + "/status") << " " << differ << " trajectories differ\n";
  }
  if (compared == 0) throw std::runtime_error("diff: no common datasets in " + path_a + " and " + path_b);
  os << (ok ? "agree" : "DIFFER") << " to " << rtol << " relative (" << ra.attr_string("backend") << " vs "
     << rb.attr_string("backend") << ")\n";
  report = os.str();
  return ok;
}

}  // namespace nholo
