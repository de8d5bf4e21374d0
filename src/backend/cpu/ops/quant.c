/* quant.c: CPU kernels of the quant op family: quantization: QuantizeLinear, DequantizeLinear and the integer and QLinear ops.
 * (No op of the family is registered yet.) */
#include "backend/cpu/cpu_ops.h"

braid_status bd_cpu_quant(const bd_kernel *k)
{
    return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op %s has no CPU kernel", k->node->op_type);
}
