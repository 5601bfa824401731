// The plugin interface (host/model_files/plugin_abi.h, docs/models.md "The plugin
// interface"): a plugin compiled by another compiler than nholo's (clang++
// here, g++ nholo) loads and gives the same trajectories as the g++ plugin;
// a plugin of another interface version, layout or nholo release is refused
// with a message naming what differs, and a cached one is rebuilt; the
// cache clears what a killed build leaves; an interrupt stops a compile.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "host/backends/simd_choice.hpp"
#include "host/io/h5.hpp"
#include "host/model_files/plugin_abi.h"
#include "host/model_files/plugin_convert.hpp"
#include "nholo_cli.hpp"

namespace {

using nholo_test::read_text;
using nholo_test::Result;
using nholo_test::write_file;
namespace fs = std::filesystem;

const fs::path kSource = NHOLO_SOURCE_DIR;

fs::path temp_dir(const std::string& name) {
  return nholo_test::temp_dir("nholo_plugin_interface", name);
}

// The conversions made from the interface's field lists (plugin_abi.h,
// plugin_convert.hpp) carry every member there and back: each set to a value
// other than its default.
TEST(PluginInterface, FieldListsCarryEveryMember) {
  using namespace nholo;
  IntegratorOptions o;
  o.method = Method::dop853;
  o.rtol = 1.5e-7;
  o.atol = 2.5e-9;
  o.dt = 0.125;
  o.dt_min = 1e-11;
  o.dt_max = 0.5;
  o.max_steps = 12345;
  o.safety = 0.8;
  o.fac_min = 0.3;
  o.fac_max = 7.0;
  o.pi_beta = 0.08;
  const IntegratorOptions o2 = plugin_convert::integrator_of(plugin_convert::integrator_c(o));
  EXPECT_EQ(o.method, o2.method);
  EXPECT_EQ(o.rtol, o2.rtol);
  EXPECT_EQ(o.atol, o2.atol);
  EXPECT_EQ(o.dt, o2.dt);
  EXPECT_EQ(o.dt_min, o2.dt_min);
  EXPECT_EQ(o.dt_max, o2.dt_max);
  EXPECT_EQ(o.max_steps, o2.max_steps);
  EXPECT_EQ(o.safety, o2.safety);
  EXPECT_EQ(o.fac_min, o2.fac_min);
  EXPECT_EQ(o.fac_max, o2.fac_max);
  EXPECT_EQ(o.pi_beta, o2.pi_beta);

  EvalOptions e;
  e.pinv = PinvOptions{1e-9, 1e-15, 1e-10, 1e-6};
  e.drift = DriftControl::project;
  e.baumgarte_alpha = 3.0;
  e.baumgarte_beta = 4.0;
  e.project_iterations = 7;
  e.project_tol = 1e-12;
  e.lu_rtol = 1e-13;
  const EvalOptions e2 = plugin_convert::eval_of(plugin_convert::eval_c(e));
  EXPECT_EQ(e.pinv.rtol, e2.pinv.rtol);
  EXPECT_EQ(e.pinv.atol, e2.pinv.atol);
  EXPECT_EQ(e.pinv.chol_rtol, e2.pinv.chol_rtol);
  EXPECT_EQ(e.pinv.gram_rtol, e2.pinv.gram_rtol);
  EXPECT_EQ(e.drift, e2.drift);
  EXPECT_EQ(e.baumgarte_alpha, e2.baumgarte_alpha);
  EXPECT_EQ(e.baumgarte_beta, e2.baumgarte_beta);
  EXPECT_EQ(e.project_iterations, e2.project_iterations);
  EXPECT_EQ(e.project_tol, e2.project_tol);
  EXPECT_EQ(e.lu_rtol, e2.lu_rtol);

  // every pointer of EnsembleArrays (nothing else, no padding) a distinct
  // address, never dereferenced, read back in place
  EnsembleArrays<double> a;
  static_assert(sizeof a % sizeof(std::uintptr_t) == 0, "pointers only");
  std::uintptr_t addresses[sizeof a / sizeof(std::uintptr_t)];
  for (std::size_t k = 0; k < std::size(addresses); ++k) addresses[k] = 64 * (k + 1);
  std::memcpy(&a, addresses, sizeof a);
  const nholo_window_args_c w = plugin_convert::window_args(a, 3, nullptr, 2, true);
  const EnsembleArrays<double> a2 = plugin_convert::arrays_of(w.arrays);
  EXPECT_EQ(0, std::memcmp(&a, &a2, sizeof a)) << "EnsembleArrays";
  EXPECT_EQ(3, w.count);
  EXPECT_EQ(2, w.n_saves);
  EXPECT_EQ(1, w.trajectory_major);
}

// A test's own plugin cache: these tests check the cache's and the
// interface's logic, not the plugin's code, so its plugins are compiled
// unoptimized (NHOLO_PLUGIN_CXXFLAGS=-O0: about 3x faster to build)
std::string cache_env(const fs::path& cache) {
  return "NHOLO_CACHE_DIR='" + cache.string() + "' NHOLO_PLUGIN_CXXFLAGS=-O0";
}
// the tests' shared cache, plugins as nholo builds them (-O3)
std::string shared_cache_env() {
  return "NHOLO_CACHE_DIR='" + std::string(NHOLO_TEST_PLUGIN_CACHE) + "'";
}

// the first of names found on PATH, "" when none
std::string find_program(const std::vector<std::string>& names) {
  for (const auto& n : names)
    if (std::system(("command -v " + n + " >/dev/null 2>&1").c_str()) == 0) return n;
  return "";
}

template <class T>
std::vector<T> read(const fs::path& file, const std::string& dataset) {
  auto f = nholo::h5::File::open_ro(file.string());
  return f.root().open_dataset(dataset).read<T>();
}

// One test per example model file: its run with a clang++ plugin equals its
// run with the plugin of nholo's own compiler, bit for bit.
class ExampleModelFile : public ::testing::TestWithParam<std::string> {};

TEST_P(ExampleModelFile, ClangPluginGivesTheSameTrajectoriesAsTheDefaultCompilers) {
  const std::string clang = find_program({"clang++", "clang++-14", "clang++-15", "clang++-16"});
  if (clang.empty())
    GTEST_SKIP() << "no clang++ on PATH: the compiler-independence check needs one";
  const std::string name = GetParam();
#if defined(__SANITIZE_ADDRESS__)
  // nholo's side is the same for every model; the plugins (not instrumented)
  // and their bits are checked by the product build for all three
  if (name != "rolling_disk") {
    std::printf(
        "SKIPPED in the sanitizer build: the rolling_disk instance checks nholo's side "
        "of a clang++ plugin; every example's bits are checked by the product build\n");
    GTEST_SKIP() << "sanitizer build: rolling_disk only";
  }
#endif
  const fs::path dir = temp_dir("clang_" + name);
  for (const char* ext : {".toml", ".model.toml"})
    fs::copy_file(kSource / "examples" / "models" / (name + ext), dir / (name + ext),
                  fs::copy_options::overwrite_existing);
  const std::string run = "run " + name + ".toml --backend omp --set 'output.path=\"";
  const Result a = nholo_test::run_nholo(run + "default.h5\"'", dir, shared_cache_env());
  ASSERT_EQ(a.code, 0) << a.output;
  const Result b =
      nholo_test::run_nholo(run + "clang.h5\"'", dir, shared_cache_env() + " NHOLO_CXX=" + clang);
  ASSERT_EQ(b.code, 0) << b.output;
  // "compiling its plugin (clang++, ...", or "(cached), compiled by clang++"
  EXPECT_TRUE(b.output.find("(" + clang + ",") != std::string::npos ||
              b.output.find("compiled by " + clang) != std::string::npos)
      << "the plugin was not compiled (or found) for " << clang << ":\n"
      << b.output;
  auto f = nholo::h5::File::open_ro((dir / "default.h5").string());
  const std::vector<std::string> forms = f.root().attr_strings("formulations");
  ASSERT_FALSE(forms.empty());
  size_t values = 0;
  for (const auto& form : forms) {
    for (const char* field : {"q", "qdot"}) {
      const auto x = read<double>(dir / "default.h5", form + "/" + field);
      const auto y = read<double>(dir / "clang.h5", form + "/" + field);
      ASSERT_EQ(x.size(), y.size());
      ASSERT_FALSE(x.empty());
      for (size_t i = 0; i < x.size(); ++i)
        ASSERT_EQ(x[i], y[i]) << name << " " << form << "/" << field << "[" << i << "]";
      values += x.size();
    }
    EXPECT_EQ(read<int32_t>(dir / "default.h5", form + "/status"),
              read<int32_t>(dir / "clang.h5", form + "/status"));
  }
  std::printf(
      "%s: the %s plugin and the default compiler's give equal q, qdot (%zu values, bit "
      "for bit)\n",
      name.c_str(), clang.c_str(), values);
}

INSTANTIATE_TEST_SUITE_P(Examples, ExampleModelFile,
                         ::testing::Values(std::string("rolling_disk"),
                                           std::string("chaplygin_sleigh"),
                                           std::string("constant_speed")),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

// A stand-in plugin with a chosen interface version, layout and release,
// compiled by the test: nholo must refuse it before calling any function.
fs::path fake_plugin(const fs::path& dir, const std::string& name, uint32_t abi, bool bad_layout,
                     const std::string& release) {
  const fs::path src = dir / (name + ".cpp"), so = dir / (name + ".so");
  write_file(src,
             "#include <cstddef>\n#include \"host/model_files/plugin_abi.h\"\n"
             "static nholo_layout_entry_c layout[] = {\n"
             "    NHOLO_PLUGIN_LAYOUT(NHOLO_LAYOUT_SIZE, NHOLO_LAYOUT_OFFSET)};\n"
             "extern \"C\" __attribute__((visibility(\"default\"))) const nholo_plugin* "
             "nholo_plugin_entry_v1(void) {\n"
             "  static nholo_plugin t{};\n"
             "  t.abi_version = " +
                 std::to_string(abi) +
                 "u;\n"
                 "  t.layout_count = sizeof layout / sizeof layout[0];\n"
                 "  t.layout = layout;\n" +
                 (bad_layout ? "  layout[3].value += 8;\n" : "") + "  t.nholo_version = \"" +
                 release +
                 "\";\n"
                 "  t.compiler = \"the test's stand-in\";\n"
                 "  return &t;\n}\n");
  const std::string cmd = "c++ -std=c++17 -shared -fPIC -I'" + kSource.string() + "' -o '" +
                          so.string() + "' '" + src.string() + "' 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return so;
}

TEST(PluginInterface, PluginsOfAnotherVersionLayoutOrReleaseAreRefusedSayingWhy) {
  const fs::path dir = temp_dir("refused");
  fs::copy_file(kSource / "examples" / "models" / "constant_speed.toml", dir / "run.toml",
                fs::copy_options::overwrite_existing);
  struct Case {
    std::string name;
    uint32_t abi;
    bool bad_layout;
    std::string release, says;
  };
  const std::vector<Case> cases = {
      {"old_interface", 5, false, NHOLO_VERSION,
       "it has plugin interface version 5, this nholo version " +
           std::to_string(NHOLO_PLUGIN_ABI_VERSION)},
      {"other_layout", NHOLO_PLUGIN_ABI_VERSION, true, NHOLO_VERSION,
       "lays the plugin interface out differently"},
      {"other_release", NHOLO_PLUGIN_ABI_VERSION, false, "0.0.1",
       "compiled against the headers of nholo 0.0.1, this is nholo " NHOLO_VERSION}};
  for (const Case& c : cases) {
    const fs::path so = fake_plugin(dir, c.name, c.abi, c.bad_layout, c.release);
    const Result r =
        nholo_test::run_nholo("run run.toml --backend omp --set 'model=\"" + so.string() + "\"'",
                              dir, cache_env(dir / "cache"));
    EXPECT_NE(r.code, 0) << c.name << "\n" << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << c.name << "\n" << r.output;
    EXPECT_NE(r.output.find("rebuild it against this nholo"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(dir / "constant_speed.h5")) << c.name;
  }
}

// examples/models/constant_speed run in dir with a cache of its own
// (dir/cache): the run, its result's udwadia_kalaba q and the plugin built.
struct CachedRun {
  fs::path cache, so;
  std::string run;
  Result result;
  std::vector<double> q;
};
CachedRun cached_run(const fs::path& dir) {
  for (const char* f : {"constant_speed.toml", "constant_speed.model.toml"})
    fs::copy_file(kSource / "examples" / "models" / f, dir / f,
                  fs::copy_options::overwrite_existing);
  CachedRun c;
  c.cache = dir / "cache";
  c.run = "run constant_speed.toml --backend omp --overwrite";
  c.result = nholo_test::run_nholo(c.run, dir, cache_env(c.cache));
  if (c.result.code != 0) return c;
  c.q = read<double>(dir / "constant_speed.h5", "udwadia_kalaba/q");
  for (const auto& e : fs::directory_iterator(c.cache))  // the plugin, not its lane add-on
    if (e.path().extension() == ".so" &&
        e.path().filename().string().find("-lanes-") == std::string::npos)
      c.so = e.path();
  return c;
}

// the cached run passed and built its plugin
::testing::AssertionResult built(const CachedRun& c) {
  if (c.result.code != 0) return ::testing::AssertionFailure() << c.result.output;
  if (c.so.empty()) return ::testing::AssertionFailure() << "no plugin in " << c.cache;
  return ::testing::AssertionSuccess();
}

// A cached plugin of an older interface (a cache kept across an nholo update
// whose record was rewritten, or a plugin copied in) is refused and rebuilt.
TEST(PluginInterface, ACachedPluginOfAnOlderInterfaceIsRebuilt) {
  const fs::path dir = temp_dir("rebuilt");
  const CachedRun first = cached_run(dir);
  ASSERT_TRUE(built(first));
  // the stand-in, vouched for by the record (size and checksum)
  nholo_test::replace_vouched_plugin(first.so,
                                     read_text(fake_plugin(dir, "old", 5, false, NHOLO_VERSION)));
  const Result second = nholo_test::run_nholo(first.run, dir, cache_env(first.cache));
  ASSERT_EQ(second.code, 0) << second.output;
  EXPECT_NE(second.output.find("it has plugin interface version 5"), std::string::npos)
      << second.output;
  EXPECT_NE(second.output.find("refused, rebuilding it"), std::string::npos) << second.output;
  EXPECT_EQ(read<double>(dir / "constant_speed.h5", "udwadia_kalaba/q"), first.q);
}

// A cached lane add-on that is not one (here: a plugin's bytes, vouched for
// by its record) is refused and rebuilt; the run's results are the first's.
TEST(PluginInterface, ACachedLaneAddOnThatIsNotOneIsRebuilt) {
  if (nholo::cpu_simd_isa() == nholo::SimdIsa::off) {
    std::printf("SKIPPED: this CPU has no AVX2 + FMA: no lane add-on is built\n");
    return;
  }
  const fs::path dir = temp_dir("lanes_rebuilt");
  const CachedRun first = cached_run(dir);
  ASSERT_TRUE(built(first));
  fs::path addon;
  for (const auto& e : fs::directory_iterator(first.cache))
    if (e.path().extension() == ".so" &&
        e.path().filename().string().find("-lanes-") != std::string::npos)
      addon = e.path();
  ASSERT_FALSE(addon.empty()) << first.result.output;
  nholo_test::replace_vouched_plugin(addon, read_text(first.so));
  const Result second = nholo_test::run_nholo(first.run, dir, cache_env(first.cache));
  ASSERT_EQ(second.code, 0) << second.output;
  EXPECT_NE(second.output.find("cannot be used as a lane add-on: it has no table"),
            std::string::npos)
      << second.output;
  EXPECT_NE(second.output.find("refused, rebuilding it"), std::string::npos) << second.output;
  EXPECT_EQ(read<double>(dir / "constant_speed.h5", "udwadia_kalaba/q"), first.q);
}

// A cached plugin is one of the headers it was compiled against: once a
// header changes (a checkout edited, a model's header patched), the next
// build compiles again instead of loading code of the old headers.
TEST(PluginCache, APluginCompiledAgainstOtherHeadersIsCompiledAgain) {
  const fs::path dir = temp_dir("headers");
  fs::copy_file(kSource / "examples" / "models" / "constant_speed.model.toml",
                dir / "constant_speed.model.toml");
  const fs::path headers = dir / "headers";
  fs::create_directories(headers);
  for (const char* room : {"kernels", "models", "host"})
    fs::copy(kSource / room, headers / room, fs::copy_options::recursive);
  const std::string env = cache_env(dir / "cache") + " NHOLO_INCLUDE_DIR='" + headers.string() +
                          "' NHOLO_PLUGIN_CXXFLAGS=-O0";
  const std::string build = "model build constant_speed.model.toml";
  const Result first = nholo_test::run_nholo(build, dir, env);
  ASSERT_EQ(first.code, 0) << first.output;
  EXPECT_NE(first.output.find("\ncompiled in "), std::string::npos) << first.output;
  const Result again = nholo_test::run_nholo(build, dir, env);
  ASSERT_EQ(again.code, 0) << again.output;
  EXPECT_NE(again.output.find("cached (compiled earlier in"), std::string::npos) << again.output;
  // a comment added to one kernel header is enough
  std::ofstream(headers / "kernels" / "lyapunov.hpp", std::ios::app) << "\n// edited\n";
  const Result edited = nholo_test::run_nholo(build, dir, env);
  ASSERT_EQ(edited.code, 0) << edited.output;
  EXPECT_NE(edited.output.find("\ncompiled in "), std::string::npos) << edited.output;
  int plugins = 0;  // (their SIMD lane add-ons aside, rebuilt likewise)
  for (const auto& e : fs::directory_iterator(dir / "cache"))
    plugins += e.path().extension() == ".so" &&
               e.path().filename().string().find("-lanes-") == std::string::npos;
  EXPECT_EQ(plugins, 2);
  fs::remove_all(dir);
}

}  // namespace

namespace {

// Leftovers of a build killed with SIGKILL (its temporaries) are removed by
// the next build of the same plugin; a folder where the cached plugin should
// be is replaced by the rebuilt plugin.
TEST(PluginCache, KilledBuildsLeftoversAndAFolderInPlaceOfThePluginAreCleared) {
  const fs::path dir = temp_dir("leftovers");
  const CachedRun first = cached_run(dir);
  ASSERT_TRUE(built(first));
  const fs::path& so = first.so;
  const std::string stem = (so.parent_path() / so.stem()).string();
  // what a build killed in the compiler and in writing its source leaves
  const std::vector<fs::path> leftovers = {stem + ".tmp.999999.so", stem + ".cpp.tmp.999999"};
  for (const auto& l : leftovers) write_file(l, "partial");
  fs::remove(so);
  fs::create_directories(so / "inside");
  const Result second = nholo_test::run_nholo(first.run, dir, cache_env(first.cache));
  ASSERT_EQ(second.code, 0) << second.output;
  EXPECT_NE(second.output.find("refused, rebuilding it"), std::string::npos) << second.output;
  for (const auto& l : leftovers) EXPECT_FALSE(fs::exists(l)) << l;
  EXPECT_TRUE(fs::is_regular_file(so)) << so;
  EXPECT_EQ(read<double>(dir / "constant_speed.h5", "udwadia_kalaba/q"), first.q);
}

}  // namespace

namespace {

// true once `text` appears in dir/run.log (within `seconds`)
bool wait_for_log(const fs::path& log, const std::string& text, double seconds) {
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < seconds) {
    if (read_text(log).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// The processes whose command line names `text` (the compilers of a cache
// entry name its sources): "PID: command line" each, after waiting up to
// `seconds` for them to end
std::vector<std::string> processes_naming(const std::string& text, double seconds) {
  std::vector<std::string> found;
  const auto t0 = std::chrono::steady_clock::now();
  do {
    found.clear();
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/proc", ec)) {
      const std::string pid = e.path().filename().string();
      if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
      std::string cmd = read_text(e.path() / "cmdline");
      std::replace(cmd.begin(), cmd.end(), '\0', ' ');
      if (cmd.find(text) != std::string::npos) found.push_back(pid + ": " + cmd);
    }
    if (found.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  } while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < seconds);
  return found;
}

// SIGINT while a model's plugin compiles, and while another run waits for
// that compile: each run ends within a second or two, with 128 + SIGINT, the
// compiler stopped, nothing written and nothing left in the cache. The
// signals go to nholo's process alone (not its group, as a terminal's Ctrl-C
// would): no compiler of its outlives it (each runs in a process group of
// its own, which nholo stops as a group).
TEST(PluginCache, AnInterruptStopsTheCompileOrTheWaitPromptlyAndWritesNothing) {
  const fs::path a = temp_dir("interrupt_a"), b = temp_dir("interrupt_b");
  const fs::path cache = a / "cache";
  for (const fs::path& d : {a, b})
    for (const char* f : {"constant_speed.toml", "constant_speed.model.toml"})
      fs::copy_file(kSource / "examples" / "models" / f, d / f,
                    fs::copy_options::overwrite_existing);
  const auto with_cache = [cache] { setenv("NHOLO_CACHE_DIR", cache.c_str(), 1); };
  const std::vector<std::string> args = {"run", "constant_speed.toml", "--backend", "omp"};
  const pid_t pa = nholo_test::spawn(a, args, with_cache);
  ASSERT_TRUE(wait_for_log(a / "run.log", "compiling its plugin", 30)) << read_text(a / "run.log");
  const pid_t pb = nholo_test::spawn(b, args, with_cache);  // waits for a's compile (the lock)
  // (a fixed pause was not enough under load: the signal came before b had
  // set its handler)
  ASSERT_TRUE(wait_for_log(b / "run.log", "waiting for another nholo", 60))
      << read_text(b / "run.log");
  for (const auto& [pid, dir, says] : {std::make_tuple(pb, b, "while waiting for another nholo"),
                                       std::make_tuple(pa, a, "while compiling")}) {
    const auto t0 = std::chrono::steady_clock::now();
    kill(pid, SIGINT);
    const int code = nholo_test::wait_for(pid);
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string log = read_text(dir / "run.log");
    EXPECT_EQ(code, 128 + SIGINT) << log;
    EXPECT_LT(took, 3.0) << log;
    EXPECT_NE(log.find(says), std::string::npos) << log;
    EXPECT_NE(log.find("nothing was written"), std::string::npos) << log;
    for (const auto& e : fs::directory_iterator(dir))
      EXPECT_TRUE(e.path().filename() == "run.log" || e.path().filename() == "cache" ||
                  e.path().extension() == ".toml")
          << "left behind: " << e.path();
    std::printf("SIGINT %s: exit %d after %.2f s\n", says, code, took);
  }
  for (const std::string& p : processes_naming(cache.string(), 2.0))
    ADD_FAILURE() << "a compiler outlived the nholo that started it: " << p;
  // `nholo model build` too (before: killed by the signal, its compiler
  // left running to drop a temporary into the cache)
  const pid_t pc =
      nholo_test::spawn(b, {"model", "build", "constant_speed.model.toml"}, with_cache);
  ASSERT_TRUE(wait_for_log(b / "run.log", "compiling its plugin", 30)) << read_text(b / "run.log");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  kill(pc, SIGTERM);
  EXPECT_EQ(nholo_test::wait_for(pc), 128 + SIGTERM) << read_text(b / "run.log");
  EXPECT_NE(read_text(b / "run.log").find("interrupted while compiling"), std::string::npos)
      << read_text(b / "run.log");
  for (const std::string& p : processes_naming(cache.string(), 2.0))
    ADD_FAILURE() << "a compiler outlived `nholo model build`: " << p;
  std::this_thread::sleep_for(
      std::chrono::milliseconds(500));  // a compiler left running would write now
  for (const auto& e : fs::directory_iterator(cache)) {
    const std::string name = e.path().filename().string();
    EXPECT_EQ(name.find(".tmp."), std::string::npos) << "left in the cache: " << name;
    EXPECT_NE(e.path().extension(), ".so") << "a plugin from an interrupted compile: " << name;
  }
}

}  // namespace

namespace {

// Issue 31's smaller warts on the plugin cache (14, 15, 16, 17): a small
// model file compiled at -O0 (NHOLO_CXX with an option, wart 16), so that
// each test compiles in seconds.
const char* kTinyModelFile = R"(name = "tiny_cache"
description = "a harmonic oscillator"
coordinates = [ { name = "x", unit = "m" } ]
parameters = [ { name = "k", default = 1.0, unit = "N/m", positive = true } ]
lagrangian = "x_dot^2/2 - k*x^2/2"
)";

// the files of the cache whose name ends in ext: the plugins' (not those of
// their SIMD lane add-ons, NAME-lanes-ISA-KEY.*, which `nholo model build`
// builds beside them on a CPU with AVX2 or AVX-512)
std::vector<fs::path> cache_files(const fs::path& cache, const std::string& ext) {
  std::vector<fs::path> v;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(cache, ec))
    if (e.path().extension() == ext &&
        e.path().filename().string().find("-lanes-") == std::string::npos)
      v.push_back(e.path());
  return v;
}

// Wart 16: NHOLO_CXX="c++ -O0" is a program and its options (as make's CXX),
// not one program's name; a program that does not exist is named alone.
// Wart 15: `nholo models` says "loadable" only of a plugin that loads: an
// empty file its record vouches for (left by an older nholo) is not.
TEST(PluginCache, NholoCxxIsSplitIntoProgramAndOptions) {
  const fs::path dir = temp_dir("cxx_words");
  write_file(dir / "tiny.model.toml", kTinyModelFile);
  const std::string env = cache_env(dir / "cache");
  const Result b =
      nholo_test::run_nholo("model build tiny.model.toml", dir, env + " NHOLO_CXX='c++ -O0'");
  ASSERT_EQ(b.code, 0) << b.output;
  EXPECT_NE(b.output.find("compiling its plugin (c++ -O0, "), std::string::npos) << b.output;
  const std::vector<fs::path> so = cache_files(dir / "cache", ".so");
  ASSERT_EQ(so.size(), 1u) << b.output;
  fs::path info = so[0];
  info.replace_extension(".info");
  EXPECT_NE(read_text(info).find("\ncompiler = c++ -O0\n"), std::string::npos) << read_text(info);
  const Result ls = nholo_test::run_nholo("models", dir, env);
  // (the model file by absolute path: the cache serves every folder)
  EXPECT_NE(ls.output.find(so[0].string() + "\n    from " +
                           fs::canonical(dir / "tiny.model.toml").string() + ", compiled in "),
            std::string::npos)
      << ls.output;
  EXPECT_NE(ls.output.find(", loadable\n"), std::string::npos) << ls.output;
  // a compiler that is not there: its program named, NHOLO_CXX quoted
  const Result missing = nholo_test::run_nholo("model build tiny.model.toml", dir,
                                               env + " NHOLO_CXX='nholo-no-such-cxx -O0'");
  EXPECT_EQ(missing.code, 2) << missing.output;
  EXPECT_NE(missing.output.find("cannot start the compiler 'nholo-no-such-cxx' (NHOLO_CXX = "
                                "\"nholo-no-such-cxx -O0\"): " +
                                std::string(std::strerror(ENOENT))),
            std::string::npos)
      << missing.output;
  // an empty plugin vouched for by its record (as an older nholo recorded
  // what a broken compiler wrote) is not called loadable, and is rebuilt
  nholo_test::replace_vouched_plugin(so[0], "");
  const Result empty = nholo_test::run_nholo("models", dir, env);
  EXPECT_NE(empty.output.find("not loadable: it is not an ELF file (0 bytes): not a compiled "
                              "plugin"),
            std::string::npos)
      << empty.output;
  // (its lane add-on, beside it, still loads: only the plugin's entry is checked)
  const size_t entry = empty.output.find(so[0].string());
  ASSERT_NE(entry, std::string::npos) << empty.output;
  const size_t line_end = empty.output.find('\n', empty.output.find('\n', entry) + 1);
  EXPECT_EQ(empty.output.substr(entry, line_end - entry).find(", loadable"), std::string::npos)
      << empty.output;
  nholo_test::replace_vouched_plugin(so[0], std::string("\x7f") + "ELF, but no library");
  const Result junk = nholo_test::run_nholo("models", dir, env);
  EXPECT_NE(junk.output.find("not loadable: it does not load (cannot load the model plugin"),
            std::string::npos)
      << junk.output;
  const Result again =
      nholo_test::run_nholo("model build tiny.model.toml", dir, env + " NHOLO_CXX='c++ -O0'");
  ASSERT_EQ(again.code, 0) << again.output;
  EXPECT_NE(again.output.find("cannot be used (cannot load the model plugin"), std::string::npos)
      << again.output;
  EXPECT_NE(again.output.find("refused, rebuilding it"), std::string::npos) << again.output;
  EXPECT_NE(nholo_test::run_nholo("models", dir, env).output.find(", loadable\n"),
            std::string::npos);
}

// Wart 15: a "compiler" that exits 0 but writes no plugin (nothing, an empty
// file, a file that is not a shared library) leaves no plugin and no record
// in the cache, and says so.
TEST(PluginCache, ACompilerThatWritesNoPluginLeavesNothingCached) {
  const fs::path dir = temp_dir("no_plugin");
  write_file(dir / "tiny.model.toml", kTinyModelFile);
  // writes `what` to the file after -o
  auto fake = [&](const std::string& name, const std::string& what) {
    const fs::path p = dir / name;
    write_file(p, "#!/bin/sh\nwhile [ $# -gt 0 ]; do\n  if [ \"$1\" = -o ]; then printf '" + what +
                      "' > \"$2\"; fi\n  shift\ndone\nexit 0\n");
    fs::permissions(p, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
    return p.string();
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {fake("empty_cxx.sh", ""),
       "exited 0 but wrote an empty file for the plugin of model "
       "'tiny_cache'"},
      {fake("text_cxx.sh", "hello"),
       "exited 0 but wrote a file of 5 bytes that is not an ELF "
       "shared library for the plugin of model 'tiny_cache'"},
      {"/bin/true", "exited 0 but wrote no file ("}};
  for (const auto& [cxx, says] : cases) {
    const fs::path cache = dir / "cache";
    const Result r = nholo_test::run_nholo("model build tiny.model.toml", dir,
                                           cache_env(cache) + " NHOLO_CXX='" + cxx + "'");
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.output.find("the compiler '" + cxx + "' " + says), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("NHOLO_CXX must name a C++17 compiler that writes the shared library "
                            "given by -o; nothing was cached"),
              std::string::npos)
        << r.output;
    EXPECT_TRUE(cache_files(cache, ".so").empty()) << cxx;
    EXPECT_TRUE(cache_files(cache, ".info").empty()) << cxx;
    const Result ls = nholo_test::run_nholo("models", dir, cache_env(cache));
    EXPECT_NE(ls.output.find("(model files compiled by `nholo run` / `nholo model build`): none"),
              std::string::npos)
        << ls.output;
  }
}

// A plugin is compiled from several units at once (plugin.cpp, one compiler
// each, then linked): when one unit fails, the error names that unit and
// gives its compiler's message and log, the other compilers are stopped, and
// nothing is left in the cache but the sources and logs (no object, no
// plugin, no record).
TEST(PluginCache, ACompileErrorInOneUnitIsReportedWithItsMessage) {
  const fs::path dir = temp_dir("unit_error");
  write_file(dir / "tiny.model.toml", kTinyModelFile);
  // a compiler that fails on unit 2 only, as a compiler does on an error
  const fs::path cxx = dir / "unit2_fails.sh";
  write_file(cxx, R"(#!/bin/sh
case "$*" in
  *.unit2.cpp*) echo "tiny.unit2.cpp:1:1: error: unit two fails on purpose" >&2; exit 1 ;;
esac
exec c++ -O0 "$@"
)");
  fs::permissions(cxx, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
  const fs::path cache = dir / "cache";
  const Result r = nholo_test::run_nholo("model build tiny.model.toml", dir,
                                         cache_env(cache) + " NHOLO_CXX='" + cxx.string() + "'");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("compiling the plugin of model 'tiny_cache'"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("failed (unit 2 of 3, exit 1;"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(".unit2.log, source "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("error: unit two fails on purpose"), std::string::npos) << r.output;
  EXPECT_TRUE(cache_files(cache, ".so").empty()) << r.output;
  EXPECT_TRUE(cache_files(cache, ".info").empty()) << r.output;
  EXPECT_TRUE(cache_files(cache, ".o").empty()) << r.output;
  // the same model with the compiler that works: built, and it runs
  const Result ok = nholo_test::run_nholo("model build tiny.model.toml", dir,
                                          cache_env(cache) + " NHOLO_CXX='c++ -O0'");
  EXPECT_EQ(ok.code, 0) << ok.output;
  EXPECT_EQ(cache_files(cache, ".so").size(), 1u) << ok.output;
}

// Wart 14: a read-only cache serves the plugins built in it (found and
// loaded without the lock file), and a build there is refused saying that the
// cache is not writable. As root, the cache is made read-only by a read-only
// bind mount in a mount namespace of the nholo command (unshare -m), else by
// running nholo as nobody (setpriv) on a cache it does not own.
TEST(PluginCache, AReadOnlyCacheServesItsPluginsAndRefusesToBuildSayingWhy) {
  const fs::path dir = temp_dir("read_only");
  const fs::path cache = dir / "cache";
  write_file(dir / "tiny.model.toml", kTinyModelFile);
  const std::string cxx = "NHOLO_CXX='c++ -O0' ";
  const Result b =
      nholo_test::run_nholo("model build tiny.model.toml", dir, cxx + cache_env(cache));
  ASSERT_EQ(b.code, 0) << b.output;
  for (const auto& e : fs::directory_iterator(cache))
    if (e.path().extension() == ".lock") fs::remove(e.path());  // made by the build
  // how nholo is run on a read-only cache
  std::string ro;
  if (::getuid() != 0) {
    fs::permissions(cache, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                               fs::perms::group_exec);
    ro = cache_env(cache);
  } else if (std::system(("unshare -m sh -c 'mount --bind -o ro \"$0\" \"$0\" && ! touch "
                          "\"$0\"/probe' '" +
                          cache.string() + "' >/dev/null 2>&1")
                             .c_str()) == 0) {
    ro = cache_env(cache) +
         " unshare -m sh -c 'mount --bind -o ro \"$NHOLO_CACHE_DIR\" \"$NHOLO_CACHE_DIR\" && "
         "exec \"$0\" \"$@\"'";
  } else if (std::system(("setpriv --reuid=65534 --regid=65534 --clear-groups sh -c '! touch "
                          "\"$0\"/probe' '" +
                          cache.string() + "' >/dev/null 2>&1")
                             .c_str()) == 0) {
    ro = "setpriv --reuid=65534 --regid=65534 --clear-groups env " + cache_env(cache);
  } else {
    GTEST_SKIP() << "running as root, and neither a read-only bind mount (unshare -m) nor "
                    "setpriv to user nobody is permitted here: no cache this test can make "
                    "read-only";
  }
  std::printf("read-only cache by: %s\n", ro.c_str());
  // the cached plugin: found and loaded, no lock file made
  const Result cached = nholo_test::run_nholo("model build tiny.model.toml", dir, cxx + ro);
  ASSERT_EQ(cached.code, 0) << cached.output;
  EXPECT_NE(cached.output.find("(cached), compiled by c++ -O0"), std::string::npos)
      << cached.output;
  EXPECT_TRUE(cache_files(cache, ".lock").empty());
  // another compiler: another key, a plugin the cache does not hold
  const Result build =
      nholo_test::run_nholo("model build tiny.model.toml", dir, "NHOLO_CXX=c++ " + ro);
  EXPECT_EQ(build.code, 2) << build.output;
  EXPECT_NE(build.output.find("cannot build the plugin of model 'tiny_cache' (tiny.model.toml): "
                              "the plugin cache '" +
                              cache.string() + "' is not writable ("),
            std::string::npos)
      << build.output;
  EXPECT_NE(build.output.find(".so is missing; set NHOLO_CACHE_DIR to a writable folder (a "
                              "read-only cache serves only what was already built in it)"),
            std::string::npos)
      << build.output;
  EXPECT_EQ(cache_files(cache, ".so").size(), 1u);
  fs::permissions(cache, fs::perms::owner_all, fs::perm_options::add);
}

// Wart 17: a --gpu-arch of the wrong form, or one this NVRTC does not compile
// for, is refused before anything is compiled (no plugin built), naming what
// is accepted and the architectures NVRTC supports.
TEST(PluginCache, BadOrUnsupportedGpuArchitecturesAreRefusedBeforeCompiling) {
  const fs::path dir = temp_dir("gpu_arch");
  const fs::path cache = dir / "cache";
  write_file(dir / "tiny.model.toml", kTinyModelFile);
  const std::string form =
      "': expected sm_XY (sm_ and 2 or 3 digits, optionally followed by a or f: e.g. sm_80, "
      "sm_90, sm_90a)";
  for (const std::string arch : {"sm_9x", "90", "sm_9", "sm_1000", "sm_90ab", "sm_"}) {
    const Result r = nholo_test::run_nholo("model build tiny.model.toml --gpu-arch " + arch, dir,
                                           cache_env(cache));
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.output.find("GPU architecture '" + arch + form), std::string::npos) << r.output;
  }
  const Result virt = nholo_test::run_nholo("model build tiny.model.toml --gpu-arch compute_90",
                                            dir, cache_env(cache));
  EXPECT_EQ(virt.code, 2) << virt.output;
  EXPECT_NE(virt.output.find("GPU architecture 'compute_90' is a virtual architecture (PTX only): "
                             "nholo compiles GPU modules into cubins; expected sm_XY"),
            std::string::npos)
      << virt.output;
  EXPECT_TRUE(cache_files(cache, ".so").empty()) << "a plugin was compiled for a bad --gpu-arch";
  for (const std::string arch : {"sm_99", "sm_10"}) {
    const Result r = nholo_test::run_nholo(
        "model build tiny.model.toml --formulations udwadia_kalaba --gpu-arch sm_80," + arch, dir,
        cache_env(cache));
    EXPECT_EQ(r.code, 2) << r.output;
    if (r.output.find("NVRTC (the CUDA runtime compiler") != std::string::npos &&
        r.output.find("cannot be loaded") != std::string::npos) {
      std::printf("SKIPPED the NVRTC half: NVRTC is not available here: %s\n", r.output.c_str());
      GTEST_SKIP() << "NVRTC is not available here: " << r.output;
    }
    EXPECT_NE(r.output.find("GPU architecture '" + arch + "' is not supported by NVRTC "),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("(supported: sm_"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("sm_80"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("the NVRTC setup"), std::string::npos) << r.output;
    EXPECT_TRUE(cache_files(cache, ".so").empty()) << "a plugin was compiled for " << arch;
  }
}

}  // namespace
