/* generate.c: CPU kernels of the generate op family: Constant copies its
 * tensor, ConstantOfShape repeats one element, Range counts. */
#include "backend/cpu/cpu_ops.h"
#include "ops/generate.h"
#include "util/dtype.h"

#include <string.h>

/* out[i] = start + i * delta in the integer type T. */
#define RANGE_INT(T)                                                                               \
    do {                                                                                           \
        T s_ = *(const T *)k->in[0].data, d_ = *(const T *)k->in[2].data;                          \
        T *o_ = k->out[0].data;                                                                    \
        for (int64_t i = 0; i < n; i++) o_[i] = (T)(s_ + (T)i * d_);                               \
    } while (0)

static double scalar_f64(const bd_tensor *t)
{
    switch (t->dtype) {
    case BRAID_DTYPE_FLOAT: return *(const float *)t->data;
    case BRAID_DTYPE_DOUBLE: return *(const double *)t->data;
    case BRAID_DTYPE_FLOAT16: return bd_half_to_float(*(const uint16_t *)t->data);
    default: return bd_bf16_to_float(*(const uint16_t *)t->data);
    }
}

/* The float types: the values of bd_range_f64/f32 in the compute type
 * (generate.h), rounded once to the output type. */
static void range_float(const bd_kernel *k, int64_t n)
{
    const bd_generate_params *p = k->node->params;
    int dt = k->out[0].dtype, half = dt == BRAID_DTYPE_FLOAT16 || dt == BRAID_DTYPE_BFLOAT16;
    double s = scalar_f64(&k->in[0]), d = scalar_f64(&k->in[2]);
    void *o = k->out[0].data;
    if (half && p && p->stash_type == BRAID_DTYPE_FLOAT) {
        float s32 = (float)s, next = (float)((double)s32 + d);
        for (int64_t i = 0; i < n; i++) {
            float v = bd_range_f32(s32, next, i);
            ((uint16_t *)o)[i] = dt == BRAID_DTYPE_FLOAT16 ? bd_float_to_half(v) : bd_float_to_bf16(v);
        }
        return;
    }
    double next = s + d;
    for (int64_t i = 0; i < n; i++) {
        double v = bd_range_f64(s, next, i);
        if (dt == BRAID_DTYPE_DOUBLE) ((double *)o)[i] = v;
        else if (dt == BRAID_DTYPE_FLOAT) ((float *)o)[i] = (float)v;
        else if (dt == BRAID_DTYPE_FLOAT16) ((uint16_t *)o)[i] = bd_float_to_half(bd_f64_to_f32_odd(v));
        else ((uint16_t *)o)[i] = bd_float_to_bf16(bd_f64_to_f32_odd(v));
    }
}

static braid_status run_range(const bd_kernel *k)
{
    int64_t n = k->out[0].dims[0];
    if (n == 0) return BRAID_OK;
    for (int i = 0; i < 3; i++)
        if (!k->in[i].data) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "Range input %d has no data", i);
    switch (k->out[0].dtype) {
    case BRAID_DTYPE_FLOAT:
    case BRAID_DTYPE_DOUBLE:
    case BRAID_DTYPE_FLOAT16:
    case BRAID_DTYPE_BFLOAT16: range_float(k, n); break;
    case BRAID_DTYPE_INT16: RANGE_INT(int16_t); break;
    case BRAID_DTYPE_INT32: RANGE_INT(int32_t); break;
    case BRAID_DTYPE_INT64: RANGE_INT(int64_t); break;
    default:
        return BD_FAIL(k->err, BRAID_ERR_DTYPE, "Range of %s is not supported",
                       bd_dtype_name(k->out[0].dtype));
    }
    return BRAID_OK;
}
#undef RANGE_INT

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
