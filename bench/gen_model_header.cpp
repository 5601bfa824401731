// gen_model_header — writes the C++ header nholo generates from a model file
// (host/model_language/model_file.hpp generate_model_header: the model with its symbolic M
// and F). The benchmarks compile the built-in models' twin model files
// (tests/model_files/) into rhs_driver with it (impl nholo_sym).
//
//   gen_model_header MODEL.toml OUT.hpp
#include <cstdio>
#include <fstream>
#include <string>

#include "host/model_language/model_file.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: gen_model_header MODEL.toml OUT.hpp\n");
    return 2;
  }
  try {
    const nholo::ModelSpec spec = nholo::load_model_file(argv[1], {});
    const std::string tmp = std::string(argv[2]) + ".tmp";
    {
      std::ofstream out(tmp);
      out << nholo::generate_model_header(spec);
      if (!out) {
        std::fprintf(stderr, "gen_model_header: cannot write %s\n", tmp.c_str());
        return 1;
      }
    }
    if (std::rename(tmp.c_str(), argv[2]) != 0) {
      std::fprintf(stderr, "gen_model_header: cannot write %s\n", argv[2]);
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gen_model_header: %s\n", e.what());
    return 1;
  }
  return 0;
}
