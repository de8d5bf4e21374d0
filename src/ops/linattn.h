/* linattn.h: the linattn family's parsed attributes and element formulas,
 * shared by src/ops/linattn.c and the kernels of both backends: the ops of
 * recent hybrid language models (Gated DeltaNet, Mamba, Llama's MLP) that
 * ONNX added in opsets 27 and 28: LinearAttention (linear, gated, delta and
 * gated-delta recurrences over a (d_k x d_v) state per key/value head),
 * CausalConvWithState (a depthwise causal 1-D convolution that carries its
 * last k - 1 inputs). */
#ifndef BD_OPS_LINATTN_H
#define BD_OPS_LINATTN_H

#include <math.h>

#include "ops.h"
#include "util/dtype.h"

enum { BD_LA_LINEAR = 0, BD_LA_GATED = 1, BD_LA_DELTA = 2, BD_LA_GATED_DELTA = 3 };

typedef struct bd_linattn_params {
    int rule;               /* LinearAttention: BD_LA_* */
    int64_t q_heads, kv_heads;
    float scale;            /* 0: 1 / sqrt(d_k) */
    int silu;               /* CausalConvWithState: activation silu/swish */
} bd_linattn_params;

/* LinearAttention's sizes (src/ops/linattn.c). */
typedef struct bd_linattn_geom {
    int64_t b, t, hq, hkv, dk, dv;
    int decay_per_key;      /* decay is (b, t, hkv * dk); else (b, t, hkv) */
    int beta_shared;        /* beta is (b, t, 1); else (b, t, hkv) */
    float scale;
} bd_linattn_geom;
braid_status bd_linattn_geometry(const bd_node *n, const bd_tensor *in, bd_linattn_geom *g, bd_err *e);

/* v rounded to dt's precision (float16, bfloat16; float and double as is). */
static inline BD_HOST_DEVICE float bd_linattn_round(int dt, float v)
{
    if (dt == BRAID_DTYPE_FLOAT16) return bd_half_to_float_hd(bd_float_to_half(v));
    if (dt == BRAID_DTYPE_BFLOAT16) return bd_bf16_to_float(bd_float_to_bf16(v));
    return v;
}

/* CausalConvWithState: position p of the padded sequence of (b, c) is the
 * past state's p (zeros without one) for p < k - 1, else input p - (k - 1).
 * *which: 0 past, 1 input, -1 zero; returns the element index in it. */
static inline BD_HOST_DEVICE int64_t bd_ccws_padded(int64_t bc, int64_t p, int64_t len, int64_t k, int has_past,
                                                    int *which)
{
    if (p < k - 1) {
        *which = has_past ? 0 : -1;
        return bc * (k - 1) + p;
    }
    *which = 1;
    return bc * len + p - (k - 1);
}

/* x * sigmoid(x) in float, as the reference computes SiLU. */
static inline BD_HOST_DEVICE float bd_silu(float x) { return x * (1.0f / (1.0f + expf(-x))); }

#endif /* BD_OPS_LINATTN_H */
