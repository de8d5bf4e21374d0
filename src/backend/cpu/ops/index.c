/* index.c: CPU kernels of the index op family: indexed data movement: gather, scatter, NonZero, OneHot, Compress, Unique and the like.
 * (No op of the family is registered yet.) */
#include "backend/cpu/cpu_ops.h"

braid_status bd_cpu_index(const bd_kernel *k)
{
    return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op %s has no CPU kernel", k->node->op_type);
}
