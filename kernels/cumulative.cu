/* cumulative.cu: CUDA kernels of the cumulative op family (CumSum, CumProd),
 * mirroring src/backend/cpu/ops/cumulative.c: one thread scans each of the
 * outer * inner lines around the axis, in the CPU's order and with its
 * accumulators (double for floats, 64-bit integers that wrap as T's do). */
#include "common.cuh"

extern "C" {
#include "ops/cumulative.h"
#include "util/dtype.h"
}

struct ch16 { uint16_t v; };
struct cb16 { uint16_t v; };

__device__ __forceinline__ double c_ld(float v) { return v; }
__device__ __forceinline__ double c_ld(double v) { return v; }
__device__ __forceinline__ double c_ld(ch16 v) { return bd_half_to_float_hd(v.v); }
__device__ __forceinline__ double c_ld(cb16 v) { return bd_bf16_to_float(v.v); }
template <class T> __device__ __forceinline__ uint64_t c_ld(T v) { return (uint64_t)(int64_t)v; }
__device__ __forceinline__ void c_st(float &o, double a) { o = (float)a; }
__device__ __forceinline__ void c_st(double &o, double a) { o = a; }
__device__ __forceinline__ void c_st(ch16 &o, double a) { o.v = bd_float_to_half((float)a); }
__device__ __forceinline__ void c_st(cb16 &o, double a) { o.v = bd_float_to_bf16((float)a); }
template <class T> __device__ __forceinline__ void c_st(T &o, uint64_t a) { o = (T)a; }

template <class T, class A>
__global__ void k_cum(const T *__restrict__ x, T *__restrict__ o, int64_t outer, int64_t n, int64_t inner,
                      bd_cum_params p)
{
    BD_CU_LOOP(t, outer * inner)
    {
        int64_t b = t / inner, i = t - b * inner;
        const T *xl = x + b * n * inner + i;
        T *ol = o + b * n * inner + i;
        A acc = p.prod ? (A)1 : (A)0;
        for (int64_t s = 0; s < n; s++) {
            int64_t j = bd_cum_pos(s, n, p.reverse) * inner;
            A v = (A)c_ld(xl[j]);
            if (p.exclusive) c_st(ol[j], acc);
            acc = p.prod ? acc * v : acc + v;
            if (!p.exclusive) c_st(ol[j], acc);
        }
    }
}

extern "C" braid_status bd_cuda_cumulative(const bd_cuda_kernel *k)
{
    const bd_cum_params *p = (const bd_cum_params *)k->node->params;
    const bd_tensor *x = &k->in[0];
    int axis;
    if (!p) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "cumulative parameters were not parsed");
    if (k->node->op != BD_OP_CumSum && k->node->op != BD_OP_CumProd)
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the cumulative family", k->node->op_type);
    /* The axis is read from its plan-time host copy. */
    bd_tensor hv[2];
    bd_cu_host_view(k, hv, 2);
    braid_status st = bd_cum_axis(&hv[1], x->rank, &axis, k->err);
    if (st) return st;
    int64_t outer, inner, n = x->dims[axis];
    bd_axis_split(x, axis, &outer, &inner);
    if (outer * n * inner == 0) return BRAID_OK;
    unsigned grid = bd_cu_grid(outer * inner);
    bool ok = true;
    switch (x->dtype) {
    case BRAID_DTYPE_FLOAT: k_cum<float, double><<<grid, BD_CU_BLOCK, 0, k->stream>>>((const float *)x->data, (float *)k->out[0].data, outer, n, inner, *p); break;
    case BRAID_DTYPE_DOUBLE: k_cum<double, double><<<grid, BD_CU_BLOCK, 0, k->stream>>>((const double *)x->data, (double *)k->out[0].data, outer, n, inner, *p); break;
    case BRAID_DTYPE_FLOAT16: k_cum<ch16, double><<<grid, BD_CU_BLOCK, 0, k->stream>>>((const ch16 *)x->data, (ch16 *)k->out[0].data, outer, n, inner, *p); break;
    case BRAID_DTYPE_BFLOAT16: k_cum<cb16, double><<<grid, BD_CU_BLOCK, 0, k->stream>>>((const cb16 *)x->data, (cb16 *)k->out[0].data, outer, n, inner, *p); break;
    case BRAID_DTYPE_INT32: k_cum<int32_t, uint64_t><<<grid, BD_CU_BLOCK, 0, k->stream>>>((const int32_t *)x->data, (int32_t *)k->out[0].data, outer, n, inner, *p); break;
    case BRAID_DTYPE_INT64: k_cum<int64_t, uint64_t><<<grid, BD_CU_BLOCK, 0, k->stream>>>((const int64_t *)x->data, (int64_t *)k->out[0].data, outer, n, inner, *p); break;
    case BRAID_DTYPE_UINT32: k_cum<uint32_t, uint64_t><<<grid, BD_CU_BLOCK, 0, k->stream>>>((const uint32_t *)x->data, (uint32_t *)k->out[0].data, outer, n, inner, *p); break;
    case BRAID_DTYPE_UINT64: k_cum<uint64_t, uint64_t><<<grid, BD_CU_BLOCK, 0, k->stream>>>((const uint64_t *)x->data, (uint64_t *)k->out[0].data, outer, n, inner, *p); break;
    default: ok = false; break;
    }
    if (!ok)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op %s with dtype %s is not implemented on CUDA",
                       k->node->op_type, bd_dtype_name(x->dtype));
    BD_CU_CHECK_LAUNCH(k, "the cumulative kernel");
    return BRAID_OK;
}

extern "C" void bd_cuda_cumulative_free(const bd_node *n, void *cache)
{
    (void)n;
    (void)cache;
}
