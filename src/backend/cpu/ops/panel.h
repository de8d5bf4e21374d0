/* panel.h: C = A B for a few rows of A (M x K, a recurrence's batch) and a B
 * (K x N) packed once into panels of BD_PANEL_W columns (K x BD_PANEL_W
 * contiguous each; the last one padded with zeros; ops/rnn.h packs R^T so).
 * Each product streams B once, in order, where OpenBLAS's SGEMM repacks B on
 * every call: for a 128 x 512 B, 4 rows take 5.5 us against 45 us, 16 rows
 * 36 us against 115 us, and one row 3.2 us against 3.6 us for SGEMV
 * (measured here on the project's shared 2-core EPYC, minimum of 15 runs).
 * AVX2 and FMA on x86-64, chosen at run time (bd_panel_ok); elsewhere the
 * callers use BLAS. Every output is one FMA chain over k in order (two
 * interleaved chains for a lone row, summed at the end; eight with AVX-512):
 * the same bits for any split of the panels among threads. */
#ifndef BD_PANEL_H
#define BD_PANEL_H

#include <stdint.h>
#include <string.h>

#define BD_PANEL_W 16

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define BD_PANEL_X86 1

/* Whether this CPU runs the AVX2 kernel. */
static inline int bd_panel_ok(void)
{
    static int ok = -1;
    if (ok < 0) {
        __builtin_cpu_init();
        ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }
    return ok;
}

/* One row of a times a panel in 16 AVX-512 lanes: the panel's whole width
 * in one vector, eight FMA chains over k mod 8 (k past the last multiple of
 * 8 on chain 0), summed as a tree at the end. A lone row streams the panel
 * from L2 about 1.3x faster than in two AVX2 vectors (LSTM R^T, 512 rows:
 * 64 panels 64 -> 47 us, 32 panels 21 -> 16 us on the Xeon, one thread). */
__attribute__((target("avx512f"))) static void bd_panel_row16(const float *a, int64_t K, const float *pan,
                                                              float *out)
{
    __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
    int64_t k = 0;
    for (; k + 8 <= K; k += 8, pan += 8 * BD_PANEL_W) {
        c0 = _mm512_fmadd_ps(_mm512_set1_ps(a[k]), _mm512_loadu_ps(pan), c0);
        c1 = _mm512_fmadd_ps(_mm512_set1_ps(a[k + 1]), _mm512_loadu_ps(pan + 16), c1);
        c2 = _mm512_fmadd_ps(_mm512_set1_ps(a[k + 2]), _mm512_loadu_ps(pan + 32), c2);
        c3 = _mm512_fmadd_ps(_mm512_set1_ps(a[k + 3]), _mm512_loadu_ps(pan + 48), c3);
        c4 = _mm512_fmadd_ps(_mm512_set1_ps(a[k + 4]), _mm512_loadu_ps(pan + 64), c4);
        c5 = _mm512_fmadd_ps(_mm512_set1_ps(a[k + 5]), _mm512_loadu_ps(pan + 80), c5);
        c6 = _mm512_fmadd_ps(_mm512_set1_ps(a[k + 6]), _mm512_loadu_ps(pan + 96), c6);
        c7 = _mm512_fmadd_ps(_mm512_set1_ps(a[k + 7]), _mm512_loadu_ps(pan + 112), c7);
    }
    for (; k < K; k++, pan += BD_PANEL_W) c0 = _mm512_fmadd_ps(_mm512_set1_ps(a[k]), _mm512_loadu_ps(pan), c0);
    c0 = _mm512_add_ps(_mm512_add_ps(c0, c1), _mm512_add_ps(c2, c3));
    c4 = _mm512_add_ps(_mm512_add_ps(c4, c5), _mm512_add_ps(c6, c7));
    _mm512_storeu_ps(out, _mm512_add_ps(c0, c4));
}

/* One panel: out (rows of C, ldc apart; BD_PANEL_W columns) = a (M rows, lda
 * apart, K columns) times the panel pan (K x BD_PANEL_W). wide: rows past the
 * last multiple of 4 run bd_panel_row16 (the CPU has AVX-512F). */
__attribute__((target("avx2,fma"))) static void bd_panel_one(const float *a, int64_t lda, int64_t M, int64_t K,
                                                             const float *pan, float *out, int64_t ldc, int wide)
{
    int64_t m = 0;
    for (; m + 4 <= M; m += 4) {
        __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
        const float *a0 = a + m * lda, *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda, *r = pan;
        for (int64_t k = 0; k < K; k++, r += BD_PANEL_W) {
            __m256 r0 = _mm256_loadu_ps(r), r1 = _mm256_loadu_ps(r + 8), x;
            x = _mm256_broadcast_ss(a0 + k), c00 = _mm256_fmadd_ps(x, r0, c00), c01 = _mm256_fmadd_ps(x, r1, c01);
            x = _mm256_broadcast_ss(a1 + k), c10 = _mm256_fmadd_ps(x, r0, c10), c11 = _mm256_fmadd_ps(x, r1, c11);
            x = _mm256_broadcast_ss(a2 + k), c20 = _mm256_fmadd_ps(x, r0, c20), c21 = _mm256_fmadd_ps(x, r1, c21);
            x = _mm256_broadcast_ss(a3 + k), c30 = _mm256_fmadd_ps(x, r0, c30), c31 = _mm256_fmadd_ps(x, r1, c31);
        }
        float *o = out + m * ldc;
        _mm256_storeu_ps(o, c00), _mm256_storeu_ps(o + 8, c01), o += ldc;
        _mm256_storeu_ps(o, c10), _mm256_storeu_ps(o + 8, c11), o += ldc;
        _mm256_storeu_ps(o, c20), _mm256_storeu_ps(o + 8, c21), o += ldc;
        _mm256_storeu_ps(o, c30), _mm256_storeu_ps(o + 8, c31);
    }
    for (; wide && m < M; m++) bd_panel_row16(a + m * lda, K, pan, out + m * ldc);
    for (; m < M; m++) { /* two chains over even and odd k, so that FMA latency does not serialize */
        __m256 c0 = _mm256_setzero_ps(), c1 = c0, d0 = c0, d1 = c0;
        const float *a0 = a + m * lda, *r = pan;
        int64_t k = 0;
        for (; k + 2 <= K; k += 2, r += 2 * BD_PANEL_W) {
            __m256 x = _mm256_broadcast_ss(a0 + k), y = _mm256_broadcast_ss(a0 + k + 1);
            c0 = _mm256_fmadd_ps(x, _mm256_loadu_ps(r), c0), c1 = _mm256_fmadd_ps(x, _mm256_loadu_ps(r + 8), c1);
            d0 = _mm256_fmadd_ps(y, _mm256_loadu_ps(r + 16), d0), d1 = _mm256_fmadd_ps(y, _mm256_loadu_ps(r + 24), d1);
        }
        if (k < K) {
            __m256 x = _mm256_broadcast_ss(a0 + k);
            c0 = _mm256_fmadd_ps(x, _mm256_loadu_ps(r), c0), c1 = _mm256_fmadd_ps(x, _mm256_loadu_ps(r + 8), c1);
        }
        _mm256_storeu_ps(out + m * ldc, _mm256_add_ps(c0, d0));
        _mm256_storeu_ps(out + m * ldc + 8, _mm256_add_ps(c1, d1));
    }
}

/* Columns [c0, c1) of C = A B, from panels [p0, p1) of the packed B (those
 * columns must lie in them). tmp: M * BD_PANEL_W floats for partial panels;
 * wide as for bd_panel_one. */
static inline void bd_panel_gemm(const float *a, int64_t lda, int64_t M, int64_t K, const float *pack, int64_t p0,
                                 int64_t p1, int64_t c0, int64_t c1, float *c, int64_t ldc, float *tmp, int wide)
{
    for (int64_t p = p0; p < p1; p++) {
        int64_t lo = p * BD_PANEL_W, hi = lo + BD_PANEL_W;
        int64_t w0 = lo > c0 ? lo : c0, w1 = hi < c1 ? hi : c1;
        if (w0 >= w1) continue;
        const float *pan = pack + p * K * BD_PANEL_W;
        if (w0 == lo && w1 == hi) {
            bd_panel_one(a, lda, M, K, pan, c + lo, ldc, wide);
            continue;
        }
        bd_panel_one(a, lda, M, K, pan, tmp, BD_PANEL_W, wide);
        for (int64_t m = 0; m < M; m++)
            memcpy(c + m * ldc + w0, tmp + m * BD_PANEL_W + (w0 - lo), (size_t)(w1 - w0) * sizeof(float));
    }
}
#else
static inline int bd_panel_ok(void) { return 0; }
static inline void bd_panel_gemm(const float *a, int64_t lda, int64_t M, int64_t K, const float *pack, int64_t p0,
                                 int64_t p1, int64_t c0, int64_t c1, float *c, int64_t ldc, float *tmp, int wide)
{
    (void)a, (void)lda, (void)M, (void)K, (void)pack, (void)p0, (void)p1, (void)c0, (void)c1, (void)c, (void)ldc,
        (void)tmp, (void)wide;
}
#endif

#endif /* BD_PANEL_H */
