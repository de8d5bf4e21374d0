/* norm.h: the norm family's parsed attributes, shared by shape inference
 * (src/ops/norm.c) and the kernels. */
#ifndef BD_OPS_NORM_H
#define BD_OPS_NORM_H

#include "ops.h"

typedef struct bd_norm_params {
    float epsilon;
    int64_t axis; /* LayerNormalization: the first normalized axis, as written (may be < 0) */
} bd_norm_params;

#endif /* BD_OPS_NORM_H */
