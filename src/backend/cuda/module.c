/* module.c: the entry point of libbraid_cuda.so (and of libbraid_cuda_emu.so,
 * the same backend on the emulated device), the CUDA backend's own library:
 * the one symbol braid looks up when it loads the backend
 * (src/backend/cuda/common/load.c). */
#include "backend/cuda/cuda_backend.h"

#ifndef BD_CUDA_EMULATED
#define BD_CUDA_EMULATED 0 /* libbraid_cuda_emu.so compiles this file with 1 */
#endif

static void global_counts(long live[6])
{
    bd_cuda_live c;
    bd_cuda_global_counts(&c);
    long v[6] = {c.streams, c.events, c.cudnn, c.cublas, c.allocs, c.graphs};
    for (int i = 0; i < 6; i++) live[i] = v[i];
}

__attribute__((visibility("default"))) const bd_cuda_module braid_cuda_module = {
    .abi = BD_CUDA_MODULE_ABI,
    .version = BRAID_VERSION_STRING,
    .backend = &bd_backend_cuda,
    .probe = bd_cuda_probe,
    .global_counts = global_counts,
    .algo_stats = bd_algo_cache_stats,
    .emulated = BD_CUDA_EMULATED,
    .reports = bd_cuda_dev_reports,
};
