/* svm.c: attribute parsing, dtype checks, shape inference and cost of the svm
 * op family (ai.onnx.ml SVMClassifier and SVMRegressor): every kernel type,
 * kernel_params, liblinear mode, one-vs-one votes, probabilities from prob_a
 * and prob_b, post transforms, int64 or string labels, one_class. The
 * attributes are checked as onnxruntime checks them, with messages that
 * name the attribute and the sizes that disagree. */
#include <stdio.h>
#include <string.h>

#include "svm.h"

/* A FLOATS or INTS attribute as its count and values (NULL when absent). */
static const bd_attr *list_attr(const bd_node *n, const char *name, int type, bd_err *e, braid_status *st)
{
    const bd_attr *a = bd_node_attr(n, name);
    if (a && (int)a->type != type) {
        *st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' must be a list of %s", name,
                      type == BD_ATTR_FLOATS ? "floats" : "ints");
        return NULL;
    }
    return a;
}

static int kernel_of(const char *s)
{
    static const char *const names[] = {"LINEAR", "POLY", "RBF", "SIGMOID"};
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, names[i])) return i;
    return -1;
}

#define FAIL_IF(cond, ...)                                                                         \
    do {                                                                                           \
        if (cond) {                                                                                \
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, __VA_ARGS__);                                 \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

braid_status bd_svm_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_svm_params *p = NULL;
    int cls = n->op == BD_OP_ML_SVMClassifier;
    if (!cls && n->op != BD_OP_ML_SVMRegressor)
        return BD_FAIL(e, BRAID_ERR_INTERNAL, "op %s is not in the svm family", n->op_type);
    const bd_attr *coef = list_attr(n, "coefficients", BD_ATTR_FLOATS, e, &st);
    const bd_attr *sv = list_attr(n, "support_vectors", BD_ATTR_FLOATS, e, &st);
    const bd_attr *rho = list_attr(n, "rho", BD_ATTR_FLOATS, e, &st);
    const bd_attr *kp = list_attr(n, "kernel_params", BD_ATTR_FLOATS, e, &st);
    const bd_attr *pa = cls ? list_attr(n, "prob_a", BD_ATTR_FLOATS, e, &st) : NULL;
    const bd_attr *pb = cls ? list_attr(n, "prob_b", BD_ATTR_FLOATS, e, &st) : NULL;
    const bd_attr *vpc = cls ? list_attr(n, "vectors_per_class", BD_ATTR_INTS, e, &st) : NULL;
    const bd_attr *li = cls ? list_attr(n, "classlabels_ints", BD_ATTR_INTS, e, &st) : NULL;
    const bd_attr *ls = cls ? bd_node_attr(n, "classlabels_strings") : NULL;
    if (st) return st;
    const char *kt = "LINEAR", *post = "NONE";
    int64_t n_sup = 0, one_class = 0;
    BD_TRY_RET(bd_attr_string(n, "kernel_type", "LINEAR", &kt, e));
    BD_TRY_RET(bd_attr_string(n, "post_transform", "NONE", &post, e));
    if (!cls) {
        BD_TRY_RET(bd_attr_int(n, "n_supports", 0, &n_sup, e));
        BD_TRY_RET(bd_attr_int(n, "one_class", 0, &one_class, e));
    }
    int kernel = kernel_of(kt), pt = bd_ml_post_parse(post);
    FAIL_IF(!coef || coef->n == 0, "attribute 'coefficients' is required and must not be empty");
    FAIL_IF(!rho || rho->n == 0, "attribute 'rho' is required and must not be empty");
    FAIL_IF(kernel < 0, "attribute 'kernel_type' is '%s'; it must be LINEAR, POLY, RBF or SIGMOID", kt);
    FAIL_IF(pt < 0, "attribute 'post_transform' is '%s'; it must be NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO or PROBIT",
            post);
    FAIL_IF(kp && kp->n != 0 && kp->n != 3, "attribute 'kernel_params' has %d values; it takes gamma, coef0 and "
            "degree", kp->n);
    FAIL_IF(ls && ls->type != BD_ATTR_STRINGS, "attribute 'classlabels_strings' must be a list of strings");
    FAIL_IF(cls && (!ls || ls->n == 0) && (!li || li->n == 0), "one of 'classlabels_ints' and 'classlabels_strings' "
            "is required");
    FAIL_IF((pa ? pa->n : 0) != (pb ? pb->n : 0), "attributes 'prob_a' (%d values) and 'prob_b' (%d) differ in length",
            pa ? pa->n : 0, pb ? pb->n : 0);
    FAIL_IF(n_sup < 0, "attribute 'n_supports' is %lld", (long long)n_sup);
    int str_labels = ls && ls->n > 0;
    int64_t C = cls ? (str_labels ? ls->n : li->n) : 1, V = 0, F;
    FAIL_IF(C >= 65536, "%lld classes; braid runs up to 65535", (long long)C);
    if (cls)
        for (int i = 0; vpc && i < vpc->n; i++) {
            FAIL_IF(vpc->ints[i] < 0, "attribute 'vectors_per_class'[%d] is %lld", i, (long long)vpc->ints[i]);
            V += vpc->ints[i];
        }
    else
        V = n_sup;
    int svc = V > 0;
    int64_t pairs = C * (C - 1) / 2;
    if (svc) {
        int64_t nsv = sv ? sv->n : 0;
        FAIL_IF(nsv == 0 || nsv % V, "attribute 'support_vectors' has %lld values, not a multiple of the %lld support "
                "vectors", (long long)nsv, (long long)V);
        F = nsv / V;
        if (cls) {
            FAIL_IF(vpc->n != C, "attribute 'vectors_per_class' has %d entries for %lld classes", vpc->n, (long long)C);
            FAIL_IF(C < 2, "a support vector classifier needs at least 2 classes, not %lld", (long long)C);
            FAIL_IF(coef->n < (C - 1) * V, "attribute 'coefficients' has %d values; %lld classes and %lld support "
                    "vectors need %lld", coef->n, (long long)C, (long long)V, (long long)((C - 1) * V));
            FAIL_IF(rho->n < pairs, "attribute 'rho' has %d values; %lld classes need %lld", rho->n, (long long)C,
                    (long long)pairs);
            FAIL_IF(pa && pa->n > 0 && pa->n < pairs, "attribute 'prob_a' has %d values; %lld classes need %lld",
                    pa->n, (long long)C, (long long)pairs);
        } else {
            FAIL_IF(coef->n < V, "attribute 'coefficients' has %d values for %lld support vectors", coef->n,
                    (long long)V);
        }
    } else {
        FAIL_IF(coef->n % C, "attribute 'coefficients' has %d values, not a multiple of the %lld classes", coef->n,
                (long long)C);
        F = coef->n / C;
    }
    int64_t n_prob = svc && pa ? pa->n : 0;
    int64_t nd = (int64_t)coef->n + (svc ? V * F : 0) + rho->n + 2 * n_prob + 2 * C + C;
    size_t bytes = 0;
    for (int i = 0; str_labels && i < ls->n; i++) bytes += strlen(ls->strings[i]) + 1;
    p = bd_calloc(1, sizeof *p + (size_t)(nd + 1) * 8 + bytes + 1);
    BD_CHECK_ALLOC(e, p);
    p->svc = svc;
    p->kernel = svc ? kernel : BD_SVM_LINEAR;
    p->post = pt;
    p->str_labels = str_labels;
    p->one_class = one_class != 0;
    p->proba = n_prob > 0;
    p->gamma = kp && kp->n ? kp->floats[0] : 0;
    p->coef0 = kp && kp->n ? kp->floats[1] : 0;
    p->degree = kp && kp->n ? kp->floats[2] : 0;
    p->classes = C, p->vectors = svc ? V : 0, p->features = F;
    p->n_coef = coef->n, p->n_rho = rho->n, p->n_prob = n_prob;
    p->all_pos = 1;
    for (int i = 0; i < coef->n; i++) p->all_pos &= coef->floats[i] >= 0;
    p->n_scores = !svc || p->proba ? C : C > 2 ? pairs : 2;
    p->write_add = svc && !p->proba && C <= 2 ? (pt == BD_ML_POST_NONE ? 2 : 0) : -1;
    int64_t at = 0;
#define PUT_F(arr, cnt)                                                                            \
    for (int64_t i = 0; i < (cnt); i++) {                                                          \
        double v = (arr)[i];                                                                       \
        memcpy(&p->data[at++], &v, 8);                                                             \
    }
    p->o_coef = at;
    PUT_F(coef->floats, coef->n);
    p->o_sv = at;
    if (svc) PUT_F(sv->floats, V * F);
    p->o_rho = at;
    PUT_F(rho->floats, rho->n);
    p->o_pa = at;
    if (n_prob) PUT_F(pa->floats, n_prob);
    p->o_pb = at;
    if (n_prob) PUT_F(pb->floats, n_prob);
#undef PUT_F
    p->o_vpc = at;
    for (int64_t i = 0; i < C; i++) p->data[at++] = svc && cls ? vpc->ints[i] : 0;
    p->o_start = at;
    for (int64_t i = 0, s = 0; i < C; i++) {
        p->data[at++] = s;
        s += svc && cls ? vpc->ints[i] : 0;
    }
    p->o_labels = at;
    p->n_data = nd;
    size_t off = 0;
    for (int64_t i = 0; i < C; i++) {
        if (!cls) {
            p->data[at++] = 0;
        } else if (str_labels) {
            size_t l = strlen(ls->strings[i]);
            memcpy((char *)(p->data + nd) + off, ls->strings[i], l + 1);
            p->data[at++] = (int64_t)off;
            off += l + 1;
        } else {
            p->data[at++] = li->ints[i];
        }
    }
fail:
    return bd_params_done(n, p, st);
}

braid_status bd_svm_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_svm_params *p = n->params;
    const bd_tensor *x = &in[0];
    char sx[128];
    if (!p) return BD_FAIL(e, BRAID_ERR_INTERNAL, "svm parameters were not parsed");
    if (x->dtype != BRAID_DTYPE_FLOAT && x->dtype != BRAID_DTYPE_DOUBLE && x->dtype != BRAID_DTYPE_INT64 &&
        x->dtype != BRAID_DTYPE_INT32)
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input X has dtype %s, not float, double, int64 or int32",
                       bd_dtype_name(x->dtype));
    if (x->rank < 1 || x->rank > 2)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "input X has shape %s; it must be (N, C) or (C)", bd_shape_str(x, sx, sizeof sx));
    int64_t feats = x->dims[x->rank - 1], rows = x->rank == 2 ? x->dims[0] : 1;
    if (feats != p->features)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "input X has %lld features (shape %s); the model has %lld", (long long)feats,
                       bd_shape_str(x, sx, sizeof sx), (long long)p->features);
    if (n->op == BD_OP_ML_SVMRegressor) {
        out[0] = (bd_tensor){.dtype = BRAID_DTYPE_FLOAT, .rank = 2, .dims = {rows, 1}};
        return BRAID_OK;
    }
    out[0] = (bd_tensor){.dtype = p->str_labels ? BRAID_DTYPE_STRING : BRAID_DTYPE_INT64, .rank = 1, .dims = {rows}};
    if (n->n_out > 1) out[1] = (bd_tensor){.dtype = BRAID_DTYPE_FLOAT, .rank = 2, .dims = {rows, p->n_scores}};
    return BRAID_OK;
}

double bd_svm_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    const bd_svm_params *p = n->params;
    (void)out;
    if (!p || in[0].rank < 1) return 0;
    double rows = (double)bd_numel(&in[0]) / (double)(p->features ? p->features : 1);
    return 2.0 * rows * (double)p->features * (double)(p->svc ? p->vectors : p->classes);
}
