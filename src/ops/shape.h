/* shape.h: the shape family's parsed attributes (Reshape, Flatten, Squeeze,
 * Unsqueeze, Shape, Identity, Dropout), shared by src/ops/shape.c and the kernels. */
#ifndef BD_OPS_SHAPE_H
#define BD_OPS_SHAPE_H

#include "ops.h"

typedef struct bd_shape_params {
    int64_t allowzero;          /* Reshape (opset 14) */
    int64_t axis;               /* Flatten */
    int64_t start, end;         /* Shape (opset 15); end = INT64_MAX when absent */
    int n_axes;                 /* Squeeze/Unsqueeze before opset 13; -1 = absent */
    int64_t axes[BD_MAX_RANK];
} bd_shape_params;

/* The part of the dims that Shape returns: dims[*start .. *start + *len). */
static inline void bd_shape_slice(const bd_shape_params *p, int rank, int64_t *start, int64_t *len)
{
    int64_t s = p->start < 0 ? p->start + rank : p->start;
    int64_t t = p->end < 0 ? p->end + rank : p->end;
    s = s < 0 ? 0 : s > rank ? rank : s;
    t = t < 0 ? 0 : t > rank ? rank : t;
    *start = s;
    *len = t > s ? t - s : 0;
}

/* Dropout runs as in inference: fails with UNSUPPORTED when training_mode
 * (input 2) is known to be true and the ratio is not known to be 0. */
braid_status bd_dropout_check(const bd_node *n, const bd_tensor *in, int n_in, bd_err *e);

#endif /* BD_OPS_SHAPE_H */
