/* select.h: the select family (NonZero, Compress, Unique): ops whose output
 * shape depends on input values (BD_OPF_DATA_SHAPE). Their parsed
 * attributes and the element predicates and orders that shape inference
 * (src/ops/select.c) and the kernels share. Inference gives each output's
 * largest shape; the kernel writes the actual dims into its outputs. */
#ifndef BD_OPS_SELECT_H
#define BD_OPS_SELECT_H

#include "ops.h"
#include "util/dtype.h"

typedef struct bd_select_params {
    int has_axis;   /* Compress, Unique: attribute 'axis' given */
    int64_t axis;
    int64_t sorted; /* Unique */
} bd_select_params;

/* 1 when element i of a tensor of dtype dt is not zero: any bit set but a
 * float's sign bit (so -0.0 is zero and NaN is not). */
static inline BD_HOST_DEVICE int bd_nonzero_at(int dt, const void *p, int64_t i)
{
    switch (dt) {
    case BRAID_DTYPE_FLOAT: return (((const uint32_t *)p)[i] & 0x7fffffffu) != 0;
    case BRAID_DTYPE_DOUBLE: return (((const uint64_t *)p)[i] & 0x7fffffffffffffffull) != 0;
    case BRAID_DTYPE_FLOAT16: case BRAID_DTYPE_BFLOAT16: return (((const uint16_t *)p)[i] & 0x7fffu) != 0;
    case BRAID_DTYPE_INT16: case BRAID_DTYPE_UINT16: return ((const uint16_t *)p)[i] != 0;
    case BRAID_DTYPE_INT32: case BRAID_DTYPE_UINT32: return ((const uint32_t *)p)[i] != 0;
    case BRAID_DTYPE_INT64: case BRAID_DTYPE_UINT64: return ((const uint64_t *)p)[i] != 0;
    default: return ((const uint8_t *)p)[i] != 0; /* the 1-byte integers and bool */
    }
}

/* 1 for the dtypes NonZero and Unique read as numbers. */
static inline int bd_select_numeric(int dt)
{
    switch (dt) {
    case BRAID_DTYPE_FLOAT: case BRAID_DTYPE_DOUBLE: case BRAID_DTYPE_FLOAT16: case BRAID_DTYPE_BFLOAT16:
    case BRAID_DTYPE_INT8: case BRAID_DTYPE_INT16: case BRAID_DTYPE_INT32: case BRAID_DTYPE_INT64:
    case BRAID_DTYPE_UINT8: case BRAID_DTYPE_UINT16: case BRAID_DTYPE_UINT32: case BRAID_DTYPE_UINT64:
    case BRAID_DTYPE_BOOL: return 1;
    default: return 0;
    }
}

/* Unique's order of two elements of dtype dt: -1, 0 or 1, with -0.0 equal to
 * 0.0 and NaN after every number and equal to NaN (numpy's unique with
 * equal_nan, as onnx's reference calls it). */
static inline int bd_unique_cmp(int dt, const void *p, int64_t i, int64_t j)
{
    if (dt == BRAID_DTYPE_FLOAT || dt == BRAID_DTYPE_DOUBLE || dt == BRAID_DTYPE_FLOAT16 || dt == BRAID_DTYPE_BFLOAT16) {
        double a, b;
        if (dt == BRAID_DTYPE_FLOAT) a = ((const float *)p)[i], b = ((const float *)p)[j];
        else if (dt == BRAID_DTYPE_DOUBLE) a = ((const double *)p)[i], b = ((const double *)p)[j];
        else if (dt == BRAID_DTYPE_FLOAT16) a = bd_half_to_float_hd(((const uint16_t *)p)[i]), b = bd_half_to_float_hd(((const uint16_t *)p)[j]);
        else a = bd_bf16_to_float(((const uint16_t *)p)[i]), b = bd_bf16_to_float(((const uint16_t *)p)[j]);
        int na = a != a, nb = b != b;
        if (na || nb) return na - nb;
        return a < b ? -1 : a > b;
    }
#define BD_UQ(T) { T a = ((const T *)p)[i], b = ((const T *)p)[j]; return a < b ? -1 : a > b; }
    switch (dt) {
    case BRAID_DTYPE_INT8: BD_UQ(int8_t)
    case BRAID_DTYPE_INT16: BD_UQ(int16_t)
    case BRAID_DTYPE_INT32: BD_UQ(int32_t)
    case BRAID_DTYPE_INT64: BD_UQ(int64_t)
    case BRAID_DTYPE_UINT16: BD_UQ(uint16_t)
    case BRAID_DTYPE_UINT32: BD_UQ(uint32_t)
    case BRAID_DTYPE_UINT64: BD_UQ(uint64_t)
    default: BD_UQ(uint8_t) /* UINT8, BOOL */
    }
#undef BD_UQ
}

/* Compress: the number of slices kept (true among the condition's first
 * `len` values), the selection being along `dim` slices. */
static inline int64_t bd_compress_count(const uint8_t *cond, int64_t len)
{
    int64_t c = 0;
    for (int64_t i = 0; i < len; i++) c += cond[i] != 0;
    return c;
}

/* The (outer, dim, inner) view Compress and Unique work on: with an axis,
 * around it; without, the flattened input (outer = inner = 1). */
void bd_select_view(const bd_node *n, const bd_tensor *x, int64_t *outer, int64_t *dim, int64_t *inner);

#endif /* BD_OPS_SELECT_H */
