/* fbuf.h: element access and float32 staging for the CPU kernels of the
 * families that run float16/bfloat16 by computing in float32 (or float64 for
 * double) and rounding once: read or write one element of any float dtype,
 * copy a small parameter vector to double, widen a tensor to float32 and
 * narrow a float32 result back. */
#ifndef BD_FBUF_H
#define BD_FBUF_H

#include "util/common.h"
#include "util/dtype.h"

static inline double bd_ld_f(const void *p, int dt, int64_t i)
{
    switch (dt) {
    case BRAID_DTYPE_FLOAT: return ((const float *)p)[i];
    case BRAID_DTYPE_DOUBLE: return ((const double *)p)[i];
    case BRAID_DTYPE_FLOAT16: return bd_half_to_float_hd(((const uint16_t *)p)[i]);
    case BRAID_DTYPE_BFLOAT16: return bd_bf16_to_float(((const uint16_t *)p)[i]);
    default: return 0;
    }
}

static inline void bd_st_f(void *p, int dt, int64_t i, double v)
{
    switch (dt) {
    case BRAID_DTYPE_FLOAT: ((float *)p)[i] = (float)v; break;
    case BRAID_DTYPE_DOUBLE: ((double *)p)[i] = v; break;
    case BRAID_DTYPE_FLOAT16: ((uint16_t *)p)[i] = bd_float_to_half((float)v); break;
    case BRAID_DTYPE_BFLOAT16: ((uint16_t *)p)[i] = bd_float_to_bf16((float)v); break;
    default: break;
    }
}

/* The first n values of t (any float dtype) as doubles, bd_malloc'ed (NULL
 * when out of memory). */
static inline double *bd_load_d(const bd_tensor *t, int64_t n)
{
    double *d = bd_malloc((size_t)(n > 0 ? n : 1) * sizeof *d);
    if (d)
        for (int64_t i = 0; i < n; i++) d[i] = bd_ld_f(t->data, t->dtype, i);
    return d;
}

static inline int bd_is_half(int dt) { return dt == BRAID_DTYPE_FLOAT16 || dt == BRAID_DTYPE_BFLOAT16; }

/* n float16/bfloat16 values at p to float32 (dst), and back (rounded once). */
static inline void bd_widen(const void *p, int dt, float *dst, int64_t n)
{
    const uint16_t *h = p;
    if (dt == BRAID_DTYPE_FLOAT16)
        for (int64_t i = 0; i < n; i++) dst[i] = bd_half_to_float_hd(h[i]);
    else
        for (int64_t i = 0; i < n; i++) dst[i] = bd_bf16_to_float(h[i]);
}

static inline void bd_narrow(const float *src, void *p, int dt, int64_t n)
{
    uint16_t *h = p;
    if (dt == BRAID_DTYPE_FLOAT16)
        for (int64_t i = 0; i < n; i++) h[i] = bd_float_to_half(src[i]);
    else
        for (int64_t i = 0; i < n; i++) h[i] = bd_float_to_bf16(src[i]);
}

#endif /* BD_FBUF_H */
