// The lanes' math probe compiled for baseline (flags: CMakeLists.txt, test_lanes).
#define NHOLO_PROBE_NAME lane_math_probe_baseline
#include "tests/lanes_isa/lane_math_probe.inc"
