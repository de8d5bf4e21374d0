/* msattn.cu: placeholder while the CPU side settles. */
#include "la.cuh"

extern "C" braid_status bd_cuda_msattn(const bd_cuda_kernel *k)
{
    return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op %s has no CUDA kernel", k->node->op_type);
}

extern "C" void bd_cuda_msattn_free(const bd_node *n, void *cache)
{
    (void)n, (void)cache;
}
