/* msattn.h: the msattn family's parsed attributes and resolved shapes: the
 * com.microsoft transformer fusions that onnxruntime's optimizer writes,
 * MultiHeadAttention, Attention (with its input projection),
 * GroupQueryAttention (a KV cache in place, rotary) and
 * EmbedLayerNormalization. The first two attentions lower to the attention
 * family's bd_sdpa (src/ops/attention.h) with onnxruntime's CPU semantics:
 * masked keys add mask_filter_value, the causal frontier adds the lowest
 * float, Q*K is scaled before the bias. Shared by src/ops/msattn.c,
 * src/backend/cpu/ops/msattn.c and kernels/msattn.cu. */
#ifndef BD_OPS_MSATTN_H
#define BD_OPS_MSATTN_H

#include "attention.h"

typedef struct bd_msattn_params {
    int64_t num_heads;
    float scale;            /* 0: 1 / sqrt(head size) */
    int unidirectional;
    float mask_filter;      /* mask_filter_value (-10000) */
    int64_t qkv_sizes[3];   /* Attention: qkv_hidden_sizes; 0 when absent */
    float epsilon;          /* EmbedLayerNormalization */
    /* GroupQueryAttention */
    int64_t kv_heads, local_window; /* local_window_size: -1 none */
    float softcap;
    int causal, do_rotary, rotary_interleaved;
} bd_msattn_params;

/* How a key padding mask / mask_index reads. */
enum {
    BD_MSMASK_NONE = 0,
    BD_MSMASK_LENGTHS = 1,  /* (batch): valid keys of each batch (right padding) */
    BD_MSMASK_KEYS = 2,     /* (batch, total): 1 keeps the key, 0 masks it */
    BD_MSMASK_FULL = 3      /* (batch, seq, total) */
};

/* The resolved shapes of MultiHeadAttention and Attention (src/ops/msattn.c). */
typedef struct bd_msattn_geom {
    int64_t b, n, s, l, p, t, h, hv; /* batch, heads, query seq, new kv seq, past, total, head sizes */
    int64_t din;            /* Attention: the input's hidden size */
    int kv_bnsh;            /* MultiHeadAttention: key and value are (b, n, l, h) already */
    int mask_kind;          /* BD_MSMASK_* */
    int has_bias, has_attn_bias, has_past;
    /* GroupQueryAttention: key/value heads, Q/K/V packed in the query, rotated dims */
    int64_t hkv, rd;
    int packed;
} bd_msattn_geom;
braid_status bd_msattn_geometry(const bd_node *n, const bd_tensor *in, bd_msattn_geom *g, bd_err *e);

/* The bd_sdpa fields these ops share, from the geometry: sizes, strides of
 * Q (b, s, n * h) at row stride q_row, K and V gathered as (b, n, t, h),
 * the output (b, s, n * hv), the masks' strides and onnxruntime's masking
 * values. Pointers are left for the caller. */
static inline void bd_msattn_sdpa(const bd_msattn_params *p, const bd_msattn_geom *g, int64_t q_row,
                                  const bd_tensor *mask, const bd_tensor *attn_bias, bd_sdpa *s)
{
    s->b = g->b, s->hq = s->hkv = g->n, s->sq = g->s, s->stot = g->t, s->d = g->h, s->dv = g->hv;
    s->cdt = BRAID_DTYPE_FLOAT;
    s->q_st[0] = g->s * q_row, s->q_st[1] = g->h, s->q_st[2] = q_row;
    s->k_st[0] = g->n * g->t * g->h, s->k_st[1] = g->t * g->h, s->k_st[2] = g->h;
    s->v_st[0] = g->n * g->t * g->hv, s->v_st[1] = g->t * g->hv, s->v_st[2] = g->hv;
    s->y_st[0] = g->s * g->n * g->hv, s->y_st[1] = g->hv, s->y_st[2] = g->n * g->hv;
    s->alpha = p->scale != 0.0f ? (double)p->scale : (double)(1.0f / sqrtf((float)g->h));
    s->causal = p->unidirectional && g->s > 1;
    s->offset = g->p;
    s->left = s->right = -1;
    s->masked = p->mask_filter;
    s->causal_masked = -3.4028234663852886e38; /* the lowest float */
    if (g->mask_kind == BD_MSMASK_LENGTHS) {
        s->kv_len = mask->data, s->kv_len_dt = BRAID_DTYPE_INT32;
    } else if (g->mask_kind != BD_MSMASK_NONE) {
        s->mask = mask->data, s->mask_dt = mask->dtype, s->mask_flags = 1, s->mask_kv = g->t;
        s->m_st[0] = g->mask_kind == BD_MSMASK_FULL ? g->s * g->t : g->t;
        s->m_st[1] = 0, s->m_st[2] = g->mask_kind == BD_MSMASK_FULL ? g->t : 0, s->m_st[3] = 1;
    }
    if (g->has_attn_bias) { /* (b or 1, n or 1, s, t) */
        s->bias2 = attn_bias->data, s->bias2_dt = attn_bias->dtype;
        s->b2_st[0] = attn_bias->dims[0] == 1 ? 0 : attn_bias->dims[1] * g->s * g->t;
        s->b2_st[1] = attn_bias->dims[1] == 1 ? 0 : g->s * g->t;
        s->b2_st[2] = g->t, s->b2_st[3] = 1;
    }
}

/* GroupQueryAttention's past length of batch b: 0 for a first prompt (no
 * past), else seqlens_k[b] + 1 - s (the cache holds the tokens before the
 * new ones). */
static inline BD_HOST_DEVICE int64_t bd_gqa_past(const int32_t *seqlens, int64_t b, int64_t s, int has_past)
{
    return has_past ? (int64_t)seqlens[b] + 1 - s : 0;
}

/* Element (b, h, j, c) of GroupQueryAttention's present K or V (total rows
 * each): the past's row j below past_b, new row j - past_b below past_b + s,
 * zero after (onnxruntime leaves zeros there). *which: 0 past, 1 new, -1
 * zero; returns the index in that tensor, past (b, h, p, d), new (b, h, s, d). */
static inline BD_HOST_DEVICE int64_t bd_gqa_present_at(int64_t b, int64_t h, int64_t j, int64_t c, int64_t hkv,
                                                        int64_t p, int64_t s, int64_t d, int64_t past_b, int *which)
{
    if (j < past_b && j < p) {
        *which = 0;
        return ((b * hkv + h) * p + j) * d + c;
    }
    if (j >= past_b && j < past_b + s) {
        *which = 1;
        return ((b * hkv + h) * s + j - past_b) * d + c;
    }
    *which = -1;
    return 0;
}

/* The pair of elements rotated together at cache column c (half = rotated
 * dims / 2): (2c, 2c + 1) interleaved, else (c, c + half). */
static inline BD_HOST_DEVICE void bd_gqa_pair(int interleaved, int64_t half, int64_t c, int64_t *i1, int64_t *i2)
{
    *i1 = interleaved ? 2 * c : c;
    *i2 = interleaved ? 2 * c + 1 : c + half;
}

#endif /* BD_OPS_MSATTN_H */
