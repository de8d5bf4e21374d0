/* ml_tree.cu: CUDA kernels of the ml_tree op family (TreeEnsemble,
 * TreeEnsembleRegressor, TreeEnsembleClassifier), mirroring
 * src/backend/cpu/ops/ml_tree.c: one thread per row walks every tree with
 * bd_tree_row, its scratch in the stream's workspace. The flat trees (the
 * params' data[]) are copied to the device on the node's first run and kept
 * in its cache. */
#include "common.cuh"

extern "C" {
#include "ops/ml_tree.h"
}

__global__ void k_trees(int op, bd_tree_params p, const int64_t *d, const void *x, int xdt, size_t es, int64_t c,
                        int64_t rows, void *y, float *y2, char *ws, int64_t ns)
{
    BD_CU_LOOP(r, rows)
    {
        double *acc = (double *)(ws + (size_t)r * (size_t)ns * 16);
        float *sc = (float *)(acc + ns);
        unsigned char *has = (unsigned char *)(sc + ns);
        int64_t nt = p.n_targets;
        int64_t n = bd_tree_row(&p, d, (const char *)x + (size_t)(r * c) * es, xdt, acc, has, sc);
        if (op == BD_OP_ML_TreeEnsembleClassifier) {
            const int64_t *labels = bd_tree_labels(&p, d);
            int64_t best = 0;
            for (int64_t t = 1; t < n; t++)
                if (sc[t] > sc[best]) best = t;
            ((int64_t *)y)[r] = p.n_labels == 1 ? (best == 1 && labels[0] == 1) : labels[best < p.n_labels ? best : 0];
            if (y2)
                for (int64_t t = 0; t < nt; t++) y2[r * nt + t] = sc[t];
        } else if (xdt == BRAID_DTYPE_DOUBLE && op == BD_OP_ML_TreeEnsemble) {
            for (int64_t t = 0; t < nt; t++) ((double *)y)[r * nt + t] = p.post == BD_ML_POST_NONE ? acc[t] : sc[t];
        } else {
            for (int64_t t = 0; t < nt; t++) ((float *)y)[r * nt + t] = sc[t];
        }
    }
}

extern "C" braid_status bd_cuda_ml_tree(const bd_cuda_kernel *k)
{
    const bd_tree_params *p = (const bd_tree_params *)k->node->params;
    if (!p) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "ml_tree parameters were not parsed");
    const bd_tensor *x = &k->in[0];
    int64_t rows = x->rank == 2 ? x->dims[0] : 1, c = x->dims[x->rank - 1];
    if (rows == 0) return BRAID_OK;
    int64_t ns = p->n_targets > 2 ? p->n_targets : 2;
    size_t need = (size_t)rows * (size_t)ns * 16;
    if (need > k->workspace_size)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "%s needs %zu bytes of per-row scratch, the CUDA workspace has "
                       "%zu", k->node->op_type, need, k->workspace_size);
    if (!*k->cache) {
        void *d = NULL;
        BD_CU_CHECK_CALL(k, bd_cuda_scratch_alloc(&d, (size_t)(p->n_data + 1) * 8));
        *k->cache = d;
        BD_CU_CHECK_CALL(k, cudaMemcpyAsync(d, p->data, (size_t)p->n_data * 8, cudaMemcpyHostToDevice, k->stream));
    }
    k_trees<<<bd_cu_grid(rows, 128), 128, 0, k->stream>>>(k->node->op, *p, (const int64_t *)*k->cache, x->data,
                                                         x->dtype, bd_dtype_size(x->dtype), c, rows, k->out[0].data,
                                                         k->n_out > 1 ? (float *)k->out[1].data : NULL,
                                                         (char *)k->workspace, ns);
    BD_CU_CHECK_LAUNCH(k, "the tree ensemble kernel");
    return BRAID_OK;
}

extern "C" void bd_cuda_ml_tree_free(const bd_node *n, void *cache)
{
    (void)n;
    bd_cuda_scratch_free(cache);
}
