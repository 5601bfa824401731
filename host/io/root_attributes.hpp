// nholo/host/io/root_attributes.hpp — the root attributes of every file a run
// (or `nholo merge`) creates: what it is, how it was made and how it ended;
// the release and git revision of this nholo.
#pragma once

#include <string>

#include "host/config/config.hpp"
#include "host/io/device_info.hpp"
#include "host/io/h5.hpp"
#include "host/io/run_summary.hpp"

namespace nholo {

// The root attributes of a file a run writes: the run's identity (sum ==
// nullptr: the master at the start) and, with a summary, its outcome.
void write_root_attrs(h5::Group& root, const RunConfig& cfg, const DeviceInfo& di,
                      const RunSummary* sum);

// The current time, UTC: "2026-01-31T12:00:00Z"
std::string now_iso8601();

// The release and git revision nholo was built from (NHOLO_VERSION,
// NHOLO_GIT_REVISION of the build).
std::string nholo_version();
std::string nholo_git_revision();

}  // namespace nholo
