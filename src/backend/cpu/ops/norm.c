/* norm.c: CPU kernels of the norm op family: BatchNormalization (inference:
 * a per-channel multiply-add; training: batch statistics per channel, the
 * running and saved statistics), InstanceNormalization and
 * GroupNormalization (statistics per (n, c) plane or (n, group)), LRN (sum of
 * squares over a window of channels), LpNormalization (per line of an axis)
 * and MeanVarianceNormalization (statistics over any axes). Statistics are
 * summed in double, 8 lanes at a time; float32 and float64 run natively,
 * float16 and bfloat16 are widened to float32 and rounded once. Work is split
 * over channels, planes or lines, each done by one thread in a fixed order,
 * so the bits never depend on the thread count. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math", "no-math-errno")
#endif

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/parallel.h"

#include <math.h>
#include <string.h>

#include "fbuf.h"
#include "ops/norm.h"

/* Sum of x and sum of (x - m)^2 over n contiguous values, in 8 double lanes. */
#define DEF_SUMS(T, N)                                                                             \
    static double sum_##N(const T *x, int64_t n)                                                   \
    {                                                                                              \
        double l[8] = {0}, a = 0;                                                                  \
        int64_t i = 0;                                                                             \
        for (; i + 8 <= n; i += 8)                                                                 \
            for (int q = 0; q < 8; q++) l[q] += (double)x[i + q];                                  \
        for (; i < n; i++) a += (double)x[i];                                                      \
        for (int q = 0; q < 8; q++) a += l[q];                                                     \
        return a;                                                                                  \
    }                                                                                              \
    static double sqdev_##N(const T *x, int64_t n, double m)                                       \
    {                                                                                              \
        double l[8] = {0}, a = 0;                                                                  \
        int64_t i = 0;                                                                             \
        for (; i + 8 <= n; i += 8)                                                                 \
            for (int q = 0; q < 8; q++) l[q] += ((double)x[i + q] - m) * ((double)x[i + q] - m);   \
        for (; i < n; i++) a += ((double)x[i] - m) * ((double)x[i] - m);                           \
        for (int q = 0; q < 8; q++) a += l[q];                                                     \
        return a;                                                                                  \
    }
DEF_SUMS(float, f)
DEF_SUMS(double, d)

/* One job over channels, (n, c) planes, (n, group) blocks or lines; x and y
 * are float32 (the 16-bit types widened) or float64. */
typedef struct norm_job {
    const bd_kernel *k;
    const bd_norm_params *p;
    int dbl;                 /* x and y are double */
    const void *x;
    void *y;
    int64_t n, c, plane;     /* X as (N, C, plane) */
    const double *scale, *bias, *mean, *var; /* per-channel (or per-group) parameters */
    double *bmean, *bvar;    /* BatchNormalization training: the batch statistics (C) */
    _Atomic int failed;
} norm_job;

/* ---- BatchNormalization ----------------------------------------------------------- */

#define DEF_BN(T, N)                                                                               \
    static void bn_##N(norm_job *j, int64_t c0, int64_t c1)                                        \
    {                                                                                              \
        const T *x = j->x;                                                                         \
        T *y = j->y;                                                                               \
        int64_t C = j->c, P = j->plane;                                                            \
        for (int64_t ci = c0; ci < c1; ci++) {                                                     \
            double mean = j->mean[ci], var = j->var[ci], a, b;                                     \
            if (j->p->training) { /* the batch's statistics, population variance */                \
                double s = 0, q = 0, cnt = (double)(j->n * P);                                     \
                for (int64_t ni = 0; ni < j->n; ni++) s += sum_##N(x + (ni * C + ci) * P, P);      \
                mean = s / cnt; /* NaN for an empty batch */                                       \
                for (int64_t ni = 0; ni < j->n; ni++) q += sqdev_##N(x + (ni * C + ci) * P, P, mean); \
                var = q / cnt;                                                                     \
                j->bmean[ci] = mean;                                                               \
                j->bvar[ci] = var;                                                                 \
            }                                                                                      \
            bd_bn_coef(j->scale[ci], j->bias[ci], mean, var, j->p->epsilon, &a, &b);               \
            T ta = (T)a, tb = (T)b;                                                                \
            for (int64_t ni = 0; ni < j->n; ni++) {                                                \
                const T *src = x + (ni * C + ci) * P;                                              \
                T *dst = y + (ni * C + ci) * P;                                                    \
                for (int64_t i = 0; i < P; i++) dst[i] = src[i] * ta + tb;                         \
            }                                                                                      \
        }                                                                                          \
    }
DEF_BN(float, f)
DEF_BN(double, d)

/* ---- InstanceNormalization, GroupNormalization ------------------------------------- */

/* Block b of (N, G) blocks: cpg channels of `plane` values; scale/bias per
 * channel or per group. InstanceNormalization is G = C. */
#define DEF_GN(T, N)                                                                               \
    static void gn_##N(norm_job *j, int64_t b0, int64_t b1)                                        \
    {                                                                                              \
        const T *x = j->x;                                                                         \
        T *y = j->y;                                                                               \
        int64_t G = j->k->node->op == BD_OP_GroupNormalization ? j->p->groups : j->c;              \
        int64_t cpg = j->c / G, len = cpg * j->plane;                                              \
        for (int64_t blk = b0; blk < b1; blk++) {                                                  \
            const T *src = x + blk * len;                                                          \
            T *dst = y + blk * len;                                                                \
            double m = len ? sum_##N(src, len) / (double)len : 0.0;                                \
            double v = len ? sqdev_##N(src, len, m) / (double)len : 0.0;                           \
            double inv = 1.0 / sqrt(v + j->p->epsilon);                                            \
            for (int64_t cc = 0; cc < cpg; cc++) {                                                 \
                int64_t ch = (blk % G) * cpg + cc;                                                 \
                int64_t ai = bd_gn_affine_index(ch, j->c, G, j->k->node->op == BD_OP_GroupNormalization && \
                                                                 j->p->group_affine);              \
                T tm = (T)m, tk = (T)(inv * j->scale[ai]), tb = (T)j->bias[ai];                    \
                const T *s = src + cc * j->plane;                                                  \
                T *o = dst + cc * j->plane;                                                        \
                for (int64_t i = 0; i < j->plane; i++) o[i] = (s[i] - tm) * tk + tb;               \
            }                                                                                      \
        }                                                                                          \
    }
DEF_GN(float, f)
DEF_GN(double, d)

/* ---- LRN --------------------------------------------------------------------------- */

/* Planes [b0, b1) of (N, C): each output plane from the squares of its
 * window of channels, summed in double (acc: plane values). */
#define DEF_LRN(T, N)                                                                              \
    static void lrn_##N(norm_job *j, int64_t b0, int64_t b1, double *acc)                          \
    {                                                                                              \
        const T *x = j->x;                                                                         \
        T *y = j->y;                                                                               \
        int64_t C = j->c, P = j->plane;                                                            \
        for (int64_t blk = b0; blk < b1; blk++) {                                                  \
            int64_t ni = blk / C, ci = blk - ni * C, lo, hi;                                       \
            bd_lrn_window(ci, C, j->p->size, &lo, &hi);                                            \
            for (int64_t i = 0; i < P; i++) acc[i] = 0;                                            \
            for (int64_t cw = lo; cw <= hi; cw++) {                                                \
                const T *s = x + (ni * C + cw) * P;                                                \
                for (int64_t i = 0; i < P; i++) acc[i] += (double)s[i] * (double)s[i];             \
            }                                                                                      \
            const T *s = x + blk * P;                                                              \
            T *o = y + blk * P;                                                                    \
            for (int64_t i = 0; i < P; i++) o[i] = (T)bd_lrn(s[i], acc[i], j->p);                  \
        }                                                                                          \
    }
DEF_LRN(float, f)
DEF_LRN(double, d)

/* ---- LpNormalization ------------------------------------------------------------------ */

/* Outer blocks [b0, b1) of (outer, n = j->c, inner = j->plane); acc: inner values. */
#define DEF_LP(T, N)                                                                               \
    static void lp_##N(norm_job *j, int64_t b0, int64_t b1, double *acc)                           \
    {                                                                                              \
        int64_t n = j->c, in = j->plane;                                                           \
        for (int64_t b = b0; b < b1; b++) {                                                        \
            const T *x = (const T *)j->x + b * n * in;                                             \
            T *y = (T *)j->y + b * n * in;                                                         \
            for (int64_t i = 0; i < in; i++) acc[i] = 0;                                           \
            for (int64_t r = 0; r < n; r++)                                                        \
                for (int64_t i = 0; i < in; i++) {                                                 \
                    double v = x[r * in + i];                                                      \
                    acc[i] += j->p->p == 1 ? fabs(v) : v * v;                                      \
                }                                                                                  \
            if (j->p->p == 2)                                                                      \
                for (int64_t i = 0; i < in; i++) acc[i] = sqrt(acc[i]);                            \
            for (int64_t r = 0; r < n; r++)                                                        \
                for (int64_t i = 0; i < in; i++) y[r * in + i] = (T)bd_lp_norm(x[r * in + i], acc[i]); \
        }                                                                                          \
    }
DEF_LP(float, f)
DEF_LP(double, d)

static void norm_range(void *vj, int64_t b, int64_t e)
{
    norm_job *j = vj;
    double *acc = NULL;
    switch (j->k->node->op) {
    case BD_OP_BatchNormalization: j->dbl ? bn_d(j, b, e) : bn_f(j, b, e); return;
    case BD_OP_InstanceNormalization: case BD_OP_GroupNormalization: j->dbl ? gn_d(j, b, e) : gn_f(j, b, e); return;
    default: break;
    }
    if (!(acc = bd_malloc((size_t)(j->plane > 0 ? j->plane : 1) * sizeof *acc))) {
        j->failed = 1;
        return;
    }
    if (j->k->node->op == BD_OP_LRN) j->dbl ? lrn_d(j, b, e, acc) : lrn_f(j, b, e, acc);
    else j->dbl ? lp_d(j, b, e, acc) : lp_f(j, b, e, acc);
    bd_free(acc);
}

/* ---- MeanVarianceNormalization ---------------------------------------------------------- */

/* Statistics per kept index over the dims in mask; three passes, one thread. */
static braid_status mvn(const bd_kernel *k, const double *x, double *y)
{
    const bd_tensor *t = &k->in[0];
    unsigned mask;
    braid_status st = bd_mvn_mask(k->node->params, t->rank, &mask, k->err);
    if (st) return st;
    int64_t total = bd_numel(t), kept = 1, kst[BD_MAX_RANK];
    for (int d = t->rank - 1; d >= 0; d--) {
        kst[d] = mask >> d & 1 ? 0 : kept;
        if (!(mask >> d & 1)) kept *= t->dims[d];
    }
    if (total == 0) return BRAID_OK;
    double *s = bd_calloc((size_t)kept * 2, sizeof *s), *q = s ? s + kept : NULL;
    if (!s) return BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    double cnt = (double)(total / kept);
    for (int pass = 0; pass < 3; pass++) {
        int64_t idx[BD_MAX_RANK] = {0}, ko = 0;
        for (int64_t i = 0; i < total; i++) {
            if (pass == 0) s[ko] += x[i];
            else if (pass == 1) q[ko] += (x[i] - s[ko]) * (x[i] - s[ko]);
            else y[i] = bd_mvn(x[i], s[ko], q[ko]);
            for (int d = t->rank - 1; d >= 0; d--) { /* odometer */
                ko += kst[d];
                if (++idx[d] < t->dims[d]) break;
                ko -= kst[d] * t->dims[d];
                idx[d] = 0;
            }
        }
        for (int64_t i = 0; i < kept; i++) {
            if (pass == 0) s[i] /= cnt;
            if (pass == 1) q[i] /= cnt;
        }
    }
    bd_free(s);
    return BRAID_OK;
}

/* ---- dispatch ----------------------------------------------------------------------- */

/* Writes BatchNormalization's statistics outputs: opset 14 on running mean
 * and variance; before, those and the saved (batch) mean and variance. */
static void bn_outputs(const bd_kernel *k, const norm_job *j)
{
    for (int o = 1; o < k->n_out; o++) {
        bd_tensor *t = &k->out[o];
        if (!t->data) continue;
        for (int64_t c = 0; c < j->c; c++) {
            double v = o == 1 ? bd_bn_running(j->mean[c], j->bmean[c], j->p->momentum)
                     : o == 2 ? bd_bn_running(j->var[c], j->bvar[c], j->p->momentum)
                     : o == 3 ? j->bmean[c] : j->bvar[c];
            bd_st_f(t->data, t->dtype, c, v);
        }
    }
}

braid_status bd_cpu_norm(const bd_kernel *k)
{
    braid_status st = BRAID_OK;
    const bd_norm_params *p = k->node->params;
    const bd_tensor *x = &k->in[0];
    int op = k->node->op, dt = x->dtype, half = bd_is_half(dt);
    float *wide = NULL;
    double *dbuf = NULL, *params = NULL;
    if (!p) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "attributes were not parsed");
    if (dt != BRAID_DTYPE_FLOAT && dt != BRAID_DTYPE_DOUBLE && !half)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "%s has no CPU kernel for dtype %s", k->node->op_type,
                       bd_dtype_name(dt));
    int64_t total = bd_numel(x);
    norm_job j = {.k = k, .p = p, .dbl = dt == BRAID_DTYPE_DOUBLE, .x = x->data, .y = k->out[0].data};
    if (half) { /* widened into wide[0, total), the result in wide[total, 2 total) */
        wide = bd_malloc((size_t)(total ? 2 * total : 1) * sizeof *wide);
        BD_CHECK_ALLOC(k->err, wide);
        bd_widen(x->data, dt, wide, total);
        j.x = wide;
        j.y = wide + total;
    }
    if (op == BD_OP_MeanVarianceNormalization) { /* in double */
        dbuf = bd_malloc((size_t)(total ? 2 * total : 1) * sizeof *dbuf);
        BD_CHECK_ALLOC(k->err, dbuf);
        for (int64_t i = 0; i < total; i++) dbuf[i] = bd_ld_f(x->data, dt, i);
        BD_TRY(mvn(k, dbuf, dbuf + total));
        for (int64_t i = 0; i < total; i++) bd_st_f(k->out[0].data, dt, i, dbuf[total + i]);
        goto fail;
    }
    int64_t tasks;
    if (op == BD_OP_LpNormalization) {
        int axis;
        BD_TRY(bd_axis(p->axis, x->rank, &axis, k->err));
        bd_axis_split(x, axis, &j.n, &j.plane);
        j.c = x->dims[axis];
        tasks = j.n;
    } else {
        j.n = x->dims[0];
        j.c = x->rank >= 2 ? x->dims[1] : 1;
        j.plane = 1;
        for (int i = 2; i < x->rank; i++) j.plane *= x->dims[i];
        if (op == BD_OP_BatchNormalization && !p->spatial && k->node->opset < 9) { /* per activation */
            j.c *= j.plane;
            j.plane = 1;
        }
        tasks = op == BD_OP_BatchNormalization ? j.c
              : op == BD_OP_GroupNormalization ? j.n * p->groups : j.n * j.c;
    }
    if (op == BD_OP_BatchNormalization || op == BD_OP_InstanceNormalization || op == BD_OP_GroupNormalization) {
        int64_t np = bd_numel(&k->in[1]);
        int nv = op == BD_OP_BatchNormalization ? 6 : 2; /* scale, bias (, mean, var, batch mean, var) */
        params = bd_malloc((size_t)(nv * (np ? np : 1)) * sizeof *params);
        BD_CHECK_ALLOC(k->err, params);
        for (int v = 0; v < nv && v < 4; v++)
            for (int64_t i = 0; i < np; i++) params[v * np + i] = bd_ld_f(k->in[1 + v].data, k->in[1 + v].dtype, i);
        j.scale = params, j.bias = params + np;
        if (nv == 6) j.mean = params + 2 * np, j.var = params + 3 * np, j.bmean = params + 4 * np, j.bvar = params + 5 * np;
    }
    if ((total > 0 || op == BD_OP_BatchNormalization) && tasks > 0)
        bd_parallel_for(k->threads, tasks, BD_MAX((int64_t)1, (1 << 15) / BD_MAX(total / tasks, (int64_t)1)),
                        norm_range, &j);
    if (j.failed) {
        st = BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        goto fail;
    }
    if (op == BD_OP_BatchNormalization && p->training) bn_outputs(k, &j);
    if (half) bd_narrow(wide + total, k->out[0].data, dt, total);
fail:
    bd_free(wide);
    bd_free(dbuf);
    bd_free(params);
    return st;
}
