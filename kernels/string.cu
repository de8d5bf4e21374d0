/* string.cu: CUDA kernels of the string op family: string tensors.
 * (No op of the family is registered yet.) */
#include "common.cuh"

extern "C" braid_status bd_cuda_string(const bd_cuda_kernel *k)
{
    return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op %s has no CUDA kernel", k->node->op_type);
}

extern "C" void bd_cuda_string_free(const bd_node *n, void *cache)
{
    (void)n, (void)cache;
}
