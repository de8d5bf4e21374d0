/* cuda_counts.h: what the CUDA tests ask of the CUDA backend library
 * (libbraid_cuda.so), reached as braid reaches it: through the module it
 * loads, whose sessions are the ones the counts describe. */
#ifndef BD_TEST_CUDA_COUNTS_H
#define BD_TEST_CUDA_COUNTS_H

#include <string.h>

#include "backend/backend.h"

/* Live objects (created minus destroyed) of the whole process. */
typedef struct bd_cuda_live {
    long streams, events, cudnn, cublas, allocs, graphs;
} bd_cuda_live;

static inline void cuda_counts(bd_cuda_live *c)
{
    long v[6] = {-1, -1, -1, -1, -1, -1}; /* no library: counts that fail every check */
    const bd_cuda_module *m = bd_cuda_module_load(NULL, 0);
    if (m) m->global_counts(v);
    *c = (bd_cuda_live){v[0], v[1], v[2], v[3], v[4], v[5]};
}

/* 1 when a CUDA device answers (or the emulated one, BRAID_CUDA_EMULATOR=1);
 * why says why not: the driver's answer, or the library's load error. */
static inline int cuda_probe(char *why, size_t n)
{
    if (!bd_cuda_device_present(why, n)) return 0;
    const bd_cuda_module *m = bd_cuda_module_load(why, n);
    return m && m->probe(why, n);
}

#endif
