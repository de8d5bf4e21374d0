/* signal.c: attribute parsing, shape inference and cost of the signal op family:
 * signal processing: DFT, STFT, the window functions and MelWeightMatrix. (No op of the family is registered yet.) */
#include "ops.h"

braid_status bd_signal_parse(bd_node *n, bd_err *e)
{
    return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "op %s is not implemented", n->op_type);
}

braid_status bd_signal_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    (void)in, (void)out;
    return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "op %s is not implemented", n->op_type);
}

double bd_signal_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    (void)n, (void)in, (void)out;
    return 0;
}
