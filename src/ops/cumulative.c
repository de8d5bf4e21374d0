/* cumulative.c: attribute parsing, dtype checks, shape inference and cost of
 * the cumulative op family: CumSum (opsets 11 and 14) and CumProd (26), with
 * exclusive and reverse, the axis given as input 1. */
#include "cumulative.h"

#define DT(x) (1u << BRAID_DTYPE_##x)

braid_status bd_cumulative_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    int64_t v;
    bd_cum_params *p = bd_calloc(1, sizeof *p);
    BD_CHECK_ALLOC(e, p);
    BD_TRY(bd_attr_int(n, "exclusive", 0, &v, e));
    p->exclusive = v != 0;
    BD_TRY(bd_attr_int(n, "reverse", 0, &v, e));
    p->reverse = v != 0;
    p->prod = n->op == BD_OP_CumProd;
fail:
    return bd_params_done(n, p, st);
}

braid_status bd_cum_axis(const bd_tensor *axis, int rank, int *out, bd_err *e)
{
    int64_t a;
    int count = 0;
    braid_status st;
    if (axis->rank > 1 || (axis->rank == 1 && axis->dims[0] != 1))
        return BD_FAIL(e, BRAID_ERR_SHAPE, "input 'axis' must be a scalar (or hold one value)");
    if ((st = bd_const_ints(axis, "axis", &a, 1, &count, e))) return st;
    return bd_axis(a, rank, out, e);
}

braid_status bd_cumulative_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    unsigned ok = DT(FLOAT) | DT(DOUBLE) | DT(INT32) | DT(INT64) | DT(UINT32) | DT(UINT64);
    if (n->op == BD_OP_CumProd || n->opset >= 14) ok |= DT(FLOAT16) | DT(BFLOAT16);
    int dt = in[0].dtype, axis;
    braid_status st;
    if (dt <= 0 || dt >= 32 || !(ok & (1u << dt)))
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input x has dtype %s, which %s (opset %d) does not take",
                       bd_dtype_name(dt), n->op_type, n->opset);
    if (in[0].rank == 0) return BD_FAIL(e, BRAID_ERR_SHAPE, "input x must have rank 1 or more, not a scalar");
    if (in[0].rank > 0 && (st = bd_cum_axis(&in[1], in[0].rank, &axis, e))) return st;
    out[0] = in[0];
    out[0].data = NULL;
    return BRAID_OK;
}

double bd_cumulative_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    (void)n;
    (void)out;
    return in[0].rank >= 0 ? (double)bd_numel(&in[0]) : 0.0;
}
