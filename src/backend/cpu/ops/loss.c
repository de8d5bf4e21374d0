/* loss.c: CPU kernels of the loss op family (NegativeLogLikelihoodLoss,
 * SoftmaxCrossEntropyLoss). Every (n, d) term is computed in double from
 * ops/loss.h's formulas; SoftmaxCrossEntropyLoss first takes each line's
 * log-sum-exp over the classes (lines split over threads), writing log_prob
 * when asked. The sum of a reduction runs in a fixed order, so the bits never
 * depend on the thread count; float16/bfloat16 are rounded once. A target
 * outside [0, C) that is not the ignore_index fails with INVALID_ARGUMENT. */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/parallel.h"

#include <math.h>

#include "ops/loss.h"
#include "util/dtype.h"

static inline double ld(const void *p, int dt, int64_t i)
{
    switch (dt) {
    case BRAID_DTYPE_FLOAT: return ((const float *)p)[i];
    case BRAID_DTYPE_DOUBLE: return ((const double *)p)[i];
    case BRAID_DTYPE_FLOAT16: return bd_half_to_float_hd(((const uint16_t *)p)[i]);
    default: return bd_bf16_to_float(((const uint16_t *)p)[i]);
    }
}

static inline void st(void *p, int dt, int64_t i, double v)
{
    switch (dt) {
    case BRAID_DTYPE_FLOAT: ((float *)p)[i] = (float)v; break;
    case BRAID_DTYPE_DOUBLE: ((double *)p)[i] = v; break;
    case BRAID_DTYPE_FLOAT16: ((uint16_t *)p)[i] = bd_float_to_half((float)v); break;
    default: ((uint16_t *)p)[i] = bd_float_to_bf16((float)v); break;
    }
}

typedef struct lse_job {
    const bd_tensor *x;
    bd_tensor *log_prob; /* NULL when not asked for */
    double *lse;         /* (N, D) */
    int64_t c, d;
} lse_job;

/* The log-sum-exp of the lines of batches [b0, b1). */
static void lse_range(void *vj, int64_t b0, int64_t b1)
{
    const lse_job *j = vj;
    int dt = j->x->dtype;
    for (int64_t b = b0; b < b1; b++)
        for (int64_t d = 0; d < j->d; d++) {
            int64_t base = b * j->c * j->d + d;
            double mx = -INFINITY, s = 0;
            for (int64_t c = 0; c < j->c; c++) {
                double v = ld(j->x->data, dt, base + c * j->d);
                mx = v > mx || v != v ? v : mx;
            }
            double sh = isfinite(mx) ? mx : 0.0;
            for (int64_t c = 0; c < j->c; c++) s += exp(ld(j->x->data, dt, base + c * j->d) - sh);
            double l = sh + log(s);
            j->lse[b * j->d + d] = l;
            if (j->log_prob)
                for (int64_t c = 0; c < j->c; c++)
                    st(j->log_prob->data, dt, base + c * j->d, ld(j->x->data, dt, base + c * j->d) - l);
        }
}

braid_status bd_cpu_loss(const bd_kernel *k)
{
    braid_status status = BRAID_OK;
    const bd_loss_params *p = k->node->params;
    const bd_tensor *x = &k->in[0], *t = &k->in[1];
    const bd_tensor *w = k->n_in > 2 && k->in[2].data ? &k->in[2] : NULL;
    int dt = x->dtype, sce = k->node->op == BD_OP_SoftmaxCrossEntropyLoss;
    double *lse = NULL;
    int64_t n, c, d;
    if (!p) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "loss parameters were not parsed");
    bd_loss_dims(x, &n, &c, &d);
    int64_t terms = n * d;
    for (int64_t i = 0; i < terms; i++) {
        int64_t tv = t->dtype == BRAID_DTYPE_INT64 ? ((const int64_t *)t->data)[i] : ((const int32_t *)t->data)[i];
        if (bd_loss_class(tv, c, p) == -2)
            return BD_FAIL(k->err, BRAID_ERR_INVALID_ARGUMENT,
                           "target %lld (element %lld) is out of range for %lld classes and is not the "
                           "ignore_index", (long long)tv, (long long)i, (long long)c);
    }
    if (sce) {
        lse = bd_malloc((size_t)(terms ? terms : 1) * sizeof *lse);
        if (!lse) return BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        lse_job j = {x, k->n_out > 1 && k->out[1].data ? &k->out[1] : NULL, lse, c, d};
        bd_parallel_for(k->threads, n, BD_MAX((int64_t)1, (1 << 14) / BD_MAX(c * d, (int64_t)1)), lse_range, &j);
    }
    double sum = 0, wsum = 0;
    for (int64_t i = 0; i < terms; i++) {
        int64_t b = i / d, dd = i - b * d;
        int64_t tv = t->dtype == BRAID_DTYPE_INT64 ? ((const int64_t *)t->data)[i] : ((const int32_t *)t->data)[i];
        int64_t cls = bd_loss_class(tv, c, p);
        double term = 0, wt = 0;
        if (cls >= 0) {
            wt = w ? ld(w->data, dt, cls) : 1.0;
            double lp = ld(x->data, dt, (b * c + cls) * d + dd) - (sce ? lse[i] : 0.0);
            term = -lp * wt;
        }
        if (p->reduction == BD_LOSS_NONE) st(k->out[0].data, dt, i, term);
        sum += term;
        wsum += wt;
    }
    if (p->reduction != BD_LOSS_NONE) st(k->out[0].data, dt, 0, bd_loss_reduce(p->reduction, sum, wsum));
    bd_free(lse);
    return status;
}
