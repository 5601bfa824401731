// nholo/host/model_language/model_catalog.cpp — the config's view of model
// files (host/config/model_catalog.hpp): a [model] table parsed into its spec
// and description, a model file's text read; the model language's errors
// turned into the configuration's (key model).
#include "host/config/model_catalog.hpp"

#include <utility>

#include "host/config/config.hpp"
#include "host/model_language/model_file.hpp"

namespace nholo {

ModelFileModel model_file_model(const toml::table& mt, const std::string& model_source,
                                const std::vector<std::string>& builtin) {
  ModelSpec spec;
  try {
    spec = parse_model_table(mt, model_source, builtin);
  } catch (const ModelFileError& e) {
    throw ModelConfigError("model", e.what());
  }
  ModelFileModel m;
  m.spec = std::make_shared<const ModelSpec>(std::move(spec));
  m.info = model_info_from_spec(*m.spec);
  return m;
}

std::string model_file_text(const std::string& path) {
  try {
    return read_model_file_text(path);
  } catch (const ModelFileError& e) {
    throw ModelConfigError("model", e.what());
  }
}

}  // namespace nholo
