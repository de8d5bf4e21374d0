/* gemm_dtypes.cu: the gemm family's CUDA launchers for the dtypes other than
 * float32 (gemm.cu keeps float32 and the int32/int64 MatMul), mirroring
 * src/backend/cpu/ops/gemm_dtypes.c: MatMul and Gemm on double, float16 and
 * bfloat16 through cublasGemmStridedBatchedEx (half kinds accumulate in
 * float32 and round once), and Gemm on int32/int64 plus both on
 * uint32/uint64 with a plain kernel in wrapping 64-bit arithmetic (integer
 * Gemm with alpha or beta other than 1 computes in double and truncates, as
 * the CPU does). */
#include <math.h>

#include "la.cuh"

extern "C" {
#include "ops/gemm.h"
}

/* ---- kernels ------------------------------------------------------------------------ */

template <class T> __device__ __forceinline__ uint64_t as_u64(T v) { return (uint64_t)(int64_t)v; }
template <> __device__ __forceinline__ uint64_t as_u64<uint32_t>(uint32_t v) { return v; }
template <> __device__ __forceinline__ uint64_t as_u64<uint64_t>(uint64_t v) { return v; }

/* Integer y[b] (m x n) = op(a[b]) op(b[b]) (+ epilogue): g maps batch b to the
 * offsets (in matrices) of a and b; sam/sak/sbk/sbn are the element strides
 * of op(A)'s rows/cols and op(B)'s rows/cols. Gemm's epilogue: C broadcast
 * at strides (c0, c1), exact when `exact`, else trunc(alpha * ab + beta * c)
 * in double. */
template <class T>
static __global__ void int_product(const T *__restrict__ a, const T *__restrict__ b, T *__restrict__ y, bd_cu_nd g,
                                   int64_t batch, int64_t m, int64_t n, int64_t kk, int64_t sam, int64_t sak,
                                   int64_t sbk, int64_t sbn, const T *__restrict__ c, int64_t c0, int64_t c1,
                                   int exact, float alpha, float beta, int is_signed)
{
    BD_CU_LOOP(i, batch * m * n)
    {
        int64_t j = i % n, r = i / n;
        int64_t row = r % m, bi = r / m;
        int64_t off[2];
        bd_cu_offsets<2>(g, bi, off);
        const T *ab = a + off[0] * m * kk, *bb = b + off[1] * kk * n;
        uint64_t acc = 0;
        for (int64_t l = 0; l < kk; l++) acc += as_u64(ab[row * sam + l * sak]) * as_u64(bb[l * sbk + j * sbn]);
        if (c || !exact) {
            uint64_t cv = c ? as_u64(c[row * c0 + j * c1]) : 0;
            if (exact) acc += cv;
            else {
                double d = (is_signed ? (double)(int64_t)acc : (double)acc) * alpha;
                if (c) d += (is_signed ? (double)(int64_t)cv : (double)cv) * beta;
                d = trunc(d);
                acc = is_signed ? (uint64_t)(int64_t)d : (d < 0 ? 0 : (uint64_t)d);
            }
        }
        y[i] = (T)acc;
    }
}

/* y (m x n, dtype dt) = c broadcast at strides (s0, s1). */
static __global__ void bcast_c(int dt, const void *__restrict__ c, void *__restrict__ y, int64_t m, int64_t n,
                               int64_t s0, int64_t s1)
{
    BD_CU_LOOP(i, m * n) bd_la_st(dt, y, i, bd_la_ld64(dt, c, (i / n) * s0 + (i % n) * s1));
}

/* ---- launchers ------------------------------------------------------------------------- */

template <class F> static bool dispatch_int(int dt, F &&f)
{
    switch (dt) {
    case BRAID_DTYPE_INT32: f(int32_t{}); return true;
    case BRAID_DTYPE_INT64: f(int64_t{}); return true;
    case BRAID_DTYPE_UINT32: f(uint32_t{}); return true;
    case BRAID_DTYPE_UINT64: f(uint64_t{}); return true;
    default: return false;
    }
}

static braid_status matmul(const bd_cuda_kernel *k)
{
    braid_status st = BRAID_OK;
    bd_matmul_geom g;
    if ((st = bd_matmul_geometry(&k->in[0], &k->in[1], &g, NULL, k->err))) return st;
    int dt = k->in[0].dtype;
    const char *a = (const char *)k->in[0].data, *b = (const char *)k->in[1].data;
    char *y = (char *)k->out[0].data;
    int64_t nb = bd_numel(&g.batch), na = bd_numel(&g.a_batch), nbb = bd_numel(&g.b_batch);
    int64_t m = g.m, n = g.n, kk = g.k;
    if (nb * m * n == 0) return BRAID_OK;
    int64_t strd[BD_CU_MAX_IN][BD_MAX_RANK] = {};
    bd_cu_bcast_strides(&g.a_batch, g.batch.rank, g.batch.dims, strd[0]);
    bd_cu_bcast_strides(&g.b_batch, g.batch.rank, g.batch.dims, strd[1]);
    if (dt == BRAID_DTYPE_DOUBLE || dt == BRAID_DTYPE_FLOAT16 || dt == BRAID_DTYPE_BFLOAT16) {
        size_t es = bd_dtype_size(dt);
        if (nbb == 1 && na == nb) /* B shared by every batch: one product with M * batch rows */
            return bd_la_gemm(k, dt, 0, 0, m * nb, n, kk, 1.0, a, kk, 0, b, n, 0, 0.0, y, n, 0, 1);
        if ((na == nb || na == 1) && (nbb == nb || nbb == 1))
            return bd_la_gemm(k, dt, 0, 0, m, n, kk, 1.0, a, kk, na == 1 ? 0 : m * kk, b, n, nbb == 1 ? 0 : kk * n,
                              0.0, y, n, m * n, nb);
        for (int64_t i = 0; i < nb; i++) { /* batch dims that broadcast in between: one product each */
            int64_t rem = i, oa = 0, ob = 0;
            for (int d = g.batch.rank - 1; d >= 0; d--) {
                int64_t idx = rem % g.batch.dims[d];
                rem /= g.batch.dims[d];
                oa += idx * strd[0][d];
                ob += idx * strd[1][d];
            }
            if ((st = bd_la_gemm(k, dt, 0, 0, m, n, kk, 1.0, a + (size_t)(oa * m * kk) * es, kk, 0,
                                 b + (size_t)(ob * kk * n) * es, n, 0, 0.0, y + (size_t)(i * m * n) * es, n, 0, 1)))
                return st;
        }
        return BRAID_OK;
    }
    bd_cu_nd nd = {};
    bd_cu_nd_make(&nd, g.batch.rank, g.batch.dims, 2, strd);
    bool ok = dispatch_int(dt, [&](auto tag) {
        typedef decltype(tag) T;
        int_product<T><<<bd_cu_grid(nb * m * n), BD_CU_BLOCK, 0, k->stream>>>(
            (const T *)a, (const T *)b, (T *)y, nd, nb, m, n, kk, kk, 1, n, 1, (const T *)NULL, 0, 0, 1, 1.0f, 1.0f, 0);
    });
    if (!ok)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "MatMul has no CUDA kernel for %s", bd_dtype_name(dt));
    BD_CU_CHECK_LAUNCH(k, "the integer MatMul kernel");
    return BRAID_OK;
}

static braid_status gemm(const bd_cuda_kernel *k)
{
    const bd_gemm_params *p = (const bd_gemm_params *)k->node->params;
    const bd_tensor *a = &k->in[0], *b = &k->in[1];
    const bd_tensor *c = k->n_in > 2 && k->in[2].data ? &k->in[2] : NULL;
    bd_tensor *y = &k->out[0];
    int dt = a->dtype;
    int64_t m = y->dims[0], n = y->dims[1], kk = a->dims[p->trans_a ? 0 : 1], str[2] = {0, 0};
    if (m * n == 0) return BRAID_OK;
    int use_c = c && p->beta != 0.0f;
    if (use_c) bd_cu_bcast_strides(c, 2, y->dims, str);
    if (dt == BRAID_DTYPE_DOUBLE || dt == BRAID_DTYPE_FLOAT16 || dt == BRAID_DTYPE_BFLOAT16) {
        if (use_c) {
            bcast_c<<<bd_cu_grid(m * n), BD_CU_BLOCK, 0, k->stream>>>(dt, c->data, y->data, m, n, str[0], str[1]);
            BD_CU_CHECK_LAUNCH(k, "Gemm's bias broadcast");
        }
        return bd_la_gemm(k, dt, p->trans_a, p->trans_b, m, n, kk, p->alpha, a->data, p->trans_a ? m : kk, 0,
                          b->data, p->trans_b ? kk : n, 0, use_c ? p->beta : 0.0, y->data, n, 0, 1);
    }
    int exact = p->alpha == 1.0f && (!use_c || p->beta == 1.0f);
    int is_signed = dt == BRAID_DTYPE_INT32 || dt == BRAID_DTYPE_INT64;
    bd_cu_nd nd = {};
    int64_t one[1] = {1}, strd[BD_CU_MAX_IN][BD_MAX_RANK] = {};
    bd_cu_nd_make(&nd, 1, one, 2, strd);
    bool ok = dispatch_int(dt, [&](auto tag) {
        typedef decltype(tag) T;
        int_product<T><<<bd_cu_grid(m * n), BD_CU_BLOCK, 0, k->stream>>>(
            (const T *)a->data, (const T *)b->data, (T *)y->data, nd, 1, m, n, kk, p->trans_a ? 1 : kk,
            p->trans_a ? m : 1, p->trans_b ? 1 : n, p->trans_b ? kk : 1, use_c ? (const T *)c->data : (const T *)NULL,
            str[0], str[1], exact, p->alpha, p->beta, is_signed);
    });
    if (!ok) return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "Gemm has no CUDA kernel for %s", bd_dtype_name(dt));
    BD_CU_CHECK_LAUNCH(k, "the integer Gemm kernel");
    return BRAID_OK;
}

extern "C" braid_status bd_cuda_gemm_dtypes(const bd_cuda_kernel *k)
{
    if (k->node->op == BD_OP_MatMul) return matmul(k);
    return gemm(k);
}
