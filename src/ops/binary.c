/* binary.c: attribute parsing, dtype checks, shape inference (numpy
 * broadcasting, and the old forms: 'broadcast'/'axis' before opset 7,
 * PRelu's per-channel slope) and cost of the binary op family: arithmetic,
 * Mod, Pow, PRelu, comparisons, logic and bitwise ops, Where, the variadic
 * Max/Min/Sum/Mean and com.microsoft's BiasAdd. */
#include "binary.h"

#include <string.h>

#define DT(x) (1u << BRAID_DTYPE_##x)
#define FLOATS (DT(FLOAT) | DT(DOUBLE) | DT(FLOAT16) | DT(BFLOAT16))
#define SINTS (DT(INT8) | DT(INT16) | DT(INT32) | DT(INT64))
#define UINTS (DT(UINT8) | DT(UINT16) | DT(UINT32) | DT(UINT64))
#define NUMERIC (FLOATS | SINTS | UINTS)

/* The dtypes each op takes for its data inputs (Where: X and Y; Pow: the base). */
static unsigned allowed(int op)
{
    switch (op) {
    case BD_OP_Pow: return FLOATS | DT(INT32) | DT(INT64);
    case BD_OP_Equal: return NUMERIC | DT(BOOL) | DT(STRING);
    case BD_OP_And: case BD_OP_Or: case BD_OP_Xor: return DT(BOOL);
    case BD_OP_BitwiseAnd: case BD_OP_BitwiseOr: case BD_OP_BitwiseXor: case BD_OP_BitShift: return SINTS | UINTS;
    case BD_OP_Sum: case BD_OP_Mean: case BD_OP_MS_BiasAdd: return FLOATS;
    case BD_OP_Where: return ~(DT(UNDEFINED) | DT(COMPLEX64) | DT(COMPLEX128));
    default: return NUMERIC;
    }
}

static int is_compare(int op)
{
    return op == BD_OP_Equal || op == BD_OP_Less || op == BD_OP_Greater || op == BD_OP_LessOrEqual ||
           op == BD_OP_GreaterOrEqual;
}

/* Ops whose opset-1..6 forms had the 'broadcast' and 'axis' attributes. */
static int had_broadcast_attr(int op)
{
    switch (op) {
    case BD_OP_Add: case BD_OP_Sub: case BD_OP_Mul: case BD_OP_Div: case BD_OP_Pow: case BD_OP_And:
    case BD_OP_Or: case BD_OP_Xor: case BD_OP_Equal: case BD_OP_Less: case BD_OP_Greater: return 1;
    default: return 0;
    }
}

static braid_status check_dtype(const bd_node *n, const bd_tensor *t, const char *what, unsigned ok, bd_err *e)
{
    unsigned bit = t->dtype > 0 && t->dtype < 32 ? 1u << t->dtype : 0;
    if (bit & ok) return BRAID_OK;
    return BD_FAIL(e, t->dtype == BRAID_DTYPE_STRING ? BRAID_ERR_UNSUPPORTED : BRAID_ERR_DTYPE,
                   "%s has dtype %s, which %s does not take", what, bd_dtype_name(t->dtype), n->op_type);
}

braid_status bd_binary_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_binary_params *p = bd_calloc(1, sizeof *p);
    BD_CHECK_ALLOC(e, p);
    if (n->op == BD_OP_Mod) {
        int64_t f = 0;
        BD_TRY(bd_attr_int(n, "fmod", 0, &f, e));
        if (f != 0 && f != 1) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'fmod' is %lld; it must be 0 or 1", (long long)f);
            goto fail;
        }
        p->fmod = (int)f;
    }
    if (n->op == BD_OP_BitShift) {
        const char *dir = NULL;
        BD_TRY(bd_attr_string(n, "direction", NULL, &dir, e));
        if (!dir || (strcmp(dir, "LEFT") && strcmp(dir, "RIGHT"))) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'direction' is %s%s%s; it must be 'LEFT' or 'RIGHT'",
                         dir ? "'" : "", dir ? dir : "missing", dir ? "'" : "");
            goto fail;
        }
        p->shift_left = !strcmp(dir, "LEFT");
    }
    if (n->opset < 7 && had_broadcast_attr(n->op)) {
        int64_t b = 0;
        p->legacy = 1;
        BD_TRY(bd_attr_int(n, "broadcast", 0, &b, e));
        BD_TRY(bd_attr_int(n, "axis", 0, &p->axis, e));
        p->broadcast = b != 0;
        p->has_axis = bd_node_attr(n, "axis") != NULL;
    }
fail:
    return bd_params_done(n, p, st);
}

/* The output shape of the old forms: B equal to A (broadcast=0), or B placed
 * at 'axis' of A, or B matching A's trailing dims (broadcast=1). */
static braid_status legacy_shape(const bd_node *n, const bd_tensor *a, const bd_tensor *b, bd_tensor *out,
                                 bd_err *e)
{
    const bd_binary_params *p = n->params;
    char sa[160], sb[160];
    bd_tensor v = {0};
    if (!p->broadcast) {
        if (!bd_shape_equal(a, b))
            return BD_FAIL(e, BRAID_ERR_SHAPE,
                           "inputs of shapes %s and %s differ, and attribute 'broadcast' is not set (opset %d)",
                           bd_shape_str(a, sa, sizeof sa), bd_shape_str(b, sb, sizeof sb), n->opset);
    } else if (p->has_axis) {
        int64_t axis = p->axis < 0 ? p->axis + a->rank : p->axis;
        if (axis < 0 || axis + b->rank > a->rank)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'axis' is %lld: B of rank %d does not fit in A of rank %d there",
                           (long long)p->axis, b->rank, a->rank);
        bd_binary_view(n, a, b, &v);
        if (!bd_binary_into(a, &v))
            return BD_FAIL(e, BRAID_ERR_SHAPE, "B of shape %s does not match A of shape %s at axis %lld",
                           bd_shape_str(b, sb, sizeof sb), bd_shape_str(a, sa, sizeof sa), (long long)p->axis);
    } else if (!bd_binary_into(a, b)) {
        return BD_FAIL(e, BRAID_ERR_SHAPE, "B of shape %s does not broadcast to A of shape %s",
                       bd_shape_str(b, sb, sizeof sb), bd_shape_str(a, sa, sizeof sa));
    }
    *out = *a;
    return BRAID_OK;
}

braid_status bd_binary_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    braid_status st;
    int first = n->op == BD_OP_Where; /* Where's condition is input 0 */
    for (int i = 0; i < n->n_in; i++)
        if (in[i].dtype == BRAID_DTYPE_UNDEFINED)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "input %d is missing or has no known dtype", i);
    const bd_tensor *a = &in[first];
    if (first && in[0].dtype != BRAID_DTYPE_BOOL)
        return BD_FAIL(e, BRAID_ERR_DTYPE, "condition has dtype %s, it must be bool", bd_dtype_name(in[0].dtype));
    if ((st = check_dtype(n, a, n->n_in > 1 ? "input A" : "the input", allowed(n->op), e))) return st;
    for (int i = first + 1; i < n->n_in; i++) {
        if (n->op == BD_OP_Pow) {
            if ((st = check_dtype(n, &in[1], "the exponent", NUMERIC, e))) return st;
        } else if (in[i].dtype != a->dtype) {
            return BD_FAIL(e, BRAID_ERR_DTYPE, "inputs have different dtypes (%s and %s); %s needs them equal",
                           bd_dtype_name(a->dtype), bd_dtype_name(in[i].dtype), n->op_type);
        }
    }
    out[0].dtype = is_compare(n->op) ? BRAID_DTYPE_BOOL : a->dtype;
    out[0].data = NULL;
    for (int i = 0; i < n->n_in; i++)
        if (in[i].rank < 0) { out[0].rank = -1; return BRAID_OK; } /* shape not known yet */
    bd_tensor shape = in[0], v;
    const bd_binary_params *p = n->params;
    if (p && p->legacy) {
        if ((st = legacy_shape(n, &in[0], &in[1], &shape, e))) return st;
    } else if (n->op == BD_OP_PRelu) {
        const bd_tensor *s = bd_binary_view(n, &in[0], &in[1], &v) ? &v : &in[1];
        if (!bd_binary_into(&in[0], s)) {
            char sx[160], ss[160];
            return BD_FAIL(e, BRAID_ERR_SHAPE, "slope of shape %s does not broadcast to X of shape %s",
                           bd_shape_str(&in[1], ss, sizeof ss), bd_shape_str(&in[0], sx, sizeof sx));
        }
    } else {
        for (int i = 1; i < n->n_in; i++) {
            bd_tensor next = {0};
            if ((st = bd_broadcast_shape(&shape, &in[i], &next, e))) return st;
            shape = next;
        }
    }
    out[0].rank = shape.rank;
    for (int i = 0; i < shape.rank; i++) out[0].dims[i] = shape.dims[i];
    return BRAID_OK;
}

double bd_binary_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    (void)in;
    double per = n->op == BD_OP_Pow || n->op == BD_OP_Mod ? 10.0 : n->op == BD_OP_Div ? 2.0 : 1.0;
    if (n->n_in > 2 && n->op != BD_OP_Where) per *= n->n_in - 1;
    return per * (double)bd_numel(&out[0]);
}
