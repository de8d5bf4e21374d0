/* norm.c: CPU kernels of the norm op family: BatchNormalization (inference:
 * a per-channel multiply-add) and LayerNormalization (per row of the dims
 * from axis on: mean, variance, then scale and shift). */
#include "backend/cpu/cpu_ops.h"
#include "ops/norm.h"

#include <math.h>
#include <string.h>

static braid_status batchnorm(const bd_kernel *k)
{
    const bd_norm_params *p = k->node->params;
    const bd_tensor *x = &k->in[0];
    const float *xd = x->data, *scale = k->in[1].data, *bias = k->in[2].data;
    const float *mean = k->in[3].data, *var = k->in[4].data;
    float *y = k->out[0].data;
    int64_t n = x->dims[0], c = x->dims[1], plane = 1;
    for (int i = 2; i < x->rank; i++) plane *= x->dims[i];
    for (int64_t ci = 0; ci < c; ci++) {
        float a = (float)(scale[ci] / sqrt((double)var[ci] + p->epsilon));
        float b = (float)(bias[ci] - mean[ci] * (double)a);
        for (int64_t ni = 0; ni < n; ni++) {
            const float *src = xd + (ni * c + ci) * plane;
            float *dst = y + (ni * c + ci) * plane;
            for (int64_t j = 0; j < plane; j++) dst[j] = src[j] * a + b;
        }
    }
    return BRAID_OK;
}

/* Returns t's values laid out over the normalized dims (X's dims from axis
 * on, cols values): t itself when it already has that many values, else a
 * broadcast copy in *buf (bd_malloc'ed; the caller frees it). */
static const float *expand_affine(const bd_tensor *x, int axis, const bd_tensor *t, int64_t cols,
                                  float **buf)
{
    *buf = NULL;
    if (bd_numel(t) == cols) return t->data;
    bd_tensor norm = {.dtype = BRAID_DTYPE_FLOAT, .rank = x->rank - axis};
    memcpy(norm.dims, x->dims + axis, (size_t)norm.rank * sizeof *norm.dims);
    bd_tensor view = *t; /* drop leading unit dims beyond the normalized rank */
    if (view.rank > norm.rank) {
        int drop = view.rank - norm.rank;
        memmove(view.dims, view.dims + drop, (size_t)norm.rank * sizeof *view.dims);
        view.rank = norm.rank;
    }
    int64_t str[BD_MAX_RANK];
    bd_broadcast_strides(&view, &norm, str);
    float *out = bd_malloc((size_t)(cols ? cols : 1) * sizeof *out);
    if (!out) return NULL;
    const float *src = t->data;
    for (int64_t j = 0; j < cols; j++) {
        int64_t rem = j, off = 0;
        for (int d = norm.rank - 1; d >= 0; d--) {
            off += (rem % norm.dims[d]) * str[d];
            rem /= norm.dims[d];
        }
        out[j] = src[off];
    }
    *buf = out;
    return out;
}

static braid_status layernorm(const bd_kernel *k)
{
    braid_status st = BRAID_OK;
    const bd_norm_params *p = k->node->params;
    const bd_tensor *x = &k->in[0];
    const bd_tensor *bt = k->n_in > 2 && k->in[2].data ? &k->in[2] : NULL;
    float *sbuf = NULL, *bbuf = NULL;
    int axis;
    BD_TRY(bd_axis(p->axis, x->rank, &axis, k->err));
    int64_t rows = 1, cols = 1;
    for (int i = 0; i < x->rank; i++) *(i < axis ? &rows : &cols) *= x->dims[i];
    const float *scale = expand_affine(x, axis, &k->in[1], cols, &sbuf);
    BD_CHECK_ALLOC(k->err, scale);
    const float *bias = NULL;
    if (bt) {
        bias = expand_affine(x, axis, bt, cols, &bbuf);
        BD_CHECK_ALLOC(k->err, bias);
    }
    float *mean_out = k->n_out > 1 ? k->out[1].data : NULL;
    float *inv_out = k->n_out > 2 ? k->out[2].data : NULL;
    const float *xd = x->data;
    float *y = k->out[0].data;
    for (int64_t r = 0; r < rows; r++) {
        const float *src = xd + r * cols;
        float *dst = y + r * cols;
        double sum = 0, sq = 0;
        for (int64_t j = 0; j < cols; j++) sum += src[j];
        double mean = cols ? sum / (double)cols : 0.0;
        for (int64_t j = 0; j < cols; j++) sq += (src[j] - mean) * (src[j] - mean);
        double inv = 1.0 / sqrt((cols ? sq / (double)cols : 0.0) + p->epsilon);
        float fm = (float)mean, fi = (float)inv;
        if (bias) for (int64_t j = 0; j < cols; j++) dst[j] = (src[j] - fm) * fi * scale[j] + bias[j];
        else for (int64_t j = 0; j < cols; j++) dst[j] = (src[j] - fm) * fi * scale[j];
        if (mean_out) mean_out[r] = fm;
        if (inv_out) inv_out[r] = fi;
    }
fail:
    bd_free(sbuf);
    bd_free(bbuf);
    return st;
}

braid_status bd_cpu_norm(const bd_kernel *k)
{
    if (!k->node->params)
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "attributes were not parsed");
    for (int i = 0; i < k->n_in; i++)
        if (k->in[i].data && k->in[i].dtype != BRAID_DTYPE_FLOAT)
            return BD_FAIL(k->err, BRAID_ERR_DTYPE, "input %d is %s; %s runs float32 only", i,
                           bd_dtype_name(k->in[i].dtype), k->node->op_type);
    switch (k->node->op) {
    case BD_OP_BatchNormalization: return batchnorm(k);
    case BD_OP_LayerNormalization: return layernorm(k);
    default:
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the norm family",
                       k->node->op_type);
    }
}
