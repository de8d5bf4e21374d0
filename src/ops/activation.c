/* activation.c: attribute parsing, dtype checks, shape inference and cost of
 * the activation op family: Relu, LeakyRelu, Sigmoid, HardSigmoid,
 * HardSwish, Elu, Selu, Celu, ThresholdedRelu, Gelu, Mish, Softplus,
 * Softsign, Swish, Shrink and SwiGLU, and com.microsoft's Gelu, FastGelu
 * (optional bias), BiasGelu and QuickGelu. */
#include "activation.h"

#include <string.h>

#include "ops.h"

#define DT(x) (1u << BRAID_DTYPE_##x)
#define FLOATS (DT(FLOAT) | DT(DOUBLE) | DT(FLOAT16) | DT(BFLOAT16))
#define SINTS (DT(INT8) | DT(INT16) | DT(INT32) | DT(INT64))
#define UINTS (DT(UINT8) | DT(UINT16) | DT(UINT32) | DT(UINT64))

static unsigned allowed(int op)
{
    switch (op) {
    case BD_OP_Relu: return FLOATS | SINTS;
    case BD_OP_Shrink: return FLOATS | SINTS | UINTS;
    default: return FLOATS;
    }
}

braid_status bd_activation_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_activation_params *p = bd_calloc(1, sizeof *p);
    BD_CHECK_ALLOC(e, p);
    float alpha = 1.0f;
    switch (n->op) {
    case BD_OP_LeakyRelu: alpha = 0.01f; break;
    case BD_OP_HardSigmoid: alpha = 0.2f; break;
    case BD_OP_Selu: alpha = 1.67326319217681884765625f; break;
    case BD_OP_MS_QuickGelu: alpha = 1.702f; break;
    default: break;
    }
    BD_TRY(bd_attr_float(n, "alpha", alpha, &p->alpha, e));
    BD_TRY(bd_attr_float(n, "beta", 0.5f, &p->beta, e));
    BD_TRY(bd_attr_float(n, "gamma", 1.05070102214813232421875f, &p->gamma, e));
    BD_TRY(bd_attr_float(n, "lambd", 0.5f, &p->lambd, e));
    BD_TRY(bd_attr_float(n, "bias", 0.0f, &p->bias, e));
    if (n->op == BD_OP_Celu && p->alpha == 0) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'alpha' of Celu must not be 0");
        goto fail;
    }
    if (n->op == BD_OP_Gelu) {
        const char *approx = "none";
        BD_TRY(bd_attr_string(n, "approximate", "none", &approx, e));
        if (strcmp(approx, "none") && strcmp(approx, "tanh")) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL,
                         "attribute 'approximate' is '%s'; it must be 'none' or 'tanh'", approx);
            goto fail;
        }
        p->approx = !strcmp(approx, "tanh");
    }
fail:
    return bd_params_done(n, p, st);
}

braid_status bd_activation_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_tensor *x = &in[0];
    unsigned bit = x->dtype > 0 && x->dtype < 32 ? 1u << x->dtype : 0;
    if (!(bit & allowed(n->op)))
        return BD_FAIL(e, x->dtype == BRAID_DTYPE_STRING ? BRAID_ERR_UNSUPPORTED : BRAID_ERR_DTYPE,
                       "input has dtype %s, which %s does not take", bd_dtype_name(x->dtype), n->op_type);
    out[0] = *x;
    out[0].data = NULL;
    /* The second input: SwiGLU's B (the same shape), a bias broadcast into X. */
    if (n->n_in > 1 && in[1].dtype != BRAID_DTYPE_UNDEFINED) {
        const bd_tensor *b = &in[1];
        if (b->dtype != x->dtype)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "inputs have different dtypes (%s and %s); %s needs them equal",
                           bd_dtype_name(x->dtype), bd_dtype_name(b->dtype), n->op_type);
        if (x->rank < 0 || b->rank < 0) {
            out[0].rank = -1;
            return BRAID_OK;
        }
        char sa[160], sb[160];
        if (n->op == BD_OP_SwiGLU && !bd_shape_equal(x, b))
            return BD_FAIL(e, BRAID_ERR_SHAPE, "A of shape %s and B of shape %s must have the same shape",
                           bd_shape_str(x, sa, sizeof sa), bd_shape_str(b, sb, sizeof sb));
        bd_tensor s = {0};
        braid_status st = bd_broadcast_shape(x, b, &s, e);
        if (st) return st;
        if (!bd_shape_equal(&s, x))
            return BD_FAIL(e, BRAID_ERR_SHAPE, "bias of shape %s does not broadcast to the input's shape %s",
                           bd_shape_str(b, sb, sizeof sb), bd_shape_str(x, sa, sizeof sa));
    }
    return BRAID_OK;
}

double bd_activation_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    (void)in;
    double per;
    switch (n->op) {
    case BD_OP_Relu: case BD_OP_LeakyRelu: case BD_OP_ThresholdedRelu: case BD_OP_Shrink: per = 1.0; break;
    case BD_OP_HardSigmoid: case BD_OP_HardSwish: case BD_OP_Softsign: per = 3.0; break;
    case BD_OP_Mish: case BD_OP_Softplus: per = 30.0; break;
    default: per = 12.0; break;
    }
    return per * (double)bd_numel(&out[0]);
}
