/* resize.c: CPU kernels of the resize op family (Resize, Upsample).
 * Each axis gets a table of taps (input offsets and weights) per output
 * position: nearest 1, linear 2, cubic 4, more with antialias. The common
 * case, resizing the last one or two axes, runs a plain 2-D loop over it.
 * fp32 runs that path; float16 and bfloat16 run it on float32 copies (each
 * output rounded once); double and the integer types interpolate in double
 * (integers rounded half to even and saturated, as onnx's reference); nearest
 * on integer and bool tensors copies elements. */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/parallel.h"
#include "ops/resize.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include <immintrin.h>

typedef struct rs_axis {
    int taps;           /* taps per output position */
    int64_t *idx;       /* (out, taps): input index times the axis's input stride */
    float *w;           /* (out, taps) */
    unsigned char *ext; /* (out): 1 where tf_crop_and_resize extrapolates; NULL if never */
    double *wd;         /* (out, taps): the weights in double, or NULL (fp32 runs) */
} rs_axis;

/* The source coordinate of output position o on axis d. */
static double src_coord(const bd_resize_params *p, const bd_resize_geom *g, int d, int64_t o)
{
    return bd_resize_src_coord(p->coord, g->scale[d], (double)g->in[d], g->length[d], g->out[d], g->roi_start[d],
                               g->roi_end[d], (double)o);
}


/* Weights of the taps for a fractional position ratio in (0, 1]. */
static void tap_weights(const bd_resize_params *p, double scale, double ratio, int n, double *c)
{
    double A = p->cubic_a;
    if (n == 2 && p->mode == BD_RESIZE_LINEAR) { c[0] = 1 - ratio; c[1] = ratio; return; }
    if (n == 4 && p->mode == BD_RESIZE_CUBIC && !(p->antialias && scale < 1.0)) {
        for (int j = 0; j < 4; j++) c[j] = bd_resize_cubic(ratio + 1 - j, A);
        return;
    }
    /* Antialias: the filter stretched by 1 / scale, normalized. */
    double sum = 0;
    int start = 1 - n / 2;
    for (int j = 0; j < n; j++) {
        double t = (start + j - ratio) * scale;
        c[j] = p->mode == BD_RESIZE_LINEAR ? BD_MAX(0.0, 1 - fabs(t)) : bd_resize_cubic(t, A);
        sum += c[j];
    }
    for (int j = 0; j < n; j++) c[j] = sum != 0 ? c[j] / sum : 0;
}

/* Fills the taps of axis d; stride is the axis's input stride (elements). */
static void fill_axis(const bd_resize_params *p, const bd_resize_geom *g, int d, int64_t stride,
                      rs_axis *a)
{
    const int64_t L = g->in[d], O = g->out[d];
    const int n = a->taps, down = g->scale[d] < 1.0;
    double c[64];
    for (int64_t o = 0; o < O; o++) {
        double x = src_coord(p, g, d, o);
        int64_t *idx = a->idx + o * n;
        float *w = a->w + o * n;
        if (a->ext) a->ext[o] = x < 0 || x > (double)(L - 1);
        if (n == 1) {
            int64_t i = bd_resize_nearest_index(p->nearest, x, down);
            idx[0] = BD_MIN(BD_MAX(i, 0), L - 1) * stride;
            w[0] = 1.0f;
            if (a->wd) a->wd[o] = 1.0;
            continue;
        }
        /* The n input positions nearest x, preferring the left on a tie. */
        double xf = floor(x);
        double ratio = x == xf ? 1.0 : x - xf;
        int64_t first = (int64_t)xf - n / 2 + (x == xf ? 0 : 1);
        tap_weights(p, g->scale[d], ratio, n, c);
        double sum = 0;
        for (int j = 0; j < n; j++) {
            int64_t i = first + j;
            if (p->exclude_outside && (i < 0 || i >= L)) c[j] = 0;
            sum += c[j];
        }
        for (int j = 0; j < n; j++) {
            int64_t i = first + j;
            idx[j] = BD_MIN(BD_MAX(i, 0), L - 1) * stride;
            w[j] = (float)(p->exclude_outside && sum != 0 ? c[j] / sum : c[j]);
            if (a->wd) a->wd[o * n + j] = p->exclude_outside && sum != 0 ? c[j] / sum : c[j];
        }
    }
    /* Where every position has a single tap of weight 1, keep just that tap. */
    for (int64_t o = 0; o < O && n > 1; o++) {
        int ones = 0, zeros = 0;
        for (int j = 0; j < n; j++) ones += a->w[o * n + j] == 1.0f, zeros += a->w[o * n + j] == 0.0f;
        if (ones != 1 || zeros != n - 1) return;
    }
    for (int64_t o = 0; o < O && n > 1; o++) {
        int64_t keep = 0;
        for (int j = 0; j < n; j++)
            if (a->w[o * n + j] == 1.0f) keep = a->idx[o * n + j];
        a->idx[o] = keep;
        a->w[o] = 1.0f;
        if (a->wd) a->wd[o] = 1.0;
    }
    a->taps = 1;
}

/* Bilinear blends of runs of n floats (the channels of NHWC data): y =
 * w0 (a r00 + b r01) + w1 (a r10 + b r11), each product and sum rounded as
 * resize_2d's scalar expression (no fused multiply-add), so the bits are
 * the NCHW path's. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#define RS_NOFMA
#else
#define RS_NOFMA __attribute__((optimize("fp-contract=off")))
#endif
#define RS_BILERP(SFX, TGT, VW, V, LD, ST, MUL, ADD, SET1)                                                   \
    __attribute__((TGT)) RS_NOFMA static void bilerp_##SFX(float *y, const float *r00, const float *r01,       \
                                                            const float *r10, const float *r11, int64_t n,       \
                                                            float w0, float w1, float a, float b)                \
    {                                                                                                         \
        const V va = SET1(a), vb = SET1(b), v0 = SET1(w0), v1 = SET1(w1);                                     \
        int64_t i = 0;                                                                                        \
        for (; i + VW <= n; i += VW) {                                                                        \
            V s0 = ADD(MUL(va, LD(r00 + i)), MUL(vb, LD(r01 + i)));                                           \
            V s1 = ADD(MUL(va, LD(r10 + i)), MUL(vb, LD(r11 + i)));                                           \
            ST(y + i, ADD(MUL(v0, s0), MUL(v1, s1)));                                                         \
        }                                                                                                     \
        for (; i < n; i++) y[i] = w0 * (a * r00[i] + b * r01[i]) + w1 * (a * r10[i] + b * r11[i]);            \
    }
RS_BILERP(512, target("avx512f"), 16, __m512, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_mul_ps, _mm512_add_ps,
          _mm512_set1_ps)
RS_BILERP(256, target("avx2"), 8, __m256, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_mul_ps, _mm256_add_ps,
          _mm256_set1_ps)
#undef RS_BILERP

RS_NOFMA static void bilerp_c(float *y, const float *r00, const float *r01, const float *r10,
                                               const float *r11, int64_t n, float w0, float w1, float a, float b)
{
    for (int64_t i = 0; i < n; i++) y[i] = w0 * (a * r00[i] + b * r01[i]) + w1 * (a * r10[i] + b * r11[i]);
}

/* y[2 i] = y[2 i + 1] = x[i], i in [0, n): nearest 2x along a row. */
__attribute__((target("avx512f"))) static void dup2_512(float *y, const float *x, int64_t n)
{
    const __m512i lo = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
    const __m512i hi = _mm512_set_epi32(15, 15, 14, 14, 13, 13, 12, 12, 11, 11, 10, 10, 9, 9, 8, 8);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        _mm512_storeu_ps(y + 2 * i, _mm512_permutexvar_ps(lo, v));
        _mm512_storeu_ps(y + 2 * i + 16, _mm512_permutexvar_ps(hi, v));
    }
    for (; i < n; i++) y[2 * i] = y[2 * i + 1] = x[i];
}

static void dup2_c(float *y, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) y[2 * i] = y[2 * i + 1] = x[i];
}

typedef void bilerp_fn(float *y, const float *r00, const float *r01, const float *r10, const float *r11, int64_t n,
                       float w0, float w1, float a, float b);

/* Planes of (OH, OW) from (IH, IW) with the tables of two axes, each
 * element a run of `inner` contiguous floats (1 for NCHW; the channels, and
 * any other trailing axes kept as they are, for NHWC). Rows (plane, oy) over
 * the threads; each output computed as the scalar path computes it. */
typedef struct rs2_job {
    const float *x;
    float *y;
    int64_t in_plane, OH, OW, inner;
    const rs_axis *ah, *aw;
    float ev;
    bilerp_fn *bilerp;
    void (*dup2)(float *y, const float *x, int64_t n); /* NULL, or: every input column twice in turn */
} rs2_job;

static void rs2_row1(const rs2_job *j, const float *xp, float *yr, int64_t oy)
{
    const rs_axis *ah = j->ah, *aw = j->aw;
    const int th = ah->taps, tw = aw->taps;
    const int64_t OW = j->OW;
    const int64_t *iy = ah->idx + oy * th;
    const float *wy = ah->w + oy * th;
    if (th == 1 && tw == 1 && j->dup2) {
        j->dup2(yr, xp + iy[0], OW / 2);
    } else if (th == 1 && tw == 1) {
        const float *row = xp + iy[0];
        for (int64_t ox = 0; ox < OW; ox++) yr[ox] = row[aw->idx[ox]];
    } else if (th == 2 && tw == 2) { /* bilinear */
        const float *r0 = xp + iy[0], *r1 = xp + iy[1];
        const float w0 = wy[0], w1 = wy[1];
        const int64_t *ix = aw->idx;
        const float *wx = aw->w;
        for (int64_t ox = 0; ox < OW; ox++) {
            const int64_t i0 = ix[2 * ox], i1 = ix[2 * ox + 1];
            const float a = wx[2 * ox], b = wx[2 * ox + 1];
            yr[ox] = w0 * (a * r0[i0] + b * r0[i1]) + w1 * (a * r1[i0] + b * r1[i1]);
        }
    } else {
        for (int64_t ox = 0; ox < OW; ox++) {
            const int64_t *ix = aw->idx + ox * tw;
            const float *wx = aw->w + ox * tw;
            float acc = 0;
            for (int a = 0; a < th; a++) {
                const float *row = xp + iy[a];
                float s = 0;
                for (int b = 0; b < tw; b++) s += wx[b] * row[ix[b]];
                acc += wy[a] * s;
            }
            yr[ox] = acc;
        }
    }
}

/* The same row with runs of n = inner floats: copies (nearest), bilerp, or
 * the general taps run by run. */
static void rs2_row_runs(const rs2_job *j, const float *xp, float *yr, int64_t oy)
{
    const rs_axis *ah = j->ah, *aw = j->aw;
    const int th = ah->taps, tw = aw->taps;
    const int64_t OW = j->OW, n = j->inner;
    const int64_t *iy = ah->idx + oy * th;
    const float *wy = ah->w + oy * th;
    for (int64_t ox = 0; ox < OW; ox++) {
        float *yo = yr + ox * n;
        const int64_t *ix = aw->idx + ox * tw;
        const float *wx = aw->w + ox * tw;
        if (th == 1 && tw == 1) {
            memcpy(yo, xp + iy[0] + ix[0], (size_t)n * sizeof *yo);
        } else if (th == 2 && tw == 2) {
            const float *r0 = xp + iy[0], *r1 = xp + iy[1];
            j->bilerp(yo, r0 + ix[0], r0 + ix[1], r1 + ix[0], r1 + ix[1], n, wy[0], wy[1], wx[0], wx[1]);
        } else { /* blocks of channels, each sum in the scalar path's order */
            for (int64_t c0 = 0; c0 < n; c0 += 64) {
                const int64_t nc = BD_MIN((int64_t)64, n - c0);
                float acc[64] = {0}, sum[64];
                for (int a = 0; a < th; a++) {
                    for (int64_t c = 0; c < nc; c++) sum[c] = 0;
                    for (int b = 0; b < tw; b++) {
                        const float *src = xp + iy[a] + ix[b] + c0, w = wx[b];
                        for (int64_t c = 0; c < nc; c++) sum[c] += w * src[c];
                    }
                    for (int64_t c = 0; c < nc; c++) acc[c] += wy[a] * sum[c];
                }
                memcpy(yo + c0, acc, (size_t)nc * sizeof *acc);
            }
        }
    }
}

static void rs2_rows(void *ctx, int64_t begin, int64_t end)
{
    const rs2_job *j = ctx;
    const rs_axis *ah = j->ah, *aw = j->aw;
    const int64_t OH = j->OH, rowlen = j->OW * j->inner;
    for (int64_t row = begin; row < end; row++) {
        const int64_t pl = row / OH, oy = row - pl * OH;
        const float *xp = j->x + pl * j->in_plane;
        float *yr = j->y + row * rowlen;
        if (ah->ext && ah->ext[oy]) {
            for (int64_t i = 0; i < rowlen; i++) yr[i] = j->ev;
            continue;
        }
        /* nearest: a row whose source row is the one before's is that row again */
        if (row > begin && oy > 0 && ah->taps == 1 && aw->taps == 1 && !(ah->ext && ah->ext[oy - 1]) &&
            ah->idx[oy] == ah->idx[oy - 1]) {
            memcpy(yr, yr - rowlen, (size_t)rowlen * sizeof *yr);
            continue;
        }
        if (j->inner == 1) rs2_row1(j, xp, yr, oy);
        else rs2_row_runs(j, xp, yr, oy);
        if (aw->ext)
            for (int64_t ox = 0; ox < j->OW; ox++)
                if (aw->ext[ox])
                    for (int64_t c = 0; c < j->inner; c++) yr[ox * j->inner + c] = j->ev;
    }
}

static void resize_2d(int threads, const float *x, float *y, int64_t planes, int64_t in_plane, const rs_axis *ah,
                      int64_t OH, const rs_axis *aw, int64_t OW, int64_t inner, float ev)
{
    const int lvl = bd_cpu_vec_level();
    rs2_job j = {x, y, in_plane, OH, OW, inner, ah, aw, ev, lvl == 2 ? bilerp_512 : lvl == 1 ? bilerp_256 : bilerp_c};
    int dup = inner == 1 && aw->taps == 1 && !aw->ext && OW % 2 == 0;
    for (int64_t ox = 0; ox < OW && dup; ox++) dup = aw->idx[ox] == ox / 2;
    if (dup) j.dup2 = lvl == 2 ? dup2_512 : dup2_c;
    const int64_t work = OW * inner * ah->taps * aw->taps + 1;
    bd_parallel_for(threads, planes * OH, BD_MAX((int64_t)1, 32768 / work), rs2_rows, &j);
}

/* Any number of axes: an odometer over the output and over the taps. */
static void resize_nd(const float *x, float *y, int64_t planes, int64_t in_plane, int m,
                      const rs_axis *ax, const int64_t *O, float ev)
{
    int64_t out_plane = 1;
    for (int i = 0; i < m; i++) out_plane *= O[i];
    int64_t oc[BD_MAX_RANK];
    int tc[BD_MAX_RANK];
    for (int64_t pl = 0; pl < planes; pl++) {
        const float *xp = x + pl * in_plane;
        float *yp = y + pl * out_plane;
        memset(oc, 0, sizeof oc);
        for (int64_t e = 0; e < out_plane; e++) {
            int ext = 0;
            for (int i = 0; i < m; i++) ext |= ax[i].ext && ax[i].ext[oc[i]];
            float acc = 0;
            if (!ext) {
                memset(tc, 0, sizeof tc);
                for (;;) {
                    int64_t off = 0;
                    float w = 1;
                    for (int i = 0; i < m; i++) {
                        off += ax[i].idx[oc[i] * ax[i].taps + tc[i]];
                        w *= ax[i].w[oc[i] * ax[i].taps + tc[i]];
                    }
                    acc += w * xp[off];
                    int i = m - 1;
                    while (i >= 0 && ++tc[i] == ax[i].taps) tc[i--] = 0;
                    if (i < 0) break;
                }
            }
            yp[e] = ext ? ev : acc;
            for (int i = m - 1; i >= 0 && ++oc[i] == O[i]; i--) oc[i] = 0;
        }
    }
}

/* Double and integer types: the same taps with double weights over a double
 * copy of the input, evaluated axis by axis as onnx's reference does (the
 * innermost axes' interpolation first for each tap of the outer one), so that
 * integer results round as its do at ties; integers are then rounded half to
 * even and saturated. */
static double interp_d(const double *x, int64_t base, int level, int m, const rs_axis *ax, const int64_t *oc)
{
    if (level == m) return x[base];
    const rs_axis *a = &ax[level];
    double acc = 0;
    for (int t = 0; t < a->taps; t++)
        acc += a->wd[oc[level] * a->taps + t] * interp_d(x, base + a->idx[oc[level] * a->taps + t], level + 1, m, ax, oc);
    return acc;
}

static void resize_nd_d(const double *x, bd_tensor *yt, int64_t planes, int64_t in_plane, int m, const rs_axis *ax,
                        const int64_t *O, double ev)
{
    int64_t out_plane = 1;
    for (int i = 0; i < m; i++) out_plane *= O[i];
    if (m == 2 && !ax[0].ext && !ax[1].ext) { /* the common case: the two last axes */
        const rs_axis *ah = &ax[0], *aw = &ax[1];
        for (int64_t pl = 0; pl < planes; pl++)
            for (int64_t oy = 0; oy < O[0]; oy++)
                for (int64_t ox = 0; ox < O[1]; ox++) {
                    double acc = 0;
                    for (int a = 0; a < ah->taps; a++) {
                        const double *row = x + pl * in_plane + ah->idx[oy * ah->taps + a];
                        double s = 0;
                        for (int b = 0; b < aw->taps; b++) s += aw->wd[ox * aw->taps + b] * row[aw->idx[ox * aw->taps + b]];
                        acc += ah->wd[oy * ah->taps + a] * s;
                    }
                    bd_resize_store(yt->data, yt->dtype, (pl * O[0] + oy) * O[1] + ox, acc);
                }
        return;
    }
    int64_t oc[BD_MAX_RANK];
    for (int64_t pl = 0; pl < planes; pl++) {
        memset(oc, 0, sizeof oc);
        for (int64_t e = 0; e < out_plane; e++) {
            int ext = 0;
            for (int i = 0; i < m; i++) ext |= ax[i].ext && ax[i].ext[oc[i]];
            double v = ext ? ev : interp_d(x, pl * in_plane, 0, m, ax, oc);
            bd_resize_store(yt->data, yt->dtype, pl * out_plane + e, v);
            for (int i = m - 1; i >= 0 && ++oc[i] == O[i]; i--) oc[i] = 0;
        }
    }
}

/* Nearest on any dtype: each output element copies its one source element
 * (tf_crop_and_resize's extrapolated ones take the extrapolation value). */
static void resize_gather(const bd_tensor *xt, bd_tensor *yt, int64_t planes, int64_t in_plane, int m,
                          const rs_axis *ax, const int64_t *O, double ev)
{
    const size_t es = bd_dtype_size(xt->dtype);
    int64_t out_plane = 1;
    for (int i = 0; i < m; i++) out_plane *= O[i];
    int64_t oc[BD_MAX_RANK];
    for (int64_t pl = 0; pl < planes; pl++) {
        memset(oc, 0, sizeof oc);
        for (int64_t e = 0; e < out_plane; e++) {
            int ext = 0;
            int64_t off = 0;
            for (int i = 0; i < m; i++) {
                ext |= ax[i].ext && ax[i].ext[oc[i]];
                off += ax[i].idx[oc[i]];
            }
            int64_t o = pl * out_plane + e;
            if (ext) bd_resize_store(yt->data, yt->dtype, o, ev);
            else memcpy((char *)yt->data + (size_t)o * es, (const char *)xt->data + (size_t)(pl * in_plane + off) * es, es);
            for (int i = m - 1; i >= 0 && ++oc[i] == O[i]; i--) oc[i] = 0;
        }
    }
}

/* kind 0: fp32; 1: double taps (double and integer types); 2: nearest copies. */
static braid_status resize_run(const bd_kernel *k, int kind)
{
    braid_status st = BRAID_OK;
    const bd_node *n = k->node;
    const bd_resize_params *p = n->params;
    bd_err *e = k->err;
    void *buf = NULL;
    bd_resize_geom g;
    BD_TRY(bd_resize_geometry(n, k->in, k->n_in, &g, e));
    const int r = g.rank;
    for (int d = 0; d < r; d++) {
        if (g.out[d] != k->out[0].dims[d]) {
            st = BD_FAIL(e, BRAID_ERR_INTERNAL, "output dim %d is %lld, the scales give %lld", d,
                         (long long)k->out[0].dims[d], (long long)g.out[d]);
            goto fail;
        }
        if (g.in[d] == 0 && g.out[d] > 0) {
            st = BD_FAIL(e, BRAID_ERR_SHAPE, "cannot resize an empty axis %d to %lld", d,
                         (long long)g.out[d]);
            goto fail;
        }
    }
    int64_t numel = bd_numel(&k->out[0]);
    if (numel == 0) return BRAID_OK;
    const int tf = p->coord == BD_COORD_TF_CROP_AND_RESIZE;
    /* As onnxruntime: an unchanged shape is a copy, whatever the scales say
     * (tf_crop_and_resize excepted: its roi still crops). */
    int same = !tf;
    for (int d = 0; d < r; d++) same &= g.out[d] == g.in[d];
    if (same) {
        memcpy(k->out[0].data, k->in[0].data, (size_t)numel * bd_dtype_size(k->in[0].dtype));
        return BRAID_OK;
    }
    /* Axes that keep their size, scale and roi are copied as they are. */
    int ident[BD_MAX_RANK], taps[BD_MAX_RANK];
    size_t bytes = 0;
    for (int d = 0; d < r; d++) {
        ident[d] = g.out[d] == g.in[d] && g.scale[d] == 1.0 &&
                   (!tf || (g.roi_start[d] == 0.0 && g.roi_end[d] == 1.0));
        taps[d] = ident[d] ? 1 : bd_resize_taps(p, g.scale[d]);
        if (taps[d] > 64) {
            st = BD_FAIL(e, BRAID_ERR_UNSUPPORTED,
                         "antialiasing with scale %g needs %d taps; at most 64 are supported",
                         g.scale[d], taps[d]);
            goto fail;
        }
        bytes += (size_t)g.out[d] * taps[d] * (sizeof(int64_t) + sizeof(float) + (kind == 1 ? sizeof(double) : 0)) +
                 (size_t)g.out[d];
    }
    buf = bd_malloc(bytes + 8);
    BD_CHECK_ALLOC(e, buf);
    rs_axis ax[BD_MAX_RANK];
    int64_t *qi = buf;
    for (int d = 0; d < r; d++) { ax[d].idx = qi; qi += g.out[d] * taps[d]; }
    double *qd = (double *)qi;
    for (int d = 0; d < r; d++) {
        ax[d].wd = kind == 1 ? qd : NULL;
        if (kind == 1) qd += g.out[d] * taps[d];
    }
    float *qf = (float *)qd;
    for (int d = 0; d < r; d++) { ax[d].w = qf; qf += g.out[d] * taps[d]; }
    unsigned char *qc = (unsigned char *)qf;
    int64_t stride = 1;
    for (int d = r - 1; d >= 0; d--) {
        ax[d].taps = taps[d];
        ax[d].ext = tf && !ident[d] ? qc : NULL;
        qc += g.out[d];
        if (ident[d])
            for (int64_t o = 0; o < g.out[d]; o++) {
                ax[d].idx[o] = o * stride, ax[d].w[o] = 1.0f;
                if (ax[d].wd) ax[d].wd[o] = 1.0;
            }
        else
            fill_axis(p, &g, d, stride, &ax[d]);
        stride *= g.in[d];
    }
    /* Leading identity axes become planes. */
    int lead = 0;
    int64_t planes = 1;
    while (lead < r && ident[lead]) planes *= g.in[lead++];
    int64_t in_plane = 1;
    for (int d = lead; d < r; d++) in_plane *= g.in[d];
    const float ev = p->extrapolation;
    int m = r - lead;
    if (kind == 1) {
        int64_t ni = bd_numel(&k->in[0]);
        double *xd = k->in[0].dtype == BRAID_DTYPE_DOUBLE ? k->in[0].data : bd_malloc((size_t)ni * sizeof *xd + 1);
        BD_CHECK_ALLOC(e, xd);
        if (xd != k->in[0].data)
            for (int64_t i = 0; i < ni; i++) xd[i] = bd_get_f64(&k->in[0], i);
        resize_nd_d(xd, &k->out[0], planes, in_plane, m, &ax[lead], &g.out[lead], ev);
        if (xd != k->in[0].data) bd_free(xd);
        goto fail;
    }
    if (kind == 2) {
        resize_gather(&k->in[0], &k->out[0], planes, in_plane, m, &ax[lead], &g.out[lead], ev);
        goto fail;
    }
    const float *x = k->in[0].data;
    float *y = k->out[0].data;
    /* Trailing axes kept as they are (NHWC's channels) become runs. */
    int trail = 0;
    int64_t inner = 1;
    while (trail < m && ident[r - 1 - trail]) inner *= g.in[r - 1 - trail++];
    if (m == 0) {
        memcpy(y, x, (size_t)numel * sizeof *y);
    } else if (m - trail <= 2) {
        const int e = r - trail; /* the axes [lead, e) resize: one or two */
        int64_t zero = 0;
        float one = 1.0f;
        rs_axis unit = {1, &zero, &one, NULL, NULL};
        const rs_axis *ah = m - trail == 2 ? &ax[e - 2] : &unit;
        int64_t OH = m - trail == 2 ? g.out[e - 2] : 1;
        resize_2d(k->threads, x, y, planes, in_plane, ah, OH, &ax[e - 1], g.out[e - 1], inner, ev);
    } else {
        resize_nd(x, y, planes, in_plane, m, &ax[lead], &g.out[lead], ev);
    }
fail:
    bd_free(buf);
    return st;
}

braid_status bd_cpu_resize(const bd_kernel *k)
{
    const bd_node *n = k->node;
    const bd_resize_params *p = n->params;
    const int dt = k->in[0].dtype;
    if (n->op != BD_OP_Resize && n->op != BD_OP_Upsample)
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the resize family", n->op_type);
    if (dt == BRAID_DTYPE_FLOAT) return resize_run(k, 0);
    if (dt == BRAID_DTYPE_FLOAT16 || dt == BRAID_DTYPE_BFLOAT16) { /* the fp32 path on float32 copies */
        braid_status st = BRAID_OK;
        int64_t ni = bd_numel(&k->in[0]), no = bd_numel(&k->out[0]);
        float *xf = bd_malloc((size_t)(ni ? ni : 1) * sizeof *xf), *yf = bd_malloc((size_t)(no ? no : 1) * sizeof *yf);
        bd_tensor in[4], out = k->out[0];
        bd_kernel k2 = *k;
        if (!xf || !yf) {
            st = BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
            goto done;
        }
        for (int i = 0; i < k->n_in && i < 4; i++) in[i] = k->in[i];
        for (int64_t i = 0; i < ni; i++) xf[i] = (float)bd_get_f64(&k->in[0], i);
        in[0].dtype = out.dtype = BRAID_DTYPE_FLOAT;
        in[0].data = xf, out.data = yf;
        k2.in = in, k2.out = &out;
        k2.n_in = k->n_in < 4 ? k->n_in : 4;
        if ((st = resize_run(&k2, 0)) == BRAID_OK)
            for (int64_t i = 0; i < no; i++) bd_resize_store(k->out[0].data, dt, i, yf[i]);
    done:
        bd_free(xf);
        bd_free(yf);
        return st;
    }
    if (p->mode == BD_RESIZE_NEAREST && dt != BRAID_DTYPE_DOUBLE) return resize_run(k, 2);
    return resize_run(k, 1);
}
