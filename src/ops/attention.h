/* attention.h: the attention family's parsed attributes and the scaled
 * dot-product attention that ONNX's Attention and the com.microsoft
 * attention ops (msattn) lower to: a description of one attention (bd_sdpa)
 * and the per-score formulas (mask, causal and window bias, softcap) that
 * the CPU kernel (src/backend/cpu/ops/attention.c) and the CUDA kernel
 * (kernels/attention.cu) share. */
#ifndef BD_OPS_ATTENTION_H
#define BD_OPS_ATTENTION_H

#include <math.h>

#include "ops.h"
#include "util/dtype.h"

/* ONNX Attention (opsets 23, 24, 25). */
typedef struct bd_attention_params {
    float scale;            /* has_scale: the attribute; else 1 / sqrt(head_size) */
    int has_scale;
    float softcap;          /* > 0: scores become softcap * tanh(score / softcap) */
    int is_causal;
    int64_t q_heads, kv_heads; /* 0 when absent (3-D inputs need them) */
    int softmax_precision;  /* a braid_dtype, or 0 when absent */
    int qk_mode;            /* what qk_matmul_output holds: 0 raw, 1 softcapped, 2 + bias, 3 softmax */
    int64_t left, right;    /* window bounds (opset 25); -1: unbounded */
} bd_attention_params;

/* Attention's sizes, resolved from its inputs (src/ops/attention.c). */
typedef struct bd_attention_geom {
    int rank3;              /* Q, K, V are 3-D (batch, seq, heads * size) */
    int64_t b, hq, hkv, sq, skv, spast, stot, d, dv;
    int cdt;                /* compute dtype: DOUBLE when any of Q, K, V is double, else FLOAT */
} bd_attention_geom;
braid_status bd_attention_geometry(const bd_node *n, const bd_tensor *in, bd_attention_geom *g, bd_err *e);

/* One scaled dot-product attention over (b, hq) heads: for each query row i
 * of head h (key/value head h / (hq / hkv)), scores x_j = alpha q_i . k_j,
 * softcapped, plus a bias, softmax, then y_i = sum_j p_j v_j. Operands are in
 * the compute dtype cdt (FLOAT or DOUBLE), with the last dim contiguous and
 * element strides for (batch, head, row). Host or device pointers. */
typedef struct bd_sdpa {
    int64_t b, hq, hkv, sq, stot, d, dv;
    int cdt;
    const void *q, *k, *v;
    void *y;
    int64_t q_st[3], k_st[3], v_st[3], y_st[3];
    double alpha;
    float softcap;
    /* bias of score (b, h, i, j): */
    const void *mask;       /* broadcast to (b, hq, sq, mask_kv) by m_st; columns j >= mask_kv are masked */
    int mask_dt, mask_flags; /* flags: a value > 0 keeps the score, else masks it; otherwise additive */
    int64_t m_st[4], mask_kv;
    const void *bias2;      /* a second additive tensor (b2_st), or NULL */
    int bias2_dt;
    int64_t b2_st[4];
    const void *kv_len;     /* per batch: keys j >= kv_len[b] + kv_len_add are masked (int32 or int64), or NULL */
    int kv_len_dt;
    int64_t kv_len_add;
    int offset_from_len;    /* the causal/window offset of batch b is kv_len[b] - sq; else `offset` */
    int64_t offset;
    int causal;             /* key j masked when j > i + offset */
    int64_t left, right;    /* window: masked when i + offset - j > left or j - i - offset > right (>= 0) */
    double masked;          /* what the mask, mask-length and kv_len rules add: -inf (ONNX), or a finite
                             * filter value (com.microsoft's mask_filter_value) */
    double causal_masked;   /* what the causal and window rules add: -inf (ONNX), the lowest float (onnxruntime) */
    int emu_dt;             /* FLOAT16/BFLOAT16: scores are rounded to it after the product, the softcap's
                             * steps and the bias addition, as onnx's reference computes in that type */
    int sm_dt;              /* softmax precision: FLOAT16/BFLOAT16 round each step of the softmax as numpy
                             * does in that type, DOUBLE computes in double, 0 the compute dtype */
    int p_dt;               /* probabilities are rounded to this dtype before P V (float16/bfloat16), or 0 */
    void *qk;               /* optional (b, hq, sq, stot) output of dtype qk_dt: mode as qk_mode above */
    int qk_dt, qk_mode;
} bd_sdpa;

/* Element i of a numeric tensor of dtype dt (bool, integers, float kinds) as double. */
static inline BD_HOST_DEVICE double bd_attn_load(int dt, const void *p, int64_t i)
{
    switch (dt) {
    case BRAID_DTYPE_FLOAT: return ((const float *)p)[i];
    case BRAID_DTYPE_DOUBLE: return ((const double *)p)[i];
    case BRAID_DTYPE_FLOAT16: return bd_half_to_float_hd(((const uint16_t *)p)[i]);
    case BRAID_DTYPE_BFLOAT16: return bd_bf16_to_float(((const uint16_t *)p)[i]);
    case BRAID_DTYPE_BOOL: case BRAID_DTYPE_UINT8: return ((const uint8_t *)p)[i];
    case BRAID_DTYPE_INT8: return ((const int8_t *)p)[i];
    case BRAID_DTYPE_INT16: return ((const int16_t *)p)[i];
    case BRAID_DTYPE_UINT16: return ((const uint16_t *)p)[i];
    case BRAID_DTYPE_INT32: return ((const int32_t *)p)[i];
    case BRAID_DTYPE_UINT32: return ((const uint32_t *)p)[i];
    case BRAID_DTYPE_INT64: return (double)((const int64_t *)p)[i];
    case BRAID_DTYPE_UINT64: return (double)((const uint64_t *)p)[i];
    default: return 0.0;
    }
}

/* The number of valid keys of batch b (stot when kv_len is NULL). */
static inline BD_HOST_DEVICE int64_t bd_sdpa_len(const bd_sdpa *s, int64_t b)
{
    if (!s->kv_len) return s->stot;
    return s->kv_len_add + (s->kv_len_dt == BRAID_DTYPE_INT32 ? (int64_t)((const int32_t *)s->kv_len)[b]
                                                              : ((const int64_t *)s->kv_len)[b]);
}

/* The causal/window offset of batch b: how many keys precede the query block. */
static inline BD_HOST_DEVICE int64_t bd_sdpa_offset(const bd_sdpa *s, int64_t b)
{
    return s->offset_from_len ? bd_sdpa_len(s, b) - s->sq : s->offset;
}

/* The bias added to score (b, h, i, j): the additive mask and bias2 values,
 * plus `masked` for each of a key-flag mask, columns past the mask and keys
 * past kv_len that masks it, and `causal_masked` for each of the causal
 * frontier and the window, as onnx's reference and onnxruntime compose them.
 * len and off: bd_sdpa_len/_offset. */
static inline BD_HOST_DEVICE double bd_sdpa_bias(const bd_sdpa *s, int64_t b, int64_t h, int64_t i, int64_t j,
                                                 int64_t len, int64_t off)
{
    double v = 0.0;
    int n = 0;
    if (s->mask) {
        if (j >= s->mask_kv) n++;
        else {
            double m = bd_attn_load(s->mask_dt, s->mask, b * s->m_st[0] + h * s->m_st[1] + i * s->m_st[2] + j * s->m_st[3]);
            if (s->mask_flags) n += !(m > 0.0);
            else v += m;
        }
    }
    if (s->bias2) v += bd_attn_load(s->bias2_dt, s->bias2, b * s->b2_st[0] + h * s->b2_st[1] + i * s->b2_st[2] + j * s->b2_st[3]);
    if (j >= len) n++;
    int64_t diff = i + off - j;
    int c = (s->causal && diff < 0) + (s->left >= 0 && diff > s->left) + (s->right >= 0 && -diff > s->right);
    if (n) v += (double)n * s->masked;
    if (c) v += (double)c * s->causal_masked;
    return v;
}

/* softcap * tanh(x / softcap) when softcap > 0. */
static inline BD_HOST_DEVICE double bd_sdpa_softcap(double x, float softcap)
{
    return softcap > 0.0f ? (double)softcap * tanh(x / (double)softcap) : x;
}

/* x rounded to dtype dt's precision (float16, bfloat16; else unchanged). */
static inline BD_HOST_DEVICE float bd_sdpa_round(int dt, float x)
{
    if (dt == BRAID_DTYPE_FLOAT16) return bd_half_to_float_hd(bd_float_to_half(x));
    if (dt == BRAID_DTYPE_BFLOAT16) return bd_bf16_to_float(bd_float_to_bf16(x));
    return x;
}

#endif /* BD_OPS_ATTENTION_H */
