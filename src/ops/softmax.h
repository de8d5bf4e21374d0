/* softmax.h: the parsed attributes of the softmax op family (n->params),
 * shared by src/ops/softmax.c and the softmax kernels of every backend. */
#ifndef BD_SOFTMAX_H
#define BD_SOFTMAX_H

#include <stdint.h>

typedef struct bd_softmax_params {
    int64_t axis;  /* as given (may be negative); default 1 before opset 13, -1 from 13 */
    int flatten;   /* opset < 13: the input is read as 2-D (prod(dims[:axis]), prod(dims[axis:]))
                    * and each row is normalized; else along dims[axis] only */
} bd_softmax_params;

#endif /* BD_SOFTMAX_H */
