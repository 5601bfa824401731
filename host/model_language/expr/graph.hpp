// nholo/host/model_language/expr/graph.hpp — the expression graph of a model:
// its trees hash-consed, so that structurally equal subtrees are one shared
// node (common-subexpression elimination without reordering anything), and
// the count of distinct nodes that the model's size budget is taken on.
// Internal to host/model_language/.
//
//   ExprGraph g;
//   s.lagrangian.tree = g.intern(s.lagrangian.tree);  // every tree of the model
//   g.size()                                          // distinct nodes in all
//   distinct_nodes({L, ...})                          // of some of them
//
// Two nodes are equal when their operation, number (bit for bit), index and
// function are, and their children are the same shared nodes: only identical
// subtrees merge (a + b and b + a stay two), so evaluating the graph does the
// operations of the trees in the same order, with the same results to the
// bit. An interned node keeps the character position (Expr::pos) of the
// first occurrence it was made from: positions are for the messages of the
// checks, which come before interning.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "host/model_language/expr/tree.hpp"

namespace nholo::model_file {

// The most distinct nodes a model's graph may have (docs/models.md,
// "Limits"). What grows with it: the generated C++ and its compile time, and
// the symbolic M and F (expr/derivative.cpp, whose own limit is sized so
// that a Lagrangian within this one normally has them).
constexpr size_t kMaxGraphNodes = 100000;

class ExprGraph {
 public:
  // the graph's node structurally equal to e (e's nodes added where new);
  // null for null. Iterative: any depth the parser accepts.
  ExprPtr intern(const ExprPtr& e);
  // distinct nodes interned so far
  size_t size() const { return nodes_.size(); }

 private:
  struct Key {
    Op op;
    std::uint64_t value_bits;
    int index;
    Fn fn;
    std::array<const Expr*, 2> args;  // the interned children (no node has more)
    bool operator==(const Key& o) const {
      return op == o.op && value_bits == o.value_bits && index == o.index && fn == o.fn &&
             args == o.args;
    }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  // e's interned node, its children already interned
  ExprPtr intern_node(const Expr& e, std::vector<ExprPtr> args);

  std::unordered_map<Key, ExprPtr, KeyHash> nodes_;
  // the nodes met that have more than one owner (shared input, an interned
  // node, a root) -> their interned node; those inputs are kept alive so
  // that their addresses stay theirs
  std::unordered_map<const Expr*, ExprPtr> done_;
  std::vector<ExprPtr> inputs_;
};

// the distinct nodes (by address) reachable from the roots; null roots are
// skipped. On interned trees: their size after sharing.
size_t distinct_nodes(const std::vector<const Expr*>& roots);

// Every tree of s (lagrangian, constraints, forces, nonideal_forces, energy,
// conflated_lagrangian) replaced by its node of one graph of the whole
// model, and the size of that graph, of each part (with the model's
// events, parsed from their text) and the limit (host/model_language/
// model_graph.cpp). After the checks that report positions.
GraphSize share_expressions(ModelSpec& s);

}  // namespace nholo::model_file
