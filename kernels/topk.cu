/* topk.cu: CUDA kernel of the topk op family (TopK), with ops/topk.h's order:
 * one thread per element of every line counts the elements that come before
 * it (its rank); an element whose rank is under K writes itself, and its
 * index, at that rank. The outputs are sorted, as on the CPU. */
#include "common.cuh"

extern "C" {
#include "ops/topk.h"
}

template <class T>
__global__ void k_topk(const T *__restrict__ x, int dt, T *__restrict__ vals, int64_t *__restrict__ idx,
                       int64_t lines, int64_t n, int64_t inner, int64_t k, int largest)
{
    BD_CU_LOOP(t, lines * n)
    {
        int64_t line = t / n, e = t - line * n;
        int64_t b = line / inner, i = line - b * inner, base = b * n * inner + i;
        uint64_t key = bd_topk_key(dt, x, base + e * inner, largest);
        int64_t rank = 0;
        for (int64_t f = 0; f < n && rank < k; f++)
            rank += bd_topk_before(bd_topk_key(dt, x, base + f * inner, largest), f, key, e);
        if (rank < k) {
            int64_t o = b * k * inner + i + rank * inner;
            if (vals) vals[o] = x[base + e * inner]; /* an output left out has no memory */
            if (idx) idx[o] = e;
        }
    }
}

extern "C" braid_status bd_cuda_topk(const bd_cuda_kernel *k)
{
    const bd_topk_params *p = (const bd_topk_params *)k->node->params;
    const bd_tensor *x = &k->in[0];
    int axis;
    int64_t kk, outer, inner;
    braid_status st;
    if (!p) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "topk parameters were not parsed");
    if ((st = bd_axis(p->axis, x->rank, &axis, k->err))) return st;
    bd_tensor hv[2]; /* K is read from its plan-time host copy */
    bd_cu_host_view(k, hv, 2);
    if ((st = bd_topk_k(k->node, hv, x->dims[axis], &kk, k->err))) return st;
    bd_axis_split(x, axis, &outer, &inner);
    int64_t n = x->dims[axis], lines = outer * inner;
    if (kk == 0 || lines == 0) return BRAID_OK;
    bool ok = bd_cu_dispatch_size(bd_dtype_size(x->dtype), [&](auto tag) {
        typedef decltype(tag) T;
        k_topk<T><<<bd_cu_grid(lines * n), BD_CU_BLOCK, 0, k->stream>>>(
            (const T *)x->data, x->dtype, (T *)k->out[0].data, (int64_t *)k->out[1].data, lines, n, inner, kk,
            p->largest);
    });
    if (!ok)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op TopK with dtype %s is not implemented on CUDA",
                       bd_dtype_name(x->dtype));
    BD_CU_CHECK_LAUNCH(k, "the TopK kernel");
    return BRAID_OK;
}

extern "C" void bd_cuda_topk_free(const bd_node *n, void *cache)
{
    (void)n;
    (void)cache;
}
