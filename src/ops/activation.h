/* activation.h: the parsed attributes of the activation op family
 * (n->params) and its element formulas, host/device, shared by the CPU and
 * CUDA kernels. Each formula is written once (BD_ACT_FORMULAS) and defined
 * for float (_f: float32, and float16/bfloat16 computed in float, with the
 * vectorizable math of src/ops/vmath.h) and for double (_d: libm). The
 * formulas avoid cancellation: expm1 for Elu/Selu/Celu, Softplus as
 * max(x, 0) + log1p(exp(-|x|)), GELU's (1 + erf(z)) / 2 as the normal CDF
 * in its tail form (vmath.h) and 1 + tanh(y) as 2 sigmoid(2y), so the
 * negative tails keep their digits. */
#ifndef BD_ACTIVATION_H
#define BD_ACTIVATION_H

#include <math.h>
#include <stdint.h>

#include "ops/vmath.h"

typedef struct bd_activation_params {
    float alpha;    /* LeakyRelu, HardSigmoid, Elu, Selu, Celu, ThresholdedRelu, Swish, SwiGLU, QuickGelu */
    float beta;     /* HardSigmoid */
    float gamma;    /* Selu */
    float lambd;    /* Shrink */
    float bias;     /* Shrink */
    int approx;     /* Gelu: approximate="tanh" */
} bd_activation_params;

/* The math the formulas call, per suffix. */
static inline BD_HOST_DEVICE float bd_act_exp_f(float x) { return bd_vexpf(x); }
static inline BD_HOST_DEVICE float bd_act_expm1_f(float x) { return bd_vexpm1f(x); }
static inline BD_HOST_DEVICE float bd_act_log1p_f(float x) { return bd_vlog1pf(x); }
static inline BD_HOST_DEVICE float bd_act_tanh_f(float x) { return bd_vtanhf(x); }
static inline BD_HOST_DEVICE float bd_act_phi_f(float x) { return bd_vnormcdff(x); }
static inline BD_HOST_DEVICE double bd_act_exp_d(double x) { return exp(x); }
static inline BD_HOST_DEVICE double bd_act_expm1_d(double x) { return expm1(x); }
static inline BD_HOST_DEVICE double bd_act_log1p_d(double x) { return log1p(x); }
static inline BD_HOST_DEVICE double bd_act_tanh_d(double x) { return tanh(x); }
static inline BD_HOST_DEVICE double bd_act_phi_d(double x) { return 0.5 * erfc(x * -0.70710678118654752440); }

/* The formulas over T with math suffix S. Selects, not fmax/fmin, so that a
 * NaN input gives NaN (as numpy's maximum does) and loops vectorize. */
#define BD_ACT_FORMULAS(T, S)                                                                      \
    static inline BD_HOST_DEVICE T bd_act_relu_##S(T x) { return x < 0 ? (T)0 : x; }               \
    static inline BD_HOST_DEVICE T bd_act_leaky_##S(T x, T a) { return x >= 0 ? x : a * x; }       \
    static inline BD_HOST_DEVICE T bd_act_sigmoid_##S(T x) { return (T)1 / ((T)1 + bd_act_exp_##S(-x)); } \
    static inline BD_HOST_DEVICE T bd_act_unit_##S(T y) { return y < 0 ? (T)0 : y > 1 ? (T)1 : y; } \
    static inline BD_HOST_DEVICE T bd_act_hsig_##S(T x, T a, T b) { return bd_act_unit_##S(a * x + b); } \
    static inline BD_HOST_DEVICE T bd_act_hswish_##S(T x)                                          \
    {                                                                                              \
        return x * bd_act_unit_##S(x * (T)(1.0 / 6.0) + (T)0.5);                                   \
    }                                                                                              \
    static inline BD_HOST_DEVICE T bd_act_elu_##S(T x, T a) { return x > 0 ? x : a * bd_act_expm1_##S(x); } \
    static inline BD_HOST_DEVICE T bd_act_selu_##S(T x, T a, T g)                                  \
    {                                                                                              \
        return g * (x > 0 ? x : a * bd_act_expm1_##S(x));                                          \
    }                                                                                              \
    static inline BD_HOST_DEVICE T bd_act_celu_##S(T x, T a)                                       \
    {                                                                                              \
        return x > 0 ? x : a * bd_act_expm1_##S(x / a);                                            \
    }                                                                                              \
    static inline BD_HOST_DEVICE T bd_act_thresh_##S(T x, T a) { return x > a ? x : (T)0; }        \
    /* x Phi(x), Phi the normal CDF: erfc(-x / sqrt 2) / 2 */                                       \
    static inline BD_HOST_DEVICE T bd_act_gelu_##S(T x) { return x * bd_act_phi_##S(x); }         \
    /* x (1 + tanh(y)) / 2 = x sigmoid(2y), y = sqrt(2 / pi) (x + 0.044715 x^3) */                \
    static inline BD_HOST_DEVICE T bd_act_gelu_tanh_##S(T x)                                       \
    {                                                                                              \
        T y = (T)0.79788456080286535588 * (x + (T)0.044715 * x * x * x);                           \
        return x / ((T)1 + bd_act_exp_##S((T)-2 * y));                                             \
    }                                                                                              \
    static inline BD_HOST_DEVICE T bd_act_softplus_##S(T x)                                        \
    {                                                                                              \
        T a = x < 0 ? -x : x;                                                                      \
        return (x > 0 ? x : (T)0) + bd_act_log1p_##S(bd_act_exp_##S(-a));                         \
    }                                                                                              \
    static inline BD_HOST_DEVICE T bd_act_mish_##S(T x) { return x * bd_act_tanh_##S(bd_act_softplus_##S(x)); } \
    static inline BD_HOST_DEVICE T bd_act_softsign_##S(T x) { return x / ((T)1 + (x < 0 ? -x : x)); } \
    static inline BD_HOST_DEVICE T bd_act_swish_##S(T x, T a) { return x / ((T)1 + bd_act_exp_##S(-a * x)); } \
    static inline BD_HOST_DEVICE T bd_act_shrink_##S(T x, T l, T b)                                \
    {                                                                                              \
        return x < -l ? x + b : x > l ? x - b : (T)0;                                              \
    }

BD_ACT_FORMULAS(float, f)
BD_ACT_FORMULAS(double, d)

#endif /* BD_ACTIVATION_H */
