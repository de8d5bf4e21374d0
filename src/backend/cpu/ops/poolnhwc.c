/* poolnhwc.c: MaxPool, AveragePool and the global pools on NHWC data (see
 * convnhwc.h): channels in the vector lanes (AVX-512F, AVX2 or scalar,
 * chosen at run time), each output row (n, oh) by one thread.
 *
 * The taps meet in the order pool.c's NCHW kernels use, so the results are
 * bitwise theirs: a window's rows are folded first into a row of column
 * values (one contiguous pass over W x C floats per input row), then each
 * output folds its columns from there. MaxPool folds with
 * m(acc, v) = v > acc ? v : acc everywhere (a NaN met first stays, a later
 * one is skipped); AveragePool takes that separable order for the run of
 * outputs whose windows lie wholly inside the row (when it has 4 or more, as
 * pool.c), and a row-major sum from 0 for the others (bd_pool_sum's order).
 * The global pools keep pool.c's eight running sums (spatial index mod 8). */
#include <float.h>
#include <stdatomic.h>
#include <string.h>

#include <immintrin.h>

#include "backend/cpu/parallel.h"
#include "convnhwc.h"
#include "ops/pool.h"

/* ---- vector folds over n floats, one per ISA level ---------------------------- */

/* dst[i] = fold over taps t in [0, nt) of src[t step + i] (max: m(acc, v);
 * sum: acc + v), then divided by div when div > 0. */
typedef void fold_fn(float *dst, const float *src, int64_t nt, int64_t step, int64_t n, int max, float div);
/* dst[i] = (0 + the taps (r, c) in row-major order, src[r rs + c cs + i]) / div:
 * bd_pool_sum's order (div > 0). */
typedef void sum0_fn(float *dst, const float *src, int64_t nr, int64_t rs, int64_t nc, int64_t cs, int64_t n,
                     float div);
/* acc[i] = max ? m(acc[i], src[i]) : acc[i] + src[i]. */
typedef void acc_fn(float *acc, const float *src, int64_t n, int max);

static inline float s_max(float acc, float v) { return v > acc ? v : acc; }

static void fold_tail(float *dst, const float *src, int64_t nt, int64_t step, int64_t i, int64_t n, int max,
                      float div)
{
    for (; i < n; i++) {
        float a = src[i];
        for (int64_t t = 1; t < nt; t++) a = max ? s_max(a, src[t * step + i]) : a + src[t * step + i];
        dst[i] = div > 0 ? a / div : a;
    }
}

static void sum0_tail(float *dst, const float *src, int64_t nr, int64_t rs, int64_t nc, int64_t cs, int64_t i,
                      int64_t n, float div)
{
    for (; i < n; i++) {
        float a = 0;
        for (int64_t r = 0; r < nr; r++)
            for (int64_t c = 0; c < nc; c++) a += src[r * rs + c * cs + i];
        dst[i] = a / div;
    }
}

static void acc_tail(float *acc, const float *src, int64_t i, int64_t n, int max)
{
    for (; i < n; i++) acc[i] = max ? s_max(acc[i], src[i]) : acc[i] + src[i];
}

/* The three folds for one vector type: VW lanes, V its type, then load,
 * store, max(v, acc) (acc when v is not greater), add, div, zero, splat. */
#define POOL_KERNELS(SFX, TGT, VW, V, LD, ST, MAX, ADD, DIV, ZERO, SET1)                                    \
    TGT static void fold_##SFX(float *dst, const float *src, int64_t nt, int64_t step, int64_t n, int max,       \
                               float div)                                                                     \
    {                                                                                                         \
        int64_t i = 0;                                                                                        \
        const V vd = SET1(div);                                                                               \
        for (; i + 2 * VW <= n; i += 2 * VW) {                                                                \
            V a = LD(src + i), b = LD(src + i + VW);                                                          \
            for (int64_t t = 1; t < nt; t++) {                                                                \
                const float *s = src + t * step + i;                                                          \
                if (max) a = MAX(LD(s), a), b = MAX(LD(s + VW), b);                                           \
                else a = ADD(a, LD(s)), b = ADD(b, LD(s + VW));                                               \
            }                                                                                                 \
            if (div > 0) a = DIV(a, vd), b = DIV(b, vd);                                                      \
            ST(dst + i, a), ST(dst + i + VW, b);                                                              \
        }                                                                                                     \
        for (; i + VW <= n; i += VW) {                                                                        \
            V a = LD(src + i);                                                                                \
            for (int64_t t = 1; t < nt; t++)                                                                  \
                a = max ? MAX(LD(src + t * step + i), a) : ADD(a, LD(src + t * step + i));                    \
            if (div > 0) a = DIV(a, vd);                                                                      \
            ST(dst + i, a);                                                                                   \
        }                                                                                                     \
        fold_tail(dst, src, nt, step, i, n, max, div);                                                        \
    }                                                                                                         \
    TGT static void sum0_##SFX(float *dst, const float *src, int64_t nr, int64_t rs, int64_t nc, int64_t cs,    \
                               int64_t n, float div)                                                          \
    {                                                                                                         \
        int64_t i = 0;                                                                                        \
        const V vd = SET1(div);                                                                               \
        for (; i + VW <= n; i += VW) {                                                                        \
            V a = ZERO();                                                                                     \
            for (int64_t r = 0; r < nr; r++)                                                                  \
                for (int64_t c = 0; c < nc; c++) a = ADD(a, LD(src + r * rs + c * cs + i));                   \
            ST(dst + i, DIV(a, vd));                                                                          \
        }                                                                                                     \
        sum0_tail(dst, src, nr, rs, nc, cs, i, n, div);                                                       \
    }                                                                                                         \
    TGT static void acc_##SFX(float *acc, const float *src, int64_t n, int max)                              \
    {                                                                                                         \
        int64_t i = 0;                                                                                        \
        for (; i + VW <= n; i += VW)                                                                          \
            ST(acc + i, max ? MAX(LD(src + i), LD(acc + i)) : ADD(LD(acc + i), LD(src + i)));                 \
        acc_tail(acc, src, i, n, max);                                                                        \
    }

#define T512 __attribute__((target("avx512f")))
#define T256 __attribute__((target("avx2")))
POOL_KERNELS(512, T512, 16, __m512, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_max_ps, _mm512_add_ps, _mm512_div_ps,
             _mm512_setzero_ps, _mm512_set1_ps)
POOL_KERNELS(256, T256, 8, __m256, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_max_ps, _mm256_add_ps, _mm256_div_ps,
             _mm256_setzero_ps, _mm256_set1_ps)
#undef POOL_KERNELS

static void fold_c(float *dst, const float *src, int64_t nt, int64_t step, int64_t n, int max, float div)
{
    fold_tail(dst, src, nt, step, 0, n, max, div);
}
static void sum0_c(float *dst, const float *src, int64_t nr, int64_t rs, int64_t nc, int64_t cs, int64_t n, float div)
{
    sum0_tail(dst, src, nr, rs, nc, cs, 0, n, div);
}
static void acc_c(float *acc, const float *src, int64_t n, int max) { acc_tail(acc, src, 0, n, max); }

typedef struct pool_isa {
    fold_fn *fold;
    sum0_fn *sum0;
    acc_fn *acc;
} pool_isa;

static pool_isa isa_pick(void)
{
    int l = bd_cpu_vec_level();
    if (l == 2) return (pool_isa){fold_512, sum0_512, acc_512};
    if (l == 1) return (pool_isa){fold_256, sum0_256, acc_256};
    return (pool_isa){fold_c, sum0_c, acc_c};
}

/* ---- the window pools ---------------------------------------------------------- */

typedef struct win_job {
    pool_isa isa;
    bd_pool_axis th, tw;
    const float *x;
    float *y, *tmp;     /* tmp: (workers, W * C) column values of a row */
    int64_t H, W, C, OH, OW, KH, KW, dh, dw;
    int64_t c0, c1;     /* the input columns some window reads */
    int64_t lo, hi;     /* AveragePool: outputs [lo, hi) of a row read whole windows, separably */
    int max, cip;
} win_job;

static void win_rows(void *ctx, int64_t worker, int64_t begin, int64_t end)
{
    const win_job *j = ctx;
    const int64_t W = j->W, C = j->C, OH = j->OH, OW = j->OW, dw = j->dw;
    float *tmp = j->tmp + worker * W * C;
    for (int64_t row = begin; row < end; row++) {
        const int64_t n = row / OH, oh = row - n * OH;
        const int64_t fh = j->th.first[oh], ch = j->th.count[oh];
        const float *xp = j->x + (n * j->H + fh) * W * C; /* the window's first row */
        float *yr = j->y + row * OW * C;
        if (!ch || j->c1 <= j->c0) { /* no input row (or column) in the windows */
            const float v = j->max ? -FLT_MAX : 0.0f;
            for (int64_t i = 0; i < OW * C; i++) yr[i] = v;
            continue;
        }
        const int sep = j->max || j->hi > j->lo;
        if (sep) /* the rows' fold per column */
            j->isa.fold(tmp + j->c0 * C, xp + j->c0 * C, ch, j->dh * W * C, (j->c1 - j->c0) * C, j->max, 0);
        for (int64_t ow = 0; ow < OW; ow++) {
            const int64_t fw = j->tw.first[ow], cw = j->tw.count[ow];
            float *yo = yr + ow * C;
            if (j->max) {
                if (!cw)
                    for (int64_t c = 0; c < C; c++) yo[c] = -FLT_MAX;
                else j->isa.fold(yo, tmp + fw * C, cw, dw * C, C, 1, 0);
                continue;
            }
            const int64_t div = j->cip ? j->th.npad[oh] * j->tw.npad[ow] : ch * cw;
            if (div <= 0) {
                for (int64_t c = 0; c < C; c++) yo[c] = 0.0f;
            } else if (ow >= j->lo && ow < j->hi) {
                j->isa.fold(yo, tmp + fw * C, cw, dw * C, C, 0, (float)div);
            } else if (!cw) {
                for (int64_t c = 0; c < C; c++) yo[c] = 0.0f;
            } else {
                j->isa.sum0(yo, xp + fw * C, ch, j->dh * W * C, cw, dw * C, C, (float)div);
            }
        }
    }
}

static braid_status window_pool(const bd_kernel *k)
{
    braid_status st = BRAID_OK;
    const bd_node *node = k->node;
    const bd_pool_params *p = node->params;
    bd_err *e = k->err;
    int64_t *buf = NULL;
    win_job j = {.isa = isa_pick(), .x = k->in[0].data, .y = k->out[0].data};
    const int64_t N = k->in[0].dims[0];
    j.H = k->in[0].dims[1], j.W = k->in[0].dims[2], j.C = k->in[0].dims[3];
    bd_pool_geom g;
    BD_TRY(bd_pool_geometry(node, &k->in[0], &g, e));
    if (g.nsp != 2) return BD_FAIL(e, BRAID_ERR_INTERNAL, "an NHWC %s must be 2-D", node->op_type);
    j.OH = g.out[0], j.OW = g.out[1];
    if (k->out[0].rank != 4 || k->out[0].dims[1] != j.OH || k->out[0].dims[2] != j.OW || k->out[0].dims[3] != j.C)
        return BD_FAIL(e, BRAID_ERR_INTERNAL, "the NHWC %s output is not (N, %lld, %lld, %lld)", node->op_type,
                       (long long)j.OH, (long long)j.OW, (long long)j.C);
    if (N * j.OH * j.OW * j.C == 0) return BRAID_OK;
    j.KH = p->kernel[0], j.KW = p->kernel[1], j.dh = p->dilations[0], j.dw = p->dilations[1];
    j.max = node->op == BD_OP_MaxPool, j.cip = p->count_include_pad;
    buf = bd_malloc((size_t)(j.OH + j.OW) * 3 * sizeof *buf);
    BD_CHECK_ALLOC(e, buf);
    j.th = (bd_pool_axis){buf, buf + j.OH, buf + 2 * j.OH};
    j.tw = (bd_pool_axis){buf + 3 * j.OH, buf + 3 * j.OH + j.OW, buf + 3 * j.OH + 2 * j.OW};
    bd_pool_fill_axis(&j.th, j.OH, j.H, j.KH, p->strides[0], j.dh, g.pad_begin[0], g.pad_end[0]);
    bd_pool_fill_axis(&j.tw, j.OW, j.W, j.KW, p->strides[1], j.dw, g.pad_begin[1], g.pad_end[1]);
    j.c0 = j.W, j.c1 = 0;
    for (int64_t ow = 0; ow < j.OW; ow++)
        if (j.tw.count[ow] > 0) {
            j.c0 = BD_MIN(j.c0, j.tw.first[ow]);
            j.c1 = BD_MAX(j.c1, j.tw.first[ow] + (j.tw.count[ow] - 1) * j.dw + 1);
        }
    /* AveragePool's separable run, as pool.c picks it: from the first whole window on */
    j.lo = 0;
    while (j.lo < j.OW && j.tw.count[j.lo] != j.KW) j.lo++;
    for (j.hi = j.lo; j.hi < j.OW && j.tw.count[j.hi] == j.KW;) j.hi++;
    if (j.hi - j.lo < 4) j.lo = j.hi = j.OW;
    const int workers = BD_MAX(1, k->threads);
    j.tmp = bd_malloc((size_t)(workers * j.W * j.C) * sizeof *j.tmp + 1);
    BD_CHECK_ALLOC(e, j.tmp);
    const int64_t work = j.OW * j.C * (j.KH + j.KW) + j.W * j.C + 1; /* floats touched per output row */
    bd_parallel_claim(workers, N * j.OH, BD_MAX((int64_t)1, 32768 / work), win_rows, &j);
    bd_free(j.tmp);
fail:
    bd_free(buf);
    return st;
}

/* ---- the global pools ----------------------------------------------------------- */

enum { GP_CB = 256 }; /* channels per work item */

typedef struct glob_job {
    pool_isa isa;
    const float *x;
    float *y;
    int64_t HW, C, nb; /* nb: channel blocks per image */
    int max;
} glob_job;

/* Items (n, channel block): pool.c's eight running values per channel (the
 * spatial index mod 8, the tail into the first), combined as it does. */
static void glob_items(void *ctx, int64_t begin, int64_t end)
{
    const glob_job *j = ctx;
    float acc[8][GP_CB];
    const int64_t HW = j->HW, C = j->C, n8 = HW / 8 * 8;
    for (int64_t it = begin; it < end; it++) {
        const int64_t n = it / j->nb, c0 = (it - n * j->nb) * GP_CB, cb = BD_MIN((int64_t)GP_CB, C - c0);
        const float *xp = j->x + n * HW * C + c0;
        for (int l = 0; l < 8; l++)
            for (int64_t c = 0; c < cb; c++) acc[l][c] = j->max ? -FLT_MAX : 0.0f;
        int64_t i = 0;
        for (; i < n8; i++) j->isa.acc(acc[i & 7], xp + i * C, cb, j->max);
        for (; i < HW; i++) j->isa.acc(acc[0], xp + i * C, cb, j->max);
        float *yo = j->y + n * C + c0;
        for (int64_t c = 0; c < cb; c++) {
            if (j->max) {
                float m = acc[0][c];
                for (int l = 1; l < 8; l++) m = acc[l][c] > m ? acc[l][c] : m;
                yo[c] = m;
            } else {
                float sum = ((acc[0][c] + acc[1][c]) + (acc[2][c] + acc[3][c])) +
                            ((acc[4][c] + acc[5][c]) + (acc[6][c] + acc[7][c]));
                yo[c] = HW > 0 ? sum / (float)HW : 0.0f;
            }
        }
    }
}

static braid_status global_pool(const bd_kernel *k)
{
    const bd_tensor *x = &k->in[0];
    glob_job j = {.isa = isa_pick(), .x = x->data, .y = k->out[0].data, .HW = x->dims[1] * x->dims[2],
                  .C = x->dims[3], .max = k->node->op == BD_OP_GlobalMaxPool};
    if (bd_numel(&k->out[0]) == 0) return BRAID_OK;
    j.nb = (j.C + GP_CB - 1) / GP_CB;
    const int64_t work = j.HW * BD_MIN(j.C, (int64_t)GP_CB) + 1;
    bd_parallel_for(k->threads, x->dims[0] * j.nb, BD_MAX((int64_t)1, 65536 / work), glob_items, &j);
    return BRAID_OK;
}

braid_status bd_pool_nhwc(const bd_kernel *k)
{
    const bd_node *node = k->node;
    if (k->in[0].rank != 4)
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "an NHWC %s takes a 4-D input, not %d-D", node->op_type,
                       k->in[0].rank);
    switch (node->op) {
    case BD_OP_GlobalAveragePool:
    case BD_OP_GlobalMaxPool: return global_pool(k);
    case BD_OP_MaxPool:
        if (k->n_out > 1 && k->out[1].data)
            return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "an NHWC MaxPool cannot give Indices");
        return window_pool(k);
    case BD_OP_AveragePool: return window_pool(k);
    default: return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s has no NHWC kernel", node->op_type);
    }
}
