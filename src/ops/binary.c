/* binary.c: dtype checks, shape inference (numpy broadcasting) and cost of the
 * binary op family: arithmetic, Pow, PRelu, comparisons, And/Or and Where. */
#include "ops.h"

#define DT(x) (1u << BRAID_DTYPE_##x)
#define FLOATS (DT(FLOAT) | DT(DOUBLE))
#define SINTS (DT(INT8) | DT(INT16) | DT(INT32) | DT(INT64))
#define UINTS (DT(UINT8) | DT(UINT16) | DT(UINT32) | DT(UINT64))
#define NUMERIC (FLOATS | SINTS | UINTS)
/* Types ONNX allows somewhere that braid does not run at all. */
#define FOREIGN (DT(STRING) | DT(FLOAT16) | (1u << 16) /* bfloat16 */)

/* The dtypes each op accepts for its data inputs (Where: X and Y; Pow: the base). */
static unsigned allowed(int op)
{
    switch (op) {
    case BD_OP_Add: case BD_OP_Sub: case BD_OP_Mul: case BD_OP_Div:
    case BD_OP_Less: case BD_OP_Greater: return NUMERIC;
    case BD_OP_Equal: return NUMERIC | DT(BOOL);
    case BD_OP_Pow: return FLOATS | DT(INT32) | DT(INT64);
    case BD_OP_PRelu: return FLOATS | DT(INT32) | DT(INT64);
    case BD_OP_And: case BD_OP_Or: return DT(BOOL);
    case BD_OP_Where: return NUMERIC | DT(BOOL) | DT(FLOAT16);
    default: return 0;
    }
}

static braid_status check_dtype(const bd_node *n, const bd_tensor *t, const char *what, unsigned ok,
                                bd_err *e)
{
    unsigned bit = t->dtype >= 0 && t->dtype < 32 ? 1u << t->dtype : 0;
    if (bit & ok) return BRAID_OK;
    return BD_FAIL(e, (bit & FOREIGN) ? BRAID_ERR_UNSUPPORTED : BRAID_ERR_DTYPE,
                   "%s has dtype %s, which %s does not take", what, bd_dtype_name(t->dtype),
                   n->op_type);
}

static braid_status check_same(const bd_node *n, const bd_tensor *a, const bd_tensor *b,
                               bd_err *e)
{
    if (a->dtype == b->dtype) return BRAID_OK;
    return BD_FAIL(e, BRAID_ERR_DTYPE, "inputs have different dtypes (%s and %s); %s needs them equal",
                   bd_dtype_name(a->dtype), bd_dtype_name(b->dtype), n->op_type);
}

braid_status bd_binary_parse(bd_node *n, bd_err *e)
{
    /* Opsets before 7 had 'broadcast' and 'axis'; broadcast=1 without axis is
     * suffix matching, which numpy broadcasting covers. */
    const bd_attr *legacy = bd_node_attr(n, "broadcast");
    if (legacy && legacy->i && bd_node_attr(n, "axis"))
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED,
                       "legacy broadcasting with attribute 'axis' (opset < 7) is not supported");
    return BRAID_OK;
}

braid_status bd_binary_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    braid_status st;
    for (int i = 0; i < n->n_in; i++)
        if (in[i].dtype == BRAID_DTYPE_UNDEFINED)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "input %d has no known dtype", i);
    const bd_tensor *a = &in[0], *b = &in[1];
    int out_dtype = a->dtype;
    switch (n->op) {
    case BD_OP_Where:
        if (in[0].dtype != BRAID_DTYPE_BOOL)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "condition has dtype %s, it must be bool",
                           bd_dtype_name(in[0].dtype));
        a = &in[1];
        b = &in[2];
        out_dtype = a->dtype;
        if ((st = check_dtype(n, a, "X", allowed(n->op), e))) return st;
        if ((st = check_same(n, a, b, e))) return st;
        break;
    case BD_OP_Pow:
        if ((st = check_dtype(n, a, "the base", allowed(n->op), e))) return st;
        if ((st = check_dtype(n, b, "the exponent", NUMERIC, e))) return st;
        break;
    default:
        if ((st = check_dtype(n, a, "input A", allowed(n->op), e))) return st;
        if ((st = check_same(n, a, b, e))) return st;
        if (n->op == BD_OP_Equal || n->op == BD_OP_Less || n->op == BD_OP_Greater)
            out_dtype = BRAID_DTYPE_BOOL;
        break;
    }
    out[0].dtype = out_dtype;
    out[0].data = NULL;
    for (int i = 0; i < n->n_in; i++)
        if (in[i].rank < 0) { out[0].rank = -1; return BRAID_OK; } /* shape not known yet */
    bd_tensor shape = {0};
    if ((st = bd_broadcast_shape(&in[0], &in[1], &shape, e))) return st;
    if (n->op == BD_OP_Where) {
        bd_tensor s3 = {0};
        if ((st = bd_broadcast_shape(&shape, &in[2], &s3, e))) return st;
        shape = s3;
    }
    if (n->op == BD_OP_PRelu && !bd_shape_equal(&shape, &in[0])) {
        char sa[160], sb[160];
        return BD_FAIL(e, BRAID_ERR_SHAPE, "slope of shape %s does not broadcast to X of shape %s",
                       bd_shape_str(&in[1], sb, sizeof sb), bd_shape_str(&in[0], sa, sizeof sa));
    }
    out[0].rank = shape.rank;
    for (int i = 0; i < shape.rank; i++) out[0].dims[i] = shape.dims[i];
    return BRAID_OK;
}

double bd_binary_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    (void)in;
    double per = n->op == BD_OP_Pow ? 10.0 : n->op == BD_OP_Div ? 2.0 : 1.0;
    return per * (double)bd_numel(&out[0]);
}
