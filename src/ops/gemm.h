/* gemm.h: the gemm family's parsed attributes and MatMul's shape rule,
 * shared by shape inference (src/ops/gemm.c) and the kernels. */
#ifndef BD_OPS_GEMM_H
#define BD_OPS_GEMM_H

#include "ops.h"

typedef struct bd_gemm_params {
    float alpha, beta; /* Gemm: Y = alpha * op(A) op(B) + beta * C */
    int trans_a, trans_b;
} bd_gemm_params;

/* MatMul's view of its operands (numpy matmul): a (batch..., M, K) times
 * b (batch..., K, N); a 1-D a is (1, K) and a 1-D b is (K, 1), the added dim
 * being dropped from the output. Batch dims broadcast. */
typedef struct bd_matmul_geom {
    int64_t m, k, n;
    bd_tensor a_batch, b_batch, batch; /* batch dims of a, b and the output (rank may be 0) */
} bd_matmul_geom;

/* Resolves the geometry and the output shape; fails with SHAPE naming both shapes. */
braid_status bd_matmul_geometry(const bd_tensor *a, const bd_tensor *b, bd_matmul_geom *g,
                                bd_tensor *out, bd_err *e);

#endif /* BD_OPS_GEMM_H */
