/* reduce.c: attribute parsing, axes resolution, dtype checks, shape inference
 * and cost of the reduce op family: ReduceSum/Mean/Prod/Max/Min, ReduceL1/L2,
 * ReduceLogSum/LogSumExp, ReduceSumSquare, ArgMax and ArgMin, at every opset
 * (axes as an attribute before opset 18, ReduceSum's before 13, then as
 * input 1). */
#include "reduce.h"

#define DT(x) (1u << BRAID_DTYPE_##x)
/* What the spec allows, plus int8 and uint8 for every reduction (braid ran
 * them before the spec let Max and Min take them, and they cost nothing). */
#define FLOATS (DT(FLOAT) | DT(DOUBLE) | DT(FLOAT16) | DT(BFLOAT16))
#define REDUCIBLE (FLOATS | DT(INT32) | DT(INT64) | DT(UINT32) | DT(UINT64) | DT(INT8) | DT(UINT8))
#define ARG_TYPES (REDUCIBLE | DT(INT16) | DT(UINT16))

static int kind_of(int op)
{
    switch (op) {
    case BD_OP_ReduceSum: return BD_RED_SUM;
    case BD_OP_ReduceMean: return BD_RED_MEAN;
    case BD_OP_ReduceProd: return BD_RED_PROD;
    case BD_OP_ReduceMax: return BD_RED_MAX;
    case BD_OP_ReduceMin: return BD_RED_MIN;
    case BD_OP_ReduceL1: return BD_RED_L1;
    case BD_OP_ReduceL2: return BD_RED_L2;
    case BD_OP_ReduceLogSum: return BD_RED_LOGSUM;
    case BD_OP_ReduceLogSumExp: return BD_RED_LOGSUMEXP;
    case BD_OP_ReduceSumSquare: return BD_RED_SUMSQ;
    case BD_OP_ArgMax: return BD_RED_ARGMAX;
    case BD_OP_ArgMin: return BD_RED_ARGMIN;
    default: return -1;
    }
}

braid_status bd_reduce_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    int64_t v;
    bd_reduce_params *p = bd_calloc(1, sizeof *p);
    BD_CHECK_ALLOC(e, p);
    p->kind = kind_of(n->op);
    if (p->kind < 0) {
        st = BD_FAIL(e, BRAID_ERR_INTERNAL, "op %s is not in the reduce family", n->op_type);
        goto fail;
    }
    BD_TRY(bd_attr_int(n, "keepdims", 1, &v, e));
    p->keepdims = v != 0;
    if (p->kind == BD_RED_ARGMAX || p->kind == BD_RED_ARGMIN) {
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
        if (!p->axes_input && n->n_in > 1 && (!n->in || n->in[1] >= 0)) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL,
                         "%s takes its axes as an attribute at opset %d, not as input 1",
                         n->op_type, n->opset);
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

/* The dtypes op n takes: LogSum and LogSumExp lost the integers at opset
 * 28, Max and Min take bool (opset 20). */
static unsigned allowed(const bd_node *n, int kind)
{
    switch (kind) {
    case BD_RED_ARGMAX: case BD_RED_ARGMIN: return ARG_TYPES;
    case BD_RED_MAX: case BD_RED_MIN: return REDUCIBLE | DT(BOOL);
    case BD_RED_LOGSUM: case BD_RED_LOGSUMEXP: return n->opset >= 28 ? FLOATS : REDUCIBLE;
    default: return REDUCIBLE;
    }
}

braid_status bd_reduce_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_reduce_params *p = n->params;
    braid_status st;
    if (!p) return BD_FAIL(e, BRAID_ERR_INTERNAL, "reduce parameters were not parsed");
    int dt = in[0].dtype, arg = p->kind == BD_RED_ARGMAX || p->kind == BD_RED_ARGMIN;
    if (dt <= 0 || dt >= 32 || !(allowed(n, p->kind) & (1u << dt)))
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input has dtype %s, which %s (opset %d) does not take",
                       bd_dtype_name(dt), n->op_type, n->opset);
    out[0].dtype = arg ? BRAID_DTYPE_INT64 : dt;
    out[0].data = NULL;
    if (in[0].rank < 0) {
        out[0].rank = -1;
        return BRAID_OK;
    }
    if (arg && in[0].rank == 0)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "input must have rank 1 or more, not a scalar");
    unsigned mask;
    int identity;
    if ((st = bd_reduce_axes(n, in, n->n_in, &mask, &identity, e))) return st;
    if (arg && in[0].dims[__builtin_ctz(mask)] == 0)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "%s over an axis of size 0 has no answer", n->op_type);
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
    (void)out;
    const bd_reduce_params *p = n->params;
    double per = p && (p->kind == BD_RED_LOGSUMEXP) ? 12.0 : 1.0; /* an exp per value */
    return in[0].rank >= 0 ? per * (double)bd_numel(&in[0]) : 0.0;
}
