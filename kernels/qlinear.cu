/* qlinear.cu: placeholder */
#include "common.cuh"
extern "C" braid_status bd_cuda_qlinear(const bd_cuda_kernel *k)
{
    return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op %s has no CUDA kernel", k->node->op_type);
}
extern "C" void bd_cuda_qlinear_free(const bd_node *n, void *cache) { (void)n, (void)cache; }
