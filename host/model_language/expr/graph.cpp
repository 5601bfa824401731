// nholo/host/model_language/expr/graph.cpp — hash-consing of expression trees
// and the count of distinct nodes (expr/graph.hpp).
#include "host/model_language/expr/graph.hpp"

#include <cstring>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <unordered_set>
#include <utility>

namespace nholo::model_file {

namespace {

std::uint64_t bits_of(double v) {
  std::uint64_t b = 0;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// splitmix64's finalizer: one word's bits spread over all of them
std::uint64_t mixed(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

size_t ExprGraph::KeyHash::operator()(const Key& k) const {
  std::uint64_t h =
      mixed(static_cast<std::uint64_t>(k.op) * 0x100 + static_cast<std::uint64_t>(k.fn));
  h = mixed(h ^ k.value_bits);
  h = mixed(h ^ static_cast<std::uint64_t>(static_cast<std::uint32_t>(k.index)));
  for (const Expr* a : k.args) h = mixed(h ^ reinterpret_cast<std::uintptr_t>(a));
  return static_cast<size_t>(h);
}

ExprPtr ExprGraph::intern_node(const Expr& e, std::vector<ExprPtr> args) {
  if (args.size() > 2) throw std::logic_error("ExprGraph: a node with more than two children");
  Key k{e.op, bits_of(e.value), e.index, e.fn, {nullptr, nullptr}};
  for (size_t i = 0; i < args.size(); ++i) k.args[i] = args[i].get();
  const auto found = nodes_.find(k);
  if (found != nodes_.end()) return found->second;
  auto c = std::make_shared<Expr>();
  c->op = e.op;
  c->value = e.value;
  c->index = e.index;
  c->fn = e.fn;
  c->pos = e.pos;
  c->depth = e.depth;  // structural: the same for the shared node
  c->ops = ops_of(e.op, args);
  c->args = std::move(args);
  nodes_.emplace(k, c);
  return c;
}

// post-order, with an explicit stack: each node after its children, whose
// interned nodes wait on a stack of results. A node held only by its parent
// (the parser's trees) is met once and not remembered; one held more often
// (a tree shared by several expressions) is remembered by its address, so
// that a shared graph costs its distinct nodes, not its unfolded size.
ExprPtr ExprGraph::intern(const ExprPtr& root) {
  if (!root) return nullptr;
  if (const auto it = done_.find(root.get()); it != done_.end()) return it->second;
  std::vector<std::pair<const ExprPtr*, size_t>> stack = {{&root, 0}};  // node, next child
  std::vector<ExprPtr> results;
  while (!stack.empty()) {
    const ExprPtr& ep = *stack.back().first;
    const size_t next = stack.back().second;
    if (next < ep->args.size()) {
      ++stack.back().second;
      const ExprPtr& a = ep->args[next];
      const auto it = done_.find(a.get());
      if (it != done_.end())
        results.push_back(it->second);
      else
        stack.push_back({&a, 0});
      continue;
    }
    const size_t arity = ep->args.size();
    std::vector<ExprPtr> args(std::make_move_iterator(results.end() - static_cast<long>(arity)),
                              std::make_move_iterator(results.end()));
    results.resize(results.size() - arity);
    ExprPtr c = intern_node(*ep, std::move(args));
    if (ep.use_count() > 1) {
      inputs_.push_back(ep);  // its address stays its own while remembered
      done_.emplace(ep.get(), c);
    }
    results.push_back(std::move(c));
    stack.pop_back();
  }
  done_.emplace(root.get(), results.back());
  inputs_.push_back(root);
  done_.emplace(results.back().get(), results.back());
  return results.back();
}

size_t distinct_nodes(const std::vector<const Expr*>& roots) {
  std::unordered_set<const Expr*> seen;
  std::vector<const Expr*> todo;
  for (const Expr* r : roots)
    if (r && seen.insert(r).second) todo.push_back(r);
  while (!todo.empty()) {
    const Expr* e = todo.back();
    todo.pop_back();
    for (const auto& a : e->args)
      if (seen.insert(a.get()).second) todo.push_back(a.get());
  }
  return seen.size();
}

}  // namespace nholo::model_file
