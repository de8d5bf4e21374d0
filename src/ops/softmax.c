/* softmax.c: attribute parsing, dtype checks, shape inference and cost of the
 * softmax op family (Softmax, LogSoftmax, Hardmax): before opset 13 the input
 * is coerced to 2-D at `axis`, from 13 on one axis is normalized. */
#include "softmax.h"

#include "ops.h"

braid_status bd_softmax_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_softmax_params *p = bd_calloc(1, sizeof *p);
    BD_CHECK_ALLOC(e, p);
    /* Before opset 13 the input is coerced to 2-D at 'axis' (default 1); from
     * 13 on, one axis is normalized (default -1). */
    p->flatten = n->opset < 13;
    BD_TRY(bd_attr_int(n, "axis", p->flatten ? 1 : -1, &p->axis, e));
fail:
    return bd_params_done(n, p, st);
}

braid_status bd_softmax_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_softmax_params *p = n->params;
    braid_status st;
    int dt = in[0].dtype;
    if (dt != BRAID_DTYPE_FLOAT && dt != BRAID_DTYPE_DOUBLE && dt != BRAID_DTYPE_FLOAT16 &&
        !(dt == BRAID_DTYPE_BFLOAT16 && n->opset >= 13))
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input has dtype %s; %s (opset %d) takes float16, float32, float64%s",
                       bd_dtype_name(dt), n->op_type, n->opset, n->opset >= 13 ? " or bfloat16" : "");
    if (in[0].rank >= 0) {
        int axis;
        /* Opset < 13 allows axis == rank (a trailing block of one element). */
        if (p->flatten && (p->axis == in[0].rank || (in[0].rank == 0 && p->axis == 0)))
            axis = in[0].rank;
        else if ((st = bd_axis(p->axis, in[0].rank, &axis, e)))
            return st;
        if (in[0].rank == 0 && !p->flatten)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "input must have rank 1 or more, not a scalar");
    }
    out[0] = in[0];
    out[0].data = NULL;
    return BRAID_OK;
}

double bd_softmax_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    (void)n;
    (void)in;
    return 15.0 * (double)bd_numel(&out[0]); /* max, exp, sum, scale */
}

braid_status bd_softmax_geometry(const bd_node *node, const bd_tensor *x, int64_t *outer, int64_t *n,
                                 int64_t *inner, bd_err *e)
{
    const bd_softmax_params *p = node->params;
    braid_status st;
    int axis;
    if (!p) return BD_FAIL(e, BRAID_ERR_INTERNAL, "softmax parameters were not parsed");
    if (p->flatten && p->axis == x->rank) axis = x->rank;
    else if ((st = bd_axis(p->axis, x->rank, &axis, e))) return st;
    *outer = *n = *inner = 1;
    for (int d = 0; d < x->rank; d++) {
        if (d < axis) *outer *= x->dims[d];
        else if (d == axis || p->flatten) *n *= x->dims[d];
        else *inner *= x->dims[d];
    }
    return BRAID_OK;
}
