/* qgemm.h: the qgemm op family (integer products: MatMulInteger,
 * ConvInteger, QLinearMatMul, QLinearConv, and com.microsoft's QGemm,
 * DynamicQuantizeMatMul, MatMulIntegerToFloat): parsed attributes, which
 * input is which, the layout of per-row / per-column zero points and scales,
 * and the epilogue formulas that both backends apply to the exact int32
 * accumulator. */
#ifndef BD_OPS_QGEMM_H
#define BD_OPS_QGEMM_H

#include "conv.h"
#include "quant.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bd_qgemm_params {
    bd_conv_params conv; /* ConvInteger, QLinearConv; first, so that bd_conv_geometry reads it */
    float alpha;         /* QGemm */
    int trans_a, trans_b;
} bd_qgemm_params;

/* The input index of each role (-1: the op has none). a and b are the two
 * operands (X and W for the convolutions); ys/yzp the output's scale and
 * zero point; bias an int32 bias added to the accumulator (QLinearConv's B,
 * QGemm's C) or, with fbias set, a float bias added after scaling. */
typedef struct bd_qgemm_io {
    int a, b, as, azp, bs, bzp, ys, yzp, bias;
    int fbias;    /* bias is float, added after the scale */
    int conv;     /* a convolution (a: X, b: W) */
    int dyn;      /* a is float, quantized per tensor first (DynamicQuantizeMatMul) */
} bd_qgemm_io;

static inline bd_qgemm_io bd_qgemm_io_of(int op)
{
    bd_qgemm_io r = {0, 1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0};
    switch (op) {
    case BD_OP_MatMulInteger: r.azp = 2, r.bzp = 3; break;
    case BD_OP_ConvInteger: r.azp = 2, r.bzp = 3, r.conv = 1; break;
    case BD_OP_QLinearMatMul: r = (bd_qgemm_io){0, 3, 1, 2, 4, 5, 6, 7, -1, 0, 0, 0}; break;
    case BD_OP_QLinearConv: case BD_OP_MS_QLinearConv: r = (bd_qgemm_io){0, 3, 1, 2, 4, 5, 6, 7, 8, 0, 1, 0}; break;
    case BD_OP_MS_QGemm: r = (bd_qgemm_io){0, 3, 1, 2, 4, 5, 7, 8, 6, 0, 0, 0}; break;
    case BD_OP_MS_DynamicQuantizeMatMul: r = (bd_qgemm_io){0, 1, -1, -1, 2, 3, -1, -1, 4, 1, 0, 1}; break;
    case BD_OP_MS_MatMulIntegerToFloat: r = (bd_qgemm_io){0, 1, 2, 4, 3, 5, -1, -1, 6, 1, 0, 0}; break;
    default: break;
    }
    return r;
}

/* A per-row (of a (..., M, K)) or per-column (of b (..., K, N)) vector of
 * values, one per (operand batch, row or column): position p runs over
 * dims (operand batch dims..., L) and reads the tensor at the strides
 * st (0 where it broadcasts). A scalar has every stride 0. */
typedef struct bd_qvec {
    int rank;
    int64_t dims[BD_MAX_RANK];
    int64_t st[BD_MAX_RANK];
} bd_qvec;

static inline BD_HOST_DEVICE int64_t bd_qvec_index(const bd_qvec *v, int64_t p)
{
    int64_t off = 0;
    for (int d = v->rank - 1; d >= 0; d--) {
        int64_t q = p / v->dims[d];
        off += (p - q * v->dims[d]) * v->st[d];
        p = q;
    }
    return off;
}

/* Resolves z (omitted: dtype UNDEFINED) as a vector over x's rows
 * (per_col 0: scalar, [M] or broadcastable to (..., M, 1)) or columns
 * (per_col 1: scalar, [N] or broadcastable to (..., 1, N)), x being a
 * MatMul operand (a 1-D a is one row, a 1-D b one column). Fails with
 * SHAPE naming z. With trans (QGemm) x is 2-D and stored transposed. */
braid_status bd_qvec_make(const bd_tensor *z, const bd_tensor *x, int per_col, int trans, const char *name,
                          bd_qvec *v, bd_err *e);

/* ---- epilogues -------------------------------------------------------------------------------- */

/* What becomes of an int32 accumulator. */
enum {
    BD_QEPI_INT32 = 0,   /* MatMulInteger, ConvInteger: the accumulator itself */
    BD_QEPI_REQUANT = 1, /* QLinear*, QGemm with y_zero_point: (acc + bias) * m, rounded, + zp, saturated */
    BD_QEPI_FLOAT = 2    /* *ToFloat, DynamicQuantizeMatMul, QGemm without: (acc + ibias) * m + fbias */
};

/* BD_QEPI_FLOAT of one element. */
static inline BD_HOST_DEVICE float bd_qepi_float(int32_t acc, float m, float fbias)
{
    return BD_QADD(BD_QMUL((float)acc, m), fbias);
}

/* The multiplier of an output column (or channel): a_scale * b_scale, times
 * alpha first for QGemm, divided by y_scale when there is one, each step
 * rounded to the dtype sdt of QLinearMatMul's scales (float16, bfloat16:
 * onnx's reference multiplies in the scales' dtype; float: no rounding). */
static inline BD_HOST_DEVICE float bd_qgemm_mult(int qgemm, float alpha, float as, float bs, int has_ys, float ys,
                                                 int sdt)
{
    float m = qgemm ? BD_QMUL(BD_QMUL(alpha, as), bs) : bd_q_round_to(sdt, BD_QMUL(as, bs));
    return has_ys ? bd_q_round_to(sdt, m / ys) : m;
}

/* The output name of each op's inputs, for messages. */
const char *bd_qgemm_input_name(int op, int i);

#ifdef __cplusplus
}
#endif
#endif /* BD_OPS_QGEMM_H */
