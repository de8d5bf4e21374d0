/* sequence.cu: the sequence op family on CUDA: no device kernels. Sequence
 * and optional values are objects in host memory on every backend, so a CUDA
 * plan runs these ops as host nodes (src/backend/cuda/cuda_host.c: the CPU
 * kernels of src/backend/cpu/ops/sequence.c, where the plan put them, after
 * a synchronization of their stream; `braid plan` says so). The launcher
 * below is never reached by such a node; it fails if something else calls it. */
#include "common.cuh"

extern "C" braid_status bd_cuda_sequence(const bd_cuda_kernel *k)
{
    return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s runs on the host in a CUDA plan (cuda_host.c), "
                   "not as a device kernel", k->node->op_type);
}

extern "C" void bd_cuda_sequence_free(const bd_node *n, void *cache)
{
    (void)n, (void)cache;
}
