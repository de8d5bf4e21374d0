/* gemm.c: CPU kernels of the gemm op family. Gemm and float MatMul call
 * cblas_sgemm (a batched MatMul whose B has no batch folds the batch into M);
 * int32 and int64 MatMul use a plain loop. */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/parallel.h"
#include "ops/gemm.h"
#include "la.h"

#include <cblas.h>
#include <limits.h>

static braid_status check_blas_dims(int64_t m, int64_t n, int64_t k, bd_err *e)
{
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX)
        return BD_FAIL(e, BRAID_ERR_LIMIT, "matrix dims (M %lld, N %lld, K %lld) are beyond the "
                       "BLAS limit of %d", (long long)m, (long long)n, (long long)k, INT_MAX);
    return BRAID_OK;
}

static braid_status gemm(const bd_kernel *k)
{
    const bd_gemm_params *p = k->node->params;
    const bd_tensor *a = &k->in[0], *b = &k->in[1];
    const bd_tensor *c = k->n_in > 2 && k->in[2].data ? &k->in[2] : NULL;
    bd_tensor *y = &k->out[0];
    int64_t m = y->dims[0], n = y->dims[1], kk = a->dims[p->trans_a ? 0 : 1];
    float *yd = y->data, beta = 0.0f;
    braid_status st = check_blas_dims(m, n, kk, k->err);
    if (st) return st;
    if (c && p->beta != 0.0f) {
        /* Y starts as C broadcast to (M, N); sgemm scales it by beta. */
        int64_t str[2];
        const float *cd = c->data;
        bd_broadcast_strides(c, y, str);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) yd[i * n + j] = cd[i * str[0] + j * str[1]];
        beta = p->beta;
    }
    if (m == 0 || n == 0) return BRAID_OK;
    if (kk == 0) { /* BLAS may leave Y alone when K is 0 */
        for (int64_t i = 0; i < m * n; i++) yd[i] *= beta;
        if (beta == 0.0f) for (int64_t i = 0; i < m * n; i++) yd[i] = 0.0f;
        return BRAID_OK;
    }
    bd_sgemm(k->threads, p->trans_a, p->trans_b, m, n, kk, p->alpha, a->data, p->trans_a ? m : kk, b->data,
             p->trans_b ? kk : n, beta, yd, n);
    return BRAID_OK;
}

/* y (M x N) = a (M x K) b (K x N) for integer types, wrapping on overflow. */
#define MATMUL_INT(T)                                                                              \
    static void matmul_##T(const T *a, const T *b, T *y, int64_t m, int64_t n, int64_t kk)         \
    {                                                                                              \
        for (int64_t i = 0; i < m; i++) {                                                          \
            T *row = y + i * n;                                                                    \
            for (int64_t j = 0; j < n; j++) row[j] = 0;                                            \
            for (int64_t l = 0; l < kk; l++) {                                                     \
                uint64_t av = (uint64_t)a[i * kk + l];                                             \
                const T *brow = b + l * n;                                                         \
                for (int64_t j = 0; j < n; j++)                                                    \
                    row[j] = (T)((uint64_t)row[j] + av * (uint64_t)brow[j]);                       \
            }                                                                                      \
        }                                                                                          \
    }
MATMUL_INT(int32_t)
MATMUL_INT(int64_t)

/* One (M x K) (K x N) product of the given dtype; sizes checked by the caller. */
static void matmul_one(int threads, int dtype, const void *a, const void *b, void *y, int64_t m, int64_t n,
                       int64_t kk)
{
    if (dtype == BRAID_DTYPE_FLOAT) {
        if (m == 0 || n == 0) return;
        if (kk == 0) { for (int64_t i = 0; i < m * n; i++) ((float *)y)[i] = 0.0f; return; }
        bd_sgemm(threads, 0, 0, m, n, kk, 1.0f, a, kk, b, n, 0.0f, y, n);
    } else if (dtype == BRAID_DTYPE_INT32) {
        matmul_int32_t(a, b, y, m, n, kk);
    } else {
        matmul_int64_t(a, b, y, m, n, kk);
    }
}

/* The items [begin, end) of a batched MatMul whose B has a batch. */
typedef struct batch_job {
    const bd_matmul_geom *g;
    int dt, threads;
    const char *ad, *bd;
    char *yd;
    int64_t sa[BD_MAX_RANK], sb[BD_MAX_RANK];
    size_t a_mat, b_mat, y_mat;
} batch_job;

static void batch_items(void *ctx, int64_t begin, int64_t end)
{
    const batch_job *j = ctx;
    const bd_matmul_geom *g = j->g;
    for (int64_t i = begin; i < end; i++) {
        int64_t rem = i, oa = 0, ob = 0;
        for (int d = g->batch.rank - 1; d >= 0; d--) {
            int64_t idx = rem % g->batch.dims[d];
            rem /= g->batch.dims[d];
            oa += idx * j->sa[d];
            ob += idx * j->sb[d];
        }
        matmul_one(j->threads, j->dt, j->ad + (size_t)oa * j->a_mat, j->bd + (size_t)ob * j->b_mat,
                   j->yd + (size_t)i * j->y_mat, g->m, g->n, g->k);
    }
}

static braid_status matmul(const bd_kernel *k)
{
    const bd_tensor *a = &k->in[0], *b = &k->in[1];
    bd_matmul_geom g;
    braid_status st = bd_matmul_geometry(a, b, &g, NULL, k->err);
    if (st) return st;
    int dt = a->dtype;
    if (dt != BRAID_DTYPE_FLOAT && dt != BRAID_DTYPE_INT32 && dt != BRAID_DTYPE_INT64)
        return BD_FAIL(k->err, BRAID_ERR_DTYPE, "MatMul has no CPU kernel for %s",
                       bd_dtype_name(dt));
    size_t es = bd_dtype_size(dt);
    int64_t nb = bd_numel(&g.batch), na = bd_numel(&g.a_batch), nbb = bd_numel(&g.b_batch);
    const char *ad = a->data, *bdata = b->data;
    char *yd = k->out[0].data;
    if (nbb == 1 && na == nb) { /* B is shared by every batch: one product with M * batch rows */
        if ((st = check_blas_dims(g.m * nb, g.n, g.k, k->err))) return st;
        matmul_one(k->threads, dt, ad, bdata, yd, g.m * nb, g.n, g.k);
        return BRAID_OK;
    }
    if ((st = check_blas_dims(g.m, g.n, g.k, k->err))) return st;
    batch_job j = {.g = &g, .dt = dt, .ad = ad, .bd = bdata, .yd = yd, .threads = k->threads};
    bd_broadcast_strides(&g.a_batch, &g.batch, j.sa);
    bd_broadcast_strides(&g.b_batch, &g.batch, j.sb);
    j.a_mat = (size_t)(g.m * g.k) * es;
    j.b_mat = (size_t)(g.k * g.n) * es;
    j.y_mat = (size_t)(g.m * g.n) * es;
    /* Items that are each too small to split well run one per thread (2^21
     * multiply-adds or more: one at a time on all threads). Either way an
     * item's bits do not depend on the thread count (bd_sgemm's grid). */
    int64_t work = g.m * g.n * BD_MAX(g.k, 1);
    if (nb > 1 && work < ((int64_t)1 << 21) && k->threads > 1) {
        j.threads = 1;
        bd_parallel_for(k->threads, nb, BD_MAX((int64_t)1, ((int64_t)1 << 18) / BD_MAX(work, 1)), batch_items, &j);
    } else {
        batch_items(&j, 0, nb);
    }
    return BRAID_OK;
}

braid_status bd_cpu_gemm(const bd_kernel *k)
{
    if (!k->node->params)
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "attributes were not parsed");
    int dt = k->in[0].dtype; /* other dtypes than these: gemm_dtypes.c */
    if (dt != BRAID_DTYPE_FLOAT && !(k->node->op == BD_OP_MatMul && (dt == BRAID_DTYPE_INT32 || dt == BRAID_DTYPE_INT64)))
        return bd_cpu_gemm_dtypes(k);
    switch (k->node->op) {
    case BD_OP_Gemm:
        if (k->in[0].dtype != BRAID_DTYPE_FLOAT)
            return BD_FAIL(k->err, BRAID_ERR_DTYPE, "Gemm has no CPU kernel for %s",
                           bd_dtype_name(k->in[0].dtype));
        return gemm(k);
    case BD_OP_MatMul: return matmul(k);
    default:
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the gemm family",
                       k->node->op_type);
    }
}
