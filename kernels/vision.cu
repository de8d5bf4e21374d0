/* vision.cu: CUDA kernels of the vision op family: image-geometry ops: GridSample, AffineGrid, RoiAlign, NonMaxSuppression, Col2Im.
 * (No op of the family is registered yet.) */
#include "common.cuh"

extern "C" braid_status bd_cuda_vision(const bd_cuda_kernel *k)
{
    return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op %s has no CUDA kernel", k->node->op_type);
}

extern "C" void bd_cuda_vision_free(const bd_node *n, void *cache)
{
    (void)n, (void)cache;
}
