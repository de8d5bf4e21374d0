/* msattn.c: attribute parsing, shape inference and cost of the msattn op
 * family (com.microsoft): MultiHeadAttention (3-D Q/K/V with the packed
 * bias, or K/V already in (batch, heads, seq, size); key_padding_mask as
 * lengths, (batch, total) or (batch, seq, total); attention_bias; past and
 * present K/V; the qk output), Attention (the Q/K/V projection of one input
 * by merged weights, qkv_hidden_sizes, mask_index, the stacked past/present),
 * GroupQueryAttention (separate or packed Q/K/V, the cache written in place
 * at each batch's seqlens_k, causal or not, local window, softcap, rotary
 * from cos/sin caches) and EmbedLayerNormalization. What onnxruntime's CPU kernels refuse or
 * braid does not run (packed QKV in MultiHeadAttention, left-padding mask
 * indices, 4-D masks, shared past/present buffers, beam-search inputs,
 * rotary inside Attention; GroupQueryAttention's quantized or windowed
 * caches, position_ids, attention_bias, head_sink, Q/K norms, smooth
 * softmax and qk output) is UNSUPPORTED with its name. */
#include "msattn.h"

#include <string.h>

static int float_kind(int dt)
{
    return dt == BRAID_DTYPE_FLOAT || dt == BRAID_DTYPE_FLOAT16 || dt == BRAID_DTYPE_BFLOAT16;
}

static int present(const bd_node *n, const bd_tensor *in, int i) { return i < n->n_in && in[i].dtype != 0; }

braid_status bd_msattn_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_msattn_params *p = bd_calloc(1, sizeof *p);
    int64_t uni = 0, rotary = 0, share = 0;
    int cnt = 0;
    BD_CHECK_ALLOC(e, p);
    switch (n->op) {
    case BD_OP_MS_MultiHeadAttention: case BD_OP_MS_Attention:
        BD_TRY(bd_attr_int(n, "num_heads", 0, &p->num_heads, e));
        BD_TRY(bd_attr_float(n, "scale", 0.0f, &p->scale, e));
        BD_TRY(bd_attr_int(n, "unidirectional", 0, &uni, e));
        BD_TRY(bd_attr_float(n, "mask_filter_value", -10000.0f, &p->mask_filter, e));
        if (p->num_heads <= 0) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'num_heads' must be positive (got %lld)",
                         (long long)p->num_heads);
            goto fail;
        }
        p->unidirectional = uni != 0;
        if (n->op == BD_OP_MS_Attention) {
            BD_TRY(bd_attr_ints(n, "qkv_hidden_sizes", p->qkv_sizes, 3, &cnt, e));
            BD_TRY(bd_attr_int(n, "do_rotary", 0, &rotary, e));
            BD_TRY(bd_attr_int(n, "past_present_share_buffer", 0, &share, e));
            if (cnt != 0 && cnt != 3) {
                st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "qkv_hidden_sizes must have 3 values, not %d", cnt);
                goto fail;
            }
            if (rotary || share) {
                st = BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "%s=1 is not supported", rotary ? "do_rotary" :
                             "past_present_share_buffer");
                goto fail;
            }
        }
        break;
    case BD_OP_MS_EmbedLayerNormalization: BD_TRY(bd_attr_float(n, "epsilon", 1e-12f, &p->epsilon, e)); break;
    case BD_OP_MS_GroupQueryAttention: {
        int64_t causal = 1, rot = 0, inter = 0, smooth = 0, qko = 0, sw = 0, bits = 0;
        const char *kq = NULL, *vq = NULL;
        BD_TRY(bd_attr_int(n, "num_heads", 0, &p->num_heads, e));
        BD_TRY(bd_attr_int(n, "kv_num_heads", 0, &p->kv_heads, e));
        BD_TRY(bd_attr_float(n, "scale", 0.0f, &p->scale, e));
        BD_TRY(bd_attr_float(n, "softcap", 0.0f, &p->softcap, e));
        BD_TRY(bd_attr_int(n, "local_window_size", -1, &p->local_window, e));
        BD_TRY(bd_attr_int(n, "causal", 1, &causal, e));
        BD_TRY(bd_attr_int(n, "do_rotary", 0, &rot, e));
        BD_TRY(bd_attr_int(n, "rotary_interleaved", 0, &inter, e));
        BD_TRY(bd_attr_int(n, "smooth_softmax", 0, &smooth, e));
        BD_TRY(bd_attr_int(n, "qk_output", 0, &qko, e));
        BD_TRY(bd_attr_int(n, "sliding_window_cache", 0, &sw, e));
        BD_TRY(bd_attr_int(n, "kv_cache_bit_width", 0, &bits, e));
        BD_TRY(bd_attr_string(n, "k_quant_type", "NONE", &kq, e));
        BD_TRY(bd_attr_string(n, "v_quant_type", "NONE", &vq, e));
        if (p->num_heads <= 0 || p->kv_heads <= 0 || p->num_heads % p->kv_heads) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "num_heads (%lld) must be a positive multiple of kv_num_heads "
                         "(%lld); both are required", (long long)p->num_heads, (long long)p->kv_heads);
            goto fail;
        }
        if (smooth || qko || sw || bits || strcmp(kq, "NONE") || strcmp(vq, "NONE")) {
            st = BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "%s is not supported", smooth ? "smooth_softmax" : qko ? "qk_output"
                         : sw ? "sliding_window_cache" : "a quantized KV cache");
            goto fail;
        }
        if ((causal != 0 && causal != 1) || (!causal && p->local_window != -1)) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "causal must be 0 or 1, and local_window_size -1 when causal is 0");
            goto fail;
        }
        p->causal = (int)causal, p->do_rotary = rot != 0, p->rotary_interleaved = inter != 0;
        break;
    }
    default: st = BD_FAIL(e, BRAID_ERR_INTERNAL, "op %s is not in the msattn family", n->op_type); goto fail;
    }
fail:
    return bd_params_done(n, p, st);
}

/* The mask's kind from its shape; fails on the forms braid does not run. */
static braid_status mask_kind(const bd_tensor *m, const bd_msattn_geom *g, const char *what, int *kind, bd_err *e)
{
    char s1[160];
    if (m->dtype != BRAID_DTYPE_INT32) return BD_FAIL(e, BRAID_ERR_DTYPE, "%s must be int32, not %s", what, bd_dtype_name(m->dtype));
    if (m->rank == 1 && m->dims[0] == g->b) *kind = BD_MSMASK_LENGTHS;
    else if (m->rank == 2 && m->dims[0] == g->b && m->dims[1] == g->t) *kind = BD_MSMASK_KEYS;
    else if (m->rank == 3 && m->dims[0] == g->b && m->dims[1] == g->s && m->dims[2] == g->t) *kind = BD_MSMASK_FULL;
    else if ((m->rank == 1 && (m->dims[0] == 2 * g->b || m->dims[0] == 3 * g->b + 2)) || m->rank == 4)
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "%s of shape %s (left padding, packed or 4-D masks) is not supported",
                       what, bd_shape_str(m, s1, sizeof s1));
    else
        return BD_FAIL(e, BRAID_ERR_SHAPE, "%s %s must be (%lld), (%lld, %lld) or (%lld, %lld, %lld)", what,
                       bd_shape_str(m, s1, sizeof s1), (long long)g->b, (long long)g->b, (long long)g->t,
                       (long long)g->b, (long long)g->s, (long long)g->t);
    return BRAID_OK;
}

static braid_status check_bias(const bd_tensor *ab, const bd_msattn_geom *g, bd_err *e)
{
    char s1[160];
    if (ab->rank != 4 || (ab->dims[0] != 1 && ab->dims[0] != g->b) || (ab->dims[1] != 1 && ab->dims[1] != g->n) ||
        ab->dims[2] != g->s || ab->dims[3] != g->t)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "attention_bias %s must be (%lld or 1, %lld or 1, %lld, %lld)",
                       bd_shape_str(ab, s1, sizeof s1), (long long)g->b, (long long)g->n, (long long)g->s, (long long)g->t);
    return BRAID_OK;
}

braid_status bd_msattn_geometry(const bd_node *n, const bd_tensor *in, bd_msattn_geom *g, bd_err *e)
{
    const bd_msattn_params *p = n->params;
    char s1[160], s2[160], s3[160];
    braid_status st;
    memset(g, 0, sizeof *g);
    if (!p) return BD_FAIL(e, BRAID_ERR_INTERNAL, "attributes were not parsed");
    g->n = p->num_heads;
    int64_t d, dv;
    if (n->op == BD_OP_MS_MultiHeadAttention) {
        const bd_tensor *q = &in[0], *k = &in[1], *v = &in[2];
        if (q->rank == 5 || !present(n, in, 1) || (present(n, in, 1) && k->rank == 5))
            return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "packed QKV or packed KV inputs are not supported");
        if (present(n, in, 8) || present(n, in, 9))
            return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "past_sequence_length and cache_indirection (shared buffers, "
                           "beam search) are not supported");
        if (q->rank != 3 || !present(n, in, 2) || (k->rank != 3 && k->rank != 4) || v->rank != k->rank)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "query %s must be 3-D and key %s and value %s both 3-D or both 4-D",
                           bd_shape_str(q, s1, sizeof s1), bd_shape_str(k, s2, sizeof s2), bd_shape_str(v, s3, sizeof s3));
        g->b = q->dims[0], g->s = q->dims[1], d = q->dims[2];
        if (d % g->n) return BD_FAIL(e, BRAID_ERR_SHAPE, "query hidden size %lld is not a multiple of num_heads %lld", (long long)d, (long long)g->n);
        g->h = d / g->n;
        g->kv_bnsh = k->rank == 4;
        if (g->kv_bnsh) {
            if (k->dims[0] != g->b || k->dims[1] != g->n || k->dims[3] != g->h || v->dims[0] != g->b ||
                v->dims[1] != g->n || v->dims[2] != k->dims[2])
                return BD_FAIL(e, BRAID_ERR_SHAPE, "4-D key %s and value %s must be (%lld, %lld, kv_seq, %lld) and "
                               "(%lld, %lld, kv_seq, v_head)", bd_shape_str(k, s2, sizeof s2), bd_shape_str(v, s3, sizeof s3),
                               (long long)g->b, (long long)g->n, (long long)g->h, (long long)g->b, (long long)g->n);
            if (present(n, in, 3) || present(n, in, 6) || present(n, in, 7))
                return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "bias and past inputs cannot come with 4-D key and value");
            g->l = k->dims[2], g->hv = v->dims[3];
        } else {
            if (k->dims[0] != g->b || v->dims[0] != g->b || k->dims[2] != d || v->dims[1] != k->dims[1] || v->dims[2] % g->n)
                return BD_FAIL(e, BRAID_ERR_SHAPE, "key %s must be (%lld, kv_seq, %lld) and value %s (%lld, kv_seq, "
                               "heads * v_head)", bd_shape_str(k, s2, sizeof s2), (long long)g->b, (long long)d,
                               bd_shape_str(v, s3, sizeof s3), (long long)g->b);
            g->l = k->dims[1], g->hv = v->dims[2] / g->n;
        }
        dv = g->n * g->hv;
        if (present(n, in, 3)) {
            if (in[3].rank != 1 || in[3].dims[0] != 2 * d + dv)
                return BD_FAIL(e, BRAID_ERR_SHAPE, "bias %s must be (%lld)", bd_shape_str(&in[3], s1, sizeof s1), (long long)(2 * d + dv));
            g->has_bias = 1;
        }
        if (present(n, in, 6) != present(n, in, 7))
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "past_key and past_value must be given together");
        if (present(n, in, 6)) {
            const bd_tensor *pk = &in[6], *pv = &in[7];
            if (pk->rank != 4 || pv->rank != 4 || pk->dims[0] != g->b || pk->dims[1] != g->n || pk->dims[3] != g->h ||
                pv->dims[0] != g->b || pv->dims[1] != g->n || pv->dims[2] != pk->dims[2] || pv->dims[3] != g->hv)
                return BD_FAIL(e, BRAID_ERR_SHAPE, "past_key %s and past_value %s must be (%lld, %lld, past, %lld) and "
                               "(%lld, %lld, past, %lld)", bd_shape_str(pk, s1, sizeof s1), bd_shape_str(pv, s2, sizeof s2),
                               (long long)g->b, (long long)g->n, (long long)g->h, (long long)g->b, (long long)g->n,
                               (long long)g->hv);
            g->p = pk->dims[2], g->has_past = 1;
        }
        g->t = g->p + g->l;
        if (present(n, in, 4) && (st = mask_kind(&in[4], g, "key_padding_mask", &g->mask_kind, e))) return st;
        if (present(n, in, 5)) {
            if ((st = check_bias(&in[5], g, e))) return st;
            g->has_attn_bias = 1;
        }
        return BRAID_OK;
    }
    if (n->op == BD_OP_MS_GroupQueryAttention) {
        const bd_tensor *q = &in[0];
        static const char *const refused[] = {"position_ids", "attention_bias", "head_sink", "k_scale", "v_scale",
                                              "q_norm_weight", "k_norm_weight"};
        for (int i = 9; i < 16; i++)
            if (present(n, in, i))
                return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "input '%s' is not supported", refused[i - 9]);
        g->hkv = p->kv_heads;
        g->packed = !present(n, in, 1);
        if (q->rank != 3) return BD_FAIL(e, BRAID_ERR_SHAPE, "query %s must be 3-D", bd_shape_str(q, s1, sizeof s1));
        g->b = q->dims[0], g->s = g->l = q->dims[1];
        int64_t heads = g->packed ? g->n + 2 * g->hkv : g->n;
        if (q->dims[2] % heads)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "query %s does not split into %lld heads", bd_shape_str(q, s1, sizeof s1),
                           (long long)heads);
        g->h = g->hv = q->dims[2] / heads;
        if (!g->packed) {
            const bd_tensor *k = &in[1], *v = present(n, in, 2) ? &in[2] : NULL;
            int64_t want[3] = {g->b, g->s, g->hkv * g->h};
            if (!v || k->rank != 3 || v->rank != 3 || memcmp(k->dims, want, sizeof want) || memcmp(v->dims, want, sizeof want))
                return BD_FAIL(e, BRAID_ERR_SHAPE, "key and value must both be (%lld, %lld, %lld)", (long long)g->b,
                               (long long)g->s, (long long)(g->hkv * g->h));
        }
        if (present(n, in, 3) != present(n, in, 4))
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "past_key and past_value must be given together");
        if (present(n, in, 3)) {
            const bd_tensor *pk = &in[3], *pv = &in[4];
            if (pk->rank != 4 || !bd_shape_equal(pk, pv) || pk->dims[0] != g->b || pk->dims[1] != g->hkv || pk->dims[3] != g->h)
                return BD_FAIL(e, BRAID_ERR_SHAPE, "past_key %s and past_value %s must be (%lld, %lld, past, %lld)",
                               bd_shape_str(pk, s1, sizeof s1), bd_shape_str(pv, s2, sizeof s2), (long long)g->b,
                               (long long)g->hkv, (long long)g->h);
            g->p = pk->dims[2];
            g->has_past = g->p > 0;
        }
        const bd_tensor *sl = &in[5], *tl = &in[6];
        if (sl->dtype != BRAID_DTYPE_INT32 || sl->rank != 1 || sl->dims[0] != g->b || tl->dtype != BRAID_DTYPE_INT32 ||
            bd_numel(tl) != 1)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "seqlens_k must be int32 (%lld) and total_sequence_length one int32",
                           (long long)g->b);
        if (!tl->data)
            return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "total_sequence_length decides the present length: it must be known "
                           "when the plan is made");
        int64_t total = *(const int32_t *)tl->data;
        g->t = total > g->p ? total : g->p;
        if (total < g->s) return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "total_sequence_length %lld is below the query's %lld tokens", (long long)total, (long long)g->s);
        if (p->do_rotary) {
            const bd_tensor *cs = &in[7], *sn = &in[8];
            if (!present(n, in, 7) || !present(n, in, 8) || cs->rank != 2 || !bd_shape_equal(cs, sn) ||
                2 * cs->dims[1] > g->h || cs->dims[1] < 1)
                return BD_FAIL(e, BRAID_ERR_SHAPE, "do_rotary needs cos_cache and sin_cache of one shape (max_pos, <= %lld)",
                               (long long)(g->h / 2));
            g->rd = 2 * cs->dims[1];
        }
        return BRAID_OK;
    }
    /* Attention */
    const bd_tensor *x = &in[0], *w = &in[1];
    if (x->rank != 3 || w->rank != 2 || w->dims[0] != x->dims[2])
        return BD_FAIL(e, BRAID_ERR_SHAPE, "input %s must be (batch, seq, hidden) and weights %s (hidden, q + k + v)",
                       bd_shape_str(x, s1, sizeof s1), bd_shape_str(w, s2, sizeof s2));
    g->b = x->dims[0], g->s = g->l = x->dims[1], g->din = x->dims[2];
    int64_t qs = p->qkv_sizes[0], ks = p->qkv_sizes[1], vs = p->qkv_sizes[2];
    if (!qs) qs = ks = vs = w->dims[1] / 3;
    if (qs != ks || qs + ks + vs != w->dims[1] || qs % g->n || vs % g->n)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "weights %s do not split into Q, K, V of %lld, %lld, %lld (Q and K equal, "
                       "each a multiple of num_heads %lld)", bd_shape_str(w, s2, sizeof s2), (long long)qs,
                       (long long)ks, (long long)vs, (long long)g->n);
    g->h = qs / g->n, g->hv = vs / g->n;
    if (present(n, in, 2)) {
        if (in[2].rank != 1 || in[2].dims[0] != w->dims[1])
            return BD_FAIL(e, BRAID_ERR_SHAPE, "bias %s must be (%lld)", bd_shape_str(&in[2], s1, sizeof s1), (long long)w->dims[1]);
        g->has_bias = 1;
    }
    if (present(n, in, 6)) return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "past_sequence_length (shared buffers) is not supported");
    if (present(n, in, 4)) {
        const bd_tensor *ps = &in[4];
        if (g->h != g->hv || ps->rank != 5 || ps->dims[0] != 2 || ps->dims[1] != g->b || ps->dims[2] != g->n ||
            ps->dims[4] != g->h)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "past %s must be (2, %lld, %lld, past, %lld), with Q, K and V of one "
                           "head size", bd_shape_str(ps, s1, sizeof s1), (long long)g->b, (long long)g->n, (long long)g->h);
        g->p = ps->dims[3], g->has_past = 1;
    }
    g->t = g->p + g->l;
    if (present(n, in, 3) && (st = mask_kind(&in[3], g, "mask_index", &g->mask_kind, e))) return st;
    if (present(n, in, 5)) {
        if ((st = check_bias(&in[5], g, e))) return st;
        g->has_attn_bias = 1;
    }
    return BRAID_OK;
}

static braid_status embed_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_tensor *ids = &in[0], *we = &in[2], *pe = &in[3], *ga = &in[5], *be = &in[6];
    char s1[160];
    if (!float_kind(we->dtype)) return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "word_embedding has dtype %s", bd_dtype_name(we->dtype));
    for (int i = 0; i < n->n_in && i < 9; i++) {
        if (!present(n, in, i)) continue;
        int want = i == 0 || i == 1 || i == 7 || i == 8 ? BRAID_DTYPE_INT32 : we->dtype;
        if (in[i].dtype != want)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "input %d has dtype %s, not %s", i, bd_dtype_name(in[i].dtype), bd_dtype_name(want));
    }
    if (ids->rank != 2 || we->rank != 2 || pe->rank != 2 || pe->dims[1] != we->dims[1])
        return BD_FAIL(e, BRAID_ERR_SHAPE, "input_ids %s must be (batch, seq) and the embeddings 2-D of one hidden size",
                       bd_shape_str(ids, s1, sizeof s1));
    int64_t b = ids->dims[0], s = ids->dims[1], d = we->dims[1];
    if (ga->rank != 1 || ga->dims[0] != d || be->rank != 1 || be->dims[0] != d)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "gamma and beta must be (%lld)", (long long)d);
    if (present(n, in, 1) != present(n, in, 4))
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "segment_ids and segment_embedding must be given together");
    if (present(n, in, 4) && (in[4].rank != 2 || in[4].dims[1] != d))
        return BD_FAIL(e, BRAID_ERR_SHAPE, "segment_embedding must be (segments, %lld)", (long long)d);
    for (int i = 1; i <= 7; i += 6)
        if (present(n, in, i) && !bd_shape_equal(&in[i], ids))
            return BD_FAIL(e, BRAID_ERR_SHAPE, "input %d must have input_ids' shape", i);
    if (present(n, in, 8) && (in[8].rank != 2 || (in[8].dims[0] != b && in[8].dims[0] != 1) || in[8].dims[1] != s))
        return BD_FAIL(e, BRAID_ERR_SHAPE, "position_ids must be (%lld or 1, %lld)", (long long)b, (long long)s);
    out[0] = (bd_tensor){.dtype = we->dtype, .rank = 3, .dims = {b, s, d}};
    if (n->n_out > 1) out[1] = (bd_tensor){.dtype = BRAID_DTYPE_INT32, .rank = 1, .dims = {b}};
    if (n->n_out > 2) out[2] = out[0];
    return BRAID_OK;
}

braid_status bd_msattn_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    if (n->op == BD_OP_MS_EmbedLayerNormalization) return embed_infer(n, in, out, e);
    int dt = in[0].dtype;
    if (!float_kind(dt)) return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "%s does not take dtype %s", n->op_type, bd_dtype_name(dt));
    for (int i = 1; i < n->n_in; i++) {
        int mask_slot = n->op == BD_OP_MS_Attention ? i == 3 || i == 6
                        : n->op == BD_OP_MS_GroupQueryAttention ? i == 5 || i == 6 || i >= 9
                                                                : i == 4 || i == 8 || i == 9;
        if (present(n, in, i) && !mask_slot && in[i].dtype != dt)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "input %d has dtype %s but input 0 %s", i, bd_dtype_name(in[i].dtype),
                           bd_dtype_name(dt));
    }
    bd_msattn_geom g;
    braid_status st = bd_msattn_geometry(n, in, &g, e);
    if (st) return st;
    out[0] = (bd_tensor){.dtype = dt, .rank = 3, .dims = {g.b, g.s, g.n * g.hv}};
    if (n->op == BD_OP_MS_GroupQueryAttention) {
        for (int o = 1; o <= 2 && o < n->n_out; o++) out[o] = (bd_tensor){.dtype = dt, .rank = 4, .dims = {g.b, g.hkv, g.t, g.h}};
        if (n->n_out > 3) return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "output_qk is not supported");
        return BRAID_OK;
    }
    if (n->op == BD_OP_MS_Attention) {
        if (n->n_out > 1) out[1] = (bd_tensor){.dtype = dt, .rank = 5, .dims = {2, g.b, g.n, g.t, g.h}};
        return BRAID_OK;
    }
    if (n->n_out > 1) out[1] = (bd_tensor){.dtype = dt, .rank = 4, .dims = {g.b, g.n, g.t, g.h}};
    if (n->n_out > 2) out[2] = (bd_tensor){.dtype = dt, .rank = 4, .dims = {g.b, g.n, g.t, g.hv}};
    if (n->n_out > 3) out[3] = (bd_tensor){.dtype = dt, .rank = 4, .dims = {g.b, g.n, g.s, g.t}};
    return BRAID_OK;
}

double bd_msattn_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    if (n->op == BD_OP_MS_EmbedLayerNormalization) return 8.0 * (double)bd_numel(&out[0]);
    bd_msattn_geom g;
    bd_err e = {0};
    if (bd_msattn_geometry(n, in, &g, &e)) return 0;
    double scores = (double)(g.b * g.n) * (double)g.s * (double)g.t; /* GQA: hq heads (n) too */
    double proj = n->op == BD_OP_MS_Attention ? 2.0 * (double)(g.b * g.s) * (double)g.din * (double)in[1].dims[1] : 0;
    return scores * (2.0 * (double)(g.h + g.hv) + 10.0) + proj;
}
