/* generate.c: CPU kernels of the generate op family: Constant copies its
 * tensor, ConstantOfShape repeats one element, Range counts. */
#include "backend/cpu/cpu_ops.h"
#include "ops/generate.h"

#include <string.h>

/* out[i] = start + i * delta, in the type T (as numpy's arange fills). */
#define RANGE_FILL(T)                                                                              \
    do {                                                                                           \
        T s_ = *(const T *)k->in[0].data, d_ = *(const T *)k->in[2].data;                          \
        T *o_ = k->out[0].data;                                                                    \
        for (int64_t i = 0; i < n; i++) o_[i] = (T)(s_ + (T)i * d_);                               \
    } while (0)

static braid_status run_range(const bd_kernel *k)
{
    int64_t n = k->out[0].dims[0];
    if (n == 0) return BRAID_OK;
    for (int i = 0; i < 3; i++)
        if (!k->in[i].data) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "Range input %d has no data", i);
    switch (k->out[0].dtype) {
    case BRAID_DTYPE_FLOAT: RANGE_FILL(float); break;
    case BRAID_DTYPE_DOUBLE: RANGE_FILL(double); break;
    case BRAID_DTYPE_INT16: RANGE_FILL(int16_t); break;
    case BRAID_DTYPE_INT32: RANGE_FILL(int32_t); break;
    case BRAID_DTYPE_INT64: RANGE_FILL(int64_t); break;
    default:
        return BD_FAIL(k->err, BRAID_ERR_DTYPE, "Range of %s is not supported",
                       bd_dtype_name(k->out[0].dtype));
    }
    return BRAID_OK;
}
#undef RANGE_FILL

braid_status bd_cpu_generate(const bd_kernel *k)
{
    const bd_generate_params *p = k->node->params;
    bd_tensor *y = &k->out[0];
    size_t nbytes;
    braid_status st;
    switch (k->node->op) {
    case BD_OP_Constant:
        if ((st = bd_tensor_nbytes(y, &nbytes, k->err))) return st;
        if (nbytes != p->nbytes)
            return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "Constant output has %zu bytes, expected %zu",
                           nbytes, p->nbytes);
        if (nbytes) memcpy(y->data, p->bytes, nbytes);
        return BRAID_OK;
    case BD_OP_ConstantOfShape: {
        size_t es = p->nbytes, zero = 1;
        int64_t n = bd_numel(y);
        for (size_t i = 0; i < es; i++) zero &= p->bytes[i] == 0;
        if (n == 0) return BRAID_OK;
        if (zero) { memset(y->data, 0, (size_t)n * es); return BRAID_OK; }
        /* Doubling copies: one element, then 2, 4, ... */
        memcpy(y->data, p->bytes, es);
        for (int64_t have = 1; have < n; have *= 2)
            memcpy((char *)y->data + have * (int64_t)es, y->data, (size_t)BD_MIN(have, n - have) * es);
        return BRAID_OK;
    }
    case BD_OP_Range: return run_range(k);
    default:
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the generate family",
                       k->node->op_type);
    }
}
