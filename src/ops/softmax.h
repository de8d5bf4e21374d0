/* softmax.h: the parsed attributes of the softmax op family (n->params),
 * shared by src/ops/softmax.c and the softmax kernels of every backend. */
#ifndef BD_SOFTMAX_H
#define BD_SOFTMAX_H

#include "ops.h"

typedef struct bd_softmax_params {
    int64_t axis;  /* as given (may be negative); default 1 before opset 13, -1 from 13 */
    int flatten;   /* opset < 13: the input is read as 2-D (prod(dims[:axis]), prod(dims[axis:]))
                    * and each row is normalized; else along dims[axis] only */
} bd_softmax_params;

/* x seen as (outer, n, inner) with the normalized elements along n, for
 * node's axis and opset; what every backend's kernel walks. */
braid_status bd_softmax_geometry(const bd_node *node, const bd_tensor *x, int64_t *outer, int64_t *n,
                                 int64_t *inner, bd_err *e);

#endif /* BD_SOFTMAX_H */
