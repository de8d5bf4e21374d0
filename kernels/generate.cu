/* generate.cu: CUDA kernels of the generate op family, mirroring
 * src/backend/cpu/ops/generate.c: Constant copies its tensor up,
 * ConstantOfShape repeats one element, Range counts from start and delta
 * read on the device, in the CPU's compute types. (Plans normally fold all
 * three.) */
#include "common.cuh"

extern "C" {
#include "ops/generate.h"
#include "util/dtype.h"
}

/* The integers: start + i * delta in the type T. */
template <class T>
__global__ void k_range_int(const T *__restrict__ start, const T *__restrict__ delta, T *__restrict__ o, int64_t n)
{
    T s = *start, d = *delta;
    BD_CU_LOOP(i, n) o[i] = (T)(s + (T)i * d);
}

__device__ __forceinline__ double range_load(const void *p, int dt)
{
    switch (dt) {
    case BRAID_DTYPE_FLOAT: return *(const float *)p;
    case BRAID_DTYPE_DOUBLE: return *(const double *)p;
    case BRAID_DTYPE_FLOAT16: return bd_half_to_float_hd(*(const uint16_t *)p);
    default: return bd_bf16_to_float(*(const uint16_t *)p);
    }
}

/* The float types as the CPU computes them: bd_range_f64/f32 (generate.h) in
 * the compute type, rounded once to the output type. */
__global__ void k_range_float(const void *start, const void *delta, void *o, int64_t n, int dt, int stash_f32)
{
    double s = range_load(start, dt), d = range_load(delta, dt);
    int half = dt == BRAID_DTYPE_FLOAT16 || dt == BRAID_DTYPE_BFLOAT16;
    if (half && stash_f32) {
        float s32 = (float)s, next = __double2float_rn(__dadd_rn((double)s32, d));
        BD_CU_LOOP(i, n) {
            float v = bd_range_f32(s32, next, i);
            ((uint16_t *)o)[i] = dt == BRAID_DTYPE_FLOAT16 ? bd_float_to_half(v) : bd_float_to_bf16(v);
        }
        return;
    }
    double next = __dadd_rn(s, d);
    BD_CU_LOOP(i, n) {
        double v = bd_range_f64(s, next, i);
        if (dt == BRAID_DTYPE_DOUBLE) ((double *)o)[i] = v;
        else if (dt == BRAID_DTYPE_FLOAT) ((float *)o)[i] = __double2float_rn(v);
        else if (dt == BRAID_DTYPE_FLOAT16) ((uint16_t *)o)[i] = bd_float_to_half(bd_f64_to_f32_odd(v));
        else ((uint16_t *)o)[i] = bd_float_to_bf16(bd_f64_to_f32_odd(v));
    }
}

static braid_status run_range(const bd_cuda_kernel *k)
{
    const bd_generate_params *p = (const bd_generate_params *)k->node->params;
    int64_t n = k->out[0].dims[0];
    int dt = k->out[0].dtype;
    if (n == 0) return BRAID_OK;
    for (int i = 0; i < 3; i++)
        if (!k->in[i].data) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "Range input %d has no data", i);
    auto launch = [&](auto tag) {
        typedef decltype(tag) T;
        k_range_int<T><<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>(
            (const T *)k->in[0].data, (const T *)k->in[2].data, (T *)k->out[0].data, n);
    };
    switch (dt) {
    case BRAID_DTYPE_FLOAT:
    case BRAID_DTYPE_DOUBLE:
    case BRAID_DTYPE_FLOAT16:
    case BRAID_DTYPE_BFLOAT16:
        k_range_float<<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>(k->in[0].data, k->in[2].data, k->out[0].data, n,
                                                                    dt, p && p->stash_type == BRAID_DTYPE_FLOAT);
        break;
    case BRAID_DTYPE_INT16: launch(int16_t{}); break;
    case BRAID_DTYPE_INT32: launch(int32_t{}); break;
    case BRAID_DTYPE_INT64: launch(int64_t{}); break;
    default:
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op Range with dtype %s is not implemented on CUDA",
                       bd_dtype_name(dt));
    }
    BD_CU_CHECK_LAUNCH(k, "the Range kernel");
    return BRAID_OK;
}

extern "C" braid_status bd_cuda_generate(const bd_cuda_kernel *k)
{
    const bd_generate_params *p = (const bd_generate_params *)k->node->params;
    bd_tensor *y = &k->out[0];
    size_t nbytes;
    braid_status st;
    if (!p && k->node->op != BD_OP_Range)
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "generate parameters were not parsed");
    switch (k->node->op) {
    case BD_OP_Constant:
        if ((st = bd_tensor_nbytes(y, &nbytes, k->err))) return st;
        if (nbytes != p->nbytes)
            return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "Constant output has %zu bytes, expected %zu",
                           nbytes, p->nbytes);
        /* p->bytes lives as long as the node, so the copy may finish later. */
        if (nbytes)
            BD_CU_CHECK_CALL(k, cudaMemcpyAsync(y->data, p->bytes, nbytes, cudaMemcpyDefault, k->stream));
        return BRAID_OK;
    case BD_OP_ConstantOfShape: {
        size_t es = p->nbytes;
        int zero = 1;
        int64_t n = bd_numel(y);
        for (size_t i = 0; i < es; i++) zero &= p->bytes[i] == 0;
        if (n == 0) return BRAID_OK;
        if (zero) {
            BD_CU_CHECK_CALL(k, cudaMemsetAsync(y->data, 0, (size_t)n * es, k->stream));
            return BRAID_OK;
        }
        return bd_cu_fill(k, y->data, n, es, p->bytes);
    }
    case BD_OP_Range: return run_range(k);
    default:
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the generate family",
                       k->node->op_type);
    }
}

extern "C" void bd_cuda_generate_free(const bd_node *n, void *cache)
{
    (void)n;
    (void)cache;
}
