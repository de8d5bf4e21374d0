/* unary.h: the parsed attributes of the unary op family (n->params), shared by
 * src/ops/unary.c and the unary kernels of every backend. */
#ifndef BD_UNARY_H
#define BD_UNARY_H

typedef struct bd_unary_params {
    float alpha; /* LeakyRelu (0.01), HardSigmoid (0.2) */
    float beta;  /* HardSigmoid (0.5) */
    float min;   /* Clip before opset 11: attribute 'min' (default: the lowest float) */
    float max;   /* Clip before opset 11: attribute 'max' (default: the highest float) */
    int to;      /* Cast: the target braid_dtype */
} bd_unary_params;

#endif /* BD_UNARY_H */
