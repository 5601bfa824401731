// nholo/host/model_language/event_compile.cpp — compile_event_table
// (host/model_language/event_compile.hpp): a run's [[events]] compiled for
// the kernels, each
// expression (the model-file expression language, reading t, the
// coordinates, their rates and the parameters) parsed, checked against the
// model's names and lowered to the postfix program that
// kernels/event_program.hpp's interpreter evaluates.
//
//   EventTable table = compile_event_table(cfg.events, mi.coordinates,
//                                          param_names, param_values,
//                                          cfg.varied_params);
//
// The lowering:
//   numbers, pi, a parameter that does not vary  -> constant
//   a parameter in varied_params                 -> varied_param (its index in
//                                                   param_names: the model's)
//   t, q, q_dot                                   -> time, coord, rate
//   - + * / ^ and the functions                   -> the EventOp of the same name
//                                                   (pow(a, b) and a^b -> pow)
// A subtree that reads none of t, q, qd and no varied parameter is folded
// into one constant, evaluated here in double precision (the expression
// language's evaluator, expr/eval.hpp); a non-finite folded value (1/0,
// log(0)) is an error naming its position. The operands of + and * are
// emitted deeper side first (their results are the same bits: IEEE addition
// and multiplication commute), so that the program needs the fewest stack
// slots.
//
// Every problem throws ConfigError naming the key (events[k].name,
// events[k].expr, ... with k counted from 0, as the model file counts
// coordinates[k]) and what is accepted: more than kMaxEvents events, a name
// that is no identifier or is used twice, a direction or action not in the
// list, max_records or subdivisions out of range, a syntax error or an
// unknown name (with the position, 1-based characters), an acceleration, an
// expression that reads none of t, q and qd (it never changes sign), more
// than kMaxEventInstrs instructions or a stack deeper than kMaxEventStack.
// The config parser (host/config/parse_events.cpp) calls this function to
// check the expressions when the configuration is read, so a run refuses
// nothing later that `nholo check` accepted.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "host/model_language/config_error.hpp"
#include "host/model_language/event_compile.hpp"
#include "host/model_language/expr/eval.hpp"
#include "host/model_language/model_file.hpp"
#include "host/model_language/expr/parser.hpp"
#include "host/model_language/expr/tree.hpp"

namespace nholo {

namespace {

using model_file::Expr;
using model_file::Fn;
using model_file::Op;

constexpr size_t kShown = 60;  // characters of user text shown in a message

// user text in a message: one line (control characters as spaces), at most
// kShown characters around character pos (1-based), with "..." where cut
std::string excerpt(const std::string& s, int pos = 1) {
  std::vector<size_t> starts;  // byte of each character (UTF-8)
  for (size_t b = 0; b < s.size(); ++b)
    if ((static_cast<unsigned char>(s[b]) & 0xC0) != 0x80) starts.push_back(b);
  const size_t n = starts.size();
  size_t from = 0, to = n;
  if (n > kShown) {
    const size_t p = pos < 1 ? 0 : static_cast<size_t>(pos - 1);
    from = p > kShown / 2 ? p - kShown / 2 : 0;
    if (from + kShown > n) from = n - kShown;
    to = from + kShown;
  }
  const size_t b = from < n ? starts[from] : s.size();
  const size_t e = to < n ? starts[to] : s.size();
  std::string r = from > 0 ? "..." : "";
  for (size_t i = b; i < e; ++i) {
    const auto u = static_cast<unsigned char>(s[i]);
    r += (u < 0x20 || u == 0x7f) ? ' ' : s[i];
  }
  if (to < n) r += "...";
  return "\"" + r + "\"";
}

std::string key_of(size_t k, const char* field) {
  return "events[" + std::to_string(k) + "]." + field;
}

// the value of a choice (kEventDirections, kEventActions); ConfigError when
// `name` is none of them
template <class Enum, size_t N>
int32_t choice(const tables::NamedChoice<Enum> (&table)[N], const std::string& name,
               const std::string& key) {
  for (const auto& c : table)
    if (name == c.name) return static_cast<int32_t>(c.value);
  throw ConfigError(
      key, "unknown value " + excerpt(name) + " (accepted: " + join(tables::names_of(table)) + ")");
}

// The checks of one entry that do not need the model.
void check_entry(const EventConfig& e, size_t k, const std::vector<EventConfig>& events) {
  if (e.name.empty())
    throw ConfigError(key_of(k, "name"),
                      "missing or empty (a name [A-Za-z][A-Za-z0-9_]*: the "
                      "group events/<name> of the result file)");
  if (!model_file::is_identifier(e.name))
    throw ConfigError(key_of(k, "name"), excerpt(e.name) +
                                             " is not a name (accepted: a letter, then letters, "
                                             "digits and _; it names the group events/<name>)");
  for (size_t j = 0; j < k; ++j)
    if (events[j].name == e.name)
      throw ConfigError(key_of(k, "name"), "'" + e.name + "' is already the name of events[" +
                                               std::to_string(j) + "]; each event needs its own");
  if (e.max_records < 0 || e.max_records > tables::kMaxEventRecords)
    throw ConfigError(key_of(k, "max_records"),
                      "is " + std::to_string(e.max_records) + "; accepted: an integer in [0, " +
                          std::to_string(tables::kMaxEventRecords) +
                          "] (the crossings stored per trajectory; every crossing is counted)");
  if (e.subdivisions < 1 || e.subdivisions > kMaxEventSubdivisions)
    throw ConfigError(key_of(k, "subdivisions"),
                      "is " + std::to_string(e.subdivisions) + "; accepted: an integer in [1, " +
                          std::to_string(kMaxEventSubdivisions) +
                          "] (the parts of each step the function is sampled at)");
}

// ---------------------------------------------------------------------------
// Lowering an expression tree to the postfix program

class Lowering {
 public:
  Lowering(const std::vector<double>& param_values, const std::vector<bool>& varied)
      : params_(param_values), varied_(varied) {}

  struct Info {
    bool constant = true;  // reads none of t, q, qd, varied parameters: folded
    bool dynamic = false;  // reads t, q or qd
    int size = 1;          // instructions once lowered
    int stack = 1;         // stack slots its program needs
  };

  // the instructions, the stack and whether it reads t, q or qd, from the
  // leaves up (iteratively: the parser allows 10000 operations in a chain)
  const Info& analyse(const Expr& root) {
    std::vector<std::pair<const Expr*, bool>> todo = {{&root, false}};
    while (!todo.empty()) {
      auto [e, children_done] = todo.back();
      todo.pop_back();
      if (info_.count(e)) continue;
      if (!children_done) {
        todo.push_back({e, true});
        for (const auto& a : e->args) todo.push_back({a.get(), false});
        continue;
      }
      Info in;
      switch (e->op) {
        case Op::time:
        case Op::coord:
        case Op::rate:
          in.constant = false;
          in.dynamic = true;
          break;
        case Op::param: in.constant = !varied_[static_cast<size_t>(e->index)]; break;
        case Op::accel:  // the event scope refuses accelerations
          throw std::logic_error("an event expression with an acceleration");
        default: break;
      }
      for (const auto& a : e->args) {
        const Info& ai = info_.at(a.get());
        in.constant = in.constant && ai.constant;
        in.dynamic = in.dynamic || ai.dynamic;
      }
      if (!in.constant && !e->args.empty()) {
        // (a definition is emitted where it is used, each time: the count
        // stops at 2^24, far above the limit, so that a deep graph of them
        // cannot overflow it)
        in.size = 1;
        for (const auto& a : e->args) in.size = std::min(in.size + info_.at(a.get()).size, 1 << 24);
        in.stack = stack_of(*e);
      }
      info_[e] = in;
    }
    return info_.at(&root);
  }

  // the program of e (analysed) appended to out
  void emit(const Expr& e, std::vector<EventInstr>& out, int& fold_pos,
            std::string& fold_reason) const {
    const Info& in = info_.at(&e);
    if (in.constant) {
      model_file::Env env;
      env.p = params_.data();
      model_file::EvalFailure f;
      const double v = model_file::eval(e, env, &f);
      if (f.failed && fold_reason.empty()) {
        fold_pos = f.pos;
        fold_reason = f.reason;
      } else if (!std::isfinite(v) && fold_reason.empty()) {
        fold_pos = e.pos;
        fold_reason = "this constant part is not finite (" + model_file::short_number(v) + ")";
      }
      out.push_back({EventOp::constant, 0, v});
      return;
    }
    switch (e.op) {
      case Op::time: out.push_back({EventOp::time, 0, 0.0}); return;
      case Op::coord: out.push_back({EventOp::coord, e.index, 0.0}); return;
      case Op::rate: out.push_back({EventOp::rate, e.index, 0.0}); return;
      case Op::param: out.push_back({EventOp::varied_param, e.index, 0.0}); return;
      default: break;
    }
    if (e.args.size() == 2 && swapped(e)) {
      emit(*e.args[1], out, fold_pos, fold_reason);
      emit(*e.args[0], out, fold_pos, fold_reason);
    } else {
      for (const auto& a : e.args) emit(*a, out, fold_pos, fold_reason);
    }
    out.push_back({op_of(e), 0, 0.0});
  }

 private:
  const std::vector<double>& params_;
  const std::vector<bool>& varied_;
  std::unordered_map<const Expr*, Info> info_;

  static bool commutes(const Expr& e) { return e.op == Op::add || e.op == Op::mul; }

  // + and *: the operand that needs more stack first
  bool swapped(const Expr& e) const {
    return commutes(e) && info_.at(e.args[1].get()).stack > info_.at(e.args[0].get()).stack;
  }

  int stack_of(const Expr& e) const {
    if (e.args.size() == 1) return info_.at(e.args[0].get()).stack;
    int first = info_.at(e.args[0].get()).stack, second = info_.at(e.args[1].get()).stack;
    if (swapped(e)) std::swap(first, second);
    return std::max(first, second + 1);
  }

  static EventOp op_of(const Expr& e) {
    switch (e.op) {
      case Op::neg: return EventOp::neg;
      case Op::add: return EventOp::add;
      case Op::sub: return EventOp::sub;
      case Op::mul: return EventOp::mul;
      case Op::div: return EventOp::div;
      case Op::pow: return EventOp::pow;
      case Op::call: break;
      default: throw std::logic_error("event lowering: not an operation");
    }
    switch (e.fn) {
      case Fn::sin: return EventOp::sin;
      case Fn::cos: return EventOp::cos;
      case Fn::tan: return EventOp::tan;
      case Fn::exp: return EventOp::exp;
      case Fn::log: return EventOp::log;
      case Fn::sqrt: return EventOp::sqrt;
      case Fn::sinh: return EventOp::sinh;
      case Fn::cosh: return EventOp::cosh;
      case Fn::tanh: return EventOp::tanh;
      case Fn::abs: return EventOp::abs;
      case Fn::sign: return EventOp::sign;
      case Fn::atan2: return EventOp::atan2;
      case Fn::pow: return EventOp::pow;
    }
    throw std::logic_error("event lowering: unknown function");
  }
};

// The stack the program uses at most (its operands' arities as the
// interpreter reads them), -1 when it is malformed.
int stack_used(const EventFunction& f) {
  int sp = 0, most = 0;
  for (int k = 0; k < f.n_instr; ++k) {
    const EventOp op = f.instr[k].op;
    const int ar = (op >= EventOp::add && op <= EventOp::pow) || op == EventOp::atan2 ? 2
                   : op >= EventOp::neg                                               ? 1
                                                                                      : 0;
    if (sp < ar) return -1;
    sp = sp - ar + 1;
    most = std::max(most, sp);
  }
  return sp == 1 ? most : -1;
}

// What an expression is compiled for: an event's g (it must read t, q or
// qd) or an observable of [lyapunov] (it must read q or qd).
enum class ProgramUse { event, observable };

// expr (the value of key) compiled into f's program
void compile_expression(const std::string& expr, const std::string& key, ProgramUse use,
                        const model_file::Names& names, const std::vector<double>& param_values,
                        const std::vector<bool>& varied, EventFunction& f) {
  if (expr.empty())
    throw ConfigError(key,
                      "missing or empty (an expression of t, the coordinates, their rates "
                      "<coordinate>_dot and the parameters, e.g. \"sin(theta)\")");
  const model_file::Scope scope{&names, model_file::Context::event,
                                static_cast<int>(names.params.size())};
  model_file::ExprPtr tree;
  try {
    tree = model_file::parse_expression(expr, scope);
  } catch (const model_file::ExprError& err) {
    throw ConfigError(
        key, excerpt(expr, err.pos) + ": position " + std::to_string(err.pos) + ": " + err.reason);
  }
  Lowering low(param_values, varied);
  const Lowering::Info& in = low.analyse(*tree);
  if (!in.dynamic && use == ProgramUse::event)
    throw ConfigError(key, excerpt(expr) +
                               ": reads none of t, the coordinates and their rates, so it never "
                               "changes sign along a trajectory (an event function g(t, q, qd) "
                               "must use at least one of them)");
  const unsigned state_ops = (1u << static_cast<unsigned>(model_file::Op::coord)) |
                             (1u << static_cast<unsigned>(model_file::Op::rate));
  if (use == ProgramUse::observable && !(tree->ops & state_ops))
    throw ConfigError(key, excerpt(expr) +
                               ": reads none of the coordinates and their rates, so no tangent "
                               "vector changes it (an observable must use at least one of them)");
  if (in.size > kMaxEventInstrs)
    throw ConfigError(key, excerpt(expr) + ": too long: it compiles to " + std::to_string(in.size) +
                               " instructions, more than the " + std::to_string(kMaxEventInstrs) +
                               " an event function may have (each number, name, operation and "
                               "function call counts one; parts made of numbers, pi and "
                               "parameters that do not vary count one together)");
  if (in.stack > kMaxEventStack)
    throw ConfigError(key, excerpt(expr) + ": nested too deeply: it needs " +
                               std::to_string(in.stack) + " values on the evaluation stack, " +
                               "more than the " + std::to_string(kMaxEventStack) +
                               " an event function may use (each level of an operation whose "
                               "right operand is itself an operation, as in x^(y^(...)) or "
                               "a - (b - (...)), keeps one value waiting; nest less deeply)");
  std::vector<EventInstr> prog;
  int fold_pos = 0;
  std::string fold_reason;
  low.emit(*tree, prog, fold_pos, fold_reason);
  if (!fold_reason.empty())
    throw ConfigError(key, excerpt(expr, fold_pos) + ": position " + std::to_string(fold_pos) +
                               ": " + fold_reason +
                               " (numbers, pi and parameters that do not "
                               "vary are evaluated when the configuration is read)");
  if (prog.size() != static_cast<size_t>(in.size))
    throw std::logic_error("event lowering: program size differs from its analysis");
  f.n_instr = static_cast<int32_t>(prog.size());
  std::copy(prog.begin(), prog.end(), f.instr);
  if (stack_used(f) != in.stack)
    throw std::logic_error("event lowering: stack use differs from its analysis");
}

// Which of the model's parameters vary per trajectory.
std::vector<bool> varied_flags(const std::vector<std::string>& param_names,
                               const std::vector<double>& param_values,
                               const std::vector<std::string>& varied_params) {
  if (param_names.size() != param_values.size())
    throw std::invalid_argument("compile_event_table: " + std::to_string(param_names.size()) +
                                " parameter names, " + std::to_string(param_values.size()) +
                                " values");
  std::vector<bool> varied(param_names.size(), false);
  for (const auto& v : varied_params) {
    const int j = model_file::index_of(param_names, v);
    if (j < 0)
      throw std::invalid_argument("compile_event_table: varied parameter '" + v +
                                  "' is no parameter of the model");
    varied[static_cast<size_t>(j)] = true;
  }
  return varied;
}

// The names an expression may read: the coordinates, the parameters and a
// model file's [definitions].
model_file::Names names_of(const std::vector<std::string>& coordinates,
                           const std::vector<std::string>& param_names, const ModelSpec* model) {
  model_file::Names names;
  names.coords = coordinates;
  names.params = param_names;
  if (model)
    for (const auto& d : model->definitions) names.definitions.emplace(d.name, d.expr.tree);
  return names;
}

}  // namespace

EventTable compile_event_table(const std::vector<EventConfig>& events,
                               const std::vector<std::string>& coordinates,
                               const std::vector<std::string>& param_names,
                               const std::vector<double>& param_values,
                               const std::vector<std::string>& varied_params,
                               const ModelSpec* model) {
  if (events.size() > static_cast<size_t>(kMaxEvents))
    throw ConfigError("events", std::to_string(events.size()) + " [[events]] tables; at most " +
                                    std::to_string(kMaxEvents) + " events per run");
  const std::vector<bool> varied = varied_flags(param_names, param_values, varied_params);
  const model_file::Names names = names_of(coordinates, param_names, model);

  EventTable table{};  // every byte set: the table is copied to devices as it is
  table.n_events = static_cast<int32_t>(events.size());
  int32_t offset = 0;
  for (size_t k = 0; k < events.size(); ++k) {
    const EventConfig& e = events[k];
    check_entry(e, k, events);
    EventFunction& f = table.events[k];
    f.direction = choice(tables::kEventDirections, e.direction, key_of(k, "direction"));
    f.action = choice(tables::kEventActions, e.action, key_of(k, "action"));
    f.max_records = e.max_records;
    f.subdivisions = e.subdivisions;
    f.record_offset = offset;
    offset += e.max_records;  // at most kMaxEvents * kMaxEventRecords: fits
    compile_expression(e.expr, key_of(k, "expr"), ProgramUse::event, names, param_values, varied,
                       f);
  }
  table.records_per_trajectory = offset;
  return table;
}

ObservableTable compile_observable_table(const std::vector<std::string>& observables,
                                         const std::vector<std::string>& coordinates,
                                         const std::vector<std::string>& param_names,
                                         const std::vector<double>& param_values,
                                         const std::vector<std::string>& varied_params,
                                         const ModelSpec* model) {
  if (observables.empty() || observables.size() > static_cast<size_t>(kMaxObservables))
    throw ConfigError("lyapunov.observables", std::to_string(observables.size()) +
                                                  " expressions; accepted: 1 to " +
                                                  std::to_string(kMaxObservables));
  const std::vector<bool> varied = varied_flags(param_names, param_values, varied_params);
  const model_file::Names names = names_of(coordinates, param_names, model);
  ObservableTable table{};  // every byte set: the table is copied to devices as it is
  table.n_observables = static_cast<int32_t>(observables.size());
  for (size_t k = 0; k < observables.size(); ++k) {
    EventFunction& f = table.programs[k];
    compile_expression(observables[k], "lyapunov.observables[" + std::to_string(k) + "]",
                       ProgramUse::observable, names, param_values, varied, f);
    for (int i = 0; i < f.n_instr; ++i)
      if (f.instr[i].op == EventOp::varied_param)
        table.n_varied_read = std::max(table.n_varied_read, f.instr[i].index + 1);
  }
  return table;
}

}  // namespace nholo
