/* training.c: attribute parsing, dtype checks, shape inference and cost of
 * the training op family (ai.onnx.preview.training opset 1): Adagrad, Adam
 * and Momentum, each updating any number of tensors in one node. Inputs are
 * R (learning rate, float/double scalar), T (int64 step count, scalar), then
 * the groups X..., G..., and the optimizer's states; outputs are the new X...
 * then the new states. Gradient is not implemented. */
#include <string.h>

#include "training.h"

braid_status bd_training_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    float f;
    const char *mode = NULL;
    bd_train_params *p = bd_calloc(1, sizeof *p);
    BD_CHECK_ALLOC(e, p);
    switch (n->op) {
    case BD_OP_TR_Adagrad:
        p->per = 3;
        BD_TRY(bd_attr_float(n, "decay_factor", 0.0f, &f, e));
        p->decay_factor = f;
        BD_TRY(bd_attr_float(n, "epsilon", 0.0f, &f, e));
        p->epsilon = f;
        BD_TRY(bd_attr_float(n, "norm_coefficient", 0.0f, &f, e));
        p->norm_coefficient = f;
        break;
    case BD_OP_TR_Adam:
        p->per = 4;
        BD_TRY(bd_attr_float(n, "alpha", 0.9f, &f, e));
        p->alpha = f;
        BD_TRY(bd_attr_float(n, "beta", 0.999f, &f, e));
        p->beta = f;
        BD_TRY(bd_attr_float(n, "epsilon", 1e-6f, &f, e));
        p->epsilon = f;
        BD_TRY(bd_attr_float(n, "norm_coefficient", 0.0f, &f, e));
        p->norm_coefficient = f;
        BD_TRY(bd_attr_float(n, "norm_coefficient_post", 0.0f, &f, e));
        p->norm_coefficient_post = f;
        break;
    case BD_OP_TR_Momentum: {
        static const char *const req[] = {"alpha", "beta", "norm_coefficient", "mode"};
        for (int i = 0; i < 4; i++)
            if (!bd_node_attr(n, req[i])) {
                st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' is required", req[i]);
                goto fail;
            }
        p->per = 3;
        BD_TRY(bd_attr_float(n, "alpha", 0.0f, &f, e));
        p->alpha = f;
        BD_TRY(bd_attr_float(n, "beta", 0.0f, &f, e));
        p->beta = f;
        BD_TRY(bd_attr_float(n, "norm_coefficient", 0.0f, &f, e));
        p->norm_coefficient = f;
        BD_TRY(bd_attr_string(n, "mode", NULL, &mode, e));
        if (!strcmp(mode, "nesterov")) p->nesterov = 1;
        else if (strcmp(mode, "standard")) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'mode' is '%s', not 'standard' or 'nesterov'", mode);
            goto fail;
        }
        break;
    }
    default:
        st = BD_FAIL(e, BRAID_ERR_INTERNAL, "op %s is not in the training family", n->op_type);
        goto fail;
    }
    int outs = p->per - 1; /* X and the states come back; G does not */
    if (n->n_in < 2 + p->per || (n->n_in - 2) % p->per) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "%s takes R, T and %d inputs per updated tensor, not %d inputs",
                     n->op_type, p->per, n->n_in);
        goto fail;
    }
    p->groups = (n->n_in - 2) / p->per;
    if (n->n_out != p->groups * outs) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "%s updating %d tensors has %d outputs, not %d", n->op_type,
                     p->groups, n->n_out, p->groups * outs);
        goto fail;
    }
fail:
    return bd_params_done(n, p, st);
}

static const char *const state_names[3][4] = {{"X", "G", "H"}, {"X", "G", "V", "H"}, {"X", "G", "V"}};

braid_status bd_training_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_train_params *p = n->params;
    if (!p) return BD_FAIL(e, BRAID_ERR_INTERNAL, "training parameters were not parsed");
    const char *const *names = state_names[n->op == BD_OP_TR_Adagrad ? 0 : n->op == BD_OP_TR_Adam ? 1 : 2];
    if (in[0].dtype != BRAID_DTYPE_FLOAT && in[0].dtype != BRAID_DTYPE_DOUBLE)
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input R has dtype %s, not float or double", bd_dtype_name(in[0].dtype));
    if (in[1].dtype != BRAID_DTYPE_INT64)
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input T has dtype %s, not int64", bd_dtype_name(in[1].dtype));
    if (bd_numel(&in[0]) != 1 || bd_numel(&in[1]) != 1 || in[0].rank > 1 || in[1].rank > 1)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "inputs R and T must be scalars");
    for (int g = 0; g < p->groups; g++) {
        const bd_tensor *x = &in[2 + g];
        if (x->dtype != BRAID_DTYPE_FLOAT && x->dtype != BRAID_DTYPE_DOUBLE)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "input %s%d has dtype %s, not float or double", names[0], g + 1,
                           bd_dtype_name(x->dtype));
        for (int j = 1; j < p->per; j++) {
            const bd_tensor *t = &in[2 + j * p->groups + g];
            if (t->dtype != x->dtype)
                return BD_FAIL(e, BRAID_ERR_DTYPE, "input %s%d has dtype %s, %s%d has %s", names[j], g + 1,
                               bd_dtype_name(t->dtype), names[0], g + 1, bd_dtype_name(x->dtype));
            if (!bd_shape_equal(t, x)) {
                char a[160], b[160];
                return BD_FAIL(e, BRAID_ERR_SHAPE, "input %s%d has shape %s, %s%d has %s", names[j], g + 1,
                               bd_shape_str(t, a, sizeof a), names[0], g + 1, bd_shape_str(x, b, sizeof b));
            }
        }
        for (int j = 0; j < p->per - 1; j++) {
            out[j * p->groups + g] = *x;
            out[j * p->groups + g].data = NULL;
        }
    }
    return BRAID_OK;
}

double bd_training_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    const bd_train_params *p = n->params;
    double c = 0;
    (void)out;
    if (!p) return 0;
    for (int g = 0; g < p->groups; g++) c += 10.0 * (double)bd_numel(&in[2 + g]);
    return c;
}
