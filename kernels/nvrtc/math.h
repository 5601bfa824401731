// nholo/kernels/nvrtc/math.h — for NVRTC (see type_traits here): its math
// functions are built in; kernels/ need the macros NAN and HUGE_VAL.
#pragma once

#ifndef NAN
#define NAN (__longlong_as_double(0x7ff8000000000000LL))
#endif
#ifndef HUGE_VAL
#define HUGE_VAL (__longlong_as_double(0x7ff0000000000000LL))
#endif
