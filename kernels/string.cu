/* string.cu: CUDA side of the string op family (StringConcat, StringSplit,
 * StringNormalizer, RegexFullMatch). None runs on the device yet: string
 * tensors are host pointers, and the CUDA backend has no host-op path (the
 * rows carry BD_OPF_HOST for when it does), so each op is refused by name. */
#include "common.cuh"

extern "C" braid_status bd_cuda_string(const bd_cuda_kernel *k)
{
    return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op %s has no CUDA kernel", k->node->op_type);
}

extern "C" void bd_cuda_string_free(const bd_node *n, void *cache)
{
    (void)n, (void)cache;
}
