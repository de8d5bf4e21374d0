/* attention.c: attribute parsing, shape inference and cost of the attention op family:
 * attention: Attention, RotaryEmbedding and their kin. (No op of the family is registered yet.) */
#include "ops.h"

braid_status bd_attention_parse(bd_node *n, bd_err *e)
{
    return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "op %s is not implemented", n->op_type);
}

braid_status bd_attention_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    (void)in, (void)out;
    return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "op %s is not implemented", n->op_type);
}

double bd_attention_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    (void)n, (void)in, (void)out;
    return 0;
}
