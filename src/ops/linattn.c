/* linattn.c: attribute parsing, shape inference and cost of the linattn op
 * family: LinearAttention (opset 27: the four update rules, grouped heads,
 * per-key or per-head decay, per-head or shared beta, optional past state of
 * its own dtype), CausalConvWithState (opset 27: bias, past state, silu or
 * swish); SwiGLU is an activation (src/ops/activation.c). */
#include "linattn.h"

#include <string.h>

static int float_kind(int dt)
{
    return dt == BRAID_DTYPE_FLOAT || dt == BRAID_DTYPE_FLOAT16 || dt == BRAID_DTYPE_BFLOAT16;
}

static int present(const bd_node *n, const bd_tensor *in, int i) { return i < n->n_in && in[i].dtype != 0; }

braid_status bd_linattn_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_linattn_params *p = bd_calloc(1, sizeof *p);
    BD_CHECK_ALLOC(e, p);
    switch (n->op) {
    case BD_OP_LinearAttention: {
        static const char *const rules[] = {"linear", "gated", "delta", "gated_delta"};
        const char *rule = NULL;
        BD_TRY(bd_attr_string(n, "update_rule", "gated_delta", &rule, e));
        for (p->rule = 0; p->rule < 4 && strcmp(rules[p->rule], rule); p->rule++) {}
        if (p->rule == 4) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "update_rule '%s' is not one of linear, gated, delta, gated_delta",
                         rule);
            goto fail;
        }
        BD_TRY(bd_attr_int(n, "q_num_heads", 0, &p->q_heads, e));
        BD_TRY(bd_attr_int(n, "kv_num_heads", 0, &p->kv_heads, e));
        BD_TRY(bd_attr_float(n, "scale", 0.0f, &p->scale, e));
        if (p->q_heads <= 0 || p->kv_heads <= 0 || p->q_heads % p->kv_heads) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "q_num_heads (%lld) must be a positive multiple of kv_num_heads "
                         "(%lld); both are required", (long long)p->q_heads, (long long)p->kv_heads);
            goto fail;
        }
        break;
    }
    case BD_OP_CausalConvWithState: {
        const char *act = NULL;
        BD_TRY(bd_attr_string(n, "activation", "none", &act, e));
        if (strcmp(act, "none") && strcmp(act, "silu") && strcmp(act, "swish")) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "activation '%s' is not one of none, silu, swish", act);
            goto fail;
        }
        p->silu = strcmp(act, "none") != 0;
        break;
    }
    default: st = BD_FAIL(e, BRAID_ERR_INTERNAL, "op %s is not in the linattn family", n->op_type); goto fail;
    }
fail:
    return bd_params_done(n, p, st);
}

braid_status bd_linattn_geometry(const bd_node *n, const bd_tensor *in, bd_linattn_geom *g, bd_err *e)
{
    const bd_linattn_params *p = n->params;
    const bd_tensor *q = &in[0], *k = &in[1], *v = &in[2];
    char s1[160], s2[160], s3[160];
    memset(g, 0, sizeof *g);
    if (q->rank != 3 || k->rank != 3 || v->rank != 3)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "query %s, key %s and value %s must be 3-D (batch, time, heads * size)",
                       bd_shape_str(q, s1, sizeof s1), bd_shape_str(k, s2, sizeof s2), bd_shape_str(v, s3, sizeof s3));
    g->b = q->dims[0], g->t = q->dims[1], g->hq = p->q_heads, g->hkv = p->kv_heads;
    if (q->dims[2] % g->hq || v->dims[2] % g->hkv)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "query %s and value %s must split into %lld and %lld heads",
                       bd_shape_str(q, s1, sizeof s1), bd_shape_str(v, s3, sizeof s3), (long long)g->hq,
                       (long long)g->hkv);
    g->dk = q->dims[2] / g->hq, g->dv = v->dims[2] / g->hkv;
    if (k->dims[2] != g->hkv * g->dk || k->dims[0] != g->b || v->dims[0] != g->b || k->dims[1] != g->t ||
        v->dims[1] != g->t)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "key %s must be (%lld, %lld, %lld) and value %s (%lld, %lld, heads * d_v)",
                       bd_shape_str(k, s2, sizeof s2), (long long)g->b, (long long)g->t, (long long)(g->hkv * g->dk),
                       bd_shape_str(v, s3, sizeof s3), (long long)g->b, (long long)g->t);
    int gating = p->rule == BD_LA_GATED || p->rule == BD_LA_GATED_DELTA;
    int delta = p->rule == BD_LA_DELTA || p->rule == BD_LA_GATED_DELTA;
    if (gating != present(n, in, 4) || delta != present(n, in, 5))
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "update rule %s %s decay and %s beta",
                       (const char *[]){"linear", "gated", "delta", "gated_delta"}[p->rule],
                       gating ? "needs" : "forbids", delta ? "needs" : "forbids");
    if (gating) {
        const bd_tensor *d = &in[4];
        int64_t last = d->rank == 3 ? d->dims[2] : -1;
        if (d->rank != 3 || d->dims[0] != g->b || d->dims[1] != g->t || (last != g->hkv && last != g->hkv * g->dk))
            return BD_FAIL(e, BRAID_ERR_SHAPE, "decay %s must be (%lld, %lld, %lld) or (%lld, %lld, %lld)",
                           bd_shape_str(d, s1, sizeof s1), (long long)g->b, (long long)g->t, (long long)g->hkv,
                           (long long)g->b, (long long)g->t, (long long)(g->hkv * g->dk));
        g->decay_per_key = last == g->hkv * g->dk && !(g->dk == 1);
    }
    if (delta) {
        const bd_tensor *bt = &in[5];
        int64_t last = bt->rank == 3 ? bt->dims[2] : -1;
        if (bt->rank != 3 || bt->dims[0] != g->b || bt->dims[1] != g->t || (last != g->hkv && last != 1))
            return BD_FAIL(e, BRAID_ERR_SHAPE, "beta %s must be (%lld, %lld, %lld) or (%lld, %lld, 1)",
                           bd_shape_str(bt, s1, sizeof s1), (long long)g->b, (long long)g->t, (long long)g->hkv,
                           (long long)g->b, (long long)g->t);
        g->beta_shared = last == 1 && g->hkv != 1;
    }
    if (present(n, in, 3)) {
        const bd_tensor *ps = &in[3];
        if (ps->rank != 4 || ps->dims[0] != g->b || ps->dims[1] != g->hkv || ps->dims[2] != g->dk || ps->dims[3] != g->dv)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "past_state %s must be (%lld, %lld, %lld, %lld)",
                           bd_shape_str(ps, s1, sizeof s1), (long long)g->b, (long long)g->hkv, (long long)g->dk,
                           (long long)g->dv);
    }
    g->scale = p->scale != 0.0f ? p->scale : (float)(1.0 / sqrt((double)g->dk));
    return BRAID_OK;
}

braid_status bd_linattn_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    char s1[160], s2[160];
    int dt = in[0].dtype;
    if (!float_kind(dt)) return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "%s does not take dtype %s", n->op_type, bd_dtype_name(dt));
    for (int i = 1; i < n->n_in; i++) {
        if (!present(n, in, i)) continue;
        int want = n->op == BD_OP_LinearAttention && i == 3 ? -1 : dt; /* past_state has its own float dtype */
        if ((want < 0 && !float_kind(in[i].dtype)) || (want > 0 && in[i].dtype != want))
            return BD_FAIL(e, BRAID_ERR_DTYPE, "input %d has dtype %s; it must be %s", i, bd_dtype_name(in[i].dtype),
                           want < 0 ? "float, float16 or bfloat16" : bd_dtype_name(want));
    }
    if (n->op == BD_OP_LinearAttention) {
        bd_linattn_geom g;
        braid_status st = bd_linattn_geometry(n, in, &g, e);
        if (st) return st;
        out[0] = (bd_tensor){.dtype = dt, .rank = 3, .dims = {g.b, g.t, g.hq * g.dv}};
        if (n->n_out > 1)
            out[1] = (bd_tensor){.dtype = present(n, in, 3) ? in[3].dtype : dt, .rank = 4, .dims = {g.b, g.hkv, g.dk, g.dv}};
        return BRAID_OK;
    }
    /* CausalConvWithState */
    const bd_tensor *x = &in[0], *w = &in[1];
    if (x->rank != 3 || w->rank != 3 || w->dims[0] != x->dims[1] || w->dims[1] != 1 || w->dims[2] < 1)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "input %s must be (batch, channels, length) and weight %s (channels, 1, k)",
                       bd_shape_str(x, s1, sizeof s1), bd_shape_str(w, s2, sizeof s2));
    int64_t k = w->dims[2];
    if (present(n, in, 2) && (in[2].rank != 1 || in[2].dims[0] != x->dims[1]))
        return BD_FAIL(e, BRAID_ERR_SHAPE, "bias %s must be (%lld)", bd_shape_str(&in[2], s1, sizeof s1),
                       (long long)x->dims[1]);
    if (present(n, in, 3) && (in[3].rank != 3 || in[3].dims[0] != x->dims[0] || in[3].dims[1] != x->dims[1] ||
                              in[3].dims[2] != k - 1))
        return BD_FAIL(e, BRAID_ERR_SHAPE, "past_state %s must be (%lld, %lld, %lld)", bd_shape_str(&in[3], s1, sizeof s1),
                       (long long)x->dims[0], (long long)x->dims[1], (long long)(k - 1));
    out[0] = *x;
    out[0].data = NULL;
    if (n->n_out > 1) out[1] = (bd_tensor){.dtype = dt, .rank = 3, .dims = {x->dims[0], x->dims[1], k - 1}};
    return BRAID_OK;
}

double bd_linattn_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    if (n->op == BD_OP_CausalConvWithState)
        return 2.0 * (double)bd_numel(&out[0]) * (double)(in[1].rank == 3 ? in[1].dims[2] : 1);
    bd_linattn_geom g;
    bd_err e = {0};
    if (bd_linattn_geometry(n, in, &g, &e)) return 0;
    return 2.0 * (double)(g.b * g.t) * (double)(g.dk * g.dv) * (double)(3 * g.hkv + g.hq);
}
