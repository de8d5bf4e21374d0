/* device.c: the real device under the CUDA backend (cuda_backend.h's device
 * hooks): nothing to do around a node's launcher, no reports.
 * libbraid_cuda_emu.so links the emulator's versions instead (emu/). */
#include "backend/cuda/cuda_backend.h"

void bd_cuda_dev_node_begin(const bd_cuda_kernel *k, int pool_stream)
{
    (void)k;
    (void)pool_stream;
}

braid_status bd_cuda_dev_node_end(const bd_cuda_kernel *k, braid_status st)
{
    (void)k;
    return st;
}

long bd_cuda_dev_reports(char *last, size_t n)
{
    if (last && n) last[0] = '\0';
    return 0;
}
