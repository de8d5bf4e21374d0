/* linalg.h: the linalg family's parsed attributes and the plans that its
 * kernels on every backend execute: Einsum's equation (parsed once) and the
 * program it lowers to for given input shapes (strided gathers that take
 * diagonals, transpose and broadcast, sums over trailing dims, and batched
 * GEMMs), FusedMatMul's operand views, FusedGemm's activation formula, and
 * Det's LU step, each shared by src/backend/cpu/ops/linalg.c and
 * kernels/linalg.cu. */
#ifndef BD_OPS_LINALG_H
#define BD_OPS_LINALG_H

#include <math.h>

#include "ops.h"

/* ---- Einsum -------------------------------------------------------------------------- */

#define BD_ES_TERMS 32   /* operands an equation may have */
#define BD_ES_CHARS 64   /* letters per term */
#define BD_ES_LETTERS 52 /* label codes: 'A'..'Z' are 0..25, 'a'..'z' 26..51 (ASCII order) */
#define BD_ES_MAXD 32    /* dims of any intermediate view */

typedef struct bd_es_term {
    int n;                    /* letters */
    int8_t lab[BD_ES_CHARS];  /* label codes in order */
    int ell;                  /* the ellipsis sits before letter `ell`; -1: none */
} bd_es_term;

typedef struct bd_einsum_params {
    int n_terms;
    bd_es_term in[BD_ES_TERMS];
    int explicit_out;
    bd_es_term out;
} bd_einsum_params;

/* The program an equation lowers to. Buffers 0 .. n_in-1 are the inputs in
 * the work type (float for the float kinds but double, double, and 64-bit
 * wrapping integers for the integer dtypes); the others are scratch of
 * buf_n[id] elements. */
enum { BD_ES_GATHER = 1, BD_ES_REDUCE = 2, BD_ES_GEMM = 3 };
typedef struct bd_es_step {
    int kind, src, src2, dst;
    /* GATHER: dst (contiguous over dims) [idx] = src[sum idx_d st_d] */
    int rank;
    int64_t dims[BD_ES_MAXD], st[BD_ES_MAXD];
    /* REDUCE: dst[o] = sum over i < inner of src[o * inner + i], o < outer */
    int64_t outer, inner;
    /* GEMM: dst (count, m, n) = src (count, m, k; k, m when ta) x src2 (count, k, n; n, k when tb) */
    int64_t count, m, n, k;
    int ta, tb;
} bd_es_step;

typedef struct bd_es_prog {
    int n_steps, n_bufs, out_buf;
    bd_es_step *steps;
    int64_t *buf_n;
} bd_es_prog;

/* Resolves the equation against the inputs' shapes: the output shape (out may
 * be NULL) and, when prog is set, the program (bd_einsum_free frees it).
 * Fails with SHAPE (rank or dims that disagree) or INVALID_MODEL. */
braid_status bd_einsum_plan(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_es_prog *prog, bd_err *e);
void bd_einsum_free(bd_es_prog *prog);

/* ---- FusedGemm, FusedMatMul -------------------------------------------------------------- */

/* FusedGemm's activations (onnxruntime's fused activation functors). */
typedef enum bd_fact {
    BD_FACT_NONE = 0, BD_FACT_RELU, BD_FACT_LEAKY_RELU, BD_FACT_TANH, BD_FACT_SIGMOID, BD_FACT_HARD_SIGMOID,
    BD_FACT_ELU, BD_FACT_SELU, BD_FACT_SOFTPLUS, BD_FACT_SOFTSIGN, BD_FACT_THRESHOLDED_RELU, BD_FACT_SCALED_TANH,
    BD_FACT_PARAMETRIC_SOFTPLUS
} bd_fact;

typedef struct bd_linalg_params {
    float alpha, beta;      /* FusedGemm: alpha op(A) op(B) + beta C; FusedMatMul: alpha */
    int trans_a, trans_b, trans_batch_a, trans_batch_b;
    bd_fact act;
    float act_alpha, act_beta, act_gamma;
    bd_einsum_params einsum;  /* Einsum's parsed equation (inline: a node's params are one block) */
} bd_linalg_params;

/* The activation of a FusedGemm output element. */
static inline BD_HOST_DEVICE double bd_fact_apply(bd_fact f, double x, double a, double b, double g)
{
    switch (f) {
    case BD_FACT_RELU: return x > 0 ? x : 0;
    case BD_FACT_LEAKY_RELU: return x >= 0 ? x : a * x;
    case BD_FACT_TANH: return tanh(x);
    case BD_FACT_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case BD_FACT_HARD_SIGMOID: { double y = a * x + b; return y < 0 ? 0 : y > 1 ? 1 : y; }
    case BD_FACT_ELU: return x >= 0 ? x : a * (exp(x) - 1.0);
    case BD_FACT_SELU: return x > 0 ? g * x : g * (a * exp(x) - a);
    case BD_FACT_SOFTPLUS: return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
    case BD_FACT_SOFTSIGN: return x / (1.0 + fabs(x));
    case BD_FACT_THRESHOLDED_RELU: return x > a ? x : 0;
    case BD_FACT_SCALED_TANH: return a * tanh(b * x);
    case BD_FACT_PARAMETRIC_SOFTPLUS: { double y = b * x; return a * (y > 0 ? y + log1p(exp(-y)) : log1p(exp(y))); }
    default: return x;
    }
}

/* FusedMatMul's operands as numpy matmul operands: transBatch moves dim 0
 * after the other batch dims ([1, .., r-2, 0, r-1]), trans swaps the last
 * two (a 1-D operand is left alone). *view gets the logical shape; strides
 * (elements, of the stored tensor) follow the logical dims. */
void bd_fused_matmul_view(const bd_tensor *t, int trans_batch, int trans, bd_tensor *view, int64_t *strides);

/* ---- Det ------------------------------------------------------------------------------- */

/* The determinant of the n x n matrix a (row-major, overwritten by its LU
 * factors) by Gaussian elimination with partial pivoting, in double. */
static inline BD_HOST_DEVICE double bd_det_lu(double *a, int64_t n)
{
    double det = 1.0;
    for (int64_t c = 0; c < n; c++) {
        int64_t p = c;
        double best = fabs(a[c * n + c]);
        for (int64_t r = c + 1; r < n; r++)
            if (fabs(a[r * n + c]) > best) best = fabs(a[r * n + c]), p = r;
        if (best == 0.0) return 0.0 * det; /* singular (keeps NaN and the sign of -0) */
        if (p != c) {
            for (int64_t j = 0; j < n; j++) {
                double t = a[c * n + j];
                a[c * n + j] = a[p * n + j];
                a[p * n + j] = t;
            }
            det = -det;
        }
        double piv = a[c * n + c];
        det *= piv;
        for (int64_t r = c + 1; r < n; r++) {
            double f = a[r * n + c] / piv;
            if (f == 0.0) continue;
            for (int64_t j = c + 1; j < n; j++) a[r * n + j] -= f * a[c * n + j];
        }
    }
    return det;
}

#endif /* BD_OPS_LINALG_H */
