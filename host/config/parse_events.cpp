// nholo/host/config/parse_events.cpp — the [[events]] array of a configuration
// after its model file's own: each table read (read_event_tables), its values
// and its expression checked by compile_event_table
// (host/model_language/event_compile.hpp), the code that compiles them for
// the run, so that the configuration accepts exactly what a run can
// evaluate. Keys are named events[k].<key>, k counted from 0 in the order
// written.
#include <string>
#include <vector>

#include "host/config/config_parse.hpp"
#include "host/config/event_table.hpp"
#include "host/config/model_info.hpp"
#include "host/model_language/model_file.hpp"

namespace nholo::config_parse {

namespace {

std::string entry_key(const std::string& key, size_t k) {
  return key + "[" + std::to_string(k) + "]";
}

}  // namespace

void check_event_keys(const toml::table& root) {
  const toml::node* n = root.get("events");
  if (!n || !n->is_array()) return;  // the type is parse_events' to report
  check_event_table_keys(*n->as_array(), "events");
}

void parse_events(const toml::table& root, const ModelInfo& mi, RunConfig& cfg) {
  cfg.events.clear();
  // a model file's own events first (checked when it was read)
  const std::vector<EventConfig> model_events =
      cfg.model_spec ? cfg.model_spec->events : std::vector<EventConfig>{};
  const toml::node* n = root.get("events");
  std::vector<EventConfig> own = n ? read_event_tables(*n, "events") : std::vector<EventConfig>{};
  if (model_events.size() + own.size() > static_cast<size_t>(kMaxEvents))
    throw ConfigError("events", std::to_string(own.size()) + " [[events]] tables and " +
                                    std::to_string(model_events.size()) +
                                    " of the model file; at most " + std::to_string(kMaxEvents) +
                                    " events per run");
  for (size_t k = 0; k < own.size(); ++k)
    for (const EventConfig& m : model_events)
      if (own[k].name == m.name)
        throw ConfigError(entry_key("events", k) + ".name",
                          "'" + m.name + "' is an event of model " + cfg.model +
                              " already (declared in its model file); each event's name is "
                              "unique");
  // every value and expression of the configuration's own entries checked as
  // the run will compile them (keys events[k] as written)
  (void)compile_run_events(own, mi, cfg);
  cfg.events = model_events;
  cfg.events.insert(cfg.events.end(), own.begin(), own.end());
}

}  // namespace nholo::config_parse

namespace nholo {

namespace {

// The model's parameter names and cfg's values of them, in the model's order.
struct RunParams {
  std::vector<std::string> names;
  std::vector<double> values;
};
RunParams run_params(const ModelInfo& mi, const RunConfig& cfg) {
  RunParams r;
  for (const auto& p : mi.params) {
    r.names.push_back(p.name);
    r.values.push_back(cfg.params.at(p.name));
  }
  return r;
}

}  // namespace

EventTable compile_run_events(const std::vector<EventConfig>& events, const ModelInfo& mi,
                              const RunConfig& cfg) {
  const RunParams p = run_params(mi, cfg);
  return compile_event_table(events, mi.coordinates, p.names, p.values, cfg.varied_params,
                             cfg.model_spec.get());
}

ObservableTable compile_run_observables(const std::vector<std::string>& observables,
                                        const ModelInfo& mi, const RunConfig& cfg) {
  const RunParams p = run_params(mi, cfg);
  return compile_observable_table(observables, mi.coordinates, p.names, p.values, cfg.varied_params,
                                  cfg.model_spec.get());
}

}  // namespace nholo
