/* im2col.c: CPU kernels of the im2col op family. Col2Im gathers, for each
 * output pixel, the column entries that land on it in kernel-point order (one
 * thread per pixel range, so sums do not depend on the thread count), on
 * every numeric dtype and bool (OR). DeformConv computes the sampling
 * corners (multilinear, zeros outside, times the mask) once per offset group,
 * gathers every channel's deformed columns through them, and multiplies them
 * by each group's weights with the thread-independent GEMM (float;
 * OpenBLAS's dgemm, single-threaded, for double; float16/bfloat16 through
 * float32). */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/parallel.h"

#include <cblas.h>
#include <string.h>

#include "ops/im2col.h"
#include "util/dtype.h"

/* ---- Col2Im ------------------------------------------------------------------ */

typedef struct c2i_job {
    const bd_im2col_geom *g;
    int64_t C; /* output channels */
    const void *x;
    void *y;
} c2i_job;

/* Output element e = (n, c, p): the sum over kernel points kk of x[n, c K + kk, col]. */
#define C2I_LOOP(T, ACC, INIT, ADD, OUT)                                                           \
    {                                                                                              \
        const T *x = j->x;                                                                         \
        T *y = j->y;                                                                               \
        for (int64_t e = begin; e < end; e++) {                                                    \
            const int64_t p = e % g->P, pl = e / g->P; /* pl = n C + c */                          \
            const T *xs = x + pl * g->K * g->L;                                                    \
            ACC acc = INIT;                                                                        \
            for (int64_t kk = 0; kk < g->K; kk++) {                                                \
                int64_t col = bd_col2im_col(g, p, kk);                                             \
                if (col >= 0) ADD(acc, xs[kk * g->L + col]);                                       \
            }                                                                                      \
            y[e] = OUT(acc);                                                                       \
        }                                                                                          \
    }
#define ADD_NUM(a, v) (a) += (v)
#define ADD_WRAP(a, v) (a) += (uint64_t)(v) /* integer sums wrap, as numpy's += does */
#define ADD_OR(a, v) (a) |= (v) != 0
#define ADD_HALF(a, v) (a) += bd_half_to_float(v)
#define ADD_BF16(a, v) (a) += bd_bf16_to_float(v)
#define OUT_SAME(a) (a)
#define OUT_HALF(a) bd_float_to_half(a)
#define OUT_BF16(a) bd_float_to_bf16(a)

#define C2I_CASE(DT, T, ACC, INIT, ADD, OUT)                                                       \
    case BRAID_DTYPE_##DT: C2I_LOOP(T, ACC, INIT, ADD, OUT) break;

static void c2i_range_dt(const c2i_job *j, int dt, int64_t begin, int64_t end)
{
    const bd_im2col_geom *g = j->g;
    switch (dt) {
        C2I_CASE(FLOAT, float, float, 0.0f, ADD_NUM, OUT_SAME)
        C2I_CASE(DOUBLE, double, double, 0.0, ADD_NUM, OUT_SAME)
        C2I_CASE(FLOAT16, uint16_t, float, 0.0f, ADD_HALF, OUT_HALF)
        C2I_CASE(BFLOAT16, uint16_t, float, 0.0f, ADD_BF16, OUT_BF16)
        C2I_CASE(INT8, int8_t, uint64_t, 0, ADD_WRAP, (int8_t))
        C2I_CASE(INT16, int16_t, uint64_t, 0, ADD_WRAP, (int16_t))
        C2I_CASE(INT32, int32_t, uint64_t, 0, ADD_WRAP, (int32_t))
        C2I_CASE(INT64, int64_t, uint64_t, 0, ADD_WRAP, (int64_t))
        C2I_CASE(UINT8, uint8_t, uint64_t, 0, ADD_WRAP, (uint8_t))
        C2I_CASE(UINT16, uint16_t, uint64_t, 0, ADD_WRAP, (uint16_t))
        C2I_CASE(UINT32, uint32_t, uint64_t, 0, ADD_WRAP, (uint32_t))
        C2I_CASE(UINT64, uint64_t, uint64_t, 0, ADD_WRAP, (uint64_t))
        C2I_CASE(BOOL, uint8_t, uint8_t, 0, ADD_OR, OUT_SAME)
    default: break;
    }
}

typedef struct c2i_par {
    const c2i_job *j;
    int dt;
} c2i_par;

static void c2i_range(void *vp, int64_t begin, int64_t end)
{
    const c2i_par *p = vp;
    c2i_range_dt(p->j, p->dt, begin, end);
}

static braid_status run_col2im(const bd_kernel *k)
{
    bd_im2col_geom g;
    braid_status st = bd_col2im_geometry(k->node, k->in, &g, k->err);
    if (st) return st;
    c2i_job j = {&g, k->out[0].dims[1], k->in[0].data, k->out[0].data};
    c2i_par p = {&j, k->in[0].dtype};
    int64_t total = bd_numel(&k->out[0]);
    bd_parallel_for(k->threads, total, BD_MAX((int64_t)1, (int64_t)65536 / (g.K * g.nsp + 1)), c2i_range, &p);
    return BRAID_OK;
}

/* ---- DeformConv -------------------------------------------------------------- */

/* The sampling corners of one (image, offset group): for each kernel point
 * kk and output position p, the corner offsets and weights (times the mask),
 * shared by every channel of the offset group. */
typedef struct dc_job {
    const bd_im2col_geom *g;
    int dbl, nc;                 /* double data; corners per sample (2^nsp) */
    int64_t n, og, ogs, C, cg, grp, c0, c1; /* image, offset group (of ogs), channels, group; rows' channels [c0, c1) */
    const void *x, *off, *mask;
    int64_t *idx;                /* (K, L, nc) */
    double *w;                   /* (K, L, nc) */
    void *cols;                  /* (cg K, L) */
} dc_job;

static void dc_corners(void *vj, int64_t begin, int64_t end)
{
    const dc_job *j = vj;
    const bd_im2col_geom *g = j->g;
    const int nsp = g->nsp;
    for (int64_t e = begin; e < end; e++) { /* e = kk L + p */
        const int64_t kk = e / g->L, p = e % g->L;
        int64_t kc[3] = {0, 0, 0}, q = kk, rem = p;
        for (int d = nsp - 1; d >= 0; d--) kc[d] = q % g->blk[d], q /= g->blk[d];
        const int64_t off_base = ((j->n * j->ogs + j->og) * g->K * nsp + kk * nsp) * g->L;
        double pos[3];
        for (int d = nsp - 1; d >= 0; d--) {
            int64_t o = rem % g->nb[d];
            rem /= g->nb[d];
            int64_t i = off_base + d * g->L + p;
            double dv = j->dbl ? ((const double *)j->off)[i] : (double)((const float *)j->off)[i];
            pos[d] = bd_deform_pos(g, d, o, kc[d], dv);
        }
        int64_t *idx = j->idx + e * j->nc;
        double *w = j->w + e * j->nc;
        bd_deform_corners(g, pos, idx, w);
        if (j->mask) {
            int64_t mi = ((j->n * j->ogs + j->og) * g->K + kk) * g->L + p;
            double m = j->dbl ? ((const double *)j->mask)[mi] : (double)((const float *)j->mask)[mi];
            for (int c = 0; c < j->nc; c++) w[c] *= m;
        }
    }
}

/* Rows of the columns for channels [c0, c1) of this offset group: row (c - group's first) K + kk. */
static void dc_rows(void *vj, int64_t begin, int64_t end)
{
    const dc_job *j = vj;
    const bd_im2col_geom *g = j->g;
    for (int64_t r = begin; r < end; r++) {
        const int64_t c = j->c0 + r / g->K, kk = r % g->K, row = (c - j->grp * j->cg) * g->K + kk;
        const int64_t *idx = j->idx + kk * g->L * j->nc;
        const double *w = j->w + kk * g->L * j->nc;
        if (j->dbl) {
            const double *x = (const double *)j->x + (j->n * j->C + c) * g->P;
            double *col = (double *)j->cols + row * g->L;
            for (int64_t p = 0; p < g->L; p++) {
                double v = 0.0;
                for (int q = 0; q < j->nc; q++)
                    if (idx[p * j->nc + q] >= 0) v += w[p * j->nc + q] * x[idx[p * j->nc + q]];
                col[p] = v;
            }
        } else {
            const float *x = (const float *)j->x + (j->n * j->C + c) * g->P;
            float *col = (float *)j->cols + row * g->L;
            for (int64_t p = 0; p < g->L; p++) {
                double v = 0.0;
                for (int q = 0; q < j->nc; q++)
                    if (idx[p * j->nc + q] >= 0) v += w[p * j->nc + q] * (double)x[idx[p * j->nc + q]];
                col[p] = (float)v;
            }
        }
    }
}

/* A float32 copy of a float16/bfloat16 tensor (NULL input gives NULL). */
static float *to_float(const bd_tensor *t, braid_status *st, bd_err *e)
{
    if (!t || !t->dtype) return NULL;
    int64_t n = bd_numel(t);
    float *f = bd_malloc((size_t)(n ? n : 1) * sizeof *f);
    if (!f) {
        *st = BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        return NULL;
    }
    const uint16_t *h = t->data;
    for (int64_t i = 0; i < n; i++) f[i] = t->dtype == BRAID_DTYPE_FLOAT16 ? bd_half_to_float(h[i]) : bd_bf16_to_float(h[i]);
    return f;
}

static braid_status run_deform(const bd_kernel *k)
{
    braid_status st = BRAID_OK;
    bd_err *e = k->err;
    const bd_im2col_params *prm = k->node->params;
    bd_im2col_geom g;
    void *cols = NULL;
    int64_t *cidx = NULL;
    double *cw = NULL;
    float *conv[6] = {NULL}; /* float32 copies of X, W, offset, B, mask, and the output */
    BD_TRY(bd_deform_geometry(k->node, k->in, k->n_in, &g, e));
    const int dt = k->in[0].dtype, dbl = dt == BRAID_DTYPE_DOUBLE, narrow = !dbl && dt != BRAID_DTYPE_FLOAT;
    const bd_tensor *bias = k->n_in > 3 && k->in[3].dtype ? &k->in[3] : NULL;
    const bd_tensor *mask = k->n_in > 4 && k->in[4].dtype ? &k->in[4] : NULL;
    const void *x = k->in[0].data, *w = k->in[1].data, *off = k->in[2].data;
    const void *b = bias ? bias->data : NULL, *m = mask ? mask->data : NULL;
    void *y = k->out[0].data;
    const int64_t N = k->in[0].dims[0], C = k->in[0].dims[1], OC = k->out[0].dims[1];
    const int64_t G = prm->group, cg = C / G, ocg = OC / G, rows = cg * g.K;
    if (bd_numel(&k->out[0]) == 0) goto fail;
    if (narrow) {
        const bd_tensor *src[5] = {&k->in[0], &k->in[1], &k->in[2], bias, mask};
        for (int i = 0; i < 5; i++)
            if (src[i] && !(conv[i] = to_float(src[i], &st, e))) goto fail;
        conv[5] = bd_malloc((size_t)bd_numel(&k->out[0]) * sizeof(float));
        BD_CHECK_ALLOC(e, conv[5]);
        x = conv[0], w = conv[1], off = conv[2], b = conv[3], m = conv[4], y = conv[5];
    }
    const size_t esz = dbl ? sizeof(double) : sizeof(float);
    const int nc = 1 << g.nsp;
    const int64_t og_ch = C / prm->offset_group;
    cols = bd_malloc((size_t)(rows * g.L) * esz + 1);
    cidx = bd_malloc((size_t)(g.K * g.L * nc) * sizeof *cidx + 1);
    cw = bd_malloc((size_t)(g.K * g.L * nc) * sizeof *cw + 1);
    BD_CHECK_ALLOC(e, cols && cidx && cw);
    for (int64_t n = 0; n < N; n++)
        for (int64_t grp = 0; grp < G; grp++) {
            const int64_t lo = grp * cg, hi = lo + cg;
            for (int64_t og = lo / og_ch; og * og_ch < hi; og++) {
                dc_job j = {&g, dbl, nc, n, og, prm->offset_group, C, cg, grp, BD_MAX(lo, og * og_ch),
                            BD_MIN(hi, (og + 1) * og_ch), x, off, m, cidx, cw, cols};
                bd_parallel_for(k->threads, g.K * g.L, 1024, dc_corners, &j);
                bd_parallel_for(k->threads, (j.c1 - j.c0) * g.K, BD_MAX((int64_t)1, (int64_t)8192 / (g.L + 1)),
                                dc_rows, &j);
            }
            const int64_t yo = (n * OC + grp * ocg) * g.L, wo = grp * ocg * rows;
            if (dbl)
                cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)ocg, (int)g.L, (int)rows, 1.0,
                            (const double *)w + wo, (int)rows, cols, (int)g.L, 0.0, (double *)y + yo, (int)g.L);
            else
                bd_sgemm(k->threads, 0, 0, ocg, g.L, rows, 1.0f, (const float *)w + wo, rows, cols, g.L, 0.0f,
                         (float *)y + yo, g.L);
        }
    if (b)
        for (int64_t n = 0; n < N; n++)
            for (int64_t oc = 0; oc < OC; oc++)
                for (int64_t p = 0; p < g.L; p++) {
                    int64_t i = (n * OC + oc) * g.L + p;
                    if (dbl) ((double *)y)[i] += ((const double *)b)[oc];
                    else ((float *)y)[i] += ((const float *)b)[oc];
                }
    if (narrow) {
        uint16_t *h = k->out[0].data;
        for (int64_t i = 0; i < bd_numel(&k->out[0]); i++)
            h[i] = dt == BRAID_DTYPE_FLOAT16 ? bd_float_to_half(conv[5][i]) : bd_float_to_bf16(conv[5][i]);
    }
fail:
    for (int i = 0; i < 6; i++) bd_free(conv[i]);
    bd_free(cols);
    bd_free(cidx);
    bd_free(cw);
    return st;
}

braid_status bd_cpu_im2col(const bd_kernel *k)
{
    switch (k->node->op) {
    case BD_OP_Col2Im: return run_col2im(k);
    case BD_OP_DeformConv: return run_deform(k);
    default: return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the im2col family", k->node->op_type);
    }
}
