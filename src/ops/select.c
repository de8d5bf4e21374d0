/* select.c: attribute parsing, shape inference and cost of the select op
 * family (NonZero, Compress, Unique), whose output shapes depend on input
 * values: inference gives the largest shape each output can take (exact
 * where the deciding input is known, as Compress's condition often is). */
#include "select.h"

#include <string.h>

braid_status bd_select_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_select_params *p = bd_calloc(1, sizeof *p);
    BD_CHECK_ALLOC(e, p);
    if (n->op == BD_OP_Compress || n->op == BD_OP_Unique) {
        p->has_axis = bd_node_attr(n, "axis") != NULL;
        BD_TRY(bd_attr_int(n, "axis", 0, &p->axis, e));
    }
    if (n->op == BD_OP_Unique) BD_TRY(bd_attr_int(n, "sorted", 1, &p->sorted, e));
fail:
    return bd_params_done(n, p, st);
}

void bd_select_view(const bd_node *n, const bd_tensor *x, int64_t *outer, int64_t *dim, int64_t *inner)
{
    const bd_select_params *p = n->params;
    *outer = *inner = 1;
    if (!p->has_axis) {
        *dim = bd_numel(x);
        return;
    }
    int a = (int)(p->axis < 0 ? p->axis + x->rank : p->axis);
    bd_axis_split(x, a, outer, inner);
    *dim = x->dims[a];
}

static braid_status infer_compress(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_select_params *p = n->params;
    int a = 0;
    int64_t outer, dim, inner;
    braid_status st;
    if (in[1].dtype != BRAID_DTYPE_BOOL)
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input 'condition' must be bool, not %s", bd_dtype_name(in[1].dtype));
    if (in[1].rank != 1) return BD_FAIL(e, BRAID_ERR_SHAPE, "input 'condition' must be 1-D, not rank %d", in[1].rank);
    if (p->has_axis) {
        if (in[0].rank < 1) return BD_FAIL(e, BRAID_ERR_SHAPE, "cannot compress a scalar along an axis");
        if ((st = bd_axis(p->axis, in[0].rank, &a, e))) return st;
    }
    bd_select_view(n, &in[0], &outer, &dim, &inner);
    if (in[1].dims[0] > dim)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "the condition has %lld values for %lld %s", (long long)in[1].dims[0],
                       (long long)dim, p->has_axis ? "slices" : "elements");
    /* exact when the condition is known, else every slice */
    int64_t kept = in[1].data ? bd_compress_count(in[1].data, in[1].dims[0]) : dim;
    if (p->has_axis) {
        out->rank = in[0].rank;
        memcpy(out->dims, in[0].dims, sizeof out->dims);
        out->dims[a] = kept;
    } else {
        out->rank = 1;
        out->dims[0] = kept;
    }
    return BRAID_OK;
}

static braid_status infer_unique(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_select_params *p = n->params;
    int a = 0;
    int64_t outer, dim, inner;
    braid_status st;
    if (!bd_select_numeric(in[0].dtype))
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "Unique of %s is not supported", bd_dtype_name(in[0].dtype));
    if (p->has_axis) {
        if (in[0].rank < 1) return BD_FAIL(e, BRAID_ERR_SHAPE, "a scalar has no axis");
        if ((st = bd_axis(p->axis, in[0].rank, &a, e))) return st;
    }
    bd_select_view(n, &in[0], &outer, &dim, &inner);
    if (p->has_axis) {
        out[0].rank = in[0].rank;
        memcpy(out[0].dims, in[0].dims, sizeof out[0].dims);
    } else {
        out[0].rank = 1;
        out[0].dims[0] = dim;
    }
    for (int i = 1; i < n->n_out && i < 4; i++) {
        out[i].dtype = BRAID_DTYPE_INT64;
        out[i].rank = 1;
        out[i].dims[0] = dim; /* inverse_indices (output 2) has exactly this many */
    }
    return BRAID_OK;
}

braid_status bd_select_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    if (in[0].rank < 0) return BD_FAIL(e, BRAID_ERR_SHAPE, "the input's rank is not known");
    if (bd_dtype_size(in[0].dtype) == 0)
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "dtype %s is not supported", bd_dtype_name(in[0].dtype));
    out[0].dtype = in[0].dtype;
    switch (n->op) {
    case BD_OP_NonZero:
        if (!bd_select_numeric(in[0].dtype))
            return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "NonZero of %s is not supported", bd_dtype_name(in[0].dtype));
        out->dtype = BRAID_DTYPE_INT64;
        out->rank = 2;
        out->dims[0] = in[0].rank > 0 ? in[0].rank : 1; /* a scalar reads as 1-D, as numpy's nonzero did */
        out->dims[1] = bd_numel(&in[0]);
        return BRAID_OK;
    case BD_OP_Compress: return infer_compress(n, in, out, e);
    case BD_OP_Unique: return infer_unique(n, in, out, e);
    default: return BD_FAIL(e, BRAID_ERR_INTERNAL, "op %s is not in the select family", n->op_type);
    }
}

double bd_select_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    (void)out;
    /* Unique sorts: about n log2 n comparisons of its slices */
    if (n->op != BD_OP_Unique || in[0].rank < 0) return 0;
    double c = (double)bd_numel(&in[0]), lg = 1;
    for (double v = c; v > 2; v /= 2) lg++;
    return c * lg;
}
