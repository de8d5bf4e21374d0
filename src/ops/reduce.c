/* reduce.c: attribute parsing, axes resolution, dtype checks, shape inference
 * and cost of the reduce op family (ReduceMean/Sum/Max/Min/Prod, ArgMax). */
#include "reduce.h"

#define DT(x) (1u << BRAID_DTYPE_##x)
#define REDUCIBLE (DT(FLOAT) | DT(DOUBLE) | DT(INT32) | DT(INT64) | DT(INT8) | DT(UINT8))

braid_status bd_reduce_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    int64_t v;
    bd_reduce_params *p = bd_calloc(1, sizeof *p);
    BD_CHECK_ALLOC(e, p);
    BD_TRY(bd_attr_int(n, "keepdims", 1, &v, e));
    p->keepdims = v != 0;
    if (n->op == BD_OP_ArgMax) {
        BD_TRY(bd_attr_int(n, "axis", 0, &p->axes[0], e));
        BD_TRY(bd_attr_int(n, "select_last_index", 0, &v, e));
        p->select_last_index = v != 0;
        p->n_axes = 1;
    } else {
        BD_TRY(bd_attr_int(n, "noop_with_empty_axes", 0, &v, e));
        p->noop_empty_axes = v != 0;
        p->axes_input = n->opset >= (n->op == BD_OP_ReduceSum ? 13 : 18);
        BD_TRY(bd_attr_ints(n, "axes", p->axes, BD_MAX_RANK, &p->n_axes, e));
        if (p->axes_input && p->n_axes) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL,
                         "attribute 'axes' is not allowed at opset %d; axes are input 1",
                         n->opset);
            goto fail;
        }
    }
fail:
    return bd_params_done(n, p, st);
}

braid_status bd_reduce_axes(const bd_node *n, const bd_tensor *in, int n_in, unsigned *mask,
                            int *identity, bd_err *e)
{
    const bd_reduce_params *p = n->params;
    int64_t buf[BD_MAX_RANK];
    const int64_t *axes = p->axes;
    int count = p->n_axes, rank = in[0].rank;
    braid_status st;
    *mask = 0;
    *identity = 0;
    if (p->axes_input && n_in > 1 && in[1].dtype != BRAID_DTYPE_UNDEFINED) {
        if ((st = bd_const_ints(&in[1], "axes", buf, BD_MAX_RANK, &count, e))) return st;
        axes = buf;
    }
    if (count == 0) {
        if (p->noop_empty_axes) *identity = 1;
        else *mask = rank > 0 ? (1u << rank) - 1 : 0;
        return BRAID_OK;
    }
    for (int i = 0; i < count; i++) {
        int a;
        if ((st = bd_axis(axes[i], rank, &a, e))) return st;
        if (*mask & (1u << a))
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "axis %lld is listed twice",
                           (long long)axes[i]);
        *mask |= 1u << a;
    }
    if (rank == 0) *mask = 0;
    return BRAID_OK;
}

braid_status bd_reduce_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_reduce_params *p = n->params;
    braid_status st;
    unsigned ok = REDUCIBLE;
    if (n->op == BD_OP_ReduceMax || n->op == BD_OP_ReduceMin) ok |= DT(BOOL);
    int dt = in[0].dtype;
    if (dt <= 0 || dt >= 32 || !(ok & (1u << dt)))
        return BD_FAIL(e, dt == BRAID_DTYPE_FLOAT16 || dt == BRAID_DTYPE_STRING || dt > 13
                              ? BRAID_ERR_UNSUPPORTED
                              : BRAID_ERR_DTYPE,
                       "input has dtype %s, which %s does not take", bd_dtype_name(dt), n->op_type);
    out[0].dtype = n->op == BD_OP_ArgMax ? BRAID_DTYPE_INT64 : dt;
    out[0].data = NULL;
    if (in[0].rank < 0) {
        out[0].rank = -1;
        return BRAID_OK;
    }
    if (n->op == BD_OP_ArgMax && in[0].rank == 0)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "input must have rank 1 or more, not a scalar");
    unsigned mask;
    int identity;
    if ((st = bd_reduce_axes(n, in, n->n_in, &mask, &identity, e))) return st;
    if (n->op == BD_OP_ArgMax && in[0].dims[__builtin_ctz(mask)] == 0)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "ArgMax over an axis of size 0 has no answer");
    int r = 0;
    for (int d = 0; d < in[0].rank; d++) {
        if (!(mask & (1u << d))) out[0].dims[r++] = in[0].dims[d];
        else if (p->keepdims) out[0].dims[r++] = 1;
    }
    out[0].rank = r;
    return BRAID_OK;
}

double bd_reduce_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    (void)n;
    (void)out;
    return in[0].rank >= 0 ? (double)bd_numel(&in[0]) : 0.0;
}
