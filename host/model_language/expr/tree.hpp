// nholo/host/model_language/expr/tree.hpp — the expression language's parsed tree
// (Expr, its operations and functions) and the small text helpers that the
// parser, the checks, the model-file reader and the code generator share.
// Internal to host/model_language/ (the public interface: model_file.hpp, where
// Expr is opaque).
//
// The pieces of the expression language:
//   expr/tree.*        the tree, the function table, text helpers
//   expr/parser.*      names an expression may use (Scope), tokenizer and parser
//   expr/analysis.*    structural queries (separable, constant mass, affine in qdd)
//   expr/eval.*        evaluation in double precision
//   expr/derivative.*  symbolic M and F of a Lagrangian, its energy
//   expr/graph.*       hash-consing: equal subtrees one shared node (the
//                      model's graph, its size budget)
//
// A tree may share nodes: a definition ([definitions]) is one tree that
// every expression naming it points to, and the model's trees are made one
// graph (expr/graph.*), so the expressions form a graph without cycles (a
// DAG). Every walk over them visits a node once.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "host/model_language/number_text.hpp"
#include "host/model_language/model_file.hpp"

namespace nholo::model_file {

enum class Op { number, pi, time, coord, rate, accel, param, neg, add, sub, mul, div, pow, call };
enum class Fn { sin, cos, tan, exp, log, sqrt, sinh, cosh, tanh, abs, sign, atan2, pow };

struct Expr {
  Op op = Op::number;
  double value = 0;  // number
  int index = 0;     // coordinate, rate, acceleration or parameter
  Fn fn = Fn::sin;   // call
  std::vector<ExprPtr> args;
  // 1-based character position of the number, name, operator or function
  // name; for messages, before the model's trees are shared (expr/graph.hpp:
  // a shared node keeps its first occurrence's)
  int pos = 1;
  int depth = 1;
  // the kinds of node in this subtree, bit 1 << Op (set where the node is
  // made, from its arguments'): uses() without walking a shared graph
  unsigned ops = 0;
};

// the ops bits of a node of kind op with arguments args
inline unsigned ops_of(Op op, const std::vector<ExprPtr>& args) {
  unsigned m = 1u << static_cast<unsigned>(op);
  for (const auto& a : args) m |= a->ops;
  return m;
}

constexpr double kPi = 3.14159265358979323846;

// the functions of the grammar
struct FnInfo {
  const char* name;
  Fn fn;
  int arity;
};
const FnInfo* find_function(const std::string& s);  // nullptr: not a function
const FnInfo& function_info(Fn fn);
std::string function_list();  // "sin, cos, ..." (messages)

// text helpers
std::string joined(const std::vector<std::string>& v, const char* sep = ", ");
bool ends_with(const std::string& s, const std::string& suffix);
bool is_alpha(char c);
bool is_digit(char c);
bool is_word(char c);
bool is_identifier(const std::string& s);  // [A-Za-z][A-Za-z0-9_]*
using nholo::short_number;                 // the shortest text that reads back as v (messages)
int index_of(const std::vector<std::string>& v, const std::string& s);  // -1: absent
std::vector<std::string> suffixed(const std::vector<std::string>& v, const char* suffix);

}  // namespace nholo::model_file
