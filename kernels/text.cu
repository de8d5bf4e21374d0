/* text.cu: CUDA kernels of the text op family (TfIdfVectorizer), mirroring
 * src/backend/cpu/ops/text.c: one thread counts each row with bd_tfidf_row.
 * The pool tables (the params' data[]) are copied to the device on the
 * node's first run and kept in its cache. */
#include "common.cuh"

extern "C" {
#include "ops/text.h"
}

__global__ void k_tfidf(bd_tfidf_params p, const int64_t *data, const void *x, int is32, int64_t rows, int64_t c,
                        float *y)
{
    BD_CU_LOOP(r, rows)
    {
        const char *xr = (const char *)x + (size_t)(r * c) * (is32 ? 4 : 8);
        bd_tfidf_row(&p, data, xr, is32, c, y + r * p.n_out);
    }
}

extern "C" braid_status bd_cuda_text(const bd_cuda_kernel *k)
{
    const bd_tfidf_params *p = (const bd_tfidf_params *)k->node->params;
    if (!p) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "text parameters were not parsed");
    if (k->node->op != BD_OP_TfIdfVectorizer)
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the text family", k->node->op_type);
    int64_t rows, c;
    bd_tfidf_rows(&k->in[0], &rows, &c);
    if (rows * p->n_out == 0) return BRAID_OK;
    if (!*k->cache) {
        void *d = NULL;
        BD_CU_CHECK_CALL(k, bd_cuda_scratch_alloc(&d, (size_t)p->n_data + 8));
        *k->cache = d;
        BD_CU_CHECK_CALL(k, cudaMemcpyAsync(d, p->data, (size_t)p->n_data, cudaMemcpyHostToDevice, k->stream));
    }
    k_tfidf<<<bd_cu_grid(rows, 64), 64, 0, k->stream>>>(*p, (const int64_t *)*k->cache, k->in[0].data,
                                                       k->in[0].dtype == BRAID_DTYPE_INT32, rows, c,
                                                       (float *)k->out[0].data);
    BD_CU_CHECK_LAUNCH(k, "the TfIdfVectorizer kernel");
    return BRAID_OK;
}

extern "C" void bd_cuda_text_free(const bd_node *n, void *cache)
{
    (void)n;
    bd_cuda_scratch_free(cache);
}
