/* topk.c: attribute parsing, dtype checks, shape inference and cost of the
 * topk op family: TopK at opset 1 (k an attribute), 10 (K input 1) and 11 on
 * (largest, sorted; integer types), 24 (bfloat16). */
#include "topk.h"

#define DT(x) (1u << BRAID_DTYPE_##x)

braid_status bd_topk_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    int64_t v;
    bd_topk_params *p = bd_calloc(1, sizeof *p);
    BD_CHECK_ALLOC(e, p);
    BD_TRY(bd_attr_int(n, "axis", -1, &p->axis, e));
    BD_TRY(bd_attr_int(n, "largest", 1, &v, e));
    p->largest = v != 0;
    BD_TRY(bd_attr_int(n, "sorted", 1, &v, e));
    p->sorted = v != 0;
    if (n->opset < 10) {
        if (!bd_node_attr(n, "k")) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'k' is required at opset %d", n->opset);
            goto fail;
        }
        BD_TRY(bd_attr_int(n, "k", 0, &p->k, e));
        p->k_attr = 1;
    } else if (n->n_in < 2) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "input K is missing (opset %d takes K as input 1)", n->opset);
        goto fail;
    }
fail:
    return bd_params_done(n, p, st);
}

braid_status bd_topk_k(const bd_node *n, const bd_tensor *in, int64_t dim, int64_t *k, bd_err *e)
{
    const bd_topk_params *p = n->params;
    braid_status st;
    int count = 0;
    if (p->k_attr) {
        *k = p->k;
    } else {
        if (in[1].rank != 1 || in[1].dims[0] != 1)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "input K must be a 1-D tensor of one value");
        if (in[1].dtype != BRAID_DTYPE_INT64)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "input K must be int64, not %s", bd_dtype_name(in[1].dtype));
        if ((st = bd_const_ints(&in[1], "K", k, 1, &count, e))) return st;
    }
    if (*k < 0 || (dim >= 0 && *k > dim))
        return BD_FAIL(e, p->k_attr ? BRAID_ERR_INVALID_MODEL : BRAID_ERR_INVALID_ARGUMENT,
                       "K = %lld is out of range for an axis of size %lld", (long long)*k, (long long)dim);
    return BRAID_OK;
}

braid_status bd_topk_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_topk_params *p = n->params;
    unsigned ok = DT(FLOAT) | DT(DOUBLE) | DT(FLOAT16);
    if (n->opset >= 11)
        ok |= DT(INT8) | DT(INT16) | DT(INT32) | DT(INT64) | DT(UINT8) | DT(UINT16) | DT(UINT32) | DT(UINT64);
    if (n->opset >= 24) ok |= DT(BFLOAT16);
    int dt = in[0].dtype, axis;
    braid_status st;
    if (!p) return BD_FAIL(e, BRAID_ERR_INTERNAL, "topk parameters were not parsed");
    if (dt <= 0 || dt >= 32 || !(ok & (1u << dt)))
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input X has dtype %s, which TopK (opset %d) does not take",
                       bd_dtype_name(dt), n->opset);
    if (in[0].rank == 0) return BD_FAIL(e, BRAID_ERR_SHAPE, "input X must have rank 1 or more, not a scalar");
    out[0] = in[0];
    out[0].data = NULL;
    out[1] = out[0];
    out[1].dtype = BRAID_DTYPE_INT64;
    if (in[0].rank < 0) return BRAID_OK;
    int64_t k;
    if ((st = bd_axis(p->axis, in[0].rank, &axis, e))) return st;
    if ((st = bd_topk_k(n, in, in[0].dims[axis], &k, e))) return st;
    out[0].dims[axis] = out[1].dims[axis] = k;
    return BRAID_OK;
}

double bd_topk_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    (void)n;
    (void)out;
    return in[0].rank >= 0 ? 8.0 * (double)bd_numel(&in[0]) : 0.0; /* about a compare and a move per log step */
}
