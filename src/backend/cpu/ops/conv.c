/* conv.c: CPU kernels of the conv op family. Conv runs as im2col + SGEMM
 * (1x1 stride-1 unpadded: SGEMM straight on the input), with a direct loop
 * when each group has one input channel (depthwise); ConvTranspose runs as
 * SGEMM + col2im. 1-D and 2-D are handled as 3-D with leading unit dims. */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/parallel.h"
#include "ops/conv.h"

#include <cblas.h>
#include <limits.h>
#include <string.h>

/* A window: an image (channels x img[0] x img[1] x img[2]) seen from a grid
 * of kernel positions; image index = grid index * s - pb + tap * d. */
typedef struct win3 {
    int64_t img[3], grid[3], k[3], s[3], d[3], pb[3];
    int64_t img_size, grid_size, taps;
} win3;

static void win_make(const bd_conv_geom *g, int transpose, win3 *w)
{
    int off = 3 - g->nsp;
    for (int i = 0; i < 3; i++) {
        int j = i - off;
        int unit = j < 0;
        w->img[i] = unit ? 1 : transpose ? g->y[j] : g->x[j];
        w->grid[i] = unit ? 1 : transpose ? g->x[j] : g->y[j];
        w->k[i] = unit ? 1 : g->k[j];
        w->s[i] = unit ? 1 : g->s[j];
        w->d[i] = unit ? 1 : g->d[j];
        w->pb[i] = unit ? 0 : g->pb[j];
    }
    w->img_size = w->img[0] * w->img[1] * w->img[2];
    w->grid_size = w->grid[0] * w->grid[1] * w->grid[2];
    w->taps = w->k[0] * w->k[1] * w->k[2];
}

/* [lo, hi): the grid positions j in [0, n) whose image index j*s + off is in [0, len). */
static void valid_range(int64_t n, int64_t s, int64_t off, int64_t len, int64_t *lo, int64_t *hi)
{
    int64_t a = off < 0 ? (-off + s - 1) / s : 0;
    int64_t b = len - off > 0 ? (len - off + s - 1) / s : 0;
    a = BD_MIN(a, n);
    b = BD_MIN(b, n);
    *lo = a;
    *hi = BD_MAX(a, b);
}

/* Calls body once per (channel c, tap t = (kd, kh, kw), grid row (gd, gh)) whose
 * image row (id, ih) exists; off_w, wlo, whi give the valid part of the row. */
#define WIN_FOREACH(w, channels, ...)                                                             \
    for (int64_t c = 0; c < (channels); c++)                                                       \
        for (int64_t kd = 0, t = 0; kd < (w)->k[0]; kd++)                                          \
            for (int64_t kh = 0; kh < (w)->k[1]; kh++)                                             \
                for (int64_t kw = 0; kw < (w)->k[2]; kw++, t++) {                                  \
                    int64_t off_w = kw * (w)->d[2] - (w)->pb[2], wlo, whi;                         \
                    valid_range((w)->grid[2], (w)->s[2], off_w, (w)->img[2], &wlo, &whi);          \
                    for (int64_t gd = 0; gd < (w)->grid[0]; gd++) {                                \
                        int64_t id = gd * (w)->s[0] - (w)->pb[0] + kd * (w)->d[0];                 \
                        int row_d = id >= 0 && id < (w)->img[0];                                   \
                        for (int64_t gh = 0; gh < (w)->grid[1]; gh++) {                            \
                            int64_t ih = gh * (w)->s[1] - (w)->pb[1] + kh * (w)->d[1];             \
                            int64_t grow = (gd * (w)->grid[1] + gh) * (w)->grid[2];                \
                            int ok = row_d && ih >= 0 && ih < (w)->img[1];                         \
                            int64_t irow = ((c * (w)->img[0] + id) * (w)->img[1] + ih) * (w)->img[2]; \
                            __VA_ARGS__                                                            \
                        }                                                                          \
                    }                                                                              \
                }

/* col (channels*taps x grid_size) = the image patches under each kernel position. */
static void im2col(const float *img, int64_t channels, const win3 *w, float *col)
{
    int64_t s = w->s[2];
    WIN_FOREACH(w, channels, {
        float *dst = col + (c * w->taps + t) * w->grid_size + grow;
        if (!ok) { memset(dst, 0, (size_t)w->grid[2] * sizeof *dst); continue; }
        const float *src = img + irow + off_w;
        for (int64_t j = 0; j < wlo; j++) dst[j] = 0;
        if (s == 1) memcpy(dst + wlo, src + wlo, (size_t)(whi - wlo) * sizeof *dst);
        else for (int64_t j = wlo; j < whi; j++) dst[j] = src[j * s];
        for (int64_t j = whi; j < w->grid[2]; j++) dst[j] = 0;
    })
}

/* The adjoint of im2col: adds each column entry into its image position. */
static void col2im(const float *col, int64_t channels, const win3 *w, float *img)
{
    int64_t s = w->s[2];
    WIN_FOREACH(w, channels, {
        if (!ok) continue;
        const float *src = col + (c * w->taps + t) * w->grid_size + grow;
        float *dst = img + irow + off_w;
        for (int64_t j = wlo; j < whi; j++) dst[j * s] += src[j];
    })
}

/* Depthwise (one input channel per group): each output channel accumulates
 * its taps straight from the input plane, one pass over the output per tap.
 * A job covers the (image, output channel) planes [begin, end). */
typedef struct dw_job {
    const bd_conv_geom *g;
    const win3 *w;
    const float *x, *wt, *bias;
    float *y;
    int64_t begin, end;
} dw_job;

static void *dw_run(void *arg)
{
    const dw_job *jb = arg;
    const bd_conv_geom *g = jb->g;
    const win3 *w = jb->w;
    int64_t mg = g->c_out / g->group, s = w->s[2];
    for (int64_t plane = jb->begin; plane < jb->end; plane++) {
        int64_t n = plane / g->c_out, m = plane % g->c_out;
        const float *xc = jb->x + (n * g->c_in + m / mg) * w->img_size;
        const float *wm = jb->wt + m * w->taps;
        float *yc = jb->y + plane * w->grid_size;
        float b0 = jb->bias ? jb->bias[m] : 0.0f;
        for (int64_t j = 0; j < w->grid_size; j++) yc[j] = b0;
        WIN_FOREACH(w, 1, {
            if (!ok) continue;
            const float wv = wm[t];
            const float *src = xc + irow + off_w;
            float *dst = yc + grow;
            if (s == 1) for (int64_t j = wlo; j < whi; j++) dst[j] += wv * src[j];
            else for (int64_t j = wlo; j < whi; j++) dst[j] += wv * src[j * s];
        })
    }
    return NULL;
}

#define DW_MIN_WORK (1 << 18) /* multiply-adds per thread worth a thread */

static void dw_chunk(void *ctx, int64_t begin, int64_t end)
{
    dw_job jb = *(const dw_job *)ctx;
    jb.begin = begin;
    jb.end = end;
    dw_run(&jb);
}

/* Splits the planes over up to `threads` threads. */
static void conv_depthwise(const bd_conv_geom *g, const win3 *w, const float *x, const float *wt,
                           const float *bias, float *y, int threads)
{
    int64_t planes = g->n * g->c_out;
    dw_job all = {g, w, x, wt, bias, y, 0, planes};
    bd_parallel_for(threads, planes, BD_MAX((int64_t)1, DW_MIN_WORK / BD_MAX(w->grid_size * w->taps, 1)), dw_chunk, &all);
}

/* One plane of the epilogue with act and res fixed at compile time, so that
 * the loop vectorizes (z is read only when res is set). */
#define EPI_PLANE(ACT, RES)                                                                        \
    for (int64_t j = 0; j < p; j++) yc[j] = bd_conv_epilogue(ACT, aa, ab, RES, yc[j], b0, (RES) ? zc[j] : 0.0f)

/* After the sums: the bias (unless y already holds it), the residual of a
 * folded Add and the fused activation, in one pass over the (image, output
 * channel) planes [nc0, nc1) (see src/graph/fuse.c). */
static void epilogue_planes(const bd_kernel *k, const bd_conv_geom *g, const float *bias, float *y, int64_t nc0,
                            int64_t nc1)
{
    const bd_conv_params *pa = k->node->params;
    const float *z = pa->res != BD_RES_NONE && k->n_in > 3 ? k->in[3].data : NULL;
    int64_t planes = g->n * g->c_out, numel = bd_numel(&k->out[0]);
    if ((!bias && !z && pa->act == BD_ACT_NONE) || planes <= 0 || numel <= 0) return;
    int64_t p = numel / planes;
    int res = z ? pa->res : BD_RES_NONE;
    const float aa = pa->act_a, ab = pa->act_b;
    for (int64_t nc = nc0; nc < nc1; nc++) {
        float b0 = bias ? bias[nc % g->c_out] : 0.0f, *yc = y + nc * p;
        const float *zc = z ? z + nc * p : NULL;
        switch (pa->act * 3 + res) {
        case BD_ACT_NONE * 3 + BD_RES_NONE: EPI_PLANE(BD_ACT_NONE, BD_RES_NONE); break;
        case BD_ACT_NONE * 3 + BD_RES_PRE: EPI_PLANE(BD_ACT_NONE, BD_RES_PRE); break;
        case BD_ACT_RELU * 3 + BD_RES_NONE: EPI_PLANE(BD_ACT_RELU, BD_RES_NONE); break;
        case BD_ACT_RELU * 3 + BD_RES_PRE: EPI_PLANE(BD_ACT_RELU, BD_RES_PRE); break;
        case BD_ACT_RELU * 3 + BD_RES_POST: EPI_PLANE(BD_ACT_RELU, BD_RES_POST); break;
        default: EPI_PLANE(pa->act, res); break; /* LeakyRelu, Clip: the general loop */
        }
    }
}
#undef EPI_PLANE

static void epilogue(const bd_kernel *k, const bd_conv_geom *g, const float *bias, float *y)
{
    epilogue_planes(k, g, bias, y, 0, g->n * g->c_out);
}

static braid_status check_blas_dims(int64_t a, int64_t b, int64_t c, bd_err *e)
{
    if (a > INT_MAX || b > INT_MAX || c > INT_MAX)
        return BD_FAIL(e, BRAID_ERR_LIMIT, "a matrix dim of this convolution (%lld, %lld, %lld) "
                       "is beyond the BLAS limit of %d", (long long)a, (long long)b,
                       (long long)c, INT_MAX);
    return BRAID_OK;
}

/* The (image, group) pairs of a convolution split over threads: worker i
 * takes pairs [count * i / workers, count * (i + 1) / workers), with its own
 * column buffer, and finishes its planes' epilogue. Each pair is the same
 * single-threaded GEMM whatever the split, so the bits do not depend on it. */
typedef struct conv_job {
    const bd_kernel *k;
    const bd_conv_geom *g;
    const win3 *w;
    const float *x, *wt, *bias;
    float *y, *cols; /* cols: workers x (kk * p), NULL when pointwise */
    int64_t pairs, workers, kk, p;
    int threads;     /* for each GEMM: all of them when there is one worker */
} conv_job;

static void conv_pairs(void *ctx, int64_t begin, int64_t end)
{
    const conv_job *j = ctx;
    const bd_conv_geom *g = j->g;
    int64_t cg = g->c_in / g->group, mg = g->c_out / g->group;
    for (int64_t wi = begin; wi < end; wi++) {
        float *col = j->cols ? j->cols + wi * j->kk * j->p : NULL;
        for (int64_t pr = j->pairs * wi / j->workers; pr < j->pairs * (wi + 1) / j->workers; pr++) {
            int64_t n = pr / g->group, gi = pr % g->group;
            const float *xg = j->x + (n * g->c_in + gi * cg) * j->w->img_size;
            float *yg = j->y + (n * g->c_out + gi * mg) * j->p;
            if (col) im2col(xg, cg, j->w, col);
            bd_sgemm(j->threads, 0, 0, mg, j->p, j->kk, 1.0f, j->wt + gi * mg * j->kk, j->kk, col ? col : xg, j->p,
                     0.0f, yg, j->p);
            epilogue_planes(j->k, g, j->bias, j->y, n * g->c_out + gi * mg, n * g->c_out + (gi + 1) * mg);
        }
    }
}

#define CONV_MIN_WORK (1 << 21) /* multiply-adds per worker worth a thread */

static braid_status conv_forward(const bd_kernel *k, const bd_conv_geom *g)
{
    braid_status st = BRAID_OK;
    const float *x = k->in[0].data, *wt = k->in[1].data;
    const float *bias = k->n_in > 2 && k->in[2].data ? k->in[2].data : NULL;
    float *y = k->out[0].data, *cols = NULL;
    win3 w;
    win_make(g, 0, &w);
    int64_t cg = g->c_in / g->group, mg = g->c_out / g->group;
    int64_t kk = cg * w.taps, p = w.grid_size;
    if (cg == 1) {
        conv_depthwise(g, &w, x, wt, bias, y, k->threads);
        epilogue(k, g, NULL, y); /* the bias is in y already */
        return BRAID_OK;
    }
    int pointwise = w.taps == 1;
    for (int i = 0; i < g->nsp; i++)
        pointwise &= g->s[i] == 1 && g->pb[i] == 0 && g->pe[i] == 0;
    BD_TRY(check_blas_dims(mg, p, kk, k->err));
    /* Several (image, group) pairs: one worker per thread, each GEMM on one
     * thread; a single pair: its GEMM's tiles go over the threads instead. */
    int64_t pairs = g->n * g->group, work = mg * p * BD_MAX(kk, (int64_t)1);
    int64_t workers = BD_MIN((int64_t)BD_MAX(k->threads, 1), pairs);
    workers = BD_MAX((int64_t)1, BD_MIN(workers, pairs * work / CONV_MIN_WORK));
    if (!pointwise) {
        cols = bd_malloc((size_t)workers * (size_t)kk * (size_t)p * sizeof *cols);
        BD_CHECK_ALLOC(k->err, cols);
    }
    conv_job j = {k, g, &w, x, wt, bias, y, cols, pairs, workers, kk, p, workers > 1 ? 1 : k->threads};
    bd_parallel_for((int)workers, workers, 1, conv_pairs, &j);
fail:
    bd_free(cols);
    return st;
}

static braid_status conv_transpose(const bd_kernel *k, const bd_conv_geom *g)
{
    braid_status st = BRAID_OK;
    const float *x = k->in[0].data, *wt = k->in[1].data;
    const float *bias = k->n_in > 2 && k->in[2].data ? k->in[2].data : NULL;
    float *y = k->out[0].data, *col = NULL;
    win3 w;
    win_make(g, 1, &w);
    int64_t cg = g->c_in / g->group, mg = g->c_out / g->group;
    int64_t kk = mg * w.taps, p = w.grid_size; /* col: (Mg * taps) x (input spatial size) */
    BD_TRY(check_blas_dims(kk, p, cg, k->err));
    col = bd_malloc((size_t)kk * (size_t)p * sizeof *col);
    BD_CHECK_ALLOC(k->err, col);
    for (int64_t n = 0; n < g->n; n++) {
        float *yn = y + n * g->c_out * w.img_size;
        for (int64_t m = 0; m < g->c_out; m++) {
            float b0 = bias ? bias[m] : 0.0f;
            for (int64_t j = 0; j < w.img_size; j++) yn[m * w.img_size + j] = b0;
        }
        for (int64_t gi = 0; gi < g->group; gi++) {
            const float *xg = x + (n * g->c_in + gi * cg) * p;
            /* W is (C_in, Mg, taps): the group's rows form a (Cg x Mg*taps) matrix. */
            bd_sgemm(k->threads, 1, 0, kk, p, cg, 1.0f, wt + gi * cg * kk, kk, xg, p, 0.0f, col, p);
            col2im(col, mg, &w, yn + gi * mg * w.img_size);
        }
    }
fail:
    bd_free(col);
    return st;
}

braid_status bd_cpu_conv(const bd_kernel *k)
{
    bd_conv_geom g;
    braid_status st = bd_conv_geometry(k->node, &k->in[0], &k->in[1],
                                       k->n_in > 2 ? &k->in[2] : NULL, &g, k->err);
    if (st) return st;
    switch (k->node->op) {
    case BD_OP_Conv: return conv_forward(k, &g);
    case BD_OP_ConvTranspose: return conv_transpose(k, &g);
    default:
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the conv family",
                       k->node->op_type);
    }
}
