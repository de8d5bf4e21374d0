/* reduce.c: attribute parsing, shape inference and cost of the reduce op family. */
#include "ops.h"

braid_status bd_reduce_parse(bd_node *n, bd_err *e) { (void)n; (void)e; return BRAID_OK; }

braid_status bd_reduce_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    (void)in; (void)out;
    return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "op %s is not implemented yet", n->op_type);
}

double bd_reduce_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out) { return 0; }
