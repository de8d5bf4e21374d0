/* sequence.c: CPU kernels of the sequence op family: OptionalHasElement and
 * OptionalGetElement on optionals of tensors (src/ops/sequence.c). */
#include "backend/cpu/cpu_ops.h"

#include <string.h>

braid_status bd_cpu_sequence(const bd_kernel *k)
{
    int present = k->n_in > 0 && k->in[0].dtype != BRAID_DTYPE_UNDEFINED;
    switch (k->node->op) {
    case BD_OP_OptionalHasElement:
        *(uint8_t *)k->out[0].data = (uint8_t)present;
        return BRAID_OK;
    case BD_OP_OptionalGetElement: {
        if (!present) return BD_FAIL(k->err, BRAID_ERR_INVALID_ARGUMENT, "OptionalGetElement of an empty optional");
        size_t nb = (size_t)bd_numel(&k->out[0]) * bd_dtype_size(k->out[0].dtype);
        if (nb) memcpy(k->out[0].data, k->in[0].data, nb);
        return BRAID_OK;
    }
    default:
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the sequence family", k->node->op_type);
    }
}
