/* topk.h: the parsed attributes of the topk op family (TopK) and the order
 * that both backends' kernels sort by: every element becomes an unsigned
 * 64-bit key that orders as its value does (NaN above +inf, -0 equal to +0,
 * as numpy's sort that onnx's reference uses), complemented when the largest
 * are wanted; ties go to the lower index. */
#ifndef BD_TOPK_H
#define BD_TOPK_H

#include <string.h>

#include "ops.h"
#include "util/dtype.h"

typedef struct bd_topk_params {
    int64_t axis;    /* default -1 */
    int largest;     /* default 1 */
    int sorted;      /* default 1 (the outputs are always sorted: allowed either way) */
    int64_t k;       /* opset 1: attribute 'k'; later K is input 1 */
    int k_attr;
} bd_topk_params;

static inline BD_HOST_DEVICE uint64_t bd_topk_key_f64(double d)
{
    uint64_t u;
    if (d != d) return ~(uint64_t)0; /* NaN: above everything */
    if (d == 0) d = 0.0;             /* -0 sorts with +0 */
    memcpy(&u, &d, sizeof u);
    return (u >> 63) ? ~u : u | ((uint64_t)1 << 63);
}

/* The ascending sort key of element i of data (dtype dt); for largest the
 * key is complemented so that the largest value comes first. */
static inline BD_HOST_DEVICE uint64_t bd_topk_key(int dt, const void *data, int64_t i, int largest)
{
    uint64_t k;
    switch (dt) {
    case BRAID_DTYPE_FLOAT: k = bd_topk_key_f64(((const float *)data)[i]); break;
    case BRAID_DTYPE_DOUBLE: k = bd_topk_key_f64(((const double *)data)[i]); break;
    case BRAID_DTYPE_FLOAT16: k = bd_topk_key_f64(bd_half_to_float_hd(((const uint16_t *)data)[i])); break;
    case BRAID_DTYPE_BFLOAT16: k = bd_topk_key_f64(bd_bf16_to_float(((const uint16_t *)data)[i])); break;
    case BRAID_DTYPE_INT8: k = (uint64_t)(int64_t)((const int8_t *)data)[i] ^ ((uint64_t)1 << 63); break;
    case BRAID_DTYPE_INT16: k = (uint64_t)(int64_t)((const int16_t *)data)[i] ^ ((uint64_t)1 << 63); break;
    case BRAID_DTYPE_INT32: k = (uint64_t)(int64_t)((const int32_t *)data)[i] ^ ((uint64_t)1 << 63); break;
    case BRAID_DTYPE_INT64: k = (uint64_t)((const int64_t *)data)[i] ^ ((uint64_t)1 << 63); break;
    case BRAID_DTYPE_UINT8: k = ((const uint8_t *)data)[i]; break;
    case BRAID_DTYPE_UINT16: k = ((const uint16_t *)data)[i]; break;
    case BRAID_DTYPE_UINT32: k = ((const uint32_t *)data)[i]; break;
    default: k = ((const uint64_t *)data)[i]; break; /* UINT64 */
    }
    return largest ? ~k : k;
}

/* Whether (ka, ia) comes before (kb, ib) in the output. */
static inline BD_HOST_DEVICE int bd_topk_before(uint64_t ka, int64_t ia, uint64_t kb, int64_t ib)
{
    return ka < kb || (ka == kb && ia < ib);
}

/* K of node n: the attribute (opset 1) or input 1 (one int64, known when the
 * plan is made), checked against the axis size dim. */
braid_status bd_topk_k(const bd_node *n, const bd_tensor *in, int64_t dim, int64_t *k, bd_err *e);

#endif /* BD_TOPK_H */
