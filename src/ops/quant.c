/* quant.c: attribute parsing, shape inference and cost of the quant op family:
 * quantization: QuantizeLinear, DequantizeLinear and the integer and QLinear ops. (No op of the family is registered yet.) */
#include "ops.h"

braid_status bd_quant_parse(bd_node *n, bd_err *e)
{
    return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "op %s is not implemented", n->op_type);
}

braid_status bd_quant_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    (void)in, (void)out;
    return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "op %s is not implemented", n->op_type);
}

double bd_quant_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    (void)n, (void)in, (void)out;
    return 0;
}
