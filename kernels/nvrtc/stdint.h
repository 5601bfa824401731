// nholo/kernels/nvrtc/stdint.h — for NVRTC (see type_traits here): the
// fixed-width integers of a 64-bit Linux host (LP64), so that structures
// shared with host code (kernels/ensemble.hpp) have the host's types.
#pragma once

typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long int64_t;
typedef unsigned long uint64_t;
