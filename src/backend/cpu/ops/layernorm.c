/* layernorm.c: CPU kernels of the layernorm family (LayerNormalization,
 * RMSNormalization, com.microsoft SkipLayerNormalization and
 * SkipSimplifiedLayerNormalization). X is read as rows of `cols` values; per
 * row, the mean and variance (or the mean square) are summed in 8 double
 * lanes, then y = (x - mean) * inv * scale + bias in the compute type:
 * float32, or float64 when X, scale or the stash type is double. float32 rows
 * are read in place; float16/bfloat16 rows (and the Skip ops' input + skip +
 * bias) are staged in a row buffer and every output is rounded once. Rows are
 * split over threads, each done by one thread, so bits never depend on the
 * thread count. The row functions are built for x86-64-v3 too (BD_CLONES:
 * 4 double lanes per AVX2 vector where the baseline has 2). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math", "no-math-errno")
#endif

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/parallel.h"

#include <math.h>
#include <string.h>

#include "elementwise.h"
#include "fbuf.h"
#include "ops/layernorm.h"

typedef struct ln_job {
    const bd_kernel *k;
    const bd_layernorm_params *p;
    int64_t rows, cols;
    int dbl;                /* compute in double */
    const void *sc, *bi;    /* scale and bias laid over cols, compute type; bi NULL: none */
    const void *sbias;      /* the Skip ops' bias (added before normalizing), or NULL */
    int64_t skip_rows;      /* rows of skip (row r reads skip row r % skip_rows) */
    _Atomic int failed;
} ln_job;

/* The ids of the tensors a job reads and writes. */
#define X_IN (&j->k->in[0])
#define Y_OUT (&j->k->out[0])

#define DEF_LN(C, N, CDT)                                                                          \
    /* Sum of x and of (x - m)^2 (m NAN: of x^2) over n values, in 8 double lanes. */              \
    static BD_CLONES double sum_##N(const C *x, int64_t n)                                                   \
    {                                                                                              \
        double l[8] = {0}, a = 0;                                                                  \
        int64_t i = 0;                                                                             \
        for (; i + 8 <= n; i += 8)                                                                 \
            for (int q = 0; q < 8; q++) l[q] += (double)x[i + q];                                  \
        for (; i < n; i++) a += (double)x[i];                                                      \
        for (int q = 0; q < 8; q++) a += l[q];                                                     \
        return a;                                                                                  \
    }                                                                                              \
    static BD_CLONES double sqdev_##N(const C *x, int64_t n, double m)                                       \
    {                                                                                              \
        double l[8] = {0}, a = 0;                                                                  \
        int64_t i = 0;                                                                             \
        for (; i + 8 <= n; i += 8)                                                                 \
            for (int q = 0; q < 8; q++) l[q] += ((double)x[i + q] - m) * ((double)x[i + q] - m);   \
        for (; i < n; i++) a += ((double)x[i] - m) * ((double)x[i] - m);                           \
        for (int q = 0; q < 8; q++) a += l[q];                                                     \
        return a;                                                                                  \
    }                                                                                              \
    /* Rows [r0, r1); w: two rows of scratch (the staged input, the result). */                    \
    static BD_CLONES void rows_##N(ln_job *j, int64_t r0, int64_t r1, C *w)                                  \
    {                                                                                              \
        const bd_kernel *k = j->k;                                                                 \
        int64_t n = j->cols;                                                                       \
        const C *sc = j->sc, *bi = j->bi, *sb = j->sbias;                                          \
        int xdt = X_IN->dtype, ydt = Y_OUT->dtype, skip = j->p->skip;                              \
        bd_tensor *m_out = k->n_out > 1 && k->out[1].data ? &k->out[1] : NULL;                     \
        bd_tensor *i_out = k->n_out > 2 && k->out[2].data ? &k->out[2] : NULL;                     \
        bd_tensor *s_out = skip && k->n_out > 3 && k->out[3].data ? &k->out[3] : NULL;             \
        C *res = w + n;                                                                            \
        for (int64_t r = r0; r < r1; r++) {                                                        \
            const C *row = w;                                                                      \
            if (xdt == CDT && !skip) {                                                             \
                row = (const C *)X_IN->data + r * n;                                               \
            } else if (!skip) {                                                                    \
                for (int64_t i = 0; i < n; i++) w[i] = (C)bd_ld_f(X_IN->data, xdt, r * n + i);     \
            } else { /* input + skip (+ bias), kept for the sum output */                          \
                const bd_tensor *s = &k->in[1];                                                    \
                int64_t sr = (r % j->skip_rows) * n;                                               \
                for (int64_t i = 0; i < n; i++)                                                    \
                    w[i] = (C)bd_ld_f(X_IN->data, xdt, r * n + i) + (C)bd_ld_f(s->data, xdt, sr + i) + \
                           (sb ? sb[i] : (C)0);                                                    \
                if (s_out)                                                                         \
                    for (int64_t i = 0; i < n; i++) bd_st_f(s_out->data, s_out->dtype, r * n + i, w[i]); \
            }                                                                                      \
            double mean = 0, v;                                                                    \
            if (j->p->simplified) {                                                                \
                v = n ? sqdev_##N(row, n, 0.0) / (double)n : 0.0;                                  \
            } else {                                                                               \
                mean = n ? sum_##N(row, n) / (double)n : 0.0;                                      \
                v = n ? sqdev_##N(row, n, mean) / (double)n : 0.0;                                 \
            }                                                                                      \
            double inv = bd_ln_inv(v, j->p->epsilon);                                              \
            C cm = (C)mean, ci = (C)inv;                                                           \
            C *dst = ydt == CDT ? (C *)Y_OUT->data + r * n : res;                                  \
            if (bi) for (int64_t i = 0; i < n; i++) dst[i] = (row[i] - cm) * ci * sc[i] + bi[i];   \
            else for (int64_t i = 0; i < n; i++) dst[i] = (row[i] - cm) * ci * sc[i];              \
            if (ydt != CDT) {                                                                      \
                if (bd_is_half(ydt) && CDT == BRAID_DTYPE_FLOAT)                                   \
                    bd_narrow((const float *)(const void *)res, (uint16_t *)Y_OUT->data + r * n, ydt, n); \
                else                                                                               \
                    for (int64_t i = 0; i < n; i++) bd_st_f(Y_OUT->data, ydt, r * n + i, res[i]);  \
            }                                                                                      \
            if (m_out) bd_st_f(m_out->data, m_out->dtype, r, j->p->simplified ? 0.0 : (double)cm); \
            if (i_out) bd_st_f(i_out->data, i_out->dtype, r, (double)ci);                          \
        }                                                                                          \
    }
DEF_LN(float, f, BRAID_DTYPE_FLOAT)
DEF_LN(double, d, BRAID_DTYPE_DOUBLE)

static void ln_range(void *vj, int64_t r0, int64_t r1)
{
    ln_job *j = vj;
    size_t es = j->dbl ? sizeof(double) : sizeof(float);
    void *w = bd_malloc(2 * (size_t)(j->cols > 0 ? j->cols : 1) * es);
    if (!w) {
        j->failed = 1;
        return;
    }
    if (j->dbl) rows_d(j, r0, r1, w);
    else rows_f(j, r0, r1, w);
    bd_free(w);
}

/* t's values laid over X's dims from axis on (cols of them), in the compute
 * type (bd_malloc'ed; NULL when out of memory): broadcast as numpy would,
 * leading dims beyond the normalized rank dropped. */
static void *lay_out(const bd_tensor *x, int axis, const bd_tensor *t, int64_t cols, int dbl)
{
    int nr = x->rank - axis;
    bd_tensor norm = {.dtype = t->dtype, .rank = nr}, view = *t;
    memcpy(norm.dims, x->dims + axis, (size_t)nr * sizeof *norm.dims);
    if (view.rank > nr) {
        memmove(view.dims, view.dims + (view.rank - nr), (size_t)nr * sizeof *view.dims);
        view.rank = nr;
    }
    int64_t str[BD_MAX_RANK];
    bd_broadcast_strides(&view, &norm, str);
    void *out = bd_malloc((size_t)(cols ? cols : 1) * (dbl ? sizeof(double) : sizeof(float)));
    if (!out) return NULL;
    for (int64_t c = 0; c < cols; c++) {
        int64_t rem = c, off = 0;
        for (int d = nr - 1; d >= 0; d--) {
            off += (rem % norm.dims[d]) * str[d];
            rem /= norm.dims[d];
        }
        double v = bd_ld_f(t->data, t->dtype, off);
        if (dbl) ((double *)out)[c] = v;
        else ((float *)out)[c] = (float)v;
    }
    return out;
}

braid_status bd_cpu_layernorm(const bd_kernel *k)
{
    braid_status st = BRAID_OK;
    const bd_layernorm_params *p = k->node->params;
    const bd_tensor *x = &k->in[0];
    void *sc = NULL, *bi = NULL, *sb = NULL;
    int axis;
    int64_t rows, cols;
    if (!p) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "attributes were not parsed");
    BD_TRY(bd_layernorm_rows(k->node, x, &axis, &rows, &cols, k->err));
    ln_job j = {.k = k, .p = p, .rows = rows, .cols = cols, .skip_rows = 1};
    j.dbl = x->dtype == BRAID_DTYPE_DOUBLE || k->in[1].dtype == BRAID_DTYPE_DOUBLE ||
            (!p->skip && p->stash == BRAID_DTYPE_DOUBLE);
    int gamma = p->skip ? 2 : 1, beta = p->skip ? bd_skip_beta_index(p->simplified) : 2;
    int bias = p->skip ? bd_skip_bias_index(p->simplified) : -1;
    sc = lay_out(x, axis, &k->in[gamma], cols, j.dbl);
    BD_CHECK_ALLOC(k->err, sc);
    if (beta >= 0 && beta < k->n_in && k->in[beta].data) {
        bi = lay_out(x, axis, &k->in[beta], cols, j.dbl);
        BD_CHECK_ALLOC(k->err, bi);
    }
    if (bias >= 0 && bias < k->n_in && k->in[bias].data) {
        sb = lay_out(x, axis, &k->in[bias], cols, j.dbl);
        BD_CHECK_ALLOC(k->err, sb);
    }
    j.sc = sc, j.bi = bi, j.sbias = sb;
    if (p->skip) j.skip_rows = cols ? BD_MAX(bd_numel(&k->in[1]) / cols, (int64_t)1) : 1;
    if (rows > 0)
        bd_parallel_for(k->threads, rows, BD_MAX((int64_t)1, (1 << 14) / BD_MAX(cols, (int64_t)1)), ln_range, &j);
    if (j.failed) st = BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
fail:
    bd_free(sc);
    bd_free(bi);
    bd_free(sb);
    return st;
}
