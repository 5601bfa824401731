// nholo/host/cli/model_description.hpp — the text that describes one model
// (coordinates, constraints, formulations, parameters), shared by `nholo
// models` and `nholo model check|build`.
#pragma once

#include <ostream>

#include "host/config/model_info.hpp"

namespace nholo {

// "NAME — description" and the indented lines that follow it.
void describe_model(std::ostream& os, const ModelInfo& mi);

}  // namespace nholo
