/* unary.c: CPU kernels of the unary op family. */
#include "backend/cpu/cpu_ops.h"

braid_status bd_cpu_unary(const bd_kernel *k)
{
    return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op %s has no CPU kernel yet", k->node->op_type);
}
