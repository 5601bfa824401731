// Tests of a large generated function written in parts
// (host/model_language/function_body.hpp) and of how a plugin and its lane
// add-on compile the parts (host/model_files/plugin_cache.hpp
// part_instantiations): the parts compute the single function's bits; each
// part is compiled in exactly one unit; a model file whose M and F are in
// parts runs in the plugin and in the lanes, conserving its energy.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "host/backends/simd_choice.hpp"
#include "host/io/h5.hpp"
#include "host/model_files/plugin_cache.hpp"
#include "host/model_language/model_file.hpp"
#include "tests/compiled_program.hpp"
#include "tests/nholo_cli.hpp"

namespace fs = std::filesystem;
using nholo_test::run_nholo;
using nholo_test::write_file;

namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string with_struct_named(std::string h, const std::string& name) {
  for (size_t at = h.find("UserModel"); at != std::string::npos; at = h.find("UserModel", at))
    h.replace(at, 9, name);
  return h;
}

// The program: both models' hand_dynamics at 20 states (q, qd in [-1, 1),
// t = 0.3 k, the parameters' defaults), every entry of M and F compared bit
// for bit
const char* kCompareMain = R"~(#include <cstdio>
#include <cstring>
#include <random>
#include "single.hpp"
#include "parts.hpp"
template <class Model>
typename Model::Params default_params() {
  double v[Model::n_params > 0 ? Model::n_params : 1] = {0.0};
  for (int j = 0; j < Model::n_params; ++j) v[j] = Model::param_info[j].default_value;
  return Model::make_params(v);
}
int main() {
  using A = nholo::user_models::Single;
  using B = nholo::user_models::InParts;
  constexpr int n = A::n;
  const auto pa = default_params<A>();
  const auto pb = default_params<B>();
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  long compared = 0, differing = 0;
  for (int k = 0; k < 20; ++k) {
    nholo::Vec<double, n> q, qd;
    for (int i = 0; i < n; ++i) {
      q[i] = u(rng);
      qd[i] = u(rng);
    }
    const double t = 0.3 * k;
    nholo::Mat<double, n, n> Ma, Mb;
    nholo::Vec<double, n> Fa, Fb;
    A::hand_dynamics(pa, q, qd, t, Ma, Fa);
    B::hand_dynamics(pb, q, qd, t, Mb, Fb);
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        ++compared;
        differing += std::memcmp(&Ma(i, j), &Mb(i, j), sizeof(double)) != 0;
      }
      ++compared;
      differing += std::memcmp(&Fa[i], &Fb[i], sizeof(double)) != 0;
    }
  }
  std::printf("compared %ld\ndiffering %ld\nparts %d\n", compared, differing, B::hand_dynamics_parts);
  return 0;
}
)~";

// Models with position and velocity constraints, forces, definitions and a derived
// energy: their symbolic M and F written as one function (their size) and in
// parts of 300 characters compute the same bits
TEST(GeneratedParts, MAndFInPartsGiveTheSingleFunctionsBits) {
  const std::string src = NHOLO_SOURCE_DIR;
  for (const std::string& file :
       {src + "/tests/model_files/rolling_coin.toml", src + "/tests/model_files/sleigh.toml",
        src + "/tests/model_files/skate.toml", src + "/examples/models/rattleback.model.toml",
        src + "/examples/models/rolling_disk.model.toml"}) {
    SCOPED_TRACE(file);
    const nholo::ModelSpec spec = nholo::load_model_file(file, {});
    const std::string single = nholo::generate_model_header(spec);
    const std::string parts = nholo::generate_model_header(spec, 100);
    EXPECT_EQ(single.find("hand_dynamics_parts"), std::string::npos) << "small: one function";
    ASSERT_NE(parts.find("static constexpr int hand_dynamics_parts = "), std::string::npos);
    std::string skip;
    const auto out =
        nholo_test::compile_and_run_files("parts_" + spec.name,
                                          {{"single.hpp", with_struct_named(single, "Single")},
                                           {"parts.hpp", with_struct_named(parts, "InParts")}},
                                          kCompareMain, &skip);
    if (!skip.empty()) {
      std::printf("SKIPPED: %s\n", skip.c_str());
      return;
    }
    ASSERT_EQ(out.count("compared"), 1u);
    const double n = static_cast<double>(spec.coordinates.size());
    EXPECT_EQ(out.at("compared"), 20 * (n * n + n));
    EXPECT_EQ(out.at("differing"), 0);
    EXPECT_GE(out.at("parts"), 3);
  }
}

// Every part of every scalar type is instantiated ("template") in exactly
// one unit, part k in unit k % units, and declared "extern template" in the
// others; a header without parts gives nothing
TEST(GeneratedParts, EachPartIsCompiledInExactlyOneUnit) {
  const std::string header =
      "struct UserModel {\n  static constexpr int n = 2;\n"
      "  static constexpr int hand_dynamics_parts = 5;\n"
      "  static constexpr int conflated_hand_dynamics_parts = 2;\n};\n";
  const std::vector<std::string> scalars = {"double", "::nholo::Lanes<8>"};
  const int units = 3;
  std::vector<std::string> text;
  for (int u = 0; u < units; ++u)
    text.push_back(nholo::plugin_cache::part_instantiations(header, "M", scalars, u, units));
  for (const auto& [fname, parts] : std::vector<std::pair<std::string, int>>{
           {"hand_dynamics", 5}, {"conflated_hand_dynamics", 2}}) {
    for (int k = 0; k < parts; ++k) {
      for (const std::string& s : scalars) {
        const std::string fn = " M::" + fname + "_part" + std::to_string(k) + "<" + s + ">(";
        for (int u = 0; u < units; ++u) {
          SCOPED_TRACE(fn + " unit " + std::to_string(u));
          const size_t defined = count(text[u], "\ntemplate void" + fn);
          const size_t declared = count(text[u], "\nextern template void" + fn);
          EXPECT_EQ(defined, k % units == u ? 1u : 0u);
          EXPECT_EQ(declared, k % units == u ? 0u : 1u);
        }
      }
    }
  }
  // the argument list of the generated parts
  EXPECT_NE(text[0].find("template void M::hand_dynamics_part0<double>(const M::Params&, "
                         "const nholo::Vec<double, M::n>&, const nholo::Vec<double, M::n>&, "
                         "const double&, nholo::Mat<double, M::n, M::n>&, "
                         "nholo::Vec<double, M::n>&, double*, double*);"),
            std::string::npos)
      << text[0];
  EXPECT_EQ(nholo::plugin_cache::part_instantiations("struct UserModel {};", "M", scalars, 0, 3),
            "");
}

double worst_relative(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0, scale = 1e-300;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    worst = std::max(worst, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(a[i]));
  }
  return worst / scale;
}

std::vector<double> dataset(const fs::path& file, const char* name) {
  return nholo::h5::File::open_ro(file.string()).root().open_dataset(name).read<double>();
}

const char* kBicycleRun = R"~(model = "MODEL"
formulations = ["udwadia_kalaba"]
[time]
t_end = 1.0
save_every = 0.25
[integrator]
method = "dop853"
rtol = 1e-10
atol = 1e-12
[ensemble]
size = 16
sampler = "random"
seed = 3
[ensemble.q0]
roll = { uniform = [-0.05, 0.05] }
steer = { uniform = [-0.1, 0.1] }
[ensemble.qd0]
wheel_r = { uniform = [5.0, 8.0] }
[output]
path = "a.h5"
fields = ["q", "qdot", "constraint_residual", "energy"]
)~";

// The 4-body bicycle-like model (bench/large_model.py): its M and F are in
// parts; the plugin's three units compile each part once, the lane add-on's
// two units likewise; a run conserves the derived energy (the Jacobi
// integral) and keeps the constraints, in the lanes (W lanes, and one lane
// with parameters per trajectory) as one trajectory at a time
TEST(GeneratedParts, AModelFileInPartsRunsInThePluginAndTheLanes) {
  const fs::path dir = nholo_test::temp_dir("nholo_parts", "bicycle");
  std::string text = kBicycleRun;
  text.replace(text.find("MODEL"), 5,
               std::string(NHOLO_SOURCE_DIR) + "/tests/model_files/bicycle_4_bodies.toml");
  write_file(dir / "c.toml", text);
  // the parts' and the lanes' logic, not the optimizer's: plugins at -O1
  // (the same bits as -O3: no FMA contraction, no fast math; 3x quicker to
  // build); the shared cache and the bundle check build them at -O3
  const std::string env =
      "NHOLO_CACHE_DIR='" + (dir / "cache").string() + "' NHOLO_PLUGIN_CXXFLAGS=-O1";
  auto r = run_nholo("run c.toml --set backend.simd=off --set output.path=off.h5", dir, env);
  ASSERT_EQ(r.code, 0) << r.output;
  // the plugin's units: part 0 compiled in unit 0 only, part 1 in unit 1 only
  std::map<std::string, std::string> unit;
  for (const auto& e : fs::directory_iterator(dir / "cache")) {
    const std::string name = e.path().filename().string();
    if (name.rfind("large_4-", 0) == 0 && name.find("-lanes-") == std::string::npos &&
        e.path().extension() == ".cpp")
      unit[name.find(".unit") == std::string::npos ? "0" : name.substr(name.find(".unit") + 5, 1)] =
          nholo::plugin_cache::read_file(e.path().string());
  }
  ASSERT_EQ(unit.size(), 3u);
  const std::string part0 =
      "template void nholo::user_models::UserModel::hand_dynamics_part0<double>";
  EXPECT_EQ(count(unit["0"], "\n" + part0), 1u);
  EXPECT_EQ(count(unit["1"], "\nextern " + part0), 1u);
  EXPECT_EQ(count(unit["2"], "\nextern " + part0), 1u);

  // the derived energy conserved, the constraints kept (16 bicycles, t = 1)
  const auto e = dataset(dir / "off.h5", "udwadia_kalaba/energy");
  const size_t saves = 5;
  ASSERT_EQ(e.size(), 16 * saves);
  for (size_t j = 0; j < 16; ++j)
    for (size_t k = 1; k < saves; ++k)
      EXPECT_NEAR(e[j * saves + k], e[j * saves], 1e-9 * std::abs(e[j * saves])) << j << " " << k;
  for (const double c : dataset(dir / "off.h5", "udwadia_kalaba/constraint_residual"))
    EXPECT_LT(std::abs(c), 1e-9);

  if (nholo::cpu_simd_isa() == nholo::SimdIsa::off) {
    std::printf("SKIPPED (lanes): this CPU has no AVX2 + FMA: the lane add-on is not built\n");
    fs::remove_all(dir);
    return;
  }
  r = run_nholo("run c.toml --set output.path=lanes.h5", dir, env);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("compiling its SIMD lane add-on"), std::string::npos) << r.output;
  // the add-on's second unit: the one-lane kernels and its half of the parts
  int second_units = 0;
  for (const auto& f : fs::directory_iterator(dir / "cache")) {
    const std::string name = f.path().filename().string();
    if (name.find("-lanes-") != std::string::npos && name.find(".unit1.cpp") != std::string::npos) {
      ++second_units;
      const std::string u1 = nholo::plugin_cache::read_file(f.path().string());
      EXPECT_NE(u1.find("NHOLO_DEFINE_LANE_PLUGIN_ONE_LANE("), std::string::npos);
      EXPECT_NE(u1.find("\ntemplate void nholo::user_models::UserModel::hand_dynamics_part1<"),
                std::string::npos);
    }
  }
  EXPECT_EQ(second_units, 1);
  for (const char* f : {"udwadia_kalaba/q", "udwadia_kalaba/qdot", "udwadia_kalaba/energy"})
    EXPECT_LT(worst_relative(dataset(dir / "lanes.h5", f), dataset(dir / "off.h5", f)), 1e-10) << f;
  // one lane per thread: a parameter per trajectory, against `off`
  const std::string sweep = " --set 'ensemble.params.fa={uniform=[0.04,0.06]}'";
  ASSERT_EQ(run_nholo("run c.toml --set output.path=one.h5" + sweep, dir, env).code, 0);
  ASSERT_EQ(
      run_nholo("run c.toml --set backend.simd=off --set output.path=one_off.h5" + sweep, dir, env)
          .code,
      0);
  EXPECT_LT(worst_relative(dataset(dir / "one.h5", "udwadia_kalaba/q"),
                           dataset(dir / "one_off.h5", "udwadia_kalaba/q")),
            1e-10);
  fs::remove_all(dir);
}

}  // namespace
