/* sequence.cu: the sequence op family on CUDA: none. Sequence and optional
 * values are objects in host memory (src/backend/cpu/ops/sequence.c), so
 * these ops run on the CPU backend; a CUDA session refuses them by name and
 * --backend auto picks the CPU for such models. */
#include "common.cuh"

extern "C" braid_status bd_cuda_sequence(const bd_cuda_kernel *k)
{
    return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op %s has no CUDA kernel", k->node->op_type);
}

extern "C" void bd_cuda_sequence_free(const bd_node *n, void *cache)
{
    (void)n, (void)cache;
}
