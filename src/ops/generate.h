/* generate.h: the generate family's parsed attributes (Constant,
 * ConstantOfShape, Range), shared by src/ops/generate.c and the kernels. */
#ifndef BD_OPS_GENERATE_H
#define BD_OPS_GENERATE_H

#include "ops.h"

typedef struct bd_generate_params {
    bd_tensor value;        /* Constant: the tensor (data points to bytes);
                               ConstantOfShape: dtype and 1 element */
    size_t nbytes;
    unsigned char bytes[];  /* nbytes */
} bd_generate_params;

#endif /* BD_OPS_GENERATE_H */
