/* unary.h: the parsed attributes of the unary op family (n->params) and its
 * element formulas, host/device, shared by the CPU and CUDA kernels: each
 * float formula (float32, and float16, bfloat16, float8 computed in float) and
 * its double twin. The float ones use src/ops/vmath.h where libm would be a
 * scalar call (exp, log, tanh, erf). */
#ifndef BD_UNARY_H
#define BD_UNARY_H

#include <math.h>
#include <stdint.h>

#include "ops/vmath.h"

typedef struct bd_unary_params {
    float min;      /* Clip before opset 11: attribute 'min' (default: the lowest float) */
    float max;      /* Clip before opset 11: attribute 'max' (default: the highest float) */
    int detect_neg; /* IsInf: detect_negative (1) */
    int detect_pos; /* IsInf: detect_positive (1) */
} bd_unary_params;

/* ---- float formulas (f: float, d: double) ----------------------------------- */

static inline BD_HOST_DEVICE float bd_un_exp_f(float x) { return bd_vexpf(x); }
static inline BD_HOST_DEVICE double bd_un_exp_d(double x) { return exp(x); }
static inline BD_HOST_DEVICE float bd_un_log_f(float x) { return bd_vlogf(x); }
static inline BD_HOST_DEVICE double bd_un_log_d(double x) { return log(x); }
static inline BD_HOST_DEVICE float bd_un_tanh_f(float x) { return bd_vtanhf(x); }
static inline BD_HOST_DEVICE double bd_un_tanh_d(double x) { return tanh(x); }
static inline BD_HOST_DEVICE float bd_un_erf_f(float x) { return bd_verff(x); }
static inline BD_HOST_DEVICE double bd_un_erf_d(double x) { return erf(x); }

/* Round: half to even (rint in the default rounding mode); integers, +-0,
 * NaN and inf are themselves. */
static inline BD_HOST_DEVICE float bd_un_round_f(float x) { return rintf(x); }
static inline BD_HOST_DEVICE double bd_un_round_d(double x) { return rint(x); }

/* Sign: 1, -1, or x itself for +-0 and NaN (as numpy's sign). */
static inline BD_HOST_DEVICE float bd_un_sign_f(float x) { return x > 0 ? 1.0f : x < 0 ? -1.0f : x; }
static inline BD_HOST_DEVICE double bd_un_sign_d(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : x; }

/* Clamp with selects: a NaN stays NaN; lo > hi gives hi, as ONNX says. */
static inline BD_HOST_DEVICE float bd_un_clip_f(float x, float lo, float hi)
{
    float v = x < lo ? lo : x;
    return v > hi ? hi : v;
}
static inline BD_HOST_DEVICE double bd_un_clip_d(double x, double lo, double hi)
{
    double v = x < lo ? lo : x;
    return v > hi ? hi : v;
}

static inline BD_HOST_DEVICE uint8_t bd_un_isinf_f(float x, int neg, int pos)
{
    return (uint8_t)((pos && x == (float)INFINITY) || (neg && x == -(float)INFINITY));
}
static inline BD_HOST_DEVICE uint8_t bd_un_isinf_d(double x, int neg, int pos)
{
    return (uint8_t)((pos && x == (double)INFINITY) || (neg && x == -(double)INFINITY));
}

/* ---- integer formulas (computed in 64 bits, wrapped to the type by the caller) -- */

/* Neg and Abs wrap at the most negative value, as two's complement does. */
static inline BD_HOST_DEVICE int64_t bd_un_neg_i(int64_t x) { return (int64_t)(0 - (uint64_t)x); }
static inline BD_HOST_DEVICE int64_t bd_un_abs_i(int64_t x) { return x < 0 ? bd_un_neg_i(x) : x; }
static inline BD_HOST_DEVICE int64_t bd_un_sign_i(int64_t x) { return (x > 0) - (x < 0); }

#endif /* BD_UNARY_H */
