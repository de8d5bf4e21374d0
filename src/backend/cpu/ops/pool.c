/* pool.c: CPU kernels of the pool op family: MaxPool (with optional Indices),
 * AveragePool, GlobalAveragePool and GlobalMaxPool on fp32, NC + 1-3 spatial
 * dims. 1-D and 2-D windows run as 3-D ones with unit leading dims. LpPool,
 * GlobalLpPool and the other dtypes (double, float16, bfloat16, MaxPool's
 * int8/uint8) run a plain path that accumulates in double over the same
 * window tables (each output rounded once); MaxUnpool scatters. */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/ops/elementwise.h"
#include "backend/cpu/parallel.h"
#include "ops/pool.h"
#include "convnhwc.h"

#include <float.h>
#include <math.h>
#include <string.h>

void bd_pool_fill_axis(bd_pool_axis *t, int64_t out, int64_t L, int64_t k, int64_t s, int64_t dl, int64_t pb,
                       int64_t pe)
{
    for (int64_t o = 0; o < out; o++) {
        int64_t start = o * s - pb;
        int64_t j0 = start >= 0 ? 0 : (-start + dl - 1) / dl;
        int64_t j1 = L - 1 - start >= 0 ? BD_MIN(k, (L - 1 - start) / dl + 1) : 0;
        int64_t jp = L + pe - start > 0 ? BD_MIN(k, (L + pe - start + dl - 1) / dl) : 0;
        t->first[o] = start + j0 * dl;
        t->count[o] = j1 > j0 ? j1 - j0 : 0;
        t->npad[o] = jp;
    }
}

/* The run [*lo, *hi) of an axis's n outputs whose windows lie wholly
 * inside the input (k taps each): from the first such output on. */
static void whole_run(const bd_pool_axis *t, int64_t n, int64_t k, int64_t *lo, int64_t *hi)
{
    int64_t a = 0, b;
    while (a < n && t->count[a] != k) a++;
    for (b = a; b < n && t->count[b] == k; b++) {}
    *lo = a, *hi = b;
}

/* y[i], i in [0, n): the max over taps c in [0, k) of src[c step + i sw],
 * tap by tap over the whole run (vectorized where sw is 1): tap 0 taken
 * whatever it is, a later one only when greater (so a NaN in tap 0 stays). */
static inline void max_taps(float *y, const float *src, int64_t n, int64_t k, int64_t step, int64_t sw)
{
    if (sw == 1) memcpy(y, src, (size_t)n * sizeof *y);
    else
        for (int64_t i = 0; i < n; i++) y[i] = src[i * sw];
    for (int64_t c = 1; c < k; c++) {
        const float *s = src + c * step;
        if (sw == 1)
            for (int64_t i = 0; i < n; i++) y[i] = s[i] > y[i] ? s[i] : y[i];
        else
            for (int64_t i = 0; i < n; i++) y[i] = s[i * sw] > y[i] ? s[i * sw] : y[i];
    }
}

/* MaxPool without Indices, planes [b, e): per output row, the window's rows
 * reduced into the plane's own W-long row of tmp (one vectorized pass per
 * input row), then each output the max of its columns there: the run of
 * outputs whose windows lie wholly inside the row tap by tap over the run
 * (vectorized), the others one by one. A window's taps so meet in
 * column-major order either way (a row's first NaN stays, as in the
 * interior path this generalizes); no output reads an input twice per row. */
typedef struct max_job {
    const bd_pool_axis *t;
    const float *x;
    float *y, *tmp;          /* tmp: (planes, W) */
    int64_t H, W, O[3], dd, dh, dw, isz, osz;
    int64_t c0, c1;          /* the input columns some window reads */
    int64_t lo, hi, KW, sw;  /* output columns [lo, hi): windows wholly inside the row (KW taps, sw apart) */
    int64_t KH;
    int flat;                /* max_plane_flat applies */
    int failed;              /* a chunk could not allocate its plane buffer */
} max_job;

/* One plane of a 2-D MaxPool with unit strides and dilations whose output
 * rows are as wide as the input's (the 'same' pools of Inception and SPPF):
 * the rows' maxima for every output row into v (OH x W), the rows whose
 * windows lie wholly inside the plane in one pass per tap over all of them,
 * then the columns' in one pass per tap over the whole plane read as one
 * row, and the outputs whose windows cross a row's ends redone one by one.
 * The taps meet in the same order as max_planes' (bitwise the same). */
static BD_CLONES void max_plane_flat(const max_job *j, const float *xp, float *yp, float *v)
{
    const bd_pool_axis *t = j->t;
    const int64_t W = j->W, OH = j->O[1];
    int64_t rlo, rhi;
    whole_run(&t[1], OH, j->KH, &rlo, &rhi); /* rows rlo..rhi: t[1].first[oh] = oh - pad, all taps inside */
    if (rhi > rlo) max_taps(v + rlo * W, xp + t[1].first[rlo] * W, (rhi - rlo) * W, j->KH, W, 1);
    for (int64_t oh = 0; oh < OH; oh++)
        if ((oh < rlo || oh >= rhi) && t[1].count[oh])
            max_taps(v + oh * W, xp + t[1].first[oh] * W, W, t[1].count[oh], W, 1);
    /* Columns: output i of the plane read as one row reads v[i + off + c]. */
    const int64_t lo = j->lo, hi = j->hi, off = t[2].first[lo] - lo;
    max_taps(yp + lo, v + lo + off, (OH - 1) * W + hi - lo, j->KW, 1, 1);
    for (int64_t oh = 0; oh < OH; oh++) { /* the outputs whose windows cross a row's ends */
        float *yr = yp + oh * W;
        if (!t[1].count[oh]) {
            for (int64_t ow = 0; ow < W; ow++) yr[ow] = -FLT_MAX;
            continue;
        }
        for (int64_t ow = 0; ow < W; ow++) {
            if (ow == lo) ow = hi;
            if (ow >= W) break;
            const int64_t cw = t[2].count[ow];
            if (!cw) yr[ow] = -FLT_MAX;
            else max_taps(yr + ow, v + oh * W + t[2].first[ow], 1, cw, 1, 1);
        }
    }
}

static BD_CLONES void max_planes(void *ctx, int64_t b, int64_t e)
{
    const max_job *j = ctx;
    const bd_pool_axis *t = j->t;
    const int64_t H = j->H, W = j->W, dw = j->dw;
    float *v = j->flat ? bd_malloc((size_t)(j->O[1] * W) * sizeof *v + 1) : NULL;
    if (j->flat && !v) {
        __atomic_store_n(&((max_job *)ctx)->failed, 1, __ATOMIC_RELAXED); /* reported by window_pool */
        return;
    }
    for (int64_t pl = b; pl < e; pl++) {
        const float *xp = j->x + pl * j->isz;
        float *yp = j->y + pl * j->osz, *tmp = j->tmp + pl * W;
        if (v) {
            max_plane_flat(j, xp, yp, v);
            continue;
        }
        for (int64_t od = 0; od < j->O[0]; od++) {
            const int64_t fd = t[0].first[od], cd = t[0].count[od];
            for (int64_t oh = 0; oh < j->O[1]; oh++) {
                const int64_t fh = t[1].first[oh], ch = t[1].count[oh];
                float *yr = yp + (od * j->O[1] + oh) * j->O[2];
                if (cd * ch == 0 || j->c1 <= j->c0) { /* no input row (or column) in the windows */
                    for (int64_t ow = 0; ow < j->O[2]; ow++) yr[ow] = -FLT_MAX;
                    continue;
                }
                for (int64_t a = 0, first = 1; a < cd; a++)
                    for (int64_t r = 0; r < ch; r++, first = 0) {
                        const float *row = xp + ((fd + a * j->dd) * H + fh + r * j->dh) * W;
                        if (first) memcpy(tmp + j->c0, row + j->c0, (size_t)(j->c1 - j->c0) * sizeof *tmp);
                        else
                            for (int64_t c = j->c0; c < j->c1; c++) tmp[c] = row[c] > tmp[c] ? row[c] : tmp[c];
                    }
                for (int64_t ow = 0; ow < j->O[2]; ow++) {
                    if (ow == j->lo) { /* whole windows: tap by tap over the run */
                        max_taps(yr + ow, tmp + t[2].first[ow], j->hi - j->lo, j->KW, dw, j->sw);
                        ow = j->hi - 1;
                        continue;
                    }
                    const int64_t cw = t[2].count[ow];
                    if (!cw) yr[ow] = -FLT_MAX;
                    else max_taps(yr + ow, tmp + t[2].first[ow], 1, cw, dw, 1);
                }
            }
        }
    }
    bd_free(v);
}

/* The fp32 window pools, planes [begin, end) of (N x C), each plane by one
 * thread with its own row buffer tmp (W floats). */
typedef struct wp_job {
    const bd_node *n;
    bd_pool_axis t[3];
    int64_t L[3], O[3], K[3], S[3], DL[3];
    const float *x;
    float *y;
    int64_t *ind; /* MaxPool's Indices, or NULL */
    float *tmp;   /* the first chunk's row buffer */
    int failed;   /* a chunk could not allocate its row buffer */
} wp_job;

#define WP_MIN_WORK 32768 /* window taps per thread worth a thread */

static BD_CLONES void wp_planes(const wp_job *j, int64_t begin, int64_t end, float *tmp)
{
    const bd_pool_params *p = j->n->params;
    const bd_pool_axis *t = j->t;
    const int64_t *L = j->L, *O = j->O, *K = j->K, *S = j->S;
    const int64_t D = L[0], H = L[1], W = L[2];
    const int64_t dd = j->DL[0], dh = j->DL[1], dw = j->DL[2];
    const int64_t isz = D * H * W, osz = O[0] * O[1] * O[2];
    const float *x = j->x;
    float *y = j->y;
    int64_t *ind = j->ind; /* may be NULL */
    const int avg = j->n->op == BD_OP_AveragePool, cip = p->count_include_pad;
    const int col = p->storage_order == 1;
    /* Interior columns [lo, hi): windows wholly inside the input along W,
     * reduced row-wise through tmp (not when Indices are wanted). */
    const int64_t KW = K[2], sw = S[2];
    int64_t lo, hi;
    whole_run(&t[2], O[2], KW, &lo, &hi);
    if (ind || hi - lo < 4) lo = hi = O[2];

    for (int64_t pl = begin; pl < end; pl++) {
        const float *xp = x + pl * isz;
        float *yp = y + pl * osz;
        int64_t *ip = ind ? ind + pl * osz : NULL;
        for (int64_t od = 0; od < O[0]; od++) {
            const int64_t fd = t[0].first[od], cd = t[0].count[od];
            for (int64_t oh = 0; oh < O[1]; oh++) {
                const int64_t fh = t[1].first[oh], ch = t[1].count[oh];
                float *yr = yp + (od * O[1] + oh) * O[2];
                for (int64_t ow = 0; ow < O[2]; ow++) {
                    if (ow == lo) {
                        const int64_t nw = hi - lo;
                        float *yi = yr + lo;
                        if (cd * ch == 0) { /* no input row in the window */
                            for (int64_t i = 0; i < nw; i++) yi[i] = avg ? 0.0f : -FLT_MAX;
                            ow = hi - 1;
                            continue;
                        }
                        /* Reduce the window's rows into tmp (contiguous), then across W. */
                        const int64_t c0 = t[2].first[lo], c1 = t[2].first[hi - 1] + (KW - 1) * dw + 1;
                        /* rows in order; the first two in one pass (a copy and
                         * then a pass over it stalls store-to-load forwarding) */
                        const int64_t nrow = cd * ch;
#define WP_ROW(r) (xp + ((fd + ((r) / ch) * dd) * H + fh + ((r) % ch) * dh) * W)
                        const float *r0 = WP_ROW(0);
                        if (nrow == 1) {
                            memcpy(tmp + c0, r0 + c0, (size_t)(c1 - c0) * sizeof *tmp);
                        } else {
                            const float *r1 = WP_ROW(1);
                            if (avg)
                                for (int64_t c = c0; c < c1; c++) tmp[c] = r0[c] + r1[c];
                            else
                                for (int64_t c = c0; c < c1; c++) tmp[c] = r1[c] > r0[c] ? r1[c] : r0[c];
                        }
                        for (int64_t r = 2; r < nrow; r++) {
                            const float *row = WP_ROW(r);
                            if (avg)
                                for (int64_t c = c0; c < c1; c++) tmp[c] += row[c];
                            else
                                for (int64_t c = c0; c < c1; c++) tmp[c] = row[c] > tmp[c] ? row[c] : tmp[c];
                        }
#undef WP_ROW
                        if (KW == 1) {
                            for (int64_t i = 0; i < nw; i++) yi[i] = tmp[c0 + i * sw];
                        } else { /* taps 0 and 1 together, as the rows above */
                            const float *s0 = tmp + c0, *s1 = tmp + c0 + dw;
                            if (avg)
                                for (int64_t i = 0; i < nw; i++) yi[i] = s0[i * sw] + s1[i * sw];
                            else
                                for (int64_t i = 0; i < nw; i++) yi[i] = s1[i * sw] > s0[i * sw] ? s1[i * sw] : s0[i * sw];
                        }
                        for (int64_t c = 2; c < KW; c++) {
                            const float *src = tmp + c0 + c * dw;
                            if (avg)
                                for (int64_t i = 0; i < nw; i++) yi[i] += src[i * sw];
                            else
                                for (int64_t i = 0; i < nw; i++) yi[i] = src[i * sw] > yi[i] ? src[i * sw] : yi[i];
                        }
                        if (avg) {
                            int64_t div = cip ? t[0].npad[od] * t[1].npad[oh] * KW : cd * ch * KW;
                            for (int64_t i = 0; i < nw; i++) yi[i] = div > 0 ? yi[i] / (float)div : 0.0f;
                        }
                        ow = hi - 1;
                        continue;
                    }
                    const bd_pool_win win = {D, H, W, fd, fh, t[2].first[ow], cd, ch, t[2].count[ow], dd, dh, dw};
                    if (avg) {
                        int64_t div = cip ? t[0].npad[od] * t[1].npad[oh] * t[2].npad[ow] : cd * ch * win.cw;
                        yr[ow] = div > 0 ? bd_pool_sum(xp, &win) / (float)div : 0.0f;
                    } else if (!ip) {
                        yr[ow] = bd_pool_max(xp, &win);
                    } else { /* Indices flattened over (N, C, spatial) */
                        int64_t at;
                        yr[ow] = bd_pool_argmax(xp, &win, col, &at);
                        ip[(od * O[1] + oh) * O[2] + ow] = at < 0 ? -1 : pl * isz + at;
                    }
                }
            }
        }
    }
}

static void wp_chunk(void *ctx, int64_t begin, int64_t end)
{
    wp_job *j = ctx;
    if (begin == 0) { wp_planes(j, begin, end, j->tmp); return; }
    float *tmp = bd_malloc((size_t)(j->L[2] + 1) * sizeof *tmp);
    if (!tmp) { __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED); return; }
    wp_planes(j, begin, end, tmp);
    bd_free(tmp);
}

static braid_status window_pool(const bd_kernel *k)
{
    braid_status st = BRAID_OK;
    const bd_node *n = k->node;
    const bd_pool_params *p = n->params;
    bd_err *e = k->err;
    int64_t *buf = NULL;
    bd_pool_geom g;
    BD_TRY(bd_pool_geometry(n, &k->in[0], &g, e));

    /* Pad to 3 spatial dims: (D, H, W) with unit dims in front. */
    int off = BD_POOL_MAX_SPATIAL - g.nsp;
    int64_t L[3] = {1, 1, 1}, O[3] = {1, 1, 1}, K[3] = {1, 1, 1}, S[3] = {1, 1, 1},
            DL[3] = {1, 1, 1}, PB[3] = {0, 0, 0}, PE[3] = {0, 0, 0};
    for (int i = 0; i < g.nsp; i++) {
        L[off + i] = g.in[i];
        O[off + i] = g.out[i];
        K[off + i] = p->kernel[i];
        S[off + i] = p->strides[i];
        DL[off + i] = p->dilations[i];
        PB[off + i] = g.pad_begin[i];
        PE[off + i] = g.pad_end[i];
    }
    for (int i = 0; i < 3; i++)
        if (i >= off && O[i] != k->out[0].dims[2 + i - off]) {
            st = BD_FAIL(e, BRAID_ERR_INTERNAL, "output dim %d is %lld, the window gives %lld",
                         2 + i - off, (long long)k->out[0].dims[2 + i - off], (long long)O[i]);
            goto fail;
        }
    buf = bd_malloc(((size_t)(O[0] + O[1] + O[2]) * 3 + (size_t)L[2] + 1) * sizeof *buf);
    BD_CHECK_ALLOC(e, buf);
    bd_pool_axis t[3];
    int64_t *q = buf;
    for (int i = 0; i < 3; i++) {
        t[i].first = q; t[i].count = q + O[i]; t[i].npad = q + 2 * O[i];
        q += 3 * O[i];
        bd_pool_fill_axis(&t[i], O[i], L[i], K[i], S[i], DL[i], PB[i], PE[i]);
    }
    float *tmp = (float *)q; /* (W): one reduced row */

    const int64_t D = L[0], H = L[1], W = L[2];
    const int64_t dd = DL[0], dh = DL[1], dw = DL[2];
    const int64_t isz = D * H * W, osz = O[0] * O[1] * O[2];
    const int64_t planes = k->in[0].dims[0] * k->in[0].dims[1];
    const float *x = k->in[0].data;
    float *y = k->out[0].data;
    int64_t *ind = n->op == BD_OP_MaxPool && k->n_out > 1 ? k->out[1].data : NULL; /* may be NULL */
    const int avg = n->op == BD_OP_AveragePool;
    if (!avg && !ind) { /* MaxPool: every column through the reduced rows, planes on the threads */
        max_job j = {t, x, y, NULL, H, W, {O[0], O[1], O[2]}, dd, dh, dw, isz, osz, W, 0, 0, 0, K[2], S[2]};
        whole_run(&t[2], O[2], K[2], &j.lo, &j.hi);
        if (j.hi - j.lo < 4) j.lo = j.hi = O[2]; /* too few to pay: the per-output loop */
        j.KH = K[1];
        j.flat = O[0] == 1 && K[0] == 1 && t[0].count[0] == 1 && t[0].first[0] == 0 && S[1] == 1 && dh == 1 &&
                 S[2] == 1 && dw == 1 && O[2] == W && j.hi > j.lo;
        for (int64_t ow = 0; ow < O[2]; ow++)
            if (t[2].count[ow] > 0) {
                j.c0 = BD_MIN(j.c0, t[2].first[ow]);
                j.c1 = BD_MAX(j.c1, t[2].first[ow] + (t[2].count[ow] - 1) * dw + 1);
            }
        j.tmp = bd_malloc((size_t)(planes * W) * sizeof *j.tmp + 1);
        BD_CHECK_ALLOC(e, j.tmp);
        int64_t work = osz * (K[0] * K[1] + K[2]) + 1;
        bd_parallel_for(k->threads, planes, BD_MAX((int64_t)1, 65536 / work), max_planes, &j);
        bd_free(j.tmp);
        if (j.failed) st = BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        goto fail; /* done */
    }
    wp_job j = {.n = n, .x = x, .y = y, .tmp = tmp, .ind = ind};
    for (int i = 0; i < 3; i++)
        j.t[i] = t[i], j.L[i] = L[i], j.O[i] = O[i], j.K[i] = K[i], j.S[i] = S[i], j.DL[i] = DL[i];
    /* AveragePool, and MaxPool with Indices: planes on the threads, each with its row buffer */
    const int64_t work = O[0] * O[1] * O[2] * K[0] * K[1] * K[2];
    bd_parallel_for(k->threads, planes, BD_MAX((int64_t)1, (int64_t)WP_MIN_WORK / (work + 1)), wp_chunk, &j);
    if (j.failed) st = BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
fail:
    bd_free(buf);
    return st;
}

static braid_status global_pool(const bd_kernel *k)
{
    const bd_tensor *xt = &k->in[0];
    const int64_t planes = xt->dims[0] * xt->dims[1];
    int64_t size = 1;
    for (int i = 2; i < xt->rank; i++) size *= xt->dims[i];
    const float *x = xt->data;
    float *y = k->out[0].data;
    const int avg = k->node->op == BD_OP_GlobalAveragePool;
    for (int64_t pl = 0; pl < planes; pl++) {
        const float *xp = x + pl * size;
        /* Eight running lanes: vectorizable, and a shorter rounding chain. */
        float acc[8];
        for (int j = 0; j < 8; j++) acc[j] = avg ? 0.0f : -FLT_MAX;
        int64_t i = 0;
        if (avg) {
            for (; i + 8 <= size; i += 8)
                for (int j = 0; j < 8; j++) acc[j] += xp[i + j];
            for (; i < size; i++) acc[0] += xp[i];
            float sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
            y[pl] = size > 0 ? sum / (float)size : 0.0f;
        } else {
            for (; i + 8 <= size; i += 8)
                for (int j = 0; j < 8; j++) acc[j] = xp[i + j] > acc[j] ? xp[i + j] : acc[j];
            for (; i < size; i++) acc[0] = xp[i] > acc[0] ? xp[i] : acc[0];
            float m = acc[0];
            for (int j = 1; j < 8; j++) m = acc[j] > m ? acc[j] : m;
            y[pl] = m;
        }
    }
    return BRAID_OK;
}

/* ---- the plain path: any dtype, LpPool ---------------------------------------- */

typedef struct gen_job {
    const bd_node *n;
    bd_pool_axis t[3];
    int64_t L[3], O[3], DL[3];
    const bd_tensor *x;
    bd_tensor *y;
    int64_t *ind; /* MaxPool's Indices, or NULL */
} gen_job;

static void gen_planes(void *vj, int64_t begin, int64_t end)
{
    const gen_job *j = vj;
    const bd_pool_params *p = j->n->params;
    const int op = j->n->op, col = p->storage_order == 1;
    const int64_t D = j->L[0], H = j->L[1], W = j->L[2], isz = D * H * W, osz = j->O[0] * j->O[1] * j->O[2];
    const double lowest = bd_pool_lowest(j->x->dtype);
    for (int64_t pl = begin; pl < end; pl++)
        for (int64_t od = 0; od < j->O[0]; od++)
            for (int64_t oh = 0; oh < j->O[1]; oh++)
                for (int64_t ow = 0; ow < j->O[2]; ow++) {
                    const int64_t fd = j->t[0].first[od], cd = j->t[0].count[od], fh = j->t[1].first[oh];
                    const int64_t ch = j->t[1].count[oh], fw = j->t[2].first[ow], cw = j->t[2].count[ow];
                    const int64_t o = pl * osz + (od * j->O[1] + oh) * j->O[2] + ow;
                    double acc = op == BD_OP_MaxPool ? lowest : 0.0;
                    int64_t at = -1;
                    for (int64_t a = 0; a < cd; a++)
                        for (int64_t b = 0; b < ch; b++)
                            for (int64_t c = 0; c < cw; c++) {
                                int64_t z = fd + a * j->DL[0], y = fh + b * j->DL[1], x = fw + c * j->DL[2];
                                double v = bd_get_f64(j->x, pl * isz + (z * H + y) * W + x);
                                if (op == BD_OP_AveragePool) acc += v;
                                else if (op == BD_OP_LpPool) acc += bd_pool_lp_term(v, p->p);
                                else if (v > acc || (j->ind && at < 0)) { /* Indices: the first tap is taken whatever it is */
                                    acc = v;
                                    at = col ? z + y * D + x * D * H : (z * H + y) * W + x;
                                }
                            }
                    if (op == BD_OP_AveragePool) {
                        int64_t div = p->count_include_pad ? j->t[0].npad[od] * j->t[1].npad[oh] * j->t[2].npad[ow]
                                                           : cd * ch * cw;
                        acc = div > 0 ? acc / (double)div : 0.0;
                    } else if (op == BD_OP_LpPool) {
                        acc = bd_pool_lp_root(acc, p->p);
                    }
                    bd_set_f64(j->y, o, acc);
                    if (j->ind) j->ind[o] = at < 0 ? -1 : pl * isz + at;
                }
}

static braid_status window_generic(const bd_kernel *k)
{
    braid_status st = BRAID_OK;
    const bd_node *n = k->node;
    const bd_pool_params *p = n->params;
    bd_err *e = k->err;
    int64_t *buf = NULL;
    bd_pool_geom g;
    BD_TRY(bd_pool_geometry(n, &k->in[0], &g, e));
    gen_job j = {.n = n, .x = &k->in[0], .y = &k->out[0]};
    j.ind = n->op == BD_OP_MaxPool && k->n_out > 1 ? k->out[1].data : NULL;
    const int off = BD_POOL_MAX_SPATIAL - g.nsp;
    int64_t K[3] = {1, 1, 1}, S[3] = {1, 1, 1}, PB[3] = {0, 0, 0}, PE[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++) j.L[i] = j.O[i] = j.DL[i] = 1;
    for (int i = 0; i < g.nsp; i++) {
        j.L[off + i] = g.in[i], j.O[off + i] = g.out[i], K[off + i] = p->kernel[i], S[off + i] = p->strides[i];
        j.DL[off + i] = p->dilations[i], PB[off + i] = g.pad_begin[i], PE[off + i] = g.pad_end[i];
    }
    buf = bd_malloc((size_t)(j.O[0] + j.O[1] + j.O[2]) * 3 * sizeof *buf + 1);
    BD_CHECK_ALLOC(e, buf);
    int64_t *q = buf;
    for (int i = 0; i < 3; i++) {
        j.t[i].first = q, j.t[i].count = q + j.O[i], j.t[i].npad = q + 2 * j.O[i];
        q += 3 * j.O[i];
        bd_pool_fill_axis(&j.t[i], j.O[i], j.L[i], K[i], S[i], j.DL[i], PB[i], PE[i]);
    }
    int64_t work = j.O[0] * j.O[1] * j.O[2] * K[0] * K[1] * K[2];
    bd_parallel_for(k->threads, k->in[0].dims[0] * k->in[0].dims[1], BD_MAX((int64_t)1, 65536 / (work + 1)),
                    gen_planes, &j);
fail:
    bd_free(buf);
    return st;
}

static braid_status global_generic(const bd_kernel *k)
{
    const bd_tensor *x = &k->in[0];
    const bd_pool_params *p = k->node->params;
    const int op = k->node->op;
    const int64_t planes = x->dims[0] * x->dims[1];
    int64_t size = 1;
    for (int i = 2; i < x->rank; i++) size *= x->dims[i];
    for (int64_t pl = 0; pl < planes; pl++) {
        double acc = op == BD_OP_GlobalMaxPool ? bd_pool_lowest(x->dtype) : 0.0;
        for (int64_t i = 0; i < size; i++) {
            double v = bd_get_f64(x, pl * size + i);
            if (op == BD_OP_GlobalAveragePool) acc += v;
            else if (op == BD_OP_GlobalLpPool) acc += bd_pool_lp_term(v, p->p);
            else acc = v > acc ? v : acc;
        }
        if (op == BD_OP_GlobalAveragePool) acc = size > 0 ? acc / (double)size : 0.0;
        else if (op == BD_OP_GlobalLpPool) acc = bd_pool_lp_root(acc, p->p);
        bd_set_f64(&k->out[0], pl, acc);
    }
    return BRAID_OK;
}

/* MaxUnpool: y = 0, then each x[i] to the unpooled position I[i] (in order:
 * a repeated index keeps the last), placed in y's leading corner. */
static braid_status unpool(const bd_kernel *k)
{
    int64_t dims[BD_MAX_RANK], up[BD_MAX_RANK];
    braid_status st = bd_unpool_dims(k->node, k->in, k->n_in, dims, up, k->err);
    if (st) return st;
    const bd_tensor *x = &k->in[0];
    bd_tensor *y = &k->out[0];
    const int r = x->rank;
    const size_t es = bd_dtype_size(x->dtype);
    const int64_t *ind = k->in[1].data;
    int64_t total_up = 1, n = bd_numel(x);
    for (int d = 0; d < r; d++) total_up *= up[d];
    memset(y->data, 0, (size_t)bd_numel(y) * es);
    for (int64_t i = 0; i < n; i++) {
        int64_t v = ind[i], o = 0, stride = 1;
        if (v < 0 || v >= total_up)
            return BD_FAIL(k->err, BRAID_ERR_INVALID_MODEL, "index %lld of I is %lld, outside the %lld unpooled values",
                           (long long)i, (long long)v, (long long)total_up);
        for (int d = r - 1; d >= 0; d--) { /* the unpooled coordinates, then y's offset */
            o += (v % up[d]) * stride;
            v /= up[d];
            stride *= y->dims[d];
        }
        memcpy((char *)y->data + (size_t)o * es, (const char *)x->data + (size_t)i * es, es);
    }
    return BRAID_OK;
}

braid_status bd_cpu_pool(const bd_kernel *k)
{
    const int op = k->node->op, f32 = k->in[0].dtype == BRAID_DTYPE_FLOAT;
    const bd_pool_params *p = k->node->params;
    if (p && p->layout == BD_LAYOUT_NHWC) {
        if (!f32) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "an NHWC %s runs float32 only", k->node->op_type);
        return bd_pool_nhwc(k);
    }
    switch (op) {
    case BD_OP_MaxPool:
    case BD_OP_AveragePool: return f32 ? window_pool(k) : window_generic(k);
    case BD_OP_LpPool: return window_generic(k);
    case BD_OP_GlobalAveragePool:
    case BD_OP_GlobalMaxPool: return f32 ? global_pool(k) : global_generic(k);
    case BD_OP_GlobalLpPool: return global_generic(k);
    case BD_OP_MaxUnpool: return unpool(k);
    default:
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the pool family", k->node->op_type);
    }
}
