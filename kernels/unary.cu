/* unary.cu: CUDA kernels of the unary op family (activations, elementwise
 * math, Clip, Not, Cast), mirroring src/backend/cpu/ops/unary.c: one flat
 * grid-stride loop per op and dtype. */
#include <cuda_fp16.h>
#include <float.h>
#include <math.h>

#include <limits>
#include <type_traits>

#include "common.cuh"

extern "C" {
#include "ops/unary.h"
}

/* ---- math by type -------------------------------------------------------- */

__device__ __forceinline__ float m_exp(float v) { return expf(v); }
__device__ __forceinline__ double m_exp(double v) { return exp(v); }
__device__ __forceinline__ float m_log(float v) { return logf(v); }
__device__ __forceinline__ double m_log(double v) { return log(v); }
__device__ __forceinline__ float m_sqrt(float v) { return sqrtf(v); }
__device__ __forceinline__ double m_sqrt(double v) { return sqrt(v); }
__device__ __forceinline__ float m_tanh(float v) { return tanhf(v); }
__device__ __forceinline__ double m_tanh(double v) { return tanh(v); }
__device__ __forceinline__ float m_erf(float v) { return erff(v); }
__device__ __forceinline__ double m_erf(double v) { return erf(v); }
__device__ __forceinline__ float m_floor(float v) { return floorf(v); }
__device__ __forceinline__ double m_floor(double v) { return floor(v); }
__device__ __forceinline__ float m_ceil(float v) { return ceilf(v); }
__device__ __forceinline__ double m_ceil(double v) { return ceil(v); }
__device__ __forceinline__ float m_fabs(float v) { return fabsf(v); }
__device__ __forceinline__ double m_fabs(double v) { return fabs(v); }
/* a * b + c rounded twice, never fused into an fma: the CPU's x86 build
 * rounds the product and the sum separately. */
__device__ __forceinline__ float m_muladd(float a, float b, float c) { return __fadd_rn(__fmul_rn(a, b), c); }
__device__ __forceinline__ double m_muladd(double a, double b, double c) { return __dadd_rn(__dmul_rn(a, b), c); }

/* ---- element operations: T f(T v) with alpha/beta from the params -------- */

struct un_args {
    float alpha, beta;
};

#define UN_OP(NAME, EXPR)                                                                          \
    struct NAME {                                                                                  \
        template <class T> __device__ __forceinline__ T operator()(T v, const un_args &c) const    \
        {                                                                                          \
            (void)c;                                                                               \
            return (T)(EXPR);                                                                      \
        }                                                                                          \
    };
/* Integer Neg and Abs wrap at the most negative value, as the CPU does. */
UN_OP(u_relu, v > 0 ? v : (T)0)
UN_OP(u_neg, std::is_integral<T>::value ? (T)(0 - (uint64_t)v) : -v)
UN_OP(u_abs, std::is_integral<T>::value ? (v < 0 ? (T)(0 - (uint64_t)v) : v) : (T)m_fabs((double)v))
UN_OP(u_lrelu, v >= 0 ? v : v * (T)c.alpha)
UN_OP(u_sigmoid, (T)1 / ((T)1 + m_exp(-v)))
/* Clamp to [0, 1] with selects, as the CPU's UNIT does: a NaN stays NaN
 * (fmax/fmin would turn it into 0 or 1). */
template <class T> __device__ __forceinline__ T unit_clamp(T y) { return y < (T)0 ? (T)0 : y > (T)1 ? (T)1 : y; }
UN_OP(u_hsig, unit_clamp(m_muladd((T)c.alpha, v, (T)c.beta)))
UN_OP(u_hswish, v * unit_clamp(m_muladd(v, (T)(1.0 / 6.0), (T)0.5)))
UN_OP(u_tanh, m_tanh(v))
UN_OP(u_exp, m_exp(v))
UN_OP(u_log, m_log(v))
UN_OP(u_sqrt, m_sqrt(v))
UN_OP(u_erf, m_erf(v))
UN_OP(u_recip, (T)1 / v)
UN_OP(u_floor, m_floor(v))
UN_OP(u_ceil, m_ceil(v))
#undef UN_OP

template <class T, class Op>
__global__ void k_unary(const T *__restrict__ x, T *__restrict__ o, int64_t n, un_args c, Op op)
{
    BD_CU_LOOP(i, n) o[i] = op(x[i], c);
}

__global__ void k_not(const bd_bool_t *__restrict__ x, bd_bool_t *__restrict__ o, int64_t n)
{
    BD_CU_LOOP(i, n) o[i] = x[i] == 0;
}

/* min(max(v, lo), hi) with the bounds read on the device (NULL: the limits
 * given by value); when lo > hi every element becomes hi, as ONNX says. */
template <class T>
__global__ void k_clip(const T *__restrict__ x, T *__restrict__ o, int64_t n, const T *plo,
                       const T *phi, T dlo, T dhi)
{
    T lo = plo ? *plo : dlo, hi = phi ? *phi : dhi;
    BD_CU_LOOP(i, n)
    {
        T v = x[i] < lo ? lo : x[i];
        o[i] = v > hi ? hi : v;
    }
}

/* Cast: C conversions (floats truncate toward zero); bool is v != 0; float16
 * goes through float, as on the CPU. */
template <class D, bool TO_BOOL, class S> __device__ __forceinline__ D cast_one(S v)
{
    return TO_BOOL ? (D)(v != 0) : (D)v;
}
template <class S, class D, bool TO_BOOL>
__global__ void k_cast(const S *__restrict__ x, D *__restrict__ o, int64_t n)
{
    BD_CU_LOOP(i, n) o[i] = cast_one<D, TO_BOOL>(x[i]);
}
template <class D, bool TO_BOOL>
__global__ void k_cast_from_half(const __half *__restrict__ x, D *__restrict__ o, int64_t n)
{
    BD_CU_LOOP(i, n) o[i] = cast_one<D, TO_BOOL>(__half2float(x[i]));
}
template <class S>
__global__ void k_cast_to_half(const S *__restrict__ x, __half *__restrict__ o, int64_t n)
{
    BD_CU_LOOP(i, n) o[i] = __float2half_rn(cast_one<float, false>(x[i]));
}

/* ---- launchers ----------------------------------------------------------- */

/* Calls f(T{}, is_bool) for the 11 types Cast converts between. */
template <class F> static bool cast_dispatch(int dt, F &&f)
{
    if (dt == BRAID_DTYPE_BOOL) { f(uint8_t{}, std::true_type{}); return true; }
    return bd_cu_dispatch_num(dt, [&](auto tag) { f(tag, std::false_type{}); });
}

static braid_status run_cast(const bd_cuda_kernel *k)
{
    int sd = k->in[0].dtype, dd = k->out[0].dtype;
    int64_t n = bd_numel(&k->in[0]);
    size_t ss = bd_dtype_size(sd);
    if (!ss || !bd_dtype_size(dd))
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op Cast from %s to %s is not implemented on CUDA",
                       bd_dtype_name(sd), bd_dtype_name(dd));
    if (n <= 0) return BRAID_OK;
    if (sd == dd) {
        BD_CU_CHECK_CALL(k, cudaMemcpyAsync(k->out[0].data, k->in[0].data, (size_t)n * ss,
                                            cudaMemcpyDeviceToDevice, k->stream));
        return BRAID_OK;
    }
    unsigned grid = bd_cu_grid(n);
    bool ok = false;
    if (sd == BRAID_DTYPE_FLOAT16) {
        ok = cast_dispatch(dd, [&](auto dt, auto is_bool) {
            typedef decltype(dt) D;
            k_cast_from_half<D, decltype(is_bool)::value><<<grid, BD_CU_BLOCK, 0, k->stream>>>(
                (const __half *)k->in[0].data, (D *)k->out[0].data, n);
        });
    } else if (dd == BRAID_DTYPE_FLOAT16) {
        ok = cast_dispatch(sd, [&](auto stt, auto is_bool) {
            typedef decltype(stt) S;
            (void)is_bool;
            k_cast_to_half<S><<<grid, BD_CU_BLOCK, 0, k->stream>>>((const S *)k->in[0].data,
                                                                   (__half *)k->out[0].data, n);
        });
    } else {
        bool inner = false;
        bool outer = cast_dispatch(sd, [&](auto stt, auto) {
            typedef decltype(stt) S;
            inner = cast_dispatch(dd, [&](auto dt, auto is_bool) {
                typedef decltype(dt) D;
                k_cast<S, D, decltype(is_bool)::value><<<grid, BD_CU_BLOCK, 0, k->stream>>>(
                    (const S *)k->in[0].data, (D *)k->out[0].data, n);
            });
        });
        ok = outer && inner;
    }
    if (!ok)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op Cast from %s to %s is not implemented on CUDA",
                       bd_dtype_name(sd), bd_dtype_name(dd));
    BD_CU_CHECK_LAUNCH(k, "the Cast kernel");
    return BRAID_OK;
}

/* The lowest and highest values of T (floats: infinities). */
template <class T> static T lowest_of()
{
    if constexpr (std::is_integral<T>::value) return std::numeric_limits<T>::lowest();
    else return (T)-INFINITY;
}
template <class T> static T highest_of()
{
    if constexpr (std::is_integral<T>::value) return std::numeric_limits<T>::max();
    else return (T)INFINITY;
}

static braid_status run_clip(const bd_cuda_kernel *k, const bd_unary_params *p)
{
    int dt = k->in[0].dtype;
    int64_t n = bd_numel(&k->in[0]);
    if (n <= 0) return BRAID_OK;
    const void *plo = NULL, *phi = NULL;
    if (k->node->opset >= 11) {
        if (k->n_in > 1 && k->in[1].dtype != BRAID_DTYPE_UNDEFINED) plo = k->in[1].data;
        if (k->n_in > 2 && k->in[2].dtype != BRAID_DTYPE_UNDEFINED) phi = k->in[2].data;
    }
    bool ok = bd_cu_dispatch_num(dt, [&](auto tag) {
        typedef decltype(tag) T;
        T dlo = lowest_of<T>(), dhi = highest_of<T>();
        if constexpr (!std::is_integral<T>::value) {
            if (k->node->opset < 11) { /* the attributes, converted as the CPU's bd_set_f64 does */
                dlo = (T)(p ? p->min : -INFINITY);
                dhi = (T)(p ? p->max : INFINITY);
            }
        } else if (k->node->opset < 11) {
            /* Clip before opset 11 takes floats only; integers keep their limits
             * unless the attributes fit. */
            double lo = p ? p->min : -INFINITY, hi = p ? p->max : INFINITY;
            if (lo >= (double)dlo && lo <= (double)dhi) dlo = (T)lo;
            if (hi >= (double)dlo && hi <= (double)dhi) dhi = (T)hi;
        }
        k_clip<T><<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>(
            (const T *)k->in[0].data, (T *)k->out[0].data, n, (const T *)plo, (const T *)phi, dlo,
            dhi);
    });
    if (!ok)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op Clip with dtype %s is not implemented on CUDA",
                       bd_dtype_name(dt));
    BD_CU_CHECK_LAUNCH(k, "the Clip kernel");
    return BRAID_OK;
}

template <class Op> static bool launch_float(const bd_cuda_kernel *k, un_args c, Op op)
{
    int64_t n = bd_numel(&k->in[0]);
    return bd_cu_dispatch_float(k->in[0].dtype, [&](auto tag) {
        typedef decltype(tag) T;
        if (n > 0)
            k_unary<T, Op><<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>(
                (const T *)k->in[0].data, (T *)k->out[0].data, n, c, op);
    });
}

template <class Op> static bool launch_signed(const bd_cuda_kernel *k, un_args c, Op op)
{
    int64_t n = bd_numel(&k->in[0]);
    auto f = [&](auto tag) {
        typedef decltype(tag) T;
        if (n > 0)
            k_unary<T, Op><<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>(
                (const T *)k->in[0].data, (T *)k->out[0].data, n, c, op);
    };
    return bd_cu_dispatch_float(k->in[0].dtype, f) || bd_cu_dispatch_sint(k->in[0].dtype, f);
}

extern "C" braid_status bd_cuda_unary(const bd_cuda_kernel *k)
{
    const bd_node *n = k->node;
    const bd_unary_params *p = (const bd_unary_params *)n->params;
    int dt = k->in[0].dtype;
    un_args c = {p ? p->alpha : 0.0f, p ? p->beta : 0.0f};
    bool ok = false;
    switch (n->op) {
    case BD_OP_Cast: return run_cast(k);
    case BD_OP_Clip: return run_clip(k, p);
    case BD_OP_Relu: ok = launch_signed(k, c, u_relu()); break;
    case BD_OP_Neg: ok = launch_signed(k, c, u_neg()); break;
    case BD_OP_Abs: ok = launch_signed(k, c, u_abs()); break;
    case BD_OP_LeakyRelu: ok = launch_float(k, c, u_lrelu()); break;
    case BD_OP_Sigmoid: ok = launch_float(k, c, u_sigmoid()); break;
    case BD_OP_HardSigmoid: ok = launch_float(k, c, u_hsig()); break;
    case BD_OP_HardSwish: ok = launch_float(k, c, u_hswish()); break;
    case BD_OP_Tanh: ok = launch_float(k, c, u_tanh()); break;
    case BD_OP_Exp: ok = launch_float(k, c, u_exp()); break;
    case BD_OP_Log: ok = launch_float(k, c, u_log()); break;
    case BD_OP_Sqrt: ok = launch_float(k, c, u_sqrt()); break;
    case BD_OP_Erf: ok = launch_float(k, c, u_erf()); break;
    case BD_OP_Reciprocal: ok = launch_float(k, c, u_recip()); break;
    case BD_OP_Floor: ok = launch_float(k, c, u_floor()); break;
    case BD_OP_Ceil: ok = launch_float(k, c, u_ceil()); break;
    case BD_OP_Not:
        if (dt == BRAID_DTYPE_BOOL) {
            int64_t cnt = bd_numel(&k->in[0]);
            ok = true;
            if (cnt > 0)
                k_not<<<bd_cu_grid(cnt), BD_CU_BLOCK, 0, k->stream>>>(
                    (const bd_bool_t *)k->in[0].data, (bd_bool_t *)k->out[0].data, cnt);
        }
        break;
    default:
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the unary family", n->op_type);
    }
    if (!ok)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op %s with dtype %s is not implemented on CUDA",
                       n->op_type, bd_dtype_name(dt));
    BD_CU_CHECK_LAUNCH(k, "a unary kernel");
    return BRAID_OK;
}

extern "C" void bd_cuda_unary_free(const bd_node *n, void *cache)
{
    (void)n;
    (void)cache;
}
