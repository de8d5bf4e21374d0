/* rope.c: attribute parsing, shape inference and cost of the rope op family:
 * rotary position embeddings, ONNX's RotaryEmbedding (opset 23: 3-D or 4-D
 * input, position_ids or per-token caches, interleaved, partial
 * rotary_embedding_dim) and com.microsoft's (position_ids as (batch, seq) or
 * one offset; its 'scale' attribute is read and unused, as onnxruntime's
 * CPU kernel does; packed batching is refused). */
#include "rope.h"

#include <string.h>

static int float_kind(int dt)
{
    return dt == BRAID_DTYPE_FLOAT || dt == BRAID_DTYPE_FLOAT16 || dt == BRAID_DTYPE_BFLOAT16;
}

braid_status bd_rope_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_rope_params *p = bd_calloc(1, sizeof *p);
    int64_t inter = 0, packed = 0;
    BD_CHECK_ALLOC(e, p);
    if (n->op != BD_OP_RotaryEmbedding && n->op != BD_OP_MS_RotaryEmbedding) {
        st = BD_FAIL(e, BRAID_ERR_INTERNAL, "op %s is not in the rope family", n->op_type);
        goto fail;
    }
    BD_TRY(bd_attr_int(n, "interleaved", 0, &inter, e));
    BD_TRY(bd_attr_int(n, "rotary_embedding_dim", 0, &p->rot_dim, e));
    BD_TRY(bd_attr_int(n, "num_heads", 0, &p->num_heads, e));
    if (n->op == BD_OP_MS_RotaryEmbedding) BD_TRY(bd_attr_int(n, "is_packed_batching", 0, &packed, e));
    if (packed) {
        st = BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "is_packed_batching=1 (ragged batches) is not supported");
        goto fail;
    }
    if (p->rot_dim < 0 || p->num_heads < 0 || (inter != 0 && inter != 1)) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "rotary_embedding_dim (%lld) and num_heads (%lld) must not be "
                     "negative, interleaved (%lld) must be 0 or 1", (long long)p->rot_dim, (long long)p->num_heads,
                     (long long)inter);
        goto fail;
    }
    p->interleaved = (int)inter;
fail:
    return bd_params_done(n, p, st);
}

braid_status bd_rope_geometry(const bd_node *n, const bd_tensor *in, bd_rope_geom *g, bd_err *e)
{
    const bd_rope_params *p = n->params;
    int ms = n->op == BD_OP_MS_RotaryEmbedding;
    const bd_tensor *x = &in[0], *cs = ms ? &in[2] : &in[1], *sn = ms ? &in[3] : &in[2];
    const bd_tensor *pos = ms ? &in[1] : (n->n_in > 3 && in[3].dtype ? &in[3] : NULL);
    char s1[160], s2[160];
    memset(g, 0, sizeof *g);
    if (!p) return BD_FAIL(e, BRAID_ERR_INTERNAL, "attributes were not parsed");
    if (x->rank != 3 && x->rank != 4)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "the input must be 3-D or 4-D, not %s", bd_shape_str(x, s1, sizeof s1));
    if (cs->rank != sn->rank || !bd_shape_equal(cs, sn) || cs->rank < 2)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "cos_cache %s and sin_cache %s must have one shape of rank 2 or 3",
                       bd_shape_str(cs, s1, sizeof s1), bd_shape_str(sn, s2, sizeof s2));
    g->b = x->dims[0];
    g->rank3 = x->rank == 3;
    int64_t half = cs->dims[cs->rank - 1];
    if (g->rank3) {
        g->s = x->dims[1];
        int64_t hidden = x->dims[2];
        if (p->num_heads > 0) g->h = p->num_heads;
        else if (ms && !p->rot_dim && half > 0 && hidden % (2 * half) == 0) g->h = hidden / (2 * half);
        else return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "a 3-D input needs the num_heads attribute");
        if (hidden % g->h)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "hidden size %lld is not a multiple of num_heads %lld", (long long)hidden,
                           (long long)g->h);
        g->d = hidden / g->h;
    } else {
        g->h = x->dims[1], g->s = x->dims[2], g->d = x->dims[3];
    }
    g->rd = p->rot_dim ? p->rot_dim : g->d;
    if (g->rd % 2 || g->rd > g->d)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "the rotated dims %lld must be even and at most the head size %lld",
                       (long long)g->rd, (long long)g->d);
    if (half != g->rd / 2)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "the caches' last dim %lld must be half the rotated dims (%lld)",
                       (long long)half, (long long)g->rd);
    if (pos && pos->dtype != BRAID_DTYPE_INT64)
        return BD_FAIL(e, BRAID_ERR_DTYPE, "position_ids must be int64, not %s", bd_dtype_name(pos->dtype));
    if (pos && ms && bd_numel(pos) == 1 && !(pos->rank == 2 && g->b * g->s == 1)) {
        g->pos_mode = BD_ROPE_OFFSET;
    } else if (pos) {
        if (pos->rank != 2 || pos->dims[0] != g->b || pos->dims[1] != g->s)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "position_ids %s must be (%lld, %lld)", bd_shape_str(pos, s1, sizeof s1),
                           (long long)g->b, (long long)g->s);
        g->pos_mode = BD_ROPE_IDS;
    } else {
        g->pos_mode = BD_ROPE_CACHE_3D;
        if (cs->rank != 3 || cs->dims[0] != g->b || cs->dims[1] != g->s)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "without position_ids the caches must be (%lld, %lld, %lld), not %s",
                           (long long)g->b, (long long)g->s, (long long)half, bd_shape_str(cs, s1, sizeof s1));
    }
    if (g->pos_mode != BD_ROPE_CACHE_3D && cs->rank != 2)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "with position_ids the caches must be 2-D, not %s",
                       bd_shape_str(cs, s1, sizeof s1));
    g->max_pos = cs->dims[0];
    return BRAID_OK;
}

braid_status bd_rope_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    int ms = n->op == BD_OP_MS_RotaryEmbedding;
    const bd_tensor *x = &in[0], *cs = ms ? &in[2] : &in[1], *sn = ms ? &in[3] : &in[2];
    if (!float_kind(x->dtype))
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "input has dtype %s; %s takes float, float16 and bfloat16",
                       bd_dtype_name(x->dtype), n->op_type);
    if (cs->dtype != x->dtype || sn->dtype != x->dtype)
        return BD_FAIL(e, BRAID_ERR_DTYPE, "cos_cache (%s) and sin_cache (%s) must have the input's dtype %s",
                       bd_dtype_name(cs->dtype), bd_dtype_name(sn->dtype), bd_dtype_name(x->dtype));
    bd_rope_geom g;
    braid_status st = bd_rope_geometry(n, in, &g, e);
    if (st) return st;
    out[0] = *x;
    out[0].data = NULL;
    return BRAID_OK;
}

double bd_rope_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    (void)n, (void)in;
    return 3.0 * (double)bd_numel(&out[0]);
}
