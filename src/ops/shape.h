/* shape.h: the shape family's parsed attributes (Reshape, Flatten, Squeeze,
 * Unsqueeze, Shape, Identity, Dropout, Size, BitCast), shared by
 * src/ops/shape.c and the kernels. */
#ifndef BD_OPS_SHAPE_H
#define BD_OPS_SHAPE_H

#include "ops.h"

typedef struct bd_shape_params {
    int64_t allowzero;          /* Reshape (opset 14) */
    int64_t axis;               /* Flatten */
    int64_t start, end;         /* Shape (opset 15); end = INT64_MAX when absent */
    int n_axes;                 /* Squeeze/Unsqueeze before opset 13; -1 = absent */
    int64_t axes[BD_MAX_RANK];
    int64_t to;                 /* BitCast: the target dtype */
} bd_shape_params;

/* The width in bits of one element of dtype as ONNX defines it (4 for INT4,
 * UINT4 and FLOAT4E2M1, 2 for INT2 and UINT2, 6 for the float6 kinds), 0 for
 * types without one (string, undefined). */
static inline BD_HOST_DEVICE int bd_dtype_bits(int dtype)
{
    switch (dtype) {
    case BRAID_DTYPE_INT4: case BRAID_DTYPE_UINT4: case BRAID_DTYPE_FLOAT4E2M1: return 4;
    case BRAID_DTYPE_INT2: case BRAID_DTYPE_UINT2: return 2;
    case BRAID_DTYPE_FLOAT6E2M3: case BRAID_DTYPE_FLOAT6E3M2: return 6;
    case BRAID_DTYPE_UINT8: case BRAID_DTYPE_INT8: case BRAID_DTYPE_BOOL: case BRAID_DTYPE_FLOAT8E4M3FN:
    case BRAID_DTYPE_FLOAT8E4M3FNUZ: case BRAID_DTYPE_FLOAT8E5M2: case BRAID_DTYPE_FLOAT8E5M2FNUZ:
    case BRAID_DTYPE_FLOAT8E8M0: return 8;
    case BRAID_DTYPE_UINT16: case BRAID_DTYPE_INT16: case BRAID_DTYPE_FLOAT16: case BRAID_DTYPE_BFLOAT16: return 16;
    case BRAID_DTYPE_FLOAT: case BRAID_DTYPE_INT32: case BRAID_DTYPE_UINT32: return 32;
    case BRAID_DTYPE_INT64: case BRAID_DTYPE_UINT64: case BRAID_DTYPE_DOUBLE: case BRAID_DTYPE_COMPLEX64: return 64;
    case BRAID_DTYPE_COMPLEX128: return 128;
    default: return 0;
    }
}

/* BitCast of one element of a sub-byte type (held one per byte): its low
 * `bits` bits, sign-extended for the signed integers (INT4, INT2), else
 * zero-extended (UINT4, UINT2, FLOAT4E2M1 keep their code in the low bits). */
static inline BD_HOST_DEVICE uint8_t bd_bitcast_subbyte(uint8_t v, int bits, int to)
{
    uint8_t mask = (uint8_t)((1u << bits) - 1u), low = (uint8_t)(v & mask);
    int sign = to == BRAID_DTYPE_INT4 || to == BRAID_DTYPE_INT2;
    return sign && (low >> (bits - 1)) ? (uint8_t)(low | (uint8_t)~mask) : low;
}

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
