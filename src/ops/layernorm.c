/* layernorm.c: attribute parsing, dtype and shape checks, shape inference
 * and cost of the layernorm family: LayerNormalization (opset 17: axis,
 * epsilon, stash_type, the optional Mean and InvStdDev outputs),
 * RMSNormalization (23: X and scale of their own dtypes, Y of scale's) and
 * com.microsoft's SkipLayerNormalization and SkipSimplifiedLayerNormalization
 * (input + skip + bias normalized over the last axis; the optional mean,
 * inv_std_var and input_skip_bias_sum outputs, as onnxruntime's contrib
 * operators define them). */
#include "layernorm.h"

static int is_float(int dt)
{
    return dt == BRAID_DTYPE_FLOAT || dt == BRAID_DTYPE_DOUBLE || dt == BRAID_DTYPE_FLOAT16 || dt == BRAID_DTYPE_BFLOAT16;
}

braid_status bd_layernorm_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    int64_t v;
    bd_layernorm_params *p = bd_calloc(1, sizeof *p);
    BD_CHECK_ALLOC(e, p);
    p->skip = n->op == BD_OP_MS_SkipLayerNormalization || n->op == BD_OP_MS_SkipSimplifiedLayerNormalization;
    p->simplified = n->op == BD_OP_RMSNormalization || n->op == BD_OP_MS_SkipSimplifiedLayerNormalization;
    BD_TRY(bd_attr_float(n, "epsilon", p->skip ? 1e-12f : 1e-5f, &p->epsilon, e));
    p->axis = -1;
    p->stash = BRAID_DTYPE_FLOAT;
    if (!p->skip) {
        BD_TRY(bd_attr_int(n, "axis", -1, &p->axis, e));
        BD_TRY(bd_attr_int(n, "stash_type", 1, &v, e));
        if (!is_float((int)v) || v != (int)v) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "stash_type %lld is not a floating-point type", (long long)v);
            goto fail;
        }
        p->stash = (int)v;
    }
fail:
    return bd_params_done(n, p, st);
}

braid_status bd_layernorm_rows(const bd_node *n, const bd_tensor *x, int *axis, int64_t *rows, int64_t *cols,
                               bd_err *e)
{
    const bd_layernorm_params *p = n->params;
    braid_status st = bd_axis(p->axis, x->rank, axis, e);
    if (st) return st;
    *rows = *cols = 1;
    for (int i = 0; i < x->rank; i++) *(i < *axis ? rows : cols) *= x->dims[i];
    return BRAID_OK;
}

/* t (Scale, B) broadcasts onto X's dims from axis on. */
static braid_status check_affine(const bd_tensor *x, int axis, const bd_tensor *t, const char *what, bd_err *e)
{
    char sx[160], s[160];
    int ok = t->rank <= x->rank;
    for (int i = 0; ok && i < t->rank; i++) {
        int xi = x->rank - t->rank + i;
        int64_t want = xi >= axis ? x->dims[xi] : 1;
        ok = t->dims[i] == 1 || t->dims[i] == want;
    }
    if (!ok)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "%s has shape %s, which does not broadcast to the normalized dims of "
                       "X %s (from axis %d)", what, bd_shape_str(t, s, sizeof s), bd_shape_str(x, sx, sizeof sx), axis);
    return BRAID_OK;
}

static braid_status dtype_is(const bd_tensor *t, int want, const char *what, const char *of, bd_err *e)
{
    if (t->dtype != want)
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input %s is %s but %s is %s; they must match", what,
                       bd_dtype_name(t->dtype), of, bd_dtype_name(want));
    return BRAID_OK;
}

static braid_status skip_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_layernorm_params *p = n->params;
    const bd_tensor *x = &in[0], *s = &in[1];
    char sx[160], ss[160];
    braid_status st;
    int beta = bd_skip_beta_index(p->simplified);
    if (!is_float(x->dtype))
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input has dtype %s, which %s does not take", bd_dtype_name(x->dtype),
                       n->op_type);
    for (int i = 1; i < n->n_in && i < 5; i++)
        if (in[i].dtype && (st = dtype_is(&in[i], x->dtype, i == 1 ? "skip" : i == 2 ? "gamma" : i == beta ? "beta" : "bias",
                                          "input", e)))
            return st;
    if (x->rank >= 0) {
        if (x->rank < 2)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "input must be (batch, sequence, hidden) or (tokens, hidden), not %s",
                           bd_shape_str(x, sx, sizeof sx));
        int64_t h = x->dims[x->rank - 1];
        /* skip: input's shape, or a suffix of it after leading 1s ((1, S, H), (S, H)) */
        int lead = 0;
        while (lead < s->rank - 1 && s->dims[lead] == 1 && s->rank - lead > 1) lead++;
        int ok = s->rank - lead <= x->rank;
        for (int i = 0; ok && i < s->rank - lead; i++) ok = s->dims[lead + i] == x->dims[x->rank - (s->rank - lead) + i];
        if (!ok || s->rank > x->rank)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "skip has shape %s, which does not fit input %s",
                           bd_shape_str(s, ss, sizeof ss), bd_shape_str(x, sx, sizeof sx));
        for (int i = 2; i < n->n_in && i < 5; i++)
            if (in[i].dtype && (in[i].rank != 1 || in[i].dims[0] != h))
                return BD_FAIL(e, BRAID_ERR_SHAPE, "input %d has shape %s; expected (hidden) = (%lld)", i,
                               bd_shape_str(&in[i], ss, sizeof ss), (long long)h);
    }
    out[0] = *x;
    out[0].data = NULL;
    for (int o = 1; o < n->n_out; o++) {
        out[o] = *x;
        if (o < 3) { /* mean and inv_std_var: float, one per row */
            out[o].dtype = BRAID_DTYPE_FLOAT;
            if (x->rank > 0) out[o].dims[x->rank - 1] = 1;
        }
    }
    return BRAID_OK;
}

braid_status bd_layernorm_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_layernorm_params *p = n->params;
    const bd_tensor *x = &in[0], *b = n->n_in > 2 && in[2].dtype ? &in[2] : NULL;
    braid_status st;
    int axis;
    if (!p) return BD_FAIL(e, BRAID_ERR_INTERNAL, "attributes were not parsed");
    if (p->skip) return skip_infer(n, in, out, e);
    if (!is_float(x->dtype))
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input X has dtype %s, which %s does not take", bd_dtype_name(x->dtype),
                       n->op_type);
    if (n->op == BD_OP_RMSNormalization) { /* scale has its own float dtype V, and so has Y */
        if (!is_float(in[1].dtype))
            return BD_FAIL(e, BRAID_ERR_DTYPE, "input scale has dtype %s, which %s does not take",
                           bd_dtype_name(in[1].dtype), n->op_type);
    } else {
        if ((st = dtype_is(&in[1], x->dtype, "Scale", "X", e))) return st;
        if (b && (st = dtype_is(b, x->dtype, "B", "X", e))) return st;
    }
    out[0] = *x;
    out[0].data = NULL;
    if (n->op == BD_OP_RMSNormalization) out[0].dtype = in[1].dtype;
    if (x->rank < 0) return BRAID_OK;
    if ((st = bd_axis(p->axis, x->rank, &axis, e))) return st;
    if ((st = check_affine(x, axis, &in[1], n->op == BD_OP_RMSNormalization ? "scale" : "Scale", e))) return st;
    if (b && (st = check_affine(x, axis, b, "B", e))) return st;
    for (int o = 1; o < n->n_out && o < 3; o++) { /* Mean and InvStdDev: the stash type */
        out[o] = *x;
        out[o].dtype = p->stash;
        for (int i = axis; i < x->rank; i++) out[o].dims[i] = 1;
    }
    return BRAID_OK;
}

double bd_layernorm_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    (void)n;
    (void)out;
    return in[0].rank >= 0 ? 8.0 * (double)bd_numel(&in[0]) : 0.0; /* mean, variance, normalize, scale, shift */
}
