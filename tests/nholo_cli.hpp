// Helpers for the tests that run the nholo command (tests/test_cli.cpp,
// tests/test_pipeline.cpp, ...): run it in a folder with its output captured,
// start it in the background (spawn, wait_for: to signal it), make a fresh
// temporary folder (removed when the tests pass), write a file.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace nholo_test {

namespace fs = std::filesystem;

struct Result {
  int code;            // exit status (-1: killed by a signal)
  std::string output;  // stdout and stderr together
};

// Runs `[env] nholo args` in `dir` (env: e.g. "VAR=1", prefixed to the command).
inline Result run_nholo(const std::string& args, const fs::path& dir, const std::string& env = "") {
  const fs::path log = dir / "nholo.log";
  const std::string cmd = "cd '" + dir.string() + "' && " + env + " '" +
                          std::string(NHOLO_BINARY) + "' " + args + " > '" + log.string() +
                          "' 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream f(log);
  std::stringstream ss;
  ss << f.rdbuf();
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, ss.str()};
}

// The folders temp_dir made in this test process: removed at its end when
// every test passed, kept (and named) to look at when one failed. Before,
// every run of the tests left its folders behind (tens of GB over a few
// hundred runs).
class TempDirs : public ::testing::EmptyTestEventListener {
 public:
  // The process's list, handed to gtest's listeners when first used.
  static TempDirs& of_this_process() {
    static TempDirs* dirs = [] {
      auto* d = new TempDirs;  // owned by gtest's listeners from here on
      ::testing::UnitTest::GetInstance()->listeners().Append(d);
      return d;
    }();
    return *dirs;
  }
  void add(const fs::path& d) { dirs_.push_back(d); }
  void OnTestProgramEnd(const ::testing::UnitTest& tests) override {
    for (const fs::path& d : dirs_) {
      if (!tests.Passed()) {
        std::fprintf(stderr, "kept to look at: %s\n", d.c_str());
        continue;
      }
      std::error_code ec;
      fs::remove_all(d, ec);
    }
  }

 private:
  std::vector<fs::path> dirs_;
};

// An empty folder under the system's temporary folder, unique to this
// process (removed at its end if every test passed: TempDirs).
inline fs::path temp_dir(const std::string& prefix, const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / (prefix + "_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  TempDirs::of_this_process().add(d);
  return d;
}

// `python3 tests/python/fault_check.py MODE REF FILE`: h5py compares FILE
// with the reference result REF (MODE same: every dataset bitwise equal;
// partial: every trajectory finished and equal, or not_run).
inline Result fault_check(const std::string& mode, const fs::path& ref, const fs::path& file) {
  const fs::path log = file.parent_path() / "check.log";
  const std::string cmd = std::string(NHOLO_PYTHON3) + " '" + NHOLO_SOURCE_DIR +
                          "/tests/python/fault_check.py' " + mode + " '" + ref.string() + "' '" +
                          file.string() + "' > '" + log.string() + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream f(log);
  std::stringstream ss;
  ss << f.rdbuf();
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, ss.str()};
}

// " NAME.shard-..." for every file of dir whose name starts with stem + ".shard-"
// (the shards of `--set output.path=STEM.h5 --shard r/R`), for `nholo merge`
inline std::string shard_files(const fs::path& dir, const std::string& stem) {
  std::string list;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind(stem + ".shard-", 0) == 0)
      list += " " + e.path().filename().string();
  return list;
}

inline void write_file(const fs::path& p, const std::string& text) {
  std::ofstream f(p);
  f << text;
}

// The whole file as bytes ("" when it cannot be read).
inline std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Replaces the cached plugin `so` by `bytes` and rewrites its record (.info)
// to vouch for them (size and checksum: FNV-1a, 64 bits, as the cache
// computes it), so that the cache's own check passes and loading decides.
inline void replace_vouched_plugin(const fs::path& so, const std::string& bytes) {
  write_file(so, bytes);
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char sum[17];
  std::snprintf(sum, sizeof sum, "%016llx", static_cast<unsigned long long>(h));
  fs::path info = so;
  info.replace_extension(".info");
  std::ifstream in(info);
  std::string rec, line;
  while (std::getline(in, line)) {
    if (line.rfind("bytes = ", 0) == 0) line = "bytes = " + std::to_string(bytes.size());
    if (line.rfind("checksum = ", 0) == 0) line = "checksum = " + std::string(sum);
    rec += line + "\n";
  }
  in.close();
  write_file(info, rec);
}

// Starts nholo in dir with args (output to `log` in dir), after `setup` in the child.
template <class Setup>
inline pid_t spawn(const fs::path& dir, const std::vector<std::string>& args, Setup setup,
                   const std::string& log = "run.log") {
  const pid_t pid = fork();
  if (pid == 0) {
    if (chdir(dir.c_str()) != 0) _exit(99);
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    dup2(fd, 1);
    setup();
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(NHOLO_BINARY));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(NHOLO_BINARY, argv.data());
    _exit(98);
  }
  return pid;
}

inline int wait_for(pid_t pid, bool* signaled = nullptr, int* sig = nullptr) {
  int st = 0;
  waitpid(pid, &st, 0);
  if (signaled) *signaled = WIFSIGNALED(st);
  if (sig) *sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

}  // namespace nholo_test
