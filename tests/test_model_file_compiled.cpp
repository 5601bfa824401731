// Tests of host/model_language/model_file.cpp: the generated header compiled
// (ModelFileCompiled.*). The system compiler (c++ on PATH, -O0 -Werror)
// builds a small program from the header and kernels/ that prints the
// Lagrangian, constraints, forces, their AD derivatives and the matrices of
// kernels/dynamics.hpp at a state; the test compares them with closed forms
// written out here.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "host/model_language/model_file.hpp"
#include "tests/compiled_program.hpp"
#include "tests/model_file_cases.hpp"

using nholo::ModelFileError;
using nholo::ModelSpec;
using namespace nholo_test;

namespace fs = std::filesystem;

namespace {

// ---------------------------------------------------------------------------
// The generated header compiled

// Builds main.cpp (which includes "user_model.hpp", the header of `spec`)
// with the system compiler and runs it; its output lines "key value" are
// returned as a map. Empty when the compiler is missing (*skip set).
std::map<std::string, double> compile_and_run(const ModelSpec& spec, const std::string& main_cpp,
                                              std::string* skip) {
  return compile_and_run_files(spec.name, {{"user_model.hpp", nholo::generate_model_header(spec)}},
                               main_cpp, skip);
}

void expect_value(const std::map<std::string, double>& got, const std::string& key, double want) {
  const auto it = got.find(key);
  ASSERT_NE(it, got.end()) << key << " not printed";
  EXPECT_NEAR(it->second, want, 1e-12 * (1.0 + std::fabs(want))) << key;
}

// the printing part of every test program
const char* kProgramHead = R"~(#include <cstdio>

#include "kernels/dual.hpp"
#include "kernels/dynamics.hpp"
#include "user_model.hpp"

using namespace nholo;
using M = user_models::UserModel;
using D = Dual<double, 3>;

inline void out(const char* key, double v) { std::printf("%s %.17g\n", key, v); }
inline void out(const char* key, int i, double v) { std::printf("%s%d %.17g\n", key, i, v); }
inline void out(const char* key, int i, int j, double v) {
  std::printf("%s%d%d %.17g\n", key, i, j, v);
}
inline M::Params defaults() {
  double v[M::n_params > 0 ? M::n_params : 1] = {0.0};
  for (int j = 0; j < M::n_params; ++j) v[j] = M::param_info[j].default_value;
  return M::make_params(v);
}
)~";

TEST(ModelFileCompiled, SkateMatchesClosedForms) {
  const ModelSpec s = parse(kSkate, "skate.toml");
  const std::string program = std::string(kProgramHead) + R"~(
#include "kernels/formulations.hpp"
#include "kernels/system.hpp"
#include "models/skate.hpp"
// |dy - dy_builtin| over the state derivative at a state
template <class Sys, class Ref>
void compare(const char* key, const double* v) {
  Sys a{};
  Ref b{};
  a.params = M::make_params(v);
  b.params = models::Skate::make_params(v);
  Vec<double, Sys::N> y, da, db;
  for (int i = 0; i < Sys::N; ++i) y[i] = 0.37 * (i + 1) - 0.5;
  const Status sa = a(0.4, y, da), sb = b(0.4, y, db);
  double diff = 0, size = 0;
  for (int i = 0; i < Sys::N; ++i) {
    diff = diff > nholo::fabs(da[i] - db[i]) ? diff : nholo::fabs(da[i] - db[i]);
    size = size > nholo::fabs(db[i]) ? size : nholo::fabs(db[i]);
  }
  std::printf("%s_status %d\n%s_ref_status %d\n%s_diff %.17g\n%s_size %.17g\n", key, int(sa),
              key, int(sb), key, diff, key, size);
}
static_assert(M::n == 3 && constraint_count<M>() == 1, "sizes");
static_assert(has_energy<M>::value && has_conflated_lagrangian<M>::value, "detected");
static_assert(!has_nonpotential_force<M>::value && !has_nonideal_force<M>::value, "absent");
int main() {
  const M::Params p = defaults();
  Vec<double, 3> q, qd;
  q[0] = 0.3; q[1] = -0.2; q[2] = 0.7;
  qd[0] = 1.1; qd[1] = 0.4; qd[2] = -0.6;
  const double t = 0.5;
  out("L", M::lagrangian(p, q, qd, t));
  out("E", M::energy(p, q, qd, t));
  out("Lc", M::conflated_lagrangian(p, q, qd, t));
  out("g", M::velocity_constraints(p, q, qd, t)[0]);
  // first derivatives by Dual: in qd, then in q
  Vec<D, 3> qa, qda;
  for (int i = 0; i < 3; ++i) { qa[i] = D(q[i]); qda[i] = D::variable(qd[i], i); }
  const D L1 = M::lagrangian(p, qa, qda, D(t));
  const D g1 = M::velocity_constraints(p, qa, qda, D(t))[0];
  for (int i = 0; i < 3; ++i) { out("dLdqd", i, L1.d[i]); out("dgdqd", i, g1.d[i]); }
  for (int i = 0; i < 3; ++i) { qa[i] = D::variable(q[i], i); qda[i] = D(qd[i]); }
  const D L2 = M::lagrangian(p, qa, qda, D(t));
  for (int i = 0; i < 3; ++i) out("dLdq", i, L2.d[i]);
  // the engine's matrices (Jet2 and nested duals inside)
  Mat<double, 3, 3> Mm;
  Vec<double, 3> F;
  lagrangian_terms_ad<M>(p, q, qd, t, Mm, F);
  for (int i = 0; i < 3; ++i) {
    out("F", i, F[i]);
    for (int j = 0; j < 3; ++j) out("M", i, j, Mm(i, j));
  }
  lagrangian_terms_nested<M>(p, q, qd, t, Mm, F);
  out("nestedF", 0, F[0]);
  // on duals (the tangent system's scalar): the symbolic M and F, tangents
  // theta (d[0]) and theta_dot (d[1])
  {
    Vec<D, 3> qt, qdt;
    for (int i = 0; i < 3; ++i) { qt[i] = D(q[i]); qdt[i] = D(qd[i]); }
    qt[2].d[0] = 1.0;
    qdt[2].d[1] = 1.0;
    Mat<D, 3, 3> Mt;
    Vec<D, 3> Ft;
    lagrangian_terms<M>(p, qt, qdt, D(t), Mt, Ft);
    out("dualF0", 0, Ft[0].d[0]);
    out("dualF0", 1, Ft[0].d[1]);
    out("dualF2", 0, Ft[2].d[0]);
    out("dualM02", 0, Mt(0, 2).d[0]);
    out("dualM00", 0, Mt(0, 0).d[0]);
  }
  Mat<double, 1, 3> A;
  Vec<double, 1> b;
  constraint_terms<M>(p, q, qd, t, A, b);
  for (int j = 0; j < 3; ++j) out("A", 0, j, A(0, j));
  out("b", 0, b[0]);
  // float
  Vec<float, 3> qf, qdf;
  for (int i = 0; i < 3; ++i) { qf[i] = float(q[i]); qdf[i] = float(qd[i]); }
  out("Lfloat", double(M::lagrangian(p, qf, qdf, 0.5f)));
  // every formulation's right-hand side against the hand-written models::Skate
  double v[5];
  for (int j = 0; j < 5; ++j) v[j] = M::param_info[j].default_value;
  compare<UdwadiaKalabaSystem<M>, UdwadiaKalabaSystem<models::Skate>>("uk", v);
  compare<LagrangeMultiplierSystem<M>, LagrangeMultiplierSystem<models::Skate>>("lm", v);
  compare<NullSpaceSystem<M>, NullSpaceSystem<models::Skate>>("ns", v);
  compare<VakonomicSystem<M>, VakonomicSystem<models::Skate>>("vak", v);
  compare<ConflatedSystem<M>, ConflatedSystem<models::Skate>>("conf", v);
  return 0;
}
)~";
  std::string skip;
  const auto got = compile_and_run(s, program, &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  if (got.empty()) return;  // reported

  const double m = 1.3, so = 0.4, I = 2 * 1.3 * 0.16 + 0.5, g = 9.81, al = 0.3;
  const double x = 0.3, th = 0.7, xd = 1.1, yd = 0.4, thd = -0.6;
  const double c = std::cos(th), sn = std::sin(th), G = m * g * std::sin(al);
  const double T0 = m / 2 * (xd * xd + yd * yd) + I / 2 * thd * thd;
  const double coupling = m * so * thd * (yd * c - xd * sn);
  const double V = -G * (x + so * c);
  expect_value(got, "L", T0 + coupling - V);
  expect_value(got, "E", T0 + coupling + V);
  expect_value(got, "Lc", T0 - V);
  expect_value(got, "g", yd * c - xd * sn);
  expect_value(got, "dLdqd0", m * xd - m * so * thd * sn);
  expect_value(got, "dLdqd1", m * yd + m * so * thd * c);
  expect_value(got, "dLdqd2", m * so * (yd * c - xd * sn) + I * thd);
  expect_value(got, "dgdqd0", -sn);
  expect_value(got, "dgdqd1", c);
  expect_value(got, "dgdqd2", 0.0);
  expect_value(got, "dLdq0", G);
  expect_value(got, "dLdq1", 0.0);
  expect_value(got, "dLdq2", m * so * thd * (-yd * sn - xd * c) - G * so * sn);
  // M = [[m, 0, -m s sin], [0, m, m s cos], [., ., I]], F = dL/dq - (d2L/dqd dq) qd
  expect_value(got, "M00", m);
  expect_value(got, "M01", 0.0);
  expect_value(got, "M02", -m * so * sn);
  expect_value(got, "M11", m);
  expect_value(got, "M12", m * so * c);
  expect_value(got, "M20", -m * so * sn);
  expect_value(got, "M22", I);
  expect_value(got, "F0", G + m * so * thd * thd * c);
  expect_value(got, "F1", m * so * thd * thd * sn);
  expect_value(got, "F2", -G * so * sn);
  expect_value(got, "nestedF0", G + m * so * thd * thd * c);
  // their derivatives along theta and theta_dot, on duals
  expect_value(got, "dualF00", -m * so * thd * thd * sn);
  expect_value(got, "dualF01", 2 * m * so * thd * c);
  expect_value(got, "dualF20", -G * so * c);
  expect_value(got, "dualM020", -m * so * c);
  expect_value(got, "dualM000", 0.0);
  // knife edge: A = [-sin, cos, 0], b = thd (yd sin + xd cos)
  expect_value(got, "A00", -sn);
  expect_value(got, "A01", c);
  expect_value(got, "A02", 0.0);
  expect_value(got, "b0", thd * (yd * sn + xd * c));
  ASSERT_TRUE(got.count("Lfloat"));
  EXPECT_NEAR(got.at("Lfloat"), T0 + coupling - V, 1e-5);
  // the same motion as the hand-written skate under every formulation
  for (const std::string f : {"uk", "lm", "ns", "vak", "conf"}) {
    expect_value(got, f + "_status", 0.0);
    expect_value(got, f + "_ref_status", 0.0);
    ASSERT_TRUE(got.count(f + "_diff")) << f;
    EXPECT_GT(got.at(f + "_size"), 0.1) << f;
    EXPECT_LE(got.at(f + "_diff"), 1e-12 * got.at(f + "_size")) << f;
  }
}

TEST(ModelFileCompiled, BlockWithPositionConstraintAndForces) {
  const ModelSpec s = parse(kBlock, "block.toml");
  const std::string program = std::string(kProgramHead) + R"~(
static_assert(M::n == 2 && M::m_position == 1 && constraint_count<M>() == 1, "sizes");
static_assert(has_nonpotential_force<M>::value && has_nonideal_force<M>::value, "detected");
static_assert(has_energy<M>::value && !has_conflated_lagrangian<M>::value, "detected");
int main() {
  const M::Params p = defaults();
  Vec<double, 2> q, qd;
  q[0] = 0.8; q[1] = 0.35;
  qd[0] = -0.9; qd[1] = 0.6;
  const double t = 0.3;
  out("L", M::lagrangian(p, q, qd, t));
  out("E", M::energy(p, q, qd, t));
  out("phi", M::position_constraints(p, q, t)[0]);
  const Vec<double, 2> Q = M::nonpotential_force(p, q, qd, t);
  const Vec<double, 2> C = nonideal_terms<M>(p, q, qd, t);
  for (int i = 0; i < 2; ++i) { out("Q", i, Q[i]); out("C", i, C[i]); }
  // derivatives of the forces in (xd, yd, t)
  Vec<D, 2> qa, qda;
  for (int i = 0; i < 2; ++i) { qa[i] = D(q[i]); qda[i] = D::variable(qd[i], i); }
  const D ta = D::variable(t, 2);
  const Vec<D, 2> Qd = M::nonpotential_force(p, qa, qda, ta);
  const Vec<D, 2> Cd = M::nonideal_force(p, qa, qda, ta);
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 3; ++k) { out("dQ", i, k, Qd[i].d[k]); out("dC", i, k, Cd[i].d[k]); }
  // dphi/dq and dphi/dt
  for (int i = 0; i < 2; ++i) qa[i] = D::variable(q[i], i);
  const D phi = M::position_constraints(p, qa, ta)[0];
  for (int k = 0; k < 3; ++k) out("dphi", k, phi.d[k]);
  Mat<double, 2, 2> Mm;
  Vec<double, 2> F;
  lagrangian_terms_ad<M>(p, q, qd, t, Mm, F);
  for (int i = 0; i < 2; ++i) {
    out("F", i, F[i]);
    for (int j = 0; j < 2; ++j) out("M", i, j, Mm(i, j));
  }
  Mat<double, 1, 2> A;
  Vec<double, 1> b, res, vres;
  constraint_terms<M>(p, q, qd, t, A, b, &res, &vres);
  for (int j = 0; j < 2; ++j) out("A", 0, j, A(0, j));
  out("b", 0, b[0]);
  out("res", 0, res[0]);
  out("vres", 0, vres[0]);
  return 0;
}
)~";
  std::string skip;
  const auto got = compile_and_run(s, program, &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  if (got.empty()) return;

  const double m = 2.0, g = 9.81, a = M_PI / 6, c = 0.4, mu = 0.3, amp = 0.05, w = 2 * M_PI;
  const double x = 0.8, y = 0.35, xd = -0.9, yd = 0.6, t = 0.3;
  expect_value(got, "L", m / 2 * (xd * xd + yd * yd) - m * g * y);
  expect_value(got, "E", m / 2 * (xd * xd + yd * yd) + m * g * y);
  const double phi = y - x * std::tan(a) - amp * std::sin(w * t);
  expect_value(got, "phi", phi);
  expect_value(got, "dphi0", -std::tan(a));
  expect_value(got, "dphi1", 1.0);
  expect_value(got, "dphi2", -amp * w * std::cos(w * t));
  // drag: Q = (-c xd |xd|, -c yd^3)
  expect_value(got, "Q0", -c * xd * std::fabs(xd));
  expect_value(got, "Q1", -c * yd * yd * yd);
  expect_value(got, "dQ00", -2 * c * std::fabs(xd));
  expect_value(got, "dQ01", 0.0);
  expect_value(got, "dQ11", -3 * c * yd * yd);
  expect_value(got, "dQ12", 0.0);
  // C = (-mu sgn(xd) cos a, mu atan2(yd, g) sqrt(1 + xd^2) + 0.1 * 2^t)
  const double r = std::sqrt(1 + xd * xd), at = std::atan2(yd, g);
  expect_value(got, "C0", mu * std::cos(a));  // xd < 0
  expect_value(got, "C1", mu * at * r + 0.1 * std::pow(2.0, t));
  expect_value(got, "dC00", 0.0);  // sign: no derivative
  expect_value(got, "dC01", 0.0);
  expect_value(got, "dC10", mu * at * xd / r);
  expect_value(got, "dC11", mu * g / (g * g + yd * yd) * r);
  expect_value(got, "dC12", 0.1 * std::log(2.0) * std::pow(2.0, t));
  // M = m I, F = (0, -m g) + Q
  expect_value(got, "M00", m);
  expect_value(got, "M01", 0.0);
  expect_value(got, "M11", m);
  expect_value(got, "F0", -c * xd * std::fabs(xd));
  expect_value(got, "F1", -m * g - c * yd * yd * yd);
  // phi twice differentiated: A = [-tan a, 1], b = -amp w^2 sin(w t)
  expect_value(got, "A00", -std::tan(a));
  expect_value(got, "A01", 1.0);
  expect_value(got, "b0", -amp * w * w * std::sin(w * t));
  expect_value(got, "res0", phi);
  expect_value(got, "vres0", yd - xd * std::tan(a) - amp * w * std::cos(w * t));
}

TEST(ModelFileCompiled, AccelerationConstraintWithoutParameters) {
  const ModelSpec s = parse(kAccel, "accel.toml");
  const std::string program = std::string(kProgramHead) + R"~(
static_assert(M::n_params == 0 && M::m_acceleration == 1 && M::m_position == 1, "sizes");
int main() {
  const M::Params p = defaults();
  Vec<double, 3> q, qd;
  q[0] = 0.4; q[1] = -1.2; q[2] = 0.9;
  qd[0] = 0.7; qd[1] = 0.1; qd[2] = -0.3;
  const double t = 1.3;
  out("L", M::lagrangian(p, q, qd, t));
  Mat<double, 3, 3> Mm;
  Vec<double, 3> F;
  lagrangian_terms_ad<M>(p, q, qd, t, Mm, F);
  for (int i = 0; i < 3; ++i) out("F", i, F[i]);
  Mat<double, 2, 3> A;
  Vec<double, 2> b;
  constraint_terms<M>(p, q, qd, t, A, b);
  for (int l = 0; l < 2; ++l) {
    for (int j = 0; j < 3; ++j) out("A", l, j, A(l, j));
    out("b", l, b[l]);
  }
  return 0;
}
)~";
  std::string skip;
  const auto got = compile_and_run(s, program, &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  if (got.empty()) return;
  const double x = 0.4, y = -1.2, z = 0.9, xd = 0.7, yd = 0.1, zd = -0.3, t = 1.3;
  expect_value(got, "L", (xd * xd + yd * yd + zd * zd) / 2 - x * y + z * z * z * z / 4);
  expect_value(got, "F0", -y);
  expect_value(got, "F1", -x);
  expect_value(got, "F2", z * z * z);
  // rows: position z - 1 (A = [0 0 1], b = 0), then x_ddot + 2 y_ddot - sin(t) xd
  expect_value(got, "A00", 0.0);
  expect_value(got, "A02", 1.0);
  expect_value(got, "b0", 0.0);
  expect_value(got, "A10", 1.0);
  expect_value(got, "A11", 2.0);
  expect_value(got, "A12", 0.0);
  expect_value(got, "b1", std::sin(t) * xd);
}

// Operator grouping, unary minus, powers and mixed double / S arguments: the
// compiled header against the tree evaluator, values and (by Dual) a
// directional derivative against central differences of the evaluator.
TEST(ModelFileCompiled, PrintedExpressionsMatchTheEvaluator) {
  const std::vector<std::string> exprs = {
      "-a^2 - -b + k",
      "a - (b - t) - (c + d)",
      "a/(b*t)/c*d",
      "-(a*b) + -(-c) - -d_dot",
      "2^-a_dot + a_dot^b_dot^0.5",
      "pow(a, b) * pow(k, c) + pow(a, 2.5) - k^3 + pow(k, 2)",
      "atan2(k, a) + atan2(a, k) + atan2(a_dot, b_dot) + atan2(k, 2)",
      "sign(a - b)*abs(c - d) + sqrt(a)*exp(-b)/log(1 + c) + sinh(d)/cosh(t) - tanh(a)*tan(b)",
  };
  std::string forces;
  const std::string names = "abcdefgh";
  for (size_t i = 0; i < exprs.size(); ++i)
    forces += std::string(i ? ", " : "") + names[i] + " = \"" + exprs[i] + "\"";
  std::string coords;
  for (size_t i = 0; i < names.size(); ++i)
    coords += std::string(i ? ", " : "") + "{ name = \"" + names[i] + "\", unit = \"1\" }";
  const ModelSpec s = parse("name = \"grouping\"\ndescription = \"d\"\ncoordinates = [" + coords +
                            "]\nparameters = [ { name = \"k\", default = 1.7, unit = \"1\" } ]\n"
                            "lagrangian = \"a_dot^2/2\"\nforces = { " +
                            forces + " }\n");
  const std::vector<double> q = {0.7, 1.3, 0.4, 0.9, 0.2, 0.3, 0.5, 0.6},
                            qd = {0.35, 1.2, -0.4, 0.8, 0.1, 0.1, 0.1, 0.1},
                            dir = {0.3, -0.2, 0.5,  0.1, 0, 0, 0, 0,  0.4,
                                   0.7, 0,    -0.6, 0,   0, 0, 0, 0.9};  // (q, qd, t)
  const double t = 1.1;
  std::string init;
  for (int i = 0; i < 8; ++i)
    init += "  q[" + std::to_string(i) + "] = seed(" + std::to_string(q[i]) + ", " +
            std::to_string(dir[i]) + "); qd[" + std::to_string(i) + "] = seed(" +
            std::to_string(qd[i]) + ", " + std::to_string(dir[8 + i]) + ");\n";
  const std::string program = std::string(kProgramHead) + R"~(
using D1 = Dual<double, 1>;
int main() {
  const M::Params p = defaults();
  auto seed = [](double v, double d) { D1 x(v); x.d[0] = d; return x; };
  Vec<D1, 8> q, qd;
)~" + init + R"~(
  const D1 t = seed(1.1, 0.9);
  const Vec<D1, 8> f = M::nonpotential_force(p, q, qd, t);
  Vec<double, 8> qv, qdv;
  for (int i = 0; i < 8; ++i) { qv[i] = q[i].v; qdv[i] = qd[i].v; }
  const Vec<double, 8> fv = M::nonpotential_force(p, qv, qdv, 1.1);
  for (int i = 0; i < 8; ++i) { out("f", i, fv[i]); out("df", i, f[i].d[0]); }
  return 0;
}
)~";
  std::string skip;
  const auto got = compile_and_run(s, program, &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  if (got.empty()) return;
  // std::to_string printed 6 decimals: the state the program used
  auto six = [](double v) { return std::stod(std::to_string(v)); };
  std::vector<double> q6(8), qd6(8);
  for (int i = 0; i < 8; ++i) {
    q6[i] = six(q[i]);
    qd6[i] = six(qd[i]);
  }
  using nholo::model_file::evaluate;
  for (int i = 0; i < 8; ++i) {
    const double want = evaluate(s, s.nonpotential_force[i], q6, qd6, {}, t);
    expect_value(got, "f" + std::to_string(i), want);
    const double h = 1e-6;
    std::vector<double> qp = q6, qm = q6, qdp = qd6, qdm = qd6;
    for (int j = 0; j < 8; ++j) {
      qp[j] += h * six(dir[j]);
      qm[j] -= h * six(dir[j]);
      qdp[j] += h * six(dir[8 + j]);
      qdm[j] -= h * six(dir[8 + j]);
    }
    const double fd = (evaluate(s, s.nonpotential_force[i], qp, qdp, {}, t + h * 0.9) -
                       evaluate(s, s.nonpotential_force[i], qm, qdm, {}, t - h * 0.9)) /
                      (2 * h);
    ASSERT_TRUE(got.count("df" + std::to_string(i)));
    EXPECT_NEAR(got.at("df" + std::to_string(i)), fd, 1e-6 * (1 + std::fabs(fd))) << exprs[i];
  }
}

// the generated hand_dynamics (symbolic M and F) against the engine's AD of
// the same Lagrangian, the general jet and the structured one, at several
// states; and for float
TEST(ModelFileCompiled, SymbolicDynamicsEqualAutomaticDifferentiation) {
  for (const char* text : {kEveryFunction, kSkate, kBlock}) {
    const ModelSpec s = parse(text, "model.toml");
    const std::string program = std::string(kProgramHead) + R"~(
static_assert(has_hand_dynamics<M>::value, "the generated header has hand_dynamics");
constexpr int n = M::n;
// Mod::hand_dynamics against the engine's AD of Mod's Lagrangian
template <class Mod>
void compare(const char* key) {
  const M::Params p = defaults();
  double worst = 0, size = 0;
  for (int k = 0; k < 6; ++k) {
    Vec<double, n> q, qd;
    for (int i = 0; i < n; ++i) {
      q[i] = 0.31 * (k + 1) * (i + 1) - 0.9 + 0.1 * i;
      qd[i] = 0.7 - 0.23 * k * (i + 2) + 0.05 * i;
    }
    const double t = 0.2 + 0.3 * k;
    Mat<double, n, n> Mh, Ma, Mg;
    Vec<double, n> Fh, Fa, Fg;
    Mod::hand_dynamics(p, q, qd, t, Mh, Fh);
    lagrangian_terms_ad<Mod, double, true, false>(p, q, qd, t, Ma, Fa);
    lagrangian_terms_ad<Mod, double, false, false>(p, q, qd, t, Mg, Fg);
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        worst = std::fmax(worst, std::fmax(std::fabs(Mh(i, j) - Ma(i, j)), std::fabs(Mh(i, j) - Mg(i, j))));
        size = std::fmax(size, std::fabs(Ma(i, j)));
      }
      worst = std::fmax(worst, std::fmax(std::fabs(Fh[i] - Fa[i]), std::fabs(Fh[i] - Fg[i])));
      size = std::fmax(size, std::fabs(Fa[i]));
    }
  }
  std::printf("%s_worst %.17g\n%s_size %.17g\n", key, worst, key, size);
}
// (a template: the discarded branch is not instantiated)
template <class Mod>
void compare_conflated() {
  if constexpr (has_conflated_lagrangian<Mod>::value) {
    static_assert(has_hand_dynamics<Conflated<Mod>>::value, "conflated_hand_dynamics is used");
    compare<Conflated<Mod>>("conflated");
  }
}
int main() {
  compare<M>("L");
  compare_conflated<M>();
  const M::Params p = defaults();
  Vec<float, n> qf, qdf;
  for (int i = 0; i < n; ++i) { qf[i] = 0.3f * float(i + 1); qdf[i] = 0.5f - 0.2f * float(i); }
  Mat<float, n, n> Mf;
  Vec<float, n> Ff;
  M::hand_dynamics(p, qf, qdf, 0.5f, Mf, Ff);
  Mat<double, n, n> Md;
  Vec<double, n> Fd, qd64, q64;
  for (int i = 0; i < n; ++i) { q64[i] = double(qf[i]); qd64[i] = double(qdf[i]); }
  M::hand_dynamics(p, q64, qd64, 0.5, Md, Fd);
  double fw = 0;
  for (int i = 0; i < n; ++i) fw = std::fmax(fw, std::fabs(double(Ff[i]) - Fd[i]) / (1 + std::fabs(Fd[i])));
  out("float_diff", fw);
  return 0;
}
)~";
    std::string skip;
    const auto got = compile_and_run(s, "#include <cmath>\n" + program, &skip);
    if (!skip.empty()) GTEST_SKIP() << skip;
    if (got.empty()) return;
    std::vector<std::string> keys = {"L"};
    if (!s.conflated_lagrangian.text.empty()) keys.push_back("conflated");
    for (const auto& k : keys) {
      ASSERT_TRUE(got.count(k + "_worst") && got.count(k + "_size")) << s.name << " " << k;
      EXPECT_GT(got.at(k + "_size"), 0.5) << s.name << " " << k;
      EXPECT_LE(got.at(k + "_worst"), 1e-13 * got.at(k + "_size")) << s.name << " " << k;
      std::printf("%-16s %-9s symbolic M, F vs AD: max difference %.2e (largest entry %.2e)\n",
                  s.name.c_str(), k.c_str(), got.at(k + "_worst"), got.at(k + "_size"));
    }
    ASSERT_TRUE(got.count("float_diff")) << s.name;
    EXPECT_LE(got.at("float_diff"), 1e-5) << s.name;
  }
}

TEST(ModelFileCompiled, UnconstrainedWithoutParameters) {
  const ModelSpec s = parse(kFree, "free.toml");
  const std::string program = std::string(kProgramHead) + R"~(
static_assert(M::n == 1 && constraint_count<M>() == 0 && M::n_params == 0, "sizes");
int main() {
  const M::Params p = defaults();
  Vec<double, 1> q, qd;
  q[0] = 0.5;
  qd[0] = -2.0;
  Mat<double, 1, 1> Mm;
  Vec<double, 1> F;
  lagrangian_terms_ad<M>(p, q, qd, 0.0, Mm, F);
  out("L", M::lagrangian(p, q, qd, 0.0));
  out("M", 0, 0, Mm(0, 0));
  out("F", 0, F[0]);
  return 0;
}
)~";
  std::string skip;
  const auto got = compile_and_run(s, program, &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  if (got.empty()) return;
  expect_value(got, "L", 2.0 - 0.125);
  expect_value(got, "M00", 1.0);
  expect_value(got, "F0", -0.5);
}

}  // namespace
