/* ops.c: dispatch from a node to its family's CUDA launcher (kernels/<family>.cu)
 * and to the family's cache release. */
#include "backend/cuda/cuda_ops.h"

typedef braid_status (*cuda_fn)(const bd_cuda_kernel *);
typedef void (*cuda_free_fn)(const bd_node *, void *);

static const cuda_fn families[BD_FAM_COUNT] = {
#define X(f) bd_cuda_##f,
    BD_FAMILIES(X)
#undef X
};

static const cuda_free_fn frees[BD_FAM_COUNT] = {
#define X(f) bd_cuda_##f##_free,
    BD_FAMILIES(X)
#undef X
};

braid_status bd_cuda_run(const bd_cuda_kernel *k)
{
    return families[bd_op_table[k->node->op].family](k);
}

void bd_cuda_free_cache(const bd_node *n, void *cache)
{
    if (cache) frees[bd_op_table[n->op].family](n, cache);
}
