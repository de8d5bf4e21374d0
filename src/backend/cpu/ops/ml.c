/* ml.c: CPU kernels of the ml op family (ai.onnx.ml). Every op but
 * ArrayFeatureExtractor runs row by row through bd_ml_row (src/ops/ml.h),
 * rows split over threads (each row computed alone: the bits do not depend
 * on the thread count); ArrayFeatureExtractor gathers columns and
 * FeatureVectorizer places them side by side. LabelEncoder with string keys
 * or values and CategoryMapper look strings up by binary search; the
 * strings they give are copies in the run's pool. */
#include <string.h>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/parallel.h"

#include "ops/ml.h"
#include "util/strpool.h"

typedef struct ml_job {
    const bd_kernel *k;
    const bd_ml_params *p;
    int64_t c;
    _Atomic int64_t bad; /* 1 + the flat index of a value OneHotEncoder refuses */
} ml_job;

static void ml_range(void *vj, int64_t b, int64_t e)
{
    ml_job *j = vj;
    const bd_kernel *k = j->k;
    float sc[2], *scr = sc;
    int64_t ns = j->p->targets > 2 ? j->p->targets : 2;
    if (k->node->op == BD_OP_ML_LinearClassifier && ns > 2 && !(scr = bd_malloc((size_t)ns * sizeof(float)))) {
        j->bad = -1;
        return;
    }
    for (int64_t r = b; r < e; r++) {
        int64_t bad = bd_ml_row(k->node->op, j->p, j->p->data, k->in[0].data, k->in[0].dtype, j->c, r, k->out[0].data,
                                k->n_out > 1 ? k->out[1].data : NULL, scr);
        if (bad) j->bad = r * j->c + bad;
    }
    if (scr != sc) bd_free(scr);
}

static braid_status afe(const bd_kernel *k)
{
    const bd_tensor *x = &k->in[0], *ix = &k->in[1];
    int64_t c = x->dims[x->rank - 1], rows = c ? bd_numel(x) / c : 0, m = bd_numel(ix);
    size_t es = bd_dtype_size(x->dtype);
    const int64_t *idx = ix->data;
    for (int64_t i = 0; i < m; i++)
        if (idx[i] < 0 || idx[i] >= c)
            return BD_FAIL(k->err, BRAID_ERR_INVALID_ARGUMENT, "input Y[%lld] = %lld is outside [0, %lld): X has "
                           "%lld columns", (long long)i, (long long)idx[i], (long long)c, (long long)c);
    if (c == 0) rows = bd_numel(&k->out[0]) / (m ? m : 1);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t i = 0; i < m; i++)
            memcpy((char *)k->out[0].data + (size_t)(r * m + i) * es, (const char *)x->data + (size_t)(r * c + idx[i]) * es,
                   es);
    return BRAID_OK;
}

/* FeatureVectorizer: each input's first inputdimensions[i] columns (zeros
 * past its own), side by side. */
static braid_status fvec(const bd_kernel *k, const bd_ml_params *p)
{
    int64_t rows = k->out[0].dims[0], w = k->out[0].dims[1];
    float *y = k->out[0].data;
    for (int64_t r = 0; r < rows; r++) {
        int64_t col = 0;
        for (int i = 0; i < k->n_in; i++) {
            const bd_tensor *x = &k->in[i];
            int64_t c = x->rank == 2 ? x->dims[1] : 1, want = p->data[i];
            for (int64_t j = 0; j < want; j++)
                y[r * w + col + j] = j < c ? (float)bd_ml_ld(x->data, x->dtype, r * c + j) : 0.0f;
            col += want;
        }
    }
    return BRAID_OK;
}

/* The index of string x among the n sorted strings at offsets d[0, n), or -1. */
static int64_t find_str(const bd_ml_params *p, const int64_t *d, int64_t n, const char *x)
{
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t m = (lo + hi) / 2;
        if (strcmp(bd_ml_str(p, d[m]), x) < 0) lo = m + 1;
        else hi = m;
    }
    return lo < n && !strcmp(bd_ml_str(p, d[lo]), x) ? lo : -1;
}

/* The index of x among the n sorted int64s d[0, n), or -1. */
static int64_t find_int(const int64_t *d, int64_t n, int64_t x)
{
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t m = (lo + hi) / 2;
        if (d[m] < x) lo = m + 1;
        else hi = m;
    }
    return lo < n && d[lo] == x ? lo : -1;
}

/* LabelEncoder with string keys or values, and CategoryMapper. */
static braid_status ml_strings(const bd_kernel *k, const bd_ml_params *p)
{
    const bd_tensor *x = &k->in[0];
    const int64_t *d = p->data;
    int64_t n = bd_numel(x), nk = p->n_a;
    int out_str = k->out[0].dtype == BRAID_DTYPE_STRING;
    if (out_str && !k->strings && n)
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s runs with no string pool", k->node->op_type);
    for (int64_t i = 0; i < n; i++) {
        const char *vs = NULL;
        int64_t at;
        if (k->node->op == BD_OP_ML_CategoryMapper || p->v1) {
            if (x->dtype == BRAID_DTYPE_STRING) {
                at = find_str(p, d, nk, ((const char *const *)x->data)[i]);
                ((int64_t *)k->out[0].data)[i] = at >= 0 ? d[nk + at] : p->def_i;
                continue;
            }
            at = find_int(d + 2 * nk, nk, ((const int64_t *)x->data)[i]);
            vs = bd_ml_str(p, at >= 0 ? d[3 * nk + at] : p->def_s);
        } else {
            if (p->str_keys) {
                at = find_str(p, d, nk, ((const char *const *)x->data)[i]);
            } else {
                int64_t xi = x->dtype == BRAID_DTYPE_INT64 ? ((const int64_t *)x->data)[i]
                             : x->dtype == BRAID_DTYPE_INT32 ? ((const int32_t *)x->data)[i]
                             : x->dtype == BRAID_DTYPE_INT16 ? ((const int16_t *)x->data)[i] : 0;
                at = bd_ml_find_key(p, d, bd_ml_ld(x->data, x->dtype, i), xi);
            }
            if (p->str_vals) {
                vs = bd_ml_str(p, at >= 0 ? d[nk + at] : p->def_s);
            } else if (p->vals_int) {
                int64_t v = at >= 0 ? d[nk + at] : p->def_i;
                bd_ml_st(k->out[0].data, p->out_dtype, i, (double)v);
                if (p->out_dtype == BRAID_DTYPE_INT64) ((int64_t *)k->out[0].data)[i] = v; /* exact past 2^53 */
                continue;
            } else {
                bd_ml_st(k->out[0].data, p->out_dtype, i, at >= 0 ? bd_ml_f(d, nk + at) : p->def_f);
                continue;
            }
        }
        const char *c = bd_strpool_dup(k->strings, vs, strlen(vs));
        if (!c) return BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory for the strings of %s", k->node->op_type);
        ((const char **)k->out[0].data)[i] = c;
    }
    return BRAID_OK;
}

braid_status bd_cpu_ml(const bd_kernel *k)
{
    const bd_ml_params *p = k->node->params;
    if (!p) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "ml parameters were not parsed");
    if (k->node->op == BD_OP_ML_CategoryMapper ||
        (k->node->op == BD_OP_ML_LabelEncoder && (p->str_keys || p->str_vals || p->v1)))
        return ml_strings(k, p);
    if (k->node->op == BD_OP_ML_ArrayFeatureExtractor) return afe(k);
    if (k->node->op == BD_OP_ML_FeatureVectorizer) return fvec(k, p);
    const bd_tensor *x = &k->in[0];
    int64_t c = x->rank >= 1 ? x->dims[x->rank - 1] : 1, rows = c ? bd_numel(x) / c : 0;
    if (c == 0 && (k->node->op == BD_OP_ML_LinearRegressor || k->node->op == BD_OP_ML_LinearClassifier))
        rows = k->out[0].dims[0];
    ml_job j = {k, p, c, 0};
    if (rows > 0) bd_parallel_for(k->threads, rows, 64, ml_range, &j);
    if (j.bad < 0) return BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    if (j.bad > 0)
        return BD_FAIL(k->err, BRAID_ERR_INVALID_ARGUMENT, "input X[%lld] = %g is not in attribute 'cats_int64s' "
                       "(and 'zeros' is 0)", (long long)(j.bad - 1), bd_ml_ld(x->data, x->dtype, j.bad - 1));
    return BRAID_OK;
}
