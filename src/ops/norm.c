/* norm.c: attribute parsing, shape inference and cost of the norm op family:
 * BatchNormalization (inference mode) and LayerNormalization. */
#include "norm.h"

braid_status bd_norm_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_norm_params *p = bd_calloc(1, sizeof *p);
    BD_CHECK_ALLOC(e, p);
    BD_TRY(bd_attr_float(n, "epsilon", 1e-5f, &p->epsilon, e));
    if (n->op == BD_OP_BatchNormalization) {
        int64_t training = 0, spatial = 1;
        BD_TRY(bd_attr_int(n, "training_mode", 0, &training, e));
        BD_TRY(bd_attr_int(n, "spatial", 1, &spatial, e));
        int extra = 0;
        for (int i = 1; i < n->n_out; i++) extra += n->out[i] >= 0;
        if (training || extra) {
            st = BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "training mode is not supported "
                         "(training_mode=%lld, %d running-statistics outputs requested); braid "
                         "runs BatchNormalization for inference only", (long long)training, extra);
            goto fail;
        }
        if (!spatial) {
            st = BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "spatial=0 (per-activation statistics) is "
                         "not supported");
            goto fail;
        }
    } else {
        int64_t stash = 1;
        BD_TRY(bd_attr_int(n, "axis", -1, &p->axis, e));
        BD_TRY(bd_attr_int(n, "stash_type", 1, &stash, e));
        if (stash != 1) {
            st = BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "stash_type %lld is not supported (only 1, "
                         "float32)", (long long)stash);
            goto fail;
        }
    }
fail:
    return bd_params_done(n, p, st);
}

static braid_status batchnorm_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out,
                                    bd_err *e)
{
    static const char *const names[5] = {"X", "scale", "B", "input_mean", "input_var"};
    char sx[160], sp[160];
    braid_status st = bd_expect_dtype(&in[0], "input X", e, BRAID_DTYPE_FLOAT, 0);
    if (st) return st;
    for (int i = 1; i < 5; i++)
        if (in[i].dtype != in[0].dtype)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "input %s is %s but X is %s; they must match",
                           names[i], bd_dtype_name(in[i].dtype), bd_dtype_name(in[0].dtype));
    if (in[0].rank < 2)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "input X must be (N, C, ...), not shape %s",
                       bd_shape_str(&in[0], sx, sizeof sx));
    int64_t c = in[0].dims[1];
    for (int i = 1; i < 5; i++)
        if (in[i].rank != 1 || (c >= 0 && in[i].dims[0] != c))
            return BD_FAIL(e, BRAID_ERR_SHAPE, "input %s has shape %s; expected (%lld), one "
                           "value per channel of X %s", names[i],
                           bd_shape_str(&in[i], sp, sizeof sp), (long long)c,
                           bd_shape_str(&in[0], sx, sizeof sx));
    out[0] = in[0];
    out[0].data = NULL;
    for (int o = 1; o < n->n_out; o++) { /* omitted running statistics (parse refused the rest) */
        out[o] = in[1];
        out[o].data = NULL;
    }
    return BRAID_OK;
}

/* Checks that t (Scale or B) broadcasts onto X's dims from axis on. */
static braid_status check_affine(const bd_tensor *x, int axis, const bd_tensor *t,
                                 const char *what, bd_err *e)
{
    char sx[160], st[160];
    int ok = t->rank <= x->rank;
    for (int i = 0; ok && i < t->rank; i++) {
        int xi = x->rank - t->rank + i;
        int64_t want = xi >= axis ? x->dims[xi] : 1;
        ok = t->dims[i] == 1 || t->dims[i] == want;
    }
    if (!ok)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "%s has shape %s, which does not broadcast to the "
                       "normalized dims of X %s (from axis %d)", what,
                       bd_shape_str(t, st, sizeof st), bd_shape_str(x, sx, sizeof sx), axis);
    return BRAID_OK;
}

static braid_status layernorm_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out,
                                    bd_err *e)
{
    const bd_norm_params *p = n->params;
    const bd_tensor *x = &in[0], *b = n->n_in > 2 && in[2].dtype ? &in[2] : NULL;
    braid_status st;
    int axis;
    if ((st = bd_expect_dtype(x, "input X", e, BRAID_DTYPE_FLOAT, 0))) return st;
    if (in[1].dtype != x->dtype || (b && b->dtype != x->dtype))
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input X is %s but Scale is %s%s%s; they must match",
                       bd_dtype_name(x->dtype), bd_dtype_name(in[1].dtype), b ? " and B " : "",
                       b ? bd_dtype_name(b->dtype) : "");
    if ((st = bd_axis(p->axis, x->rank, &axis, e))) return st;
    if ((st = check_affine(x, axis, &in[1], "Scale", e))) return st;
    if (b && (st = check_affine(x, axis, b, "B", e))) return st;
    out[0] = *x;
    out[0].data = NULL;
    for (int o = 1; o < n->n_out && o < 3; o++) { /* Mean and InvStdDev */
        out[o] = *x;
        out[o].data = NULL;
        for (int i = axis; i < x->rank; i++) out[o].dims[i] = 1;
    }
    return BRAID_OK;
}

braid_status bd_norm_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    if (!n->params) return BD_FAIL(e, BRAID_ERR_INTERNAL, "attributes were not parsed");
    switch (n->op) {
    case BD_OP_BatchNormalization: return batchnorm_infer(n, in, out, e);
    case BD_OP_LayerNormalization: return layernorm_infer(n, in, out, e);
    default:
        return BD_FAIL(e, BRAID_ERR_INTERNAL, "op %s is not in the norm family", n->op_type);
    }
}

double bd_norm_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    /* BatchNormalization: one multiply-add per element; LayerNormalization:
     * about eight (mean, variance, normalize, scale, shift). */
    double per = n->op == BD_OP_BatchNormalization ? 2.0 : 8.0;
    return per * (double)bd_numel(&in[0]);
}
