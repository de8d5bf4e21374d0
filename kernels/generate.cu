/* generate.cu: CUDA kernels of the generate op family, mirroring
 * src/backend/cpu/ops/generate.c: Constant copies its tensor up,
 * ConstantOfShape repeats one element, Range counts from start and delta
 * read on the device. (Plans normally fold all three.) */
#include "common.cuh"

extern "C" {
#include "ops/generate.h"
}

/* start + i * delta in the type T, as numpy's arange fills; floats round the
 * product and the sum separately (never an fma), as the CPU does. */
template <class T> __device__ __forceinline__ T range_at(T s, int64_t i, T d) { return (T)(s + (T)i * d); }
template <> __device__ __forceinline__ float range_at(float s, int64_t i, float d)
{
    return __fadd_rn(s, __fmul_rn((float)i, d));
}
template <> __device__ __forceinline__ double range_at(double s, int64_t i, double d)
{
    return __dadd_rn(s, __dmul_rn((double)i, d));
}

template <class T>
__global__ void k_range(const T *__restrict__ start, const T *__restrict__ delta, T *__restrict__ o,
                        int64_t n)
{
    T s = *start, d = *delta;
    BD_CU_LOOP(i, n) o[i] = range_at(s, i, d);
}

static braid_status run_range(const bd_cuda_kernel *k)
{
    int64_t n = k->out[0].dims[0];
    if (n == 0) return BRAID_OK;
    for (int i = 0; i < 3; i++)
        if (!k->in[i].data) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "Range input %d has no data", i);
    auto launch = [&](auto tag) {
        typedef decltype(tag) T;
        k_range<T><<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>(
            (const T *)k->in[0].data, (const T *)k->in[2].data, (T *)k->out[0].data, n);
    };
    switch (k->out[0].dtype) {
    case BRAID_DTYPE_FLOAT: launch(float{}); break;
    case BRAID_DTYPE_DOUBLE: launch(double{}); break;
    case BRAID_DTYPE_INT16: launch(int16_t{}); break;
    case BRAID_DTYPE_INT32: launch(int32_t{}); break;
    case BRAID_DTYPE_INT64: launch(int64_t{}); break;
    default:
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op Range with dtype %s is not implemented on CUDA",
                       bd_dtype_name(k->out[0].dtype));
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
            BD_CU_CHECK_CALL(k, cudaMemcpyAsync(y->data, p->bytes, nbytes, cudaMemcpyHostToDevice, k->stream));
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
