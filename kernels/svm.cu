/* svm.cu: CUDA kernels of the svm op family (ai.onnx.ml SVMClassifier and
 * SVMRegressor), mirroring src/backend/cpu/ops/svm.c: one thread per row
 * runs bd_svm_row (src/ops/svm.h) with its scratch in the stream's
 * workspace; label indices are mapped to int64 labels by a second kernel.
 * The attribute arrays are copied to the device on the node's first run and
 * kept in its cache. String labels stay on the host: refused by name. */
#include "common.cuh"

extern "C" {
#include "ops/svm.h"
}

__global__ void k_svm_rows(int op, bd_svm_params p, const int64_t *d, const void *x, int xdt, int64_t rows, float *y,
                           int64_t *label, float *z, float *scratch, int64_t ns)
{
    BD_CU_LOOP(r, rows)
    {
        bd_svm_row(op, &p, d, x, xdt, r, y, label ? label + r : NULL, z, scratch + r * ns);
    }
}

__global__ void k_svm_labels(const int64_t *d, int64_t o_labels, int64_t rows, int64_t *y)
{
    BD_CU_LOOP(r, rows) { y[r] = d[o_labels + y[r]]; }
}

extern "C" braid_status bd_cuda_svm(const bd_cuda_kernel *k)
{
    const bd_svm_params *p = (const bd_svm_params *)k->node->params;
    if (!p) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "svm parameters were not parsed");
    int cls = k->node->op == BD_OP_ML_SVMClassifier;
    if (cls && p->str_labels)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "SVMClassifier with string labels runs on the CPU only: "
                                                      "strings stay on the host");
    int64_t rows = k->out[0].dims[0];
    if (rows == 0) return BRAID_OK;
    int64_t ns = bd_svm_scratch(p), zcols = cls && k->n_out < 2 ? p->n_scores : 0;
    size_t need = (size_t)(rows * (ns + zcols)) * sizeof(float);
    if (need > k->workspace_size)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "%s needs %zu bytes of scratch, the CUDA workspace has %zu",
                       k->node->op_type, need, k->workspace_size);
    size_t nd = (size_t)(p->n_data) * 8;
    if (!*k->cache) {
        void *d = NULL;
        BD_CU_CHECK_CALL(k, bd_cuda_scratch_alloc(&d, nd + 8));
        *k->cache = d;
        if (nd) BD_CU_CHECK_CALL(k, cudaMemcpyAsync(d, p->data, nd, cudaMemcpyHostToDevice, k->stream));
    }
    float *scratch = (float *)k->workspace;
    float *z = cls ? (k->n_out > 1 ? (float *)k->out[1].data : scratch + rows * ns) : NULL;
    k_svm_rows<<<bd_cu_grid(rows), BD_CU_BLOCK, 0, k->stream>>>(
        k->node->op, *p, (const int64_t *)*k->cache, k->in[0].data, k->in[0].dtype, rows,
        cls ? NULL : (float *)k->out[0].data, cls ? (int64_t *)k->out[0].data : NULL, z, scratch, ns);
    BD_CU_CHECK_LAUNCH(k, "the svm row kernel");
    if (cls) {
        k_svm_labels<<<bd_cu_grid(rows), BD_CU_BLOCK, 0, k->stream>>>((const int64_t *)*k->cache, p->o_labels, rows,
                                                                      (int64_t *)k->out[0].data);
        BD_CU_CHECK_LAUNCH(k, "the svm label kernel");
    }
    return BRAID_OK;
}

extern "C" void bd_cuda_svm_free(const bd_node *n, void *cache)
{
    (void)n;
    bd_cuda_scratch_free(cache);
}
