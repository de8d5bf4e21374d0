/* conv.c: CPU kernels of the conv op family. Conv runs, on CPUs with
 * AVX-512, as the direct NCHW kernel of convdirect.c where it takes the
 * shape; otherwise, on CPUs with AVX2 or AVX-512, as an implicit GEMM over a
 * padded, stride-phase-split copy of the input with its own microkernels (a
 * direct vector loop when each group has one input channel, or convdw.c's
 * for depthwise 3x3 and 5x5 on AVX-512); elsewhere as
 * im2col + SGEMM (1x1 stride-1 unpadded: SGEMM straight on the input), with
 * a scalar direct loop for depthwise. ConvTranspose runs as SGEMM + col2im.
 * 1-D and 2-D are handled as 3-D with leading unit dims. float16 and
 * bfloat16 run the float32 kernels on widened copies and round the output
 * once. */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/parallel.h"
#include "backend/cpu/sgemm.h"
#include "ops/conv.h"
#include "convwin.h"
#include "convepi.h"
#include "convdirect.h"
#include "convnhwc.h"
#include "fbuf.h"

#include <cblas.h>
#include <limits.h>
#include <stdatomic.h>
#include <string.h>


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
 * channel) planes [nc0, nc1) (see src/passes/fuse_conv.c). */
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

/* One input channel read through long windows at few places (an STFT
 * written as a Conv: 1x1x640 by 258x1x256, 4 outputs): a product of (output
 * channels x taps) by (taps x outputs), which im2col + SGEMM runs at GEMM
 * speed where the per-plane loops walk a handful of outputs at a time
 * (Intel Xeon, 2 threads: 381 -> 33 us for that one). */
static int long_windows(const bd_conv_geom *g, const win3 *w)
{
    return g->c_in == 1 && g->group == 1 && w->taps >= 32 && 2 * w->grid_size <= w->taps;
}

static braid_status check_blas_dims(int64_t a, int64_t b, int64_t c, bd_err *e)
{
    if (a > INT_MAX || b > INT_MAX || c > INT_MAX)
        return BD_FAIL(e, BRAID_ERR_LIMIT, "a matrix dim of this convolution (%lld, %lld, %lld) "
                       "is beyond the BLAS limit of %d", (long long)a, (long long)b,
                       (long long)c, INT_MAX);
    return BRAID_OK;
}

/* ---- Padded implicit GEMM (AVX2 / AVX-512) --------------------------------------
 * The input of each channel is copied once into a zero-padded buffer split
 * into stride phases (s0*s1*s2 planes of ph0 x ph1 x ph2), so that every tap
 * of every output reads a contiguous run: output (od, oh, ow) sits at flat
 * index q = (od ph1 + oh) ph2 + ow and tap (c, kd, kh, kw) at q + off[c, t].
 * A convolution is then a GEMM W (Mg x Cg*taps) times the buffer rows
 * B[k] = buf + off[k] over q in [0, Q), with no im2col; the columns with
 * ow >= OW or oh >= OH are computed and dropped (2/OW extra for a 3x3 pad 1).
 * A stride-1 unpadded convolution reads the input as it is. Each output is
 * one FMA chain over k in order, starting at 0, then the epilogue (bias,
 * residual, activation): the same bits for any split over threads. */

typedef struct pgeo {
    int64_t ph[3], out[3]; /* phase plane dims; output dims */
    int64_t plane, chan;   /* floats in one phase plane, in one channel's buffer */
    int64_t q;             /* the flat output range [0, q) */
    int copy;              /* 0: the buffer is the input itself */
} pgeo;

static void pgeo_make(const win3 *w, pgeo *p)
{
    p->copy = 0;
    for (int i = 0; i < 3; i++) {
        p->out[i] = w->grid[i];
        p->ph[i] = w->grid[i] + ((w->k[i] - 1) * w->d[i]) / w->s[i];
        p->copy |= w->s[i] != 1 || w->pb[i] != 0 || p->ph[i] != w->img[i];
    }
    p->plane = p->ph[0] * p->ph[1] * p->ph[2];
    p->chan = p->plane * w->s[0] * w->s[1] * w->s[2];
    p->q = ((p->out[0] - 1) * p->ph[1] + p->out[1] - 1) * p->ph[2] + p->out[2];
}

/* off[c * taps + t]: where tap t of channel c reads, relative to q. */
static void pgeo_offsets(const win3 *w, const pgeo *p, int64_t channels, int64_t *off)
{
    for (int64_t c = 0, k = 0; c < channels; c++)
        for (int64_t kd = 0; kd < w->k[0]; kd++)
            for (int64_t kh = 0; kh < w->k[1]; kh++)
                for (int64_t kw = 0; kw < w->k[2]; kw++, k++) {
                    int64_t a = kd * w->d[0], b = kh * w->d[1], e = kw * w->d[2];
                    int64_t phase = ((a % w->s[0]) * w->s[1] + b % w->s[1]) * w->s[2] + e % w->s[2];
                    off[k] = c * p->chan + phase * p->plane + ((a / w->s[0]) * p->ph[1] + b / w->s[1]) * p->ph[2] +
                             e / w->s[2];
                }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define PG_X86 1

/* One padded input row into its column phases (s2 of 1 or 2), 16 columns a
 * step with masked loads (lanes outside the input are neither read nor
 * faulted: AVX-512 masked loads suppress faults) and no call: phase r, column
 * jw holds input column r + jw s2 - pb when that is in [0, n), else 0; each
 * phase is ph floats, the phases `plane` floats apart. src is NULL for a
 * row above or below the input. */
__attribute__((target("avx512f"))) static void pf_row512(float *row, const float *src, int64_t n, int64_t pb,
                                                         int64_t s2, int64_t ph, int64_t plane)
{
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    for (int64_t r = 0; r < s2; r++) {
        float *dst = row + r * plane;
        for (int64_t j = 0; j < ph; j += 16) {
            __mmask16 st = (__mmask16)(ph - j >= 16 ? 0xFFFF : (1u << (ph - j)) - 1);
            if (!src) {
                _mm512_mask_storeu_ps(dst + j, st, _mm512_setzero_ps());
                continue;
            }
            int64_t c0 = r + j * s2 - pb; /* the input column of lane 0 */
            if (c0 >= 0 && c0 + 16 * s2 <= n && ph - j >= 16) { /* inside the row: no masks */
                __m512 v = _mm512_loadu_ps(src + c0);
                if (s2 == 2) v = _mm512_permutex2var_ps(v, even, _mm512_loadu_ps(src + c0 + 16));
                _mm512_storeu_ps(dst + j, v);
                continue;
            }
            /* lanes i with 0 <= c0 + i < n */
            __m512i ci = _mm512_add_epi32(_mm512_set1_epi32((int)c0), lane);
            __mmask16 m0 = _mm512_cmpge_epi32_mask(ci, _mm512_setzero_si512()) &
                           _mm512_cmplt_epi32_mask(ci, _mm512_set1_epi32((int)n));
            __m512 v = _mm512_maskz_loadu_ps(m0, src + c0);
            if (s2 == 2) {
                __m512i c1 = _mm512_add_epi32(ci, _mm512_set1_epi32(16));
                __mmask16 m1 = _mm512_cmpge_epi32_mask(c1, _mm512_setzero_si512()) &
                               _mm512_cmplt_epi32_mask(c1, _mm512_set1_epi32((int)n));
                v = _mm512_permutex2var_ps(v, even, _mm512_maskz_loadu_ps(m1, src + c0 + 16));
            }
            _mm512_mask_storeu_ps(dst + j, st, v);
        }
    }
}

#endif

/* dst[j] = src[j s], j in [0, n): one row of a stride phase. */
static void strided_copy(float *dst, const float *src, int64_t n, int64_t s)
{
    if (s == 2) {
        bd_gather2_f32(dst, src, n);
        return;
    }
    for (int64_t j = 0; j < n; j++) dst[j] = src[j * s];
}

typedef struct pfill_job {
    const win3 *w;
    const pgeo *p;
    const float *x;
    float *buf;
} pfill_job;

#define PF_PHASES 8 /* column phases whose spans pfill works out once */

/* [a, b): the columns jw of phase r whose padded column r + jw s2 is in [lo, hi). */
static void pf_span(const pgeo *p, int64_t s2, int64_t r, int64_t lo, int64_t hi, int64_t *a, int64_t *b)
{
    *a = BD_MIN(lo > r ? (lo - r + s2 - 1) / s2 : 0, p->ph[2]);
    *b = BD_MAX(*a, BD_MIN(hi > r ? (hi - r + s2 - 1) / s2 : 0, p->ph[2]));
}

/* Channels [begin, end) of the padded, phase-split buffer. */
static void pfill(void *ctx, int64_t begin, int64_t end)
{
    const pfill_job *j = ctx;
    const win3 *w = j->w;
    const pgeo *p = j->p;
    int64_t s0 = w->s[0], s1 = w->s[1], s2 = w->s[2], wp = p->ph[2] * s2;
    int64_t lo = BD_MIN(w->pb[2], wp), hi = BD_MIN(w->pb[2] + w->img[2], wp);
    /* Phase r of a row that exists: columns [ja, jb) come from the input
     * (padded column r + jw s2 in [lo, hi)), the others are 0. */
    int64_t ja[PF_PHASES], jb[PF_PHASES];
    for (int64_t r = 0; r < BD_MIN(s2, (int64_t)PF_PHASES); r++) pf_span(p, s2, r, lo, hi, &ja[r], &jb[r]);
#ifdef PG_X86
    /* pf_row512 works out column indices in 32 bits */
    int fast = bd_cpu_vec_level() == 2 && w->img[2] + wp + 32 < INT_MAX;
#endif
    for (int64_t c = begin; c < end; c++) {
        const float *xc = j->x + c * w->img_size;
        float *bc = j->buf + c * p->chan;
        for (int64_t pd = 0, rd = 0, qd = 0; pd < p->ph[0] * s0; pd++) {
            for (int64_t ph = 0, rh = 0, qh = 0; ph < p->ph[1] * s1; ph++) {
                int64_t id = pd - w->pb[0], ih = ph - w->pb[1];
                int ok = id >= 0 && id < w->img[0] && ih >= 0 && ih < w->img[1];
                const float *src = xc + (id * w->img[1] + ih) * w->img[2];
                float *row = bc + (rd * s1 + rh) * s2 * p->plane + (qd * p->ph[1] + qh) * p->ph[2];
                if (++rh == s1) rh = 0, qh++;
#ifdef PG_X86
                if (s2 <= 2 && fast) {
                    pf_row512(row, ok ? src : NULL, w->img[2], w->pb[2], s2, p->ph[2], p->plane);
                    continue;
                }
#endif
                if (s2 == 1) {
                    int64_t h = ok ? hi : lo;
                    memset(row, 0, (size_t)lo * sizeof *row);
                    if (h > lo) memcpy(row + lo, src, (size_t)(h - lo) * sizeof *row);
                    memset(row + h, 0, (size_t)(wp - h) * sizeof *row);
                    continue;
                }
                for (int64_t r = 0; r < s2; r++) { /* phase r holds padded columns r, r + s2, ... */
                    float *dst = row + r * p->plane;
                    int64_t a = 0, b = 0;
                    if (ok && r < PF_PHASES) a = ja[r], b = jb[r];
                    else if (ok) pf_span(p, s2, r, lo, hi, &a, &b);
                    for (int64_t jw = 0; jw < a; jw++) dst[jw] = 0.0f;
                    strided_copy(dst + a, src + r + a * s2 - w->pb[2], b - a, s2);
                    for (int64_t jw = b; jw < p->ph[2]; jw++) dst[jw] = 0.0f;
                }
            }
            if (++rd == s0) rd = 0, qd++;
        }
    }
}

#ifdef PG_X86
#define PG_MR 8   /* output channels per microkernel */
#define PG_QB 128 /* flat outputs per task block */
#define PG_KC 128 /* k per pass over the block: 32 columns of it fill 16 KiB */

/* e^x in 8 lanes, step by step as ops/vmath.h's bd_vexpf. */
__attribute__((target("avx2"))) static inline __m256 pg_exp8(__m256 x)
{
    const __m256 magic = _mm256_set1_ps(12582912.0f), lo = _mm256_set1_ps(-104.0f), hi = _mm256_set1_ps(89.0f);
    x = _mm256_blendv_ps(x, lo, _mm256_cmp_ps(x, lo, _CMP_LT_OQ));
    x = _mm256_blendv_ps(x, hi, _mm256_cmp_ps(x, hi, _CMP_GT_OQ));
    __m256 t = _mm256_add_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)), magic);
    __m256i n = _mm256_sub_epi32(_mm256_castps_si256(t), _mm256_castps_si256(magic));
    __m256 nf = _mm256_sub_ps(t, magic);
    __m256 r = _mm256_sub_ps(x, _mm256_mul_ps(nf, _mm256_set1_ps(0.693359375f)));
    r = _mm256_sub_ps(r, _mm256_mul_ps(nf, _mm256_set1_ps(-2.12194440e-4f)));
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(p, r), r), r), _mm256_set1_ps(1.0f));
    __m256i n1 = _mm256_srai_epi32(_mm256_add_epi32(n, _mm256_srli_epi32(n, 31)), 1), n2 = _mm256_sub_epi32(n, n1);
    const __m256i bias = _mm256_set1_epi32(127);
    __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

/* The epilogue of 8 sums v (bd_conv_epilogue, lane by lane: NaN goes
 * through as the scalar code lets it). */
__attribute__((target("avx2"))) static inline __m256 pg_epi8(__m256 v, __m256 bias, const float *z, __m256i mask,
                                                              int act, __m256 aa, __m256 ab, int res)
{
    v = _mm256_add_ps(v, bias);
    if (res == BD_RES_PRE) v = _mm256_add_ps(v, _mm256_maskload_ps(z, mask));
    switch (act) {
    case BD_ACT_RELU: v = _mm256_max_ps(v, _mm256_setzero_ps()); break; /* NaN -> 0, as v > 0 ? v : 0 */
    case BD_ACT_LEAKY:
        v = _mm256_blendv_ps(_mm256_mul_ps(v, aa), v, _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GE_OQ));
        break;
    case BD_ACT_CLIP:
        v = _mm256_blendv_ps(v, aa, _mm256_cmp_ps(v, aa, _CMP_LT_OQ));
        v = _mm256_blendv_ps(v, ab, _mm256_cmp_ps(v, ab, _CMP_GT_OQ));
        break;
    case BD_ACT_HSIGMOID:
    case BD_ACT_HSWISH: { /* unit(a v + b) (HardSwish: a = 1/6, b = 1/2), times v for HardSwish */
        __m256 u = act == BD_ACT_HSWISH ? _mm256_add_ps(_mm256_mul_ps(v, _mm256_set1_ps((float)(1.0 / 6.0))),
                                                          _mm256_set1_ps(0.5f))
                                        : _mm256_add_ps(_mm256_mul_ps(aa, v), ab);
        u = _mm256_blendv_ps(u, _mm256_setzero_ps(), _mm256_cmp_ps(u, _mm256_setzero_ps(), _CMP_LT_OQ));
        u = _mm256_blendv_ps(u, _mm256_set1_ps(1.0f), _mm256_cmp_ps(u, _mm256_set1_ps(1.0f), _CMP_GT_OQ));
        v = act == BD_ACT_HSWISH ? _mm256_mul_ps(v, u) : u;
        break;
    }
    case BD_ACT_SIGMOID:
    case BD_ACT_SILU: { /* 1 / (1 + e^-v), times v for x sigmoid(x) */
        const __m256 one = _mm256_set1_ps(1.0f);
        __m256 sg = _mm256_div_ps(one, _mm256_add_ps(one, pg_exp8(_mm256_sub_ps(_mm256_setzero_ps(), v))));
        v = act == BD_ACT_SILU ? _mm256_mul_ps(v, sg) : sg;
        break;
    }
    default: break;
    }
    if (res == BD_RES_POST) v = _mm256_add_ps(v, _mm256_maskload_ps(z, mask));
    return v;
}

/* Writes n sums of the flat range starting at q0 (tmp) to the output plane y
 * (and its residual plane z), dropping the padding columns, through the
 * epilogue (AVX2: only the kernels below call it). */
__attribute__((target("avx2"))) static void pscatter(const pgeo *p, const float *tmp, int64_t q0, int64_t n, float *y,
                                                     const float *z, float b0, int act, float fa, float fb, int res)
{
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), all = _mm256_set1_epi32(-1);
    const __m256 bias = _mm256_set1_ps(b0), aa = _mm256_set1_ps(fa), ab = _mm256_set1_ps(fb);
    int64_t ow = q0 % p->ph[2], r = q0 / p->ph[2], oh = r % p->ph[1], od = r / p->ph[1];
    for (int64_t i = 0; i < n;) {
        int64_t seg = BD_MIN(p->ph[2] - ow, n - i);
        if (oh < p->out[1]) {
            int64_t m = BD_MIN(seg, p->out[2] - ow), at = (od * p->out[1] + oh) * p->out[2] + ow, j = 0;
            float *yr = y + at;
            const float *zr = z ? z + at : NULL, *tr = tmp + i;
            for (; j + 8 <= m; j += 8)
                _mm256_storeu_ps(yr + j, pg_epi8(_mm256_loadu_ps(tr + j), bias, zr ? zr + j : NULL, all, act, aa, ab, res));
            if (j < m) {
                __m256i mk = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(m - j)), lane);
                __m256 v = _mm256_maskload_ps(tr + j, mk);
                _mm256_maskstore_ps(yr + j, mk, pg_epi8(v, bias, zr ? zr + j : NULL, mk, act, aa, ab, res));
            }
        }
        i += seg, ow = 0;
        if (++oh == p->ph[1]) oh = 0, od++;
    }
}

/* pscatter in 16 lanes. */
__attribute__((target("avx512f"))) static void pscatter512(const pgeo *p, const float *tmp, int64_t q0, int64_t n,
                                                          float *y, const float *z, float b0, int act, float fa,
                                                          float fb, int res)
{
    const __m512 bias = _mm512_set1_ps(b0), aa = _mm512_set1_ps(fa), ab = _mm512_set1_ps(fb);
    int64_t ow = q0 % p->ph[2], r = q0 / p->ph[2], oh = r % p->ph[1], od = r / p->ph[1];
    for (int64_t i = 0; i < n;) {
        int64_t seg = BD_MIN(p->ph[2] - ow, n - i);
        if (oh < p->out[1]) {
            int64_t m = BD_MIN(seg, p->out[2] - ow), at = (od * p->out[1] + oh) * p->out[2] + ow, j = 0;
            float *yr = y + at;
            const float *zr = z ? z + at : NULL, *tr = tmp + i;
            for (; j + 16 <= m; j += 16)
                _mm512_storeu_ps(yr + j, pg_epi16(_mm512_loadu_ps(tr + j), bias, zr ? zr + j : NULL, 0xFFFF, act, aa, ab, res));
            if (j < m) {
                __mmask16 mk = (__mmask16)((1u << (m - j)) - 1);
                __m512 v = _mm512_maskz_loadu_ps(mk, tr + j);
                _mm512_mask_storeu_ps(yr + j, mk, pg_epi16(v, bias, zr ? zr + j : NULL, mk, act, aa, ab, res));
            }
        }
        i += seg, ow = 0;
        if (++oh == p->ph[1]) oh = 0, od++;
    }
}

/* pscatter at the job's vector level. */
static void pscatter_at(int lvl, const pgeo *p, const float *tmp, int64_t q0, int64_t n, float *y, const float *z,
                        float b0, int act, float fa, float fb, int res)
{
    if (lvl == 2) pscatter512(p, tmp, q0, n, y, z, b0, act, fa, fb, res);
    else pscatter(p, tmp, q0, n, y, z, b0, act, fa, fb, res);
}

/* c (PG_MR rows, ldc apart; 32 columns) (+)= the weights w (PG_MR rows, ldw
 * apart, of which the first `rows` are read: the others repeat the last; kn
 * columns) times the rows b + off[k] (columns [0, nq) read, nq <= 32): 16
 * accumulators of the 32 registers. The weights are read where they lie:
 * eight sequential streams. */
__attribute__((target("avx512f"))) static void pg_mk512(const float *w, int64_t ldw, int64_t rows, const float *b,
                                                        const int64_t *off, int64_t kn, float *c, int64_t ldc,
                                                        int init, int64_t nq)
{
    const float *wr[PG_MR];
    for (int r = 0; r < PG_MR; r++) wr[r] = w + BD_MIN((int64_t)r, rows - 1) * ldw;
    __mmask16 m0 = (__mmask16)(nq >= 16 ? 0xFFFF : (1u << nq) - 1);
    __mmask16 m1 = (__mmask16)(nq >= 32 ? 0xFFFF : nq > 16 ? (1u << (nq - 16)) - 1 : 0);
    __m512 acc[PG_MR][2];
#pragma GCC unroll 8
    for (int r = 0; r < PG_MR; r++) {
        acc[r][0] = init ? _mm512_setzero_ps() : _mm512_loadu_ps(c + r * ldc);
        acc[r][1] = init ? _mm512_setzero_ps() : _mm512_loadu_ps(c + r * ldc + 16);
    }
    for (int64_t k = 0; k < kn; k++) {
        const float *bk = b + off[k];
        __m512 b0 = _mm512_maskz_loadu_ps(m0, bk), b1 = _mm512_maskz_loadu_ps(m1, bk + 16);
#pragma GCC unroll 8
        for (int r = 0; r < PG_MR; r++) {
            __m512 a = _mm512_set1_ps(wr[r][k]);
            acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);
            acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < PG_MR; r++) {
        _mm512_storeu_ps(c + r * ldc, acc[r][0]);
        _mm512_storeu_ps(c + r * ldc + 16, acc[r][1]);
    }
}

/* The AVX2 twin of pg_mk512 on 4 rows and 16 columns (nq <= 16). */
__attribute__((target("avx2,fma"))) static void pg_mk256(const float *w, int64_t ldw, int64_t rows, const float *b,
                                                         const int64_t *off, int64_t kn, float *c, int64_t ldc,
                                                         int init, int64_t nq)
{
    const float *w0 = w, *w1 = w + BD_MIN((int64_t)1, rows - 1) * ldw, *w2 = w + BD_MIN((int64_t)2, rows - 1) * ldw;
    const float *w3 = w + BD_MIN((int64_t)3, rows - 1) * ldw;
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256i m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)nq), lane);
    __m256i m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)nq - 8), lane);
    __m256 c00, c01, c10, c11, c20, c21, c30, c31;
    if (init) {
        c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
    } else {
        c00 = _mm256_loadu_ps(c), c01 = _mm256_loadu_ps(c + 8);
        c10 = _mm256_loadu_ps(c + ldc), c11 = _mm256_loadu_ps(c + ldc + 8);
        c20 = _mm256_loadu_ps(c + 2 * ldc), c21 = _mm256_loadu_ps(c + 2 * ldc + 8);
        c30 = _mm256_loadu_ps(c + 3 * ldc), c31 = _mm256_loadu_ps(c + 3 * ldc + 8);
    }
    for (int64_t k = 0; k < kn; k++) {
        const float *bk = b + off[k];
        __m256 b0 = _mm256_maskload_ps(bk, m0), b1 = _mm256_maskload_ps(bk + 8, m1), a;
        a = _mm256_broadcast_ss(w0 + k), c00 = _mm256_fmadd_ps(a, b0, c00), c01 = _mm256_fmadd_ps(a, b1, c01);
        a = _mm256_broadcast_ss(w1 + k), c10 = _mm256_fmadd_ps(a, b0, c10), c11 = _mm256_fmadd_ps(a, b1, c11);
        a = _mm256_broadcast_ss(w2 + k), c20 = _mm256_fmadd_ps(a, b0, c20), c21 = _mm256_fmadd_ps(a, b1, c21);
        a = _mm256_broadcast_ss(w3 + k), c30 = _mm256_fmadd_ps(a, b0, c30), c31 = _mm256_fmadd_ps(a, b1, c31);
    }
    _mm256_storeu_ps(c, c00), _mm256_storeu_ps(c + 8, c01);
    _mm256_storeu_ps(c + ldc, c10), _mm256_storeu_ps(c + ldc + 8, c11);
    _mm256_storeu_ps(c + 2 * ldc, c20), _mm256_storeu_ps(c + 2 * ldc + 8, c21);
    _mm256_storeu_ps(c + 3 * ldc, c30), _mm256_storeu_ps(c + 3 * ldc + 8, c31);
}

/* Depthwise: y[q] = sum over taps t in order of wt[t] * b[q + off[t]], q in
 * [0, nq), nq <= 64, into tmp. */
__attribute__((target("avx512f"))) static void pg_dw512(const float *wt, const float *b, const int64_t *off,
                                                        int64_t taps, float *tmp, int64_t nq)
{
    __mmask16 m[4];
    for (int i = 0; i < 4; i++) {
        int64_t r = nq - 16 * i;
        m[i] = (__mmask16)(r >= 16 ? 0xFFFF : r > 0 ? (1u << r) - 1 : 0);
    }
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t t = 0; t < taps; t++) {
        const float *bt = b + off[t];
        __m512 v = _mm512_set1_ps(wt[t]);
        a0 = _mm512_fmadd_ps(v, _mm512_maskz_loadu_ps(m[0], bt), a0);
        a1 = _mm512_fmadd_ps(v, _mm512_maskz_loadu_ps(m[1], bt + 16), a1);
        a2 = _mm512_fmadd_ps(v, _mm512_maskz_loadu_ps(m[2], bt + 32), a2);
        a3 = _mm512_fmadd_ps(v, _mm512_maskz_loadu_ps(m[3], bt + 48), a3);
    }
    _mm512_storeu_ps(tmp, a0), _mm512_storeu_ps(tmp + 16, a1);
    _mm512_storeu_ps(tmp + 32, a2), _mm512_storeu_ps(tmp + 48, a3);
}

__attribute__((target("avx2,fma"))) static void pg_dw256(const float *wt, const float *b, const int64_t *off,
                                                         int64_t taps, float *tmp, int64_t nq)
{
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256i m[4];
    for (int i = 0; i < 4; i++) m[i] = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(nq - 8 * i)), lane);
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t t = 0; t < taps; t++) {
        const float *bt = b + off[t];
        __m256 v = _mm256_broadcast_ss(wt + t);
        a0 = _mm256_fmadd_ps(v, _mm256_maskload_ps(bt, m[0]), a0);
        a1 = _mm256_fmadd_ps(v, _mm256_maskload_ps(bt + 8, m[1]), a1);
        a2 = _mm256_fmadd_ps(v, _mm256_maskload_ps(bt + 16, m[2]), a2);
        a3 = _mm256_fmadd_ps(v, _mm256_maskload_ps(bt + 24, m[3]), a3);
    }
    _mm256_storeu_ps(tmp, a0), _mm256_storeu_ps(tmp + 8, a1);
    _mm256_storeu_ps(tmp + 16, a2), _mm256_storeu_ps(tmp + 24, a3);
}

typedef struct pg_job {
    const bd_kernel *k;
    const bd_conv_geom *g;
    const pgeo *p;
    const float *buf, *wt, *bias, *z;
    const int64_t *off;
    const win3 *w;
    float *y, *tmp; /* tmp: workers x mb PG_MR x PG_QB (depthwise: workers x chan, or NULL) */
    int64_t kk, mg, mb, qblocks, workers, dmc; /* dmc: output channels per depthwise task */
    int lvl;
} pg_job;

/* Tasks [tb, te) of the (image, group, block of PG_QB flat outputs) tasks,
 * claimed by worker wi (bd_parallel_claim) with its own sums tmp (mb PG_MR
 * rows x PG_QB). For each PG_KC slice of k
 * and each microkernel's columns, every PG_MR rows of the group's weights
 * pass over that slice of the buffer while it is in L1; then the epilogue
 * writes the rows out. */
static void pg_tasks(void *ctx, int64_t wi, int64_t tb, int64_t te)
{
    const pg_job *j = ctx;
    const bd_conv_geom *g = j->g;
    const pgeo *p = j->p;
    const bd_conv_params *pa = j->k->node->params;
    int res = j->z ? pa->res : BD_RES_NONE;
    int64_t cg = g->c_in / g->group, nr = j->lvl == 2 ? 32 : 16, ys = p->out[0] * p->out[1] * p->out[2];
    {
        float *tmp = j->tmp + wi * j->mb * PG_MR * PG_QB;
        for (int64_t task = tb; task < te; task++) {
            int64_t qb = task % j->qblocks, pair = task / j->qblocks, n = pair / g->group, gi = pair % g->group;
            int64_t q0 = qb * PG_QB, nq = BD_MIN((int64_t)PG_QB, p->q - q0);
            const float *b = j->buf + (n * g->c_in + gi * cg) * p->chan + q0;
            const float *wg = j->wt + gi * j->mg * j->kk;
            if (j->kk == 0) memset(tmp, 0, (size_t)j->mb * PG_MR * PG_QB * sizeof *tmp);
            for (int64_t k0 = 0; k0 < j->kk; k0 += PG_KC) {
                int64_t kn = BD_MIN((int64_t)PG_KC, j->kk - k0);
                for (int64_t qs = 0; qs < nq; qs += nr)
                    for (int64_t mbi = 0; mbi < j->mb; mbi++) {
                        const float *wm = wg + mbi * PG_MR * j->kk + k0;
                        int64_t rows = BD_MIN((int64_t)PG_MR, j->mg - mbi * PG_MR);
                        float *c = tmp + mbi * PG_MR * PG_QB + qs;
                        if (j->lvl == 2) {
                            pg_mk512(wm, j->kk, rows, b + qs, j->off + k0, kn, c, PG_QB, k0 == 0, nq - qs);
                        } else {
                            pg_mk256(wm, j->kk, rows, b + qs, j->off + k0, kn, c, PG_QB, k0 == 0, nq - qs);
                            if (rows > 4)
                                pg_mk256(wm + 4 * j->kk, j->kk, rows - 4, b + qs, j->off + k0, kn, c + 4 * PG_QB, PG_QB,
                                         k0 == 0, nq - qs);
                        }
                    }
            }
            for (int64_t m = 0; m < j->mg; m++) {
                int64_t oc = gi * j->mg + m, plane = n * g->c_out + oc;
                pscatter_at(j->lvl, p, tmp + m * PG_QB, q0, nq, j->y + plane * ys, j->z ? j->z + plane * ys : NULL,
                         j->bias ? j->bias[oc] : 0.0f, pa->act, pa->act_a, pa->act_b, res);
            }
        }
    }
}

/* Depthwise tasks [tb, te) of the (image, input channel, chunk of dmc of
 * its mg output channels) tasks, claimed as pg_tasks's are: each task
 * pads its input plane into the worker's buffer (tmp, p->chan floats) when
 * the input needs it, and runs its output channels over it while it is in
 * cache. */
static void pg_dw_tasks(void *ctx, int64_t wi, int64_t tb, int64_t te)
{
    const pg_job *j = ctx;
    const bd_conv_geom *g = j->g;
    const pgeo *p = j->p;
    const bd_conv_params *pa = j->k->node->params;
    int res = j->z ? pa->res : BD_RES_NONE;
    int64_t ys = p->out[0] * p->out[1] * p->out[2], nr = j->lvl == 2 ? 64 : 32;
    int64_t chunks = BD_CEIL_DIV(j->mg, j->dmc);
    float tmp[PG_QB];
    {
        float *buf = j->tmp ? j->tmp + wi * j->p->chan : NULL;
        for (int64_t task = tb; task < te; task++) {
            int64_t ch = task / chunks, m0 = (task % chunks) * j->dmc, m1 = BD_MIN(m0 + j->dmc, j->mg);
            const float *b = j->buf + ch * p->chan;
            if (buf) {
                pfill_job fj = {j->w, p, j->buf + ch * j->w->img_size, buf};
                pfill(&fj, 0, 1);
                b = buf;
            }
            for (int64_t mi = m0; mi < m1; mi++) {
                int64_t n = ch / g->c_in, m = (ch % g->c_in) * j->mg + mi, plane = n * g->c_out + m;
                const float *wt = j->wt + m * j->kk;
                for (int64_t q0 = 0; q0 < p->q; q0 += PG_QB) {
                    int64_t nq = BD_MIN((int64_t)PG_QB, p->q - q0);
                    for (int64_t qs = 0; qs < nq; qs += nr) {
                        if (j->lvl == 2) pg_dw512(wt, b + q0 + qs, j->off, j->kk, tmp + qs, nq - qs);
                        else pg_dw256(wt, b + q0 + qs, j->off, j->kk, tmp + qs, nq - qs);
                    }
                    pscatter_at(j->lvl, p, tmp, q0, nq, j->y + plane * ys, j->z ? j->z + plane * ys : NULL,
                             j->bias ? j->bias[m] : 0.0f, pa->act, pa->act_a, pa->act_b, res);
                }
            }
        }
    }
}

#define PG_MIN_WORK (1 << 20) /* multiply-adds per thread worth a thread */

/* ---- Few outputs per channel: dot products ----------------------------------------
 * With q flat outputs under PG_DOT_MAX_Q (a 1x1 convolution on a 1x1 map,
 * the squeeze-excitation convolutions, a classifier head), the microkernels
 * above would fill a lane or two of each vector. Instead the q columns of
 * each (image, group) are gathered into rows A (q x k) and each output is the
 * dot product of a weight row with one of them (bd_sgemm_dot: vectors along
 * k, the weights read once): its bits depend on its own row pair only,
 * never on how the output channels are split over threads. */
#define PG_DOT_MAX_Q 8

typedef struct pdot_job {
    const pg_job *j;
    const float *a; /* (image, group) x q rows of kk, lda apart */
    int64_t lda;
    float *c;       /* (image, group) x q x mg */
    int64_t mchunk, chunks, kernel;
} pdot_job;

/* Tasks [begin, end) of (image, group, chunk of output channels). */
static void pdot_tasks(void *ctx, int64_t wi, int64_t begin, int64_t end)
{
    const pdot_job *d = ctx;
    const pg_job *j = d->j;
    const pgeo *p = j->p;
    const bd_conv_params *pa = j->k->node->params;
    int res = j->z ? pa->res : BD_RES_NONE;
    int64_t ys = p->out[0] * p->out[1] * p->out[2];
    float t[PG_DOT_MAX_Q];
    for (int64_t task = begin; task < end; task++) {
        int64_t pair = task / d->chunks, m0 = (task % d->chunks) * d->mchunk, m1 = BD_MIN(m0 + d->mchunk, j->mg);
        int64_t n = pair / j->g->group, gi = pair % j->g->group;
        const float *a = d->a + pair * p->q * d->lda;
        float *c = d->c + pair * p->q * j->mg;
        bd_sgemm_dot((int)d->kernel, p->q, m1 - m0, j->kk, 1.0f, a, d->lda, j->wt + (gi * j->mg + m0) * j->kk, j->kk,
                     0.0f, c + m0, j->mg);
        for (int64_t m = m0; m < m1; m++) {
            int64_t oc = gi * j->mg + m, plane = n * j->g->c_out + oc;
            for (int64_t q = 0; q < p->q; q++) t[q] = c[q * j->mg + m];
            pscatter_at(j->lvl, p, t, 0, p->q, j->y + plane * ys, j->z ? j->z + plane * ys : NULL, j->bias ? j->bias[oc] : 0.0f,
                     pa->act, pa->act_a, pa->act_b, res);
        }
    }
}

/* The convolution as dot products when it has few outputs per channel (1
 * when done; *st set on an allocation failure). */
static int conv_fewq(const pg_job *j, braid_status *st)
{
    const pgeo *p = j->p;
    const bd_conv_geom *g = j->g;
    if (p->q > PG_DOT_MAX_Q || j->kk < 16) return 0;
    int64_t pairs = g->n * g->group, cg = g->c_in / g->group, lda = bd_sgemm_dot_lda(p->q, j->kk, j->kk);
    float *a = bd_malloc((size_t)(pairs * p->q * lda) * sizeof *a);
    float *c = bd_malloc((size_t)(pairs * p->q * j->mg) * sizeof *c);
    if (!a || !c) {
        bd_free(a), bd_free(c);
        *st = BD_FAIL(j->k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        return 1;
    }
    for (int64_t pr = 0; pr < pairs; pr++) {
        int64_t n = pr / g->group, gi = pr % g->group;
        const float *b = j->buf + (n * g->c_in + gi * cg) * p->chan;
        for (int64_t q = 0; q < p->q; q++)
            for (int64_t kx = 0; kx < j->kk; kx++) a[(pr * p->q + q) * lda + kx] = b[j->off[kx] + q];
    }
    int64_t th = BD_MAX(j->k->threads, 1), per = BD_MAX(p->q * j->kk, (int64_t)1);
    /* chunks of output channels: a multiple of 4 (the dot kernel's block), enough for the threads */
    int64_t mchunk = BD_MAX((int64_t)4, (BD_CEIL_DIV(j->mg, th) + 3) / 4 * 4);
    pdot_job d = {j, a, lda, c, mchunk, BD_CEIL_DIV(j->mg, mchunk), j->lvl == 2 ? BD_SGEMM_AVX512 : BD_SGEMM_AVX2};
    int64_t tasks = pairs * d.chunks, workers = BD_MIN(th, tasks / BD_MAX((int64_t)1, PG_MIN_WORK / (per * mchunk)));
    bd_parallel_claim((int)BD_MAX(workers, (int64_t)1), tasks, 1, pdot_tasks, &d);
    bd_free(a), bd_free(c);
    return 1;
}

/* ---- Direct depthwise (AVX-512) ---------------------------------------------------
 * A 1-D or 2-D depthwise convolution with a column stride of 1 or 2 and no
 * column dilation and output rows up to DWD_MAX_OW wide, read straight from
 * the input: no padded copy. The flat padded kernel (pg_dw512) keeps 3-D,
 * the other strides and wider rows, where it is as fast or faster (Zen 4,
 * one thread: 3x3 on 64x56x56 117-121 vs 119-146 us; on 64x28x28 from
 * 56x56 with stride 2, 68 vs 56 us; 5x5 on 256x14x14, 90 vs 53 us). Vectors run
 * along an output row (16 columns); the loads are masked to the input
 * (AVX-512 masked loads neither read nor fault on the lanes masked off), so
 * the padding is zeros that cost nothing; for stride 2, two loads and one
 * permute give the even columns. DWD_R output rows are done together: each
 * input row vector loaded serves every one of them that has a tap on it.
 * Each output is one FMA chain over the taps in order (kh, kw), starting at
 * 0, then the epilogue: the same bits for any split over threads. */
#define DWD_R 4      /* output rows per pass */
#define DWD_MAX_KW 16 /* widest kernel row taken */
#define DWD_MAX_OW 32 /* widest output row taken: see above */


typedef struct dwd_job {
    const bd_kernel *k;
    const bd_conv_geom *g;
    const win3 *w;
    const float *x, *wt, *bias, *z;
    float *y;
    int64_t mg;
} dwd_job;

/* Planes [begin, end) of the (image, output channel) planes. */
__attribute__((target("avx512f,avx2,fma"))) static void dwd_planes(void *ctx, int64_t wi, int64_t begin, int64_t end)
{
    const dwd_job *j = ctx;
    const win3 *w = j->w;
    const bd_conv_params *pa = j->k->node->params;
    int res = j->z ? pa->res : BD_RES_NONE, act = pa->act;
    const int64_t H = w->img[1], W = w->img[2], OH = w->grid[1], OW = w->grid[2], K1 = w->k[1], K2 = w->k[2];
    const int64_t s1 = w->s[1], s2 = w->s[2], d1 = w->d[1], p1 = w->pb[1], p2 = w->pb[2], cin = j->g->c_in;
    const int64_t cout = j->g->c_out;
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512 aa = _mm512_set1_ps(pa->act_a), ab = _mm512_set1_ps(pa->act_b);
    __mmask16 ml[DWD_MAX_KW], mh[DWD_MAX_KW];
    for (int64_t plane = begin; plane < end; plane++) {
        int64_t n = plane / cout, m = plane % cout;
        const float *xc = j->x + (n * cin + m / j->mg) * w->img_size, *wm = j->wt + m * w->taps;
        float *yc = j->y + plane * w->grid_size;
        const float *zc = j->z ? j->z + plane * w->grid_size : NULL;
        const __m512 bias = _mm512_set1_ps(j->bias ? j->bias[m] : 0.0f);
        for (int64_t ow0 = 0; ow0 < OW; ow0 += 16) {
            int64_t nw = BD_MIN((int64_t)16, OW - ow0);
            for (int64_t kw = 0; kw < K2; kw++) { /* lanes whose input column is in [0, W) */
                int64_t c0 = ow0 * s2 + kw - p2;
                __m512i c = _mm512_add_epi32(_mm512_set1_epi32((int)c0), lane), top = _mm512_set1_epi32((int)W);
                ml[kw] = _mm512_cmpge_epi32_mask(c, _mm512_setzero_si512()) & _mm512_cmplt_epi32_mask(c, top);
                c = _mm512_add_epi32(c, _mm512_set1_epi32(16));
                mh[kw] = _mm512_cmpge_epi32_mask(c, _mm512_setzero_si512()) & _mm512_cmplt_epi32_mask(c, top);
            }
            for (int64_t oh0 = 0; oh0 < OH; oh0 += DWD_R) {
                int64_t nr = BD_MIN((int64_t)DWD_R, OH - oh0);
                __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
                /* the input rows under these output rows, in order */
                int64_t ih0 = oh0 * s1 - p1, ih1 = (oh0 + nr - 1) * s1 - p1 + (K1 - 1) * d1;
                for (int64_t ih = BD_MAX(ih0, (int64_t)0); ih <= BD_MIN(ih1, H - 1); ih++) {
                    const float *wr[DWD_R]; /* the tap row of output row r on input row ih, or NULL */
                    int any = 0;
                    for (int r = 0; r < DWD_R; r++) {
                        int64_t t = ih - (oh0 + r) * s1 + p1;
                        if (d1 != 1) t = t >= 0 && t % d1 == 0 ? t / d1 : -1;
                        wr[r] = r < nr && t >= 0 && t < K1 ? wm + t * K2 : NULL;
                        any |= wr[r] != NULL;
                    }
                    if (!any) continue;
                    const float *xr = xc + ih * W + ow0 * s2 - p2;
                    for (int64_t kw = 0; kw < K2; kw++) {
                        __m512 v = _mm512_maskz_loadu_ps(ml[kw], xr + kw);
                        if (s2 == 2) v = _mm512_permutex2var_ps(v, even, _mm512_maskz_loadu_ps(mh[kw], xr + kw + 16));
                        if (wr[0]) a0 = _mm512_fmadd_ps(_mm512_set1_ps(wr[0][kw]), v, a0);
                        if (wr[1]) a1 = _mm512_fmadd_ps(_mm512_set1_ps(wr[1][kw]), v, a1);
                        if (wr[2]) a2 = _mm512_fmadd_ps(_mm512_set1_ps(wr[2][kw]), v, a2);
                        if (wr[3]) a3 = _mm512_fmadd_ps(_mm512_set1_ps(wr[3][kw]), v, a3);
                    }
                }
                __m512 acc[DWD_R] = {a0, a1, a2, a3};
                __mmask16 mk = (__mmask16)((1u << nw) - 1);
                for (int64_t r = 0; r < nr; r++) {
                    int64_t at = (oh0 + r) * OW + ow0;
                    _mm512_mask_storeu_ps(yc + at, mk, pg_epi16(acc[r], bias, zc ? zc + at : NULL, mk, act, aa, ab, res));
                }
            }
        }
    }
}

/* Runs the direct depthwise convolution when it suits (1 when done). */
static int conv_dwd(const bd_kernel *k, const bd_conv_geom *g, const win3 *w, int lvl)
{
    if (lvl < 2 || g->c_in / g->group != 1 || w->k[0] != 1 || w->img[0] != 1 || (w->s[2] != 1 && w->s[2] != 2) ||
        w->d[2] != 1 || w->k[2] > DWD_MAX_KW || w->grid[2] > DWD_MAX_OW || w->img[2] + 2 * w->grid[2] + 64 > INT_MAX)
        return 0;
    const bd_conv_params *pa = k->node->params;
    dwd_job j = {k, g, w, k->in[0].data, k->in[1].data, k->n_in > 2 && k->in[2].data ? k->in[2].data : NULL,
                 pa->res != BD_RES_NONE && k->n_in > 3 ? k->in[3].data : NULL, k->out[0].data, g->c_out / g->group};
    int64_t per = BD_MAX(w->grid_size * w->taps, (int64_t)1);
    int64_t planes = g->n * g->c_out, workers = BD_MIN((int64_t)BD_MAX(k->threads, 1), planes * per / (PG_MIN_WORK / 2));
    bd_parallel_claim((int)BD_MAX(workers, (int64_t)1), planes, BD_MAX((int64_t)1, (int64_t)PG_MIN_WORK / 8 / per),
                      dwd_planes, &j);
    return 1;
}



/* The convolution through the padded buffer; *done is 0 when this CPU has no
 * kernel for it (the caller then runs im2col + SGEMM). */
static braid_status conv_padded(const bd_kernel *k, const bd_conv_geom *g, const win3 *w, int *done)
{
    braid_status st = BRAID_OK;
    *done = 0;
    int lvl = bd_cpu_vec_level(); /* 0: no kernel (im2col + SGEMM), 1: AVX2 + FMA, 2: AVX-512F */
    if (!lvl) return BRAID_OK;
    const bd_conv_params *pa = k->node->params;
    const float *x = k->in[0].data, *wt = k->in[1].data;
    const float *bias = k->n_in > 2 && k->in[2].data ? k->in[2].data : NULL;
    const float *z = pa->res != BD_RES_NONE && k->n_in > 3 ? k->in[3].data : NULL;
    float *y = k->out[0].data, *buf = NULL, *tmp = NULL;
    int64_t *off = NULL;
    pgeo p;
    pgeo_make(w, &p);
    int64_t cg = g->c_in / g->group, mg = g->c_out / g->group, kk = cg * w->taps;
    int64_t mb = BD_CEIL_DIV(mg, (int64_t)PG_MR), dw = cg == 1;
    *done = 1;
    if (bd_numel(&k->out[0]) == 0) return BRAID_OK;
    if (lvl == 2 && !dw && p.q > PG_DOT_MAX_Q) { /* convwino.c (3x3 stride 1), then convdirect.c */
        int r = bd_conv_wino(k, g, w);
        if (r == 0) r = bd_conv_direct(k, g, w);
        if (r < 0) return BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        if (r > 0) return BRAID_OK;
    }
    off = bd_malloc((size_t)BD_MAX(kk, (int64_t)1) * sizeof *off);
    BD_CHECK_ALLOC(k->err, off);
    pgeo_offsets(w, &p, cg, off);
    if (p.copy && !dw) {
        buf = bd_malloc((size_t)(g->n * g->c_in) * (size_t)p.chan * sizeof *buf);
        BD_CHECK_ALLOC(k->err, buf);
        pfill_job fj = {w, &p, x, buf};
        bd_parallel_for(k->threads, g->n * g->c_in, BD_MAX((int64_t)1, (int64_t)65536 / BD_MAX(p.chan, (int64_t)1)),
                        pfill, &fj);
    }
    int64_t qblocks = BD_CEIL_DIV(p.q, (int64_t)PG_QB);
    pg_job j = {k, g, &p, p.copy && !dw ? buf : x, wt, bias, z, off, w, y, NULL, kk, mg, mb, qblocks, 1, 1, lvl};
    int64_t per_task = (dw ? 1 : mb * PG_MR) * PG_QB * BD_MAX(kk, (int64_t)1);
    int64_t min_tasks = BD_MAX((int64_t)1, (int64_t)PG_MIN_WORK / per_task);
    if (dw && lvl == 2 && bd_conv_dw(k, g, w)) goto fail; /* convdw.c: done */
    if (dw && conv_dwd(k, g, w, lvl)) goto fail; /* done */
    if (dw) { /* enough tasks for the threads, with output channels of one input plane together */
        int64_t th = BD_MAX(k->threads, 1), planes = g->n * g->c_in;
        j.dmc = planes >= 2 * th ? mg : BD_MAX((int64_t)1, mg * planes / (2 * th));
        int64_t tasks = planes * BD_CEIL_DIV(mg, j.dmc), per = j.dmc * p.q * BD_MAX(kk, (int64_t)1);
        j.workers = BD_MAX((int64_t)1, BD_MIN(th, tasks / BD_MAX((int64_t)1, (int64_t)PG_MIN_WORK / per)));
        if (p.copy) {
            tmp = bd_malloc((size_t)j.workers * (size_t)p.chan * sizeof *tmp);
            BD_CHECK_ALLOC(k->err, tmp);
            j.tmp = tmp;
        }
        bd_parallel_claim((int)j.workers, tasks, 1, pg_dw_tasks, &j);
    } else {
        if (conv_fewq(&j, &st)) goto fail;
        int64_t tasks = g->n * g->group * qblocks;
        j.workers = BD_MAX((int64_t)1, BD_MIN((int64_t)BD_MAX(k->threads, 1), tasks / min_tasks));
        tmp = bd_malloc((size_t)j.workers * (size_t)(mb * PG_MR * PG_QB) * sizeof *tmp);
        BD_CHECK_ALLOC(k->err, tmp);
        j.tmp = tmp;
        bd_parallel_claim((int)j.workers, tasks, 1, pg_tasks, &j);
    }
fail:
    bd_free(off);
    bd_free(buf);
    bd_free(tmp);
    return st;
}

#else

static braid_status conv_padded(const bd_kernel *k, const bd_conv_geom *g, const win3 *w, int *done)
{
    (void)k, (void)g, (void)w;
    *done = 0;
    return BRAID_OK;
}
#endif

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
    if (!long_windows(g, &w)) { /* those go straight to im2col + SGEMM */
        int done;
        BD_TRY(conv_padded(k, g, &w, &done));
        if (done) return BRAID_OK;
        if (cg == 1) {
            conv_depthwise(g, &w, x, wt, bias, y, k->threads);
            epilogue(k, g, NULL, y); /* the bias is in y already */
            return BRAID_OK;
        }
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

static braid_status conv_float(const bd_kernel *k, const bd_conv_geom *g)
{
    switch (k->node->op) {
    case BD_OP_Conv: return conv_forward(k, g);
    case BD_OP_ConvTranspose: return conv_transpose(k, g);
    default:
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the conv family",
                       k->node->op_type);
    }
}

#define CONV_MAX_IN 4 /* X, W, B and the residual of a fused Add */

/* float16 and bfloat16: every input widened to float32, the float32 kernel
 * run on the copies, and the output rounded once, as onnx's reference
 * computes it (numpy's half dot products accumulate in float32). */
static braid_status conv_half(const bd_kernel *k, const bd_conv_geom *g)
{
    braid_status st = BRAID_OK;
    bd_tensor in[CONV_MAX_IN], out = k->out[0];
    float *buf[CONV_MAX_IN + 1] = {NULL};
    int n_in = BD_MIN(k->n_in, CONV_MAX_IN);
    for (int i = 0; i < n_in; i++) {
        in[i] = k->in[i];
        if (!in[i].data || !bd_is_half(in[i].dtype)) continue;
        int64_t n = bd_numel(&in[i]);
        buf[i] = bd_malloc((size_t)BD_MAX(n, (int64_t)1) * sizeof(float));
        BD_CHECK_ALLOC(k->err, buf[i]);
        bd_widen(in[i].data, in[i].dtype, buf[i], n);
        in[i].data = buf[i];
        in[i].dtype = BRAID_DTYPE_FLOAT;
    }
    int64_t ny = bd_numel(&out);
    buf[CONV_MAX_IN] = bd_malloc((size_t)BD_MAX(ny, (int64_t)1) * sizeof(float));
    BD_CHECK_ALLOC(k->err, buf[CONV_MAX_IN]);
    out.data = buf[CONV_MAX_IN];
    out.dtype = BRAID_DTYPE_FLOAT;
    bd_kernel kf = *k;
    kf.in = in;
    kf.n_in = n_in;
    kf.out = &out;
    kf.n_out = 1;
    BD_TRY(conv_float(&kf, g));
    bd_narrow(buf[CONV_MAX_IN], k->out[0].data, k->out[0].dtype, ny);
fail:
    for (int i = 0; i <= CONV_MAX_IN; i++) bd_free(buf[i]);
    return st;
}

braid_status bd_cpu_conv(const bd_kernel *k)
{
    bd_conv_geom g;
    braid_status st = bd_conv_geometry(k->node, &k->in[0], &k->in[1],
                                       k->n_in > 2 ? &k->in[2] : NULL, &g, k->err);
    if (st) return st;
    const bd_conv_params *p = k->node->params;
    if (p->layout == BD_LAYOUT_NHWC) {
        if (k->in[0].dtype != BRAID_DTYPE_FLOAT)
            return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "an NHWC Conv runs float32 only, not %s",
                           bd_dtype_name(k->in[0].dtype));
        return bd_conv_nhwc(k, &g);
    }
    if (bd_is_half(k->in[0].dtype)) return conv_half(k, &g);
    return conv_float(k, &g);
}
