/* string.cu: the string op family on CUDA (StringConcat, StringSplit,
 * StringNormalizer, RegexFullMatch): no device kernels. String tensors hold
 * host pointers on every backend, so a CUDA plan runs these ops, and any node
 * that reads or writes a string tensor, as host nodes
 * (src/backend/cuda/cuda_host.c: the CPU kernels, after a synchronization of
 * their stream; `braid plan` says so). The launcher below is never reached by
 * such a node; it fails if something else calls it. */
#include "common.cuh"

extern "C" braid_status bd_cuda_string(const bd_cuda_kernel *k)
{
    return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s runs on the host in a CUDA plan (cuda_host.c), "
                   "not as a device kernel", k->node->op_type);
}

extern "C" void bd_cuda_string_free(const bd_node *n, void *cache)
{
    (void)n, (void)cache;
}
