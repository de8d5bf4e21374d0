/* qlinear.h: the qlinear op family (com.microsoft's 8-bit QOperator ops that
 * onnxruntime's quantizer writes: QLinearAdd, QLinearMul, QLinearSigmoid,
 * QLinearLeakyRelu, QLinearGlobalAveragePool, QLinearAveragePool,
 * QLinearConcat, QLinearSoftmax, QLinearWhere): parsed attributes, which
 * input is which, and the element formulas both backends use. Each op is
 * "dequantize, the float op, quantize" with the float steps written out as
 * onnxruntime's reference paths do them. */
#ifndef BD_OPS_QLINEAR_H
#define BD_OPS_QLINEAR_H

#include "pool.h"
#include "quant.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bd_qlinear_params {
    bd_pool_params pool; /* QLinearAveragePool; first, so that bd_pool_geometry reads it */
    float alpha;         /* QLinearLeakyRelu */
    int64_t axis;        /* QLinearConcat, QLinearSoftmax (as written) */
    int channels_last;   /* the pools: X is (N, spatial..., C) */
    int softmax_opset;   /* QLinearSoftmax's 'opset': before 13 the rows are the dims from axis on */
    float epsilon;       /* QEmbedLayerNormalization */
} bd_qlinear_params;

/* QEmbedLayerNormalization's inputs: ids, the quantized tables and their
 * scales (8 on) and zero points (13 on), in the order word, position,
 * segment, gamma, beta. */
enum {
    BD_QEMB_IDS = 0, BD_QEMB_SEG_IDS = 1, BD_QEMB_WORD = 2, BD_QEMB_POS = 3, BD_QEMB_SEG = 4, BD_QEMB_GAMMA = 5,
    BD_QEMB_BETA = 6, BD_QEMB_MASK = 7, BD_QEMB_SCALES = 8, BD_QEMB_ZPS = 13
};

/* Input roles of the elementwise ops: x (and y for the binary ones), their
 * scales and zero points, and the output's (-1: none). */
typedef struct bd_qlinear_io {
    int x, xs, xzp, y, ys, yzp, zs, zzp;
} bd_qlinear_io;

static inline bd_qlinear_io bd_qlinear_io_of(int op)
{
    switch (op) {
    case BD_OP_MS_QLinearAdd: case BD_OP_MS_QLinearMul: return (bd_qlinear_io){0, 1, 2, 3, 4, 5, 6, 7};
    case BD_OP_MS_QLinearWhere: return (bd_qlinear_io){1, 2, 3, 4, 5, 6, 7, 8};
    default: return (bd_qlinear_io){0, 1, 2, -1, -1, -1, 3, 4}; /* the unary ops and the pools */
    }
}

/* ---- element formulas (a, b: codes minus their zero points, as float) ---- */

/* QLinearAdd: a and b scaled by their ratios to the output scale, summed,
 * rounded half to even around the output zero point, saturated. */
static inline BD_HOST_DEVICE float bd_ql_add(float a, float b, float ra, float rb, float zp, float lo, float hi)
{
    return bd_q_to_int(BD_QADD(BD_QMUL(ra, a), BD_QMUL(rb, b)), zp, lo, hi);
}

/* QLinearMul, as onnxruntime: the exact integer product times a_scale *
 * b_scale / c_scale, plus the zero point, then rounded and saturated. */
static inline BD_HOST_DEVICE float bd_ql_mul(float a, float b, float m, float zp, float lo, float hi)
{
    return bd_q_to_int(BD_QADD(BD_QMUL(BD_QMUL(a, b), m), zp), 0.0f, lo, hi);
}

/* A value a (code minus zero point) of scale s requantized to scale ys, zero point zp. */
static inline BD_HOST_DEVICE float bd_ql_requant(float a, float s, float ys, float zp, float lo, float hi)
{
    return bd_q_to_int(BD_QMUL(a, s) / ys, zp, lo, hi);
}

/* QLinearSigmoid (leaky 0) and QLinearLeakyRelu (leaky 1) of one code's a. */
static inline BD_HOST_DEVICE float bd_ql_activation(int leaky, float a, float s, float alpha, float ys, float zp,
                                                    float lo, float hi)
{
    float v = BD_QMUL(a, s);
    v = leaky ? (v >= 0.0f ? v : BD_QMUL(v, alpha)) : 1.0f / BD_QADD(1.0f, expf(-v));
    return bd_q_to_int(v / ys, zp, lo, hi);
}

/* QLinearGlobalAveragePool of a window's exact sum of (x - zp), count
 * values: as onnxruntime, times x_scale / (y_scale * count). */
static inline BD_HOST_DEVICE float bd_ql_gavg(int32_t sum, float m, float zp, float lo, float hi)
{
    return bd_q_to_int(BD_QMUL((float)sum, m), zp, lo, hi);
}

/* QLinearAveragePool, as onnxruntime: the window's dequantized values
 * x_scale * (x - zp) summed in window order (bd_ql_deq, the caller's loop),
 * over count, then rint(v / y_scale + zero point), saturated. */
static inline BD_HOST_DEVICE float bd_ql_deq(int32_t x, int32_t zp, float s) { return BD_QMUL(s, (float)(x - zp)); }
static inline BD_HOST_DEVICE float bd_ql_avg(float sum, int64_t count, float ys, float zp, float lo, float hi)
{
    return bd_q_to_int(BD_QADD((sum / (float)count) / ys, zp), 0.0f, lo, hi);
}

/* QEmbedLayerNormalization, as onnxruntime, on one token of hidden size h:
 * o = word + position (+ segment) dequantized, then o = (o - mean) /
 * sqrt(var + eps) * gamma + beta with float sums in order. */
static inline BD_HOST_DEVICE void bd_qemb_layernorm(float *o, int64_t h, float eps, const float *gamma,
                                                    const float *beta)
{
    float sum = 0.0f;
    for (int64_t i = 0; i < h; i++) sum = BD_QADD(sum, o[i]);
    float mean = sum / (float)h;
    sum = 0.0f;
    for (int64_t i = 0; i < h; i++) {
        o[i] = o[i] - mean;
        sum = BD_QADD(sum, BD_QMUL(o[i], o[i]));
    }
    float e = sqrtf(BD_QADD(sum / (float)h, eps));
    for (int64_t i = 0; i < h; i++) o[i] = BD_QADD(BD_QMUL(o[i] / e, gamma[i]), beta[i]);
}

/* The input name of each op's inputs, for messages. */
const char *bd_qlinear_input_name(int op, int i);

#ifdef __cplusplus
}
#endif
#endif /* BD_OPS_QLINEAR_H */
