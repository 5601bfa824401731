// nholo/tests/compiled_program.hpp — a test program built from generated
// model headers with the system compiler (c++ on PATH, -O0 -Werror) and run:
// its output lines "key value" as a map (tests/test_model_file_compiled.cpp,
// test_model_file_definitions.cpp).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace nholo_test {

// c++ on PATH, or "" when there is none
inline std::string find_compiler() {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return "";
  std::stringstream ss(path);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    const std::filesystem::path p = std::filesystem::path(dir.empty() ? "." : dir) / "c++";
    if (::access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

// Writes `files` (name -> text) and main.cpp into a fresh folder (tag names
// it), builds main.cpp with the system compiler and runs it; its output lines
// "key value" are returned as a map. Empty when the compiler is missing
// (*skip set) or the build fails (a test failure, with the files).
inline std::map<std::string, double> compile_and_run_files(
    const std::string& tag, const std::map<std::string, std::string>& files,
    const std::string& main_cpp, std::string* skip) {
  namespace fs = std::filesystem;
  std::map<std::string, double> out;
  const std::string cxx = find_compiler();
  if (cxx.empty()) {
    *skip = "no c++ on PATH: the generated header is not compiled here";
    return out;
  }
  const fs::path dir = fs::temp_directory_path() /
                       ("nholo_test_model_file_" + tag + "_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const auto& [name, text] : files) std::ofstream(dir / name) << text;
  std::ofstream(dir / "main.cpp") << main_cpp;
  const std::string cmd = cxx + " -std=c++17 -O0 -Wall -Wextra -Wshadow -Wpedantic -Werror -I" +
                          NHOLO_SOURCE_DIR + " -I" + dir.string() + " " +
                          (dir / "main.cpp").string() + " -o " + (dir / "prog").string() + " > " +
                          (dir / "build.log").string() + " 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream log(dir / "build.log");
    std::stringstream ls;
    ls << log.rdbuf();
    std::string shown;
    for (const auto& [name, text] : files) shown += "\n--- " + name + ":\n" + text;
    ADD_FAILURE() << "the generated header does not compile:\n" << ls.str() << shown;
    return out;
  }
  const std::string run = (dir / "prog").string() + " > " + (dir / "out.txt").string();
  EXPECT_EQ(std::system(run.c_str()), 0);
  std::ifstream in(dir / "out.txt");
  std::string key;
  double v;
  while (in >> key >> v) out[key] = v;
  fs::remove_all(dir);
  return out;
}

}  // namespace nholo_test
