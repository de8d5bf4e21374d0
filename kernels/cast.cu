/* cast.cu: CUDA kernels of the cast op family (Cast, CastLike), mirroring
 * src/backend/cpu/ops/cast.c: a templated map per pair of the native types
 * (the floats, the integers, bool) and float16/bfloat16 to and from float32,
 * with the conversions of src/ops/cast.h; every other pair (float8, float4,
 * float6, float8e8m0, the 2- and 4-bit integers, saturate and round_mode)
 * element by element through bd_cast_elem, the CPU's own definition. */
#include <type_traits>

#include "elementwise.cuh"

extern "C" {
#include "ops/cast.h"
}

/* D from S as bd_cast_store converts: float to integer through int64 (or
 * uint64) toward zero, anything to bool as nonzero. */
template <class D, bool TO_BOOL> struct o_cast {
    template <class C> __device__ __forceinline__ D operator()(C v) const
    {
        if constexpr (TO_BOOL) return (D)(v != 0);
        else if constexpr (std::is_integral<D>::value && !std::is_integral<C>::value) {
            if constexpr (std::is_same<D, uint64_t>::value) return (D)bd_cast_f2u((double)v);
            else return (D)bd_cast_f2i((double)v);
        } else {
            return (D)v;
        }
    }
};

/* The 11 native types, bool as uint8_t with its own flag. */
template <class F> static bool native_dispatch(int dt, F &&f)
{
    if (dt == BRAID_DTYPE_BOOL) { f(uint8_t{}, std::true_type{}); return true; }
    return bd_cu_dispatch_num(dt, [&](auto tag) { f(tag, std::false_type{}); });
}

__global__ void k_cast_generic(const void *src, int sd, void *dst, int dd, int64_t n, int saturate, int mode)
{
    BD_CU_LOOP(i, n) bd_cast_elem(sd, src, dd, dst, i, saturate, mode);
}

/* float16/bfloat16 <-> float through bd_ew's loads and stores. */
struct o_id {
    __device__ __forceinline__ float operator()(float v) const { return v; }
};

extern "C" braid_status bd_cuda_cast(const bd_cuda_kernel *k)
{
    const bd_cast_params *p = (const bd_cast_params *)k->node->params;
    int sd = k->in[0].dtype, dd = k->out[0].dtype; /* CastLike: dd is its second input's dtype */
    if (k->node->op != BD_OP_Cast && k->node->op != BD_OP_CastLike)
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the cast family", k->node->op_type);
    int64_t n = bd_numel(&k->in[0]);
    size_t ss = bd_dtype_size(sd);
    if (!ss || !bd_dtype_size(dd) || sd == BRAID_DTYPE_STRING || dd == BRAID_DTYPE_STRING)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op Cast from %s to %s is not implemented on CUDA",
                       bd_dtype_name(sd), bd_dtype_name(dd));
    if (n <= 0) return BRAID_OK;
    if (sd == dd) {
        BD_CU_CHECK_CALL(k, cudaMemcpyAsync(k->out[0].data, k->in[0].data, (size_t)n * ss, cudaMemcpyDefault,
                                            k->stream));
        return BRAID_OK;
    }
    braid_status st = BRAID_OK;
    bool done = false;
    /* native -> native */
    native_dispatch(sd, [&](auto stag, auto) {
        typedef decltype(stag) S;
        native_dispatch(dd, [&](auto dtag, auto to_bool) {
            typedef decltype(dtag) D;
            st = bd_ew_map<S, D>(k, o_cast<D, decltype(to_bool)::value>(), "the Cast kernel");
            done = true;
        });
    });
    if (done) return st;
    /* float16/bfloat16 <-> float */
    if (dd == BRAID_DTYPE_FLOAT && sd == BRAID_DTYPE_FLOAT16) return bd_ew_map<bd_f16, float>(k, o_id(), "the Cast kernel");
    if (dd == BRAID_DTYPE_FLOAT && sd == BRAID_DTYPE_BFLOAT16) return bd_ew_map<bd_bf16, float>(k, o_id(), "the Cast kernel");
    if (sd == BRAID_DTYPE_FLOAT && dd == BRAID_DTYPE_FLOAT16) return bd_ew_map<float, bd_f16>(k, o_id(), "the Cast kernel");
    if (sd == BRAID_DTYPE_FLOAT && dd == BRAID_DTYPE_BFLOAT16) return bd_ew_map<float, bd_bf16>(k, o_id(), "the Cast kernel");
    k_cast_generic<<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>(k->in[0].data, sd, k->out[0].data, dd, n,
                                                                p ? p->saturate : 1, p ? p->round_mode : BD_ROUND_UP);
    BD_CU_CHECK_LAUNCH(k, "the Cast kernel");
    return BRAID_OK;
}

extern "C" void bd_cuda_cast_free(const bd_node *n, void *cache)
{
    (void)n;
    (void)cache;
}
