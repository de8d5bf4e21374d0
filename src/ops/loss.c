/* loss.c: attribute parsing, dtype and shape checks, shape inference and
 * cost of the loss op family: NegativeLogLikelihoodLoss (opsets 12, 13, 22)
 * and SoftmaxCrossEntropyLoss (12, 13) with weights, ignore_index, the
 * reductions none/sum/mean, N-d inputs and SoftmaxCrossEntropyLoss's
 * optional log_prob output. */
#include "loss.h"

#include <string.h>

braid_status bd_loss_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    const char *red;
    bd_loss_params *p = bd_calloc(1, sizeof *p);
    BD_CHECK_ALLOC(e, p);
    BD_TRY(bd_attr_string(n, "reduction", "mean", &red, e));
    if (!strcmp(red, "none")) p->reduction = BD_LOSS_NONE;
    else if (!strcmp(red, "sum")) p->reduction = BD_LOSS_SUM;
    else if (!strcmp(red, "mean")) p->reduction = BD_LOSS_MEAN;
    else {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'reduction' is '%s'; it must be none, sum or mean", red);
        goto fail;
    }
    p->has_ignore = bd_node_attr(n, "ignore_index") != NULL;
    BD_TRY(bd_attr_int(n, "ignore_index", 0, &p->ignore_index, e));
fail:
    return bd_params_done(n, p, st);
}

braid_status bd_loss_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_loss_params *p = n->params;
    const bd_tensor *x = &in[0], *t = &in[1], *w = n->n_in > 2 && in[2].dtype ? &in[2] : NULL;
    char sx[160], st_[160];
    int dt = x->dtype;
    if (!p) return BD_FAIL(e, BRAID_ERR_INTERNAL, "loss parameters were not parsed");
    int bf_ok = n->op == BD_OP_SoftmaxCrossEntropyLoss ? n->opset >= 13 : n->opset >= 22;
    if (dt != BRAID_DTYPE_FLOAT && dt != BRAID_DTYPE_DOUBLE && dt != BRAID_DTYPE_FLOAT16 &&
        !(dt == BRAID_DTYPE_BFLOAT16 && bf_ok))
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input 0 has dtype %s, which %s (opset %d) does not take",
                       bd_dtype_name(dt), n->op_type, n->opset);
    if (t->dtype != BRAID_DTYPE_INT64 && t->dtype != BRAID_DTYPE_INT32)
        return BD_FAIL(e, BRAID_ERR_DTYPE, "the target (input 1) must be int32 or int64, not %s",
                       bd_dtype_name(t->dtype));
    if (w && w->dtype != dt)
        return BD_FAIL(e, BRAID_ERR_DTYPE, "the weights are %s but input 0 is %s; they must match",
                       bd_dtype_name(w->dtype), bd_dtype_name(dt));
    if (x->rank >= 0 && x->rank < 2)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "input 0 must be (N, C, ...), not shape %s", bd_shape_str(x, sx, sizeof sx));
    if (x->rank >= 2 && t->rank >= 0) {
        int ok = t->rank == x->rank - 1 && t->dims[0] == x->dims[0];
        for (int i = 1; ok && i < t->rank; i++) ok = t->dims[i] == x->dims[i + 1];
        if (!ok)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "the target has shape %s; input 0 %s needs (N, d1, ..., dk) = its "
                           "dims without C", bd_shape_str(t, st_, sizeof st_), bd_shape_str(x, sx, sizeof sx));
        if (w && (w->rank != 1 || w->dims[0] != x->dims[1]))
            return BD_FAIL(e, BRAID_ERR_SHAPE, "the weights have shape %s; expected (C) = (%lld)",
                           bd_shape_str(w, st_, sizeof st_), (long long)x->dims[1]);
    }
    out[0] = *t;
    out[0].dtype = dt;
    out[0].data = NULL;
    if (p->reduction != BD_LOSS_NONE) out[0].rank = 0;
    if (n->n_out > 1) { /* log_prob */
        out[1] = *x;
        out[1].data = NULL;
    }
    return BRAID_OK;
}

double bd_loss_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    (void)out;
    double per = n->op == BD_OP_SoftmaxCrossEntropyLoss ? 15.0 : 0.0; /* exp and log per score */
    return in[0].rank >= 0 ? per * (double)bd_numel(&in[0]) + (double)bd_numel(&in[1]) : 0.0;
}
