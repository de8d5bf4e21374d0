/* unary.c: attribute parsing, dtype checks, shape inference and cost of the
 * unary op family: activations, elementwise math, Clip, Not and Cast. */
#include "unary.h"

#include <float.h>

#include "ops.h"

#define DT(x) (1u << BRAID_DTYPE_##x)
#define FLOATS (DT(FLOAT) | DT(DOUBLE))
#define SINTS (DT(INT8) | DT(INT16) | DT(INT32) | DT(INT64))
#define UINTS (DT(UINT8) | DT(UINT16) | DT(UINT32) | DT(UINT64))
#define NUMERIC (FLOATS | SINTS | UINTS)
#define CASTABLE (NUMERIC | DT(BOOL) | DT(FLOAT16))

/* The dtypes each op takes. Clip before opset 11 (bounds as float
 * attributes, FLT_MAX by default) is defined on floats only. */
static unsigned allowed(const bd_node *n)
{
    switch (n->op) {
    case BD_OP_Relu: case BD_OP_Neg: case BD_OP_Abs: return FLOATS | SINTS;
    case BD_OP_Clip: return n->opset < 11 ? FLOATS : NUMERIC;
    case BD_OP_Not: return DT(BOOL);
    case BD_OP_Cast: return CASTABLE;
    default: return FLOATS;
    }
}

static int dtype_in(int dt, unsigned set) { return dt > 0 && dt < 32 && (set & (1u << dt)); }

braid_status bd_unary_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_unary_params *p = bd_calloc(1, sizeof *p);
    BD_CHECK_ALLOC(e, p);
    switch (n->op) {
    case BD_OP_LeakyRelu: BD_TRY(bd_attr_float(n, "alpha", 0.01f, &p->alpha, e)); break;
    case BD_OP_HardSigmoid:
        BD_TRY(bd_attr_float(n, "alpha", 0.2f, &p->alpha, e));
        BD_TRY(bd_attr_float(n, "beta", 0.5f, &p->beta, e));
        break;
    case BD_OP_Clip:
        BD_TRY(bd_attr_float(n, "min", -FLT_MAX, &p->min, e));
        BD_TRY(bd_attr_float(n, "max", FLT_MAX, &p->max, e));
        break;
    case BD_OP_Cast: {
        int64_t to = 0;
        BD_TRY(bd_attr_int(n, "to", 0, &to, e));
        if (!bd_node_attr(n, "to")) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'to' is required");
            goto fail;
        }
        if (!dtype_in((int)to, CASTABLE) || to != (int)to) {
            st = BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "cast to dtype %s (%lld) is not supported",
                         bd_dtype_name((int)to), (long long)to);
            goto fail;
        }
        p->to = (int)to;
        break;
    }
    default: break;
    }
fail:
    return bd_params_done(n, p, st);
}

braid_status bd_unary_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_tensor *x = &in[0];
    if (!dtype_in(x->dtype, allowed(n)))
        return BD_FAIL(e, x->dtype == BRAID_DTYPE_STRING || x->dtype == BRAID_DTYPE_FLOAT16 ||
                                  x->dtype > BRAID_DTYPE_UINT64
                              ? BRAID_ERR_UNSUPPORTED
                              : BRAID_ERR_DTYPE,
                       "input has dtype %s, which %s does not take", bd_dtype_name(x->dtype),
                       n->op_type);
    if (n->op == BD_OP_Clip) {
        static const char *const names[3] = {"", "min", "max"};
        for (int i = 1; i < n->n_in; i++) {
            if (in[i].dtype == BRAID_DTYPE_UNDEFINED) continue; /* omitted */
            if (in[i].dtype != x->dtype)
                return BD_FAIL(e, BRAID_ERR_DTYPE,
                               "input '%s' has dtype %s but X has dtype %s; Clip needs them equal",
                               names[i], bd_dtype_name(in[i].dtype), bd_dtype_name(x->dtype));
            if (in[i].rank >= 0 && bd_numel(&in[i]) != 1)
                return BD_FAIL(e, BRAID_ERR_SHAPE, "input '%s' must be a scalar, not %lld values",
                               names[i], (long long)bd_numel(&in[i]));
        }
    }
    const bd_unary_params *p = n->params;
    out[0] = *x;
    out[0].data = NULL;
    if (n->op == BD_OP_Cast) out[0].dtype = p ? p->to : BRAID_DTYPE_UNDEFINED;
    return BRAID_OK;
}

double bd_unary_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    (void)in;
    double per;
    switch (n->op) {
    case BD_OP_Sigmoid: case BD_OP_Tanh: case BD_OP_Exp: case BD_OP_Log: case BD_OP_Erf:
        per = 10.0;
        break;
    case BD_OP_Sqrt: case BD_OP_Reciprocal: per = 4.0; break;
    default: per = 1.0; break;
    }
    return per * (double)bd_numel(&out[0]);
}
