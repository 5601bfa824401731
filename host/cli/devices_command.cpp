// nholo/host/cli/devices_command.cpp — `nholo devices`: the backends built in
// and the CUDA devices visible (host/run/device_choice.hpp; main.cpp adds the
// MPI library's line).
#include <sstream>

#include "host/cli/commands.hpp"
#include "host/io/root_attributes.hpp"
#include "host/run/device_choice.hpp"

namespace nholo {

std::string devices_command() {
  std::ostringstream os;
  os << "nholo " << nholo_version() << " (" << nholo_git_revision() << ")\n";
  os << describe_backends();
  return os.str();
}

}  // namespace nholo
