/* vision.c: CPU kernels of the vision op family: GridSample (taps of a block
 * of output positions computed once, then applied to every channel),
 * AffineGrid, RoiAlign, MaxRoiPool and NonMaxSuppression. float16 and
 * bfloat16 run through float32 copies (each output rounded once); double
 * runs in double. Work is split by output blocks and ROIs, so results do not
 * depend on the thread count. */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/parallel.h"

#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ops/vision.h"
#include "util/dtype.h"

/* Element i of a float, double, float16 or bfloat16 buffer. */
static inline double ld(const void *p, int dt, int64_t i)
{
    switch (dt) {
    case BRAID_DTYPE_DOUBLE: return ((const double *)p)[i];
    case BRAID_DTYPE_FLOAT16: return bd_half_to_float(((const uint16_t *)p)[i]);
    case BRAID_DTYPE_BFLOAT16: return bd_bf16_to_float(((const uint16_t *)p)[i]);
    default: return ((const float *)p)[i];
    }
}

/* A float32 view of a float, float16 or bfloat16 tensor: its data, or a
 * converted copy that *owned takes (NULL when out of memory). */
static const float *as_float(const bd_tensor *t, float **owned)
{
    *owned = NULL;
    if (t->dtype == BRAID_DTYPE_FLOAT) return t->data;
    int64_t n = bd_numel(t);
    float *f = bd_malloc((size_t)(n ? n : 1) * sizeof *f);
    if (!f) return NULL;
    for (int64_t i = 0; i < n; i++) f[i] = (float)ld(t->data, t->dtype, i);
    return *owned = f;
}

/* The output buffer a float32 kernel writes for out: its data, or a scratch
 * copy that store_float converts into out's dtype afterwards. */
static float *out_float(bd_tensor *out, float **owned)
{
    *owned = NULL;
    if (out->dtype == BRAID_DTYPE_FLOAT) return out->data;
    int64_t n = bd_numel(out);
    return *owned = bd_malloc((size_t)(n ? n : 1) * sizeof(float));
}

static void store_float(const float *f, bd_tensor *out)
{
    int64_t n = bd_numel(out);
    uint16_t *h = out->data;
    if (out->dtype == BRAID_DTYPE_FLOAT16)
        for (int64_t i = 0; i < n; i++) h[i] = bd_float_to_half(f[i]);
    else if (out->dtype == BRAID_DTYPE_BFLOAT16)
        for (int64_t i = 0; i < n; i++) h[i] = bd_float_to_bf16(f[i]);
}

/* ---- GridSample ------------------------------------------------------------ */

/* Output positions per block: the block's taps (at most 64 KiB positions x
 * taps x 16 bytes) are computed once, in parallel, then every channel walks
 * them, channels in parallel, each channel's plane staying in cache. */
#define GS_BLOCK 16384

typedef struct gs_job {
    const bd_vision_params *p;
    int r, kind; /* kind: 0 float, 1 double, 2 any dtype by bytes (nearest) */
    int64_t C, L[BD_GS_MAX_SPATIAL], P, S, taps;
    const void *grid;
    int grid_dt;
    const void *x;
    void *y;
    size_t esz;
    int64_t n, p0, np; /* the block: image n, positions [p0, p0 + np) */
    int64_t *off;      /* (np, taps): plane offsets, -1 for a zero */
    double *w;         /* (np, taps) */
    float *wf;         /* (np, taps) */
} gs_job;

/* Taps of output position p of image n: combined offsets (-1: a zero) and weights. */
static void gs_position(const gs_job *j, int64_t n, int64_t p, int64_t *off, double *w)
{
    bd_gs_taps t[BD_GS_MAX_SPATIAL];
    const int r = j->r;
    for (int d = 0; d < r; d++) {
        double v = ld(j->grid, j->grid_dt, (n * j->P + p) * r + (r - 1 - d)); /* the grid lists x first */
        if (j->grid_dt == BRAID_DTYPE_DOUBLE)
            bd_gs_taps_d(v, j->L[d], j->p->align_corners, j->p->padding, j->p->mode, &t[d]);
        else
            bd_gs_taps_f((float)v, j->L[d], j->p->align_corners, j->p->padding, j->p->mode, &t[d]);
    }
    int c[BD_GS_MAX_SPATIAL] = {0};
    for (int64_t k = 0; k < j->taps; k++) {
        int64_t o = 0;
        double wt = 1.0;
        for (int d = 0; d < r; d++) {
            int64_t i = t[d].idx[c[d]];
            o = o < 0 || i < 0 ? -1 : o * j->L[d] + i;
            wt *= t[d].w[c[d]];
        }
        off[k] = o, w[k] = wt;
        for (int d = r - 1; d >= 0 && ++c[d] == t[d].n; d--) c[d] = 0;
    }
}

static void gs_fill(void *vj, int64_t begin, int64_t end)
{
    gs_job *j = vj;
    const int64_t T = j->taps;
    for (int64_t q = begin; q < end; q++) {
        gs_position(j, j->n, j->p0 + q, j->off + q * T, j->w + q * T);
        for (int64_t k = 0; k < T; k++) j->wf[q * T + k] = (float)j->w[q * T + k];
    }
}

static void gs_apply(void *vj, int64_t begin, int64_t end)
{
    const gs_job *j = vj;
    const int64_t T = j->taps, np = j->np;
    const int64_t *off = j->off;
    for (int64_t c = begin; c < end; c++) {
        const int64_t pl = j->n * j->C + c;
        if (j->kind == 0) {
            const float *xp = (const float *)j->x + pl * j->S, *wf = j->wf;
            float *yp = (float *)j->y + pl * j->P + j->p0;
            if (T == 4) /* bilinear in 2-D */
                for (int64_t q = 0; q < np; q++) {
                    const int64_t *o = off + 4 * q;
                    const float *w = wf + 4 * q;
                    float acc = 0.0f;
                    if (o[0] >= 0) acc += w[0] * xp[o[0]];
                    if (o[1] >= 0) acc += w[1] * xp[o[1]];
                    if (o[2] >= 0) acc += w[2] * xp[o[2]];
                    if (o[3] >= 0) acc += w[3] * xp[o[3]];
                    yp[q] = acc;
                }
            else
                for (int64_t q = 0; q < np; q++) {
                    float acc = 0.0f;
                    for (int64_t k = 0; k < T; k++)
                        if (off[q * T + k] >= 0) acc += wf[q * T + k] * xp[off[q * T + k]];
                    yp[q] = acc;
                }
        } else if (j->kind == 1) {
            const double *xp = (const double *)j->x + pl * j->S;
            double *yp = (double *)j->y + pl * j->P + j->p0;
            for (int64_t q = 0; q < np; q++) {
                double acc = 0.0;
                for (int64_t k = 0; k < T; k++)
                    if (off[q * T + k] >= 0) acc += j->w[q * T + k] * xp[off[q * T + k]];
                yp[q] = acc;
            }
        } else { /* nearest on any dtype: copy the element, or zero */
            const char *xp = (const char *)j->x + (size_t)(pl * j->S) * j->esz;
            char *yp = (char *)j->y + (size_t)(pl * j->P + j->p0) * j->esz;
            for (int64_t q = 0; q < np; q++) {
                if (off[q] >= 0) memcpy(yp + (size_t)q * j->esz, xp + (size_t)off[q] * j->esz, j->esz);
                else memset(yp + (size_t)q * j->esz, 0, j->esz);
            }
        }
    }
}

static braid_status run_gridsample(const bd_kernel *k)
{
    braid_status st = BRAID_OK;
    const bd_node *n = k->node;
    bd_err *e = k->err;
    float *xo = NULL, *yo = NULL;
    const bd_tensor *x = &k->in[0], *grid = &k->in[1];
    gs_job j = {.p = n->params, .r = x->rank - 2, .C = x->dims[1], .grid = grid->data, .grid_dt = grid->dtype};
    BD_TRY(bd_gridsample_check(n, x, grid, e));
    const int per = j.p->mode == BD_GS_NEAREST ? 1 : j.p->mode == BD_GS_LINEAR ? 2 : 4;
    j.P = j.S = j.taps = 1;
    for (int d = 0; d < j.r; d++) {
        j.L[d] = x->dims[2 + d];
        j.S *= j.L[d];
        j.P *= k->out[0].dims[2 + d];
        j.taps *= per;
    }
    if (bd_numel(&k->out[0]) == 0) goto fail;
    int dt = x->dtype;
    if (dt == BRAID_DTYPE_DOUBLE) {
        j.kind = 1, j.x = x->data, j.y = k->out[0].data;
    } else if (dt == BRAID_DTYPE_FLOAT || dt == BRAID_DTYPE_FLOAT16 || dt == BRAID_DTYPE_BFLOAT16) {
        j.kind = 0;
        j.x = as_float(x, &xo);
        j.y = out_float(&k->out[0], &yo);
        BD_CHECK_ALLOC(e, j.x && j.y);
    } else {
        j.kind = 2, j.x = x->data, j.y = k->out[0].data, j.esz = bd_dtype_size(dt);
    }
    const int64_t block = BD_MAX((int64_t)1, BD_MIN((int64_t)GS_BLOCK, (int64_t)65536 / j.taps));
    const size_t cells = (size_t)(BD_MIN(block, j.P) * j.taps);
    j.off = bd_malloc(cells * sizeof *j.off);
    j.w = bd_malloc(cells * sizeof *j.w);
    j.wf = bd_malloc(cells * sizeof *j.wf);
    BD_CHECK_ALLOC(e, j.off && j.w && j.wf);
    for (j.n = 0; j.n < x->dims[0]; j.n++)
        for (j.p0 = 0; j.p0 < j.P; j.p0 += block) {
            j.np = BD_MIN(block, j.P - j.p0);
            bd_parallel_for(k->threads, j.np, 1024, gs_fill, &j);
            bd_parallel_for(k->threads, j.C, BD_MAX((int64_t)1, (int64_t)16384 / (j.np * j.taps)), gs_apply, &j);
        }
    if (yo) store_float(yo, &k->out[0]);
fail:
    bd_free(j.off);
    bd_free(j.w);
    bd_free(j.wf);
    bd_free(xo);
    bd_free(yo);
    return st;
}

/* ---- AffineGrid ------------------------------------------------------------ */

/* The base coordinate of position i on an axis of L (align_corners: -1 .. 1
 * through the pixel centres; else their centres inside [-1, 1]). */
static double base_coord(int64_t i, int64_t L, int align)
{
    if (align) return L > 1 ? -1.0 + 2.0 * (double)i / (double)(L - 1) : -1.0;
    return -1.0 + (2.0 * (double)i + 1.0) / (double)L;
}

static braid_status run_affine_grid(const bd_kernel *k)
{
    const bd_vision_params *p = k->node->params;
    bd_tensor *out = &k->out[0];
    const int r = out->rank - 2; /* 2 or 3 */
    const int64_t N = out->dims[0];
    int64_t D = r == 3 ? out->dims[1] : 1, H = out->dims[r == 3 ? 2 : 1], W = out->dims[r == 3 ? 3 : 2];
    const void *th = k->in[0].data;
    const int dt = k->in[0].dtype;
    int64_t o = 0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t z = 0; z < D; z++)
            for (int64_t y = 0; y < H; y++)
                for (int64_t x = 0; x < W; x++) {
                    double v[4] = {base_coord(x, W, p->align_corners), base_coord(y, H, p->align_corners),
                                   r == 3 ? base_coord(z, D, p->align_corners) : 1.0, 1.0};
                    for (int i = 0; i < r; i++, o++) {
                        double s = 0;
                        for (int c = 0; c <= r; c++) s += ld(th, dt, (n * r + i) * (r + 1) + c) * v[c];
                        bd_set_f64(out, o, s);
                    }
                }
    return BRAID_OK;
}

/* ---- RoiAlign and MaxRoiPool ----------------------------------------------- */

typedef struct roi_job {
    const bd_vision_params *p;
    int kind; /* 0 float, 1 double */
    int64_t C, H, W;
    const void *x, *rois;
    const int64_t *batch;
    void *y;
    atomic_int oom;
} roi_job;

#define DEF_ROI_ALIGN(T, S)                                                                        \
    static int roi_align_##S(const roi_job *j, int64_t r, bd_roi_sample **buf, int64_t *cap)       \
    {                                                                                              \
        const bd_vision_params *p = j->p;                                                          \
        const T *x = (const T *)j->x + j->batch[r] * j->C * j->H * j->W;                           \
        T *y = (T *)j->y + r * j->C * p->out_h * p->out_w;                                         \
        T y0, x0, bh, bw;                                                                          \
        int64_t gh, gw;                                                                            \
        bd_roi_geom_##S((const T *)j->rois + r * 4, (T)p->spatial_scale, p->half_pixel, p->out_h, p->out_w, \
                        p->sampling_ratio, &y0, &x0, &bh, &bw, &gh, &gw);                           \
        if (gh * gw > *cap) {                                                                      \
            bd_free(*buf);                                                                         \
            *cap = gh * gw;                                                                        \
            if (!(*buf = bd_malloc((size_t)*cap * sizeof **buf))) return 0;                        \
        }                                                                                          \
        const T count = (T)(gh * gw > 1 ? gh * gw : 1);                                            \
        for (int64_t ph = 0; ph < p->out_h; ph++)                                                  \
            for (int64_t pw = 0; pw < p->out_w; pw++) {                                            \
                bd_roi_sample *s = *buf;                                                           \
                for (int64_t iy = 0; iy < gh; iy++) {                                              \
                    T yy = y0 + (T)ph * bh + ((T)iy + (T)0.5) * bh / (T)gh;                        \
                    for (int64_t ix = 0; ix < gw; ix++, s++) {                                     \
                        T xx = x0 + (T)pw * bw + ((T)ix + (T)0.5) * bw / (T)gw;                    \
                        bd_roi_sample_##S(yy, xx, j->H, j->W, s);                                  \
                    }                                                                              \
                }                                                                                  \
                for (int64_t c = 0; c < j->C; c++) {                                               \
                    const T *xp = x + c * j->H * j->W;                                             \
                    T acc = 0;                                                                     \
                    for (int64_t q = 0; q < gh * gw; q++) {                                        \
                        const bd_roi_sample *t = *buf + q;                                         \
                        T v0 = (T)t->w[0] * xp[t->o[0]], v1 = (T)t->w[1] * xp[t->o[1]];            \
                        T v2 = (T)t->w[2] * xp[t->o[2]], v3 = (T)t->w[3] * xp[t->o[3]];            \
                        if (p->mode == 0) acc += v0 + v1 + v2 + v3;                                \
                        else {                                                                     \
                            T m = v0 > v1 ? v0 : v1, m2 = v2 > v3 ? v2 : v3;                       \
                            m = m > m2 ? m : m2;                                                   \
                            acc = q == 0 || m > acc ? m : acc;                                     \
                        }                                                                          \
                    }                                                                              \
                    y[(c * p->out_h + ph) * p->out_w + pw] = p->mode == 0 ? acc / count : acc;     \
                }                                                                                  \
            }                                                                                      \
        return 1;                                                                                  \
    }
DEF_ROI_ALIGN(float, f)
DEF_ROI_ALIGN(double, d)

static void roi_align_range(void *vj, int64_t begin, int64_t end)
{
    roi_job *j = vj;
    bd_roi_sample *buf = NULL;
    int64_t cap = 0;
    for (int64_t r = begin; r < end; r++)
        if (!(j->kind ? roi_align_d(j, r, &buf, &cap) : roi_align_f(j, r, &buf, &cap))) {
            atomic_store(&j->oom, 1);
            break;
        }
    bd_free(buf);
}

/* MaxRoiPool: rois (batch, x1, y1, x2, y2); an empty bin gives 0. */
#define DEF_ROI_POOL(T, S)                                                                         \
    static void roi_pool_##S(const roi_job *j, int64_t r)                                          \
    {                                                                                              \
        const bd_vision_params *p = j->p;                                                          \
        const T *roi = (const T *)j->rois + r * 5;                                                 \
        const T *x = (const T *)j->x + (int64_t)roi[0] * j->C * j->H * j->W;                       \
        T *y = (T *)j->y + r * j->C * p->out_h * p->out_w;                                         \
        const T sc = (T)p->spatial_scale;                                                          \
        int64_t sx = (int64_t)round(roi[1] * sc), sy = (int64_t)round(roi[2] * sc);                \
        int64_t ex = (int64_t)round(roi[3] * sc), ey = (int64_t)round(roi[4] * sc);                \
        for (int64_t ph = 0; ph < p->out_h; ph++)                                                  \
            for (int64_t pw = 0; pw < p->out_w; pw++) {                                            \
                int64_t h0, h1, w0, w1;                                                            \
                bd_roipool_bin(sx, sy, ex, ey, ph, pw, p->out_h, p->out_w, j->H, j->W, &h0, &h1, &w0, &w1); \
                for (int64_t c = 0; c < j->C; c++) {                                               \
                    const T *xp = x + c * j->H * j->W;                                             \
                    T m = h1 <= h0 || w1 <= w0 ? (T)0 : -(T)INFINITY;                              \
                    for (int64_t h = h0; h < h1; h++)                                              \
                        for (int64_t w = w0; w < w1; w++) m = xp[h * j->W + w] > m ? xp[h * j->W + w] : m; \
                    y[(c * p->out_h + ph) * p->out_w + pw] = m;                                    \
                }                                                                                  \
            }                                                                                      \
    }
DEF_ROI_POOL(float, f)
DEF_ROI_POOL(double, d)

static void roi_pool_range(void *vj, int64_t begin, int64_t end)
{
    roi_job *j = vj;
    for (int64_t r = begin; r < end; r++) j->kind ? roi_pool_d(j, r) : roi_pool_f(j, r);
}

static braid_status run_roi(const bd_kernel *k)
{
    braid_status st = BRAID_OK;
    bd_err *e = k->err;
    const bd_tensor *x = &k->in[0], *rois = &k->in[1];
    float *xo = NULL, *ro = NULL, *yo = NULL;
    const int align = k->node->op == BD_OP_RoiAlign;
    const int64_t R = rois->dims[0];
    roi_job j = {.p = k->node->params, .kind = x->dtype == BRAID_DTYPE_DOUBLE, .C = x->dims[1], .H = x->dims[2],
                 .W = x->dims[3], .batch = align ? k->in[2].data : NULL};
    for (int64_t r = 0; r < R; r++) { /* ROIs are checked before any thread reads them */
        const int cols = align ? 4 : 5;
        for (int c = 0; c < cols; c++)
            if (!isfinite(ld(rois->data, rois->dtype, r * cols + c))) {
                st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "ROI %lld has a coordinate that is not a finite number",
                             (long long)r);
                goto fail;
            }
        double bd = align ? (double)j.batch[r] : ld(rois->data, rois->dtype, r * 5);
        if (align && j.p->sampling_ratio == 0) {
            double sc = j.p->spatial_scale, w = (ld(rois->data, rois->dtype, r * 4 + 2) - ld(rois->data, rois->dtype, r * 4)) * sc;
            double h = (ld(rois->data, rois->dtype, r * 4 + 3) - ld(rois->data, rois->dtype, r * 4 + 1)) * sc;
            if (fabs(h) / (double)j.p->out_h > BD_ROI_MAX_GRID || fabs(w) / (double)j.p->out_w > BD_ROI_MAX_GRID) {
                st = BD_FAIL(e, BRAID_ERR_LIMIT, "ROI %lld spans %g x %g pixels: adaptive sampling would take more "
                             "than %d points per bin side", (long long)r, h, w, BD_ROI_MAX_GRID);
                goto fail;
            }
        }
        int64_t b = bd >= 0 && bd < (double)x->dims[0] ? (int64_t)bd : -1;
        if (b < 0 || b >= x->dims[0]) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "ROI %lld has batch index %g; X has %lld images",
                         (long long)r, bd, (long long)x->dims[0]);
            goto fail;
        }
    }
    if (bd_numel(&k->out[0]) == 0) goto fail;
    if (x->dims[2] == 0 || x->dims[3] == 0) {
        st = BD_FAIL(e, BRAID_ERR_SHAPE, "cannot pool ROIs from an empty image (%lld x %lld)", (long long)x->dims[2],
                     (long long)x->dims[3]);
        goto fail;
    }
    if (j.kind) {
        j.x = x->data, j.rois = rois->data, j.y = k->out[0].data;
    } else {
        j.x = as_float(x, &xo);
        j.rois = as_float(rois, &ro);
        j.y = out_float(&k->out[0], &yo);
        BD_CHECK_ALLOC(e, j.x && j.rois && j.y);
    }
    bd_parallel_for(k->threads, R, 1, align ? roi_align_range : roi_pool_range, &j);
    if (atomic_load(&j.oom)) {
        st = BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        goto fail;
    }
    if (yo) store_float(yo, &k->out[0]);
fail:
    bd_free(xo);
    bd_free(ro);
    bd_free(yo);
    return st;
}

/* ---- NonMaxSuppression ----------------------------------------------------- */

typedef struct nms_cand {
    float score;
    int64_t idx;
} nms_cand;

/* Highest score first, the lower index first among equals; NaN scores last. */
static int nms_cmp(const void *va, const void *vb)
{
    const nms_cand *a = va, *b = vb;
    int an = a->score != a->score, bn = b->score != b->score;
    if (an != bn) return an - bn;
    if (!an && a->score != b->score) return a->score > b->score ? -1 : 1;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

static braid_status run_nms(const bd_kernel *k)
{
    braid_status st = BRAID_OK;
    bd_err *e = k->err;
    const bd_vision_params *p = k->node->params;
    const bd_tensor *boxes = &k->in[0], *scores = &k->in[1];
    const int64_t B = boxes->dims[0], N = boxes->dims[1], C = scores->dims[1];
    int64_t max_out = 0, count = 0;
    float iou = 0.0f, thr = 0.0f;
    int has_thr = 0;
    if (k->n_in > 2 && k->in[2].dtype && bd_numel(&k->in[2]) == 1) max_out = *(const int64_t *)k->in[2].data;
    if (k->n_in > 3 && k->in[3].dtype && bd_numel(&k->in[3]) == 1) iou = *(const float *)k->in[3].data;
    if (k->n_in > 4 && k->in[4].dtype && bd_numel(&k->in[4]) == 1)
        thr = *(const float *)k->in[4].data, has_thr = 1;
    if (max_out > N) max_out = N;
    nms_cand *cand = bd_malloc((size_t)(N ? N : 1) * sizeof *cand);
    int64_t *sel = bd_malloc((size_t)(N ? N : 1) * sizeof *sel);
    BD_CHECK_ALLOC(e, cand && sel);
    int64_t *y = k->out[0].data;
    const int64_t cap = k->out[0].dims[0];
    for (int64_t b = 0; b < B && max_out > 0; b++)
        for (int64_t c = 0; c < C; c++) {
            const float *sc = (const float *)scores->data + (b * C + c) * N;
            const float *bx = (const float *)boxes->data + b * N * 4;
            int64_t nc = 0, ns = 0;
            for (int64_t i = 0; i < N; i++)
                if (!has_thr || sc[i] > thr) cand[nc].score = sc[i], cand[nc++].idx = i;
            qsort(cand, (size_t)nc, sizeof *cand, nms_cmp);
            for (int64_t i = 0; i < nc && ns < max_out; i++) {
                int keep = 1;
                for (int64_t s = 0; s < ns && keep; s++)
                    keep = !bd_nms_suppress_f(bx + cand[i].idx * 4, bx + sel[s] * 4, p->center_point_box, iou);
                if (!keep) continue;
                sel[ns++] = cand[i].idx;
                if (count >= cap) {
                    st = BD_FAIL(e, BRAID_ERR_INTERNAL, "NonMaxSuppression selected more than the %lld boxes "
                                 "inference allowed", (long long)cap);
                    goto fail;
                }
                y[3 * count] = b, y[3 * count + 1] = c, y[3 * count + 2] = cand[i].idx;
                count++;
            }
        }
    k->out[0].dims[0] = count;
fail:
    bd_free(cand);
    bd_free(sel);
    return st;
}

braid_status bd_cpu_vision(const bd_kernel *k)
{
    switch (k->node->op) {
    case BD_OP_GridSample: return run_gridsample(k);
    case BD_OP_AffineGrid: return run_affine_grid(k);
    case BD_OP_RoiAlign:
    case BD_OP_MaxRoiPool: return run_roi(k);
    case BD_OP_NonMaxSuppression: return run_nms(k);
    default: return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the vision family", k->node->op_type);
    }
}
