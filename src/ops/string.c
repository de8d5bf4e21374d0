/* string.c: attribute parsing, shape inference and cost of the string op family:
 * string tensors. (No op of the family is registered yet.) */
#include "ops.h"

braid_status bd_string_parse(bd_node *n, bd_err *e)
{
    return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "op %s is not implemented", n->op_type);
}

braid_status bd_string_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    (void)in, (void)out;
    return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "op %s is not implemented", n->op_type);
}

double bd_string_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    (void)n, (void)in, (void)out;
    return 0;
}
