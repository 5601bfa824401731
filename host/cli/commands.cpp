#include "host/cli/commands.hpp"


#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "host/config/model_info.hpp"
#include "host/io/pieces.hpp"
#include "host/model_files/plugin.hpp"
#include "host/analysis/quantile.hpp"
#include "models/registry.hpp"
#ifdef NHOLO_WITH_CUDA
#include "host/backends/cuda_ensemble.hpp"
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

}  // namespace

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

namespace {

// The output path is usable (check_output_folder), and neither PATH nor
// PATH.partial exists (unless overwrite).
void check_output_path(const std::string& path, bool overwrite) {
  check_output_folder(path);
  if (fs::exists(path) && !overwrite)
    throw ConfigError("output.path", "'" + path + "' exists; pass --overwrite to replace it");
  if (fs::exists(path + ".partial") && !overwrite)
    throw ConfigError("output.path", "'" + path + ".partial' exists: the incomplete result of an earlier run "
                                     "that was interrupted, failed on its device or was killed (no run is "
                                     "writing it now; it holds the slices that finished, `nholo stats` "
                                     "reads it). Pass --resume to continue it, or --overwrite to discard "
                                     "it and run again");
}

// Refuses a backend this build or machine cannot give, before anything is written.
void check_backend(const RunConfig& cfg) {
  if (cfg.device != "cuda") return;
  if (!cfg.model_plugin.empty())
    throw ConfigError("backend.device",
                      "'cuda': model '" + cfg.model + "' comes from a plugin file (" +
                          cfg.model_plugin +
                          "), which runs on the CPU backends only: nholo "
                          "compiles GPU kernels from model files, and a plugin file carries no "
                          "model file; accepted: auto, omp, cpp");
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
  if (!cfg.model_plugin.empty()) {
    if (note) *note = "auto: plugin files run on the CPU backends";
    return std::make_unique<CpuDevice>(Backend::omp, cfg.threads);
  }
#ifdef NHOLO_WITH_CUDA
  if (cfg.model_spec && cfg.device != "cuda" && cuda_backend::device_count() > 0) {
    // auto: a model file takes the GPU when NVRTC can compile its kernels
    try {
      (void)nvrtc_description();
    } catch (const std::exception& e) {
      if (note) *note = std::string("auto: a GPU is here, but ") + e.what();
      return std::make_unique<CpuDevice>(Backend::omp, cfg.threads);
    }
  }
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
     << cfg.size << " trajectories (" << cfg.sampler << " sampler"
     << (cfg.varied_params.empty() ? std::string()
                                   : "; parameters varied per trajectory: " + join(cfg.varied_params))
     << "), formulations "
     << join(cfg.formulations) << ", " << cfg.save_times.size() << " saves in [" << cfg.t_start
     << ", " << cfg.t_end << "], output " << cfg.output_path
     << (cfg.fields.empty() ? " (statistics only)" : "") << ", backend "
     << describe_device(dev->info()) << (note.empty() ? "" : " (" + note + ")") << "\n";
  return os.str();
}

namespace {

// The root attributes of a file a run writes: what it is and how it was
// made, and (with a summary) how it ended.
void write_root_attrs(h5::Group& root, const RunConfig& cfg, const DeviceInfo& di,
                      const RunSummary* sum) {
  const ModelInfo& mi = *find_model(cfg.model);
  root.set_attr("title", "nholo ensemble: " + cfg.model);
  root.set_attr("model", cfg.model);
  root.set_attr("model_description", mi.description);
  root.set_attr("coordinates", mi.coordinates);
  root.set_attr("constraints", mi.constraints);
  root.set_attr("formulations", cfg.formulations);
  if (!mi.coordinate_units.empty()) root.set_attr("coordinate_units", mi.coordinate_units);
  std::vector<std::string> pn, pu;
  std::vector<double> pv;
  for (const auto& p : mi.params) {
    pn.push_back(p.name);
    pu.push_back(p.unit);
    // a parameter that varies per trajectory has its values in /initial/params
    const bool varies = std::find(cfg.varied_params.begin(), cfg.varied_params.end(), p.name) !=
                        cfg.varied_params.end();
    pv.push_back(varies ? NAN : cfg.params.at(p.name));
    if (varies)
      root.set_attr("param_" + p.name, "varies per trajectory (/initial/params)");
    else
      root.set_attr("param_" + p.name, cfg.params.at(p.name));
  }
  root.set_attr("parameter_names", pn);
  root.set_attr("parameter_values", pv);
  if (!pu.empty()) root.set_attr("parameter_units", pu);
  if (!cfg.varied_params.empty()) root.set_attr("varied_parameters", cfg.varied_params);
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
  root.set_attr("config_hash", cfg.result_hash);
  root.set_attr("nholo_version", nholo_version());
  root.set_attr("git_revision", nholo_git_revision());
  root.set_attr("created", now_iso8601());
  root.set_attr("complete", int64_t(sum && !sum->interrupted ? 1 : 0));
  if (!sum) return;
  root.set_attr("completed_trajectories", sum->completed);
  root.set_attr("initial_states_completed", sum->completed_from_constraints);
  root.set_attr("initial_states_projected", sum->projected);
  root.set_attr("initial_states_rejected", sum->rejected);
  root.set_attr("initial_states_singular", sum->singular_initial);
  root.set_attr("initial_states_params_rejected", sum->params_rejected);
  root.set_attr("interrupted", int64_t(sum->interrupted ? 1 : 0));
  root.set_attr("wall_seconds", sum->seconds);
  root.set_attr("output_seconds", sum->output_seconds);
  root.set_attr("output_bytes", sum->output_bytes);
  root.set_attr("compute_seconds", sum->compute_seconds);
  root.set_attr("output_wait_seconds", sum->wait_seconds);
  if (!sum->fault.empty()) root.set_attr("fault", sum->fault);
}

int64_t finished_slices(const PieceDir& pieces) {
  int64_t k = 0;
  std::error_code ec;
  if (!fs::is_directory(pieces.dir(), ec)) return 0;
  for (const auto& e : fs::directory_iterator(pieces.dir(), ec)) {
    const std::string name = e.path().filename().string();
    k += name.rfind("slice_", 0) == 0 && e.path().extension() == ".h5";
  }
  return k;
}

// What `run --resume` continues: the master PATH.partial of the same
// config, written by this nholo. Returns its slice size.
int64_t check_resumable(const RunConfig& cfg, const std::string& partial) {
  h5::File f;
  try {
    f = h5::File::open_ro(partial);
  } catch (const std::exception& e) {
    throw ConfigError("--resume", "'" + partial + "' cannot be read (" + e.what() +
                                      "); pass --overwrite to discard it and start again");
  }
  const h5::Group root = f.root();
  for (const char* a : {"config_hash", "nholo_version", "git_revision"})
    if (!root.has_attr(a))
      throw ConfigError("--resume", "'" + partial + "' was not written by this version of nholo "
                                    "(no attribute '" + a + "'); pass --overwrite to start again");
  const std::string hash = root.attr_string("config_hash");
  if (hash != cfg.result_hash)
    throw ConfigError("--resume", "'" + partial + "' is the result of another configuration "
                                  "(config hash " + hash + ", this one " + cfg.result_hash +
                                  "; only backend.*, output.path and output.memory_budget_mb may "
                                  "change); run with the same config and --set options, or pass "
                                  "--overwrite to discard it");
  const std::string version = root.attr_string("nholo_version") + " (" +
                              root.attr_string("git_revision") + ")";
  const std::string mine = nholo_version() + " (" + nholo_git_revision() + ")";
  if (version != mine)
    throw ConfigError("--resume", "'" + partial + "' was written by nholo " + version + ", this is " +
                                      mine + ": the results could differ in the last bits; finish it "
                                      "with that nholo, or pass --overwrite to start again");
  if (!root.has_attr("slice_size"))
    throw ConfigError("--resume", "'" + partial + "' does not record its slice size");
  return root.attr_int64("slice_size");
}

}  // namespace

std::pair<int64_t, int64_t> shard_range(const std::string& shard, const std::string& range,
                                        int64_t size) {
  const int64_t blocks = (size + kStatBlock - 1) / kStatBlock;
  auto number = [](const std::string& t, const char* what) -> int64_t {
    size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(t, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != t.size() || v < 0)
      throw ConfigError(what, "'" + t + "' is not a non-negative integer");
    return v;
  };
  if (!shard.empty() && !range.empty())
    throw ConfigError("--shard", "--shard and --range exclude each other");
  if (!shard.empty()) {
    const size_t slash = shard.find('/');
    if (slash == std::string::npos)
      throw ConfigError("--shard", "'" + shard + "' is not r/R (e.g. 3/8: the fourth of 8 shards)");
    const int64_t r = number(shard.substr(0, slash), "--shard");
    const int64_t R = number(shard.substr(slash + 1), "--shard");
    if (R < 1 || r >= R)
      throw ConfigError("--shard", "'" + shard + "': need 0 <= r < R (r counts from 0)");
    if (R > blocks)
      throw ConfigError("--shard", std::to_string(R) + " shards of " + std::to_string(size) +
                                       " trajectories: at most " + std::to_string(blocks) +
                                       " (one block of 1024 each)");
    const int64_t b0 = r * blocks / R, b1 = (r + 1) * blocks / R;
    return {b0 * kStatBlock, std::min(size, b1 * kStatBlock)};
  }
  if (!range.empty()) {
    const size_t colon = range.find(':');
    if (colon == std::string::npos)
      throw ConfigError("--range", "'" + range + "' is not BEGIN:END (trajectories)");
    const int64_t b = number(range.substr(0, colon), "--range");
    const int64_t e = number(range.substr(colon + 1), "--range");
    if (b >= e || e > size)
      throw ConfigError("--range", "'" + range + "': need 0 <= BEGIN < END <= " + std::to_string(size));
    if (b % kStatBlock != 0 || (e % kStatBlock != 0 && e != size))
      throw ConfigError("--range", "'" + range + "': BEGIN and END must be multiples of 1024 (END "
                                   "may be the ensemble size " + std::to_string(size) +
                                   "), so that the statistics merge exactly");
    return {b, e};
  }
  return {0, size};
}

std::string shard_path(const std::string& path, int64_t begin, int64_t end) {
  const fs::path p(path);
  const std::string tag = ".shard-" + std::to_string(begin) + "-" + std::to_string(end);
  return (p.parent_path() / (p.stem().string() + tag + p.extension().string())).string();
}

using ModelRunner = std::function<RunSummary(const RunConfig&, const RunOptions&, Device&)>;

// A model file on a GPU: the kernel of every formulation of the run, compiled
// by NVRTC for this GPU (or found in the cache), registered on the device,
// whose ensembles then launch it (host/model_files/plugin.hpp, GPU modules).
void add_gpu_modules(const RunConfig& cfg, Device& dev, bool quiet) {
  if (dev.info().backend != Backend::cuda || !cfg.model_spec) return;
  auto log = [&](const std::string& line) {
    if (!quiet) std::fprintf(stderr, "nholo: %s\n", line.c_str());
  };
  const Plugin& p = model_plugin(*cfg.model_spec, log);
  const std::string arch = gpu_arch_of(dev.info().compute_capability);
  const char* method = cfg.integrator.method == Method::rk4      ? "rk4"
                       : cfg.integrator.method == Method::dopri5 ? "dopri5"
                                                                 : "dop853";
  for (const auto& f : cfg.formulations)
    dev.add_module(f, gpu_module(*cfg.model_spec, p, f, method, arch, log).image);
}

// The run pipeline of cfg's model: built in, or a plugin (a model file's,
// compiled now unless cached, or a plugin file).
ModelRunner model_runner(const RunConfig& cfg, bool quiet) {
  if (cfg.model_spec) {
    const Plugin& p = model_plugin(*cfg.model_spec, [&](const std::string& line) {
      if (!quiet) std::fprintf(stderr, "nholo: %s\n", line.c_str());
    });
    return p.entry->run;
  }
  if (!cfg.model_plugin.empty()) return load_plugin_file(cfg.model_plugin).entry->run;
  ModelRunner r;
  models::visit_model(cfg.model.c_str(), [&](auto tag) {
    using M = typename decltype(tag)::type;
    r = &run_model<M>;
  });
  if (!r) throw ConfigError("model", "unknown model '" + cfg.model + "'");
  return r;
}

void prepare_model(const RunConfig& cfg, bool quiet) { (void)model_runner(cfg, quiet); }

RunSummary run_command(const RunConfig& cfg_in, const CommandOptions& opts) {
  const auto [range_begin, range_end] = shard_range(opts.shard, opts.range, cfg_in.size);
  const bool sharded = !opts.shard.empty() || !opts.range.empty();
  RunConfig cfg = cfg_in;
  if (sharded) cfg.output_path = shard_path(cfg_in.output_path, range_begin, range_end);
  if (opts.resume && opts.overwrite)
    throw ConfigError("--resume", "--resume and --overwrite exclude each other (--resume continues "
                                  "PATH.partial, --overwrite discards it)");
  // a model file's plugin is compiled (or found in the cache) before anything is written
  const ModelRunner runner = model_runner(cfg, opts.quiet);
  // everything below, --overwrite's removals included, happens under the lock
  check_output_folder(cfg.output_path);
  const OutputLock lock(cfg.output_path);
  const std::string& path = cfg.output_path;
  const std::string partial = path + ".partial";
  const PieceDir pieces(path);
  // leftovers of a run killed outright (under the lock, so no run owns them)
  std::error_code ec;
  fs::remove(partial + ".tmp", ec);
  fs::remove(partial + ".assembling", ec);
  if (!fs::exists(partial)) pieces.remove_all();  // pieces without their master: a run killed at its start or end
  RunSummary sum;
  sum.trajectories = range_end - range_begin;
  int64_t slice_size = 0;
  bool resuming = false;
  if (opts.resume) {
    if (fs::exists(path)) {
      check_output_folder(path);
      h5::File f = h5::File::open_ro(path);
      const h5::Group root = f.root();
      if (!root.has_attr("config_hash") || root.attr_string("config_hash") != cfg.result_hash)
        throw ConfigError("--resume", "'" + path + "' exists and is the result of another "
                                      "configuration; choose another output.path");
      // complete already (a run killed after writing it leaves its pieces)
      if (fs::exists(partial)) fs::remove(partial, ec);
      pieces.remove_all();
      sum.already_complete = true;
      sum.completed = range_end - range_begin;
      return sum;
    }
    if (fs::exists(partial)) {
      slice_size = check_resumable(cfg, partial);
      resuming = true;
    }
  } else {
    check_output_path(path, opts.overwrite);
  }
  std::string note;
  const std::unique_ptr<Device> dev = open_run_device(cfg, &note);
  const DeviceInfo& di = dev->info();
  if (!opts.quiet) {
    std::fprintf(stderr, "nholo: backend %s%s\n", describe_device(di).c_str(),
                 note.empty() ? "" : (" (" + note + ")").c_str());
    if (opts.resume)
      std::fprintf(stderr, "nholo: %s\n",
                   resuming ? ("resuming " + partial).c_str()
                            : ("nothing to resume (no " + partial + "): starting the run").c_str());
  }
  // a model file's GPU kernels, before anything is removed or written
  add_gpu_modules(cfg, *dev, opts.quiet);
  if (opts.overwrite) {
    fs::remove(partial, ec);
    pieces.remove_all();
  }
  // a signal this process received before (an MPI rank between two chunks)
  // still stops it; tests that set the flag by hand start each run afresh
  interrupt_flag().store(interrupt_signal() != 0);
  RunOptions ro;
  ro.quiet = opts.quiet;
  ro.tty = isatty(STDERR_FILENO);
  ro.path = path;
  ro.resume = resuming;
  ro.slice_size = slice_size;
  ro.root_attrs = [&](h5::Group& root, const RunSummary* s) { write_root_attrs(root, cfg, di, s); };
  ro.shard = sharded;
  ro.range_begin = range_begin;
  ro.range_end = range_end;
  if (sharded && !opts.quiet)
    std::fprintf(stderr, "nholo: shard: trajectories [%lld, %lld) of %lld, written to %s\n",
                 static_cast<long long>(range_begin), static_cast<long long>(range_end),
                 static_cast<long long>(cfg.size), path.c_str());
  try {
    sum = runner(cfg, ro, *dev);
  } catch (const ConfigError&) {
    // a run that cannot go on with this config leaves nothing that could
    // pass for a result (a resumed run keeps what it found)
    fs::remove(partial + ".tmp", ec);
    fs::remove(partial + ".assembling", ec);
    if (!resuming) {
      fs::remove(partial, ec);
      pieces.remove_all();
    }
    throw;
  } catch (const std::exception& e) {
    // an I/O error (a full disk) or another failure: finished slices are kept
    // for --resume; a run that finished none leaves nothing
    fs::remove(partial + ".tmp", ec);
    fs::remove(partial + ".assembling", ec);
    // the system's reason first (HDF5 buries it in its error stack)
    std::string what = e.what();
    const std::string tag = "error message = '";
    if (const size_t at = what.find(tag); at != std::string::npos) {
      const size_t end = what.find('\'', at + tag.size());
      what = "cannot write the output (" + what.substr(at + tag.size(), end - at - tag.size()) +
             "): " + what;
    }
    const int64_t kept = finished_slices(pieces);
    if (!resuming && kept == 0) {
      fs::remove(partial, ec);
      pieces.remove_all();
      throw std::runtime_error(what);
    }
    throw std::runtime_error(what + "\nnholo: the " + std::to_string(kept) +
                             " finished slices are kept in " + partial +
                             "; once the cause is fixed, `nholo run CONFIG --resume` continues");
  }
  return sum;
}

namespace {
h5::File open_result(const std::string& path);
}  // namespace

RunSummary merge_command(const std::string& out, const std::vector<std::string>& shard_files,
                         bool copy, bool overwrite, bool quiet) {
  if (shard_files.empty()) throw ConfigError("merge", "no shard files given");
  struct Info {
    RunOptions::Shard s;
    std::string hash, version, config;
    int64_t size = 0;
  };
  std::vector<Info> infos;
  for (const auto& p : shard_files) {
    h5::File f = open_result(p);
    const h5::Group r = f.root();
    Info in;
    in.s.path = p;
    if (!r.has_attr("config_hash") || !r.has_attr("config"))
      throw ConfigError("merge", "'" + p + "' was not written by this version of nholo (no config_hash)");
    if (r.attr_int64("complete") != 1)
      throw ConfigError("merge", "'" + p + "' is not complete (finish it with `nholo run CONFIG "
                                  "--shard ... --resume`)");
    in.hash = r.attr_string("config_hash");
    in.version = r.attr_string("nholo_version") + " (" + r.attr_string("git_revision") + ")";
    in.config = r.attr_string("config");
    in.size = r.attr_int64("ensemble_size");
    in.s.begin = r.has_attr("shard_begin") ? r.attr_int64("shard_begin") : 0;
    in.s.end = r.has_attr("shard_end") ? r.attr_int64("shard_end") : in.size;
    if (in.s.begin < 0 || in.s.end > in.size || in.s.begin >= in.s.end || in.s.begin % kStatBlock)
      throw ConfigError("merge", "'" + p + "' holds a range that is not a shard of its ensemble");
    const auto forms = r.attr_strings("formulations");
    if (forms.empty() ||
        r.open_dataset(forms[0] + "/status").dims() !=
            std::vector<hsize_t>{static_cast<hsize_t>(in.s.end - in.s.begin)})
      throw ConfigError("merge", "'" + p + "' is not an nholo result file (status does not match its range)");
    infos.push_back(in);
  }
  for (const auto& in : infos) {
    if (in.hash != infos[0].hash || in.size != infos[0].size)
      throw ConfigError("merge", "'" + in.s.path + "' (config hash " + in.hash + ") and '" +
                                     infos[0].s.path + "' (config hash " + infos[0].hash +
                                     ") are results of different configurations");
    if (in.version != infos[0].version)
      throw ConfigError("merge", "'" + in.s.path + "' was written by nholo " + in.version + ", '" +
                                     infos[0].s.path + "' by " + infos[0].version);
  }
  std::sort(infos.begin(), infos.end(), [](const Info& a, const Info& b) {
    return a.s.begin != b.s.begin ? a.s.begin < b.s.begin : a.s.end < b.s.end;
  });
  // coverage: every trajectory exactly once
  const int64_t size = infos[0].size;
  auto blocks = [](int64_t b, int64_t e) {
    return "trajectories [" + std::to_string(b) + ", " + std::to_string(e) + ") (blocks " +
           std::to_string(b / kStatBlock) + " to " + std::to_string((e + kStatBlock - 1) / kStatBlock - 1) +
           ")";
  };
  std::vector<std::string> problems;
  int64_t at = 0;
  for (const auto& in : infos) {
    if (in.s.begin > at) problems.push_back("missing " + blocks(at, in.s.begin));
    if (in.s.begin < at)
      problems.push_back("duplicated " + blocks(in.s.begin, std::min(at, in.s.end)) + " (again in '" +
                         in.s.path + "')");
    at = std::max(at, in.s.end);
  }
  if (at < size) problems.push_back("missing " + blocks(at, size));
  if (!problems.empty())
    throw ConfigError("merge", "the shards do not cover the ensemble of " + std::to_string(size) +
                                   " trajectories exactly once: " + join(problems, "; "));
  // the merged file: paths of the shards as it refers to them
  check_output_folder(out);
  for (const auto& in : infos)
    if (fs::exists(out) && fs::equivalent(out, in.s.path))
      throw ConfigError("merge", "'" + out + "' is one of the shards; choose another output file");
  const OutputLock lock(out);
  if (fs::exists(out) && !overwrite)
    throw ConfigError("merge", "'" + out + "' exists; pass --overwrite to replace it");
  const fs::path out_dir = fs::absolute(out).parent_path();
  RunOptions ro;
  for (auto& in : infos) {
    const fs::path abs = fs::absolute(in.s.path);
    in.s.vds_file = abs.parent_path() == out_dir ? abs.filename().string() : abs.string();
    ro.merge.push_back(in.s);
  }
  const RunConfig cfg = parse_config(infos[0].config, {}, infos[0].s.path);
  std::unique_ptr<Device> dev = std::make_unique<CpuDevice>(Backend::cpp, 1);
  const DeviceInfo di = dev->info();
  ro.quiet = quiet;
  ro.path = out;
  ro.merge_copy = copy;
  ro.root_attrs = [&](h5::Group& root, const RunSummary* s) { write_root_attrs(root, cfg, di, s); };
  return model_runner(cfg, quiet)(cfg, ro, *dev);
}

static void describe_model(std::ostringstream& os, const ModelInfo& mi);

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
    describe_model(os, *mp);
    if (name.empty()) os << "\n";
  }
  if (name.empty()) {
    std::vector<CachedPlugin> plugins;
    std::string cache;
    try {
      cache = plugin_cache_dir();
      plugins = cached_plugins();
    } catch (const std::exception& e) {
      os << "model plugins: " << e.what() << "\n";
      return os.str();
    }
    os << "model plugins in " << cache << " (model files compiled by `nholo run` / `nholo model build`):";
    if (plugins.empty()) os << " none";
    os << "\n";
    for (const auto& c : plugins)
      os << "  " << std::left << std::setw(24) << c.model << " " << c.path << "\n    from "
         << (c.source.empty() ? "?" : c.source) << ", compiled in " << c.compile_seconds << " s, "
         << (c.state == "ok" ? std::string("loadable") : "not loadable: it " + c.state) << "\n";
  }
  return os.str();
}

std::string model_file_command(const std::string& path, bool build, bool force,
                               const GpuBuildOptions& gpu) {
  ModelSpec spec;
  try {
    spec = load_model_file(path, model_names());
  } catch (const ModelFileError& e) {
    throw ConfigError("model", e.what());
  }
  std::ostringstream os;
  describe_model(os, model_info_from_spec(spec));
  // where M and F come from (docs/models.md, "Symbolic derivatives")
  const model_file::SymbolicDynamics sd = model_file::symbolic_dynamics(spec);
  os << "  M, F: "
     << (sd.refused.empty() ? "differentiated symbolically from the Lagrangian (" +
                                  std::to_string(sd.nodes) + " distinct expression nodes)"
                            : "by automatic differentiation (symbolic: " + sd.refused + ")")
     << "\n";
  if (!build) {
    os << "model file ok: " << path << " (not compiled; `nholo model build` compiles its plugin)\n";
    return os.str();
  }
  const Plugin& p = model_plugin(spec, [](const std::string& line) {
    std::fprintf(stderr, "nholo: %s\n", line.c_str());
  }, force);
  os << "plugin: " << p.path << "\n"
     << (p.compiled ? "compiled in " : "cached (compiled earlier in ") << std::setprecision(3)
     << p.compile_seconds << (p.compiled ? " s" : " s)") << "\n";
  if (gpu.archs.empty()) return os.str();
  const ModelInfo mi = model_info_from_spec(spec);
  std::vector<std::string> fs_ = gpu.formulations.empty() ? mi.formulations : gpu.formulations;
  for (const auto& f : fs_)
    if (std::find(mi.formulations.begin(), mi.formulations.end(), f) == mi.formulations.end())
      throw ConfigError("--formulations", "'" + f + "' is not a formulation of model " + spec.name +
                                              "; accepted: " + join(mi.formulations));
  os << nvrtc_description() << "\n";
  for (const auto& arch : gpu.archs)
    for (const auto& f : fs_) {
      const GpuModule& g = gpu_module(
          spec, p, f, gpu.method, arch,
          [](const std::string& line) { std::fprintf(stderr, "nholo: %s\n", line.c_str()); },
          force);
      os << "GPU module " << f << " " << gpu.method << " " << arch << ": " << g.path << "\n  "
         << (g.compiled ? "compiled in " : "cached (compiled earlier in ") << std::setprecision(3)
         << g.compile_seconds << (g.compiled ? " s" : " s)") << ", " << g.image.size() << " bytes"
         << (g.resources.empty() ? std::string() : "; kernel: " + g.resources) << "\n";
    }
  return os.str();
}

static void describe_model(std::ostringstream& os, const ModelInfo& mi) {
    os << mi.name << " — " << mi.description << "\n";
    os << "  coordinates: ";
    for (int i = 0; i < mi.n; ++i)
      os << (i ? ", " : "") << mi.coordinates[i]
         << (mi.coordinate_units.empty() ? "" : " [" + mi.coordinate_units[i] + "]");
    os << "\n";
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
}

namespace {

constexpr int64_t kMaxReadableEnsemble = int64_t(1) << 34;

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
  const int64_t size = root.attr_int64("ensemble_size");
  if (size < 1 || size > kMaxReadableEnsemble)
    throw std::runtime_error("'" + path + "' is not an nholo result file (ensemble_size " +
                             std::to_string(size) + " is not in [1, 2^34])");
  return f;
}

// Per-trajectory datasets are read `block` values at a time (kReadBlock =
// 2^16 unless a test asks for less, run.hpp): memory does not grow with the
// ensemble.

// The trajectories a result file holds: a shard's range (root attributes
// shard_begin, shard_end), else the whole ensemble.
int64_t trajectories_in(const h5::Group& root, const std::string& path) {
  const int64_t size = root.attr_int64("ensemble_size");
  if (!root.has_attr("shard_begin") || !root.has_attr("shard_end")) return size;
  const int64_t b = root.attr_int64("shard_begin"), e = root.attr_int64("shard_end");
  if (b < 0 || e > size || b >= e)
    throw std::runtime_error("'" + path + "' is not an nholo result file (shard_begin, shard_end " +
                             std::to_string(b) + ", " + std::to_string(e) +
                             " are not a range of the ensemble)");
  return e - b;
}

// A per-trajectory dataset of a result file: its shape must be the file's
// trajectories (a crafted shape cannot make a reader go past what the file
// says it holds).
void check_per_trajectory(const h5::Dataset& d, int64_t size, const std::string& path) {
  if (d.dims() != std::vector<hsize_t>{static_cast<hsize_t>(size)})
    throw std::runtime_error("'" + path + "' is not an nholo result file (" + d.path() +
                             " does not have the shape (trajectories,))");
}

// Block i (of `block` trajectories) of a per-trajectory dataset, into v.
template <class T>
void read_traj_block(const h5::Dataset& d, int64_t size, int64_t block, int64_t i,
                     std::vector<T>& v) {
  const int64_t b = i * block, e = std::min(size, b + block);
  v.resize(static_cast<size_t>(std::max<int64_t>(e - b, 0)));
  if (e > b) d.read_block({static_cast<hsize_t>(b)}, {static_cast<hsize_t>(e - b)}, v.data());
}

int64_t traj_blocks(int64_t size, int64_t block) { return (size + block - 1) / block; }

}  // namespace

std::string stats_command(const std::string& path, int64_t block) {
  block = std::max<int64_t>(block, 1);
  h5::File f = open_result(path);
  h5::Group root = f.root();
  std::ostringstream os;
  os << std::setprecision(6);
  os << path << ": model " << root.attr_string("model") << ", "
     << (root.has_attr("shard_begin") && root.has_attr("shard_end")
             ? "shard: trajectories [" + std::to_string(root.attr_int64("shard_begin")) + ", " +
                   std::to_string(root.attr_int64("shard_end")) + ") of "
             : std::string())
     << root.attr_int64("ensemble_size") << " trajectories, "
     << (root.attr_int64("complete") ? "complete"
         : root.has_attr("fault")    ? "INCOMPLETE (the device failed: " + root.attr_string("fault") + ")"
         : root.has_attr("interrupted")
             ? std::string("INCOMPLETE (interrupted run)")
             : std::string("INCOMPLETE (a run in progress, or one that was killed: `nholo run CONFIG "
                           "--resume` continues it)"))
     << "\n";
  const auto coords = root.attr_strings("coordinates");
  const int64_t size = trajectories_in(root, path);  // per-trajectory datasets: a shard's range
  if (root.exists("initial/params")) {
    // the parameters that vary per trajectory: their range over the ensemble
    // (trajectories whose initial states are not written yet read NaN: skipped)
    h5::Dataset pd = root.open_dataset("initial/params");
    const std::vector<hsize_t> d = pd.dims();
    const std::vector<std::string> names = pd.has_attr("names") ? pd.attr_strings("names") : std::vector<std::string>{};
    std::vector<std::string> units = pd.has_attr("units") ? pd.attr_strings("units") : std::vector<std::string>{};
    if (d.size() != 2 || d[0] != static_cast<hsize_t>(size) || d[1] < 1 || d[1] > 4096 || names.size() != d[1])
      throw std::runtime_error("'" + path + "' is not an nholo result file (/initial/params does not have the "
                               "shape (ensemble_size, parameters) with one name per parameter)");
    const size_t nv = d[1];
    units.resize(nv);
    std::vector<double> lo(nv, INFINITY), hi(nv, -INFINITY);
    std::vector<int64_t> count(nv, 0);
    const int64_t rows = std::max<int64_t>(1, block / static_cast<int64_t>(nv));
    for (int64_t b = 0; b < size; b += rows) {
      const int64_t e = std::min(size, b + rows);
      const auto v = pd.read_block<double>({static_cast<hsize_t>(b), 0}, {static_cast<hsize_t>(e - b), nv});
      for (size_t k = 0; k < v.size(); ++k) {
        if (std::isnan(v[k])) continue;
        lo[k % nv] = std::min(lo[k % nv], v[k]);
        hi[k % nv] = std::max(hi[k % nv], v[k]);
        ++count[k % nv];
      }
    }
    os << "parameters varied per trajectory (/initial/params):\n";
    for (size_t j = 0; j < nv; ++j) {
      os << "  " << std::left << std::setw(10) << names[j];
      if (count[j])
        os << " min " << std::setw(12) << lo[j] << " max " << std::setw(12) << hi[j];
      else
        os << " (none sampled yet)";
      os << (units[j].empty() ? "" : " [" + units[j] + "]") << " over " << count[j] << " trajectories\n";
    }
  }
  for (const auto& fname : root.attr_strings("formulations")) {
    h5::Group sg = root.open_group("statistics/" + fname);
    os << "\n[" << fname << "]\n  status:";
    const bool merged = sg.exists("mean");  // else: a .partial being written, or killed
    std::vector<int64_t> counts(kStatusCount, 0);
    if (!merged) {
      // counted here from the status dataset (missing slices read as not_run)
      h5::Dataset st = root.open_dataset(fname + "/status");
      if (st.dims() != std::vector<hsize_t>{static_cast<hsize_t>(size)})
        throw std::runtime_error("'" + path + "' is not an nholo result file (" + fname +
                                 "/status does not have the ensemble's size)");
      std::vector<int32_t> v;
      for (int64_t i = 0; i < traj_blocks(size, block); ++i) {
        read_traj_block(st, size, block, i, v);
        for (int32_t x : v)
          if (x >= 0 && x < kStatusCount) ++counts[x];
      }
    }
    for (int s = 0; s < kStatusCount; ++s) {
      const std::string a = std::string("status_") + status_name(static_cast<Status>(s));
      const int64_t c = merged ? (sg.has_attr(a) ? sg.attr_int64(a) : 0) : counts[s];
      if (c) os << " " << status_name(static_cast<Status>(s)) << " " << c;
    }
    os << "\n";
    h5::Dataset time_ds = sg.open_dataset("time");
    if (time_ds.dims().size() != 1 || time_ds.dims()[0] > 10000001)
      throw std::runtime_error("'" + path + "' is not an nholo result file (statistics time axis of "
                               "an unexpected shape)");
    const auto time = time_ds.read<double>();
    const size_t nc = coords.size(), nt = time.size();
    if (nt == 0 || nc == 0) throw std::runtime_error("'" + path + "' is not an nholo result file (no saves)");
    std::vector<double> mean, var, mn, mx;
    if (merged) {
      mean = sg.open_dataset("mean").read<double>();
      var = sg.open_dataset("variance").read<double>();
      mn = sg.open_dataset("min").read<double>();
      mx = sg.open_dataset("max").read<double>();
    } else {
      // the block moments of the windows written so far, merged in block order
      h5::Dataset bm = sg.open_dataset("block_moments_q");
      const std::vector<hsize_t> d = bm.dims();
      if (d.size() != 4 || d[0] != 5 || d[2] != nt || d[3] != nc)
        throw std::runtime_error("'" + path + "' is not an nholo result file (block_moments_q has "
                                 "an unexpected shape)");
      // the last save's moments, block / nc blocks at a time, each
      // coordinate's merged in block order
      const hsize_t blocks = d[1];
      const hsize_t step = std::max<hsize_t>(1, static_cast<hsize_t>(block) / nc);
      std::vector<Moments> acc(nc);
      for (hsize_t b0 = 0; b0 < blocks; b0 += step) {
        const hsize_t nb = std::min(step, blocks - b0);
        const auto last = bm.read_block<double>({0, b0, nt - 1, 0}, {5, nb, 1, nc});
        for (size_t c = 0; c < nc; ++c)
          for (hsize_t b = 0; b < nb; ++b) {
            Moments m;
            const auto at = [&](int part) { return last[(part * nb + b) * nc + c]; };
            if (!(at(0) > 0)) continue;  // not written yet (NaN) or empty
            m.count = at(0);
            m.mean = at(1);
            m.m2 = at(2);
            m.min = at(3);
            m.max = at(4);
            acc[c].merge(m);
          }
      }
      mean.assign(nt * nc, NAN);
      var = mn = mx = mean;
      for (size_t c = 0; c < nc; ++c) {
        const size_t j = (nt - 1) * nc + c;
        mean[j] = acc[c].count ? acc[c].mean : NAN;
        var[j] = acc[c].variance();
        mn[j] = acc[c].count ? acc[c].min : NAN;
        mx[j] = acc[c].count ? acc[c].max : NAN;
      }
      os << "  (merged here from the windows written so far)\n";
    }
    if (mean.size() != nt * nc || var.size() != nt * nc || mn.size() != nt * nc || mx.size() != nt * nc)
      throw std::runtime_error("'" + path + "' is not an nholo result file (statistics of an unexpected shape)");
    os << "  at t = " << time.back() << " (last save), over the ensemble:\n";
    for (size_t c = 0; c < nc; ++c) {
      const size_t j = (nt - 1) * nc + c;
      os << "    " << std::left << std::setw(8) << coords[c] << " mean " << std::setw(12) << mean[j]
         << " std " << std::setw(12) << std::sqrt(var[j]) << " min " << std::setw(12) << mn[j]
         << " max " << mx[j] << "\n";
    }
    if (sg.exists("drift_ratio")) {
      // block by block, in trajectory order (the moments add up as they
      // always did); the quantiles exact, in bounded memory (host/analysis/quantile.hpp)
      const h5::Dataset rd = sg.open_dataset("drift_ratio"), bd = sg.open_dataset("band"),
                        dd = sg.open_dataset("drift_velocity");
      for (const h5::Dataset* d : {&rd, &bd, &dd}) check_per_trajectory(*d, size, path);
      Moments mr, mb, md;
      std::vector<double> r, band, dv;
      for (int64_t i = 0; i < traj_blocks(size, block); ++i) {
        read_traj_block(rd, size, block, i, r);
        read_traj_block(bd, size, block, i, band);
        read_traj_block(dd, size, block, i, dv);
        for (size_t k = 0; k < r.size(); ++k) {
          if (std::isfinite(r[k])) mr.add(r[k]);
          if (std::isfinite(band[k])) mb.add(band[k]);
          if (std::isfinite(dv[k])) md.add(dv[k]);
        }
      }
      const std::vector<double> q = exact_quantiles(
          traj_blocks(size, block),
          [&](int64_t i, std::vector<double>& v) { read_traj_block(rd, size, block, i, v); },
          {0.05, 0.5, 0.95}, QuantileOptions{static_cast<size_t>(block), 4096});
      const std::string pred = sg.has_attr("drift_prediction") ? sg.attr_string("drift_prediction") : "prediction";
      os << "  drift statistic of the model: drift velocity mean " << md.mean
         << ", band mean " << mb.mean << " (max " << mb.max << ")\n"
         << "  drift / (" << pred << "): mean " << mr.mean << ", std "
         << std::sqrt(mr.variance()) << ", quantiles 5% " << q[0] << ", 50% " << q[1]
         << ", 95% " << q[2] << " over " << mr.count << " trajectories\n";
    }
    // the embedded formulation's Euler–Poisson check
    if (root.exists(fname + "/euler_poisson_residual")) {
      const h5::Dataset ed = root.open_dataset(fname + "/euler_poisson_residual");
      check_per_trajectory(ed, size, path);
      Moments me;
      std::vector<double> ep;
      for (int64_t i = 0; i < traj_blocks(size, block); ++i) {
        read_traj_block(ed, size, block, i, ep);
        for (double v : ep)
          if (std::isfinite(v)) me.add(v);
      }
      os << "  Euler-Poisson (eq 26) residual, max over each path relative to its largest term: max "
         << me.max << ", mean " << me.mean << " over " << me.count << " trajectories\n";
    }
  }
  return os.str();
}

std::string compare_command(const std::string& path, const std::vector<std::string>& formulations,
                            int64_t block) {
  block = std::max<int64_t>(block, 1);
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
      const int64_t size = trajectories_in(root, path);
      const h5::Dataset mdd = g.open_dataset("max_distance");
      const h5::Dataset fed = g.open_dataset("first_exceed_time");
      check_per_trajectory(mdd, size, path);
      check_per_trajectory(fed, size, path);
      Moments m;
      int64_t exceeded = 0;
      Moments t;
      std::vector<double> md, fe;
      for (int64_t blk = 0; blk < traj_blocks(size, block); ++blk) {
        read_traj_block(mdd, size, block, blk, md);
        read_traj_block(fed, size, block, blk, fe);
        for (size_t i = 0; i < md.size(); ++i) {
          if (std::isfinite(md[i])) m.add(md[i]);
          if (std::isfinite(fe[i])) {
            ++exceeded;
            t.add(fe[i]);
          }
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
// must agree: a NaN against a number counts as a mismatch); accumulated
// block by block (maxima and counts: the order does not matter).
struct DiffStat {
  double rel = 0, scale = 0, worst = 0;
  int64_t nan_mismatch = 0;
  size_t count = 0;
  void add(const std::vector<double>& a, const std::vector<double>& b) {
    count += a.size();
    for (size_t i = 0; i < a.size(); ++i) {
      const bool na = std::isnan(a[i]), nb = std::isnan(b[i]);
      if (na != nb) {
        ++nan_mismatch;
        continue;
      }
      if (na) continue;
      scale = std::max(scale, std::abs(b[i]));
      worst = std::max(worst, std::abs(a[i] - b[i]));
    }
    rel = scale > 0 ? worst / scale : worst;
  }
};

}  // namespace

bool diff_command(const std::string& path_a, const std::string& path_b, double rtol,
                  std::string& report, int64_t block) {
  block = std::max<int64_t>(block, 1);
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
      const h5::Dataset da = ra.open_dataset(ds), db = rb.open_dataset(ds);
      if (da.dims() != db.dims()) {
        os << ds << ": shapes differ (" << da.size() << " vs " << db.size() << " values)\n";
        ok = false;
        continue;
      }
      DiffStat d;
      std::vector<double> a, b;
      h5::for_each_tile(da.dims(), static_cast<hsize_t>(block),
                        [&](const std::vector<hsize_t>& off, const std::vector<hsize_t>& cnt) {
                          a = da.read_block<double>(off, cnt);
                          b = db.read_block<double>(off, cnt);
                          d.add(a, b);
                        });
      const bool good = d.rel <= rtol && d.nan_mismatch == 0;
      ok = ok && good;
      ++compared;
      os << (good ? "  ok   " : "  FAIL ") << std::left << std::setw(44) << ds << " max |a-b| / max |b| = "
         << d.rel;
      if (d.nan_mismatch) os << ", " << d.nan_mismatch << " NaN mismatches";
      os << "\n";
    }
    const h5::Dataset sta = ra.open_dataset(form + "/status");
    const h5::Dataset stb = rb.open_dataset(form + "/status");
    const int64_t na = static_cast<int64_t>(sta.size()), nb = static_cast<int64_t>(stb.size());
    const int64_t common = std::min(na, nb);
    if (sta.dims().size() != 1 || stb.dims().size() != 1)
      throw std::runtime_error("diff: " + form + "/status is not one value per trajectory");
    int64_t differ = 0;
    std::vector<int32_t> sa, sb;
    for (int64_t i = 0; i < traj_blocks(common, block); ++i) {
      read_traj_block(sta, common, block, i, sa);
      read_traj_block(stb, common, block, i, sb);
      for (size_t k = 0; k < sa.size(); ++k) differ += sa[k] != sb[k];
    }
    if (na != nb || differ) ok = false;
    os << (na == nb && !differ ? "  ok   " : "  FAIL ") << std::left << std::setw(44)
       << (form + "/status") << " " << differ << " trajectories differ\n";
  }
  if (compared == 0) throw std::runtime_error("diff: no common datasets in " + path_a + " and " + path_b);
  os << (ok ? "agree" : "DIFFER") << " to " << rtol << " relative (" << ra.attr_string("backend") << " vs "
     << rb.attr_string("backend") << ")\n";
  report = os.str();
  return ok;
}

}  // namespace nholo
