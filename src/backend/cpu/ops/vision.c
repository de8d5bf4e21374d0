/* vision.c: CPU kernels of the vision op family: image-geometry ops: GridSample, AffineGrid, RoiAlign, NonMaxSuppression, Col2Im.
 * (No op of the family is registered yet.) */
#include "backend/cpu/cpu_ops.h"

braid_status bd_cpu_vision(const bd_kernel *k)
{
    return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op %s has no CPU kernel", k->node->op_type);
}
