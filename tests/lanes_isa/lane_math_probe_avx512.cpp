// The lanes' math probe compiled for avx512 (flags: CMakeLists.txt, test_lanes).
#define NHOLO_PROBE_NAME lane_math_probe_avx512
#include "tests/lanes_isa/lane_math_probe.inc"
