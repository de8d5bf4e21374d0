/* generate.h: the generate family's parsed attributes (Constant,
 * ConstantOfShape, Range) and Range's element formula, shared by
 * src/ops/generate.c and both backends' kernels. */
#ifndef BD_OPS_GENERATE_H
#define BD_OPS_GENERATE_H

#include <string.h>

#include "ops.h"

typedef struct bd_generate_params {
    int64_t stash_type;     /* Range: the type float16/bfloat16 values are computed in */
    bd_tensor value;        /* Constant: the tensor (data points to bytes);
                               ConstantOfShape: dtype and 1 element */
    size_t nbytes;
    unsigned char bytes[];  /* nbytes */
} bd_generate_params;

/* Range's floating-point values as onnx's reference makes them (numpy's
 * arange in a compute type C, then one rounding to the output type): element
 * 0 is start, element 1 is next = C(start + delta) (the sum rounded to C),
 * and element i >= 2 is start + i * (next - start), each operation rounded to
 * C (never an fma). The compute type is double for float32 and float64, and
 * for float16/bfloat16 the stash_type (float from opset 27 by default;
 * double before, as the reference computes there). */
static inline BD_HOST_DEVICE double bd_range_f64(double start, double next, int64_t i)
{
    if (i == 0) return start;
    if (i == 1) return next;
#ifdef __CUDA_ARCH__
    return __dadd_rn(start, __dmul_rn((double)i, __dsub_rn(next, start)));
#else
    return start + (double)i * (next - start);
#endif
}

static inline BD_HOST_DEVICE float bd_range_f32(float start, float next, int64_t i)
{
    if (i == 0) return start;
    if (i == 1) return next;
#ifdef __CUDA_ARCH__
    return __fadd_rn(start, __fmul_rn((float)i, __fsub_rn(next, start)));
#else
    return start + (float)i * (next - start);
#endif
}

/* A double rounded to float with round-to-odd: rounding that float once more
 * to a type of at most 22 significant bits (float16, bfloat16) gives the same
 * result as rounding the double directly (no double-rounding error). */
static inline BD_HOST_DEVICE float bd_f64_to_f32_odd(double v)
{
    float f = (float)v;
    if ((double)f == v || v != v) return f;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if (!(u & 1u)) { /* even: step to the neighbour on v's side (v lies between the two) */
        double av = v < 0 ? -v : v, af = f < 0 ? -(double)f : (double)f;
        if (av > af) u += 1u; /* away from zero */
        else u -= 1u;
    }
    memcpy(&f, &u, sizeof f);
    return f;
}

#endif /* BD_OPS_GENERATE_H */
