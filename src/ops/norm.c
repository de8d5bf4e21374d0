/* norm.c: attribute parsing, dtype and shape checks, shape inference and
 * cost of the norm op family: BatchNormalization (inference and training, the
 * old is_test/spatial/momentum attributes, opsets 1 to 15),
 * InstanceNormalization, GroupNormalization (18: scale and bias per group;
 * 21: per channel), LRN, LpNormalization and MeanVarianceNormalization. The
 * layer-wise norms are the layernorm family. */
#include "norm.h"

#define DT(x) (1u << BRAID_DTYPE_##x)

/* The opset from which op takes bfloat16. */
static int bf16_from(int op)
{
    switch (op) {
    case BD_OP_BatchNormalization: return 14;
    case BD_OP_InstanceNormalization: return 22;
    case BD_OP_GroupNormalization: return 18;
    case BD_OP_LRN: return 13;
    case BD_OP_LpNormalization: return 22;
    default: return 13; /* MeanVarianceNormalization */
    }
}

static int any_optional_output(const bd_node *n)
{
    for (int i = 1; i < n->n_out; i++)
        if (!n->out || n->out[i] >= 0) return 1;
    return 0;
}

braid_status bd_norm_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    int64_t v;
    bd_norm_params *p = bd_calloc(1, sizeof *p);
    BD_CHECK_ALLOC(e, p);
    BD_TRY(bd_attr_float(n, "epsilon", 1e-5f, &p->epsilon, e));
    switch (n->op) {
    case BD_OP_BatchNormalization:
        BD_TRY(bd_attr_float(n, "momentum", 0.9f, &p->momentum, e));
        BD_TRY(bd_attr_int(n, "spatial", 1, &v, e));
        p->spatial = v != 0;
        if (n->opset >= 14) { /* training_mode */
            BD_TRY(bd_attr_int(n, "training_mode", 0, &v, e));
            p->training = v != 0;
        } else if (n->opset >= 7) { /* the optional outputs ask for training */
            p->training = any_optional_output(n);
        } else { /* is_test, whose default 0 is training */
            BD_TRY(bd_attr_int(n, "is_test", 0, &v, e));
            p->training = v == 0;
        }
        if (n->n_out > (n->opset >= 14 ? 3 : 5)) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "BatchNormalization-%d has at most %d outputs, not %d",
                         n->opset, n->opset >= 14 ? 3 : 5, n->n_out);
            goto fail;
        }
        if (!p->training && any_optional_output(n) && n->opset >= 14) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "the running statistics are outputs of training mode only "
                         "(training_mode is 0)");
            goto fail;
        }
        break;
    case BD_OP_GroupNormalization:
        if (!bd_node_attr(n, "num_groups")) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'num_groups' is required");
            goto fail;
        }
        BD_TRY(bd_attr_int(n, "num_groups", 0, &p->groups, e));
        if (p->groups <= 0) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "num_groups is %lld; it must be positive", (long long)p->groups);
            goto fail;
        }
        BD_TRY(bd_attr_int(n, "stash_type", 1, &v, e));
        if (v != BRAID_DTYPE_FLOAT && v != BRAID_DTYPE_DOUBLE && v != BRAID_DTYPE_FLOAT16 && v != BRAID_DTYPE_BFLOAT16) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "stash_type %lld is not a floating-point type", (long long)v);
            goto fail;
        }
        p->group_affine = n->opset < 21;
        break;
    case BD_OP_LRN:
        if (!bd_node_attr(n, "size")) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'size' is required");
            goto fail;
        }
        BD_TRY(bd_attr_int(n, "size", 0, &p->size, e));
        BD_TRY(bd_attr_float(n, "alpha", 1e-4f, &p->alpha, e));
        BD_TRY(bd_attr_float(n, "beta", 0.75f, &p->beta, e));
        BD_TRY(bd_attr_float(n, "bias", 1.0f, &p->bias, e));
        if (p->size <= 0) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "size is %lld; it must be positive", (long long)p->size);
            goto fail;
        }
        break;
    case BD_OP_LpNormalization:
        BD_TRY(bd_attr_int(n, "axis", -1, &p->axis, e));
        BD_TRY(bd_attr_int(n, "p", 2, &v, e));
        if (v != 1 && v != 2) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "p is %lld; LpNormalization takes 1 or 2", (long long)v);
            goto fail;
        }
        p->p = (int)v;
        break;
    case BD_OP_MeanVarianceNormalization:
        BD_TRY(bd_attr_ints(n, "axes", p->axes, BD_MAX_RANK, &p->n_axes, e));
        if (!bd_node_attr(n, "axes")) {
            p->axes[0] = 0, p->axes[1] = 2, p->axes[2] = 3;
            p->n_axes = 3;
        }
        break;
    default: break;
    }
fail:
    return bd_params_done(n, p, st);
}

braid_status bd_mvn_mask(const bd_norm_params *p, int rank, unsigned *mask, bd_err *e)
{
    *mask = 0;
    for (int i = 0; i < p->n_axes; i++) {
        int a;
        braid_status st = bd_axis(p->axes[i], rank, &a, e);
        if (st) return st;
        if (*mask & (1u << a)) return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "axis %lld is listed twice", (long long)p->axes[i]);
        *mask |= 1u << a;
    }
    return BRAID_OK;
}

static int is_float(int dt)
{
    return dt == BRAID_DTYPE_FLOAT || dt == BRAID_DTYPE_DOUBLE || dt == BRAID_DTYPE_FLOAT16 || dt == BRAID_DTYPE_BFLOAT16;
}

/* t must be a float dtype the op takes at its opset. */
static braid_status check_float(const bd_node *n, const bd_tensor *t, const char *what, bd_err *e)
{
    if (!is_float(t->dtype) || (t->dtype == BRAID_DTYPE_BFLOAT16 && n->opset < bf16_from(n->op)))
        return BD_FAIL(e, BRAID_ERR_DTYPE, "%s has dtype %s, which %s (opset %d) does not take", what,
                       bd_dtype_name(t->dtype), n->op_type, n->opset);
    return BRAID_OK;
}

/* in[i] holds `count` values (1-D of that size, or any shape when any_shape). */
static braid_status check_count(const bd_tensor *t, const char *what, int64_t count, int any_shape, bd_err *e)
{
    char s[160];
    if (t->rank < 0 || count < 0) return BRAID_OK;
    if (any_shape ? bd_numel(t) != count : (t->rank != 1 || t->dims[0] != count))
        return BD_FAIL(e, BRAID_ERR_SHAPE, "input %s has shape %s; expected %lld values%s", what,
                       bd_shape_str(t, s, sizeof s), (long long)count, any_shape ? "" : " in a 1-D tensor");
    return BRAID_OK;
}

static braid_status batchnorm_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    static const char *const names[5] = {"X", "scale", "B", "input_mean", "input_var"};
    const bd_norm_params *p = n->params;
    const bd_tensor *x = &in[0];
    braid_status st;
    for (int i = 0; i < 5; i++)
        if ((st = check_float(n, &in[i], names[i], e))) return st;
    /* scale and B share a dtype (X's before opset 15), the mean and variance
     * another (X's before opset 14) */
    for (int i = 1; i < 5; i++) {
        int second = i == 2 || i == 4; /* B and input_var take the dtype of the input before them */
        int own = i <= 2 ? n->opset >= 15 : n->opset >= 14;
        int want = second && own ? in[i - 1].dtype : (i == 1 || i == 3) && own ? in[i].dtype : x->dtype;
        if (in[i].dtype != want)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "input %s is %s but %s is %s; they must match", names[i],
                           bd_dtype_name(in[i].dtype), second && own ? names[i - 1] : "X", bd_dtype_name(want));
    }
    if (x->rank == 0) return BD_FAIL(e, BRAID_ERR_SHAPE, "input X must be (N, C, ...) or (N), not a scalar");
    int64_t c = x->rank >= 2 ? x->dims[1] : 1, plane = 1;
    for (int i = 2; i < x->rank; i++) plane *= x->dims[i];
    int per_act = !p->spatial && n->opset < 9;
    for (int i = 1; i < 5 && x->rank > 0; i++)
        if ((st = check_count(&in[i], names[i], per_act ? c * plane : c, per_act, e))) return st;
    out[0] = *x;
    out[0].data = NULL;
    for (int o = 1; o < n->n_out; o++) { /* running (and saved) statistics: the mean's shape and dtype */
        out[o] = in[3];
        out[o].data = NULL;
    }
    return BRAID_OK;
}

static braid_status instnorm_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_norm_params *p = n->params;
    const bd_tensor *x = &in[0];
    braid_status st;
    char s[160];
    int group = n->op == BD_OP_GroupNormalization;
    if ((st = check_float(n, x, "X", e))) return st;
    for (int i = 1; i < 3; i++)
        if (in[i].dtype != x->dtype)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "input %s is %s but X is %s; they must match", i == 1 ? "scale" : "B",
                           bd_dtype_name(in[i].dtype), bd_dtype_name(x->dtype));
    if (x->rank >= 0 && x->rank < 2)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "input X must be (N, C, ...), not shape %s", bd_shape_str(x, s, sizeof s));
    if (x->rank >= 2) {
        int64_t c = x->dims[1], want = c;
        if (group) {
            if (c % p->groups)
                return BD_FAIL(e, BRAID_ERR_SHAPE, "%lld channels do not split into %lld groups", (long long)c,
                               (long long)p->groups);
            if (p->group_affine) want = p->groups;
        }
        for (int i = 1; i < 3; i++)
            if ((st = check_count(&in[i], i == 1 ? "scale" : "B", want, 0, e))) return st;
    }
    out[0] = *x;
    out[0].data = NULL;
    return BRAID_OK;
}

static braid_status elementwise_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_norm_params *p = n->params;
    const bd_tensor *x = &in[0];
    braid_status st;
    char s[160];
    if ((st = check_float(n, x, "input", e))) return st;
    if (x->rank >= 0) {
        int a;
        unsigned mask;
        switch (n->op) {
        case BD_OP_LRN:
            if (x->rank < 2)
                return BD_FAIL(e, BRAID_ERR_SHAPE, "input X must be (N, C, ...), not shape %s",
                               bd_shape_str(x, s, sizeof s));
            break;
        case BD_OP_LpNormalization:
            if (x->rank == 0) return BD_FAIL(e, BRAID_ERR_SHAPE, "input must have rank 1 or more, not a scalar");
            if ((st = bd_axis(p->axis, x->rank, &a, e))) return st;
            break;
        default:
            if ((st = bd_mvn_mask(p, x->rank, &mask, e))) return st;
            break;
        }
    }
    out[0] = *x;
    out[0].data = NULL;
    return BRAID_OK;
}

braid_status bd_norm_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    if (!n->params) return BD_FAIL(e, BRAID_ERR_INTERNAL, "attributes were not parsed");
    switch (n->op) {
    case BD_OP_BatchNormalization: return batchnorm_infer(n, in, out, e);
    case BD_OP_InstanceNormalization: case BD_OP_GroupNormalization: return instnorm_infer(n, in, out, e);
    case BD_OP_LRN: case BD_OP_LpNormalization: case BD_OP_MeanVarianceNormalization:
        return elementwise_infer(n, in, out, e);
    default:
        return BD_FAIL(e, BRAID_ERR_INTERNAL, "op %s is not in the norm family", n->op_type);
    }
}

double bd_norm_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    (void)out;
    const bd_norm_params *p = n->params;
    double per = 8.0; /* statistics, normalize, scale, shift */
    if (n->op == BD_OP_BatchNormalization && !(p && p->training)) per = 2.0;
    if (n->op == BD_OP_LRN && p) per = 2.0 * (double)p->size + 20.0; /* the window and a pow */
    return in[0].rank >= 0 ? per * (double)bd_numel(&in[0]) : 0.0;
}
