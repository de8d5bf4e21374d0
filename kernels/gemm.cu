/* gemm.cu: CUDA launchers of the gemm op family. Gemm and float MatMul call
 * cuBLAS on row-major data through the usual swap: Y^T = op(B)^T op(A)^T in
 * column-major. A batched MatMul whose batch dims broadcast simply (each
 * operand full or shared) is one cublasSgemmStridedBatched; any other
 * broadcast loops over the batch. int32 and int64 MatMul use a plain kernel
 * that wraps on overflow like the CPU. TF32 only when the session asks (the
 * cuBLAS handle's math mode). */
#include <limits.h>

#include "common.cuh"
#include "la.cuh"

extern "C" {
#include "ops/gemm.h"
}

/* ---- kernels ------------------------------------------------------------------------ */

/* y (m x n) = c broadcast with strides (s0, s1). */
static __global__ void bcast2(const float *__restrict__ c, float *__restrict__ y, int64_t m, int64_t n,
                              int64_t s0, int64_t s1)
{
    BD_CU_LOOP(i, m * n) y[i] = c[(i / n) * s0 + (i % n) * s1];
}

static __global__ void scale(float *__restrict__ y, int64_t n, float a)
{
    BD_CU_LOOP(i, n) y[i] = a == 0.0f ? 0.0f : y[i] * a;
}

/* y[b] (m x n) = a[b] (m x k) b[b] (k x n) for integer T; g maps the batch
 * index to the offsets (in matrices) of a and b. Arithmetic wraps. */
template <class T>
static __global__ void matmul_int(const T *__restrict__ a, const T *__restrict__ b, T *__restrict__ y,
                                  bd_cu_nd g, int64_t batch, int64_t m, int64_t n, int64_t kk)
{
    BD_CU_LOOP(i, batch * m * n)
    {
        int64_t j = i % n, r = i / n;
        int64_t row = r % m, bi = r / m;
        int64_t off[2];
        bd_cu_offsets<2>(g, bi, off);
        const T *ar = a + off[0] * m * kk + row * kk;
        const T *bc = b + off[1] * kk * n + j;
        uint64_t acc = 0;
        for (int64_t l = 0; l < kk; l++) acc += (uint64_t)ar[l] * (uint64_t)bc[l * n];
        y[i] = (T)acc;
    }
}

/* ---- helpers ------------------------------------------------------------------------- */

static braid_status check_dims(const bd_cuda_kernel *k, int64_t m, int64_t n, int64_t kk)
{
    if (m > INT_MAX || n > INT_MAX || kk > INT_MAX)
        return BD_FAIL(k->err, BRAID_ERR_LIMIT, "matrix dims (M %lld, N %lld, K %lld) are beyond cuBLAS's "
                       "limit of %d", (long long)m, (long long)n, (long long)kk, INT_MAX);
    return BRAID_OK;
}

/* Row-major y (m x n) = alpha op(a) op(b) + beta y, with op(a) (m x kk). */
static braid_status sgemm_rm(const bd_cuda_kernel *k, int ta, int tb, int64_t m, int64_t n, int64_t kk, float alpha,
                             const float *a, const float *b, float beta, float *y)
{
    braid_status st = BRAID_OK;
    BD_CUBLAS_TRY(k->err, cublasSgemm(k->cublas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                                      (int)n, (int)m, (int)kk, &alpha, b, tb ? (int)kk : (int)n, a,
                                      ta ? (int)m : (int)kk, &beta, y, (int)n));
    return BRAID_OK;
fail:
    return st;
}

/* ---- Gemm ----------------------------------------------------------------------------- */

static braid_status gemm(const bd_cuda_kernel *k)
{
    const bd_gemm_params *p = (const bd_gemm_params *)k->node->params;
    const bd_tensor *a = &k->in[0], *b = &k->in[1];
    const bd_tensor *c = k->n_in > 2 && k->in[2].data ? &k->in[2] : NULL;
    bd_tensor *y = &k->out[0];
    int64_t m = y->dims[0], n = y->dims[1], kk = a->dims[p->trans_a ? 0 : 1];
    float *yd = (float *)y->data, beta = 0.0f;
    braid_status st = check_dims(k, m, n, kk);
    if (st) return st;
    if (m == 0 || n == 0) return BRAID_OK;
    if (c && p->beta != 0.0f) {
        /* Y starts as C broadcast to (M, N); cuBLAS scales it by beta. */
        int64_t str[2];
        bd_cu_bcast_strides(c, 2, y->dims, str);
        bcast2<<<bd_cu_grid(m * n), BD_CU_BLOCK, 0, k->stream>>>((const float *)c->data, yd, m, n, str[0], str[1]);
        BD_CU_CHECK_LAUNCH(k, "Gemm's bias broadcast");
        beta = p->beta;
    }
    if (kk == 0) { /* cuBLAS may leave Y alone when K is 0 */
        if (beta == 0.0f) BD_CU_CHECK_CALL(k, cudaMemsetAsync(yd, 0, (size_t)(m * n) * sizeof(float), k->stream));
        else {
            scale<<<bd_cu_grid(m * n), BD_CU_BLOCK, 0, k->stream>>>(yd, m * n, beta);
            BD_CU_CHECK_LAUNCH(k, "Gemm's scale");
        }
        return BRAID_OK;
    }
    return sgemm_rm(k, p->trans_a, p->trans_b, m, n, kk, p->alpha, (const float *)a->data,
                    (const float *)b->data, beta, yd);
}

/* ---- MatMul ----------------------------------------------------------------------------- */

static braid_status matmul_f32(const bd_cuda_kernel *k, const bd_matmul_geom *g)
{
    braid_status st = BRAID_OK;
    const float *a = (const float *)k->in[0].data, *b = (const float *)k->in[1].data;
    float *y = (float *)k->out[0].data;
    int64_t nb = bd_numel(&g->batch), na = bd_numel(&g->a_batch), nbb = bd_numel(&g->b_batch);
    int64_t m = g->m, n = g->n, kk = g->k;
    if (nb == 0 || m == 0 || n == 0) return BRAID_OK;
    if (kk == 0) {
        BD_CU_CHECK_CALL(k, cudaMemsetAsync(y, 0, (size_t)(nb * m * n) * sizeof(float), k->stream));
        return BRAID_OK;
    }
    if (nbb == 1 && na == nb) { /* B shared by every batch: one product with M * batch rows */
        if ((st = check_dims(k, m * nb, n, kk))) return st;
        return sgemm_rm(k, 0, 0, m * nb, n, kk, 1.0f, a, b, 0.0f, y);
    }
    if ((st = check_dims(k, m, n, kk))) return st;
    if ((na == nb || na == 1) && (nbb == nb || nbb == 1) && nb <= INT_MAX) {
        /* Each operand is either one matrix per batch or one shared matrix. */
        const float one = 1.0f, zero = 0.0f;
        long long sa = na == 1 ? 0 : m * kk, sb = nbb == 1 ? 0 : kk * n;
        BD_CUBLAS_TRY(k->err, cublasSgemmStridedBatched(k->cublas, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m, (int)kk,
                                                        &one, b, (int)n, sb, a, (int)kk, sa, &zero, y, (int)n,
                                                        m * n, (int)nb));
        return BRAID_OK;
    }
    /* Batch dims that broadcast in between (e.g. (2,1) with (1,3)): one product per batch. */
    {
        int64_t sta[BD_MAX_RANK], stb[BD_MAX_RANK];
        bd_cu_bcast_strides(&g->a_batch, g->batch.rank, g->batch.dims, sta);
        bd_cu_bcast_strides(&g->b_batch, g->batch.rank, g->batch.dims, stb);
        for (int64_t i = 0; i < nb; i++) {
            int64_t rem = i, oa = 0, ob = 0;
            for (int d = g->batch.rank - 1; d >= 0; d--) {
                int64_t idx = rem % g->batch.dims[d];
                rem /= g->batch.dims[d];
                oa += idx * sta[d];
                ob += idx * stb[d];
            }
            BD_TRY(sgemm_rm(k, 0, 0, m, n, kk, 1.0f, a + oa * m * kk, b + ob * kk * n, 0.0f, y + i * m * n));
        }
    }
    return BRAID_OK;
fail:
    return st;
}

static braid_status matmul_int(const bd_cuda_kernel *k, const bd_matmul_geom *g)
{
    int64_t nb = bd_numel(&g->batch), total = nb * g->m * g->n;
    if (total == 0) return BRAID_OK;
    int64_t strd[BD_CU_MAX_IN][BD_MAX_RANK] = {};
    bd_cu_nd nd = {};
    bd_cu_bcast_strides(&g->a_batch, g->batch.rank, g->batch.dims, strd[0]);
    bd_cu_bcast_strides(&g->b_batch, g->batch.rank, g->batch.dims, strd[1]);
    bd_cu_nd_make(&nd, g->batch.rank, g->batch.dims, 2, strd);
    if (k->in[0].dtype == BRAID_DTYPE_INT32)
        matmul_int<int32_t><<<bd_cu_grid(total), BD_CU_BLOCK, 0, k->stream>>>(
            (const int32_t *)k->in[0].data, (const int32_t *)k->in[1].data, (int32_t *)k->out[0].data, nd, nb,
            g->m, g->n, g->k);
    else
        matmul_int<int64_t><<<bd_cu_grid(total), BD_CU_BLOCK, 0, k->stream>>>(
            (const int64_t *)k->in[0].data, (const int64_t *)k->in[1].data, (int64_t *)k->out[0].data, nd, nb,
            g->m, g->n, g->k);
    BD_CU_CHECK_LAUNCH(k, "the integer MatMul kernel");
    return BRAID_OK;
}

static braid_status matmul(const bd_cuda_kernel *k)
{
    bd_matmul_geom g;
    braid_status st = bd_matmul_geometry(&k->in[0], &k->in[1], &g, NULL, k->err);
    if (st) return st;
    int dt = k->in[0].dtype;
    if (dt == BRAID_DTYPE_FLOAT) return matmul_f32(k, &g);
    if (dt == BRAID_DTYPE_INT32 || dt == BRAID_DTYPE_INT64) return matmul_int(k, &g);
    return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "MatMul has no CUDA kernel for %s", bd_dtype_name(dt));
}

extern "C" braid_status bd_cuda_gemm(const bd_cuda_kernel *k)
{
    if (!k->node->params) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "attributes were not parsed");
    int dt = k->in[0].dtype; /* other dtypes than these: gemm_dtypes.cu */
    if (dt != BRAID_DTYPE_FLOAT && !(k->node->op == BD_OP_MatMul && (dt == BRAID_DTYPE_INT32 || dt == BRAID_DTYPE_INT64)))
        return bd_cuda_gemm_dtypes(k);
    switch (k->node->op) {
    case BD_OP_Gemm:
        if (k->in[0].dtype != BRAID_DTYPE_FLOAT)
            return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "Gemm has no CUDA kernel for %s",
                           bd_dtype_name(k->in[0].dtype));
        return gemm(k);
    case BD_OP_MatMul: return matmul(k);
    default: return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the gemm family", k->node->op_type);
    }
}

extern "C" void bd_cuda_gemm_free(const bd_node *n, void *cache)
{
    (void)n;
    (void)cache;
}
