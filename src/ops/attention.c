/* attention.c: attribute parsing, shape inference and cost of the attention
 * op family: ONNX's Attention (opsets 23 to 25: 3-D and 4-D Q/K/V, grouped
 * query heads, boolean or additive masks broadcast to the scores and shorter
 * than the keys, is_causal with the bottom-right offset, past/present KV
 * cache, nonpad_kv_seqlen, left/right windows, scale, softcap,
 * softmax_precision and the qk_matmul_output modes). */
#include "attention.h"

#include <string.h>

static int is_float_kind(int dt)
{
    return dt == BRAID_DTYPE_FLOAT || dt == BRAID_DTYPE_DOUBLE || dt == BRAID_DTYPE_FLOAT16 ||
           dt == BRAID_DTYPE_BFLOAT16;
}

braid_status bd_attention_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_attention_params *p = bd_calloc(1, sizeof *p);
    BD_CHECK_ALLOC(e, p);
    if (n->op == BD_OP_PV_FlexAttention) { /* src/onnx/flexattn.c replaces it by other ops at load */
        st = BD_FAIL(e, BRAID_ERR_INTERNAL, "FlexAttention is expanded at load and never runs as one node");
        goto fail;
    }
    if (n->op != BD_OP_Attention) {
        st = BD_FAIL(e, BRAID_ERR_INTERNAL, "op %s is not in the attention family", n->op_type);
        goto fail;
    }
    int64_t causal = 0, mode = 0, prec = 0;
    p->has_scale = bd_node_attr(n, "scale") != NULL;
    BD_TRY(bd_attr_float(n, "scale", 0.0f, &p->scale, e));
    BD_TRY(bd_attr_float(n, "softcap", 0.0f, &p->softcap, e));
    BD_TRY(bd_attr_int(n, "is_causal", 0, &causal, e));
    BD_TRY(bd_attr_int(n, "q_num_heads", 0, &p->q_heads, e));
    BD_TRY(bd_attr_int(n, "kv_num_heads", 0, &p->kv_heads, e));
    BD_TRY(bd_attr_int(n, "softmax_precision", 0, &prec, e));
    BD_TRY(bd_attr_int(n, "qk_matmul_output_mode", 0, &mode, e));
    p->left = p->right = -1;
    if (n->opset >= 25) {
        BD_TRY(bd_attr_int(n, "left_window_size", -1, &p->left, e));
        BD_TRY(bd_attr_int(n, "right_window_size", -1, &p->right, e));
    }
    if (p->left < -1 || p->right < -1) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "left_window_size (%lld) and right_window_size (%lld) must be -1 "
                     "or nonnegative", (long long)p->left, (long long)p->right);
        goto fail;
    }
    if (causal != 0 && causal != 1) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "is_causal must be 0 or 1, not %lld", (long long)causal);
        goto fail;
    }
    if (mode < 0 || mode > 3) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "qk_matmul_output_mode must be 0 to 3, not %lld", (long long)mode);
        goto fail;
    }
    if (bd_node_attr(n, "softmax_precision") && !is_float_kind((int)prec)) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "softmax_precision must be 1 (float), 10 (float16), 11 (double) or "
                     "16 (bfloat16), not %lld", (long long)prec);
        goto fail;
    }
    if (p->q_heads < 0 || p->kv_heads < 0) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "q_num_heads (%lld) and kv_num_heads (%lld) must be positive",
                     (long long)p->q_heads, (long long)p->kv_heads);
        goto fail;
    }
    p->is_causal = (int)causal;
    p->qk_mode = (int)mode;
    p->softmax_precision = (int)prec;
fail:
    return bd_params_done(n, p, st);
}

static int present(const bd_tensor *t) { return t->dtype != BRAID_DTYPE_UNDEFINED; }

braid_status bd_attention_geometry(const bd_node *n, const bd_tensor *in, bd_attention_geom *g, bd_err *e)
{
    const bd_attention_params *p = n->params;
    const bd_tensor *q = &in[0], *k = &in[1], *v = &in[2];
    const bd_tensor *pk = n->n_in > 4 ? &in[4] : NULL, *pv = n->n_in > 5 ? &in[5] : NULL;
    char s1[160], s2[160], s3[160];
    memset(g, 0, sizeof *g);
    if (!p) return BD_FAIL(e, BRAID_ERR_INTERNAL, "attributes were not parsed");
    if ((q->rank != 3 && q->rank != 4) || k->rank != q->rank || v->rank != q->rank)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "Q, K and V must all be 3-D or all 4-D, got Q %s, K %s and V %s",
                       bd_shape_str(q, s1, sizeof s1), bd_shape_str(k, s2, sizeof s2), bd_shape_str(v, s3, sizeof s3));
    g->rank3 = q->rank == 3;
    g->b = q->dims[0];
    if (g->rank3) {
        if (p->q_heads <= 0 || p->kv_heads <= 0)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "3-D Q, K and V need the q_num_heads and kv_num_heads "
                           "attributes");
        g->hq = p->q_heads, g->hkv = p->kv_heads;
        g->sq = q->dims[1], g->skv = k->dims[1];
        if (q->dims[2] % g->hq || k->dims[2] % g->hkv || v->dims[2] % g->hkv)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "the hidden sizes of Q %s (q_num_heads %lld), K %s and V %s "
                           "(kv_num_heads %lld) must be multiples of their head counts", bd_shape_str(q, s1, sizeof s1),
                           (long long)g->hq, bd_shape_str(k, s2, sizeof s2), bd_shape_str(v, s3, sizeof s3),
                           (long long)g->hkv);
        g->d = q->dims[2] / g->hq;
        int64_t dk = k->dims[2] / g->hkv;
        g->dv = v->dims[2] / g->hkv;
        if (dk != g->d)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "Q's head size %lld (%s over %lld heads) differs from K's %lld (%s over "
                           "%lld heads)", (long long)g->d, bd_shape_str(q, s1, sizeof s1), (long long)g->hq,
                           (long long)dk, bd_shape_str(k, s2, sizeof s2), (long long)g->hkv);
        if (v->dims[1] != g->skv || k->dims[0] != g->b || v->dims[0] != g->b)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "K %s and V %s must have Q's batch (%lld) and one sequence length",
                           bd_shape_str(k, s2, sizeof s2), bd_shape_str(v, s3, sizeof s3), (long long)g->b);
    } else {
        if ((p->q_heads || p->kv_heads) && n->opset >= 25)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "q_num_heads and kv_num_heads must not be given with 4-D inputs");
        g->hq = q->dims[1], g->sq = q->dims[2], g->d = q->dims[3];
        g->hkv = k->dims[1], g->skv = k->dims[2], g->dv = v->dims[3];
        if ((p->q_heads && p->q_heads != g->hq) || (p->kv_heads && p->kv_heads != g->hkv))
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "q_num_heads %lld and kv_num_heads %lld disagree with 4-D Q %s "
                           "and K %s", (long long)p->q_heads, (long long)p->kv_heads, bd_shape_str(q, s1, sizeof s1),
                           bd_shape_str(k, s2, sizeof s2));
        if (k->dims[0] != g->b || v->dims[0] != g->b || v->dims[1] != g->hkv || v->dims[2] != g->skv ||
            k->dims[3] != g->d)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "Q %s, K %s and V %s disagree: K must be (batch, kv_heads, kv_seq, "
                           "Q's head size) and V (batch, kv_heads, kv_seq, v_head_size)", bd_shape_str(q, s1, sizeof s1),
                           bd_shape_str(k, s2, sizeof s2), bd_shape_str(v, s3, sizeof s3));
    }
    if (g->hkv <= 0 || g->hq % g->hkv)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "the query head count %lld must be a multiple of the key/value head count "
                       "%lld", (long long)g->hq, (long long)g->hkv);
    if ((pk && present(pk)) != (pv && present(pv)))
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "past_key and past_value must be given together");
    if (pk && present(pk)) {
        if (pk->rank != 4 || pv->rank != 4 || pk->dims[0] != g->b || pk->dims[1] != g->hkv || pk->dims[3] != g->d ||
            pv->dims[0] != g->b || pv->dims[1] != g->hkv || pv->dims[2] != pk->dims[2] || pv->dims[3] != g->dv)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "past_key %s and past_value %s must be (%lld, %lld, past, %lld) and "
                           "(%lld, %lld, past, %lld)", bd_shape_str(pk, s1, sizeof s1), bd_shape_str(pv, s2, sizeof s2),
                           (long long)g->b, (long long)g->hkv, (long long)g->d, (long long)g->b, (long long)g->hkv,
                           (long long)g->dv);
        g->spast = pk->dims[2];
    }
    g->stot = g->spast + g->skv;
    g->cdt = q->dtype == BRAID_DTYPE_DOUBLE || k->dtype == BRAID_DTYPE_DOUBLE || v->dtype == BRAID_DTYPE_DOUBLE
                 ? BRAID_DTYPE_DOUBLE : BRAID_DTYPE_FLOAT;
    return BRAID_OK;
}

static braid_status attention_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_attention_params *p = n->params;
    const bd_tensor *q = &in[0], *k = &in[1], *v = &in[2];
    const bd_tensor *mask = n->n_in > 3 && present(&in[3]) ? &in[3] : NULL;
    const bd_tensor *pk = n->n_in > 4 && present(&in[4]) ? &in[4] : NULL;
    const bd_tensor *pv = n->n_in > 5 && present(&in[5]) ? &in[5] : NULL;
    const bd_tensor *nonpad = n->n_in > 6 && present(&in[6]) ? &in[6] : NULL;
    char s1[160];
    braid_status st;
    if (!is_float_kind(q->dtype) || !is_float_kind(v->dtype))
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "Q has dtype %s and V %s; Attention takes float, float16, bfloat16 "
                       "and double", bd_dtype_name(q->dtype), bd_dtype_name(v->dtype));
    bd_attention_geom g;
    if ((st = bd_attention_geometry(n, in, &g, e))) return st; /* past_key and past_value: both or neither */
    if (k->dtype != q->dtype || (pk && pk->dtype != q->dtype) || (pv && pv->dtype != v->dtype))
        return BD_FAIL(e, BRAID_ERR_DTYPE, "K%s must have Q's dtype %s and past_value V's %s (K is %s)",
                       pk ? " and past_key" : "", bd_dtype_name(q->dtype), bd_dtype_name(v->dtype),
                       bd_dtype_name(k->dtype));
    if (nonpad) {
        if (pk) return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "nonpad_kv_seqlen cannot be combined with past_key");
        if (nonpad->dtype != BRAID_DTYPE_INT64)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "nonpad_kv_seqlen must be int64, not %s", bd_dtype_name(nonpad->dtype));
        if (nonpad->rank != 1 || nonpad->dims[0] != g.b)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "nonpad_kv_seqlen must be (%lld), not %s", (long long)g.b,
                           bd_shape_str(nonpad, s1, sizeof s1));
    }
    if (mask) {
        int dt = mask->dtype;
        if (dt != BRAID_DTYPE_BOOL && !is_float_kind(dt) && (dt < BRAID_DTYPE_UINT8 || dt > BRAID_DTYPE_INT64) &&
            dt != BRAID_DTYPE_UINT32 && dt != BRAID_DTYPE_UINT64)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "attn_mask has dtype %s; it must be bool or numeric", bd_dtype_name(dt));
        int64_t full[4] = {g.b, g.hq, g.sq, g.stot};
        int ok = mask->rank >= 1 && mask->rank <= 4 && mask->dims[mask->rank - 1] <= g.stot;
        for (int i = 0; ok && i < mask->rank - 1; i++) {
            int64_t m = mask->dims[i], want = full[4 - mask->rank + i];
            ok = m == 1 || m == want;
        }
        if (!ok)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "attn_mask %s does not broadcast to the scores (%lld, %lld, %lld, <= %lld)",
                           bd_shape_str(mask, s1, sizeof s1), (long long)g.b, (long long)g.hq, (long long)g.sq,
                           (long long)g.stot);
    }
    bd_tensor *y = &out[0];
    y->dtype = q->dtype;
    y->rank = q->rank;
    y->dims[0] = g.b;
    if (g.rank3) {
        y->dims[1] = g.sq;
        y->dims[2] = g.hq * g.dv;
    } else {
        y->dims[1] = g.hq, y->dims[2] = g.sq, y->dims[3] = g.dv;
    }
    for (int i = 1; i < n->n_out && i < 4; i++) {
        bd_tensor *o = &out[i];
        o->dtype = i == 2 ? v->dtype : q->dtype;
        o->rank = 4;
        o->dims[0] = g.b;
        o->dims[1] = i == 3 ? g.hq : g.hkv;
        o->dims[2] = i == 3 ? g.sq : g.stot;
        o->dims[3] = i == 1 ? g.d : i == 2 ? g.dv : g.stot;
    }
    (void)p;
    return BRAID_OK;
}

braid_status bd_attention_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    if (n->op == BD_OP_Attention) return attention_infer(n, in, out, e);
    return BD_FAIL(e, BRAID_ERR_INTERNAL, "op %s is not in the attention family", n->op_type);
}

double bd_attention_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    (void)in;
    if (n->op != BD_OP_Attention || out[0].rank < 3) return 0;
    bd_attention_geom g;
    bd_err e = {0};
    if (bd_attention_geometry(n, in, &g, &e)) return 0;
    /* two products and about ten operations per score (mask, softmax) */
    double scores = (double)g.b * (double)g.hq * (double)g.sq * (double)g.stot;
    return scores * (2.0 * (double)(g.d + g.dv) + 10.0);
}
