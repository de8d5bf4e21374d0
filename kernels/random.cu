/* random.cu: CUDA kernels of the random op family, mirroring
 * src/backend/cpu/ops/random.c: one thread per output element, drawing from
 * the counter-based generator of src/ops/random.h (so the uniforms equal the
 * CPU's; normals and Multinomial's weights go through the device's log, cos
 * and exp, which may differ from the host's in the last bit of a double).
 * The seed of an unseeded node is taken on the host at launch, so such a
 * node cannot be captured in a CUDA graph (a replay would repeat it). */
#include "common.cuh"

extern "C" {
#include "ops/random.h"
}

__global__ void k_random(int op, bd_random_params p, uint64_t seed, const void *x, int xdt, int64_t classes, void *y,
                         int ydt, int64_t n)
{
    BD_CU_LOOP(i, n)
    {
        double v;
        if (op == BD_OP_Bernoulli) {
            double u0, u1;
            bd_random_u01x2(seed, (uint64_t)i, &u0, &u1);
            v = u0 < bd_random_load(xdt, x, i);
        } else if (op == BD_OP_Multinomial) {
            double u0, u1;
            bd_random_u01x2(seed, (uint64_t)i, &u0, &u1);
            v = (double)bd_multinomial_pick(xdt, x, i / p.sample_size, classes, u0);
        } else {
            v = bd_random_value(op, &p, seed, i);
        }
        bd_random_store(ydt, y, i, v);
    }
}

extern "C" braid_status bd_cuda_random(const bd_cuda_kernel *k)
{
    const bd_node *n = k->node;
    const bd_random_params *p = (const bd_random_params *)n->params;
    int64_t cnt = bd_numel(&k->out[0]);
    cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    if (!p->has_seed && cudaStreamIsCapturing(k->stream, &cap) == cudaSuccess && cap != cudaStreamCaptureStatusNone)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED,
                       "op %s without a 'seed' draws anew on every run: it cannot be captured in a CUDA graph",
                       n->op_type);
    if (cnt == 0) return BRAID_OK;
    const bd_tensor *x = k->n_in ? &k->in[0] : NULL;
    k_random<<<bd_cu_grid(cnt), BD_CU_BLOCK, 0, k->stream>>>(n->op, *p, bd_random_seed(p), x ? x->data : NULL,
                                                             x ? x->dtype : 0, x && x->rank == 2 ? x->dims[1] : 0,
                                                             k->out[0].data, k->out[0].dtype, cnt);
    BD_CU_CHECK_LAUNCH(k, "the random kernel");
    return BRAID_OK;
}

extern "C" void bd_cuda_random_free(const bd_node *n, void *cache)
{
    (void)n, (void)cache;
}
