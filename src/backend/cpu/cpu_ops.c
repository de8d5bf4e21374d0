/* cpu_ops.c: dispatch from a node to its family's CPU kernel, and helpers
 * that several kernel families share. */
#include "cpu_ops.h"

#include <stdatomic.h>
#include <string.h>

#include "util/dtype.h"

typedef braid_status (*cpu_fn)(const bd_kernel *);
static const cpu_fn families[BD_FAM_COUNT] = {
#define X(f) bd_cpu_##f,
    BD_FAMILIES(X)
#undef X
};

braid_status bd_cpu_run(const bd_kernel *k)
{
    return families[bd_op_table[k->node->op].family](k);
}

void bd_broadcast_strides(const bd_tensor *in, const bd_tensor *out, int64_t *strides)
{
    int64_t s = 1;
    for (int i = out->rank - 1; i >= 0; i--) {
        int j = i - (out->rank - in->rank);
        if (j < 0) { strides[i] = 0; continue; }
        strides[i] = in->dims[j] == 1 && out->dims[i] != 1 ? 0 : s;
        s *= in->dims[j];
    }
}

double bd_get_f64(const bd_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case BRAID_DTYPE_FLOAT: return ((const float *)t->data)[i];
    case BRAID_DTYPE_DOUBLE: return ((const double *)t->data)[i];
    case BRAID_DTYPE_INT64: return (double)((const int64_t *)t->data)[i];
    case BRAID_DTYPE_INT32: return ((const int32_t *)t->data)[i];
    case BRAID_DTYPE_INT16: return ((const int16_t *)t->data)[i];
    case BRAID_DTYPE_INT8: return ((const int8_t *)t->data)[i];
    case BRAID_DTYPE_UINT8: case BRAID_DTYPE_BOOL: return ((const uint8_t *)t->data)[i];
    case BRAID_DTYPE_UINT16: return ((const uint16_t *)t->data)[i];
    case BRAID_DTYPE_UINT32: return ((const uint32_t *)t->data)[i];
    case BRAID_DTYPE_UINT64: return (double)((const uint64_t *)t->data)[i];
    case BRAID_DTYPE_FLOAT16: return bd_half_to_float(((const uint16_t *)t->data)[i]);
    case BRAID_DTYPE_INT4: case BRAID_DTYPE_INT2: return ((const int8_t *)t->data)[i];
    case BRAID_DTYPE_UINT4: case BRAID_DTYPE_UINT2: return ((const uint8_t *)t->data)[i];
    default:
        if (bd_dtype_is_narrow_float(t->dtype)) return bd_narrow_to_float(t->dtype, t->data, i);
        return 0;
    }
}

void bd_set_f64(bd_tensor *t, int64_t i, double v)
{
    switch (t->dtype) {
    case BRAID_DTYPE_FLOAT: ((float *)t->data)[i] = (float)v; break;
    case BRAID_DTYPE_DOUBLE: ((double *)t->data)[i] = v; break;
    case BRAID_DTYPE_INT64: ((int64_t *)t->data)[i] = (int64_t)v; break;
    case BRAID_DTYPE_INT32: ((int32_t *)t->data)[i] = (int32_t)v; break;
    case BRAID_DTYPE_INT16: ((int16_t *)t->data)[i] = (int16_t)v; break;
    case BRAID_DTYPE_INT8: ((int8_t *)t->data)[i] = (int8_t)v; break;
    case BRAID_DTYPE_UINT8: ((uint8_t *)t->data)[i] = (uint8_t)v; break;
    case BRAID_DTYPE_BOOL: ((uint8_t *)t->data)[i] = v != 0; break;
    case BRAID_DTYPE_FLOAT16: ((uint16_t *)t->data)[i] = bd_float_to_half((float)v); break;
    case BRAID_DTYPE_UINT16: ((uint16_t *)t->data)[i] = (uint16_t)v; break;
    case BRAID_DTYPE_UINT32: ((uint32_t *)t->data)[i] = (uint32_t)v; break;
    case BRAID_DTYPE_UINT64: ((uint64_t *)t->data)[i] = (uint64_t)v; break;
    case BRAID_DTYPE_INT4: case BRAID_DTYPE_INT2: ((int8_t *)t->data)[i] = (int8_t)v; break;
    case BRAID_DTYPE_UINT4: case BRAID_DTYPE_UINT2: ((uint8_t *)t->data)[i] = (uint8_t)v; break;
    default:
        if (bd_dtype_is_narrow_float(t->dtype)) bd_float_to_narrow(t->dtype, t->data, i, (float)v);
        break;
    }
}

static _Atomic int vec_cap = 2; /* bd_cpu_vec_cap */

int bd_cpu_vec_level(void)
{
    static _Atomic int lvl = -1; /* the same answer for every thread, stored atomically */
    int l = atomic_load_explicit(&lvl, memory_order_relaxed);
    if (l < 0) {
        __builtin_cpu_init();
        l = __builtin_cpu_supports("avx512f") ? 2 : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        atomic_store_explicit(&lvl, l, memory_order_relaxed);
    }
    int cap = atomic_load_explicit(&vec_cap, memory_order_relaxed);
    return l < cap ? l : cap;
}

void bd_cpu_vec_cap(int level) { atomic_store_explicit(&vec_cap, level, memory_order_relaxed); }

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

/* 16 at a time from two loads and one permute while src[2 j + 31] is still
 * among the n; the last 1 to 16 from loads masked to src[2 (n - 1)] (masked
 * lanes are neither read nor faulted). */
__attribute__((target("avx512f"))) static void gather2_512(float *dst, const float *src, int64_t n)
{
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    int64_t j = 0;
    for (; j + 17 <= n; j += 16)
        _mm512_storeu_ps(dst + j, _mm512_permutex2var_ps(_mm512_loadu_ps(src + 2 * j), even,
                                                         _mm512_loadu_ps(src + 2 * j + 16)));
    if (j < n) {
        int64_t c = 2 * (n - j) - 1;
        __mmask16 lo = (__mmask16)(c >= 16 ? 0xFFFF : (1u << c) - 1), hi = (__mmask16)(c > 16 ? (1u << (c - 16)) - 1 : 0);
        __m512 v = _mm512_permutex2var_ps(_mm512_maskz_loadu_ps(lo, src + 2 * j), even,
                                          _mm512_maskz_loadu_ps(hi, src + 2 * j + 16));
        _mm512_mask_storeu_ps(dst + j, (__mmask16)((1u << (n - j)) - 1), v);
    }
}
#endif

void bd_gather2_f32(float *dst, const float *src, int64_t n)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (bd_cpu_vec_level() == 2) {
        gather2_512(dst, src, n);
        return;
    }
#endif
    for (int64_t j = 0; j < n; j++) dst[j] = src[2 * j];
}
