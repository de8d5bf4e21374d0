/* unary.c: attribute parsing, dtype checks, shape inference and cost of the
 * unary op family: elementwise math (Abs, Neg, Exp, Log, Sqrt, Erf, Tanh, the
 * trigonometric and hyperbolic functions, Round, Sign...), IsNaN and IsInf,
 * Not and BitwiseNot, and Clip. */
#include "unary.h"

#include <float.h>

#include "ops.h"

#define DT(x) (1u << BRAID_DTYPE_##x)
#define FLOATS (DT(FLOAT) | DT(DOUBLE) | DT(FLOAT16) | DT(BFLOAT16))
#define SINTS (DT(INT8) | DT(INT16) | DT(INT32) | DT(INT64))
#define UINTS (DT(UINT8) | DT(UINT16) | DT(UINT32) | DT(UINT64))
#define FLOAT8S (DT(FLOAT8E4M3FN) | DT(FLOAT8E4M3FNUZ) | DT(FLOAT8E5M2) | DT(FLOAT8E5M2FNUZ))

/* The dtypes each op takes (the union over its opsets). Clip before opset
 * 12 (bounds as float attributes before 11) is defined on floats only. */
static unsigned allowed(const bd_node *n)
{
    switch (n->op) {
    case BD_OP_Abs: case BD_OP_Sign: case BD_OP_Erf: return FLOATS | SINTS | UINTS;
    case BD_OP_Neg: return FLOATS | SINTS;
    case BD_OP_Clip: return n->opset < 12 ? FLOATS : FLOATS | SINTS | UINTS;
    case BD_OP_IsNaN: case BD_OP_IsInf: return FLOATS | FLOAT8S;
    case BD_OP_Not: return DT(BOOL);
    case BD_OP_BitwiseNot: return SINTS | UINTS;
    default: return FLOATS;
    }
}

static int dtype_in(int dt, unsigned set) { return dt > 0 && dt < 32 && (set & (1u << dt)); }

braid_status bd_unary_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_unary_params *p = bd_calloc(1, sizeof *p);
    BD_CHECK_ALLOC(e, p);
    p->min = -FLT_MAX;
    p->max = FLT_MAX;
    switch (n->op) {
    case BD_OP_Clip:
        BD_TRY(bd_attr_float(n, "min", -FLT_MAX, &p->min, e));
        BD_TRY(bd_attr_float(n, "max", FLT_MAX, &p->max, e));
        break;
    case BD_OP_IsInf: {
        int64_t neg, pos;
        BD_TRY(bd_attr_int(n, "detect_negative", 1, &neg, e));
        BD_TRY(bd_attr_int(n, "detect_positive", 1, &pos, e));
        p->detect_neg = neg != 0;
        p->detect_pos = pos != 0;
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
        return BD_FAIL(e, x->dtype == BRAID_DTYPE_STRING ? BRAID_ERR_UNSUPPORTED : BRAID_ERR_DTYPE,
                       "input has dtype %s, which %s does not take", bd_dtype_name(x->dtype), n->op_type);
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
    out[0] = *x;
    out[0].data = NULL;
    if (n->op == BD_OP_IsNaN || n->op == BD_OP_IsInf) out[0].dtype = BRAID_DTYPE_BOOL;
    return BRAID_OK;
}

double bd_unary_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    (void)in;
    double per;
    switch (n->op) {
    case BD_OP_Exp: case BD_OP_Log: case BD_OP_Erf: case BD_OP_Tanh: per = 10.0; break;
    case BD_OP_Sqrt: case BD_OP_Reciprocal: per = 4.0; break;
    case BD_OP_Sin: case BD_OP_Cos: case BD_OP_Tan: case BD_OP_Asin: case BD_OP_Acos: case BD_OP_Atan:
    case BD_OP_Sinh: case BD_OP_Cosh: case BD_OP_Asinh: case BD_OP_Acosh: case BD_OP_Atanh: per = 20.0; break;
    default: per = 1.0; break;
    }
    return per * (double)bd_numel(&out[0]);
}
