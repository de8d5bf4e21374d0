/* ml.c: attribute parsing, dtype checks, shape inference and cost of the ml
 * op family (ai.onnx.ml): ArrayFeatureExtractor, Binarizer, CategoryMapper
 * (strings to int64 and back, on the host), Imputer, LabelEncoder (opset 1's
 * classes_strings as a CategoryMapper onto 0..n-1; numeric or string keys
 * and values, the opset 2 list attributes and the opset 4 tensor ones;
 * string ones run on the host), LinearClassifier (int64 labels),
 * LinearRegressor, Normalizer, OneHotEncoder (int64 categories) and Scaler.
 * String labels and string categories are refused by name. */
#include <stdlib.h>

#include "ml.h"

#define NEED(name)                                                                                 \
    do {                                                                                           \
        if (!bd_node_attr(n, name)) {                                                              \
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' is required", name);          \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

int bd_ml_post_parse(const char *s)
{
    static const char *const names[] = {"NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT"};
    for (int i = 0; i < 5; i++)
        if (!strcmp(s, names[i])) return i;
    return -1;
}

/* A numeric list attribute (FLOATS, INTS or a TENSOR of float, double, int32
 * or int64) as doubles or int64s. *n = -1 when absent. */
typedef struct ml_list {
    int64_t n;
    int is_int;
    double *f;
    int64_t *i;
    int dtype; /* of a tensor attribute; FLOAT / INT64 for lists */
} ml_list;

static void list_free(ml_list *l)
{
    bd_free(l->f);
    bd_free(l->i);
    memset(l, 0, sizeof *l);
    l->n = -1;
}

static braid_status get_list(const bd_node *n, const char *name, ml_list *l, bd_err *e)
{
    const bd_attr *a = bd_node_attr(n, name);
    memset(l, 0, sizeof *l);
    l->n = -1;
    if (!a) return BRAID_OK;
    int64_t cnt;
    if (a->type == BD_ATTR_FLOATS) cnt = a->n, l->dtype = BRAID_DTYPE_FLOAT;
    else if (a->type == BD_ATTR_INTS) cnt = a->n, l->dtype = BRAID_DTYPE_INT64, l->is_int = 1;
    else if (a->type == BD_ATTR_TENSOR && a->t) {
        l->dtype = a->t->dtype;
        if (l->dtype == BRAID_DTYPE_STRING)
            return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "attribute '%s' holds strings: braid runs %s on numbers only",
                           name, n->op_type);
        if (l->dtype != BRAID_DTYPE_FLOAT && l->dtype != BRAID_DTYPE_DOUBLE && l->dtype != BRAID_DTYPE_INT64 &&
            l->dtype != BRAID_DTYPE_INT32 && l->dtype != BRAID_DTYPE_INT16)
            return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "attribute '%s' has dtype %s, which braid does not run here",
                           name, bd_dtype_name(l->dtype));
        cnt = bd_numel(a->t);
        l->is_int = l->dtype == BRAID_DTYPE_INT64 || l->dtype == BRAID_DTYPE_INT32 || l->dtype == BRAID_DTYPE_INT16;
    } else {
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' must be a list of numbers", name);
    }
    l->n = cnt;
    l->f = bd_malloc((size_t)(cnt + 1) * sizeof(double));
    l->i = bd_malloc((size_t)(cnt + 1) * sizeof(int64_t));
    if (!l->f || !l->i) {
        list_free(l);
        return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (int64_t k = 0; k < cnt; k++) {
        if (a->type == BD_ATTR_FLOATS) l->f[k] = a->floats[k], l->i[k] = (int64_t)a->floats[k];
        else if (a->type == BD_ATTR_INTS) l->i[k] = a->ints[k], l->f[k] = (double)a->ints[k];
        else if (l->dtype == BRAID_DTYPE_INT64) l->i[k] = ((const int64_t *)a->t->data)[k], l->f[k] = (double)l->i[k];
        else if (l->dtype == BRAID_DTYPE_INT32) l->i[k] = ((const int32_t *)a->t->data)[k], l->f[k] = (double)l->i[k];
        else if (l->dtype == BRAID_DTYPE_INT16) l->i[k] = ((const int16_t *)a->t->data)[k], l->f[k] = (double)l->i[k];
        else l->f[k] = bd_ml_ld(a->t->data, l->dtype, k), l->i[k] = (int64_t)l->f[k];
    }
    return BRAID_OK;
}

/* LabelEncoder's numeric default: default_tensor's first value, else
 * default_int64 / default_float (-1 / -0.0 when absent). d receives the
 * default_tensor list (the caller frees it). */
static braid_status numeric_default(const bd_node *n, ml_list *d, int64_t *def_i, double *def_f, bd_err *e)
{
    *def_i = -1;
    *def_f = -0.0;
    BD_TRY_RET(get_list(n, "default_tensor", d, e));
    if (d->n >= 1) {
        *def_i = d->i[0], *def_f = d->f[0];
        return BRAID_OK;
    }
    if (d->n == 0) return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'default_tensor' is empty");
    float f;
    BD_TRY_RET(bd_attr_int(n, "default_int64", -1, def_i, e));
    BD_TRY_RET(bd_attr_float(n, "default_float", -0.0f, &f, e));
    *def_f = f;
    return BRAID_OK;
}


/* Copies list l into data at *at: int64 when as_int, else double bits. */
static void put(int64_t *data, int64_t *at, const ml_list *l, int as_int)
{
    for (int64_t k = 0; k < l->n; k++) {
        if (as_int) data[*at + k] = l->i[k];
        else memcpy(&data[*at + k], &l->f[k], 8);
    }
    *at += l->n;
}

static braid_status refuse_strings(const bd_node *n, const char *const *names, int count, bd_err *e)
{
    for (int i = 0; i < count; i++)
        if (bd_node_attr(n, names[i]))
            return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "attribute '%s': braid runs %s on numbers only (string "
                                                     "tensors are not supported here)", names[i], n->op_type);
    return BRAID_OK;
}

typedef struct key_val { double kf; int64_t ki; double vf; int64_t vi; } key_val;
static int key_cmp_i(const void *a, const void *b)
{
    int64_t x = ((const key_val *)a)->ki, y = ((const key_val *)b)->ki;
    return x < y ? -1 : x > y;
}
static int key_cmp_f(const void *a, const void *b)
{
    double x = ((const key_val *)a)->kf, y = ((const key_val *)b)->kf;
    if (x != x || y != y) return (x != x) - (y != y);
    return x < y ? -1 : x > y;
}

/* A list of strings: attribute `name` as STRINGS or a string TENSOR; *cnt =
 * -1 when absent, 0 with *is = 0 when it holds numbers (a numeric tensor). */
static braid_status get_strs(const bd_node *n, const char *name, const char *const **strs, int64_t *cnt, int *is,
                             bd_err *e)
{
    const bd_attr *a = bd_node_attr(n, name);
    *cnt = -1, *is = 0, *strs = NULL;
    if (!a) return BRAID_OK;
    if (a->type == BD_ATTR_STRINGS) {
        *strs = (const char *const *)a->strings, *cnt = a->n, *is = 1;
    } else if (a->type == BD_ATTR_TENSOR && a->t && a->t->dtype == BRAID_DTYPE_STRING) {
        *strs = a->t->data, *cnt = bd_numel(a->t), *is = 1;
        for (int64_t i = 0; i < *cnt; i++)
            if (!(*strs)[i]) return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' has no string at %lld", name,
                                            (long long)i);
    } else if (a->type == BD_ATTR_STRING) {
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' must be a list of strings, not one string", name);
    }
    return BRAID_OK;
}

/* One key -> value pair of a string-keyed or string-valued map. */
typedef struct skv {
    const char *ks, *vs;
    int64_t ki, vi;
    double kf, vf;
    int64_t ord; /* the pair's place in the attributes: equal keys keep it, so the first wins the search */
} skv;
static int ord_cmp(const skv *a, const skv *b) { return a->ord < b->ord ? -1 : a->ord > b->ord; }
static int skv_cmp_s(const void *a, const void *b)
{
    int c = strcmp(((const skv *)a)->ks, ((const skv *)b)->ks);
    return c ? c : ord_cmp(a, b);
}
static int skv_cmp_i(const void *a, const void *b)
{
    int64_t x = ((const skv *)a)->ki, y = ((const skv *)b)->ki;
    return x != y ? (x < y ? -1 : 1) : ord_cmp(a, b);
}
static int skv_cmp_f(const void *a, const void *b)
{
    double x = ((const skv *)a)->kf, y = ((const skv *)b)->kf;
    if (x != x || y != y) return x != x && y != y ? ord_cmp(a, b) : (x != x) - (y != y);
    return x != y ? (x < y ? -1 : 1) : ord_cmp(a, b);
}

/* Params with n_data entries and room for the strings of the listed tables
 * (bytes: their total length with terminators), and a writer of strings. */
static bd_ml_params *params_with_strings(int64_t n_data, size_t bytes)
{
    bd_ml_params *p = bd_calloc(1, sizeof *p + (size_t)(n_data + 1) * 8 + bytes + 1);
    if (p) p->n_data = n_data;
    return p;
}
static int64_t put_str(bd_ml_params *p, size_t *at, const char *s)
{
    char *area = (char *)(p->data + p->n_data);
    size_t l = strlen(s);
    memcpy(area + *at, s, l + 1);
    int64_t off = (int64_t)*at;
    *at += l + 1;
    return off;
}

/* LabelEncoder with string keys or values (opsets 2 to 4): keys_strings or a
 * string keys_tensor, values_strings or a string values_tensor, the default
 * from default_string / default_tensor (strings) or default_int64 /
 * default_float / default_tensor (numbers). */
static braid_status parse_label_encoder_str(bd_node *n, int skeys, int svals, bd_ml_params **out, bd_err *e)
{
    braid_status st = BRAID_OK;
    ml_list k = {.n = -1}, v = {.n = -1}, d = {.n = -1};
    const char *const *ks = NULL, *const *vs = NULL, *const *ds = NULL;
    int64_t nk = -1, nv = -1, nd = -1;
    int is;
    bd_ml_params *p = NULL;
    skv *t = NULL;
    size_t bytes = 0, at = 0;
    if (skeys) {
        BD_TRY(get_strs(n, "keys_tensor", &ks, &nk, &is, e));
        if (nk < 0) BD_TRY(get_strs(n, "keys_strings", &ks, &nk, &is, e));
    } else {
        BD_TRY(get_list(n, "keys_tensor", &k, e));
        if (k.n < 0) BD_TRY(get_list(n, "keys_int64s", &k, e));
        if (k.n < 0) BD_TRY(get_list(n, "keys_floats", &k, e));
        nk = k.n;
    }
    if (svals) {
        BD_TRY(get_strs(n, "values_tensor", &vs, &nv, &is, e));
        if (nv < 0) BD_TRY(get_strs(n, "values_strings", &vs, &nv, &is, e));
    } else {
        BD_TRY(get_list(n, "values_tensor", &v, e));
        if (v.n < 0) BD_TRY(get_list(n, "values_int64s", &v, e));
        if (v.n < 0) BD_TRY(get_list(n, "values_floats", &v, e));
        nv = v.n;
    }
    if (nk < 0 || nv < 0) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' is required (keys_int64s, keys_floats, keys_strings "
                     "or keys_tensor; values_* likewise)", nk < 0 ? "keys_*" : "values_*");
        goto fail;
    }
    if (nk != nv) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attributes keys (%lld entries) and values (%lld) differ in length",
                     (long long)nk, (long long)nv);
        goto fail;
    }
    const char *def_str = "_Unused";
    if (svals) {
        const bd_attr *dt = bd_node_attr(n, "default_tensor");
        if (dt) {
            BD_TRY(get_strs(n, "default_tensor", &ds, &nd, &is, e));
            if (!is || nd < 1) {
                st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'default_tensor' must hold one string when the "
                             "values are strings");
                goto fail;
            }
            def_str = ds[0];
        } else {
            BD_TRY(bd_attr_string(n, "default_string", "_Unused", &def_str, e));
        }
    }
    t = bd_calloc((size_t)nk + 1, sizeof *t);
    BD_CHECK_ALLOC(e, t);
    for (int64_t i = 0; i < nk; i++) {
        t[i] = (skv){skeys ? ks[i] : NULL, svals ? vs[i] : NULL, skeys ? 0 : k.i[i], svals ? 0 : v.i[i],
                     skeys ? 0 : k.f[i], svals ? 0 : v.f[i], i};
        if (skeys) bytes += strlen(ks[i]) + 1;
        if (svals) bytes += strlen(vs[i]) + 1;
    }
    if (svals) bytes += strlen(def_str) + 1;
    qsort(t, (size_t)nk, sizeof *t, skeys ? skv_cmp_s : k.is_int ? skv_cmp_i : skv_cmp_f);
    p = params_with_strings(2 * nk, bytes);
    BD_CHECK_ALLOC(e, p);
    p->str_keys = skeys, p->str_vals = svals;
    p->keys_int = !skeys && k.is_int;
    p->vals_int = !svals && v.is_int;
    p->out_dtype = svals ? BRAID_DTYPE_STRING
                   : v.dtype == BRAID_DTYPE_INT32 || v.dtype == BRAID_DTYPE_INT16 || v.dtype == BRAID_DTYPE_DOUBLE
                   ? v.dtype : v.is_int ? BRAID_DTYPE_INT64 : BRAID_DTYPE_FLOAT;
    p->n_a = p->n_b = nk;
    for (int64_t i = 0; i < nk; i++) {
        if (skeys) p->data[i] = put_str(p, &at, t[i].ks);
        else if (k.is_int) p->data[i] = t[i].ki;
        else memcpy(&p->data[i], &t[i].kf, 8);
        if (svals) p->data[nk + i] = put_str(p, &at, t[i].vs);
        else if (v.is_int) p->data[nk + i] = t[i].vi;
        else memcpy(&p->data[nk + i], &t[i].vf, 8);
    }
    if (svals) {
        p->def_s = put_str(p, &at, def_str);
    } else {
        BD_TRY(numeric_default(n, &d, &p->def_i, &p->def_f, e));
    }
fail:
    bd_free(t);
    list_free(&k), list_free(&v), list_free(&d);
    if (st) bd_free(p), p = NULL;
    *out = p;
    return st;
}

/* The two tables of a string <-> int64 map (CategoryMapper, LabelEncoder
 * opset 1): cs[i] <-> ci[i], the first of equal keys winning either way. */
static braid_status category_table(const char *const *cs, const int64_t *ci, int64_t n, int64_t def_i, const char *def,
                                   bd_ml_params **out, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_ml_params *p = NULL;
    size_t bytes = strlen(def) + 1, at = 0;
    skv *t = bd_calloc((size_t)n + 1, sizeof *t);
    BD_CHECK_ALLOC(e, t);
    for (int64_t i = 0; i < n; i++) {
        t[i] = (skv){.ks = cs[i], .ki = ci[i], .ord = i};
        bytes += 2 * (strlen(cs[i]) + 1);
    }
    p = params_with_strings(4 * n, bytes);
    BD_CHECK_ALLOC(e, p);
    p->n_a = n;
    p->def_i = def_i;
    p->def_s = put_str(p, &at, def);
    qsort(t, (size_t)n, sizeof *t, skv_cmp_s);
    for (int64_t i = 0; i < n; i++) p->data[i] = put_str(p, &at, t[i].ks), p->data[n + i] = t[i].ki;
    qsort(t, (size_t)n, sizeof *t, skv_cmp_i);
    for (int64_t i = 0; i < n; i++) p->data[2 * n + i] = t[i].ki, p->data[3 * n + i] = put_str(p, &at, t[i].ks);
fail:
    bd_free(t);
    *out = p;
    return st;
}

/* CategoryMapper: cats_strings[i] <-> cats_int64s[i], both ways. */
static braid_status parse_category_mapper(bd_node *n, bd_ml_params **out, bd_err *e)
{
    braid_status st = BRAID_OK;
    const char *const *cs = NULL, *def = NULL;
    int64_t ncs = -1, def_i;
    int is;
    ml_list ci = {.n = -1};
    *out = NULL;
    BD_TRY(get_strs(n, "cats_strings", &cs, &ncs, &is, e));
    BD_TRY(get_list(n, "cats_int64s", &ci, e));
    if (ncs < 0 || ci.n < 0) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' is required", ncs < 0 ? "cats_strings" : "cats_int64s");
        goto fail;
    }
    if (!ci.is_int || ncs != ci.n) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attributes 'cats_strings' (%lld entries) and 'cats_int64s' (%lld%s) "
                     "must have the same length", (long long)ncs, (long long)ci.n, ci.is_int ? "" : ", not integers");
        goto fail;
    }
    BD_TRY(bd_attr_string(n, "default_string", "_Unused", &def, e));
    BD_TRY(bd_attr_int(n, "default_int64", -1, &def_i, e));
    st = category_table(cs, ci.i, ncs, def_i, def, out, e);
fail:
    list_free(&ci);
    return st;
}

/* LabelEncoder opset 1: classes_strings[i] <-> i, both ways (string to int64
 * with default_int64, int64 to string with default_string). */
static braid_status parse_label_encoder_v1(bd_node *n, bd_ml_params **out, bd_err *e)
{
    braid_status st = BRAID_OK;
    const char *const *cs = NULL, *def = NULL;
    int64_t ncs = -1, def_i, *idx = NULL;
    int is;
    *out = NULL;
    BD_TRY(get_strs(n, "classes_strings", &cs, &ncs, &is, e));
    if (ncs < 0) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'classes_strings' is required at opset 1");
        goto fail;
    }
    BD_TRY(bd_attr_string(n, "default_string", "_Unused", &def, e));
    BD_TRY(bd_attr_int(n, "default_int64", -1, &def_i, e));
    idx = bd_malloc((size_t)(ncs + 1) * sizeof *idx);
    BD_CHECK_ALLOC(e, idx);
    for (int64_t i = 0; i < ncs; i++) idx[i] = i;
    st = category_table(cs, idx, ncs, def_i, def, out, e);
    if (!st) (*out)->v1 = 1;
fail:
    bd_free(idx);
    return st;
}

static braid_status parse_label_encoder(bd_node *n, bd_ml_params **out, bd_err *e)
{
    static const char *const strs[] = {"classes_strings", "keys_strings", "values_strings", "default_string"};
    braid_status st = BRAID_OK;
    ml_list k = {.n = -1}, v = {.n = -1}, d = {.n = -1};
    bd_ml_params *p = NULL;
    key_val *kv = NULL;
    if (n->opset < 2) return parse_label_encoder_v1(n, out, e);
    BD_TRY(refuse_strings(n, strs, 1, e));
    {
        const bd_attr *kt = bd_node_attr(n, "keys_tensor"), *vt = bd_node_attr(n, "values_tensor");
        int skeys = bd_node_attr(n, "keys_strings") || (kt && kt->type == BD_ATTR_TENSOR && kt->t &&
                                                         kt->t->dtype == BRAID_DTYPE_STRING);
        int svals = bd_node_attr(n, "values_strings") || (vt && vt->type == BD_ATTR_TENSOR && vt->t &&
                                                           vt->t->dtype == BRAID_DTYPE_STRING);
        if (skeys || svals) return parse_label_encoder_str(n, skeys, svals, out, e);
    }
    BD_TRY(get_list(n, "keys_tensor", &k, e));
    if (k.n < 0) {
        BD_TRY(get_list(n, "keys_int64s", &k, e));
        if (k.n < 0) BD_TRY(get_list(n, "keys_floats", &k, e));
    }
    BD_TRY(get_list(n, "values_tensor", &v, e));
    if (v.n < 0) {
        BD_TRY(get_list(n, "values_int64s", &v, e));
        if (v.n < 0) BD_TRY(get_list(n, "values_floats", &v, e));
    }
    if (k.n < 0 || v.n < 0) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' is required (keys_int64s, keys_floats or "
                                                 "keys_tensor; values_* likewise)", k.n < 0 ? "keys_*" : "values_*");
        goto fail;
    }
    if (k.n != v.n) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attributes keys (%lld entries) and values (%lld) differ in length",
                     (long long)k.n, (long long)v.n);
        goto fail;
    }
    p = bd_calloc(1, sizeof *p + (size_t)(2 * k.n + 1) * 8);
    BD_CHECK_ALLOC(e, p);
    p->keys_int = k.is_int;
    p->vals_int = v.is_int;
    p->out_dtype = v.dtype == BRAID_DTYPE_INT32 || v.dtype == BRAID_DTYPE_INT16 || v.dtype == BRAID_DTYPE_DOUBLE ? v.dtype
                   : v.is_int ? BRAID_DTYPE_INT64 : BRAID_DTYPE_FLOAT;
    p->n_a = p->n_b = k.n;
    p->n_data = 2 * k.n;
    BD_TRY(numeric_default(n, &d, &p->def_i, &p->def_f, e));
    if (bd_node_attr(n, "default_string") && !v.is_int && v.dtype != BRAID_DTYPE_FLOAT && v.dtype != BRAID_DTYPE_DOUBLE)
        BD_TRY(refuse_strings(n, strs + 3, 1, e));
    kv = bd_malloc((size_t)(k.n + 1) * sizeof *kv);
    BD_CHECK_ALLOC(e, kv);
    for (int64_t i = 0; i < k.n; i++) kv[i] = (key_val){k.f[i], k.i[i], v.f[i], v.i[i]};
    qsort(kv, (size_t)k.n, sizeof *kv, k.is_int ? key_cmp_i : key_cmp_f);
    for (int64_t i = 0; i < k.n; i++) {
        if (k.is_int) p->data[i] = kv[i].ki;
        else memcpy(&p->data[i], &kv[i].kf, 8);
        if (v.is_int) p->data[k.n + i] = kv[i].vi;
        else memcpy(&p->data[k.n + i], &kv[i].vf, 8);
    }
fail:
    bd_free(kv);
    list_free(&k), list_free(&v), list_free(&d);
    if (st) bd_free(p), p = NULL;
    *out = p;
    return st;
}

braid_status bd_ml_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_ml_params *p = NULL;
    ml_list a = {.n = -1}, b = {.n = -1}, c = {.n = -1};
    const char *s = NULL;
    float f;
    int64_t at = 0;
    switch (n->op) {
    case BD_OP_ML_ArrayFeatureExtractor: p = bd_calloc(1, sizeof *p); break;
    case BD_OP_ML_Binarizer:
        p = bd_calloc(1, sizeof *p);
        BD_CHECK_ALLOC(e, p);
        BD_TRY(bd_attr_float(n, "threshold", 0.0f, &f, e));
        p->threshold = f;
        break;
    case BD_OP_ML_Scaler:
        BD_TRY(get_list(n, "offset", &a, e));
        BD_TRY(get_list(n, "scale", &b, e));
        if (a.n < 1 || b.n < 1) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' is required and not empty", a.n < 1 ? "offset" : "scale");
            goto fail;
        }
        p = bd_calloc(1, sizeof *p + (size_t)(a.n + b.n) * 8);
        BD_CHECK_ALLOC(e, p);
        p->n_a = a.n, p->n_b = b.n;
        put(p->data, &at, &a, 0), put(p->data, &at, &b, 0);
        break;
    case BD_OP_ML_Imputer: {
        BD_TRY(get_list(n, "imputed_value_floats", &a, e));
        int ints = 0;
        if (a.n < 1) {
            list_free(&a);
            BD_TRY(get_list(n, "imputed_value_int64s", &a, e));
            ints = 1;
        }
        if (a.n < 1) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'imputed_value_floats' or 'imputed_value_int64s' is "
                                                     "required and not empty");
            goto fail;
        }
        p = bd_calloc(1, sizeof *p + (size_t)a.n * 8);
        BD_CHECK_ALLOC(e, p);
        p->n_a = a.n;
        p->vals_int = ints;
        put(p->data, &at, &a, 0);
        if (ints) {
            int64_t r;
            BD_TRY(bd_attr_int(n, "replaced_value_int64", 0, &r, e));
            p->replaced = (double)r;
        } else {
            BD_TRY(bd_attr_float(n, "replaced_value_float", 0.0f, &f, e));
            p->replaced = f;
            p->replace_nan = f != f;
        }
        break;
    }
    case BD_OP_ML_Normalizer:
        p = bd_calloc(1, sizeof *p);
        BD_CHECK_ALLOC(e, p);
        BD_TRY(bd_attr_string(n, "norm", "MAX", &s, e));
        if (!strcmp(s, "MAX")) p->norm = BD_ML_NORM_MAX;
        else if (!strcmp(s, "L1")) p->norm = BD_ML_NORM_L1;
        else if (!strcmp(s, "L2")) p->norm = BD_ML_NORM_L2;
        else {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'norm' is '%s', not MAX, L1 or L2", s);
            goto fail;
        }
        break;
    case BD_OP_ML_LinearRegressor:
    case BD_OP_ML_LinearClassifier: {
        int cls = n->op == BD_OP_ML_LinearClassifier;
        static const char *const strs[] = {"classlabels_strings"};
        if (cls) BD_TRY(refuse_strings(n, strs, 1, e));
        NEED("coefficients");
        BD_TRY(get_list(n, "coefficients", &a, e));
        BD_TRY(get_list(n, "intercepts", &b, e));
        if (cls) {
            NEED("classlabels_ints");
            BD_TRY(get_list(n, "classlabels_ints", &c, e));
        }
        int64_t rows = 1;
        if (!cls) BD_TRY(bd_attr_int(n, "targets", 1, &rows, e));
        else rows = c.n == 2 && (a.n % 2 || b.n == 1) ? 1 : c.n;
        if (rows < 1 || a.n < rows || a.n % rows) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'coefficients' has %lld entries, not a multiple of "
                         "%lld %s", (long long)a.n, (long long)rows, cls ? "classes" : "targets");
            goto fail;
        }
        if (b.n > 0 && b.n != rows) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'intercepts' has %lld entries, not %lld",
                         (long long)b.n, (long long)rows);
            goto fail;
        }
        p = bd_calloc(1, sizeof *p + (size_t)(a.n + (b.n > 0 ? b.n : 0) + (c.n > 0 ? c.n : 0) + 1) * 8);
        BD_CHECK_ALLOC(e, p);
        p->targets = rows;
        p->n_a = a.n, p->n_b = b.n > 0 ? b.n : 0, p->n_c = c.n > 0 ? c.n : 0;
        put(p->data, &at, &a, 0);
        if (b.n > 0) put(p->data, &at, &b, 0);
        if (c.n > 0) put(p->data, &at, &c, 1);
        BD_TRY(bd_attr_string(n, "post_transform", "NONE", &s, e));
        if ((p->post = bd_ml_post_parse(s)) < 0 || (!cls && p->post != BD_ML_POST_NONE && p->post != BD_ML_POST_PROBIT)) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'post_transform' is '%s'", s);
            goto fail;
        }
        break;
    }
    case BD_OP_ML_LabelEncoder: BD_TRY(parse_label_encoder(n, &p, e)); break;
    case BD_OP_ML_CategoryMapper: BD_TRY(parse_category_mapper(n, &p, e)); break;
    case BD_OP_ML_FeatureVectorizer:
        NEED("inputdimensions");
        BD_TRY(get_list(n, "inputdimensions", &a, e));
        if (a.n != n->n_in) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'inputdimensions' has %lld entries, the node %d inputs",
                         (long long)a.n, n->n_in);
            goto fail;
        }
        for (int64_t k = 0; k < a.n; k++)
            if (a.i[k] < 0 || a.i[k] > (1 << 30)) {
                st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'inputdimensions'[%lld] is %lld", (long long)k,
                             (long long)a.i[k]);
                goto fail;
            }
        p = bd_calloc(1, sizeof *p + (size_t)(a.n + 1) * 8);
        BD_CHECK_ALLOC(e, p);
        p->n_a = a.n;
        put(p->data, &at, &a, 1);
        break;
    case BD_OP_ML_OneHotEncoder: {
        static const char *const strs[] = {"cats_strings"};
        BD_TRY(refuse_strings(n, strs, 1, e));
        NEED("cats_int64s");
        BD_TRY(get_list(n, "cats_int64s", &a, e));
        p = bd_calloc(1, sizeof *p + (size_t)(a.n + 1) * 8);
        BD_CHECK_ALLOC(e, p);
        p->n_a = a.n;
        put(p->data, &at, &a, 1);
        int64_t z;
        BD_TRY(bd_attr_int(n, "zeros", 1, &z, e));
        p->zeros = z != 0;
        break;
    }
    default: st = BD_FAIL(e, BRAID_ERR_INTERNAL, "op %s is not in the ml family", n->op_type); goto fail;
    }
    BD_CHECK_ALLOC(e, p);
fail:
    list_free(&a), list_free(&b), list_free(&c);
    return bd_params_done(n, p, st);
}

static braid_status x_numeric(const bd_node *n, const bd_tensor *x, bd_err *e)
{
    if (x->dtype == BRAID_DTYPE_STRING)
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "input X has dtype string: braid runs %s on numbers only", n->op_type);
    if (x->dtype != BRAID_DTYPE_FLOAT && x->dtype != BRAID_DTYPE_DOUBLE && x->dtype != BRAID_DTYPE_INT64 &&
        x->dtype != BRAID_DTYPE_INT32 && !(n->op == BD_OP_ML_LabelEncoder && x->dtype == BRAID_DTYPE_INT16))
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input X has dtype %s, not float, double, int64 or int32",
                       bd_dtype_name(x->dtype));
    return BRAID_OK;
}

/* Rows and features of X read as [N, C] ([C] is one row; more dims: the last is C). */
static inline void ml_rows(const bd_tensor *x, int64_t *rows, int64_t *c)
{
    *c = x->rank >= 1 ? x->dims[x->rank - 1] : 1;
    *rows = *c ? bd_numel(x) / *c : 0;
}

braid_status bd_ml_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_ml_params *p = n->params;
    const bd_tensor *x = &in[0];
    braid_status st;
    int64_t rows, c;
    if (!p) return BD_FAIL(e, BRAID_ERR_INTERNAL, "ml parameters were not parsed");
    if (n->op == BD_OP_ML_ArrayFeatureExtractor) {
        if (x->dtype == BRAID_DTYPE_STRING)
            return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "input X has dtype string: braid has no string tensors here");
        if (in[1].dtype != BRAID_DTYPE_INT64)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "input Y has dtype %s, not int64", bd_dtype_name(in[1].dtype));
        if (x->rank < 1) return BD_FAIL(e, BRAID_ERR_SHAPE, "input X must have rank 1 or more");
        out[0] = *x;
        out[0].data = NULL;
        if (x->rank == 1) out[0].rank = 2, out[0].dims[0] = 1;
        out[0].dims[out[0].rank - 1] = bd_numel(&in[1]);
        return BRAID_OK;
    }
    if (n->op == BD_OP_ML_LabelEncoder && !p->v1 && (p->str_keys || x->dtype == BRAID_DTYPE_STRING)) {
        if (!p->str_keys || x->dtype != BRAID_DTYPE_STRING)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "input X has dtype %s, the keys are %s", bd_dtype_name(x->dtype),
                           p->str_keys ? "strings" : p->keys_int ? "integers" : "floats");
        out[0] = *x;
        out[0].data = NULL;
        out[0].dtype = p->out_dtype;
        return BRAID_OK;
    }
    if (n->op == BD_OP_ML_CategoryMapper || (n->op == BD_OP_ML_LabelEncoder && p->v1)) {
        if (x->dtype != BRAID_DTYPE_STRING && x->dtype != BRAID_DTYPE_INT64)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "input X has dtype %s; %s maps string to int64 or int64 to "
                           "string", bd_dtype_name(x->dtype), n->op_type);
        out[0] = *x;
        out[0].data = NULL;
        out[0].dtype = x->dtype == BRAID_DTYPE_STRING ? BRAID_DTYPE_INT64 : BRAID_DTYPE_STRING;
        return BRAID_OK;
    }
    if (n->op == BD_OP_ML_FeatureVectorizer) {
        int64_t total = 0;
        for (int i = 0; i < n->n_in; i++) {
            if ((st = x_numeric(n, &in[i], e))) return st;
            if (in[i].rank < 1 || in[i].rank > 2)
                return BD_FAIL(e, BRAID_ERR_SHAPE, "input %d has rank %d, not 1 or 2", i, in[i].rank);
            if (in[i].dims[0] != x->dims[0])
                return BD_FAIL(e, BRAID_ERR_SHAPE, "input %d has %lld rows, input 0 %lld", i, (long long)in[i].dims[0],
                               (long long)x->dims[0]);
            total += p->data[i];
        }
        out[0] = (bd_tensor){.dtype = BRAID_DTYPE_FLOAT, .rank = 2, .dims = {x->dims[0], total}};
        return BRAID_OK;
    }
    if ((st = x_numeric(n, x, e))) return st;
    ml_rows(x, &rows, &c);
    out[0] = *x;
    out[0].data = NULL;
    switch (n->op) {
    case BD_OP_ML_Binarizer: return BRAID_OK;
    case BD_OP_ML_Imputer:
        if (p->n_a != 1 && p->n_a != c)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "the %lld imputed values fit neither 1 nor the %lld features of X",
                           (long long)p->n_a, (long long)c);
        return BRAID_OK;
    case BD_OP_ML_Scaler:
        if ((p->n_a != 1 && p->n_a != c) || (p->n_b != 1 && p->n_b != c))
            return BD_FAIL(e, BRAID_ERR_SHAPE, "attributes 'offset' (%lld) and 'scale' (%lld) must have 1 or %lld "
                           "(features of X) entries", (long long)p->n_a, (long long)p->n_b, (long long)c);
        out[0].dtype = BRAID_DTYPE_FLOAT;
        return BRAID_OK;
    case BD_OP_ML_Normalizer:
        if (x->rank > 2) return BD_FAIL(e, BRAID_ERR_SHAPE, "input X has rank %d, not 1 or 2", x->rank);
        out[0].dtype = BRAID_DTYPE_FLOAT;
        return BRAID_OK;
    case BD_OP_ML_LinearRegressor:
    case BD_OP_ML_LinearClassifier: {
        int64_t feats = p->n_a / p->targets;
        if (x->rank > 2) return BD_FAIL(e, BRAID_ERR_SHAPE, "input X has rank %d, not 1 or 2", x->rank);
        if (c != feats)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "input X has %lld features, the coefficients %lld", (long long)c,
                           (long long)feats);
        if (n->op == BD_OP_ML_LinearRegressor) {
            out[0] = (bd_tensor){.dtype = BRAID_DTYPE_FLOAT, .rank = 2, .dims = {rows, p->targets}};
            return BRAID_OK;
        }
        int64_t scores = p->targets == 1 && p->n_c == 2 ? 2 : p->targets;
        out[0] = (bd_tensor){.dtype = BRAID_DTYPE_INT64, .rank = 1, .dims = {rows}};
        if (n->n_out > 1) out[1] = (bd_tensor){.dtype = BRAID_DTYPE_FLOAT, .rank = 2, .dims = {rows, scores}};
        return BRAID_OK;
    }
    case BD_OP_ML_LabelEncoder: {
        int xi = x->dtype == BRAID_DTYPE_INT64 || x->dtype == BRAID_DTYPE_INT32 || x->dtype == BRAID_DTYPE_INT16;
        if (xi != p->keys_int)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "input X has dtype %s, the keys are %s", bd_dtype_name(x->dtype),
                           p->keys_int ? "integers" : "floats");
        out[0].dtype = p->out_dtype;
        return BRAID_OK;
    }
    case BD_OP_ML_OneHotEncoder:
        if (x->rank >= BD_MAX_RANK) return BD_FAIL(e, BRAID_ERR_SHAPE, "input X has rank %d, the most is %d", x->rank, BD_MAX_RANK - 1);
        out[0].dtype = BRAID_DTYPE_FLOAT;
        out[0].dims[out[0].rank++] = p->n_a;
        return BRAID_OK;
    default: return BD_FAIL(e, BRAID_ERR_INTERNAL, "op %s is not in the ml family", n->op_type);
    }
}

double bd_ml_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    const bd_ml_params *p = n->params;
    (void)in;
    double o = out[0].rank >= 0 ? (double)bd_numel(&out[0]) : 0;
    if (p && (n->op == BD_OP_ML_LinearRegressor || n->op == BD_OP_ML_LinearClassifier))
        return 2.0 * (double)bd_numel(&in[0]) * (double)p->targets;
    return o;
}
