/* vmath.h: the vectorizable float32 math of the CPU kernels, which lives in
 * src/ops/vmath.h (host/device, so that the CUDA kernels share it). */
#ifndef BD_CPU_VMATH_H
#define BD_CPU_VMATH_H
#include "ops/vmath.h"
#endif
