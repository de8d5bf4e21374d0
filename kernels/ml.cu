/* ml.cu: CUDA kernels of the ml op family (ai.onnx.ml), mirroring
 * src/backend/cpu/ops/ml.c: one thread per row runs bd_ml_row
 * (src/ops/ml.h); ArrayFeatureExtractor and FeatureVectorizer (up to 16
 * inputs) are one thread per output element.
 * The attribute arrays (the params' data[]) are copied to the device on the
 * node's first run and kept in its cache. Run-time value errors the CPU
 * reports (an index outside X's columns, an unknown OneHotEncoder category
 * with zeros = 0) are checked on the host where the value is known at plan
 * time; otherwise the CUDA kernel writes 0 for them. */
#include "common.cuh"

extern "C" {
#include "ops/ml.h"
}

__global__ void k_ml_rows(int op, bd_ml_params p, const int64_t *d, const void *x, int xdt, int64_t c, int64_t rows,
                          void *y, float *y2, float *scratch, int64_t ns)
{
    BD_CU_LOOP(r, rows)
    {
        bd_ml_row(op, &p, d, x, xdt, c, r, y, y2, scratch + r * ns);
    }
}

template <class T>
__global__ void k_afe(const T *x, const int64_t *idx, int64_t c, int64_t m, int64_t n, T *y)
{
    BD_CU_LOOP(i, n)
    {
        int64_t r = i / m, j = idx[i - r * m];
        y[i] = j >= 0 && j < c ? x[r * c + j] : T(0);
    }
}

#define FV_MAX 16
struct fv_args {
    int n;
    const void *x[FV_MAX];
    int dt[FV_MAX];
    int64_t c[FV_MAX], want[FV_MAX], at[FV_MAX];
};

/* FeatureVectorizer: one thread per output element. */
__global__ void k_fvec(fv_args a, int64_t rows, int64_t w, float *y)
{
    BD_CU_LOOP(i, rows * w)
    {
        int64_t r = i / w, col = i - r * w;
        int s = 0;
        while (s + 1 < a.n && col >= a.at[s + 1]) s++;
        int64_t j = col - a.at[s];
        y[i] = j < a.c[s] ? (float)bd_ml_ld(a.x[s], a.dt[s], r * a.c[s] + j) : 0.0f;
    }
}

extern "C" braid_status bd_cuda_ml(const bd_cuda_kernel *k)
{
    const bd_ml_params *p = (const bd_ml_params *)k->node->params;
    if (!p) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "ml parameters were not parsed");
    const bd_tensor *x = &k->in[0];
    int64_t c = x->rank >= 1 ? x->dims[x->rank - 1] : 1;
    if (k->node->op == BD_OP_ML_CategoryMapper || p->str_keys || p->str_vals || p->v1)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "%s on string tensors runs on the CPU only: strings stay on "
                       "the host", k->node->op_type);
    if (k->node->op == BD_OP_ML_ArrayFeatureExtractor) {
        int64_t n = bd_numel(&k->out[0]), m = bd_numel(&k->in[1]);
        const int64_t *hidx = k->host_in ? (const int64_t *)k->host_in[1].data : NULL;
        for (int64_t i = 0; hidx && i < m; i++)
            if (hidx[i] < 0 || hidx[i] >= c)
                return BD_FAIL(k->err, BRAID_ERR_INVALID_ARGUMENT, "input Y[%lld] = %lld is outside [0, %lld)",
                               (long long)i, (long long)hidx[i], (long long)c);
        if (n == 0) return BRAID_OK;
        bool ok = bd_cu_dispatch_size(bd_dtype_size(x->dtype), [&](auto t) {
            using T = decltype(t);
            k_afe<T><<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>((const T *)x->data, (const int64_t *)k->in[1].data,
                                                                   c, m, n, (T *)k->out[0].data);
        });
        if (!ok)
            return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "ArrayFeatureExtractor with dtype %s is not implemented on CUDA",
                           bd_dtype_name(x->dtype));
        BD_CU_CHECK_LAUNCH(k, "the ArrayFeatureExtractor kernel");
        return BRAID_OK;
    }
    if (k->node->op == BD_OP_ML_FeatureVectorizer) {
        if (k->n_in > FV_MAX)
            return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "FeatureVectorizer of %d inputs (more than %d) is not "
                           "implemented on CUDA", k->n_in, FV_MAX);
        fv_args a;
        memset(&a, 0, sizeof a);
        a.n = k->n_in;
        int64_t at = 0;
        for (int i = 0; i < k->n_in; i++) {
            a.x[i] = k->in[i].data, a.dt[i] = k->in[i].dtype;
            a.c[i] = k->in[i].rank == 2 ? k->in[i].dims[1] : 1;
            a.want[i] = p->data[i], a.at[i] = at;
            at += p->data[i];
        }
        int64_t rows = k->out[0].dims[0], w = k->out[0].dims[1];
        if (rows * w == 0) return BRAID_OK;
        k_fvec<<<bd_cu_grid(rows * w), BD_CU_BLOCK, 0, k->stream>>>(a, rows, w, (float *)k->out[0].data);
        BD_CU_CHECK_LAUNCH(k, "the FeatureVectorizer kernel");
        return BRAID_OK;
    }
    if (k->node->op == BD_OP_ML_OneHotEncoder && !p->zeros)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "OneHotEncoder with zeros = 0 (an error on an unknown category) "
                                                      "is not implemented on CUDA");
    int64_t rows = c ? bd_numel(x) / c : 0;
    if (c == 0 && (k->node->op == BD_OP_ML_LinearRegressor || k->node->op == BD_OP_ML_LinearClassifier))
        rows = k->out[0].dims[0];
    if (rows == 0) return BRAID_OK;
    int64_t ns = p->targets > 2 ? p->targets : 2;
    size_t need = (size_t)(rows * ns) * sizeof(float);
    if (k->node->op == BD_OP_ML_LinearClassifier && need > k->workspace_size)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "LinearClassifier needs %zu bytes of scores scratch, the CUDA "
                       "workspace has %zu", need, k->workspace_size);
    size_t nd = (size_t)(p->n_a + p->n_b + p->n_c) * 8;
    if (!*k->cache) {
        void *d = NULL;
        BD_CU_CHECK_CALL(k, bd_cuda_scratch_alloc(&d, nd + 8));
        *k->cache = d;
        if (nd) BD_CU_CHECK_CALL(k, cudaMemcpyAsync(d, p->data, nd, cudaMemcpyHostToDevice, k->stream));
    }
    k_ml_rows<<<bd_cu_grid(rows), BD_CU_BLOCK, 0, k->stream>>>(k->node->op, *p, (const int64_t *)*k->cache, x->data,
                                                                x->dtype, c, rows, k->out[0].data,
                                                                k->n_out > 1 ? (float *)k->out[1].data : NULL,
                                                                (float *)k->workspace, ns);
    BD_CU_CHECK_LAUNCH(k, "the ml row kernel");
    return BRAID_OK;
}

extern "C" void bd_cuda_ml_free(const bd_node *n, void *cache)
{
    (void)n;
    bd_cuda_scratch_free(cache);
}
