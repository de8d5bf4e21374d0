/* reduce.h: the parsed attributes of the reduce op family (n->params) and the
 * resolution of the reduced axes, shared by src/ops/reduce.c and the reduce
 * kernels of every backend. */
#ifndef BD_REDUCE_H
#define BD_REDUCE_H

#include "ops.h"

typedef struct bd_reduce_params {
    int keepdims;          /* default 1 */
    int noop_empty_axes;   /* noop_with_empty_axes: empty axes leave the input as it is */
    int axes_input;        /* axes come from input 1 (ReduceSum opset >= 13, the rest >= 18) */
    int n_axes;            /* attribute axes (older opsets); ArgMax: 1 */
    int64_t axes[BD_MAX_RANK];
    int select_last_index; /* ArgMax */
} bd_reduce_params;

/* Which dims of the data input (rank in[0].rank) node n reduces: bit d of
 * *mask. *identity = 1 when nothing is reduced because the axes are empty and
 * noop_with_empty_axes is set (the output is then a copy of the input). The
 * axes input, when the node takes one, must have data. */
braid_status bd_reduce_axes(const bd_node *n, const bd_tensor *in, int n_in, unsigned *mask,
                            int *identity, bd_err *e);

#endif /* BD_REDUCE_H */
