/* convdirect.c: the direct NCHW convolution (AVX-512) for 1-D and 2-D
 * convolutions with two or more input channels per group and a column
 * stride of 1 or 2. The output of each (image, group) is cut into pixel
 * vectors (16 columns of one output row; a 1x1 stride-1 unpadded
 * convolution is seen as one long row) and tiles of DC_NV of them; a tile
 * and DC_MR output channels are DC_MR x DC_NV accumulators in registers,
 * summed over the taps and input channels straight from the input: the
 * loads are masked to the input (AVX-512 masked loads neither read nor
 * fault on the lanes masked off), so padding costs nothing and there is no
 * padded copy; for column stride 2, two loads and one permute give the even
 * columns. The sums then go through the epilogue (bias, residual,
 * activation) and are stored once, under a mask at the row's end.
 *
 * Each output is one FMA chain, starting at 0, over blocks of input
 * channels, and in each over the taps (kh, kw) and then its channels in
 * order (a padded tap adds w * 0, as the padded copy did):
 * what a tile computes never depends on how tiles are split over threads,
 * so the bits are the same for any thread count. */
#include "convdirect.h"

#include "backend/cpu/parallel.h"
#include "convepi.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define DC_MR 8        /* output channels per tile */
#define DC_NV 3        /* pixel vectors per tile */
#define DC_MAX_TAPS 64 /* kh x kw taken */
#define DC_WCHUNK (32 * 1024) /* bytes of weights a task keeps in cache */
#define DC_L1_INPUT (24 * 1024) /* bytes of input rows a tile keeps in L1 over the taps */

/* The convolution as a 2-D one. Row mode: a pixel vector is 16 columns of
 * one output row (the last one of a row partial). Flat mode (stride 1 and
 * OW = W, as with "same" padding): the output plane is one flat range cut
 * into vectors of 16, which may span rows: no lanes wasted at row ends. */
typedef struct dc_geo {
    int64_t H, W, OH, OW, K1, K2, s1, s2, d1, d2, p1, p2;
    int flat;
    int split;   /* column stride 2 read from a copy split into even and odd columns (dc_split) */
    int64_t Wp;  /* split: floats in each column phase of a row (the row is 2 Wp) */
    int64_t vpr, nvec, ntile; /* pixel vectors per output row, per plane; tiles per plane */
} dc_geo;

typedef struct dc_job {
    const bd_conv_geom *g;
    dc_geo v;
    const float *x, *wt, *bias, *z;
    float *y, *wpk; /* wpk: the weights packed by dc_pack */
    int64_t cg, mg, kk, taps, hw, ohw; /* hw, ohw: floats in an input, output plane */
    int64_t cb;                        /* input channels per block (all taps of a block, then the next) */
    int64_t mblocks, mchunk, mchunks, tchunk, tchunks;
    int act, res;
    float aa, ab;
    int64_t toff[DC_MAX_TAPS]; /* where tap (kh, kw) reads, relative to the tap (0, 0) */
} dc_job;

/* A tile: up to DC_NV pixel vectors. */
typedef struct dc_tile {
    int64_t base[DC_NV];                      /* input offset of lane 0 at tap (0, 0) */
    int64_t opos[DC_NV];                      /* output offset of lane 0 */
    __mmask16 st[DC_NV];                      /* lanes stored */
    __mmask16 lo[DC_MAX_TAPS][DC_NV];         /* lanes loaded at each tap: 16 columns */
    __mmask16 hi[DC_MAX_TAPS][DC_NV];         /* stride 2: the next 16 */
} dc_tile;

/* The pixel vectors [*v0, *v0 + *nv) of tile `tile`: DC_NV each, except
 * that a remainder of one makes the last two tiles two each (a tile of one
 * vector runs at a third of the speed). */
static void dc_tile_span(const dc_geo *v, int64_t tile, int64_t *v0, int *nv)
{
    *v0 = tile * DC_NV;
    *nv = (int)BD_MIN((int64_t)DC_NV, v->nvec - *v0);
    if (v->nvec % DC_NV == 1 && v->nvec > DC_NV && tile >= v->ntile - 2) {
        *v0 = v->nvec - 4 + 2 * (tile - (v->ntile - 2));
        *nv = 2;
    }
}

/* Flat mode: the vector at flat output q0 = oh OW + ow, whose lanes read
 * the input at q0 + lane + (tap offset) - (p1 W + p2), as OW = W; a lane is
 * loaded at a tap when its row and column there are in the input. */
static void dc_flat_vec(const dc_geo *v, int64_t q0, dc_tile *t, int q)
{
    uint32_t rowm[DC_MAX_TAPS] = {0}, colm[DC_MAX_TAPS] = {0};
    int64_t n = BD_MIN((int64_t)16, v->OH * v->OW - q0), oh = q0 / v->OW, ow = q0 % v->OW;
    t->base[q] = q0 - v->p1 * v->W - v->p2;
    t->opos[q] = q0;
    t->st[q] = (__mmask16)(((uint32_t)1 << n) - 1);
    for (int64_t i = 0; i < n;) { /* lanes [i, i + seg): one output row's columns [ow, ow + seg) */
        int64_t seg = BD_MIN(n - i, v->OW - ow);
        uint32_t lanes = (((uint32_t)1 << seg) - 1) << i;
        for (int64_t kh = 0; kh < v->K1; kh++) {
            int64_t ih = oh - v->p1 + kh * v->d1;
            if (ih >= 0 && ih < v->H) rowm[kh] |= lanes;
        }
        for (int64_t kw = 0; kw < v->K2; kw++)
            colm[kw] |= ((uint32_t)pg_lanes16(ow - v->p2 + kw * v->d2, v->W) << i) & lanes;
        i += seg, ow = 0, oh++;
    }
    for (int64_t kh = 0, tap = 0; kh < v->K1; kh++)
        for (int64_t kw = 0; kw < v->K2; kw++, tap++) t->lo[tap][q] = (__mmask16)(rowm[kh] & colm[kw]), t->hi[tap][q] = 0;
}

static void dc_tile_make(const dc_job *j, int64_t v0, int nv, dc_tile *t)
{
    const dc_geo *v = &j->v;
    for (int q = 0; q < nv; q++) {
        if (v->flat) {
            dc_flat_vec(v, (v0 + q) * 16, t, q);
            continue;
        }
        int64_t vi = v0 + q, oh = vi / v->vpr, ow0 = (vi % v->vpr) * 16;
        int64_t nw = BD_MIN((int64_t)16, v->OW - ow0), c0 = ow0 * v->s2 - v->p2, r0 = oh * v->s1 - v->p1;
        t->base[q] = v->split ? r0 * 2 * v->Wp + ow0 : r0 * v->W + c0;
        t->opos[q] = oh * v->OW + ow0;
        t->st[q] = (__mmask16)(((uint32_t)1 << nw) - 1);
        for (int64_t kh = 0, tap = 0; kh < v->K1; kh++) {
            int64_t ih = r0 + kh * v->d1;
            int ok = ih >= 0 && ih < v->H;
            for (int64_t kw = 0; kw < v->K2; kw++, tap++) {
                int64_t c = c0 + kw * v->d2;
                if (v->split) { /* phase ph of column 2 (ow0 + lane) + e: phase column ow0 + lane + (e - ph) / 2 */
                    int64_t e = kw * v->d2 - v->p2, ph = e & 1;
                    t->lo[tap][q] = ok ? pg_lanes16(ow0 + (e - ph) / 2, ph ? v->W / 2 : (v->W + 1) / 2) : 0;
                    t->hi[tap][q] = 0;
                    continue;
                }
                t->lo[tap][q] = ok ? pg_lanes16(c, v->W) : 0;
                t->hi[tap][q] = ok && v->s2 == 2 ? pg_lanes16(c + 16, v->W) : 0;
            }
        }
    }
}

/* DC_MR output channels (their packed weights wm: dc_pack; only the first
 * `rows` are stored) times NV pixel vectors of
 * tile tl over the group's input xg, then the epilogue into output planes
 * plane0.. (channel m0.. for the bias). */
#define DC_KERNEL(NV, S2)                                                                                             \
    __attribute__((target("avx512f"))) static void dc_run_##NV##_##S2(const dc_job *j, const dc_tile *tl,            \
                                                                       const float *xg, const float *wm,              \
                                                                       int64_t rows, int64_t plane0, int64_t m0)       \
    {                                                                                                                 \
        const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);           \
        const int64_t cg = j->cg, taps = j->taps, hw = j->hw;                                                         \
        __m512 acc[DC_MR][NV];                                                                                        \
        _Pragma("GCC unroll 8") for (int r = 0; r < DC_MR; r++)                                                      \
        {                                                                                                             \
            _Pragma("GCC unroll 4") for (int q = 0; q < NV; q++) acc[r][q] = _mm512_setzero_ps();                    \
        }                                                                                                             \
        for (int64_t c0 = 0; c0 < cg; c0 += j->cb) {                                                                  \
            const int64_t cn = BD_MIN(j->cb, cg - c0);                                                                \
            for (int64_t t = 0; t < taps; t++) {                                                                      \
                const float *p[NV];                                                                                   \
                __mmask16 ml[NV], mh[NV];                                                                             \
                _Pragma("GCC unroll 4") for (int q = 0; q < NV; q++)                                                 \
                {                                                                                                     \
                    p[q] = xg + c0 * hw + tl->base[q] + j->toff[t];                                                   \
                    ml[q] = tl->lo[t][q];                                                                             \
                    mh[q] = tl->hi[t][q];                                                                             \
                }                                                                                                     \
                (void)mh, (void)even;                                                                                 \
                const float *wp = wm + (c0 * taps + t * cn) * DC_MR;                                                  \
                for (int64_t c = 0; c < cn; c++, wp += DC_MR) {                                                       \
                    __m512 b[NV];                                                                                     \
                    _Pragma("GCC unroll 4") for (int q = 0; q < NV; q++)                                             \
                    {                                                                                                 \
                        if (S2 == 1) b[q] = _mm512_maskz_loadu_ps(ml[q], p[q]);                                       \
                        else                                                                                          \
                            b[q] = _mm512_permutex2var_ps(_mm512_maskz_loadu_ps(ml[q], p[q]), even,                   \
                                                          _mm512_maskz_loadu_ps(mh[q], p[q] + 16));                   \
                        p[q] += hw;                                                                                   \
                    }                                                                                                 \
                    _Pragma("GCC unroll 8") for (int r = 0; r < DC_MR; r++)                                          \
                    {                                                                                                 \
                        __m512 a = _mm512_set1_ps(wp[r]);                                                             \
                        _Pragma("GCC unroll 4") for (int q = 0; q < NV; q++) acc[r][q] =                             \
                            _mm512_fmadd_ps(a, b[q], acc[r][q]);                                                      \
                    }                                                                                                 \
                }                                                                                                     \
            }                                                                                                         \
        }                                                                                                             \
        const __m512 aa = _mm512_set1_ps(j->aa), ab = _mm512_set1_ps(j->ab);                                          \
        _Pragma("GCC unroll 8") for (int r = 0; r < DC_MR; r++)                                                      \
        {                                                                                                             \
            if (r >= rows) break;                                                                                     \
            const __m512 bias = _mm512_set1_ps(j->bias ? j->bias[m0 + r] : 0.0f);                                    \
            float *yp = j->y + (plane0 + r) * j->ohw;                                                                 \
            const float *zp = j->z ? j->z + (plane0 + r) * j->ohw : NULL;                                             \
            _Pragma("GCC unroll 4") for (int q = 0; q < NV; q++)                                                     \
            {                                                                                                         \
                int64_t o = tl->opos[q];                                                                              \
                _mm512_mask_storeu_ps(yp + o, tl->st[q],                                                              \
                                      pg_epi16(acc[r][q], bias, zp ? zp + o : NULL, tl->st[q], j->act, aa, ab,        \
                                               j->res));                                                              \
            }                                                                                                         \
        }                                                                                                             \
    }

DC_KERNEL(1, 1)
DC_KERNEL(2, 1)
DC_KERNEL(3, 1)
DC_KERNEL(1, 2)
DC_KERNEL(2, 2)
DC_KERNEL(3, 2)

typedef void (*dc_fn)(const dc_job *, const dc_tile *, const float *, const float *, int64_t, int64_t, int64_t);
static const dc_fn dc_fns[2][DC_NV] = {{dc_run_1_1, dc_run_2_1, dc_run_3_1}, {dc_run_1_2, dc_run_2_2, dc_run_3_2}};

/* Tasks [tb, te) of the (image, group, chunk of output-channel blocks,
 * chunk of tiles) tasks: for each tile, each block of the chunk. */
static void dc_tasks(void *ctx, int64_t wi, int64_t tb, int64_t te)
{
    (void)wi;
    const dc_job *j = ctx;
    const bd_conv_geom *g = j->g;
    dc_tile tl;
    for (int64_t task = tb; task < te; task++) {
        int64_t tc = task % j->tchunks, rest = task / j->tchunks;
        int64_t mc = rest % j->mchunks, pair = rest / j->mchunks, n = pair / g->group, gi = pair % g->group;
        const float *xg = j->x + (n * g->c_in + gi * j->cg) * j->hw;
        int64_t t1 = BD_MIN((tc + 1) * j->tchunk, j->v.ntile);
        int64_t mb1 = BD_MIN((mc + 1) * j->mchunk, j->mblocks);
        for (int64_t tile = tc * j->tchunk; tile < t1; tile++) {
            int64_t v0;
            int nv;
            dc_tile_span(&j->v, tile, &v0, &nv);
            dc_tile_make(j, v0, nv, &tl);
            dc_fn fn = dc_fns[j->v.split ? 0 : j->v.s2 - 1][nv - 1];
            for (int64_t mb = mc * j->mchunk; mb < mb1; mb++) {
                int64_t m0 = gi * j->mg + mb * DC_MR;
                fn(j, &tl, xg, j->wpk + (gi * j->mblocks + mb) * DC_MR * j->kk, BD_MIN((int64_t)DC_MR, j->mg - mb * DC_MR), n * g->c_out + m0, m0);
            }
        }
    }
}

/* The weights of each (group, block of DC_MR output channels) as the
 * kernels read them: block of cb input channels by block, tap by tap, input
 * channel by input channel, DC_MR values each (0 past the group's last
 * output channel). */
static void dc_pack(const dc_job *j, int64_t groups)
{
    float *o = j->wpk;
    for (int64_t gi = 0; gi < groups; gi++)
        for (int64_t mb = 0; mb < j->mblocks; mb++)
            for (int64_t c0 = 0; c0 < j->cg; c0 += j->cb)
                for (int64_t t = 0; t < j->taps; t++)
                    for (int64_t c = c0; c < BD_MIN(c0 + j->cb, j->cg); c++)
                        for (int64_t r = 0; r < DC_MR; r++, o++) {
                            int64_t m = mb * DC_MR + r;
                            *o = m < j->mg ? j->wt[(gi * j->mg + m) * j->kk + c * j->taps + t] : 0.0f;
                        }
}

/* dc_split: planes [begin, end) of the input, each row's even columns then
 * its odd ones, Wp floats apart (an odd width leaves the last odd slot
 * unwritten: no mask ever loads it). */
typedef struct dc_split_job {
    const float *x;
    float *xs;
    int64_t H, W, Wp;
} dc_split_job;

__attribute__((target("avx512f"))) static void dc_split(void *ctx, int64_t begin, int64_t end)
{
    const dc_split_job *s = ctx;
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    for (int64_t r = begin * s->H; r < end * s->H; r++) {
        const float *src = s->x + r * s->W;
        float *de = s->xs + r * 2 * s->Wp, *dodd = de + s->Wp;
        for (int64_t j = 0; j < s->Wp; j += 16) {
            int64_t c = 2 * j, left = s->W - c; /* input columns [c, c + 32) */
            __mmask16 m0 = (__mmask16)(left >= 16 ? 0xFFFF : ((uint32_t)1 << left) - 1);
            __mmask16 m1 = (__mmask16)(left >= 32 ? 0xFFFF : left > 16 ? ((uint32_t)1 << (left - 16)) - 1 : 0);
            __m512 a = _mm512_maskz_loadu_ps(m0, src + c), b = _mm512_maskz_loadu_ps(m1, src + c + 16);
            int64_t ne = BD_MIN((int64_t)16, s->Wp - j), no = BD_MIN((int64_t)16, s->W / 2 - j);
            _mm512_mask_storeu_ps(de + j, (__mmask16)(((uint32_t)1 << ne) - 1), _mm512_permutex2var_ps(a, even, b));
            if (no > 0)
                _mm512_mask_storeu_ps(dodd + j, (__mmask16)(((uint32_t)1 << no) - 1), _mm512_permutex2var_ps(a, odd, b));
        }
    }
}

#define DC_MIN_WORK (1 << 20)      /* multiply-adds per thread worth a thread */
#define DC_BIG_WEIGHTS (64 * 1024) /* floats of weights ... */
#define DC_FEW_OUTPUTS 512         /* ... over fewer outputs per channel than this: not here */
#ifndef DC_SPLIT_MIN_C
#define DC_SPLIT_MIN_C 4 /* input channels from which column stride 2 reads a split copy */
#endif

int bd_conv_direct(const bd_kernel *k, const bd_conv_geom *g, const win3 *w)
{
    int64_t cg = g->c_in / g->group, mg = g->c_out / g->group;
    if (cg < 2 || mg < 1 || w->k[0] != 1 || w->img[0] != 1 || w->grid[0] != 1 ||
        (w->s[2] != 1 && w->s[2] != 2) || w->k[1] * w->k[2] > DC_MAX_TAPS)
        return 0;
    dc_job *j = bd_malloc(sizeof *j);
    if (!j) return -1; /* out of memory: the caller fails (no allocation is worked around) */
    const bd_conv_params *pa = k->node->params;
    dc_geo *v = &j->v;
    v->H = w->img[1], v->W = w->img[2], v->OH = w->grid[1], v->OW = w->grid[2];
    v->K1 = w->k[1], v->K2 = w->k[2], v->s1 = w->s[1], v->s2 = w->s[2], v->d1 = w->d[1], v->d2 = w->d[2];
    v->p1 = w->pb[1], v->p2 = w->pb[2];
    v->flat = v->s1 == 1 && v->s2 == 1 && v->OW == v->W;
    v->split = v->s2 == 2 && cg >= DC_SPLIT_MIN_C;
    v->Wp = (v->W + 1) / 2;
    v->vpr = BD_CEIL_DIV(v->OW, (int64_t)16);
    v->nvec = v->flat ? BD_CEIL_DIV(v->OH * v->OW, (int64_t)16) : v->OH * v->vpr;
    v->ntile = BD_CEIL_DIV(v->nvec, (int64_t)DC_NV);
    /* Left to conv.c's paths: a row mode whose rows fill under 3/4 of a
     * vector, and big weights over few outputs, where packing the weights
     * costs more than the kernel saves (Xeon, AVX-512, one thread: 1x1
     * 512->512 on 7x7 290 us there against 412 here, 3x3 192->384 stride 2
     * on 27x27 2.3 ms against 3.3; stride 2 with its split copy up to twice
     * as many outputs: 96->192 on 52x52, 2.05 ms there against 2.43). */
    if ((!v->flat && v->OW < 12) || (g->c_out * cg * w->taps > DC_BIG_WEIGHTS &&
                                      g->n * v->OH * v->OW < (v->s2 == 2 ? 2 : 1) * DC_FEW_OUTPUTS)) {
        bd_free(j);
        return 0;
    }
    j->g = g;
    j->x = k->in[0].data, j->wt = k->in[1].data;
    j->bias = k->n_in > 2 && k->in[2].data ? k->in[2].data : NULL;
    j->z = pa->res != BD_RES_NONE && k->n_in > 3 ? k->in[3].data : NULL;
    j->y = k->out[0].data;
    j->cg = cg, j->mg = mg, j->taps = w->taps, j->kk = cg * w->taps;
    j->hw = v->split ? v->H * 2 * v->Wp : w->img_size, j->ohw = w->grid_size;
    j->act = pa->act, j->res = j->z ? pa->res : BD_RES_NONE, j->aa = pa->act_a, j->ab = pa->act_b;
    for (int64_t kh = 0, t = 0; kh < v->K1; kh++)
        for (int64_t kw = 0; kw < v->K2; kw++, t++) {
            int64_t e = kw * v->d2 - v->p2, ph = e & 1;
            j->toff[t] = v->split ? kh * v->d1 * 2 * v->Wp + ph * v->Wp + (e - ph) / 2 : kh * v->d1 * v->W + kw * v->d2;
        }
    /* input channels per block: the rows a tile reads from them stay in L1 over the taps */
    int64_t chan_bytes =
        DC_NV * v->K1 * ((v->split ? 16 : 16 * v->s2) + (v->K2 - 1) * v->d2) * (int64_t)sizeof(float);
    j->cb = w->taps == 1 ? cg : BD_MAX((int64_t)1, BD_MIN(cg, (int64_t)DC_L1_INPUT / chan_bytes));
    j->mblocks = BD_CEIL_DIV(mg, (int64_t)DC_MR);
    j->mchunk = BD_MAX((int64_t)1, BD_MIN(j->mblocks, (int64_t)DC_WCHUNK / (DC_MR * j->kk * (int64_t)sizeof(float))));
    j->mchunks = BD_CEIL_DIV(j->mblocks, j->mchunk);
    /* tiles per task: about 4 tasks per thread when the work allows */
    int64_t pairs = g->n * g->group, th = BD_MAX(k->threads, 1);
    int64_t work = pairs * mg * j->kk * v->OH * v->OW;
    int64_t workers = BD_MAX((int64_t)1, BD_MIN(th, work / DC_MIN_WORK));
    int64_t want = 4 * workers, have = pairs * j->mchunks;
    j->tchunk = have >= want ? v->ntile : BD_MAX((int64_t)1, v->ntile * have / want);
    j->tchunks = BD_CEIL_DIV(v->ntile, j->tchunk);
    int64_t tasks = pairs * j->mchunks * j->tchunks;
    j->wpk = bd_malloc((size_t)(g->group * j->mblocks * DC_MR * j->kk) * sizeof(float));
    if (!j->wpk) {
        bd_free(j);
        return -1;
    }
    dc_pack(j, g->group);
    float *xs = NULL;
    if (v->split && bd_numel(&k->out[0]) > 0) {
        xs = bd_malloc((size_t)(g->n * g->c_in * j->hw) * sizeof(float));
        if (!xs) {
            bd_free(j->wpk);
            bd_free(j);
            return -1;
        }
        dc_split_job sj = {j->x, xs, v->H, v->W, v->Wp};
        bd_parallel_for((int)workers, g->n * g->c_in, BD_MAX((int64_t)1, (int64_t)65536 / BD_MAX(j->hw, (int64_t)1)),
                        dc_split, &sj);
        j->x = xs;
    }
    if (bd_numel(&k->out[0]) > 0) bd_parallel_claim((int)workers, tasks, 1, dc_tasks, j);
    bd_free(xs);
    bd_free(j->wpk);
    bd_free(j);
    return 1;
}
#else
int bd_conv_direct(const bd_kernel *k, const bd_conv_geom *g, const win3 *w)
{
    (void)k, (void)g, (void)w;
    return 0;
}
#endif
