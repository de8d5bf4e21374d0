/* ml.c: CPU kernels of the ml op family (ai.onnx.ml). Every op but
 * ArrayFeatureExtractor runs row by row through bd_ml_row (src/ops/ml.h),
 * rows split over threads (each row computed alone: the bits do not depend
 * on the thread count); ArrayFeatureExtractor gathers columns and
 * FeatureVectorizer places them side by side. */
#include <string.h>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/parallel.h"

#include "ops/ml.h"

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

braid_status bd_cpu_ml(const bd_kernel *k)
{
    const bd_ml_params *p = k->node->params;
    if (!p) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "ml parameters were not parsed");
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
