/* sgemm.c: braid's SGEMM (an AVX-512 12 x 32 and an AVX2/FMA 6 x 16
 * microkernel, K in fixed blocks of 256; B packed into panels unless its rows
 * are short, A read in place unless transposed, its last rows by kernels of
 * fewer rows), and
 * the per-process choice between it and OpenBLAS, made from what OpenBLAS
 * says of itself (openblas_get_corename()) and what the CPU supports. */
#include "backend/cpu/sgemm.h"
#include "backend/cpu/scratch.h"

#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "util/common.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define BD_SGEMM_X86 1
#endif

char *openblas_get_corename(void);
char *openblas_get_config(void);

#ifndef KC
#define KC 256
#endif
#define MC 240 /* rows of A packed at a time: a multiple of both MRs */

/* How one microkernel tile of acc (MR x NR, the sum over this K block) lands
 * in C: the first K block stores alpha acc (beta 0) or alpha acc + beta C, a
 * later one adds alpha acc. The vector and the scalar (edge) paths round the
 * same way: one fused multiply-add. */
enum { UPD_SET = 0, UPD_BETA = 1, UPD_ADD = 2 };

static inline float upd1(int mode, float acc, float c, float alpha, float beta)
{
    if (mode == UPD_SET) return alpha * acc;
    if (mode == UPD_BETA) return fmaf(alpha, acc, beta * c);
    return fmaf(alpha, acc, c);
}

/* Packs rows [i0, i0 + mr) of op(A) for A transposed (op(A)(i, k) =
 * a[k lda + i]), K columns [k0, k0 + kc), into ap as kc groups of MR
 * contiguous values (rows past mr are zero). A not transposed is read in
 * place by the kernels. */
static void pack_at(int MR, const float *a, int64_t lda, int64_t i0, int64_t mr, int64_t k0, int64_t kc, float *ap)
{
    for (int64_t k = 0; k < kc; k++) {
        const float *src = a + (k0 + k) * lda + i0;
        float *dst = ap + k * MR;
        int64_t r = 0;
        for (; r < mr; r++) dst[r] = src[r];
        for (; r < MR; r++) dst[r] = 0.0f;
    }
}

/* Packs columns [0, n) of op(B), K rows [k0, k0 + kc), into panels of NR
 * columns: panel p holds kc groups of NR values (columns past n are zero). */
static void pack_b(int NR, int tb, const float *b, int64_t ldb, int64_t n, int64_t k0, int64_t kc, float *bp)
{
    for (int64_t j0 = 0; j0 < n; j0 += NR) {
        int64_t nr = BD_MIN((int64_t)NR, n - j0);
        float *panel = bp + (j0 / NR) * kc * NR;
        if (!tb) {
            for (int64_t k = 0; k < kc; k++) {
                const float *src = b + (k0 + k) * ldb + j0;
                float *dst = panel + k * NR;
                int64_t c = 0;
                for (; c < nr; c++) dst[c] = src[c];
                for (; c < NR; c++) dst[c] = 0.0f;
            }
        } else { /* op(B)(k, j) = b[j ldb + k] */
            int64_t c = 0;
            for (; c < nr; c++) {
                const float *src = b + (j0 + c) * ldb + k0;
                for (int64_t k = 0; k < kc; k++) panel[k * NR + c] = src[k];
            }
            for (; c < NR; c++)
                for (int64_t k = 0; k < kc; k++) panel[k * NR + c] = 0.0f;
        }
    }
}

/* Microkernel: acc = sum over kc of ap (MR per k) times bp (NR per k, rows bs
 * apart: NR when packed, ldb when read in place); then
 * C (mr x nr of it) updated by mode. Full tiles are updated in registers, edge
 * tiles through a stack buffer and upd1: the same roundings. */
typedef void (*ukr_fn)(int64_t kc, const float *ap, int64_t as, const float *bp, int64_t bs, float *c, int64_t ldc,
                       int64_t mr, int64_t nr, float alpha, float beta, int mode);

#ifdef BD_SGEMM_X86
#define DEF_UKR(NAME, TGT, VT, W, MR, NV, LOAD, STORE, SET1, FMA, MUL, ZERO, AEL)                       \
    __attribute__((target(TGT))) static void NAME(int64_t kc, const float *ap, int64_t as, const float *bp, \
                                                  int64_t bs, float *c, int64_t ldc, int64_t mr, int64_t nr, \
                                                  float alpha, float beta, int mode)                      \
    {                                                                                                     \
        (void)as;                                                                                         \
        const float *ar[MR]; /* A_CLAMP: row r, or the last row there is */                               \
        _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++) ar[r] = ap + BD_MIN((int64_t)r, mr - 1) * as; \
        (void)ar;                                                                                         \
        VT acc[MR][NV];                                                                                   \
        _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++)                                             \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) acc[r][v] = ZERO();                     \
        for (int64_t k = 0; k < kc; k++) {                                                                \
            VT bv[NV];                                                                                    \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) bv[v] = LOAD(bp + k * bs + v * W); \
            _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++) {                                       \
                VT av = SET1(AEL(r, k, MR));                                                             \
                _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) acc[r][v] = FMA(av, bv[v], acc[r][v]); \
            }                                                                                             \
        }                                                                                                 \
        VT va = SET1(alpha), vb = SET1(beta);                                                             \
        if (mr == MR && nr == NV * W) {                                                                   \
            _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++)                                         \
                _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) {                                   \
                float *p = c + r * ldc + v * W;                                                           \
                VT o;                                                                                     \
                if (mode == UPD_SET) o = MUL(va, acc[r][v]);                                              \
                else if (mode == UPD_BETA) o = FMA(va, acc[r][v], MUL(vb, LOAD(p)));                      \
                else o = FMA(va, acc[r][v], LOAD(p));                                                     \
                STORE(p, o);                                                                              \
            }                                                                                             \
            return;                                                                                       \
        }                                                                                                 \
        float buf[MR * NV * W];                                                                           \
        _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++)                                             \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) STORE(buf + r * NV * W + v * W, acc[r][v]); \
        for (int64_t r = 0; r < mr; r++)                                                                  \
            for (int64_t j = 0; j < nr; j++)                                                              \
                c[r * ldc + j] = upd1(mode, buf[r * NV * W + j], c[r * ldc + j], alpha, beta);            \
    }

/* A packed (MR values per k), read in place from MR rows as apart, or from
 * the mr rows there are (the rows past them read the last one again; their
 * sums are never stored). */
#define A_PACKED(r, k, MR_) ap[(k) * (MR_) + (r)]
#define A_ROWS(r, k, MR_) ap[(r) * as + (k)]
#define A_CLAMP(r, k, MR_) ar[r][k]
#define UKR512(NAME, MR, AEL)                                                                               \
    DEF_UKR(NAME, "avx512f,fma", __m512, 16, MR, 2, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_set1_ps, \
            _mm512_fmadd_ps, _mm512_mul_ps, _mm512_setzero_ps, AEL)
#define UKR256(NAME, MR, AEL)                                                                               \
    DEF_UKR(NAME, "avx2,fma", __m256, 8, MR, 2, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_set1_ps,     \
            _mm256_fmadd_ps, _mm256_mul_ps, _mm256_setzero_ps, AEL)
UKR512(ukr_avx512, 12, A_PACKED)
UKR512(ukr_avx512_rows, 12, A_ROWS)
UKR512(ukr_avx512_clamp12, 12, A_CLAMP)
UKR512(ukr_avx512_clamp8, 8, A_CLAMP)
UKR512(ukr_avx512_clamp4, 4, A_CLAMP)
UKR256(ukr_avx2, 6, A_PACKED)
UKR256(ukr_avx2_rows, 6, A_ROWS)
UKR256(ukr_avx2_clamp6, 6, A_CLAMP)
UKR256(ukr_avx2_clamp3, 3, A_CLAMP)

/* pack_b for B not transposed with the NR of each kernel: vector copies. */
__attribute__((target("avx512f"))) static void pack_b_n512(const float *b, int64_t ldb, int64_t n, int64_t k0,
                                                           int64_t kc, float *bp)
{
    for (int64_t j0 = 0; j0 < n; j0 += 32) {
        int64_t nr = BD_MIN((int64_t)32, n - j0);
        float *dst = bp + (j0 / 32) * kc * 32;
        const float *src = b + k0 * ldb + j0;
        if (nr == 32) {
            for (int64_t k = 0; k < kc; k++, src += ldb, dst += 32) {
                _mm_prefetch((const char *)(src + 8 * ldb), _MM_HINT_T0);
                _mm_prefetch((const char *)(src + 8 * ldb + 16), _MM_HINT_T0);
                _mm512_storeu_ps(dst, _mm512_loadu_ps(src));
                _mm512_storeu_ps(dst + 16, _mm512_loadu_ps(src + 16));
            }
        } else {
            __mmask16 m0 = (__mmask16)((1u << BD_MIN(nr, (int64_t)16)) - 1);
            __mmask16 m1 = (__mmask16)(nr > 16 ? (1u << (nr - 16)) - 1 : 0);
            for (int64_t k = 0; k < kc; k++, src += ldb, dst += 32) {
                _mm512_storeu_ps(dst, _mm512_maskz_loadu_ps(m0, src));
                _mm512_storeu_ps(dst + 16, _mm512_maskz_loadu_ps(m1, src + 16));
            }
        }
    }
}
#endif

/* C = alpha A B^T + beta C for a few rows of A (ta 0, tb 1): dot products of
 * A's rows with B's, each of B's rows read from memory once (4 at a time,
 * against every 4 rows of A from cache, or against each row of an A of
 * fewer than 4 rows), nothing packed. An element is the
 * W-lane sum of its row pair over K (lanes added in a fixed order, then the
 * K tail one fused multiply-add at a time): its bits depend on its own row
 * and column only. */
#ifdef BD_SGEMM_X86
__attribute__((target("avx512f,fma"))) static float hsum512(__m512 v) { return _mm512_reduce_add_ps(v); }
__attribute__((target("avx2,fma"))) static float hsum256(__m256 v)
{
    __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_add_ps(x, _mm_movehl_ps(x, x));
    x = _mm_add_ss(x, _mm_movehdup_ps(x));
    return _mm_cvtss_f32(x);
}

#define DEF_DOT(NAME, TGT, VT, W, LOAD, FMA, ZERO, HSUM)                                                       \
    __attribute__((target(TGT))) static void NAME(int64_t m, int64_t n, int64_t k, float alpha, const float *a, \
                                                  int64_t lda, const float *b, int64_t ldb, float beta, float *c, \
                                                  int64_t ldc)                                                   \
    {                                                                                                            \
        int64_t kv = k / W * W;                                                                                  \
        int64_t groups = (m + 3) / 4;                                                                            \
        for (int64_t j0 = 0; j0 < n; j0 += 4) {                                                                  \
            const float *bp[4];                                                                                  \
            for (int s = 0; s < 4; s++) bp[s] = b + BD_MIN(j0 + s, n - 1) * ldb;                                \
            int64_t m4 = m >= 4 ? m : 0; /* rows in blocks of 4; under 4 rows, one at a time */                \
            for (int64_t i0 = m4; i0 < m; i0++) {                                                                \
                const float *ar = a + i0 * lda;                                                                  \
                VT acc[4];                                                                                       \
                _Pragma("GCC unroll 4") for (int s = 0; s < 4; s++) acc[s] = ZERO();                            \
                for (int64_t q = 0; q < kv; q += W) {                                                            \
                    VT av = LOAD(ar + q);                                                                        \
                    _Pragma("GCC unroll 4") for (int s = 0; s < 4; s++) acc[s] = FMA(av, LOAD(bp[s] + q), acc[s]); \
                }                                                                                                \
                for (int s = 0; s < 4 && j0 + s < n; s++) {                                                      \
                    float d = HSUM(acc[s]);                                                                      \
                    for (int64_t q = kv; q < k; q++) d = fmaf(ar[q], bp[s][q], d);                               \
                    float *o = c + i0 * ldc + j0 + s;                                                            \
                    *o = upd1(beta == 0.0f ? UPD_SET : UPD_BETA, d, *o, alpha, beta);                            \
                }                                                                                                \
            }                                                                                                    \
            for (int64_t i0 = 0; i0 < m4; i0 += 4) {                                                             \
                const float *ap[4];                                                                              \
                for (int r = 0; r < 4; r++) ap[r] = a + BD_MIN(i0 + r, m - 1) * lda;                            \
                /* The next 4 rows of B, one cache line of each per step, spread over the passes of A's \
                 * row groups (pass g takes rows s with s % groups == g): B then streams from memory \
                 * while the rows in cache are used, not in bursts at each first pass. */               \
                const char *pf[4];                                                                               \
                int npf = 0;                                                                                     \
                for (int s = 0; s < 4; s++)                                                                      \
                    if (s % groups == (i0 / 4) % 4 && j0 + 4 + s < n) pf[npf++] = (const char *)(b + (j0 + 4 + s) * ldb); \
                VT acc[4][4];                                                                                    \
                _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)                                             \
                    _Pragma("GCC unroll 4") for (int s = 0; s < 4; s++) acc[r][s] = ZERO();                     \
                for (int64_t q = 0; q < kv; q += W) {                                                            \
                    for (int f = 0; f < npf; f++) __builtin_prefetch(pf[f] + q * 4, 0, 3);                       \
                    VT bv[4];                                                                                    \
                    _Pragma("GCC unroll 4") for (int s = 0; s < 4; s++) bv[s] = LOAD(bp[s] + q);                \
                    _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) {                                       \
                        VT av = LOAD(ap[r] + q);                                                                 \
                        _Pragma("GCC unroll 4") for (int s = 0; s < 4; s++) acc[r][s] = FMA(av, bv[s], acc[r][s]); \
                    }                                                                                            \
                }                                                                                                \
                for (int r = 0; r < 4 && i0 + r < m; r++)                                                        \
                    for (int s = 0; s < 4 && j0 + s < n; s++) {                                                  \
                        float d = HSUM(acc[r][s]);                                                               \
                        for (int64_t q = kv; q < k; q++) d = fmaf(ap[r][q], bp[s][q], d);                        \
                        float *o = c + (i0 + r) * ldc + j0 + s;                                                  \
                        *o = upd1(beta == 0.0f ? UPD_SET : UPD_BETA, d, *o, alpha, beta);                        \
                    }                                                                                            \
            }                                                                                                    \
        }                                                                                                        \
    }
DEF_DOT(dot_avx512, "avx512f,fma", __m512, 16, _mm512_loadu_ps, _mm512_fmadd_ps, _mm512_setzero_ps, hsum512)
DEF_DOT(dot_avx2, "avx2,fma", __m256, 8, _mm256_loadu_ps, _mm256_fmadd_ps, _mm256_setzero_ps, hsum256)
#endif

int64_t bd_sgemm_dot_lda(int64_t m, int64_t k, int64_t lda)
{
    return m < 2 || k < 256 || lda % 256 != 0 ? lda : (k + 15) / 16 * 16 + 16;
}

float *bd_sgemm_dot_pad(int64_t m, int64_t k, const float *a, int64_t lda, int64_t *lda_out)
{
    int64_t lp = bd_sgemm_dot_lda(m, k, lda);
    if (lp == lda) return NULL;
    float *ap = bd_scratch_alloc((size_t)(m * lp) * sizeof(float));
    if (!ap) return NULL; /* then the rows in place: slower, the same bits */
    for (int64_t i = 0; i < m; i++) memcpy(ap + i * lp, a + i * lda, (size_t)k * sizeof(float));
    *lda_out = lp;
    return ap;
}

int bd_sgemm_dot(int kernel, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                 const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
#ifdef BD_SGEMM_X86
    if (kernel == BD_SGEMM_AVX512) dot_avx512(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    else if (kernel == BD_SGEMM_AVX2) dot_avx2(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    else return -1;
    return 0;
#else
    (void)kernel; (void)m; (void)n; (void)k; (void)alpha; (void)a; (void)lda; (void)b; (void)ldb; (void)beta;
    (void)c; (void)ldc;
    return -1;
#endif
}

int bd_sgemm_braid(int kernel, int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                   int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
#ifdef BD_SGEMM_X86
    int MR, NR;
    ukr_fn ukr, ukr_rows, clamp[3]; /* clamp[0] for MR rows, then smaller groups */
    int clamp_mr[3];
    if (kernel == BD_SGEMM_AVX512) {
        MR = 12, NR = 32, ukr = ukr_avx512, ukr_rows = ukr_avx512_rows;
        clamp[0] = ukr_avx512_clamp12, clamp[1] = ukr_avx512_clamp8, clamp[2] = ukr_avx512_clamp4;
        clamp_mr[0] = 12, clamp_mr[1] = 8, clamp_mr[2] = 4;
    } else if (kernel == BD_SGEMM_AVX2) {
        MR = 6, NR = 16, ukr = ukr_avx2, ukr_rows = ukr_avx2_rows;
        clamp[0] = ukr_avx2_clamp6, clamp[1] = clamp[2] = ukr_avx2_clamp3;
        clamp_mr[0] = 6, clamp_mr[1] = clamp_mr[2] = 3;
    }
    else return -1;
    if (k <= 0) { /* an empty sum: C = beta C (0 where beta is 0, as BLAS gives) */
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
        return 0;
    }
    int64_t kc0 = BD_MIN(k, (int64_t)KC), npad = BD_CEIL_DIV(n, (int64_t)NR) * NR;
    int64_t mc0 = ta ? BD_MIN(BD_CEIL_DIV(m, (int64_t)MR) * MR, (int64_t)MC) : 0; /* A packed only when transposed */
    float *bp = bd_scratch_alloc((size_t)(kc0 * npad + kc0 * mc0) * sizeof(float) + 64);
    if (!bp) return -1;
    float *ap = bp + kc0 * npad;
    for (int64_t k0 = 0; k0 < k; k0 += KC) {
        int64_t kc = BD_MIN((int64_t)KC, k - k0);
        int mode = k0 > 0 ? UPD_ADD : beta == 0.0f ? UPD_SET : UPD_BETA;
        /* A few rows use each of B's panels once: read B in place then (all
         * but its last, partial panel); the same products, the same bits. So
         * also where B's rows are close enough that a panel's rows stay in
         * cache unpacked, for fewer than 128 rows (on a Xeon with AVX-512,
         * one thread, 384 x 384 B in strips of 32 columns: 190 us direct
         * against 190-225 packed at 96 rows, but 263-266 against 245-259 at
         * 128 rows, 520-530 against 502-508 at 256; 128 x 384 x 1536:
         * 1261-1275 against 1096-1103: the rows of a K block of A, 6 KiB
         * apart, and of B, 1.5 KiB apart, fall on few L1 sets). */
        int64_t direct = !tb && (m <= MR || (ldb <= 400 && m < 128)) ? n / NR * NR : 0;
        if (direct < n) {
            if (!tb && NR == 32) pack_b_n512(b + direct, ldb, n - direct, k0, kc, bp);
            else pack_b(NR, tb, b + (tb ? direct * ldb : direct), ldb, n - direct, k0, kc, bp);
        }
        for (int64_t m0 = 0; m0 < m; m0 += MC) {
            int64_t mc = BD_MIN((int64_t)MC, m - m0);
            /* A not transposed: read in place (broadcast from each row as the
             * kernel goes; the rows of a K block stay in cache), its last
             * partial group of rows by the kernel with the fewest rows that
             * holds it. The same products in the same order as packed: the
             * same bits. A transposed: packed. */
            int64_t full = ta ? 0 : mc / MR * MR;
            if (ta)
                for (int64_t i0 = 0; i0 < mc; i0 += MR)
                    pack_at(MR, a, lda, m0 + i0, BD_MIN((int64_t)MR, mc - i0), k0, kc, ap + i0 * kc);
            int cl = 0;
            while (cl < 2 && clamp_mr[cl + 1] >= mc - full) cl++;
            /* B's micro-panel stays in L1 while A's panels stream from L2. */
            for (int64_t j0 = 0; j0 < n; j0 += NR) {
                const float *panel = j0 < direct ? b + k0 * ldb + j0 : bp + ((j0 - direct) / NR) * kc * NR;
                int64_t bs = j0 < direct ? ldb : NR;
                for (int64_t i0 = 0; i0 < mc; i0 += MR) {
                    float *ct = c + (m0 + i0) * ldc + j0;
                    int64_t mr = BD_MIN((int64_t)MR, mc - i0), nr = BD_MIN((int64_t)NR, n - j0);
                    const float *ai = a + (m0 + i0) * lda + k0;
                    if (ta) ukr(kc, ap + i0 * kc, 0, panel, bs, ct, ldc, mr, nr, alpha, beta, mode);
                    else if (i0 < full) ukr_rows(kc, ai, lda, panel, bs, ct, ldc, mr, nr, alpha, beta, mode);
                    else clamp[cl](kc, ai, lda, panel, bs, ct, ldc, mr, nr, alpha, beta, mode);
                }
            }
        }
    }
    bd_scratch_free(bp);
    return 0;
#else
    (void)kernel; (void)ta; (void)tb; (void)m; (void)n; (void)k; (void)alpha; (void)a; (void)lda; (void)b;
    (void)ldb; (void)beta; (void)c; (void)ldc;
    return -1;
#endif
}

int bd_sgemm_cpu_kernel(void)
{
#ifdef BD_SGEMM_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return BD_SGEMM_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return BD_SGEMM_AVX2;
#endif
    return BD_SGEMM_OPENBLAS;
}

int bd_sgemm_openblas_is_fallback(void)
{
    if (bd_sgemm_cpu_kernel() == BD_SGEMM_OPENBLAS) return 0;
    const char *core = openblas_get_corename();
    if (!core) return 1;
    /* OpenBLAS's x86-64 cores without AVX2 kernels: what DYNAMIC_ARCH falls
     * back to on a CPU it does not recognize (Prescott), and older ones. */
    static const char *const weak[] = {"prescott", "core2", "penryn", "dunnington", "nehalem", "atom", "barcelona",
                                       "opteron", "bobcat", "katmai", "coppermine", "northwood", "banias",
                                       "athlon", "generic", "unknown", "sandybridge", "bulldozer", "piledriver",
                                       "nano"};
    char low[64];
    size_t i = 0;
    for (; core[i] && i + 1 < sizeof low; i++) low[i] = (char)(core[i] | 0x20);
    low[i] = 0;
    for (size_t w = 0; w < sizeof weak / sizeof *weak; w++)
        if (strcmp(low, weak[w]) == 0) return 1;
    /* An AVX2 core on a CPU with AVX-512: OpenBLAS 0.3.21 runs its Haswell
     * kernel on AMD Zen 5 (family 26), where braid's AVX-512 kernel measured
     * 1.8-3.0x faster (128x384x384: 266 against 89 GFLOP/s on 2 threads;
     * 1024^3: 392 against 219). On Zen 4, where it picks Cooperlake's
     * AVX-512 kernel, OpenBLAS stays (95-102 against braid's 82-94 GFLOP/s a
     * core). */
    static const char *const avx2_only[] = {"haswell", "zen", "skylake", "excavator"};
    if (bd_sgemm_cpu_kernel() == BD_SGEMM_AVX512)
        for (size_t w = 0; w < sizeof avx2_only / sizeof *avx2_only; w++)
            if (strcmp(low, avx2_only[w]) == 0) return 1;
    return 0;
}

static pthread_once_t choice_once = PTHREAD_ONCE_INIT;
static int choice_auto, choice_forced = -1;

static void choose(void) { choice_auto = bd_sgemm_openblas_is_fallback() ? bd_sgemm_cpu_kernel() : BD_SGEMM_OPENBLAS; }

int bd_sgemm_kernel(void)
{
    pthread_once(&choice_once, choose);
    int f = __atomic_load_n(&choice_forced, __ATOMIC_RELAXED);
    return f >= 0 ? f : choice_auto;
}

int bd_sgemm_force_kernel(int kernel)
{
    if (kernel > bd_sgemm_cpu_kernel()) kernel = bd_sgemm_cpu_kernel();
    __atomic_store_n(&choice_forced, kernel, __ATOMIC_RELAXED);
    return bd_sgemm_kernel();
}

const char *bd_sgemm_kernel_desc(void)
{
    static char desc[160];
    int kern = bd_sgemm_kernel();
    if (kern == BD_SGEMM_AVX512) snprintf(desc, sizeof desc, "braid avx512 (openblas core %s)", openblas_get_corename());
    else if (kern == BD_SGEMM_AVX2) snprintf(desc, sizeof desc, "braid avx2 (openblas core %s)", openblas_get_corename());
    else {
        const char *cfg = openblas_get_config(), *ver = cfg ? strstr(cfg, "OpenBLAS ") : NULL;
        char v[32] = "";
        if (ver) sscanf(ver + 9, "%31s", v);
        snprintf(desc, sizeof desc, "openblas%s%s %s", v[0] ? " " : "", v, openblas_get_corename());
    }
    return desc;
}

void bd_sgemm_tile(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                   const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
    int kern = bd_sgemm_kernel();
    if (kern != BD_SGEMM_OPENBLAS && bd_sgemm_braid(kern, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) == 0)
        return;
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k,
                alpha, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
}
