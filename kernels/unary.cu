/* unary.cu: CUDA kernels of the unary op family (elementwise math, IsNaN,
 * IsInf, Not, BitwiseNot, Clip), mirroring src/backend/cpu/ops/unary.c: one
 * flat grid-stride map per op and dtype over the formulas of src/ops/unary.h;
 * float16 and bfloat16 (and float8 for IsNaN/IsInf) computed in float. */
#include <math.h>

#include <limits>
#include <type_traits>

#include "elementwise.cuh"

extern "C" {
#include "ops/unary.h"
}

/* ---- the shared formulas as float/double overloads --------------------------- */

#define OVL(name)                                                                                  \
    __device__ __forceinline__ float u_##name(float x) { return bd_un_##name##_f(x); }             \
    __device__ __forceinline__ double u_##name(double x) { return bd_un_##name##_d(x); }
OVL(exp) OVL(log) OVL(tanh) OVL(erf) OVL(round) OVL(sign)
#undef OVL

/* CUDA's libm overloads take float and double alike. */
#define LIBM(name)                                                                                 \
    __device__ __forceinline__ float u_##name(float x) { return name##f(x); }                      \
    __device__ __forceinline__ double u_##name(double x) { return name(x); }
LIBM(sqrt) LIBM(floor) LIBM(ceil) LIBM(fabs) LIBM(sin) LIBM(cos) LIBM(tan) LIBM(asin) LIBM(acos) LIBM(atan)
LIBM(sinh) LIBM(cosh) LIBM(asinh) LIBM(acosh) LIBM(atanh)
#undef LIBM

/* ---- element operations: C f(C v) over the compute type ------------------------ */

#define UN_OP(NAME, EXPR)                                                                          \
    struct NAME {                                                                                  \
        template <class C> __device__ __forceinline__ C operator()(C v) const { return EXPR; }     \
    };
/* floats only */
UN_OP(o_recip, (C)1 / v)
UN_OP(o_floor, u_floor(v))
UN_OP(o_ceil, u_ceil(v))
UN_OP(o_round, u_round(v))
UN_OP(o_exp, u_exp(v))
UN_OP(o_log, u_log(v))
UN_OP(o_sqrt, u_sqrt(v))
UN_OP(o_tanh, u_tanh(v))
UN_OP(o_sin, u_sin(v))
UN_OP(o_cos, u_cos(v))
UN_OP(o_tan, u_tan(v))
UN_OP(o_asin, u_asin(v))
UN_OP(o_acos, u_acos(v))
UN_OP(o_atan, u_atan(v))
UN_OP(o_sinh, u_sinh(v))
UN_OP(o_cosh, u_cosh(v))
UN_OP(o_asinh, u_asinh(v))
UN_OP(o_acosh, u_acosh(v))
UN_OP(o_atanh, u_atanh(v))
UN_OP(o_bnot, (C)~v)
#undef UN_OP

/* every numeric type: integers wrap at the most negative value, as the CPU */
struct o_abs {
    template <class C> __device__ __forceinline__ C operator()(C v) const
    {
        if constexpr (std::is_unsigned<C>::value) return v;
        else if constexpr (std::is_integral<C>::value) return v < 0 ? (C)(0 - (uint64_t)v) : v;
        else return u_fabs(v);
    }
};
struct o_neg {
    template <class C> __device__ __forceinline__ C operator()(C v) const
    {
        if constexpr (std::is_integral<C>::value) return (C)(0 - (uint64_t)v);
        else return -v;
    }
};
struct o_sign {
    template <class C> __device__ __forceinline__ C operator()(C v) const
    {
        if constexpr (std::is_unsigned<C>::value) return (C)(v > 0);
        else if constexpr (std::is_integral<C>::value) return (C)((v > 0) - (v < 0));
        else return u_sign(v);
    }
};
/* integers: erf in double rounded to float, truncated (as onnx's reference) */
struct o_erf {
    template <class C> __device__ __forceinline__ C operator()(C v) const
    {
        if constexpr (std::is_integral<C>::value) return (C)(float)erf((double)v);
        else return u_erf(v);
    }
};
struct o_isnan {
    template <class C> __device__ __forceinline__ uint8_t operator()(C v) const { return v != v; }
};
struct o_isinf {
    int neg, pos;
    __device__ __forceinline__ uint8_t operator()(float v) const { return bd_un_isinf_f(v, neg, pos); }
    __device__ __forceinline__ uint8_t operator()(double v) const { return bd_un_isinf_d(v, neg, pos); }
};
struct o_not {
    __device__ __forceinline__ uint8_t operator()(uint8_t v) const { return v == 0; }
};

/* Clip: bounds read on the device (NULL: the defaults given by value), in
 * X's storage type; min(max(v, lo), hi), NaN stays, lo > hi gives hi. */
template <class S>
__global__ void k_clip(const S *__restrict__ x, S *__restrict__ o, int64_t n, const S *plo, const S *phi,
                       typename bd_ew<S>::C dlo, typename bd_ew<S>::C dhi)
{
    typedef typename bd_ew<S>::C C;
    C lo = plo ? bd_ew<S>::ld(*plo) : dlo, hi = phi ? bd_ew<S>::ld(*phi) : dhi;
    BD_CU_LOOP(i, n)
    {
        C v = bd_ew<S>::ld(x[i]);
        v = v < lo ? lo : v;
        o[i] = bd_ew<S>::st(v > hi ? hi : v);
    }
}

static braid_status run_clip(const bd_cuda_kernel *k, const bd_unary_params *p)
{
    int dt = k->in[0].dtype;
    int64_t n = bd_numel(&k->in[0]);
    const void *plo = NULL, *phi = NULL;
    if (k->node->opset >= 11) {
        if (k->n_in > 1 && k->in[1].dtype != BRAID_DTYPE_UNDEFINED) plo = k->in[1].data;
        if (k->n_in > 2 && k->in[2].dtype != BRAID_DTYPE_UNDEFINED) phi = k->in[2].data;
    }
    bool ok = bd_ew_dispatch_num(dt, [&](auto tag) {
        typedef decltype(tag) S;
        typedef typename bd_ew<S>::C C;
        C dlo, dhi;
        if constexpr (std::is_integral<C>::value) {
            dlo = std::numeric_limits<C>::lowest();
            dhi = std::numeric_limits<C>::max();
        } else { /* before opset 11 the attributes (floats only then) */
            dlo = k->node->opset < 11 ? (C)(p ? p->min : -INFINITY) : (C)-INFINITY;
            dhi = k->node->opset < 11 ? (C)(p ? p->max : INFINITY) : (C)INFINITY;
        }
        if (n > 0)
            k_clip<S><<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>((const S *)k->in[0].data, (S *)k->out[0].data, n,
                                                                  (const S *)plo, (const S *)phi, dlo, dhi);
    });
    if (!ok)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op Clip with dtype %s is not implemented on CUDA",
                       bd_dtype_name(dt));
    BD_CU_CHECK_LAUNCH(k, "the Clip kernel");
    return BRAID_OK;
}

/* ---- launchers ----------------------------------------------------------- */

/* Same-typed maps over the float kinds, or every numeric type, or the
 * floats and the signed integers. */
template <class Op> static bool map_float(const bd_cuda_kernel *k, Op op, braid_status *st)
{
    return bd_ew_dispatch_float(k->in[0].dtype, [&](auto tag) {
        typedef decltype(tag) S;
        *st = bd_ew_map<S, S>(k, op, "a unary kernel");
    });
}
template <class Op> static bool map_num(const bd_cuda_kernel *k, Op op, braid_status *st)
{
    return bd_ew_dispatch_num(k->in[0].dtype, [&](auto tag) {
        typedef decltype(tag) S;
        *st = bd_ew_map<S, S>(k, op, "a unary kernel");
    });
}
template <class Op> static bool map_int(const bd_cuda_kernel *k, Op op, braid_status *st)
{
    return bd_ew_dispatch_int(k->in[0].dtype, [&](auto tag) {
        typedef decltype(tag) S;
        *st = bd_ew_map<S, S>(k, op, "a unary kernel");
    });
}
/* IsNaN, IsInf: bool out of the float kinds and the float8s. */
template <class Op> static bool map_test(const bd_cuda_kernel *k, Op op, braid_status *st)
{
    auto f = [&](auto tag) {
        typedef decltype(tag) S;
        *st = bd_ew_map<S, bd_bool_t>(k, op, "a unary kernel");
    };
    return bd_ew_dispatch_float(k->in[0].dtype, f) || bd_ew_dispatch_float8(k->in[0].dtype, f);
}

extern "C" braid_status bd_cuda_unary(const bd_cuda_kernel *k)
{
    const bd_node *n = k->node;
    const bd_unary_params *p = (const bd_unary_params *)n->params;
    int dt = k->in[0].dtype;
    braid_status st = BRAID_OK;
    bool ok = false;
    switch (n->op) {
    case BD_OP_Clip: return run_clip(k, p);
    case BD_OP_Abs: ok = map_num(k, o_abs(), &st); break;
    case BD_OP_Sign: ok = map_num(k, o_sign(), &st); break;
    case BD_OP_Erf: ok = map_num(k, o_erf(), &st); break;
    case BD_OP_Neg: ok = map_float(k, o_neg(), &st) || bd_cu_dispatch_sint(dt, [&](auto tag) {
                             typedef decltype(tag) S;
                             st = bd_ew_map<S, S>(k, o_neg(), "a unary kernel");
                         });
        break;
    case BD_OP_Reciprocal: ok = map_float(k, o_recip(), &st); break;
    case BD_OP_Floor: ok = map_float(k, o_floor(), &st); break;
    case BD_OP_Ceil: ok = map_float(k, o_ceil(), &st); break;
    case BD_OP_Round: ok = map_float(k, o_round(), &st); break;
    case BD_OP_Exp: ok = map_float(k, o_exp(), &st); break;
    case BD_OP_Log: ok = map_float(k, o_log(), &st); break;
    case BD_OP_Sqrt: ok = map_float(k, o_sqrt(), &st); break;
    case BD_OP_Tanh: ok = map_float(k, o_tanh(), &st); break;
    case BD_OP_Sin: ok = map_float(k, o_sin(), &st); break;
    case BD_OP_Cos: ok = map_float(k, o_cos(), &st); break;
    case BD_OP_Tan: ok = map_float(k, o_tan(), &st); break;
    case BD_OP_Asin: ok = map_float(k, o_asin(), &st); break;
    case BD_OP_Acos: ok = map_float(k, o_acos(), &st); break;
    case BD_OP_Atan: ok = map_float(k, o_atan(), &st); break;
    case BD_OP_Sinh: ok = map_float(k, o_sinh(), &st); break;
    case BD_OP_Cosh: ok = map_float(k, o_cosh(), &st); break;
    case BD_OP_Asinh: ok = map_float(k, o_asinh(), &st); break;
    case BD_OP_Acosh: ok = map_float(k, o_acosh(), &st); break;
    case BD_OP_Atanh: ok = map_float(k, o_atanh(), &st); break;
    case BD_OP_IsNaN: ok = map_test(k, o_isnan(), &st); break;
    case BD_OP_IsInf: ok = map_test(k, o_isinf{p ? p->detect_neg : 1, p ? p->detect_pos : 1}, &st); break;
    case BD_OP_BitwiseNot: ok = map_int(k, o_bnot(), &st); break;
    case BD_OP_Not:
        if (dt == BRAID_DTYPE_BOOL) ok = true, st = bd_ew_map<bd_bool_t, bd_bool_t>(k, o_not(), "the Not kernel");
        break;
    default: return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the unary family", n->op_type);
    }
    if (!ok)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op %s with dtype %s is not implemented on CUDA", n->op_type,
                       bd_dtype_name(dt));
    return st;
}

extern "C" void bd_cuda_unary_free(const bd_node *n, void *cache)
{
    (void)n;
    (void)cache;
}
