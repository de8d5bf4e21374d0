/* cast.h: the parsed attributes of Cast and CastLike (n->params) and the
 * element conversions, host/device, that the CPU and CUDA kernels share.
 *
 * The rules (onnx's reference: numpy and ml_dtypes astype):
 * - float to integer truncates toward zero; the spec leaves values out of the
 *   target's range undefined: braid goes through int64 (saturating, NaN 0)
 *   and keeps the low bits, which is what numpy gives for every value
 *   inside int64 (and what the 2- and 4-bit types need: 9 -> int4 -7);
 * - integer to integer keeps the low bits (two's complement), sign-extended
 *   for the signed 2- and 4-bit types;
 * - to bool: nonzero (NaN too) is true;
 * - to a float type: to nearest even. float16 rounds a double once, as numpy
 *   does (the double first becomes a float rounded to odd, which then rounds
 *   to float16 exactly as the direct rounding would); bfloat16, float8,
 *   float4 and float6 round a double to float first, then to the type, as
 *   ml_dtypes does (1 + 2^-8 + 2^-40 gives bfloat16 1, not 1 + 2^-7);
 * - the float8 kinds saturate to their largest finite value when saturate=1
 *   (infinities too, NaN stays NaN); float8e8m0 rounds by round_mode. */
#ifndef BD_CAST_H
#define BD_CAST_H

#include <math.h>
#include <stdint.h>

#include "util/dtype.h"

typedef struct bd_cast_params {
    int to;         /* Cast: the target braid_dtype (CastLike: from input 1) */
    int saturate;   /* float8 targets (opset 19) */
    int round_mode; /* bd_round_mode, float8e8m0 targets (opset 24) */
} bd_cast_params;

/* float -> int64: toward zero, NaN 0, saturating (defined for every input). */
static inline BD_HOST_DEVICE int64_t bd_cast_f2i(double x)
{
    if (!(x == x)) return 0;
    if (x >= 9223372036854775808.0) return INT64_MAX;
    if (x <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)x;
}

/* float -> uint64: [2^63, 2^64) directly, saturating above; the rest
 * through int64 (negatives wrap, as numpy gives). */
static inline BD_HOST_DEVICE uint64_t bd_cast_f2u(double x)
{
    if (x >= 18446744073709551616.0) return UINT64_MAX;
    if (x >= 9223372036854775808.0) return (uint64_t)(x - 9223372036854775808.0) + ((uint64_t)1 << 63);
    return (uint64_t)bd_cast_f2i(x);
}

/* double -> float rounded to odd (truncate, then set the last bit when
 * inexact): a later rounding to any type of at most 22 fraction bits then
 * equals the direct rounding of x. */
static inline BD_HOST_DEVICE float bd_cast_f64_to_f32_odd(double x)
{
    float f = (float)x;
    if (!(f == f) || (double)f == x) return f;
    uint32_t u = bd_f32_bits(f);
    if ((u & 0x7fffffffu) == 0x7f800000u) u -= 1;            /* overflowed: the largest finite */
    else if (fabs((double)f) > fabs(x)) u -= 1;               /* rounded up in magnitude: truncate */
    return bd_bits_f32(u | 1u);
}

/* Stores float v as element i of a narrow float buffer of dtype dt, with
 * Cast's saturate and round_mode. */
static inline BD_HOST_DEVICE void bd_cast_store_narrow(int dt, void *p, int64_t i, float v, int saturate, int mode)
{
    if (dt == BRAID_DTYPE_BFLOAT16) ((uint16_t *)p)[i] = bd_float_to_bf16(v);
    else if (dt == BRAID_DTYPE_FLOAT16) ((uint16_t *)p)[i] = bd_float_to_half(v);
    else if (dt == BRAID_DTYPE_FLOAT8E8M0) ((uint8_t *)p)[i] = bd_float_to_e8m0(v, saturate, (bd_round_mode)mode);
    else {
        bd_mf_format f = bd_minifloat_format(dt, 0);
        if (saturate && dt >= BRAID_DTYPE_FLOAT8E4M3FN && dt <= BRAID_DTYPE_FLOAT8E5M2FNUZ) { /* NaN passes */
            float m = bd_minifloat_max(&f);
            v = v > m ? m : v < -m ? -m : v;
        }
        ((uint8_t *)p)[i] = bd_float_to_minifloat(&f, v);
    }
}

/* A value between load and store: an integer (kind 1: i, kind 2: u for
 * uint64) or a float (kind 0: d). */
typedef struct bd_cast_val {
    int kind;
    int64_t i;
    uint64_t u;
    double d;
} bd_cast_val;

/* Element i of a buffer of dtype dt (any numeric type braid has). */
static inline BD_HOST_DEVICE bd_cast_val bd_cast_load(int dt, const void *p, int64_t i)
{
    bd_cast_val v = {1, 0, 0, 0};
    switch (dt) {
    case BRAID_DTYPE_FLOAT: v.kind = 0; v.d = ((const float *)p)[i]; break;
    case BRAID_DTYPE_DOUBLE: v.kind = 0; v.d = ((const double *)p)[i]; break;
    case BRAID_DTYPE_FLOAT16: v.kind = 0; v.d = bd_half_to_float_hd(((const uint16_t *)p)[i]); break;
    case BRAID_DTYPE_INT8: case BRAID_DTYPE_INT4: case BRAID_DTYPE_INT2: v.i = ((const int8_t *)p)[i]; break;
    case BRAID_DTYPE_INT16: v.i = ((const int16_t *)p)[i]; break;
    case BRAID_DTYPE_INT32: v.i = ((const int32_t *)p)[i]; break;
    case BRAID_DTYPE_INT64: v.i = ((const int64_t *)p)[i]; break;
    case BRAID_DTYPE_UINT8: case BRAID_DTYPE_BOOL: case BRAID_DTYPE_UINT4: case BRAID_DTYPE_UINT2:
        v.i = ((const uint8_t *)p)[i];
        break;
    case BRAID_DTYPE_UINT16: v.i = ((const uint16_t *)p)[i]; break;
    case BRAID_DTYPE_UINT32: v.i = ((const uint32_t *)p)[i]; break;
    case BRAID_DTYPE_UINT64: v.kind = 2; v.u = ((const uint64_t *)p)[i]; v.i = (int64_t)v.u; break;
    default: v.kind = 0; v.d = bd_narrow_to_float(dt, p, i); break;
    }
    return v;
}

/* The value as a float (an integer rounded once). */
static inline BD_HOST_DEVICE double bd_cast_as_f64(bd_cast_val v)
{
    return v.kind == 0 ? v.d : v.kind == 2 ? (double)v.u : (double)v.i;
}

/* Stores v as element i of a buffer of dtype dt. */
static inline BD_HOST_DEVICE void bd_cast_store(int dt, void *p, int64_t i, bd_cast_val v, int saturate, int mode)
{
    /* the integer bits: the value's own, or the float truncated through int64 */
    uint64_t bits = v.kind == 0 ? (dt == BRAID_DTYPE_UINT64 ? bd_cast_f2u(v.d) : (uint64_t)bd_cast_f2i(v.d))
                                : (uint64_t)v.i;
    switch (dt) {
    case BRAID_DTYPE_FLOAT: ((float *)p)[i] = v.kind == 0 ? (float)v.d : v.kind == 2 ? (float)v.u : (float)v.i; break;
    case BRAID_DTYPE_DOUBLE: ((double *)p)[i] = bd_cast_as_f64(v); break;
    case BRAID_DTYPE_BOOL: ((uint8_t *)p)[i] = v.kind == 0 ? v.d != 0 : v.i != 0; break;
    case BRAID_DTYPE_INT8: case BRAID_DTYPE_UINT8: ((uint8_t *)p)[i] = (uint8_t)bits; break;
    case BRAID_DTYPE_INT16: case BRAID_DTYPE_UINT16: ((uint16_t *)p)[i] = (uint16_t)bits; break;
    case BRAID_DTYPE_INT32: case BRAID_DTYPE_UINT32: ((uint32_t *)p)[i] = (uint32_t)bits; break;
    case BRAID_DTYPE_INT64: case BRAID_DTYPE_UINT64: ((uint64_t *)p)[i] = bits; break;
    /* the 2- and 4-bit integers: the low bits, sign-extended for the signed ones */
    case BRAID_DTYPE_INT4: ((int8_t *)p)[i] = (int8_t)((int)(bits & 15u) - ((bits & 8u) ? 16 : 0)); break;
    case BRAID_DTYPE_INT2: ((int8_t *)p)[i] = (int8_t)((int)(bits & 3u) - ((bits & 2u) ? 4 : 0)); break;
    case BRAID_DTYPE_UINT4: ((uint8_t *)p)[i] = (uint8_t)(bits & 15u); break;
    case BRAID_DTYPE_UINT2: ((uint8_t *)p)[i] = (uint8_t)(bits & 3u); break;
    default: { /* float16, bfloat16, float8, float4, float6, float8e8m0 */
        double d = bd_cast_as_f64(v);
        if (saturate && dt >= BRAID_DTYPE_FLOAT8E4M3FN && dt <= BRAID_DTYPE_FLOAT8E5M2FNUZ) {
            bd_mf_format f = bd_minifloat_format(dt, 0); /* clamp in double: 1e39 is not inf first */
            double m = bd_minifloat_max(&f);
            d = d > m ? m : d < -m ? -m : d;
        }
        bd_cast_store_narrow(dt, p, i, dt == BRAID_DTYPE_FLOAT16 ? bd_cast_f64_to_f32_odd(d) : (float)d, saturate, mode);
        break;
    }
    }
}

/* One element: src[i] of dtype sd to dst[i] of dtype dd. */
static inline BD_HOST_DEVICE void bd_cast_elem(int sd, const void *src, int dd, void *dst, int64_t i, int saturate,
                                               int mode)
{
    bd_cast_store(dd, dst, i, bd_cast_load(sd, src, i), saturate, mode);
}

#endif /* BD_CAST_H */
