/* ml.h: the parsed attributes of the ml op family (ai.onnx.ml:
 * ArrayFeatureExtractor, Binarizer, Imputer, LabelEncoder, LinearClassifier,
 * LinearRegressor, Normalizer, OneHotEncoder, Scaler, FeatureVectorizer), the post transforms
 * the classifiers and tree ensembles share, and the per-element and per-row
 * rules both backends' kernels call. */
#ifndef BD_ML_H
#define BD_ML_H

#include <math.h>
#include <string.h>

#include "ops.h"

enum { BD_ML_POST_NONE, BD_ML_POST_SOFTMAX, BD_ML_POST_LOGISTIC, BD_ML_POST_SOFTMAX_ZERO, BD_ML_POST_PROBIT };
enum { BD_ML_NORM_MAX, BD_ML_NORM_L1, BD_ML_NORM_L2 };

/* Attributes as scalars and up to three arrays a, b, c that follow the
 * struct in its one allocation (data[], 8 bytes an entry: doubles, or int64
 * where the op's values are integers), so a backend copies data[] whole.
 *   Binarizer        threshold
 *   Scaler           a offset, b scale (1 or C entries each)
 *   Imputer          a imputed values (as double), replaced / replace_nan
 *   Normalizer       norm
 *   LinearRegressor  a coefficients (targets x C), b intercepts, post
 *   LinearClassifier a coefficients (classes x C), b intercepts, c labels (int64), post
 *   LabelEncoder     a keys, b values (int64 or double per keys_int/vals_int), def;
 *                    string keys or values are byte offsets into the strings
 *                    that follow data[n_data] (str_keys / str_vals; host only)
 *   CategoryMapper   a = n pairs, as strings sorted (offsets, then their int64s:
 *                    data[0, 2n)) and as int64s sorted (data[2n, 4n)); def_i,
 *                    def_s
 *   OneHotEncoder    a categories (int64), zeros
 *   FeatureVectorizer a inputdimensions (int64, one per input) */
typedef struct bd_ml_params {
    int post, norm, zeros;
    int keys_int, vals_int; /* LabelEncoder: keys / values are int64 (else double) */
    int out_dtype;          /* LabelEncoder: the values' dtype */
    int str_keys, str_vals; /* LabelEncoder: keys / values are strings (run on the host) */
    int v1;                 /* LabelEncoder opset 1: CategoryMapper's tables, onto 0..n-1 */
    int64_t n_data;         /* entries of data[]; strings follow (LabelEncoder, CategoryMapper) */
    int64_t def_s;          /* offset of the default string (string values; CategoryMapper) */
    int replace_nan;        /* Imputer: the replaced value is NaN */
    double threshold, replaced;
    int64_t def_i;          /* LabelEncoder default (int values) */
    double def_f;           /* LabelEncoder default (float values) */
    int64_t targets;        /* LinearRegressor targets; LinearClassifier coefficient rows */
    int64_t n_a, n_b, n_c;
    int64_t data[];
} bd_ml_params;

static inline BD_HOST_DEVICE double bd_ml_f(const int64_t *d, int64_t i)
{
    double v;
    memcpy(&v, &d[i], sizeof v);
    return v;
}

/* Element i of a float, double, int32 or int64 tensor's data as double. */
static inline BD_HOST_DEVICE double bd_ml_ld(const void *x, int dt, int64_t i)
{
    switch (dt) {
    case BRAID_DTYPE_FLOAT: return ((const float *)x)[i];
    case BRAID_DTYPE_DOUBLE: return ((const double *)x)[i];
    case BRAID_DTYPE_INT32: return ((const int32_t *)x)[i];
    case BRAID_DTYPE_INT16: return ((const int16_t *)x)[i];
    default: return (double)((const int64_t *)x)[i];
    }
}
static inline BD_HOST_DEVICE void bd_ml_st(void *y, int dt, int64_t i, double v)
{
    switch (dt) {
    case BRAID_DTYPE_FLOAT: ((float *)y)[i] = (float)v; break;
    case BRAID_DTYPE_DOUBLE: ((double *)y)[i] = v; break;
    case BRAID_DTYPE_INT32: ((int32_t *)y)[i] = (int32_t)v; break;
    case BRAID_DTYPE_INT16: ((int16_t *)y)[i] = (int16_t)v; break;
    default: ((int64_t *)y)[i] = (int64_t)v; break;
    }
}

/* The probit of onnxruntime and the reference: sqrt(2) erfinv(2v - 1) with
 * Winitzki's approximation of erfinv. */
static inline BD_HOST_DEVICE double bd_ml_probit(double v)
{
    double x = v * 2 - 1, sgn = x < 0 ? -1.0 : 1.0;
    x = (1.0 - x) * (1.0 + x);
    if (x == 0) return 0;
    double l = log(x), a = 2.0 / (3.14159265358979323846 * 0.147) + 0.5 * l, b = 1.0 / 0.147 * l;
    return 1.41421356 * sgn * sqrt(-a + sqrt(a * a - b));
}

static inline BD_HOST_DEVICE double bd_ml_logistic(double v)
{
    double e = 1.0 / (1.0 + exp(-fabs(v)));
    return v < 0 ? 1.0 - e : e;
}

/* Applies post transform `post` to the n scores of one row in place. */
static inline BD_HOST_DEVICE void bd_ml_post(int post, float *s, int64_t n)
{
    if (post == BD_ML_POST_LOGISTIC) {
        for (int64_t i = 0; i < n; i++) s[i] = (float)bd_ml_logistic(s[i]);
    } else if (post == BD_ML_POST_PROBIT) {
        for (int64_t i = 0; i < n; i++) s[i] = (float)bd_ml_probit(s[i]);
    } else if (post == BD_ML_POST_SOFTMAX || post == BD_ML_POST_SOFTMAX_ZERO) {
        float m = -INFINITY;
        double sum = 0;
        for (int64_t i = 0; i < n; i++) m = s[i] > m ? s[i] : m;
        for (int64_t i = 0; i < n; i++) {
            if (post == BD_ML_POST_SOFTMAX || s[i] > 1e-7f || s[i] < -1e-7f) s[i] = (float)exp((double)s[i] - m);
            else s[i] = (float)(s[i] * exp(-(double)m));
            sum += s[i];
        }
        for (int64_t i = 0; i < n; i++) s[i] = sum == 0 ? 0.5f : (float)(s[i] / sum);
    }
}

/* The string at byte offset off of the strings after p's data (host only). */
static inline const char *bd_ml_str(const bd_ml_params *p, int64_t off)
{
    return (const char *)(p->data + p->n_data) + off;
}

/* Parses a post_transform string; -1 when unknown. */
int bd_ml_post_parse(const char *s);

/* LabelEncoder: the value of key x (as double; int keys compared as int64).
 * Keys are sorted at parse (NaN last): a binary search. */
static inline BD_HOST_DEVICE int64_t bd_ml_find_key(const bd_ml_params *p, const int64_t *d, double xf, int64_t xi)
{
    int64_t lo = 0, hi = p->n_a;
    if (p->keys_int) {
        while (lo < hi) {
            int64_t m = (lo + hi) / 2;
            if (d[m] < xi) lo = m + 1;
            else hi = m;
        }
        return lo < p->n_a && d[lo] == xi ? lo : -1;
    }
    if (xf != xf) return p->n_a > 0 && bd_ml_f(d, p->n_a - 1) != bd_ml_f(d, p->n_a - 1) ? p->n_a - 1 : -1;
    while (lo < hi) {
        int64_t m = (lo + hi) / 2;
        double k = bd_ml_f(d, m);
        if (k < xf) lo = m + 1; /* NaN keys sit last: never less */
        else hi = m;
    }
    return lo < p->n_a && bd_ml_f(d, lo) == xf ? lo : -1;
}

/* Runs row r (of c features) of every op but ArrayFeatureExtractor: x has
 * dtype xdt, y is output 0 (its row r written), y2 output 1 or NULL, sc a
 * scratch of the classifier's scores (float, >= 2 entries). Returns 0, or
 * 1 + the column of a value OneHotEncoder (zeros = 0) does not know. */
static inline BD_HOST_DEVICE int64_t bd_ml_row(int op, const bd_ml_params *p, const int64_t *d, const void *x, int xdt,
                                               int64_t c, int64_t r, void *y, float *y2, float *sc)
{
    int64_t o = r * c;
    switch (op) {
    case BD_OP_ML_Binarizer:
        for (int64_t j = 0; j < c; j++) {
            double v = bd_ml_ld(x, xdt, o + j);
            bd_ml_st(y, xdt, o + j, v > p->threshold ? 1.0 : 0.0); /* NaN: 0, as the reference */
        }
        return 0;
    case BD_OP_ML_Scaler:
        for (int64_t j = 0; j < c; j++) {
            double off = bd_ml_f(d, p->n_a == 1 ? 0 : j), sca = bd_ml_f(d, p->n_a + (p->n_b == 1 ? 0 : j));
            ((float *)y)[o + j] = (float)((bd_ml_ld(x, xdt, o + j) - off) * sca);
        }
        return 0;
    case BD_OP_ML_Imputer:
        for (int64_t j = 0; j < c; j++) {
            double v = bd_ml_ld(x, xdt, o + j);
            if (p->replace_nan ? v != v : v == p->replaced) v = bd_ml_f(d, p->n_a == 1 ? 0 : j);
            bd_ml_st(y, xdt, o + j, v);
        }
        return 0;
    case BD_OP_ML_Normalizer: {
        double s = 0;
        for (int64_t j = 0; j < c; j++) {
            double v = bd_ml_ld(x, xdt, o + j);
            if (p->norm == BD_ML_NORM_MAX) s = fabs(v) > s ? fabs(v) : s;
            else s += p->norm == BD_ML_NORM_L1 ? fabs(v) : v * v;
        }
        if (p->norm == BD_ML_NORM_L2) s = sqrt(s);
        if (s < 1e-30) s = 1e-30;
        for (int64_t j = 0; j < c; j++) ((float *)y)[o + j] = (float)(bd_ml_ld(x, xdt, o + j) / s);
        return 0;
    }
    case BD_OP_ML_LinearRegressor:
    case BD_OP_ML_LinearClassifier: {
        int64_t t = p->targets, cls = op == BD_OP_ML_LinearClassifier;
        int two = cls && t == 1 && p->n_c == 2;
        float *s = cls ? sc : (float *)y + r * t;
        for (int64_t k = 0; k < t; k++) {
            double a = p->n_b ? bd_ml_f(d, p->n_a + k) : 0.0;
            for (int64_t j = 0; j < c; j++) a += bd_ml_f(d, k * c + j) * bd_ml_ld(x, xdt, o + j);
            s[two ? 1 : k] = (float)a;
        }
        if (two) s[0] = -s[1];
        int64_t ns = two ? 2 : t;
        bd_ml_post(p->post, s, ns);
        if (!cls) return 0;
        const int64_t *labels = d + p->n_a + p->n_b;
        if (ns > 1) {
            int64_t best = 0;
            for (int64_t k = 1; k < ns; k++)
                if (s[k] > s[best]) best = k;
            ((int64_t *)y)[r] = best < p->n_c ? labels[best] : best;
        } else {
            float th = p->post == BD_ML_POST_NONE ? 0.0f : 0.5f;
            ((int64_t *)y)[r] = s[0] >= th ? (p->n_c ? labels[0] : 1) : 0;
        }
        if (y2)
            for (int64_t k = 0; k < ns; k++) y2[r * ns + k] = s[k];
        return 0;
    }
    case BD_OP_ML_LabelEncoder:
        for (int64_t j = 0; j < c; j++) {
            int64_t xi = xdt == BRAID_DTYPE_INT64 ? ((const int64_t *)x)[o + j]
                         : xdt == BRAID_DTYPE_INT32 ? ((const int32_t *)x)[o + j]
                         : xdt == BRAID_DTYPE_INT16 ? ((const int16_t *)x)[o + j] : 0;
            int64_t at = bd_ml_find_key(p, d, bd_ml_ld(x, xdt, o + j), xi);
            if (p->vals_int) {
                int64_t v = at >= 0 ? d[p->n_a + at] : p->def_i;
                if (p->out_dtype == BRAID_DTYPE_INT32) ((int32_t *)y)[o + j] = (int32_t)v;
                else if (p->out_dtype == BRAID_DTYPE_INT16) ((int16_t *)y)[o + j] = (int16_t)v;
                else ((int64_t *)y)[o + j] = v;
            } else {
                bd_ml_st(y, p->out_dtype, o + j, at >= 0 ? bd_ml_f(d, p->n_a + at) : p->def_f);
            }
        }
        return 0;
    case BD_OP_ML_OneHotEncoder:
        for (int64_t j = 0; j < c; j++) {
            double v = bd_ml_ld(x, xdt, o + j);
            float *yo = (float *)y + (o + j) * p->n_a;
            int hit = 0;
            for (int64_t k = 0; k < p->n_a; k++) {
                yo[k] = (double)d[k] == v ? 1.0f : 0.0f;
                hit |= yo[k] != 0;
            }
            if (!hit && !p->zeros) return 1 + j;
        }
        return 0;
    default: return 0;
    }
}

#endif /* BD_ML_H */
