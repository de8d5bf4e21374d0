/* resize.c: attribute parsing, shape inference and cost of the resize op family. */
#include "ops.h"

braid_status bd_resize_parse(bd_node *n, bd_err *e) { (void)n; (void)e; return BRAID_OK; }

braid_status bd_resize_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    (void)in; (void)out;
    return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "op %s is not implemented yet", n->op_type);
}

double bd_resize_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out) { return 0; }
