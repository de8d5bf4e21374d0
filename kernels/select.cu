/* select.cu: the select op family (NonZero, Compress, Unique) on CUDA. Their
 * output shapes depend on input values, so the host must read those values
 * whatever runs the op: bd_cuda_on_host copies the inputs to the host (one
 * synchronization of the node's stream), runs the CPU kernels of
 * src/backend/cpu/ops/select.c on them (one definition of the ops), copies
 * the outputs back and writes their actual dims. Refused inside a CUDA graph
 * capture, which cannot synchronize. */
#include "common.cuh"

extern "C" {
#include "backend/cpu/cpu_ops.h"
}

extern "C" braid_status bd_cuda_select(const bd_cuda_kernel *k) { return bd_cuda_on_host(k, bd_cpu_select); }

extern "C" void bd_cuda_select_free(const bd_node *n, void *cache)
{
    (void)n, (void)cache;
}
