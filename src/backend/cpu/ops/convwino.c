/* convwino.c: Winograd F(2x2, 3x3) for 2-D convolutions with a 3x3 kernel,
 * stride 1 and dilation 1 (AVX-512): on NCHW data (bd_conv_wino, called by
 * conv.c before the direct kernel, convdirect.c) and on NHWC data
 * (bd_conv_wino_nhwc, called by convnhwc.c before its implicit GEMM).
 *
 * Each 2x2 block of outputs (a tile) reads a 4x4 block of the input d and
 * is Y = A^T [ (G g G^T) .* (B^T d B) ] A: 16 products per input channel
 * where the direct convolution does 36, so the products (a GEMM over the
 * input channels for each of the 16 positions) take 4/9 of the direct
 * kernel's multiply-adds. The transforms use only 0, +-1 and +-1/2, so the
 * rounding stays near the direct sum's (the tests hold it to 1e-4 absolute
 * plus relative against a double loop; two_conv_add against onnxruntime:
 * 1.6e-6 at most on outputs up to 3.5).
 *
 * NCHW: tiles lie in vector lanes, 16 tiles of one tile row side by side.
 * A task is a band of tile rows of one (image, group):
 *   1. the input transform writes U[pos][c][tile] for every tile of the band
 *      (masked loads give the zero padding and the image's edges);
 *   2. for each of the 16 positions, V[pos][m][tile] = sum_c Wt[pos][m][c]
 *      U[pos][c][tile], 8 output channels by 3 tile vectors in registers;
 *   3. the output transform turns each tile's 16 V into its 2x2 outputs,
 *      applies the epilogue (bias, residual, activation) and stores them.
 * Its weights are transformed on every call (G g G^T, 16 x M x C values),
 * so it takes only convolutions of at least WG_MIN_PIXELS outputs.
 * NHWC: channels in lanes (see the section below); its weights are the
 * layout pass's (bd_conv_params.w_wino), transformed once per plan, or
 * transformed per call where the pass did not.
 *
 * Each output is computed from its own tile alone, in a fixed order, so the
 * bits do not depend on the bands, chunks or the thread count. */
#include <stdatomic.h>

#include "backend/cpu/parallel.h"
#include "backend/cpu/scratch.h"
#include "convdirect.h"
#include "convnhwc.h"
#include "ops/conv.h"
#include "convepi.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define WG_MR 8              /* output channels per GEMM tile */
#define WG_NV 3              /* tile vectors (16 tiles each) per GEMM tile */
#define WG_BAND_VECS 6       /* tile vectors a band aims at */
#define WG_SCRATCH (1 << 20) /* bytes of U and V a band keeps (in L2) at most */

typedef struct wg_job {
    const float *x, *bias, *z;
    float *y, *wt;          /* wt: [group][pos][mblock][c][WG_MR] */
    float *scratch;         /* per worker: U, then V */
    int64_t H, W, OH, OW, pt, pl;
    int64_t TH, TW, TV;     /* tile rows, tiles per row, tile vectors per row */
    int64_t cg, mg, mb, c_in, c_out, groups;
    int64_t band, nbands, per_worker;
    int act, res;
    float aa, ab;
} wg_job;

/* A^T applied down column b of a tile's 4x4 products (q: position 0,
 * ps floats between positions): t0 = rows 0 + 1 + 2, t1 = rows 1 - 2 - 3
 * (both layouts' output transforms). */
#define WINO_COL(b, t0, t1)                                                                                           \
    __m512 t0, t1;                                                                                                    \
    do {                                                                                                              \
        __m512 x0 = _mm512_loadu_ps(q + (b) * ps), x1 = _mm512_loadu_ps(q + (4 + (b)) * ps);                          \
        __m512 x2 = _mm512_loadu_ps(q + (8 + (b)) * ps), x3 = _mm512_loadu_ps(q + (12 + (b)) * ps);                   \
        t0 = _mm512_add_ps(_mm512_add_ps(x0, x1), x2), t1 = _mm512_sub_ps(_mm512_sub_ps(x1, x2), x3);                 \
    } while (0)

/* Floats between two positions' blocks of `rows` rows of nt tile vectors:
 * an odd number of cache lines, so the 16 positions of one tile fall in 16
 * different L1 sets (a multiple of 4 KB would put them all in one). */
static int64_t wg_pos_stride(int64_t rows, int64_t nt)
{
    int64_t lines = rows * nt;
    return 16 * (lines | 1);
}

/* G g G^T for each (m, c): g is 3x3 (row-major), the result 4x4, written
 * to wt[pos][mblock][c][r] of each group (0 past the group's last m). */
static void wg_weights(const float *w, int64_t groups, int64_t mg, int64_t mb, int64_t cg, float *wt)
{
    for (int64_t gi = 0; gi < groups; gi++) {
        float *o = wt + gi * 16 * mb * WG_MR * cg;
        for (int64_t m = 0; m < mb * WG_MR; m++)
            for (int64_t c = 0; c < cg; c++) {
                float u[16] = {0};
                if (m < mg) bd_conv_wino_kernel(w + ((gi * mg + m) * cg + c) * 9, u);
                for (int p = 0; p < 16; p++) o[((p * mb + m / WG_MR) * cg + c) * WG_MR + m % WG_MR] = u[p];
            }
    }
}

/* One input row's 4 columns of 16 tiles (tile l reads columns col + 2 l +
 * {0, 1, 2, 3}): two masked loads and two permutes per pair of columns. */
#define WG_ROW(p, rm, d0, d1, d2, d3)                                                                                 \
    do {                                                                                                              \
        __m512 l0 = _mm512_maskz_loadu_ps(m0 & (rm), (p)), l1 = _mm512_maskz_loadu_ps(m1 & (rm), (p) + 16);          \
        __m512 l2 = _mm512_maskz_loadu_ps(m2 & (rm), (p) + 2), l3 = _mm512_maskz_loadu_ps(m3 & (rm), (p) + 18);      \
        d0 = _mm512_permutex2var_ps(l0, even, l1), d1 = _mm512_permutex2var_ps(l0, odd, l1);                          \
        d2 = _mm512_permutex2var_ps(l2, even, l3), d3 = _mm512_permutex2var_ps(l2, odd, l3);                          \
    } while (0)

/* (B^T d) B of one row s0..s3 of B^T d: B's columns (1,0,-1,0), (0,1,1,0),
 * (0,-1,1,0), (0,1,0,-1); stored at positions 4 a .. 4 a + 3. */
#define WG_BT_ROW(o, a, s0, s1, s2, s3)                                                                               \
    do {                                                                                                              \
        _mm512_storeu_ps((o) + (4 * (a) + 0) * ps, _mm512_sub_ps(s0, s2));                                            \
        _mm512_storeu_ps((o) + (4 * (a) + 1) * ps, _mm512_add_ps(s1, s2));                                            \
        _mm512_storeu_ps((o) + (4 * (a) + 2) * ps, _mm512_sub_ps(s2, s1));                                            \
        _mm512_storeu_ps((o) + (4 * (a) + 3) * ps, _mm512_sub_ps(s1, s3));                                            \
    } while (0)

/* Step 1: B^T d B of every tile of tile rows [i0, i1) for the cg input
 * channels of xg, into u[pos][c][t 16 + lane] (t: tile vector in the band). */
__attribute__((target("avx512f"))) static void wg_input(const wg_job *j, const float *xg, int64_t i0, int64_t i1,
                                                        float *u, int64_t nt)
{
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    const int64_t H = j->H, W = j->W, hw = H * W, ps = wg_pos_stride(j->cg, nt);
    for (int64_t i = i0; i < i1; i++) {
        int64_t r0 = 2 * i - j->pt; /* input rows r0 .. r0 + 3; those outside read as 0 */
        __mmask16 ra = r0 >= 0 && r0 < H ? 0xFFFF : 0, rb = r0 + 1 >= 0 && r0 + 1 < H ? 0xFFFF : 0;
        __mmask16 rc = r0 + 2 >= 0 && r0 + 2 < H ? 0xFFFF : 0, rd = r0 + 3 >= 0 && r0 + 3 < H ? 0xFFFF : 0;
        for (int64_t v = 0; v < j->TV; v++) {
            int64_t col = 32 * v - j->pl, t = (i - i0) * j->TV + v;
            __mmask16 m0 = pg_lanes16(col, W), m1 = pg_lanes16(col + 16, W), m2 = pg_lanes16(col + 2, W),
                      m3 = pg_lanes16(col + 18, W);
            const float *p = xg + r0 * W + col;
            float *o = u + t * 16;
            for (int64_t c = 0; c < j->cg; c++, p += hw, o += nt * 16) {
                __m512 a0, a1, a2, a3, b0, b1, b2, b3, c0, c1, c2, c3, d0, d1, d2, d3;
                WG_ROW(p, ra, a0, a1, a2, a3);
                WG_ROW(p + W, rb, b0, b1, b2, b3);
                WG_ROW(p + 2 * W, rc, c0, c1, c2, c3);
                WG_ROW(p + 3 * W, rd, d0, d1, d2, d3);
                /* B^T d: rows (1,0,-1,0), (0,1,1,0), (0,-1,1,0), (0,1,0,-1) */
                WG_BT_ROW(o, 0, _mm512_sub_ps(a0, c0), _mm512_sub_ps(a1, c1), _mm512_sub_ps(a2, c2), _mm512_sub_ps(a3, c3));
                WG_BT_ROW(o, 1, _mm512_add_ps(b0, c0), _mm512_add_ps(b1, c1), _mm512_add_ps(b2, c2), _mm512_add_ps(b3, c3));
                WG_BT_ROW(o, 2, _mm512_sub_ps(c0, b0), _mm512_sub_ps(c1, b1), _mm512_sub_ps(c2, b2), _mm512_sub_ps(c3, b3));
                WG_BT_ROW(o, 3, _mm512_sub_ps(b0, d0), _mm512_sub_ps(b1, d1), _mm512_sub_ps(b2, d2), _mm512_sub_ps(b3, d3));
            }
        }
    }
}

/* Step 2 for one position: WG_MR output channels (weights wm, WG_MR per
 * input channel) by NV tile vectors from u (cg rows of ld floats) into v
 * (WG_MR rows of ld floats). */
#define WG_GEMM(NV)                                                                                                   \
    __attribute__((target("avx512f"))) static void wg_gemm_##NV(const float *u, const float *wm, int64_t cg,         \
                                                                 int64_t ld, float *v)                                \
    {                                                                                                                 \
        __m512 acc[WG_MR][NV];                                                                                        \
        _Pragma("GCC unroll 8") for (int r = 0; r < WG_MR; r++)                                                      \
        {                                                                                                             \
            _Pragma("GCC unroll 4") for (int q = 0; q < NV; q++) acc[r][q] = _mm512_setzero_ps();                    \
        }                                                                                                             \
        for (int64_t c = 0; c < cg; c++, u += ld, wm += WG_MR) {                                                      \
            __m512 b[NV];                                                                                             \
            _Pragma("GCC unroll 4") for (int q = 0; q < NV; q++) b[q] = _mm512_loadu_ps(u + 16 * q);                 \
            _Pragma("GCC unroll 8") for (int r = 0; r < WG_MR; r++)                                                  \
            {                                                                                                         \
                __m512 a = _mm512_set1_ps(wm[r]);                                                                     \
                _Pragma("GCC unroll 4") for (int q = 0; q < NV; q++) acc[r][q] = _mm512_fmadd_ps(a, b[q], acc[r][q]); \
            }                                                                                                         \
        }                                                                                                             \
        _Pragma("GCC unroll 8") for (int r = 0; r < WG_MR; r++)                                                      \
        {                                                                                                             \
            _Pragma("GCC unroll 4") for (int q = 0; q < NV; q++) _mm512_storeu_ps(v + r * ld + 16 * q, acc[r][q]);  \
        }                                                                                                             \
    }

WG_GEMM(1)
WG_GEMM(2)
WG_GEMM(3)

typedef void (*wg_gemm_fn)(const float *, const float *, int64_t, int64_t, float *);
static const wg_gemm_fn wg_gemms[WG_NV] = {wg_gemm_1, wg_gemm_2, wg_gemm_3};

/* Step 3 for one activation and residual mode (constants where inlined):
 * A^T M A of every tile, A^T = ((1, 1, 1, 0), (0, 1, -1, -1)), then the
 * epilogue, stored as 2x2 outputs per tile (its two columns interleaved). */
__attribute__((target("avx512f"), always_inline)) static inline void
wg_output_as(const wg_job *j, const float *vv, int64_t n, int64_t gi, int64_t i0, int64_t i1, int64_t nt, int act,
             int res)
{
    const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i hi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    const __m512 aa = _mm512_set1_ps(j->aa), ab = _mm512_set1_ps(j->ab);
    const int64_t ohw = j->OH * j->OW, OW = j->OW, ps = wg_pos_stride(j->mb * WG_MR, nt);
    for (int64_t m = 0; m < j->mg; m++) {
        int64_t plane = n * j->c_out + gi * j->mg + m;
        float *yp = j->y + plane * ohw;
        const float *zp = res ? j->z + plane * ohw : NULL;
        const __m512 bias = _mm512_set1_ps(j->bias ? j->bias[gi * j->mg + m] : 0.0f);
        for (int64_t i = i0; i < i1; i++) {
            int rows = (int)BD_MIN((int64_t)2, j->OH - 2 * i);
            for (int64_t v = 0; v < j->TV; v++) {
                const float *q = vv + m * nt * 16 + ((i - i0) * j->TV + v) * 16;
                WINO_COL(0, e0, f0);
                WINO_COL(1, e1, f1);
                WINO_COL(2, e2, f2);
                WINO_COL(3, e3, f3);
                int64_t oc = 32 * v;
                __mmask16 k0 = pg_lanes16(oc, OW), k1 = pg_lanes16(oc + 16, OW);
                __m512 y00 = _mm512_add_ps(_mm512_add_ps(e0, e1), e2), y01 = _mm512_sub_ps(_mm512_sub_ps(e1, e2), e3);
                __m512 y10 = _mm512_add_ps(_mm512_add_ps(f0, f1), f2), y11 = _mm512_sub_ps(_mm512_sub_ps(f1, f2), f3);
                float *yo = yp + 2 * i * OW + oc;
                const float *zo = res ? zp + 2 * i * OW + oc : NULL;
                _mm512_mask_storeu_ps(yo, k0, pg_epi16(_mm512_permutex2var_ps(y00, lo, y01), bias, zo, k0, act, aa, ab, res));
                _mm512_mask_storeu_ps(yo + 16, k1, pg_epi16(_mm512_permutex2var_ps(y00, hi, y01), bias, res ? zo + 16 : NULL,
                                                             k1, act, aa, ab, res));
                if (rows < 2) continue;
                _mm512_mask_storeu_ps(yo + OW, k0, pg_epi16(_mm512_permutex2var_ps(y10, lo, y11), bias, res ? zo + OW : NULL,
                                                            k0, act, aa, ab, res));
                _mm512_mask_storeu_ps(yo + OW + 16, k1, pg_epi16(_mm512_permutex2var_ps(y10, hi, y11), bias,
                                                                 res ? zo + OW + 16 : NULL, k1, act, aa, ab, res));
            }
        }
    }
}

/* Step 3: plain and Relu without a residual inlined with their constants
 * (the common cases), the rest through the general epilogue. */
__attribute__((target("avx512f"))) static void wg_output(const wg_job *j, const float *vv, int64_t n, int64_t gi,
                                                         int64_t i0, int64_t i1, int64_t nt)
{
    if (j->res == BD_RES_NONE && j->act == BD_ACT_NONE) wg_output_as(j, vv, n, gi, i0, i1, nt, BD_ACT_NONE, BD_RES_NONE);
    else if (j->res == BD_RES_NONE && j->act == BD_ACT_RELU) wg_output_as(j, vv, n, gi, i0, i1, nt, BD_ACT_RELU, BD_RES_NONE);
    else wg_output_as(j, vv, n, gi, i0, i1, nt, j->act, j->res);
}

/* Tasks [tb, te) of the (image, group, band) tasks, on worker wi's scratch. */
static void wg_tasks(void *ctx, int64_t wi, int64_t tb, int64_t te)
{
    const wg_job *j = ctx;
    float *u = j->scratch + wi * j->per_worker;
    for (int64_t task = tb; task < te; task++) {
        int64_t b = task % j->nbands, pair = task / j->nbands, n = pair / j->groups, gi = pair % j->groups;
        int64_t i0 = b * j->band, i1 = BD_MIN(i0 + j->band, j->TH), nt = (i1 - i0) * j->TV;
        float *v = u + 16 * wg_pos_stride(j->cg, nt);
        wg_input(j, j->x + (n * j->c_in + gi * j->cg) * j->H * j->W, i0, i1, u, nt);
        const float *wg = j->wt + gi * 16 * j->mb * WG_MR * j->cg;
        for (int p = 0; p < 16; p++) {
            const float *up = u + p * wg_pos_stride(j->cg, nt);
            float *vp = v + p * wg_pos_stride(j->mb * WG_MR, nt);
            for (int64_t mb = 0; mb < j->mb; mb++)
                for (int64_t t = 0; t < nt; t += WG_NV) {
                    int nv = (int)BD_MIN((int64_t)WG_NV, nt - t);
                    wg_gemms[nv - 1](up + t * 16, wg + (p * j->mb + mb) * j->cg * WG_MR, j->cg, nt * 16,
                                     vp + mb * WG_MR * nt * 16 + t * 16);
                }
        }
        wg_output(j, v, n, gi, i0, i1, nt);
    }
}

#define WG_MIN_FILL 0.6        /* the share of lanes tiles must fill (tiles per row / lanes per row) */
#define WG_MIN_WORK (1 << 20)  /* multiply-adds per thread worth a thread */
/* Outputs per output channel (N OH OW) from which the products saved pay for
 * transforming the weights on every call (Xeon, 2 threads, NHWC: 64->64 on
 * 40x40 0.85x the implicit GEMM's time, 48->64 on 28x28 1.24x, 192->192 on
 * 26x26 2x, 384->384 on 13x13 5x) */
#define WG_MIN_PIXELS 1024

static _Atomic int wino_on = 1; /* bd_conv_wino_enable */

void bd_conv_wino_enable(int on) { atomic_store_explicit(&wino_on, on, memory_order_relaxed); }

int bd_conv_wino(const bd_kernel *k, const bd_conv_geom *g, const win3 *w)
{
    if (!atomic_load_explicit(&wino_on, memory_order_relaxed)) return 0;
    int64_t cg = g->c_in / g->group, mg = g->c_out / g->group;
    if (w->k[0] != 1 || w->img[0] != 1 || w->k[1] != 3 || w->k[2] != 3 || w->s[1] != 1 || w->s[2] != 1 ||
        w->d[1] != 1 || w->d[2] != 1 || cg < BD_WINO_MIN_C || mg < WG_MR || g->n * w->grid_size < WG_MIN_PIXELS)
        return 0;
    int64_t OH = w->grid[1], OW = w->grid[2], TW = BD_CEIL_DIV(OW, (int64_t)2), TV = BD_CEIL_DIV(TW, (int64_t)16);
    if ((double)TW < WG_MIN_FILL * (double)(TV * 16)) return 0;
    const bd_conv_params *pa = k->node->params;
    wg_job j = {0};
    j.x = k->in[0].data;
    j.bias = k->n_in > 2 && k->in[2].data ? k->in[2].data : NULL;
    j.z = pa->res != BD_RES_NONE && k->n_in > 3 ? k->in[3].data : NULL;
    j.y = k->out[0].data;
    j.H = w->img[1], j.W = w->img[2], j.OH = OH, j.OW = OW, j.pt = w->pb[1], j.pl = w->pb[2];
    j.TH = BD_CEIL_DIV(OH, (int64_t)2), j.TW = TW, j.TV = TV;
    j.cg = cg, j.mg = mg, j.mb = BD_CEIL_DIV(mg, (int64_t)WG_MR), j.c_in = g->c_in, j.c_out = g->c_out;
    j.groups = g->group;
    j.act = pa->act, j.res = j.z ? pa->res : BD_RES_NONE, j.aa = pa->act_a, j.ab = pa->act_b;
    /* a band: about WG_BAND_VECS tile vectors, fewer where U and V would pass WG_SCRATCH */
    int64_t per_vec = 16 * 16 * (cg + j.mb * WG_MR) * (int64_t)sizeof(float);
    int64_t vecs = BD_MAX((int64_t)1, BD_MIN((int64_t)WG_BAND_VECS, (int64_t)WG_SCRATCH / per_vec));
    j.band = BD_MAX((int64_t)1, BD_MIN(j.TH, vecs / TV));
    j.nbands = BD_CEIL_DIV(j.TH, j.band);
    int64_t tasks = g->n * g->group * j.nbands, th = BD_MAX(k->threads, 1);
    int64_t work = g->n * g->c_out * cg * OH * OW * 4; /* the products' multiply-adds (16 per 2x2 tile) */
    int64_t workers = BD_MAX((int64_t)1, BD_MIN(BD_MIN(th, tasks), work / WG_MIN_WORK));
    j.per_worker = 16 * (wg_pos_stride(cg, j.band * TV) + wg_pos_stride(j.mb * WG_MR, j.band * TV));
    j.wt = bd_scratch_alloc((size_t)(g->group * 16 * j.mb * WG_MR * cg) * sizeof(float));
    j.scratch = bd_scratch_alloc((size_t)(workers * j.per_worker) * sizeof(float));
    if (!j.wt || !j.scratch) {
        bd_scratch_free(j.wt);
        bd_scratch_free(j.scratch);
        return -1;
    }
    wg_weights(k->in[1].data, g->group, mg, j.mb, cg, j.wt);
    bd_parallel_claim((int)workers, tasks, 1, wg_tasks, &j);
    bd_scratch_free(j.wt);
    bd_scratch_free(j.scratch);
    return 1;
}

/* ---- NHWC: channels in lanes ----------------------------------------------
 * The same F(2x2, 3x3) on NHWC data (one group): a tile's 4x4 input pixels
 * are 16 vectors of 16 channels each, so the transforms need no permutes.
 * A task is a chunk of WN_MR-aligned tiles of one image (row-major), the
 * chunk's last tiles past the image read zeros and store nothing:
 *   U[pos][tile][C] (the input transform, 16 channels at a time),
 *   V[pos][tile][Mp] = U[pos] Wt[pos] (WN_MR tiles by up to WN_NV vectors of
 *   output channels in registers, the input channels broadcast),
 *   then A^T V A, the epilogue, and the 2x2 pixels' stores. */

#define WN_MR 8 /* tiles per GEMM tile */
#define WN_NV BD_WINO_NV /* vectors of output channels per GEMM tile */

typedef struct wn_job {
    const float *x, *bias, *z;
    float *y;
    const float *wt; /* bd_conv_wino_weights' layout */
    float *scratch;
    int64_t H, W, C, M, OH, OW, pt, pl, TH, TW, Cp, Mp, nmv, nmb;
    int64_t chunk, nchunks, per_worker, us, vs; /* us, vs: floats per position in U and V */
    int act, res;
    float aa, ab;
} wn_job;

/* Step 1: tiles [t0, t0 + nt) of image n (row-major; past the image: 0). */
__attribute__((target("avx512f"))) static void wn_input(const wn_job *j, int64_t n, int64_t t0, int64_t nt, float *u)
{
    const int64_t W = j->W, C = j->C, ps = j->us;
    const float *xn = j->x + n * j->H * W * C;
    for (int64_t t = 0; t < nt; t++) {
        int64_t tile = t0 + t, ti = tile / j->TW, tj = tile % j->TW;
        int64_t r0 = 2 * ti - j->pt, c0 = 2 * tj - j->pl;
        int in_img = ti < j->TH;
        int ok[4][4];
        for (int a = 0; a < 4; a++)
            for (int b = 0; b < 4; b++)
                ok[a][b] = in_img && r0 + a >= 0 && r0 + a < j->H && c0 + b >= 0 && c0 + b < W;
        float *o = u + t * j->Cp;
        for (int64_t cv = 0; cv < j->Cp; cv += 16) {
            __mmask16 cm = pg_lanes16(cv, C);
            const float *p = xn + (r0 * W + c0) * C + cv;
            __m512 d[4][4];
            _Pragma("GCC unroll 4") for (int a = 0; a < 4; a++)
            {
                _Pragma("GCC unroll 4") for (int b = 0; b < 4; b++) d[a][b] =
                    _mm512_maskz_loadu_ps(ok[a][b] ? cm : 0, p + (a * W + b) * C);
            }
            _Pragma("GCC unroll 4") for (int b = 0; b < 4; b++)
            {
                __m512 s0 = _mm512_sub_ps(d[0][b], d[2][b]), s1 = _mm512_add_ps(d[1][b], d[2][b]);
                __m512 s2 = _mm512_sub_ps(d[2][b], d[1][b]), s3 = _mm512_sub_ps(d[1][b], d[3][b]);
                d[0][b] = s0, d[1][b] = s1, d[2][b] = s2, d[3][b] = s3;
            }
            _Pragma("GCC unroll 4") for (int a = 0; a < 4; a++)
            {
                _mm512_storeu_ps(o + (4 * a + 0) * ps + cv, _mm512_sub_ps(d[a][0], d[a][2]));
                _mm512_storeu_ps(o + (4 * a + 1) * ps + cv, _mm512_add_ps(d[a][1], d[a][2]));
                _mm512_storeu_ps(o + (4 * a + 2) * ps + cv, _mm512_sub_ps(d[a][2], d[a][1]));
                _mm512_storeu_ps(o + (4 * a + 3) * ps + cv, _mm512_sub_ps(d[a][1], d[a][3]));
            }
        }
    }
}

/* Step 2 for one position: WN_MR tiles (rows of u, ldu floats apart) by NV
 * vectors of output channels (wm: C rows of NV 16) into v (ldv). The same
 * shape as wg_gemm with the roles of the operands swapped; one kernel with
 * run-time strides for both measured 1.18-1.20x slower on NHWC Convs. */
#define WN_GEMM(NV)                                                                                                   \
    __attribute__((target("avx512f"))) static void wn_gemm_##NV(const float *u, int64_t ldu, const float *wm,         \
                                                                 int64_t C, float *v, int64_t ldv)                    \
    {                                                                                                                 \
        __m512 acc[WN_MR][NV];                                                                                        \
        _Pragma("GCC unroll 8") for (int r = 0; r < WN_MR; r++)                                                      \
        {                                                                                                             \
            _Pragma("GCC unroll 4") for (int q = 0; q < NV; q++) acc[r][q] = _mm512_setzero_ps();                    \
        }                                                                                                             \
        for (int64_t c = 0; c < C; c++, wm += NV * 16) {                                                              \
            __m512 b[NV];                                                                                             \
            _Pragma("GCC unroll 4") for (int q = 0; q < NV; q++) b[q] = _mm512_loadu_ps(wm + 16 * q);                \
            _Pragma("GCC unroll 8") for (int r = 0; r < WN_MR; r++)                                                  \
            {                                                                                                         \
                __m512 a = _mm512_set1_ps(u[r * ldu + c]);                                                            \
                _Pragma("GCC unroll 4") for (int q = 0; q < NV; q++) acc[r][q] = _mm512_fmadd_ps(a, b[q], acc[r][q]); \
            }                                                                                                         \
        }                                                                                                             \
        _Pragma("GCC unroll 8") for (int r = 0; r < WN_MR; r++)                                                      \
        {                                                                                                             \
            _Pragma("GCC unroll 4") for (int q = 0; q < NV; q++) _mm512_storeu_ps(v + r * ldv + 16 * q, acc[r][q]); \
        }                                                                                                             \
    }

WN_GEMM(1)
WN_GEMM(2)
WN_GEMM(3)

typedef void (*wn_gemm_fn)(const float *, int64_t, const float *, int64_t, float *, int64_t);
static const wn_gemm_fn wn_gemms[WN_NV] = {wn_gemm_1, wn_gemm_2, wn_gemm_3};

/* Step 3 (act, res constants where inlined): tiles [t0, t0 + nt) of image n. */
__attribute__((target("avx512f"), always_inline)) static inline void
wn_output_as(const wn_job *j, const float *vv, int64_t n, int64_t t0, int64_t nt, int act, int res)
{
    const __m512 aa = _mm512_set1_ps(j->aa), ab = _mm512_set1_ps(j->ab);
    const int64_t M = j->M, OW = j->OW, ps = j->vs;
    for (int64_t t = 0; t < nt; t++) {
        int64_t tile = t0 + t, ti = tile / j->TW, tj = tile % j->TW;
        if (ti >= j->TH) break;
        int rows = (int)BD_MIN((int64_t)2, j->OH - 2 * ti), cols = (int)BD_MIN((int64_t)2, OW - 2 * tj);
        int64_t o0 = ((n * j->OH + 2 * ti) * OW + 2 * tj) * M;
        for (int64_t mv = 0; mv < j->Mp; mv += 16) {
            __mmask16 k = pg_lanes16(mv, M);
            const float *q = vv + t * j->Mp + mv;
            const __m512 bias = j->bias ? _mm512_maskz_loadu_ps(k, j->bias + mv) : _mm512_setzero_ps();
            WINO_COL(0, e0, f0);
            WINO_COL(1, e1, f1);
            WINO_COL(2, e2, f2);
            WINO_COL(3, e3, f3);
            __m512 y[2][2];
            y[0][0] = _mm512_add_ps(_mm512_add_ps(e0, e1), e2), y[0][1] = _mm512_sub_ps(_mm512_sub_ps(e1, e2), e3);
            y[1][0] = _mm512_add_ps(_mm512_add_ps(f0, f1), f2), y[1][1] = _mm512_sub_ps(_mm512_sub_ps(f1, f2), f3);
            _Pragma("GCC unroll 2") for (int r = 0; r < 2; r++)
            {
                _Pragma("GCC unroll 2") for (int c = 0; c < 2; c++)
                {
                    if (r >= rows || c >= cols) continue;
                    int64_t off = o0 + (r * OW + c) * M + mv;
                    _mm512_mask_storeu_ps(j->y + off, k,
                                          pg_epi16(y[r][c], bias, res ? j->z + off : NULL, k, act, aa, ab, res));
                }
            }
        }
    }
}

__attribute__((target("avx512f"))) static void wn_output(const wn_job *j, const float *vv, int64_t n, int64_t t0,
                                                         int64_t nt)
{
    if (j->res == BD_RES_NONE && j->act == BD_ACT_NONE) wn_output_as(j, vv, n, t0, nt, BD_ACT_NONE, BD_RES_NONE);
    else if (j->res == BD_RES_NONE && j->act == BD_ACT_RELU) wn_output_as(j, vv, n, t0, nt, BD_ACT_RELU, BD_RES_NONE);
    else wn_output_as(j, vv, n, t0, nt, j->act, j->res);
}

static void wn_tasks(void *ctx, int64_t wi, int64_t tb, int64_t te)
{
    const wn_job *j = ctx;
    float *u = j->scratch + wi * j->per_worker, *v = u + 16 * j->us;
    for (int64_t task = tb; task < te; task++) {
        int64_t n = task / j->nchunks, t0 = (task % j->nchunks) * j->chunk;
        int64_t nt = BD_MIN(j->chunk, BD_CEIL_DIV(j->TH * j->TW - t0, (int64_t)WN_MR) * WN_MR);
        wn_input(j, n, t0, nt, u);
        for (int p = 0; p < 16; p++) {
            const float *up = u + p * j->us, *wp = j->wt + p * j->C * j->Mp;
            float *vp = v + p * j->vs;
            for (int64_t mb = 0; mb < j->nmb; mb++) {
                int64_t v0;
                int nv = (int)bd_conv_wino_block(j->nmv, mb, &v0);
                for (int64_t t = 0; t < nt; t += WN_MR)
                    wn_gemms[nv - 1](up + t * j->Cp, j->Cp, wp + v0 * 16 * j->C, j->C, vp + t * j->Mp + v0 * 16,
                                     j->Mp);
            }
        }
        wn_output(j, v, n, t0, nt);
    }
}

int bd_conv_wino_nhwc(const bd_kernel *k, const bd_conv_geom *g)
{
    const bd_conv_params *pa = k->node->params;
    if (!atomic_load_explicit(&wino_on, memory_order_relaxed) || bd_cpu_vec_level() < 2) return 0;
    int planned = pa->w_wino && pa->w_wino_of == k->in[1].data;
    int64_t outputs = g->n * g->y[0] * g->y[1];
    if (g->nsp != 2 || g->group != 1 || pa->x_nchw || g->k[0] != 3 || g->k[1] != 3 || g->s[0] != 1 ||
        g->s[1] != 1 || g->d[0] != 1 || g->d[1] != 1 || g->c_in < BD_WINO_MIN_C || g->c_out < BD_WINO_MIN_M ||
        !(planned ? bd_conv_wino_planned_pays(g->c_in, g->c_out, outputs) : outputs >= WG_MIN_PIXELS))
        return 0;
    wn_job j = {0};
    j.x = k->in[0].data;
    j.bias = k->n_in > 2 && k->in[2].data ? k->in[2].data : NULL;
    j.z = pa->res != BD_RES_NONE && k->n_in > 3 ? k->in[3].data : NULL;
    j.y = k->out[0].data;
    j.H = g->x[0], j.W = g->x[1], j.C = g->c_in, j.M = g->c_out, j.OH = g->y[0], j.OW = g->y[1];
    j.pt = g->pb[0], j.pl = g->pb[1];
    j.TH = BD_CEIL_DIV(j.OH, (int64_t)2), j.TW = BD_CEIL_DIV(j.OW, (int64_t)2);
    j.Cp = BD_CEIL_DIV(j.C, (int64_t)16) * 16, j.Mp = BD_CEIL_DIV(j.M, (int64_t)16) * 16;
    j.nmv = j.Mp / 16, j.nmb = bd_conv_wino_blocks(j.nmv);
    j.act = pa->act, j.res = j.z ? pa->res : BD_RES_NONE, j.aa = pa->act_a, j.ab = pa->act_b;
    if (j.TH * j.TW == 0 || g->n == 0) return 0;
    /* a chunk: whole GEMM tiles, U and V within WG_SCRATCH, about 4 tasks a thread */
    int64_t per_tile = 16 * (j.Cp + j.Mp) * (int64_t)sizeof(float), th = BD_MAX(k->threads, 1);
    int64_t tiles = j.TH * j.TW, fit = BD_MAX((int64_t)WN_MR, (int64_t)WG_SCRATCH / per_tile / WN_MR * WN_MR);
    int64_t want = BD_CEIL_DIV(tiles * g->n, 4 * th);
    j.chunk = BD_MIN(fit, BD_MAX((int64_t)WN_MR, BD_CEIL_DIV(want, (int64_t)WN_MR) * WN_MR));
    j.chunk = BD_MIN(j.chunk, BD_CEIL_DIV(tiles, (int64_t)WN_MR) * WN_MR);
    j.nchunks = BD_CEIL_DIV(tiles, j.chunk);
    j.us = wg_pos_stride(j.chunk, j.Cp / 16), j.vs = wg_pos_stride(j.chunk, j.Mp / 16);
    j.per_worker = 16 * (j.us + j.vs);
    int64_t tasks = g->n * j.nchunks, work = g->n * j.M * j.C * j.OH * j.OW * 4;
    int64_t workers = BD_MAX((int64_t)1, BD_MIN(BD_MIN(th, tasks), work / WG_MIN_WORK));
    float *wt = planned ? NULL : bd_scratch_alloc((size_t)bd_conv_wino_floats(j.C, j.M) * sizeof(float));
    j.scratch = bd_scratch_alloc((size_t)(workers * j.per_worker) * sizeof(float));
    if ((!planned && !wt) || !j.scratch) {
        bd_scratch_free(wt);
        bd_scratch_free(j.scratch);
        return -1;
    }
    if (!planned) bd_conv_wino_weights(k->in[1].data, 1, pa->w_panel, j.C, j.M, wt);
    j.wt = planned ? pa->w_wino : wt;
    bd_parallel_claim((int)workers, tasks, 1, wn_tasks, &j);
    bd_scratch_free(wt);
    bd_scratch_free(j.scratch);
    return 1;
}
#else
void bd_conv_wino_enable(int on) { (void)on; }

int bd_conv_wino(const bd_kernel *k, const bd_conv_geom *g, const win3 *w)
{
    (void)k, (void)g, (void)w;
    return 0;
}

int bd_conv_wino_nhwc(const bd_kernel *k, const bd_conv_geom *g)
{
    (void)k, (void)g;
    return 0;
}
#endif
