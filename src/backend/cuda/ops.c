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

/* Every op of ops.def belongs to one of the families above, and each
 * family's launcher switches over all of its ops (an op it cannot run for a
 * dtype or mode fails there with UNSUPPORTED); an op index outside the table
 * is a caller's bug. */
braid_status bd_cuda_run(const bd_cuda_kernel *k)
{
    int op = k->node->op;
    if (op < 0 || op >= BD_OP_COUNT || (int)bd_op_table[op].family >= BD_FAM_COUNT)
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op index %d is not in braid's op table", op);
    return families[bd_op_table[op].family](k);
}

void bd_cuda_free_cache(const bd_node *n, void *cache)
{
    if (cache && n->op >= 0 && n->op < BD_OP_COUNT) frees[bd_op_table[n->op].family](n, cache);
}
