/* sequence.c: CPU kernels of the sequence op family: sequence and optional values.
 * (No op of the family is registered yet.) */
#include "backend/cpu/cpu_ops.h"

braid_status bd_cpu_sequence(const bd_kernel *k)
{
    return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op %s has no CPU kernel", k->node->op_type);
}
