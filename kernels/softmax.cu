/* softmax.cu: CUDA kernels of the softmax op family (Softmax, LogSoftmax),
 * mirroring src/backend/cpu/ops/softmax.c. The input is read as (outer, n,
 * inner): with inner == 1 one block normalizes each row (warp reductions);
 * otherwise one thread walks each of the outer * inner strided lines. */
#include <math.h>

#include "common.cuh"

extern "C" {
#include "ops/softmax.h"
}

__device__ __forceinline__ float s_exp(float v) { return expf(v); }
__device__ __forceinline__ double s_exp(double v) { return exp(v); }
__device__ __forceinline__ float s_log(float v) { return logf(v); }
__device__ __forceinline__ double s_log(double v) { return log(v); }

/* One block per row of n contiguous values (grid-stride over rows). */
template <class T>
__global__ void k_softmax_rows(const T *__restrict__ x, T *__restrict__ o, int64_t rows, int64_t n,
                               int log_)
{
    __shared__ T sh[32];
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *xr = x + r * n;
        T *orow = o + r * n;
        T mx = (T)-INFINITY;
        for (int64_t j = threadIdx.x; j < n; j += blockDim.x) mx = xr[j] > mx ? xr[j] : mx;
        mx = bd_cu_block_max(mx, (T)-INFINITY, sh);
        T sum = 0;
        for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
            T e = s_exp(xr[j] - mx);
            if (!log_) orow[j] = e;
            sum += e;
        }
        sum = bd_cu_block_sum(sum, sh);
        if (log_) {
            T l = mx + s_log(sum);
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x) orow[j] = xr[j] - l;
        } else {
            T rs = (T)1 / sum;
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x) orow[j] *= rs;
        }
    }
}

/* One thread per line (b, i) of n values at stride inner. */
template <class T>
__global__ void k_softmax_lines(const T *__restrict__ x, T *__restrict__ o, int64_t outer,
                                int64_t n, int64_t inner, int log_)
{
    BD_CU_LOOP(t, outer * inner)
    {
        int64_t b = t / inner, i = t - b * inner;
        const T *xl = x + b * n * inner + i;
        T *ol = o + b * n * inner + i;
        T mx = (T)-INFINITY, sum = 0;
        for (int64_t j = 0; j < n; j++) mx = xl[j * inner] > mx ? xl[j * inner] : mx;
        for (int64_t j = 0; j < n; j++) {
            T e = s_exp(xl[j * inner] - mx);
            if (!log_) ol[j * inner] = e;
            sum += e;
        }
        if (log_) {
            T l = mx + s_log(sum);
            for (int64_t j = 0; j < n; j++) ol[j * inner] = xl[j * inner] - l;
        } else {
            T rs = (T)1 / sum;
            for (int64_t j = 0; j < n; j++) ol[j * inner] *= rs;
        }
    }
}

extern "C" braid_status bd_cuda_softmax(const bd_cuda_kernel *k)
{
    const bd_tensor *x = &k->in[0];
    int64_t outer, n, inner;
    braid_status st = bd_softmax_geometry(k->node, x, &outer, &n, &inner, k->err);
    if (st) return st;
    if (outer * n * inner == 0) return BRAID_OK;
    int log_ = k->node->op == BD_OP_LogSoftmax;
    bool ok = bd_cu_dispatch_float(x->dtype, [&](auto tag) {
        typedef decltype(tag) T;
        const T *xd = (const T *)x->data;
        T *od = (T *)k->out[0].data;
        if (inner == 1) {
            int block = n >= 1024 ? 256 : n >= 128 ? 128 : 32;
            unsigned grid = (unsigned)(outer < 65535LL * 16 ? outer : 65535LL * 16);
            k_softmax_rows<T><<<grid, block, 0, k->stream>>>(xd, od, outer, n, log_);
        } else {
            k_softmax_lines<T><<<bd_cu_grid(outer * inner), BD_CU_BLOCK, 0, k->stream>>>(
                xd, od, outer, n, inner, log_);
        }
    });
    if (!ok)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op %s with dtype %s is not implemented on CUDA",
                       k->node->op_type, bd_dtype_name(x->dtype));
    BD_CU_CHECK_LAUNCH(k, "the softmax kernel");
    return BRAID_OK;
}

extern "C" void bd_cuda_softmax_free(const bd_node *n, void *cache)
{
    (void)n;
    (void)cache;
}
