/* signal.c: CPU kernels of the signal op family: signal processing: DFT, STFT, the window functions and MelWeightMatrix.
 * (No op of the family is registered yet.) */
#include "backend/cpu/cpu_ops.h"

braid_status bd_cpu_signal(const bd_kernel *k)
{
    return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op %s has no CPU kernel", k->node->op_type);
}
