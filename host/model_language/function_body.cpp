// nholo/host/model_language/function_body.cpp — see function_body.hpp.
#include "host/model_language/function_body.hpp"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace nholo::model_file {
namespace {

// One line of the body: a temporary (node) or an output (out)
struct Item {
  const Expr* node = nullptr;
  const FunctionOutput* out = nullptr;
};

// The nodes of the roots' trees in post-order (each once; not below a
// hoisted node), how many parents use each, and where each root's own
// traversal ends in that order
struct Traversal {
  std::vector<const Expr*> order;
  std::unordered_map<const Expr*, int> used;
  std::vector<size_t> output_end;  // order.size() after root k's tree

  Traversal(const std::vector<const Expr*>& roots, const TempNames& hoisted) {
    std::vector<std::pair<const Expr*, size_t>> stack;
    for (const Expr* r : roots) {
      if (++used[r] == 1) {
        stack.push_back({r, 0});
        while (!stack.empty()) {
          auto& [e, next] = stack.back();
          if (next < e->args.size() && !hoisted.count(e)) {
            const Expr* a = e->args[next++].get();
            if (++used[a] == 1) stack.push_back({a, 0});
          } else {
            order.push_back(e);
            stack.pop_back();
          }
        }
      }
      output_end.push_back(order.size());
    }
  }
  // nodes made temporaries although used once: where an expression grows
  // past max_nodes (cut_long_expressions)
  std::unordered_set<const Expr*> cut;

  // computed once into a temporary: used more than once (or cut), not a
  // leaf (nor a negated leaf), not hoisted
  bool temporary(const Expr* e, const TempNames& hoisted) const {
    const bool leaf = e->args.empty() || (e->op == Op::neg && e->args[0]->args.empty());
    return !leaf && (used.at(e) >= 2 || cut.count(e)) && !hoisted.count(e);
  }

  // Every printed line at most about 2 max_nodes + 1 nodes: a node whose
  // expression, down to the temporaries below it, holds more than max_nodes
  // becomes a temporary itself (an entry of F of a large model is a sum of
  // thousands of terms: one such line compiles in a time that grows faster
  // than its length). Post-order, so each node's operands are settled first.
  void cut_long_expressions(const TempNames& hoisted, int max_nodes) {
    std::unordered_map<const Expr*, int> size;  // nodes printed where e is used
    for (const Expr* e : order) {
      int s = 1;
      if (!hoisted.count(e))
        for (const auto& a : e->args) s += size.at(a.get());
      if (s > max_nodes && !temporary(e, hoisted)) cut.insert(e);
      size[e] = temporary(e, hoisted) ? 1 : s;
    }
  }
};

// a temporary's line under the names given so far (its operands named)
std::string temporary_line(const Expr& e, const std::string& name, bool declared,
                           TempNames& names) {
  const Code c = print(e, &names);
  names[&e] = {name, c.s};
  const std::string value = c.s ? "S(" + c.text + ")" : c.text;
  if (!declared) return "    " + name + " = " + value + ";";
  return "    const " + std::string(c.s ? "S " : "double ") + name + " = " + value + ";";
}

std::vector<std::string> output_lines(const FunctionOutput& o, const TempNames& names) {
  std::vector<std::string> l = {"    " + o.lhs + " = S(" + print(*o.root, &names).text + ");"};
  if (!o.mirror.empty()) l.push_back("    " + o.mirror + " = " + o.lhs + ";");
  return l;
}

// the temporaries an item's printed text names: below the node of a
// temporary (its operands), or the output's whole tree
void named_operands(const Item& it, const std::unordered_map<const Expr*, int>& temp_index,
                    const TempNames& hoisted, std::vector<int>& found) {
  std::vector<const Expr*> stack;
  if (it.node) {
    for (const auto& a : it.node->args) stack.push_back(a.get());
  } else {
    stack.push_back(it.out->root);
  }
  while (!stack.empty()) {
    const Expr* e = stack.back();
    stack.pop_back();
    const auto t = temp_index.find(e);
    if (t != temp_index.end()) {
      found.push_back(t->second);
    } else if (!hoisted.count(e)) {
      for (const auto& a : e->args) stack.push_back(a.get());
    }
  }
}

// Slots of the values that cross parts, reused once their last reader's
// part is over
struct SlotPlan {
  std::vector<int> slot;  // per temporary: -1 (a local of its part) or its slot
  int s_slots = 0, double_slots = 0;
};

SlotPlan plan_slots(const std::vector<int>& defined_in, const std::vector<int>& last_read_in,
                    const std::vector<bool>& of_s, int parts) {
  SlotPlan plan;
  plan.slot.assign(defined_in.size(), -1);
  std::vector<std::vector<int>> defined_by(static_cast<size_t>(parts)),
      released_at(static_cast<size_t>(parts) + 1);
  for (size_t k = 0; k < defined_in.size(); ++k)
    if (last_read_in[k] > defined_in[k])
      defined_by[static_cast<size_t>(defined_in[k])].push_back(static_cast<int>(k));
  std::vector<int> free_s, free_d;
  for (int part = 0; part < parts; ++part) {
    for (const int k : released_at[static_cast<size_t>(part)])
      (of_s[static_cast<size_t>(k)] ? free_s : free_d).push_back(plan.slot[static_cast<size_t>(k)]);
    for (const int k : defined_by[static_cast<size_t>(part)]) {
      std::vector<int>& pool = of_s[static_cast<size_t>(k)] ? free_s : free_d;
      int& count = of_s[static_cast<size_t>(k)] ? plan.s_slots : plan.double_slots;
      int s = count;
      if (!pool.empty()) {
        s = pool.back();
        pool.pop_back();
      } else {
        ++count;
      }
      plan.slot[static_cast<size_t>(k)] = s;
      released_at[static_cast<size_t>(last_read_in[static_cast<size_t>(k)]) + 1].push_back(k);
    }
  }
  return plan;
}

}  // namespace

Temporaries::Temporaries(const std::vector<const Expr*>& roots, const TempNames& hoisted)
    : names(hoisted) {
  const Traversal tr(roots, hoisted);
  order = tr.order;
  int temps = 0;
  for (const Expr* e : order)
    if (tr.temporary(e, hoisted))
      lines.push_back(temporary_line(*e, "c" + std::to_string(temps++), true, names));
}

FunctionBody function_body(const std::vector<FunctionOutput>& outputs, const TempNames& hoisted,
                           size_t part_characters) {
  if (part_characters == 0) part_characters = kPartCharacters;
  std::vector<const Expr*> roots;
  for (const FunctionOutput& o : outputs) roots.push_back(o.root);
  Traversal tr(roots, hoisted);
  FunctionBody body;
  body.order = tr.order;

  // the items, each output right after the last node of its tree (so that
  // its operands live briefly); the temporaries' provisional names c<k>
  std::vector<Item> items;
  std::unordered_map<const Expr*, int> temp_index;
  std::vector<const Expr*> temps;
  auto collect = [&] {
    items.clear();
    temp_index.clear();
    temps.clear();
    size_t next = 0;
    for (size_t o = 0; o < outputs.size(); ++o) {
      for (; next < tr.output_end[o]; ++next) {
        const Expr* e = tr.order[next];
        if (!tr.temporary(e, hoisted)) continue;
        temp_index[e] = static_cast<int>(temps.size());
        temps.push_back(e);
        items.push_back({e, nullptr});
      }
      items.push_back({nullptr, &outputs[o]});
    }
  };
  // one function: the temporaries, then the outputs (the code of a body
  // below the parts' size is what it was before parts existed)
  TempNames names;
  std::vector<std::string> single;
  std::vector<size_t> output_size;
  auto print_single = [&] {
    names = hoisted;
    single.clear();
    output_size.clear();
    size_t total = 0;
    for (size_t k = 0; k < temps.size(); ++k) {
      single.push_back(temporary_line(*temps[k], "c" + std::to_string(k), true, names));
      total += single.back().size();
    }
    for (const FunctionOutput& o : outputs) {
      output_size.push_back(0);
      for (std::string& l : output_lines(o, names)) {
        output_size.back() += l.size();
        single.push_back(std::move(l));
      }
      total += output_size.back();
    }
    return total;
  };
  collect();
  if (print_single() < kPartsFrom * part_characters) {
    body.parts.push_back(std::move(single));
    return body;
  }
  tr.cut_long_expressions(
      hoisted, static_cast<int>(std::max<size_t>(4, part_characters / kCharactersPerLineNode)));
  collect();
  print_single();

  // parts: items in order, a new part once one holds part_characters
  std::vector<int> part_of(items.size());
  int parts = 1;
  size_t in_part = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    if (in_part >= part_characters) {
      ++parts;
      in_part = 0;
    }
    part_of[i] = parts - 1;
    in_part += items[i].node ? single[static_cast<size_t>(temp_index.at(items[i].node))].size()
                             : output_size[static_cast<size_t>(items[i].out - outputs.data())];
  }
  std::vector<int> defined_in(temps.size()), last_read_in(temps.size(), -1);
  std::vector<bool> of_s(temps.size());
  std::vector<int> found;
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].node) {
      const int k = temp_index.at(items[i].node);
      defined_in[static_cast<size_t>(k)] = part_of[i];
      of_s[static_cast<size_t>(k)] = names.at(items[i].node).s;
    }
    found.clear();
    named_operands(items[i], temp_index, hoisted, found);
    for (const int k : found)
      last_read_in[static_cast<size_t>(k)] =
          std::max(last_read_in[static_cast<size_t>(k)], part_of[i]);
  }
  const SlotPlan plan = plan_slots(defined_in, last_read_in, of_s, parts);
  body.s_slots = plan.s_slots;
  body.double_slots = plan.double_slots;

  names = hoisted;
  body.parts.resize(static_cast<size_t>(parts));
  for (size_t i = 0; i < items.size(); ++i) {
    std::vector<std::string>& lines = body.parts[static_cast<size_t>(part_of[i])];
    if (!items[i].node) {
      for (std::string& l : output_lines(*items[i].out, names)) lines.push_back(std::move(l));
      continue;
    }
    const size_t k = static_cast<size_t>(temp_index.at(items[i].node));
    const int s = plan.slot[k];
    const std::string name =
        s < 0 ? "c" + std::to_string(k) : (of_s[k] ? "xs[" : "xd[") + std::to_string(s) + "]";
    lines.push_back(temporary_line(*items[i].node, name, s < 0, names));
  }
  return body;
}

}  // namespace nholo::model_file
