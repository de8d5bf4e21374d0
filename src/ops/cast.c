/* cast.c: attribute parsing, dtype checks, shape inference and cost of the
 * cast op family: Cast (attribute 'to') and CastLike (the dtype of its second
 * input), between every numeric dtype braid has, with 'saturate' (opset 19,
 * float8 targets) and 'round_mode' (opset 24, float8e8m0 targets), and
 * between strings and the floats (float, double, float16, bfloat16), the
 * integers and bool (on the host; formats in src/backend/cpu/ops/cast.c). */
#include "cast.h"

#include <string.h>
#include <strings.h>

#include "ops.h"

/* 1 for the dtypes Cast converts: every numeric one braid has. */
static int castable(int dt)
{
    return dt > BRAID_DTYPE_UNDEFINED && dt <= BRAID_DTYPE_FLOAT6E3M2 && dt != BRAID_DTYPE_STRING &&
           dt != BRAID_DTYPE_COMPLEX64 && dt != BRAID_DTYPE_COMPLEX128;
}

/* 1 for the dtypes that convert to and from strings. */
static int string_castable(int dt)
{
    switch (dt) {
    case BRAID_DTYPE_FLOAT: case BRAID_DTYPE_DOUBLE: case BRAID_DTYPE_FLOAT16: case BRAID_DTYPE_BFLOAT16:
    case BRAID_DTYPE_INT8: case BRAID_DTYPE_INT16: case BRAID_DTYPE_INT32: case BRAID_DTYPE_INT64:
    case BRAID_DTYPE_UINT8: case BRAID_DTYPE_UINT16: case BRAID_DTYPE_UINT32: case BRAID_DTYPE_UINT64:
    case BRAID_DTYPE_BOOL: case BRAID_DTYPE_STRING: return 1;
    default: return 0;
    }
}

static braid_status refuse(int dt, const char *what, bd_err *e)
{
    if (dt == BRAID_DTYPE_STRING || dt == BRAID_DTYPE_COMPLEX64 || dt == BRAID_DTYPE_COMPLEX128)
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "cast %s %s is not supported", what, bd_dtype_name(dt));
    return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "cast %s dtype %d, which is not an ONNX dtype", what, dt);
}

/* Cast-1 named its target by TensorProto.DataType's name ("FLOAT"): its
 * number, or 0 when the name is none braid knows. */
static int dtype_by_name(const char *s)
{
    static const char *const names[] = {"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32",
                                        "INT64", "STRING", "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64",
                                        "COMPLEX64", "COMPLEX128", "BFLOAT16"};
    for (int i = 1; s && i < (int)(sizeof names / sizeof *names); i++)
        if (!strcasecmp(s, names[i])) return i;
    return 0;
}

braid_status bd_cast_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_cast_params *p = bd_calloc(1, sizeof *p);
    BD_CHECK_ALLOC(e, p);
    int64_t sat = 1;
    BD_TRY(bd_attr_int(n, "saturate", 1, &sat, e));
    p->saturate = sat != 0;
    const char *mode = "up";
    BD_TRY(bd_attr_string(n, "round_mode", "up", &mode, e));
    if (!strcmp(mode, "up")) p->round_mode = BD_ROUND_UP;
    else if (!strcmp(mode, "down")) p->round_mode = BD_ROUND_DOWN;
    else if (!strcmp(mode, "nearest")) p->round_mode = BD_ROUND_NEAREST;
    else {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL,
                     "attribute 'round_mode' is '%s'; it must be 'up', 'down' or 'nearest'", mode);
        goto fail;
    }
    if (n->op == BD_OP_Cast) {
        int64_t to = 0;
        const bd_attr *a = bd_node_attr(n, "to");
        if (!a) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'to' is required");
            goto fail;
        }
        if (a->type == BD_ATTR_STRING) { /* opset 1: the type's name */
            if (!(to = dtype_by_name(a->s))) {
                st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'to' is '%s', which names no ONNX dtype",
                             a->s ? a->s : "");
                goto fail;
            }
        } else {
            BD_TRY(bd_attr_int(n, "to", 0, &to, e));
        }
        if (to != (int)to || (!castable((int)to) && to != BRAID_DTYPE_STRING)) {
            st = refuse((int)to, "to", e);
            goto fail;
        }
        p->to = (int)to;
    }
fail:
    return bd_params_done(n, p, st);
}

braid_status bd_cast_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_cast_params *p = n->params;
    int from = in[0].dtype;
    if (!castable(from) && from != BRAID_DTYPE_STRING) return refuse(from, "from", e);
    int to = p ? p->to : BRAID_DTYPE_UNDEFINED;
    if (n->op == BD_OP_CastLike) {
        to = in[1].dtype;
        if (!castable(to) && to != BRAID_DTYPE_STRING) return refuse(to, "to", e);
    }
    if ((from == BRAID_DTYPE_STRING || to == BRAID_DTYPE_STRING) && (!string_castable(from) || !string_castable(to)))
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "cast from %s to %s is not supported (strings convert to and from "
                       "the floats float, double, float16 and bfloat16, the integers and bool)", bd_dtype_name(from),
                       bd_dtype_name(to));
    out[0] = in[0];
    out[0].data = NULL;
    out[0].dtype = to;
    return BRAID_OK;
}

double bd_cast_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    (void)n, (void)in;
    return (double)bd_numel(&out[0]);
}
