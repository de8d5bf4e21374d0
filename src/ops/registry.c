/* registry.c: the op table built from ops.def, op lookup, dispatch to the
 * families, and small helpers that families share (axes, constant ints). */
#include "ops.h"

#include <stdarg.h>
#include <string.h>

const bd_op_info bd_op_table[BD_OP_COUNT] = {
#define OP(name, fam, a, b, c, d) {#name, BD_FAM_##fam, a, b, c, d},
#include "ops.def"
#undef OP
};

const char *const bd_family_names[BD_FAM_COUNT] = {
#define X(f) #f,
    BD_FAMILIES(X)
#undef X
};

int bd_op_lookup(const char *domain, const char *op_type)
{
    if (domain && domain[0] && strcmp(domain, "ai.onnx") != 0) return -1;
    for (int i = 0; i < BD_OP_COUNT; i++)
        if (strcmp(bd_op_table[i].name, op_type) == 0) return i;
    return -1;
}

typedef struct family_fns {
    braid_status (*parse)(bd_node *, bd_err *);
    braid_status (*infer)(const bd_node *, const bd_tensor *, bd_tensor *, bd_err *);
    double (*cost)(const bd_node *, const bd_tensor *, const bd_tensor *);
} family_fns;

static const family_fns families[BD_FAM_COUNT] = {
#define X(f) {bd_##f##_parse, bd_##f##_infer, bd_##f##_cost},
    BD_FAMILIES(X)
#undef X
};

braid_status bd_op_parse(bd_node *n, bd_err *e)
{
    return families[bd_op_table[n->op].family].parse(n, e);
}

braid_status bd_op_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    return families[bd_op_table[n->op].family].infer(n, in, out, e);
}

double bd_op_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    return families[bd_op_table[n->op].family].cost(n, in, out);
}

int bd_op_shape_input(int op, int index)
{
    switch (op) {
    case BD_OP_Reshape: case BD_OP_Expand: case BD_OP_Tile: case BD_OP_Squeeze: case BD_OP_Unsqueeze:
    case BD_OP_Split: case BD_OP_Upsample: case BD_OP_ReduceMean: case BD_OP_ReduceSum: case BD_OP_ReduceMax:
    case BD_OP_ReduceMin: case BD_OP_ReduceProd:
        return index == 1;
    case BD_OP_Slice: return index >= 1;                    /* starts, ends, axes, steps */
    case BD_OP_Pad: return index == 1 || index == 3;        /* pads, axes */
    case BD_OP_Resize: return index >= 1 && index <= 3;     /* roi, scales, sizes */
    case BD_OP_ConstantOfShape: return index == 0;
    case BD_OP_Range: return 1;
    default: return 0;
    }
}

braid_status bd_axis(int64_t axis, int rank, int *out, bd_err *e)
{
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= (rank ? rank : 1))
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "axis %lld is out of range for rank %d",
                       (long long)axis, rank);
    *out = (int)a;
    return BRAID_OK;
}

braid_status bd_const_ints(const bd_tensor *t, const char *what, int64_t *out, int max, int *count,
                           bd_err *e)
{
    if (t->dtype == BRAID_DTYPE_UNDEFINED) /* omitted, or past the node's inputs */
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "input '%s' is missing", what);
    if (!t->data)
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED,
                       "input '%s' must be known when the plan is made (a constant or computed "
                       "from shapes)", what);
    if (t->dtype != BRAID_DTYPE_INT64 && t->dtype != BRAID_DTYPE_INT32)
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input '%s' must be int64 or int32, not %s", what,
                       bd_dtype_name(t->dtype));
    if (t->rank > 1)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "input '%s' must be 1-D, not rank %d", what, t->rank);
    int64_t n = bd_numel(t);
    if (n > max)
        return BD_FAIL(e, BRAID_ERR_LIMIT, "input '%s' has %lld values, at most %d are accepted",
                       what, (long long)n, max);
    for (int64_t i = 0; i < n; i++)
        out[i] = t->dtype == BRAID_DTYPE_INT64 ? ((const int64_t *)t->data)[i]
                                               : ((const int32_t *)t->data)[i];
    *count = (int)n;
    return BRAID_OK;
}

braid_status bd_expect_dtype(const bd_tensor *t, const char *what, bd_err *e, ...)
{
    va_list ap;
    va_start(ap, e);
    for (int dt = va_arg(ap, int); dt; dt = va_arg(ap, int))
        if (dt == t->dtype) { va_end(ap); return BRAID_OK; }
    va_end(ap);
    return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "%s has dtype %s, which braid does not support here", what,
                   bd_dtype_name(t->dtype));
}
