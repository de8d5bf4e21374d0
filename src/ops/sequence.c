/* sequence.c: attribute parsing, shape inference and cost of the sequence op
 * family: sequence and optional values. Today only optionals of tensors run:
 * an optional is a tensor value, and an empty one is an omitted input (ONNX's
 * "" name). Sequence values are not yet in the IR. */
#include "ops.h"

#include <string.h>

braid_status bd_sequence_parse(bd_node *n, bd_err *e)
{
    (void)n, (void)e;
    return BRAID_OK;
}

braid_status bd_sequence_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    int present = n->n_in > 0 && in[0].dtype != BRAID_DTYPE_UNDEFINED;
    switch (n->op) {
    case BD_OP_OptionalHasElement:
        memset(&out[0], 0, sizeof out[0]);
        out[0].dtype = BRAID_DTYPE_BOOL;
        out[0].rank = 0;
        (void)present;
        return BRAID_OK;
    case BD_OP_OptionalGetElement:
        if (!present)
            return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "OptionalGetElement of an empty optional");
        out[0] = in[0];
        out[0].data = NULL;
        return BRAID_OK;
    default:
        return BD_FAIL(e, BRAID_ERR_INTERNAL, "op %s is not in the sequence family", n->op_type);
    }
}

double bd_sequence_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    (void)n, (void)in, (void)out;
    return 0;
}
