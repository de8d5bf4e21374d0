/* la.h: dense helpers that the CPU kernels of the linalg, attention, msattn,
 * rope and linattn families (and the gemm family's non-float32 dtypes,
 * gemm_dtypes.c) share: float16/bfloat16/float/double tensors converted to
 * float or double work buffers and back (rounded once per element), and
 * row-major GEMMs over OpenBLAS whose bits do not depend on the thread count.
 * float16 and bfloat16 compute in float32, double in double. */
#ifndef BD_CPU_LA_H
#define BD_CPU_LA_H

#include <cblas.h>
#include <limits.h>
#include <string.h>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/parallel.h"
#include "backend/cpu/sgemm.h"
#include "util/dtype.h"

/* 1 for the dtypes these helpers convert. */
static inline int bd_la_is_float(int dt)
{
    return dt == BRAID_DTYPE_FLOAT || dt == BRAID_DTYPE_DOUBLE || dt == BRAID_DTYPE_FLOAT16 ||
           dt == BRAID_DTYPE_BFLOAT16;
}

/* dst[i] = float(src[i]) for n elements of dtype dt (a float kind). */
static inline void bd_la_to_f32(int dt, const void *src, float *dst, int64_t n)
{
    switch (dt) {
    case BRAID_DTYPE_FLOAT: if (src != dst) memcpy(dst, src, (size_t)n * sizeof *dst); break;
    case BRAID_DTYPE_DOUBLE: for (int64_t i = 0; i < n; i++) dst[i] = (float)((const double *)src)[i]; break;
    case BRAID_DTYPE_FLOAT16: for (int64_t i = 0; i < n; i++) dst[i] = bd_half_to_float_hd(((const uint16_t *)src)[i]); break;
    case BRAID_DTYPE_BFLOAT16: for (int64_t i = 0; i < n; i++) dst[i] = bd_bf16_to_float(((const uint16_t *)src)[i]); break;
    default: break;
    }
}

/* dst (dtype dt) = src rounded once per element. */
static inline void bd_la_from_f32(int dt, const float *src, void *dst, int64_t n)
{
    switch (dt) {
    case BRAID_DTYPE_FLOAT: if (src != dst) memcpy(dst, src, (size_t)n * sizeof *src); break;
    case BRAID_DTYPE_DOUBLE: for (int64_t i = 0; i < n; i++) ((double *)dst)[i] = src[i]; break;
    case BRAID_DTYPE_FLOAT16: for (int64_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = bd_float_to_half(src[i]); break;
    case BRAID_DTYPE_BFLOAT16: for (int64_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = bd_float_to_bf16(src[i]); break;
    default: break;
    }
}

/* The same through double (double tensors keep their precision). */
static inline void bd_la_to_f64(int dt, const void *src, double *dst, int64_t n)
{
    if (dt == BRAID_DTYPE_DOUBLE) {
        if (src != dst) memcpy(dst, src, (size_t)n * sizeof *dst);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        switch (dt) {
        case BRAID_DTYPE_FLOAT: dst[i] = ((const float *)src)[i]; break;
        case BRAID_DTYPE_FLOAT16: dst[i] = bd_half_to_float_hd(((const uint16_t *)src)[i]); break;
        case BRAID_DTYPE_BFLOAT16: dst[i] = bd_bf16_to_float(((const uint16_t *)src)[i]); break;
        default: dst[i] = 0; break;
        }
    }
}

static inline void bd_la_from_f64(int dt, const double *src, void *dst, int64_t n)
{
    if (dt == BRAID_DTYPE_DOUBLE) {
        if (src != dst) memcpy(dst, src, (size_t)n * sizeof *src);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        switch (dt) {
        case BRAID_DTYPE_FLOAT: ((float *)dst)[i] = (float)src[i]; break;
        case BRAID_DTYPE_FLOAT16: ((uint16_t *)dst)[i] = bd_float_to_half((float)src[i]); break;
        case BRAID_DTYPE_BFLOAT16: ((uint16_t *)dst)[i] = bd_float_to_bf16((float)src[i]); break;
        default: break;
        }
    }
}

/* v rounded to dtype dt's precision and back (float16/bfloat16; others as is). */
static inline float bd_la_round(int dt, float v)
{
    if (dt == BRAID_DTYPE_FLOAT16) return bd_half_to_float_hd(bd_float_to_half(v));
    if (dt == BRAID_DTYPE_BFLOAT16) return bd_bf16_to_float(bd_float_to_bf16(v));
    return v;
}

/* LIMIT unless every dim fits BLAS's int. */
static inline braid_status bd_la_check_dims(int64_t m, int64_t n, int64_t k, bd_err *e)
{
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX)
        return BD_FAIL(e, BRAID_ERR_LIMIT, "matrix dims (M %lld, N %lld, K %lld) are beyond the BLAS limit of %d",
                       (long long)m, (long long)n, (long long)k, INT_MAX);
    return BRAID_OK;
}

/* Row-major C (m x n) = alpha op(A) op(B) + beta C on one thread (the caller
 * splits work across threads); K = 0 gives beta C (0 when beta is 0). Dims
 * must fit int (bd_la_check_dims). */
static inline void bd_la_sgemm1(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                                int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
    if (m <= 0 || n <= 0) return;
    if (k <= 0) {
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
        return;
    }
    bd_sgemm_tile(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static inline void bd_la_dgemm1(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha, const double *a,
                                int64_t lda, const double *b, int64_t ldb, double beta, double *c, int64_t ldc)
{
    if (m <= 0 || n <= 0) return;
    if (k <= 0) {
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) c[i * ldc + j] = beta == 0.0 ? 0.0 : beta * c[i * ldc + j];
        return;
    }
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m, (int)n,
                (int)k, alpha, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
}

/* A batch of row-major GEMMs C_i = alpha op(A_i) op(B_i) + beta C_i whose
 * operands sit at fixed element strides (0: shared by every item), in float
 * (dbl 0) or double (dbl 1). One item is one single-threaded BLAS call; the
 * items are split across threads, so the bits do not depend on the thread
 * count. A single item uses bd_sgemm's fixed tile grid on all threads. */
typedef struct bd_la_batch {
    int dbl, ta, tb;
    int64_t count, m, n, k;
    double alpha, beta;
    const void *a, *b;
    void *c;
    int64_t lda, ldb, ldc;
    int64_t sa, sb, sc; /* element strides between items */
} bd_la_batch;

static inline void bd_la_batch_run(void *ctx, int64_t begin, int64_t end)
{
    const bd_la_batch *g = (const bd_la_batch *)ctx;
    for (int64_t i = begin; i < end; i++) {
        if (g->dbl)
            bd_la_dgemm1(g->ta, g->tb, g->m, g->n, g->k, g->alpha, (const double *)g->a + i * g->sa, g->lda,
                         (const double *)g->b + i * g->sb, g->ldb, g->beta, (double *)g->c + i * g->sc, g->ldc);
        else
            bd_la_sgemm1(g->ta, g->tb, g->m, g->n, g->k, (float)g->alpha, (const float *)g->a + i * g->sa, g->lda,
                         (const float *)g->b + i * g->sb, g->ldb, (float)g->beta, (float *)g->c + i * g->sc, g->ldc);
    }
}

static inline braid_status bd_la_batch_gemm(int threads, const bd_la_batch *g, bd_err *e)
{
    braid_status st = bd_la_check_dims(g->m, g->n, g->k, e);
    if (st) return st;
    if (g->count <= 0 || g->m <= 0 || g->n <= 0) return BRAID_OK;
    if (g->count == 1 && !g->dbl && g->k > 0) {
        bd_sgemm(threads, g->ta, g->tb, g->m, g->n, g->k, (float)g->alpha, (const float *)g->a, g->lda,
                 (const float *)g->b, g->ldb, (float)g->beta, (float *)g->c, g->ldc);
        return BRAID_OK;
    }
    int64_t work = g->m * g->n * (g->k > 0 ? g->k : 1);
    int64_t min_items = work >= (1 << 18) ? 1 : ((int64_t)1 << 18) / (work > 0 ? work : 1);
    bd_parallel_for(threads, g->count, min_items, bd_la_batch_run, (void *)g);
    return BRAID_OK;
}

/* One scaled dot-product attention (src/ops/attention.h; attention.c). */
struct bd_sdpa;
braid_status bd_cpu_sdpa(const struct bd_sdpa *s, int threads, bd_err *e);

/* The gemm family's kernels for dtypes other than float32 (gemm_dtypes.c). */
braid_status bd_cpu_gemm_dtypes(const bd_kernel *k);

#endif /* BD_CPU_LA_H */
