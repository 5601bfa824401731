// Tests of host/model_language/model_graph.cpp and expr/graph.cpp: a model's
// expressions as one shared graph (hash-consing), its size counted after
// sharing, part by part, and the budget on it (docs/models.md, "Limits").
// Each expected count is the number of distinct subexpressions, counted by
// hand in the comments.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "host/model_language/expr/parser.hpp"
#include "host/model_language/model_file.hpp"
#include "tests/model_file_cases.hpp"

using nholo::ModelSpec;
using nholo::model_file::graph_size;
using nholo::model_file::GraphSize;
using namespace nholo_test;

namespace {

const std::string kOneCoordinate =
    "name = \"big\"\ndescription = \"a test of sizes\"\n"
    "coordinates = [ { name = \"x\", unit = \"m\" } ]\n";

// "K*v^2" for K = 1 .. terms, summed in parenthesized groups of 1000 (a
// chain of operations is at most 10,000 long). Distinct nodes: v, the
// numbers 1 .. terms (the exponent 2 among them), v^2, one product per term
// and terms - 1 sums: 3 terms + 1.
std::string numbered_terms(int terms, const std::string& v) {
  std::string s, group;
  for (int k = 1; k <= terms; ++k) {
    group += (group.empty() ? "" : " + ") + std::to_string(k) + "*" + v + "^2";
    if (k % 1000 == 0 || k == terms) {
      s += (s.empty() ? "(" : " + (") + group + ")";
      group.clear();
    }
  }
  return s;
}

}  // namespace

// A subexpression written many times is one node: (x_dot^2/2 + cos(x))
// multiplied 2000 times is 17,999 nodes as written (8 per factor: x_dot,
// 2, ^, 2, /, x, cos, +; 1999 products), and 7 distinct ones in the factor
// (the two 2s are one number) plus 1999 distinct products (each has a
// different left operand) after sharing: 2006.
TEST(ModelGraph, ARepeatedSubexpressionCountsOnce) {
  const int factors = 2000;
  std::string L = "(x_dot^2/2 + cos(x))";
  for (int k = 1; k < factors; ++k) L += "*(x_dot^2/2 + cos(x))";
  const ModelSpec s = parse(kOneCoordinate + "lagrangian = \"" + L + "\"\n");
  const GraphSize g = graph_size(s);
  EXPECT_EQ(g.nodes, 2006u);
  ASSERT_EQ(g.parts.size(), 1u);
  EXPECT_EQ(g.parts[0].name, "lagrangian");
  EXPECT_EQ(g.parts[0].nodes, 2006u);
  EXPECT_EQ(g.limit, 100000u);
  // the shared graph computes what the text says, in its order: the same
  // bits as the product folded left to right, and as the tree parsed alone
  const double x = 0.3, xd = 0.7;
  const double f = std::pow(xd, 2.0) / 2.0 + std::cos(x);
  double product = f;
  for (int k = 1; k < factors; ++k) product *= f;
  EXPECT_EQ(nholo::model_file::evaluate(s, s.lagrangian, {x}, {xd}, {}, 0.0), product);
  nholo::model_file::Names names{{"x"}, {}, {}};
  const auto tree =
      nholo::model_file::parse_expression(L, {&names, nholo::model_file::Context::lagrangian, 0});
  EXPECT_NE(tree.get(), s.lagrangian.tree.get());
  ModelSpec unshared = s;
  unshared.lagrangian.tree = tree;
  EXPECT_EQ(nholo::model_file::evaluate(unshared, unshared.lagrangian, {x}, {xd}, {}, 0.0),
            product);
}

// Sharing across expressions, and each part's own count.
//   lagrangian x_dot^2/2 + sin(x)*sin(x) + sin(x)*sin(x): x_dot, 2, ^, /, x,
//     sin, *, the two sums: 9 (17 as written)
//   energy x_dot^2/2 - sin(x)*sin(x): x_dot, 2, ^, /, x, sin, *, -: 8, of
//     which only the difference is new: 10 in all
TEST(ModelGraph, ExpressionsShareTheirCommonSubexpressions) {
  const ModelSpec s = parse(kOneCoordinate +
                            "lagrangian = \"x_dot^2/2 + sin(x)*sin(x) + sin(x)*sin(x)\"\n"
                            "energy = \"x_dot^2/2 - sin(x)*sin(x)\"\n");
  const GraphSize g = graph_size(s);
  EXPECT_EQ(g.nodes, 10u);
  ASSERT_EQ(g.parts.size(), 2u);
  EXPECT_EQ(g.parts[0].name, "lagrangian");
  EXPECT_EQ(g.parts[0].nodes, 9u);
  EXPECT_EQ(g.parts[1].name, "energy");
  EXPECT_EQ(g.parts[1].nodes, 8u);
  EXPECT_EQ(nholo::model_file::parts_text(g), "lagrangian 9, energy 8");
  // the energy's x_dot^2/2 is the Lagrangian's node
  EXPECT_EQ(s.energy.tree->args[0].get(), s.lagrangian.tree->args[0]->args[0].get());
}

// Constraints one by one, forces and events.
//   lagrangian x_dot^2/2 + y_dot^2/2 + 0*z_dot: x_dot, 2, ^, /, y_dot, ^, /,
//     +, 0, z_dot, *, +: 12
//   c1 x_dot - y_dot*cos(x): x_dot, y_dot, x, cos, *, -: 6
//   c2 y_dot*cos(x) + x_dot: 6, the product c1's; both: 7
//   forces x = -x_dot: x_dot, the negation: 2
//   events x: 1
//   all: the Lagrangian's 12, then x, cos, *, -, + and the negation: 18
TEST(ModelGraph, EachPartIsCounted) {
  const ModelSpec s = parse(
      "name = \"parts\"\ndescription = \"a test of sizes\"\n"
      "coordinates = [ { name = \"x\", unit = \"m\" }, { name = \"y\", unit = \"m\" },"
      " { name = \"z\", unit = \"m\" } ]\n"
      "lagrangian = \"x_dot^2/2 + y_dot^2/2 + 0*z_dot\"\n"
      "constraints = [ { name = \"c1\", kind = \"velocity\", expr = \"x_dot - y_dot*cos(x)\" },"
      " { name = \"c2\", kind = \"velocity\", expr = \"y_dot*cos(x) + x_dot\" } ]\n"
      "forces = { x = \"-x_dot\" }\n"
      "[[events]]\nname = \"e\"\nexpr = \"x\"\n");
  const GraphSize g = graph_size(s);
  EXPECT_EQ(nholo::model_file::parts_text(g),
            "lagrangian 12, constraints 7 (c1 6, c2 6), forces 2, events 1");
  EXPECT_EQ(g.nodes, 18u);
}

// 49,999 distinct nodes (3 terms + 1 with 16,666 terms): accepted, counted
// exactly. Not compiled here (a plugin of this size takes minutes).
TEST(ModelGraph, FiftyThousandNodesAreAccepted) {
  const ModelSpec s =
      parse(kOneCoordinate + "lagrangian = \"" + numbered_terms(16666, "x_dot") + "\"\n");
  const GraphSize g = graph_size(s);
  EXPECT_EQ(g.nodes, 49999u);
  EXPECT_LE(g.nodes, g.limit);
}

// Above the budget: refused with the model's total, every part's size and
// the limit, not only the expressions read before the limit was crossed.
//   lagrangian: 20,000 terms K*x_dot^2: 60,001
//   energy: 20,000 terms K*x^2, the numbers shared: 60,001 of its own, 40,001
//     new (x, x^2, 20,000 products, 19,999 sums)
//   constraint y_dot - x_dot: 3 of its own, 2 new
//   all: 100,004
TEST(ModelGraph, AModelAboveTheBudgetIsRefusedWithItsTotal) {
  // the model above with `energy_terms` terms in its energy
  const auto model = [](int energy_terms) {
    return "name = \"big\"\ndescription = \"a test of sizes\"\n"
           "coordinates = [ { name = \"x\", unit = \"m\" }, { name = \"y\", unit = \"m\" } ]\n"
           "lagrangian = \"" +
           numbered_terms(20000, "x_dot") +
           "\"\n"
           "constraints = [ { name = \"c\", kind = \"velocity\", expr = \"y_dot - x_dot\" } ]\n"
           "energy = \"" +
           numbered_terms(energy_terms, "x") + "\"\n";
  };
  const std::string text = model(20000);
  const std::string msg = error_of(text);
  EXPECT_EQ(msg.find("bad.toml:4:14: lagrangian: the model's expressions are too large: 100,004 "
                     "graph nodes after sharing common subexpressions (lagrangian 60,001, "
                     "constraints 3, energy 60,001), more than the limit of 100,000 (distinct "
                     "numbers, names, operations and function calls of all expressions "
                     "together)"),
            0u)
      << msg.substr(0, 600);
  EXPECT_NE(msg.find("docs/models.md, \"Limits\""), std::string::npos) << msg.substr(0, 600);
  // two terms fewer in the energy (4 nodes): exactly the limit, accepted
  const std::string fits = model(19998);
  EXPECT_EQ(graph_size(parse(fits)).nodes, 100000u);
}
