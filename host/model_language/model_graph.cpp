// nholo/host/model_language/model_graph.cpp — a model's expressions as one
// shared graph and its size against the budget (share_expressions,
// expr/graph.hpp; graph_size: host/model_language/model_file.hpp; docs/models.md, "Limits").
#include <string>
#include <utility>
#include <vector>

#include "host/model_language/expr/graph.hpp"
#include "host/model_language/expr/parser.hpp"
#include "host/model_language/model_file.hpp"

namespace nholo {

namespace model_file {

namespace {

// a part of the model: its name and its trees
struct Part {
  std::string name;
  std::vector<ExprPtr*> trees;
  std::vector<Part> items;  // the constraints, one by one
};

// the model's events, parsed as compile_event_table parses them (read_events
// has checked them)
std::vector<ExprPtr> event_trees(const ModelSpec& s) {
  Names names;
  for (const auto& c : s.coordinates) names.coords.push_back(c.name);
  for (const auto& p : s.parameters) names.params.push_back(p.name);
  for (const auto& d : s.definitions) names.definitions[d.name] = d.expr.tree;
  const Scope scope{&names, Context::event, static_cast<int>(names.params.size())};
  std::vector<ExprPtr> trees;
  for (const auto& e : s.events) trees.push_back(parse_expression(e.expr, scope));
  return trees;
}

// the parts of s, pointing at its trees (and at the events' trees)
std::vector<Part> parts_of(ModelSpec& s, std::vector<ExprPtr>& events) {
  std::vector<Part> parts;
  parts.push_back({"lagrangian", {&s.lagrangian.tree}, {}});
  if (!s.constraints.empty()) {
    Part all{"constraints", {}, {}};
    for (auto& c : s.constraints) {
      all.trees.push_back(&c.expr.tree);
      all.items.push_back({c.name, {&c.expr.tree}, {}});
    }
    parts.push_back(std::move(all));
  }
  for (auto [name, forces] : {std::pair{"forces", &s.nonpotential_force},
                              std::pair{"nonideal_forces", &s.nonideal_force}}) {
    if (forces->empty()) continue;
    Part f{name, {}, {}};
    for (auto& e : *forces) f.trees.push_back(&e.tree);
    parts.push_back(std::move(f));
  }
  if (s.energy.tree) parts.push_back({"energy", {&s.energy.tree}, {}});
  if (s.conflated_lagrangian.tree)
    parts.push_back({"conflated_lagrangian", {&s.conflated_lagrangian.tree}, {}});
  if (!events.empty()) {
    Part ev{"events", {}, {}};
    for (auto& e : events) ev.trees.push_back(&e);
    parts.push_back(std::move(ev));
  }
  return parts;
}

GraphPart measured(const Part& p) {
  std::vector<const Expr*> roots;
  for (const ExprPtr* t : p.trees) roots.push_back(t->get());
  GraphPart g{p.name, distinct_nodes(roots), {}};
  for (const Part& item : p.items) g.items.push_back(measured(item));
  return g;
}

// 8998 -> "8,998"
std::string grouped(size_t v) {
  std::string digits = std::to_string(v), r;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) r += ',';
    r += digits[i];
  }
  return r;
}

}  // namespace

GraphSize share_expressions(ModelSpec& s) {
  std::vector<ExprPtr> events = event_trees(s);
  std::vector<Part> parts = parts_of(s, events);
  ExprGraph graph;
  std::vector<const Expr*> all;
  for (const Part& p : parts)
    for (ExprPtr* t : p.trees) {
      *t = graph.intern(*t);
      all.push_back(t->get());
    }
  GraphSize size;
  size.nodes = distinct_nodes(all);
  size.limit = kMaxGraphNodes;
  for (const Part& p : parts) size.parts.push_back(measured(p));
  return size;
}

GraphSize graph_size(const ModelSpec& s) {
  ModelSpec shared = s;  // its trees re-interned: the same counts for an interned spec
  return share_expressions(shared);
}

std::string grouped_number(size_t v) {
  return grouped(v);
}

std::string parts_text(const GraphSize& g) {
  std::string r;
  for (const GraphPart& p : g.parts) {
    r += (r.empty() ? "" : ", ") + p.name + " " + grouped(p.nodes);
    if (p.items.size() > 1) {
      std::string items;
      for (const GraphPart& i : p.items)
        items += (items.empty() ? "" : ", ") + i.name + " " + grouped(i.nodes);
      r += " (" + items + ")";
    }
  }
  return r;
}

}  // namespace model_file

}  // namespace nholo
