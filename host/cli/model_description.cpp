// nholo/host/cli/model_description.cpp — describe_model
// (host/cli/model_description.hpp).
#include "host/cli/model_description.hpp"

#include <iomanip>

#include "host/config/config.hpp"

namespace nholo {

void describe_model(std::ostream& os, const ModelInfo& mi) {
  os << mi.name << " — " << mi.description << "\n";
  os << "  coordinates: ";
  for (int i = 0; i < mi.n; ++i)
    os << (i ? ", " : "") << mi.coordinates[i]
       << (mi.coordinate_units.empty() ? "" : " [" + mi.coordinate_units[i] + "]");
  os << "\n";
  os << "  constraints: ";
  for (int l = 0; l < mi.m; ++l)
    os << (l ? ", " : "") << mi.constraints[l] << " (" << mi.constraint_kinds[l] << ")";
  os << "\n  formulations: " << join(mi.formulations) << "\n";
  os << "  parameters:";
  if (mi.params.empty()) os << " none";
  os << "\n";
  for (const auto& p : mi.params)
    os << "    " << std::left << std::setw(12) << p.name << " = " << std::setw(8) << p.default_value
       << " [" << p.unit << "]  " << p.doc << (p.range_text().empty() ? "" : "; " + p.range_text())
       << (p.derived.empty() ? "" : "; derived: " + p.derived) << "\n";
}

}  // namespace nholo
