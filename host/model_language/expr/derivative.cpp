// nholo/host/model_language/expr/derivative.cpp — symbolic derivatives: M and F
// of the fundamental equation from the Lagrangian's tree (expr/derivative.hpp).
//
// Differentiation works on the parsed trees with the usual rules (chain rule
// for every function of the grammar, the quotient rule reusing the quotient,
// a^b with a state-free exponent as b a^(b-1), otherwise as exp(b log a) like
// kernels/expr_math.hpp; abs' = sign, sign' = 0, atan2' = (x dy - y dx) /
// (x^2 + y^2)). The nodes it creates fold what is structurally exact: a
// derivative that is identically 0 or 1, x + 0, x * 1, x * 0 (a term whose
// derivative vanishes identically, not a product that happens to be 0),
// arithmetic of two numbers, and signs moved out of products and quotients
// (-a * b = -(a * b) holds in floating point). Numbers stay non-negative, a
// negative one is a negation. This is the simplification that forward AD
// cannot make: a jet carries every structural zero of the Lagrangian's
// second derivatives through every operation (docs/BENCHMARKS.md 9.3).
#include "host/model_language/expr/derivative.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "host/model_language/expr/analysis.hpp"
#include "host/model_language/expr/eval.hpp"
#include "host/model_language/expr/graph.hpp"

namespace nholo::model_file {

namespace {

// Larger: the header keeps AD. M and F come out about 4 times the
// Lagrangian's graph (3.6 for 8 coordinates to 4.3 for 26, expanded chains
// of pendulums on a cart), so a Lagrangian within the model budget
// (kMaxGraphNodes, 100,000) normally has them; 125,632 nodes took 3-4 s of
// CPU and 440 MB to derive, on a loaded machine (docs/models.md, "Symbolic
// derivatives"). Above, the derivation stops at the row that crosses it.
constexpr size_t kMaxSymbolicNodes = 400000;
// Deeper Lagrangians too: the differentiation is iterative, but the printer
// and the compilers recurse along the trees (the parser's chain limit)
constexpr int kMaxSymbolicDepth = 10000;

bool is_number(const Expr& e, double v) {
  return e.op == Op::number && e.value == v;
}

ExprPtr sym_node(Op op, std::vector<ExprPtr> args, double value = 0.0, int index = 0,
                 Fn fn = Fn::sin) {
  auto e = std::make_shared<Expr>();
  e->op = op;
  e->value = value;
  e->index = index;
  e->fn = fn;
  e->ops = ops_of(op, args);
  for (const auto& a : args) e->depth = std::max(e->depth, a->depth + 1);
  e->args = std::move(args);
  return e;
}

ExprPtr s_num(double v);
ExprPtr s_neg(const ExprPtr& a) {
  if (a->op == Op::neg) return a->args[0];
  if (is_number(*a, 0.0)) return a;
  return sym_node(Op::neg, {a});
}
ExprPtr s_num(double v) {
  return v < 0 ? s_neg(sym_node(Op::number, {}, -v)) : sym_node(Op::number, {}, v);
}
ExprPtr s_sub(const ExprPtr& a, const ExprPtr& b);
ExprPtr s_add(const ExprPtr& a, const ExprPtr& b) {
  if (is_number(*a, 0.0)) return b;
  if (is_number(*b, 0.0)) return a;
  if (a->op == Op::number && b->op == Op::number) return s_num(a->value + b->value);
  if (b->op == Op::neg) return s_sub(a, b->args[0]);
  if (a->op == Op::neg) return s_sub(b, a->args[0]);
  return sym_node(Op::add, {a, b});
}
ExprPtr s_sub(const ExprPtr& a, const ExprPtr& b) {
  if (is_number(*b, 0.0)) return a;
  if (is_number(*a, 0.0)) return s_neg(b);
  if (a->op == Op::number && b->op == Op::number) return s_num(a->value - b->value);
  if (b->op == Op::neg) return s_add(a, b->args[0]);
  return sym_node(Op::sub, {a, b});
}
ExprPtr s_mul(const ExprPtr& a, const ExprPtr& b) {
  if (is_number(*a, 0.0) || is_number(*b, 0.0)) return s_num(0.0);
  if (is_number(*a, 1.0)) return b;
  if (is_number(*b, 1.0)) return a;
  if (a->op == Op::number && b->op == Op::number) return s_num(a->value * b->value);
  if (a->op == Op::neg) return s_neg(s_mul(a->args[0], b));
  if (b->op == Op::neg) return s_neg(s_mul(a, b->args[0]));
  return sym_node(Op::mul, {a, b});
}
ExprPtr s_div(const ExprPtr& a, const ExprPtr& b) {
  if (is_number(*a, 0.0)) return a;
  if (is_number(*b, 1.0)) return a;
  if (a->op == Op::neg) return s_neg(s_div(a->args[0], b));
  if (b->op == Op::neg) return s_neg(s_div(a, b->args[0]));
  return sym_node(Op::div, {a, b});
}
ExprPtr s_call(Fn fn, std::vector<ExprPtr> args) {
  return sym_node(Op::call, std::move(args), 0.0, 0, fn);
}
// a^k as the printer prints it: ipow for the literal exponents 2, 3, 4
ExprPtr s_pow(const ExprPtr& a, const ExprPtr& k) {
  if (is_number(*k, 1.0)) return a;
  if (is_number(*k, 0.0)) return s_num(1.0);
  return sym_node(Op::pow, {a, k});
}

bool depends_on_state(const Expr& e) {
  return uses(e, Op::coord) || uses(e, Op::rate) || uses(e, Op::accel) || uses(e, Op::time);
}

// d e / d var_index, var one of Op::coord, Op::rate, Op::time; memo: the
// derivatives already taken of this DAG's nodes (shared subtrees once)
class Differentiator {
 public:
  Differentiator(Op var, int index) : var_(var), index_(index) {}

  // the nodes below e first, in post-order with an explicit stack (a sum of
  // thousands of terms is a chain as deep), so that take() finds its
  // children's derivatives in memo_ and never recurses
  ExprPtr operator()(const ExprPtr& e) {
    if (const auto it = memo_.find(e.get()); it != memo_.end()) return it->second;
    std::vector<std::pair<const ExprPtr*, size_t>> stack = {{&e, 0}};  // node, next child
    while (!stack.empty()) {
      const ExprPtr& node = *stack.back().first;
      const size_t next = stack.back().second;
      if (next < node->args.size()) {
        ++stack.back().second;
        const ExprPtr& a = node->args[next];
        if (!memo_.count(a.get())) stack.push_back({&a, 0});
        continue;
      }
      if (!memo_.count(node.get())) memo_.emplace(node.get(), take(node));
      stack.pop_back();
    }
    return memo_.at(e.get());
  }

 private:
  ExprPtr take(const ExprPtr& ep) {
    const Expr& e = *ep;
    switch (e.op) {
      case Op::number:
      case Op::pi:
      case Op::param: return s_num(0.0);
      case Op::time:
      case Op::coord:
      case Op::rate:
      case Op::accel:
        return s_num(e.op == var_ && (var_ == Op::time || e.index == index_) ? 1.0 : 0.0);
      case Op::neg: return s_neg((*this)(e.args[0]));
      case Op::add: return s_add((*this)(e.args[0]), (*this)(e.args[1]));
      case Op::sub: return s_sub((*this)(e.args[0]), (*this)(e.args[1]));
      case Op::mul: {
        const ExprPtr &a = e.args[0], &b = e.args[1];
        return s_add(s_mul((*this)(a), b), s_mul(a, (*this)(b)));
      }
      case Op::div: {
        // (a / b)' = (a' - (a / b) b') / b
        const ExprPtr &a = e.args[0], &b = e.args[1];
        return s_div(s_sub((*this)(a), s_mul(ep, (*this)(b))), b);
      }
      case Op::pow: return power(ep, e.args[0], e.args[1]);
      case Op::call: break;
    }
    const ExprPtr& a = e.args[0];
    const ExprPtr da = (*this)(a);
    switch (e.fn) {
      case Fn::sin: return s_mul(s_call(Fn::cos, {a}), da);
      case Fn::cos: return s_neg(s_mul(s_call(Fn::sin, {a}), da));
      case Fn::tan: return s_mul(s_add(s_num(1.0), s_pow(ep, s_num(2.0))), da);
      case Fn::exp: return s_mul(ep, da);
      case Fn::log: return s_div(da, a);
      case Fn::sqrt: return s_div(da, s_mul(s_num(2.0), ep));
      case Fn::sinh: return s_mul(s_call(Fn::cosh, {a}), da);
      case Fn::cosh: return s_mul(s_call(Fn::sinh, {a}), da);
      case Fn::tanh: return s_mul(s_sub(s_num(1.0), s_pow(ep, s_num(2.0))), da);
      case Fn::abs: return s_mul(s_call(Fn::sign, {a}), da);
      case Fn::sign: return s_num(0.0);
      case Fn::atan2: {
        // atan2(y, x)' = (x y' - y x') / (x^2 + y^2)
        const ExprPtr &y = e.args[0], &x = e.args[1];
        const ExprPtr dx = (*this)(x);
        return s_div(s_sub(s_mul(x, da), s_mul(y, dx)),
                     s_add(s_pow(x, s_num(2.0)), s_pow(y, s_num(2.0))));
      }
      case Fn::pow: return power(ep, e.args[0], e.args[1]);
    }
    return s_num(0.0);
  }

  // e = a^b (operator ^ or pow)
  ExprPtr power(const ExprPtr& e, const ExprPtr& a, const ExprPtr& b_in) {
    const ExprPtr da = (*this)(a);
    if (!depends_on_state(*b_in)) {
      // b a^(b-1) a' (the exponent constant: nholo::pow(S, double)); an
      // exponent of numbers only (3 - 2) is one number, so that a^1 and a^0
      // drop out as a and 1 (else the next derivative, 0 a^-1, is 0 inf =
      // NaN where a = 0). A parameter exponent never gets here
      // (symbolic_exponents_refused).
      if (is_number(*da, 0.0)) return s_num(0.0);
      const ExprPtr b = uses(*b_in, Op::param) ? b_in : s_num(eval(*b_in, Env{}, nullptr));
      const ExprPtr bm1 = b->op == Op::number ? s_num(b->value - 1.0) : s_sub(b, s_num(1.0));
      return s_mul(s_mul(b, s_pow(a, bm1)), da);
    }
    // exp(b log a)' = a^b (b' log a + b a' / a)
    const ExprPtr db = (*this)(b_in);
    return s_mul(e, s_add(s_mul(db, s_call(Fn::log, {a})), s_div(s_mul(b_in, da), a)));
  }

  Op var_;
  int index_;
  std::unordered_map<const Expr*, ExprPtr> memo_;
};

// M_ij = d2L / dqd_i dqd_j, F_i = dL/dq_i - sum_k (d2L / dqd_i dq_k) qd_k -
// d2L / dqd_i dt (the Lagrangian's part; Q_np is added by the engine)
DynamicsTrees build_dynamics_trees(int n, const ExprPtr& L) {
  DynamicsTrees r;
  r.mass.assign(static_cast<size_t>(n * n), nullptr);
  r.force.assign(static_cast<size_t>(n), nullptr);
  std::vector<Differentiator> by_rate, by_coord;
  for (int i = 0; i < n; ++i) {
    by_rate.emplace_back(Op::rate, i);
    by_coord.emplace_back(Op::coord, i);
  }
  Differentiator by_time(Op::time, 0);
  ExprGraph graph;  // hash-consing: equal subtrees one node (the printer's temporaries)
  auto intern = [&graph](const ExprPtr& e) { return graph.intern(e); };
  for (int i = 0; i < n; ++i) {
    const ExprPtr p = intern(by_rate[static_cast<size_t>(i)](L));  // dL/dqd_i
    for (int j = 0; j <= i; ++j) {
      const ExprPtr m = intern(by_rate[static_cast<size_t>(j)](p));
      r.mass[static_cast<size_t>(i * n + j)] = m;
      r.mass[static_cast<size_t>(j * n + i)] = m;
    }
    ExprPtr f = by_coord[static_cast<size_t>(i)](L);
    for (int k = 0; k < n; ++k)
      f = s_sub(f, s_mul(by_coord[static_cast<size_t>(k)](p), sym_node(Op::rate, {}, 0.0, k)));
    f = s_sub(f, by_time(p));
    r.force[static_cast<size_t>(i)] = intern(f);
    if (graph.size() > kMaxSymbolicNodes) {  // refused: the other rows not derived
      r.refused = "the symbolic M and F would have more than " + std::to_string(kMaxSymbolicNodes) +
                  " distinct nodes (" + std::to_string(graph.size()) + " in " +
                  std::to_string(i + 1) + " of " + std::to_string(n) +
                  (n == 1 ? " row)" : " rows)");
      break;
    }
  }
  r.nodes = graph.size();
  return r;
}

// Why L's symbolic derivatives are not taken, "" when they are: a power
// whose exponent is a parameter and whose base depends on the state. Its
// second derivative p (p - 1) a^(p-2) is 0 inf = NaN at a = 0 for p = 1 (a
// term linear in a rate written as a power), which automatic differentiation
// (kernels/jet2.hpp) evaluates as 0.
std::string symbolic_exponents_refused(const Expr& root) {
  // every distinct node once (a shared graph is walked as a graph)
  std::vector<const Expr*> todo = {&root};
  std::unordered_set<const Expr*> seen = {&root};
  while (!todo.empty()) {
    const Expr& e = *todo.back();
    todo.pop_back();
    const bool power = e.op == Op::pow || (e.op == Op::call && e.fn == Fn::pow);
    if (power && e.args.size() == 2 && uses(*e.args[1], Op::param) &&
        !depends_on_state(*e.args[1]) && depends_on_state(*e.args[0]))
      return "a power of the state has a parameter as its exponent (its symbolic derivatives "
             "would be 0 inf where the parameter makes the term linear)";
    for (const auto& a : e.args)
      if (seen.insert(a.get()).second) todo.push_back(a.get());
  }
  return "";
}

}  // namespace

// The symbolic M and F of L (n coordinates), or none with the reason: a
// tree deeper than kMaxSymbolicDepth (the printer recurses along it) or
// trees with more than kMaxSymbolicNodes distinct nodes
DynamicsTrees dynamics_trees(int n, const ExprPtr& L) {
  DynamicsTrees d;
  if (!L) {
    d.refused = "no Lagrangian";
  } else if (L->depth > kMaxSymbolicDepth) {
    d.refused = "its tree is " + std::to_string(L->depth) + " levels deep, more than " +
                std::to_string(kMaxSymbolicDepth);
  } else if (std::string why = symbolic_exponents_refused(*L); !why.empty()) {
    d.refused = why;
  } else {
    d = build_dynamics_trees(n, L);
    if (!d.refused.empty()) {
      d.mass.clear();
      d.force.clear();
    }
  }
  return d;
}

// (sum_i qd_i dL/dqd_i) - L, the sum in the order of the coordinates; a
// term whose derivative is structurally 0 drops out
ExprPtr jacobi_integral(int n, const ExprPtr& L, std::string* refused) {
  if (!L) {
    *refused = "no Lagrangian";
  } else if (L->depth > kMaxSymbolicDepth) {
    *refused = "its tree is " + std::to_string(L->depth) + " levels deep, more than " +
               std::to_string(kMaxSymbolicDepth);
  }
  if (!refused->empty()) return nullptr;
  ExprGraph graph;  // hash-consing: equal subtrees one node
  ExprPtr sum = s_num(0.0);
  for (int i = 0; i < n; ++i) {
    Differentiator by_rate(Op::rate, i);
    sum = s_add(sum, s_mul(sym_node(Op::rate, {}, 0.0, i), by_rate(L)));
  }
  return graph.intern(s_sub(sum, L));
}

}  // namespace nholo::model_file
