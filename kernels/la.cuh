/* la.cuh: CUDA helpers that the linalg, attention, msattn, rope and linattn
 * families (and gemm_dtypes.cu) share, mirroring src/backend/cpu/ops/la.h:
 * element conversion between the float kinds (float16/bfloat16/float/double)
 * and float or double work buffers, and a row-major strided-batched GEMM over
 * cuBLAS for any float kind (float16 and bfloat16 accumulate in float32 and
 * round once; double in double). */
#ifndef BD_KERNELS_LA_CUH
#define BD_KERNELS_LA_CUH

#include <limits.h>

#include "common.cuh"

extern "C" {
#include "util/dtype.h"
}

/* Element i of a float-kind buffer of dtype dt as float / double, and stores. */
__device__ __forceinline__ float bd_la_ld(int dt, const void *p, int64_t i)
{
    switch (dt) {
    case BRAID_DTYPE_FLOAT: return ((const float *)p)[i];
    case BRAID_DTYPE_DOUBLE: return (float)((const double *)p)[i];
    case BRAID_DTYPE_FLOAT16: return bd_half_to_float_hd(((const uint16_t *)p)[i]);
    case BRAID_DTYPE_BFLOAT16: return bd_bf16_to_float(((const uint16_t *)p)[i]);
    default: return 0.0f;
    }
}
__device__ __forceinline__ double bd_la_ld64(int dt, const void *p, int64_t i)
{
    return dt == BRAID_DTYPE_DOUBLE ? ((const double *)p)[i] : (double)bd_la_ld(dt, p, i);
}
__device__ __forceinline__ void bd_la_st(int dt, void *p, int64_t i, double v)
{
    switch (dt) {
    case BRAID_DTYPE_FLOAT: ((float *)p)[i] = (float)v; break;
    case BRAID_DTYPE_DOUBLE: ((double *)p)[i] = v; break;
    case BRAID_DTYPE_FLOAT16: ((uint16_t *)p)[i] = bd_float_to_half((float)v); break;
    case BRAID_DTYPE_BFLOAT16: ((uint16_t *)p)[i] = bd_float_to_bf16((float)v); break;
    default: break;
    }
}

/* dst (dtype ddt) = src (dtype sdt), n elements. */
static __global__ void bd_la_convert_kernel(int sdt, const void *__restrict__ src, int ddt, void *__restrict__ dst,
                                            int64_t n)
{
    BD_CU_LOOP(i, n) bd_la_st(ddt, dst, i, bd_la_ld64(sdt, src, i));
}

static inline braid_status bd_la_convert(const bd_cuda_kernel *k, int sdt, const void *src, int ddt, void *dst,
                                         int64_t n)
{
    if (n <= 0) return BRAID_OK;
    bd_la_convert_kernel<<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>(sdt, src, ddt, dst, n);
    BD_CU_CHECK_LAUNCH(k, "a dtype conversion");
    return BRAID_OK;
}

/* C_i (m x n at ldc, items sc apart) = beta C_i (0 when beta is 0). */
static __global__ void bd_la_scale_kernel(int dt, void *c, int64_t count, int64_t m, int64_t n, int64_t ldc,
                                          int64_t sc, double beta)
{
    BD_CU_LOOP(t, count * m * n)
    {
        int64_t j = t % n, r = t / n, i = r % m, it = r / m, o = it * sc + i * ldc + j;
        bd_la_st(dt, c, o, beta == 0.0 ? 0.0 : beta * bd_la_ld64(dt, c, o));
    }
}

static inline cudaDataType_t bd_la_cuda_type(int dt)
{
    switch (dt) {
    case BRAID_DTYPE_DOUBLE: return CUDA_R_64F;
    case BRAID_DTYPE_FLOAT16: return CUDA_R_16F;
    case BRAID_DTYPE_BFLOAT16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
    }
}

/* C_i = alpha op(A_i) op(B_i) + beta C_i (row-major, op(A_i) m x kk) for i <
 * count, operands of dtype dt at element strides sa, sb, sc (0: shared).
 * Through the usual swap: C^T = op(B)^T op(A)^T in cuBLAS's column-major. */
static inline braid_status bd_la_gemm(const bd_cuda_kernel *k, int dt, int ta, int tb, int64_t m, int64_t n,
                                      int64_t kk, double alpha, const void *a, int64_t lda, int64_t sa,
                                      const void *b, int64_t ldb, int64_t sb, double beta, void *c, int64_t ldc,
                                      int64_t sc, int64_t count)
{
    braid_status st = BRAID_OK;
    if (m > INT_MAX || n > INT_MAX || kk > INT_MAX || count > INT_MAX || lda > INT_MAX || ldb > INT_MAX ||
        ldc > INT_MAX)
        return BD_FAIL(k->err, BRAID_ERR_LIMIT, "matrix dims (M %lld, N %lld, K %lld, batch %lld) are beyond "
                       "cuBLAS's limit of %d", (long long)m, (long long)n, (long long)kk, (long long)count, INT_MAX);
    if (m <= 0 || n <= 0 || count <= 0) return BRAID_OK;
    cudaDataType_t ty = bd_la_cuda_type(dt);
    int dbl = dt == BRAID_DTYPE_DOUBLE;
    cublasComputeType_t ct = dbl ? CUBLAS_COMPUTE_64F
                             : (dt == BRAID_DTYPE_FLOAT && k->allow_tf32) ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                                           : CUBLAS_COMPUTE_32F;
    float af = (float)alpha, bf = (float)beta;
    const void *pa = dbl ? (const void *)&alpha : (const void *)&af;
    const void *pb = dbl ? (const void *)&beta : (const void *)&bf;
    if (kk == 0) { /* cuBLAS may leave C alone when K is 0: C = beta C here */
        bd_la_scale_kernel<<<bd_cu_grid(count * m * n), BD_CU_BLOCK, 0, k->stream>>>(dt, c, count, m, n, ldc, sc,
                                                                                       beta);
        BD_CU_CHECK_LAUNCH(k, "a zero-K product's scale");
        return BRAID_OK;
    }
    BD_CUBLAS_TRY(k->err, cublasGemmStridedBatchedEx(k->cublas, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                                     ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n, (int)m, (int)kk, pa, b,
                                                     ty, (int)ldb, (long long)sb, a, ty, (int)lda, (long long)sa, pb,
                                                     c, ty, (int)ldc, (long long)sc, (int)count, ct,
                                                     CUBLAS_GEMM_DEFAULT));
    return BRAID_OK;
fail:
    return st;
}

/* A node's device scratch kept in its cache slot across runs of a plan
 * (shapes are fixed per plan): at least `bytes`, grown when a run needs more.
 * The family's bd_cuda_<family>_free calls bd_la_scratch_free. */
struct bd_la_scratch_t {
    void *mem;
    size_t bytes;
};

static inline braid_status bd_la_scratch(const bd_cuda_kernel *k, size_t bytes, char **out)
{
    bd_la_scratch_t *c = (bd_la_scratch_t *)*k->cache;
    if (c && c->bytes < bytes) {
        bd_cuda_scratch_free(c->mem);
        c->mem = NULL, c->bytes = 0;
    }
    if (!c) {
        c = (bd_la_scratch_t *)bd_calloc(1, sizeof *c);
        if (!c) return BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        *k->cache = c;
    }
    if (!c->mem) {
        cudaError_t ce = bd_cuda_scratch_alloc(&c->mem, bytes ? bytes : 1);
        if (ce != cudaSuccess) {
            c->mem = NULL;
            return BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "cannot allocate %.1f MiB of scratch: %s",
                           (double)bytes / 1048576.0, cudaGetErrorString(ce));
        }
        c->bytes = bytes;
    }
    *out = (char *)c->mem;
    return BRAID_OK;
}

static inline void bd_la_scratch_free(void *cache)
{
    bd_la_scratch_t *c = (bd_la_scratch_t *)cache;
    if (!c) return;
    bd_cuda_scratch_free(c->mem);
    bd_free(c);
}

/* n bytes rounded up to 256 (scratch carving). */
static inline size_t bd_la_align(size_t n) { return (n + 255) & ~(size_t)255; }

/* One scaled dot-product attention (src/ops/attention.h) on k's stream, with
 * bd_cuda_sdpa_scratch(s) bytes of device scratch (attention.cu). */
struct bd_sdpa;
extern "C" size_t bd_cuda_sdpa_scratch(const struct bd_sdpa *s);
extern "C" braid_status bd_cuda_sdpa(const bd_cuda_kernel *k, const struct bd_sdpa *s, void *scratch);

/* The gemm family's launcher for dtypes other than float32 (gemm_dtypes.cu). */
extern "C" braid_status bd_cuda_gemm_dtypes(const bd_cuda_kernel *k);

#endif /* BD_KERNELS_LA_CUH */
