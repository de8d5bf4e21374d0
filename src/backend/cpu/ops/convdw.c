/* convdw.c: the depthwise convolution (one input channel per group) with a
 * square 3x3 or 5x5 kernel, strides 1 or 2, no dilation, on AVX-512, for
 * 1-D and 2-D inputs. Each (image, channel) plane is walked in strips of 16
 * output columns and DWR output rows: the kernel's weights sit in registers,
 * every input row vector under the strip is loaded once per column tap and
 * feeds each output row of the strip that has a tap on it (the unrolled
 * loops fix which at compile time: no branches), loads are masked to the
 * input (the padding is zeros that cost no memory traffic), and the sums go
 * through the fused epilogue into one masked store. Each output is one FMA
 * chain over the taps (kh, kw) in order, starting at 0 (a padded tap adds
 * w * 0): the same bits for any split of planes over threads. */
#include "convdirect.h"

#include "backend/cpu/parallel.h"
#include "convepi.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define DWR 4 /* output rows per strip */

typedef struct dw_job {
    const bd_conv_geom *g;
    const float *x, *wt, *bias, *z;
    float *y;
    int64_t H, W, OH, OW, p1, p2, mg;
    int act, res;
    float aa, ab;
} dw_job;

/* One plane with a K x K kernel and strides S1, S2 (compile-time constants
 * after inlining). */
__attribute__((always_inline, target("avx512f"))) static inline void
dw_plane(const dw_job *j, const float *xc, const float *wm, float *yc, const float *zc, float b0, const int K,
         const int S1, const int S2)
{
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512 bias = _mm512_set1_ps(b0), aa = _mm512_set1_ps(j->aa), ab = _mm512_set1_ps(j->ab);
    const int NI = (DWR - 1) * S1 + K; /* input rows under a strip */
    const int64_t H = j->H, W = j->W, OH = j->OH, OW = j->OW;
    __m512 wv[25];
#pragma GCC unroll 25
    for (int t = 0; t < K * K; t++) wv[t] = _mm512_set1_ps(wm[t]);
    for (int64_t ow0 = 0; ow0 < OW; ow0 += 16) {
        const int64_t c0 = ow0 * S2 - j->p2;
        const __mmask16 st = (__mmask16)(((uint32_t)1 << BD_MIN((int64_t)16, OW - ow0)) - 1);
        __mmask16 ml[5], mh[5];
#pragma GCC unroll 5
        for (int kw = 0; kw < K; kw++) {
            ml[kw] = pg_lanes16(c0 + kw, W);
            mh[kw] = S2 == 2 ? pg_lanes16(c0 + kw + 16, W) : 0;
        }
        for (int64_t oh0 = 0; oh0 < OH; oh0 += DWR) {
            __m512 acc[DWR];
#pragma GCC unroll 4
            for (int r = 0; r < DWR; r++) acc[r] = _mm512_setzero_ps();
            const int64_t ih0 = oh0 * S1 - j->p1;
#pragma GCC unroll 16
            for (int i = 0; i < NI; i++) {
                const int64_t ih = ih0 + i;
                const __mmask16 rm = ih >= 0 && ih < H ? 0xFFFF : 0;
                const float *row = xc + ih * W + c0;
#pragma GCC unroll 5
                for (int kw = 0; kw < K; kw++) {
                    __m512 v = _mm512_maskz_loadu_ps(ml[kw] & rm, row + kw);
                    if (S2 == 2) v = _mm512_permutex2var_ps(v, even, _mm512_maskz_loadu_ps(mh[kw] & rm, row + kw + 16));
#pragma GCC unroll 4
                    for (int r = 0; r < DWR; r++) {
                        const int kh = i - r * S1;
                        if (kh >= 0 && kh < K) acc[r] = _mm512_fmadd_ps(wv[kh * K + kw], v, acc[r]);
                    }
                }
            }
#pragma GCC unroll 4
            for (int r = 0; r < DWR; r++) {
                if (oh0 + r >= OH) break;
                const int64_t o = (oh0 + r) * OW + ow0;
                _mm512_mask_storeu_ps(yc + o, st,
                                      pg_epi16(acc[r], bias, zc ? zc + o : NULL, st, j->act, aa, ab, j->res));
            }
        }
    }
}

#define DW_PLANES(K, S1, S2)                                                                                       \
    __attribute__((target("avx512f"))) static void dw_planes_##K##_##S1##_##S2(void *ctx, int64_t wi, int64_t b, \
                                                                                int64_t e)                        \
    {                                                                                                              \
        (void)wi;                                                                                                  \
        const dw_job *j = ctx;                                                                                     \
        const bd_conv_geom *g = j->g;                                                                              \
        for (int64_t plane = b; plane < e; plane++) {                                                              \
            int64_t n = plane / g->c_out, m = plane % g->c_out;                                                    \
            dw_plane(j, j->x + (n * g->c_in + m / j->mg) * j->H * j->W, j->wt + m * (K) * (K),                     \
                     j->y + plane * j->OH * j->OW, j->z ? j->z + plane * j->OH * j->OW : NULL,                     \
                     j->bias ? j->bias[m] : 0.0f, K, S1, S2);                                                      \
        }                                                                                                          \
    }

DW_PLANES(3, 1, 1)
DW_PLANES(3, 1, 2)
DW_PLANES(3, 2, 1)
DW_PLANES(3, 2, 2)
DW_PLANES(5, 1, 1)
DW_PLANES(5, 1, 2)
DW_PLANES(5, 2, 1)
DW_PLANES(5, 2, 2)

typedef void (*dw_fn)(void *, int64_t, int64_t, int64_t);
static const dw_fn dw_fns[2][2][2] = {
    {{dw_planes_3_1_1, dw_planes_3_1_2}, {dw_planes_3_2_1, dw_planes_3_2_2}},
    {{dw_planes_5_1_1, dw_planes_5_1_2}, {dw_planes_5_2_1, dw_planes_5_2_2}},
};

#define DW_MIN_WORK (1 << 19) /* multiply-adds per thread worth a thread */

int bd_conv_dw(const bd_kernel *k, const bd_conv_geom *g, const win3 *w)
{
    if (g->c_in / g->group != 1 || w->k[0] != 1 || w->img[0] != 1 || w->grid[0] != 1 || w->k[1] != w->k[2] ||
        (w->k[1] != 3 && w->k[1] != 5) || w->d[1] != 1 || w->d[2] != 1 ||
        w->s[1] > 2 || w->s[2] > 2)
        return 0;
    const bd_conv_params *pa = k->node->params;
    dw_job j = {g, k->in[0].data, k->in[1].data, k->n_in > 2 && k->in[2].data ? k->in[2].data : NULL,
                pa->res != BD_RES_NONE && k->n_in > 3 ? k->in[3].data : NULL, k->out[0].data,
                w->img[1], w->img[2], w->grid[1], w->grid[2], w->pb[1], w->pb[2], g->c_out / g->group,
                pa->act, BD_RES_NONE, pa->act_a, pa->act_b};
    j.res = j.z ? pa->res : BD_RES_NONE;
    int64_t planes = g->n * g->c_out, per = BD_MAX(w->grid_size * w->taps, (int64_t)1);
    int64_t workers = BD_MAX((int64_t)1, BD_MIN((int64_t)BD_MAX(k->threads, 1), planes * per / DW_MIN_WORK));
    dw_fn fn = dw_fns[w->k[1] == 5][w->s[1] - 1][w->s[2] - 1];
    bd_parallel_claim((int)workers, planes, BD_MAX((int64_t)1, planes / (8 * workers)), fn, &j);
    return 1;
}
#else
int bd_conv_dw(const bd_kernel *k, const bd_conv_geom *g, const win3 *w)
{
    (void)k, (void)g, (void)w;
    return 0;
}
#endif
