// nholo/host/model_language/derived_params.cpp — the dependencies of derived
// parameters (host/model_language/derived_params.hpp).
#include "host/model_language/derived_params.hpp"

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "host/model_language/expr/eval.hpp"
#include "host/model_language/param_range.hpp"

namespace nholo::model_file {

std::vector<int> params_used(const Expr& e) {
  std::vector<int> used;
  std::vector<const Expr*> todo = {&e};
  while (!todo.empty()) {
    const Expr* x = todo.back();
    todo.pop_back();
    if (x->op == Op::param) used.push_back(x->index);
    for (const auto& a : x->args)
      if (a) todo.push_back(a.get());
  }
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  return used;
}

const Expr* first_param_use(const Expr& e, const std::vector<bool>& which) {
  const Expr* first = nullptr;
  std::vector<const Expr*> todo = {&e};
  while (!todo.empty()) {
    const Expr* x = todo.back();
    todo.pop_back();
    if (x->op == Op::param && x->index >= 0 && static_cast<size_t>(x->index) < which.size() &&
        which[static_cast<size_t>(x->index)] && (first == nullptr || x->pos < first->pos))
      first = x;
    for (const auto& a : x->args)
      if (a) todo.push_back(a.get());
  }
  return first;
}

DerivationOrder derivation_order(const std::vector<bool>& derived,
                                 const std::vector<std::vector<int>>& uses) {
  // depth-first, in declaration order: a derived parameter is placed after
  // the derived parameters it uses; meeting one that is still being placed
  // closes a cycle
  enum class Mark { none, active, done };
  const size_t n = derived.size();
  std::vector<Mark> mark(n, Mark::none);
  DerivationOrder out;
  std::vector<int> path;  // the derived parameters being placed, outermost first
  // next[k]: how many of path[k]'s uses have been followed
  std::vector<size_t> next;
  for (size_t root = 0; root < n; ++root) {
    if (!derived[root] || mark[root] != Mark::none) continue;
    path.assign(1, static_cast<int>(root));
    next.assign(1, 0);
    mark[root] = Mark::active;
    while (!path.empty()) {
      const int j = path.back();
      const std::vector<int>& u = uses[static_cast<size_t>(j)];
      if (next.back() == u.size()) {
        mark[static_cast<size_t>(j)] = Mark::done;
        out.order.push_back(j);
        path.pop_back();
        next.pop_back();
        continue;
      }
      const int k = u[next.back()++];
      if (!derived[static_cast<size_t>(k)] || mark[static_cast<size_t>(k)] == Mark::done) continue;
      if (mark[static_cast<size_t>(k)] == Mark::active) {
        const auto from = std::find(path.begin(), path.end(), k);
        out.cycle.assign(from, path.end());
        out.cycle.push_back(k);
        out.order.clear();
        return out;
      }
      mark[static_cast<size_t>(k)] = Mark::active;
      path.push_back(k);
      next.push_back(0);
    }
  }
  return out;
}

DerivedProblem derive_defaults(ModelSpec& s) {
  std::vector<bool> derived;
  std::vector<std::vector<int>> uses;
  for (const Parameter& par : s.parameters) {
    derived.push_back(!par.derived.text.empty());
    uses.push_back(par.derived_from);
  }
  DerivedProblem bad;
  const DerivationOrder d = derivation_order(derived, uses);
  if (!d.cycle.empty()) {
    const int j0 = d.cycle.front();
    const Parameter& first = s.parameters[static_cast<size_t>(j0)];
    bad.param = j0;
    if (d.cycle.size() == 2) {
      std::vector<bool> self(s.parameters.size(), false);
      self[static_cast<size_t>(j0)] = true;
      bad.pos = first_param_use(*first.derived.tree, self)->pos;
      bad.reason = "'" + first.name +
                   "' is this parameter itself: a derived parameter is a function of the other "
                   "parameters";
      return bad;
    }
    std::vector<std::string> names;
    for (const int j : d.cycle) names.push_back(s.parameters[static_cast<size_t>(j)].name);
    std::vector<bool> next(s.parameters.size(), false);
    next[static_cast<size_t>(d.cycle[1])] = true;
    bad.pos = first_param_use(*first.derived.tree, next)->pos;
    bad.reason = "the derived parameters form a cycle (" + joined(names, " -> ") +
                 "): a derived parameter may use other derived ones, but not itself through them";
    return bad;
  }
  s.derived_order = d.order;
  std::vector<double> values;
  for (const Parameter& par : s.parameters) values.push_back(par.default_value);
  Env env;
  env.p = values.data();
  for (const int j : d.order) {
    Parameter& par = s.parameters[static_cast<size_t>(j)];
    EvalFailure f;
    par.default_value = values[static_cast<size_t>(j)] = eval(*par.derived.tree, env, &f);
    bad.param = j;
    if (f.failed) {
      bad.pos = f.pos;
      bad.reason = f.reason + " (at the defaults of the parameters it uses)";
      return bad;
    }
    if (!range_admits(par.range, par.default_value)) {
      bad.reason = "its value at the defaults, " + short_number(par.default_value) +
                   ", is outside the declared range (" + range_text(par.range) + ")";
      return bad;
    }
  }
  bad.param = -1;
  return bad;
}

}  // namespace nholo::model_file
