/* elementwise.cuh: what the CUDA kernels of the elementwise families (unary,
 * activation, binary, cast) share, mirroring src/backend/cpu/ops/
 * elementwise.h: storage types for float16, bfloat16 and the float8 kinds,
 * loaded to float and rounded back once per element with util/dtype.h's
 * conversions (the CPU's); dtype dispatch over them; a flat map kernel and a
 * broadcast kernel of two inputs. */
#ifndef BD_KERNELS_ELEMENTWISE_CUH
#define BD_KERNELS_ELEMENTWISE_CUH

#include <stdint.h>

#include <type_traits>

#include "common.cuh"

extern "C" {
#include "util/dtype.h"
}

/* Storage types of the narrow floats: their bits, computed in float. */
struct bd_f16 { uint16_t v; };
struct bd_bf16 { uint16_t v; };
template <int DT> struct bd_f8 { uint8_t v; };

/* bd_ew<S>: the compute type C of storage type S, ld (S -> C), st (C -> S). */
template <class S> struct bd_ew {
    typedef S C;
    static __device__ __forceinline__ C ld(S s) { return s; }
    static __device__ __forceinline__ S st(C c) { return c; }
};
template <> struct bd_ew<bd_f16> {
    typedef float C;
    static __device__ __forceinline__ float ld(bd_f16 s) { return bd_half_to_float_hd(s.v); }
    static __device__ __forceinline__ bd_f16 st(float c) { return bd_f16{bd_float_to_half(c)}; }
};
template <> struct bd_ew<bd_bf16> {
    typedef float C;
    static __device__ __forceinline__ float ld(bd_bf16 s) { return bd_bf16_to_float(s.v); }
    static __device__ __forceinline__ bd_bf16 st(float c) { return bd_bf16{bd_float_to_bf16(c)}; }
};
template <int DT> struct bd_ew<bd_f8<DT>> {
    typedef float C;
    static __device__ __forceinline__ float ld(bd_f8<DT> s) { return bd_narrow_to_float(DT, &s.v, 0); }
    static __device__ __forceinline__ bd_f8<DT> st(float c)
    {
        bd_f8<DT> r;
        bd_float_to_narrow(DT, &r.v, 0, c);
        return r;
    }
};

/* Calls f(T{}) with T the storage type of dt; false when dt is not listed.
 * FLOAT: float, double, float16, bfloat16; NUM: and every integer. */
template <class F> static inline bool bd_ew_dispatch_float(int dt, F &&f)
{
    switch (dt) {
    case BRAID_DTYPE_FLOAT: f(float{}); return true;
    case BRAID_DTYPE_DOUBLE: f(double{}); return true;
    case BRAID_DTYPE_FLOAT16: f(bd_f16{}); return true;
    case BRAID_DTYPE_BFLOAT16: f(bd_bf16{}); return true;
    default: return false;
    }
}
template <class F> static inline bool bd_ew_dispatch_int(int dt, F &&f)
{
    return bd_cu_dispatch_sint(dt, f) || bd_cu_dispatch_uint(dt, f);
}
template <class F> static inline bool bd_ew_dispatch_num(int dt, F &&f)
{
    return bd_ew_dispatch_float(dt, f) || bd_ew_dispatch_int(dt, f);
}
template <class F> static inline bool bd_ew_dispatch_float8(int dt, F &&f)
{
    switch (dt) {
    case BRAID_DTYPE_FLOAT8E4M3FN: f(bd_f8<BRAID_DTYPE_FLOAT8E4M3FN>{}); return true;
    case BRAID_DTYPE_FLOAT8E4M3FNUZ: f(bd_f8<BRAID_DTYPE_FLOAT8E4M3FNUZ>{}); return true;
    case BRAID_DTYPE_FLOAT8E5M2: f(bd_f8<BRAID_DTYPE_FLOAT8E5M2>{}); return true;
    case BRAID_DTYPE_FLOAT8E5M2FNUZ: f(bd_f8<BRAID_DTYPE_FLOAT8E5M2FNUZ>{}); return true;
    default: return false;
    }
}

/* o[i] = st(op(ld(x[i]))): the op takes the compute type of S and returns
 * one that D's st takes. */
template <class S, class D, class Op>
__global__ void bd_ew_map_kernel(const S *__restrict__ x, D *__restrict__ o, int64_t n, Op op)
{
    BD_CU_LOOP(i, n) o[i] = bd_ew<D>::st(op(bd_ew<S>::ld(x[i])));
}

template <class S, class D, class Op>
static inline braid_status bd_ew_map(const bd_cuda_kernel *k, Op op, const char *what)
{
    int64_t n = bd_numel(&k->out[0]);
    if (n <= 0) return BRAID_OK;
    bd_ew_map_kernel<S, D, Op><<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>((const S *)k->in[0].data,
                                                                           (D *)k->out[0].data, n, op);
    BD_CU_CHECK_LAUNCH(k, what);
    return BRAID_OK;
}

/* o[i] = st(op(ld(a[...]), ld(b[...]))) under broadcasting in g. No
 * __restrict__: a variadic op folds its inputs into o, so a may be o. */
template <class TA, class TB, class TO, class Op>
__global__ void bd_ew_bcast_kernel(const TA *a, const TB *b, TO *o, int64_t n, bd_cu_nd g, Op op)
{
    BD_CU_LOOP(i, n)
    {
        int64_t off[2];
        bd_cu_offsets<2>(g, i, off);
        o[i] = bd_ew<TO>::st(op(bd_ew<TA>::ld(a[off[0]]), bd_ew<TB>::ld(b[off[1]])));
    }
}

/* After merging, one dim: each input is walked with stride 0 or 1. */
template <class TA, class TB, class TO, class Op>
__global__ void bd_ew_flat2_kernel(const TA *a, int64_t sa, const TB *b, int64_t sb, TO *o, int64_t n, Op op)
{
    BD_CU_LOOP(i, n) o[i] = bd_ew<TO>::st(op(bd_ew<TA>::ld(a[i * sa]), bd_ew<TB>::ld(b[i * sb])));
}

/* out = op(a, b), a and b broadcast into out's shape. */
template <class TA, class TB, class TO, class Op>
static inline braid_status bd_ew_bcast(const bd_cuda_kernel *k, const bd_tensor *a, const bd_tensor *b,
                                       const bd_tensor *out, Op op)
{
    int64_t n = bd_numel(out);
    if (n <= 0) return BRAID_OK;
    int64_t st[BD_CU_MAX_IN][BD_MAX_RANK];
    bd_cu_bcast_strides(a, out->rank, out->dims, st[0]);
    bd_cu_bcast_strides(b, out->rank, out->dims, st[1]);
    bd_cu_nd g;
    bd_cu_nd_make(&g, out->rank, out->dims, 2, st);
    if (g.rank == 1)
        bd_ew_flat2_kernel<TA, TB, TO, Op><<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>(
            (const TA *)a->data, g.st[0][0], (const TB *)b->data, g.st[1][0], (TO *)out->data, n, op);
    else
        bd_ew_bcast_kernel<TA, TB, TO, Op><<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>(
            (const TA *)a->data, (const TB *)b->data, (TO *)out->data, n, g, op);
    BD_CU_CHECK_LAUNCH(k, "an elementwise kernel");
    return BRAID_OK;
}

#endif /* BD_KERNELS_ELEMENTWISE_CUH */
