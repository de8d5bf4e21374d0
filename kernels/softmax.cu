/* softmax.cu: CUDA kernels of the softmax op family (Softmax, LogSoftmax,
 * Hardmax), mirroring src/backend/cpu/ops/softmax.c. The input is read as
 * (outer, n, inner): with inner == 1 one block normalizes each row (warp
 * reductions); otherwise one thread walks each of the outer * inner strided
 * lines. float16 and bfloat16 are computed in float and rounded once; the
 * max keeps a NaN (ops/reduce.h), and Hardmax marks each line's first
 * maximum as the CPU does. */
#include <math.h>

#include "common.cuh"

extern "C" {
#include "ops/reduce.h"
#include "ops/softmax.h"
#include "util/dtype.h"
}

enum { SM_SOFTMAX, SM_LOG, SM_HARD };

struct sh16 { uint16_t v; };
struct sb16 { uint16_t v; };

/* Storage S computed in C (float for the 16-bit types). */
template <class S> struct sm_c { typedef S type; };
template <> struct sm_c<sh16> { typedef float type; };
template <> struct sm_c<sb16> { typedef float type; };

__device__ __forceinline__ float s_ld(float v) { return v; }
__device__ __forceinline__ double s_ld(double v) { return v; }
__device__ __forceinline__ float s_ld(sh16 v) { return bd_half_to_float_hd(v.v); }
__device__ __forceinline__ float s_ld(sb16 v) { return bd_bf16_to_float(v.v); }
__device__ __forceinline__ void s_st(float &o, float v) { o = v; }
__device__ __forceinline__ void s_st(double &o, double v) { o = v; }
__device__ __forceinline__ void s_st(sh16 &o, float v) { o.v = bd_float_to_half(v); }
__device__ __forceinline__ void s_st(sb16 &o, float v) { o.v = bd_float_to_bf16(v); }

__device__ __forceinline__ float s_exp(float v) { return expf(v); }
__device__ __forceinline__ double s_exp(double v) { return exp(v); }
__device__ __forceinline__ float s_log(float v) { return logf(v); }
__device__ __forceinline__ double s_log(double v) { return log(v); }

/* A block's max that keeps a NaN; sh holds 32 C. */
template <class C> __device__ __forceinline__ C block_max_nan(C v, C *sh)
{
    for (int o = 16; o > 0; o >>= 1) v = BD_RED_MAX2(v, __shfl_xor_sync(0xffffffffu, v, o));
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    __syncthreads();
    if (lane == 0) sh[w] = v;
    __syncthreads();
    v = lane < nw ? sh[lane] : (C)-INFINITY;
    for (int o = 16; o > 0; o >>= 1) v = BD_RED_MAX2(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* One block per row of n contiguous values (grid-stride over rows). */
template <class S>
__global__ void k_softmax_rows(const S *__restrict__ x, S *__restrict__ o, int64_t rows, int64_t n, int mode)
{
    typedef typename sm_c<S>::type C;
    __shared__ C sh[32];
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const S *xr = x + r * n;
        S *orow = o + r * n;
        C mx = (C)-INFINITY;
        for (int64_t j = threadIdx.x; j < n; j += blockDim.x) mx = BD_RED_MAX2(mx, s_ld(xr[j]));
        mx = block_max_nan(mx, sh);
        C sum = 0;
        for (int64_t j = threadIdx.x; j < n; j += blockDim.x) sum += s_exp(s_ld(xr[j]) - mx);
        sum = bd_cu_block_sum(sum, sh);
        if (mode == SM_LOG) {
            C l = mx + s_log(sum);
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x) s_st(orow[j], s_ld(xr[j]) - l);
        } else {
            C rs = (C)1 / sum;
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x) s_st(orow[j], s_exp(s_ld(xr[j]) - mx) * rs);
        }
    }
}

/* One thread per line (b, i) of n values at stride inner (every mode). */
template <class S>
__global__ void k_softmax_lines(const S *__restrict__ x, S *__restrict__ o, int64_t outer, int64_t n,
                                int64_t inner, int mode)
{
    typedef typename sm_c<S>::type C;
    BD_CU_LOOP(t, outer * inner)
    {
        int64_t b = t / inner, i = t - b * inner;
        const S *xl = x + b * n * inner + i;
        S *ol = o + b * n * inner + i;
        if (mode == SM_HARD) {
            int64_t best = 0;
            C bv = s_ld(xl[0]);
            for (int64_t j = 1; j < n; j++) {
                C v = s_ld(xl[j * inner]);
                if (BD_ARG_TAKES(v, bv, 0, 0)) best = j, bv = v;
            }
            for (int64_t j = 0; j < n; j++) s_st(ol[j * inner], (C)(j == best));
            continue;
        }
        C mx = (C)-INFINITY, sum = 0;
        for (int64_t j = 0; j < n; j++) mx = BD_RED_MAX2(mx, s_ld(xl[j * inner]));
        for (int64_t j = 0; j < n; j++) sum += s_exp(s_ld(xl[j * inner]) - mx);
        if (mode == SM_LOG) {
            C l = mx + s_log(sum);
            for (int64_t j = 0; j < n; j++) s_st(ol[j * inner], s_ld(xl[j * inner]) - l);
        } else {
            C rs = (C)1 / sum;
            for (int64_t j = 0; j < n; j++) s_st(ol[j * inner], s_exp(s_ld(xl[j * inner]) - mx) * rs);
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
    int mode = k->node->op == BD_OP_LogSoftmax ? SM_LOG : k->node->op == BD_OP_Hardmax ? SM_HARD : SM_SOFTMAX;
    auto launch = [&](auto tag) {
        typedef decltype(tag) S;
        const S *xd = (const S *)x->data;
        S *od = (S *)k->out[0].data;
        if (inner == 1 && mode != SM_HARD) {
            int block = n >= 1024 ? 256 : n >= 128 ? 128 : 32;
            unsigned grid = (unsigned)(outer < 65535LL * 16 ? outer : 65535LL * 16);
            k_softmax_rows<S><<<grid, block, 0, k->stream>>>(xd, od, outer, n, mode);
        } else {
            k_softmax_lines<S><<<bd_cu_grid(outer * inner), BD_CU_BLOCK, 0, k->stream>>>(xd, od, outer, n, inner,
                                                                                        mode);
        }
    };
    switch (x->dtype) {
    case BRAID_DTYPE_FLOAT: launch(float{}); break;
    case BRAID_DTYPE_DOUBLE: launch(double{}); break;
    case BRAID_DTYPE_FLOAT16: launch(sh16{}); break;
    case BRAID_DTYPE_BFLOAT16: launch(sb16{}); break;
    default:
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op %s with dtype %s is not implemented on CUDA",
                       k->node->op_type, bd_dtype_name(x->dtype));
    }
    BD_CU_CHECK_LAUNCH(k, "the softmax kernel");
    return BRAID_OK;
}

extern "C" void bd_cuda_softmax_free(const bd_node *n, void *cache)
{
    (void)n;
    (void)cache;
}
