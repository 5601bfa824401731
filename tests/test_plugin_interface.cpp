// The plugin interface (host/model_files/plugin_abi.h, docs/models.md "The plugin
// interface"): a plugin compiled by another compiler than nholo's (clang++
// here, g++ nholo) loads and gives the same trajectories as the g++ plugin;
// a plugin of another interface version, layout or nholo release is refused
// with a message naming what differs, and a cached one is rebuilt; the
// cache clears what a killed build leaves; an interrupt stops a compile.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "host/io/h5.hpp"
#include "host/model_files/plugin_abi.h"
#include "nholo_cli.hpp"

namespace {

using nholo_test::Result;
using nholo_test::write_file;
namespace fs = std::filesystem;

const fs::path kSource = NHOLO_SOURCE_DIR;

fs::path temp_dir(const std::string& name) {
  return nholo_test::temp_dir("nholo_plugin_interface", name);
}

std::string cache_env(const fs::path& cache) {
  return "NHOLO_CACHE_DIR='" + cache.string() + "'";
}
std::string shared_cache_env() {
  return cache_env(NHOLO_TEST_PLUGIN_CACHE);
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

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// One test per example model file: its run with a clang++ plugin equals its
// run with the plugin of nholo's own compiler, bit for bit.
class ExampleModelFile : public ::testing::TestWithParam<std::string> {};

TEST_P(ExampleModelFile, ClangPluginGivesTheSameTrajectoriesAsTheDefaultCompilers) {
  const std::string clang = find_program({"clang++", "clang++-14", "clang++-15", "clang++-16"});
  if (clang.empty())
    GTEST_SKIP() << "no clang++ on PATH: the compiler-independence check needs one";
  const std::string name = GetParam();
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
  for (const auto& e : fs::directory_iterator(c.cache))
    if (e.path().extension() == ".so") c.so = e.path();
  return c;
}

// A cached plugin of an older interface (a cache kept across an nholo update
// whose record was rewritten, or a plugin copied in) is refused and rebuilt.
TEST(PluginInterface, ACachedPluginOfAnOlderInterfaceIsRebuilt) {
  const fs::path dir = temp_dir("rebuilt");
  const CachedRun first = cached_run(dir);
  ASSERT_EQ(first.result.code, 0) << first.result.output;
  ASSERT_FALSE(first.so.empty());
  const fs::path cache = first.cache, so = first.so;
  const std::string run = first.run;
  const std::vector<double> q_first = first.q;
  // the stand-in, vouched for by the record (size and checksum)
  nholo_test::replace_vouched_plugin(so,
                                     read_text(fake_plugin(dir, "old", 5, false, NHOLO_VERSION)));
  const Result second = nholo_test::run_nholo(run, dir, cache_env(cache));
  ASSERT_EQ(second.code, 0) << second.output;
  EXPECT_NE(second.output.find("it has plugin interface version 5"), std::string::npos)
      << second.output;
  EXPECT_NE(second.output.find("refused, rebuilding it"), std::string::npos) << second.output;
  EXPECT_EQ(read<double>(dir / "constant_speed.h5", "udwadia_kalaba/q"), q_first);
}

}  // namespace

namespace {

// Leftovers of a build killed with SIGKILL (its temporaries) are removed by
// the next build of the same plugin; a folder where the cached plugin should
// be is replaced by the rebuilt plugin.
TEST(PluginCache, KilledBuildsLeftoversAndAFolderInPlaceOfThePluginAreCleared) {
  const fs::path dir = temp_dir("leftovers");
  const CachedRun first = cached_run(dir);
  ASSERT_EQ(first.result.code, 0) << first.result.output;
  ASSERT_FALSE(first.so.empty());
  const fs::path cache = first.cache, so = first.so;
  const std::string run = first.run;
  const std::vector<double> q_first = first.q;
  const std::string stem = (so.parent_path() / so.stem()).string();
  // what a build killed in the compiler and in writing its source leaves
  const std::vector<fs::path> leftovers = {stem + ".tmp.999999.so", stem + ".cpp.tmp.999999"};
  for (const auto& l : leftovers) write_file(l, "partial");
  fs::remove(so);
  fs::create_directories(so / "inside");
  const Result second = nholo_test::run_nholo(run, dir, cache_env(cache));
  ASSERT_EQ(second.code, 0) << second.output;
  EXPECT_NE(second.output.find("refused, rebuilding it"), std::string::npos) << second.output;
  for (const auto& l : leftovers) EXPECT_FALSE(fs::exists(l)) << l;
  EXPECT_TRUE(fs::is_regular_file(so)) << so;
  EXPECT_EQ(read<double>(dir / "constant_speed.h5", "udwadia_kalaba/q"), q_first);
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

// SIGINT while a model's plugin compiles, and while another run waits for
// that compile: each run ends within a second or two, with 128 + SIGINT, the
// compiler stopped, nothing written and nothing left in the cache.
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
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
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
  for (const auto& e : fs::directory_iterator(cache)) {
    const std::string name = e.path().filename().string();
    EXPECT_EQ(name.find(".tmp."), std::string::npos) << "left in the cache: " << name;
    EXPECT_NE(e.path().extension(), ".so") << "a plugin from an interrupted compile: " << name;
  }
}

}  // namespace
