/* quant.h: what the quantization families share (quant, qgemm, qlinear):
 * the parsed attributes of QuantizeLinear / DequantizeLinear, the layout of
 * a scale over its input (per tensor, per axis, blocked), and the element
 * formulas (round half to even, saturation, dequantization, requantization
 * of an int32 accumulator), host/device inline so that the CPU kernels and
 * the CUDA kernels compute the same bits. */
#ifndef BD_QUANT_H
#define BD_QUANT_H

#include <math.h>

#include "ops.h"
#include "util/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

/* QuantizeLinear, DequantizeLinear (both domains) and DynamicQuantizeLinear. */
typedef struct bd_quant_params {
    int64_t axis;       /* as written; default 1 */
    int64_t block_size; /* 0: per tensor or per axis */
    int saturate;       /* QuantizeLinear to float8: clamp to the largest finite value */
    int output_dtype;   /* 0: from the zero point (Q, else uint8) or the scale (DQ) */
    int precision;      /* QuantizeLinear: the dtype of x / scale; 0: the scale's */
} bd_quant_params;

/* ---- scale layout ------------------------------------------------------------- */

enum { BD_QV_TENSOR = 0, BD_QV_AXIS = 1, BD_QV_BLOCKED = 2 };

/* How a scale (and its zero point) covers x, seen as (outer, d, inner)
 * around the axis: one value (TENSOR), one per index of the axis (AXIS), or
 * blocks of `block` consecutive indices of the axis, the scale having x's
 * shape with s = ceil(d / block) along the axis (BLOCKED). */
typedef struct bd_qview {
    int mode;
    int64_t outer, d, inner, s, block;
} bd_qview;

/* The scale index of element i of x. */
static inline BD_HOST_DEVICE int64_t bd_qview_index(const bd_qview *v, int64_t i)
{
    if (v->mode == BD_QV_TENSOR) return 0;
    int64_t in = i % v->inner, r = i / v->inner, a = r % v->d;
    if (v->mode == BD_QV_AXIS) return a;
    return ((r / v->d) * v->s + a / v->block) * v->inner + in;
}

/* Resolves the view of a scale (and zero point, when zp's dtype is set)
 * over x for a node with attributes axis and block_size (0: none). Fails
 * with SHAPE (shapes that do not fit, a zero point shaped unlike its scale)
 * or INVALID_MODEL (an axis out of range, a negative block size), naming
 * the inputs sname and zname. */
braid_status bd_qview_make(const bd_tensor *x, const bd_tensor *scale, const bd_tensor *zp, int64_t axis,
                           int64_t block_size, const char *sname, const char *zname, bd_qview *v, bd_err *e);

/* ---- element formulas ------------------------------------------------------------ */

/* Float products and sums rounded one by one (no FMA contraction on any
 * backend), so that both backends compute the same bits. */
#ifdef __CUDA_ARCH__
#define BD_QMUL(a, b) __fmul_rn((a), (b))
#define BD_QADD(a, b) __fadd_rn((a), (b))
#else
#define BD_QMUL(a, b) ((a) * (b))
#define BD_QADD(a, b) ((a) + (b))
#endif

/* Round half to even, exact for every float (what rintf does in the default
 * rounding mode, spelled out so that every compiler setting agrees and the
 * CPU loops vectorize). Large values, infinities and NaN pass through. */
static inline BD_HOST_DEVICE float bd_q_rint(float v)
{
    float a = fabsf(v), r = copysignf((a + 0x1p23f) - 0x1p23f, v);
    return a < 0x1p23f ? r : v; /* a select, so that loops over it vectorize */
}
static inline BD_HOST_DEVICE double bd_q_rint_d(double v)
{
    double a = fabs(v), r = copysign((a + 0x1p52) - 0x1p52, v);
    return a < 0x1p52 ? r : v;
}

/* The integer range of a quantized integer dtype; 0 when dtype is not one. */
static inline BD_HOST_DEVICE int bd_q_int_range(int dtype, float *lo, float *hi)
{
    switch (dtype) {
    case BRAID_DTYPE_UINT8: *lo = 0, *hi = 255; return 1;
    case BRAID_DTYPE_INT8: *lo = -128, *hi = 127; return 1;
    case BRAID_DTYPE_UINT16: *lo = 0, *hi = 65535; return 1;
    case BRAID_DTYPE_INT16: *lo = -32768, *hi = 32767; return 1;
    case BRAID_DTYPE_UINT4: *lo = 0, *hi = 15; return 1;
    case BRAID_DTYPE_INT4: *lo = -8, *hi = 7; return 1;
    case BRAID_DTYPE_UINT2: *lo = 0, *hi = 3; return 1;
    case BRAID_DTYPE_INT2: *lo = -2, *hi = 1; return 1;
    default: *lo = *hi = 0; return 0;
    }
}

/* x / scale already rounded to the division's precision (q) as an integer
 * of [lo, hi]: half to even, plus the zero point, saturated; NaN gives lo
 * (as onnx's reference: rint(NaN) as int32 is INT32_MIN, clipped). */
static inline BD_HOST_DEVICE float bd_q_to_int(float q, float zp, float lo, float hi)
{
    float v = bd_q_rint(q) + zp;
    v = v >= lo ? v : lo;
    return v <= hi ? v : hi;
}
static inline BD_HOST_DEVICE double bd_q_to_int_d(double q, double zp, double lo, double hi)
{
    double v = bd_q_rint_d(q) + zp;
    v = v >= lo ? v : lo;
    return v <= hi ? v : hi;
}

/* q as the code of a narrow float dtype (float8, float4, float6): q + zp
 * (a float8 zero point is added only when nonzero, so that -0 stays -0 as
 * in onnx's reference, which ignores it; float4/float6 add it), saturated
 * for the float8 kinds when sat is set, rounded to nearest even. */
static inline BD_HOST_DEVICE uint8_t bd_q_to_minifloat(const bd_mf_format *f, float q, float zp, int has_zp, int sat)
{
    if (f->kind == BD_MF_FINITE) {
        if (has_zp) q += zp;
    } else {
        if (zp != 0.0f) q += zp;
        if (sat) {
            float m = bd_minifloat_max(f);
            q = q > m ? m : q < -m ? -m : q; /* NaN stays */
        }
    }
    return bd_float_to_minifloat(f, q);
}

/* Rounds v to the float dtype of a precision (float16, bfloat16; float and
 * anything else: unchanged). */
static inline BD_HOST_DEVICE float bd_q_round_to(int dtype, float v)
{
    if (dtype == BRAID_DTYPE_FLOAT16) return bd_half_to_float_hd(bd_float_to_half(v));
    if (dtype == BRAID_DTYPE_BFLOAT16) return bd_bf16_to_float(bd_float_to_bf16(v));
    return v;
}

/* Element i of a float-like scale (float, float16, bfloat16, float8e8m0) as float. */
static inline BD_HOST_DEVICE float bd_q_scale_at(int dtype, const void *p, int64_t i)
{
    if (dtype == BRAID_DTYPE_FLOAT) return ((const float *)p)[i];
    if (dtype == BRAID_DTYPE_FLOAT16) return bd_half_to_float_hd(((const uint16_t *)p)[i]);
    return bd_narrow_to_float(dtype, p, i);
}

/* Element i of a quantized tensor (any integer dtype braid quantizes to,
 * int32 included, or a narrow float) as float; NULL p reads as 0. */
static inline BD_HOST_DEVICE float bd_q_value_at(int dtype, const void *p, int64_t i)
{
    if (!p) return 0.0f;
    switch (dtype) {
    case BRAID_DTYPE_UINT8: case BRAID_DTYPE_UINT4: case BRAID_DTYPE_UINT2: return ((const uint8_t *)p)[i];
    case BRAID_DTYPE_INT8: case BRAID_DTYPE_INT4: case BRAID_DTYPE_INT2: return ((const int8_t *)p)[i];
    case BRAID_DTYPE_UINT16: return ((const uint16_t *)p)[i];
    case BRAID_DTYPE_INT16: return ((const int16_t *)p)[i];
    case BRAID_DTYPE_INT32: return (float)((const int32_t *)p)[i];
    default: return bd_narrow_to_float(dtype, p, i);
    }
}

/* An int32 accumulator (bias included) requantized with multiplier m into
 * [lo, hi] around zero point zp: as onnxruntime, float(acc) * m rounded
 * half to even, plus zp, saturated. */
static inline BD_HOST_DEVICE float bd_q_requant(int32_t acc, float m, float zp, float lo, float hi)
{
    return bd_q_to_int((float)acc * m, zp, lo, hi);
}

/* DynamicQuantizeLinear's parameters from x's min and max, as onnxruntime:
 * the range [min(mn, 0), max(mx, 0)] over 255 steps (a scale of 1 when the
 * range is empty), the zero point 0 - min / scale clamped to [0, 255] and
 * rounded half to even. */
static inline BD_HOST_DEVICE void bd_q_dynamic_params(float mn, float mx, float *scale, float *zp)
{
    mn = mn < 0.0f ? mn : 0.0f;
    mx = mx > 0.0f ? mx : 0.0f;
    float s = mx == mn ? 1.0f : (mx - mn) / 255.0f;
    float z = 0.0f - mn / s;
    *scale = s;
    *zp = bd_q_rint(z < 0.0f ? 0.0f : z > 255.0f ? 255.0f : z);
}

/* ---- shared checks ------------------------------------------------------------------ */

/* 1 for the dtypes QuantizeLinear writes and DequantizeLinear reads (int32 aside). */
int bd_q_is_quant_dtype(int dtype);
/* Fails with INVALID_MODEL when a scale known at plan time (data set) has a
 * zero, naming it; also when it is not finite. */
braid_status bd_q_check_scale(const bd_tensor *scale, const char *name, bd_err *e);
/* Fails unless t is a float-like scale dtype (float; float16 and bfloat16
 * when half is set). */
braid_status bd_q_expect_scale(const bd_tensor *t, const char *name, int half, bd_err *e);
/* 1 when t holds one value (a scalar or a 1-element tensor). */
static inline int bd_q_is_scalar(const bd_tensor *t) { return t->rank >= 0 && bd_numel(t) == 1; }
/* Fails with SHAPE unless the optional t (dtype UNDEFINED: omitted) holds one value. */
braid_status bd_q_expect_scalar(const bd_tensor *t, const char *name, bd_err *e);

#ifdef __cplusplus
}
#endif
#endif /* BD_QUANT_H */
