// nholo/host/model_language/expr/eval.cpp — the double-precision evaluator of
// expression trees (expr/eval.hpp).
#include "host/model_language/expr/eval.hpp"

#include <cmath>
#include <string>
#include <unordered_map>

namespace nholo::model_file {

namespace {

double apply(Fn fn, double a, double b) {
  switch (fn) {
    case Fn::sin: return std::sin(a);
    case Fn::cos: return std::cos(a);
    case Fn::tan: return std::tan(a);
    case Fn::exp: return std::exp(a);
    case Fn::log: return std::log(a);
    case Fn::sqrt: return std::sqrt(a);
    case Fn::sinh: return std::sinh(a);
    case Fn::cosh: return std::cosh(a);
    case Fn::tanh: return std::tanh(a);
    case Fn::abs: return std::fabs(a);
    case Fn::sign: return static_cast<double>((a > 0.0) - (a < 0.0));
    case Fn::atan2: return std::atan2(a, b);
    case Fn::pow: return std::pow(a, b);
  }
  return NAN;
}

using Values = std::unordered_map<const Expr*, double>;
double eval_node(const Expr& e, const Env& env, EvalFailure* f, Values& done);

// e's value, each node of a shared graph (a definition) evaluated once
double eval_memo(const Expr& e, const Env& env, EvalFailure* f, Values& done) {
  if (e.args.empty()) return eval_node(e, env, f, done);
  const auto it = done.find(&e);
  if (it != done.end()) return it->second;
  const double v = eval_node(e, env, f, done);
  done.emplace(&e, v);
  return v;
}

double eval_node(const Expr& e, const Env& env, EvalFailure* f, Values& done) {
  double a = 0, b = 0, r = 0;
  if (!e.args.empty()) a = eval_memo(*e.args[0], env, f, done);
  if (e.args.size() > 1) b = eval_memo(*e.args[1], env, f, done);
  const char* sym = nullptr;
  switch (e.op) {
    case Op::number: return e.value;
    case Op::pi: return kPi;
    case Op::time: return env.t;
    case Op::coord: return env.q[e.index];
    case Op::rate: return env.qd[e.index];
    case Op::accel: return env.qdd[e.index];
    case Op::param: return env.p[e.index];
    case Op::neg: return -a;
    case Op::add: r = a + b, sym = " + "; break;
    case Op::sub: r = a - b, sym = " - "; break;
    case Op::mul: r = a * b, sym = " * "; break;
    case Op::div:
      r = a / b, sym = " / ";
      if (f && !f->failed && b == 0.0 && std::isfinite(a)) {
        *f = {true, e.pos, "division by zero (" + short_number(a) + " / 0)"};
      }
      break;
    case Op::pow: r = std::pow(a, b), sym = "^"; break;
    case Op::call: r = apply(e.fn, a, b); break;
  }
  if (f && !f->failed && !std::isfinite(r) && std::isfinite(a) && std::isfinite(b)) {
    std::string what;
    if (e.op == Op::call) {
      what = std::string(function_info(e.fn).name) + "(" + short_number(a) +
             (e.args.size() > 1 ? ", " + short_number(b) : std::string()) + ")";
    } else {
      what = short_number(a) + sym + short_number(b);
    }
    *f = {true, e.pos, what + " = " + short_number(r) + ": not finite"};
  }
  return r;
}

}  // namespace

double eval(const Expr& e, const Env& env, EvalFailure* f) {
  Values done;
  return eval_memo(e, env, f, done);
}

}  // namespace nholo::model_file
