/* dtype.h: conversions between float and the narrow element types: bfloat16,
 * the float8 kinds, float4 and float6 (as minifloats), and the helpers for
 * the sub-byte integers. Host/device inline, so that the CPU kernels, the
 * CUDA kernels and the loader share one definition of every rounding.
 *
 * In memory braid keeps one element of a sub-byte type per byte: INT4 and
 * INT2 sign-extended (an int8 value), UINT4 and UINT2 zero-extended, and
 * FLOAT4E2M1, FLOAT6E2M3, FLOAT6E3M2 as their code in the low bits. ONNX's
 * packed form exists only in TensorProto (src/onnx/tensor.c unpacks it).
 *
 * Float to narrow float rounds to nearest even, as ml_dtypes' astype does
 * (onnx's reference): a value out of range becomes infinity where the type
 * has one (FLOAT8E5M2), NaN where it has only NaN (the float8 FN and FNUZ
 * kinds), and the largest value where it has neither (float4, float6). NaN
 * becomes the type's NaN, or the negative-zero code for float4/float6 (as
 * ml_dtypes does). Saturation (Cast's saturate=1) is the caller's clamp
 * before the conversion: bd_minifloat_max gives the bound. */
#ifndef BD_DTYPE_H
#define BD_DTYPE_H

#include <stdint.h>
#include <string.h>

#include "util/common.h"

#ifdef __cplusplus
extern "C" {
#endif

static inline BD_HOST_DEVICE uint32_t bd_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}
static inline BD_HOST_DEVICE float bd_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* ---- float16 ---------------------------------------------------------------- */

/* float -> IEEE half, rounding to nearest even (half -> float: bd_half_to_float
 * in common.h, or bd_half_to_float_hd here for device code). */
static inline BD_HOST_DEVICE uint16_t bd_float_to_half(float f)
{
    uint32_t x, ax;
    x = bd_f32_bits(f);
    uint16_t s = (uint16_t)((x >> 16) & 0x8000);
    ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return s | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0); /* inf, nan */
    if (ax >= 0x477ff000u) return s | 0x7c00; /* 65520 and up round to inf */
    if (ax < 0x38800000u) {                   /* below 2^-14: a subnormal half */
        float a, q, frac;
        a = bd_bits_f32(ax);
        q = a * 0x1p24f;
        uint32_t r = (uint32_t)q;
        frac = q - (float)r;
        if (frac > 0.5f || (frac == 0.5f && (r & 1))) r++;
        return (uint16_t)(s | r);
    }
    uint32_t h = (((ax >> 23) - 112) << 10) | ((ax & 0x7fffff) >> 13), rem = ax & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++;
    return (uint16_t)(s | h);
}

static inline BD_HOST_DEVICE float bd_half_to_float_hd(uint16_t h)
{
    uint32_t s = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e == 0) {
        float f = (float)m * 0x1p-24f; /* zero or subnormal */
        return s ? -f : f;
    }
    return bd_bits_f32(e == 31 ? s | 0x7f800000u | (m << 13) : s | ((e + 112) << 23) | (m << 13));
}

/* ---- bfloat16 ---------------------------------------------------------------- */

static inline BD_HOST_DEVICE float bd_bf16_to_float(uint16_t h) { return bd_bits_f32((uint32_t)h << 16); }

/* Round to nearest even; NaN stays a quiet NaN of the same sign. */
static inline BD_HOST_DEVICE uint16_t bd_float_to_bf16(float f)
{
    uint32_t u = bd_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* ---- minifloats: float8, float4, float6 -------------------------------------- */

/* How a minifloat spends its special codes. */
typedef enum bd_mf_kind {
    BD_MF_IEEE = 0, /* the top exponent is inf (mantissa 0) and NaN (FLOAT8E5M2) */
    BD_MF_FN = 1,   /* no inf; the all-ones code of each sign is NaN (FLOAT8E4M3FN) */
    BD_MF_FNUZ = 2, /* no inf, no -0; 0x80 is the one NaN (the FNUZ float8 kinds) */
    BD_MF_FINITE = 3 /* every code is a number (float4, float6) */
} bd_mf_kind;

typedef struct bd_mf_format {
    int ebits, mbits, bias;
    bd_mf_kind kind;
    uint8_t max_code; /* the largest finite code, sign bit clear */
} bd_mf_format;

/* The format of a minifloat dtype; *ok = 0 (and a zero format) for any
 * other dtype. */
static inline BD_HOST_DEVICE bd_mf_format bd_minifloat_format(int dtype, int *ok)
{
    bd_mf_format f = {0, 0, 0, BD_MF_IEEE, 0};
    int known = 1;
    switch (dtype) { /* e, m, bias, kind, the largest finite code */
    case 17: f = (bd_mf_format){4, 3, 7, BD_MF_FN, 0x7e}; break;      /* FLOAT8E4M3FN */
    case 18: f = (bd_mf_format){4, 3, 8, BD_MF_FNUZ, 0x7f}; break;    /* FLOAT8E4M3FNUZ */
    case 19: f = (bd_mf_format){5, 2, 15, BD_MF_IEEE, 0x7b}; break;   /* FLOAT8E5M2 */
    case 20: f = (bd_mf_format){5, 2, 16, BD_MF_FNUZ, 0x7f}; break;   /* FLOAT8E5M2FNUZ */
    case 23: f = (bd_mf_format){2, 1, 1, BD_MF_FINITE, 0x7}; break;   /* FLOAT4E2M1 */
    case 27: f = (bd_mf_format){2, 3, 1, BD_MF_FINITE, 0x1f}; break;  /* FLOAT6E2M3 */
    case 28: f = (bd_mf_format){3, 2, 3, BD_MF_FINITE, 0x1f}; break;  /* FLOAT6E3M2 */
    default: known = 0; break;
    }
    if (ok) *ok = known;
    return f;
}

static inline BD_HOST_DEVICE float bd_minifloat_to_float(const bd_mf_format *f, uint8_t c)
{
    int bits = f->ebits + f->mbits;
    uint32_t sign = (c >> bits) & 1u, e = (c >> f->mbits) & ((1u << f->ebits) - 1u), m = c & ((1u << f->mbits) - 1u);
    uint32_t mag = c & ((1u << bits) - 1u);
    if (f->kind == BD_MF_FNUZ && sign && mag == 0) return bd_bits_f32(0x7fc00000u);
    if (f->kind == BD_MF_FN && mag == ((1u << bits) - 1u)) return bd_bits_f32(0x7fc00000u | sign << 31);
    if (f->kind == BD_MF_IEEE && e == (1u << f->ebits) - 1u)
        return bd_bits_f32((m ? 0x7fc00000u : 0x7f800000u) | sign << 31);
    float v;
    if (e == 0) v = (float)m * bd_bits_f32((uint32_t)(127 + 1 - f->bias - f->mbits) << 23);
    else v = (float)((1u << f->mbits) | m) * bd_bits_f32((uint32_t)(127 + (int)e - f->bias - f->mbits) << 23);
    return sign ? -v : v;
}

/* The largest finite value of the format. */
static inline BD_HOST_DEVICE float bd_minifloat_max(const bd_mf_format *f)
{
    return bd_minifloat_to_float(f, f->max_code);
}

/* Round to nearest even (see the top of this file for out-of-range and NaN). */
static inline BD_HOST_DEVICE uint8_t bd_float_to_minifloat(const bd_mf_format *f, float x)
{
    int bits = f->ebits + f->mbits, M = f->mbits;
    uint32_t u = bd_f32_bits(x), ax = u & 0x7fffffffu, sign = u >> 31;
    uint8_t sbit = (uint8_t)(1u << bits);
    uint8_t nan = f->kind == BD_MF_IEEE ? (uint8_t)(((1u << f->ebits) - 1u) << M | 2u) /* 0x7e */
                  : f->kind == BD_MF_FN ? (uint8_t)((1u << bits) - 1u)                /* 0x7f */
                  : f->kind == BD_MF_FNUZ ? (uint8_t)0x80 : sbit;                     /* -0 */
    uint8_t inf = f->kind == BD_MF_IEEE ? (uint8_t)(((1u << f->ebits) - 1u) << M) : 0;
    uint8_t s = sign ? sbit : 0;
    if (ax > 0x7f800000u) return f->kind == BD_MF_FINITE ? nan : (uint8_t)(nan | (f->kind == BD_MF_FNUZ ? 0 : s));
    /* Overflow: what the kind does with a value beyond its largest. */
    uint8_t over = f->kind == BD_MF_IEEE ? (uint8_t)(inf | s)
                   : f->kind == BD_MF_FINITE ? (uint8_t)(f->max_code | s)
                   : f->kind == BD_MF_FN ? (uint8_t)(nan | s) : nan;
    if (ax == 0x7f800000u) return over;
    int emin = 1 - f->bias;                 /* the exponent of the smallest normal */
    int e = (int)(ax >> 23) - 127;
    uint64_t m24 = (ax & 0x7fffffu) | 0x800000u;
    if ((ax >> 23) == 0) { e = -126; m24 = ax; } /* float32 subnormal */
    uint32_t code;
    if (e < emin) { /* a subnormal of the format: a count of 2^(emin - M) */
        int shift = 23 + emin - M - e;
        uint64_t q = 0;
        if (shift < 40) { /* else far below half the smallest step: 0 */
            uint64_t rem = m24 & ((1ull << shift) - 1), half = 1ull << (shift - 1);
            q = m24 >> shift;
            if (rem > half || (rem == half && (q & 1))) q++;
        }
        code = (uint32_t)q; /* q == 2^M reads as the smallest normal */
    } else {
        int shift = 23 - M;
        uint64_t q = m24 >> shift, rem = m24 & ((1ull << shift) - 1), half = 1ull << (shift - 1);
        if (rem > half || (rem == half && (q & 1))) q++;
        if (q >> (M + 1)) { q >>= 1; e++; }
        int ef = e + f->bias;
        if (ef >= (1 << f->ebits)) return over;
        code = (uint32_t)ef << M | (uint32_t)(q & ((1u << M) - 1u));
    }
    if (code > f->max_code) return over;
    if (code == 0 && f->kind == BD_MF_FNUZ) return 0; /* no negative zero */
    return (uint8_t)(code | s);
}

/* ---- FLOAT8E8M0: a power of two, 2^(code - 127); 0xff is NaN ------------------- */

static inline BD_HOST_DEVICE float bd_e8m0_to_float(uint8_t c)
{
    if (c == 0xff) return bd_bits_f32(0x7fc00000u);
    if (c == 0) return bd_bits_f32(0x00400000u); /* 2^-127, a float32 subnormal */
    return bd_bits_f32((uint32_t)c << 23);
}

typedef enum bd_round_mode { BD_ROUND_UP = 0, BD_ROUND_DOWN = 1, BD_ROUND_NEAREST = 2 } bd_round_mode;

/* As onnx's reference (numpy_helper.to_float8e8m0): the float's exponent,
 * rounded by mode on the mantissa; the sign is dropped; inf and NaN give NaN. */
static inline BD_HOST_DEVICE uint8_t bd_float_to_e8m0(float x, int saturate, bd_round_mode mode)
{
    uint32_t u = bd_f32_bits(x), e = (u >> 23) & 0xffu;
    if (e == 0xffu) return 0xff;
    int up = 0;
    if (mode == BD_ROUND_NEAREST) {
        uint32_t g = (u & 0x400000u) != 0, r = (u & 0x200000u) != 0, st = (u & 0x1fffffu) != 0, lsb = e > 0;
        up = g && (r || st || lsb);
    } else if (mode == BD_ROUND_UP) {
        up = (u & 0x7fffffu) != 0;
    }
    if (saturate && e == 0xfeu) up = 0;
    return (uint8_t)(e + (uint32_t)up);
}

/* ---- any narrow float ---------------------------------------------------------- */

/* 1 for the dtypes these functions convert (bfloat16, float8s, float4, float6). */
static inline BD_HOST_DEVICE int bd_dtype_is_narrow_float(int dtype)
{
    int ok;
    bd_minifloat_format(dtype, &ok);
    return dtype == 16 || dtype == 24 || ok;
}

/* Element i of a narrow-float buffer as float. */
static inline BD_HOST_DEVICE float bd_narrow_to_float(int dtype, const void *p, int64_t i)
{
    if (dtype == 16) return bd_bf16_to_float(((const uint16_t *)p)[i]);
    if (dtype == 24) return bd_e8m0_to_float(((const uint8_t *)p)[i]);
    bd_mf_format f = bd_minifloat_format(dtype, 0);
    return bd_minifloat_to_float(&f, ((const uint8_t *)p)[i]);
}

/* Stores v as element i (round to nearest even; FLOAT8E8M0 rounds up, as
 * Cast's default round_mode). */
static inline BD_HOST_DEVICE void bd_float_to_narrow(int dtype, void *p, int64_t i, float v)
{
    if (dtype == 16) ((uint16_t *)p)[i] = bd_float_to_bf16(v);
    else if (dtype == 24) ((uint8_t *)p)[i] = bd_float_to_e8m0(v, 1, BD_ROUND_UP);
    else {
        bd_mf_format f = bd_minifloat_format(dtype, 0);
        ((uint8_t *)p)[i] = bd_float_to_minifloat(&f, v);
    }
}

#ifdef __cplusplus
}
#endif
#endif /* BD_DTYPE_H */
