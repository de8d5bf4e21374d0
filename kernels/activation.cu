/* activation.cu: CUDA kernels of the activation op family, mirroring
 * src/backend/cpu/ops/activation.c: a flat map per op and dtype over the
 * formulas of src/ops/activation.h (float16 and bfloat16 computed in float),
 * and for the two-input ops (SwiGLU, FastGelu's bias, BiasGelu) a
 * broadcast map of two inputs. */
#include <type_traits>

#include "elementwise.cuh"

extern "C" {
#include "ops/activation.h"
#include "ops/cast.h"
}

/* The formulas as float/double overloads. */
#define OVL1(name)                                                                                 \
    __device__ __forceinline__ float a_##name(float x) { return bd_act_##name##_f(x); }            \
    __device__ __forceinline__ double a_##name(double x) { return bd_act_##name##_d(x); }
#define OVL2(name)                                                                                 \
    __device__ __forceinline__ float a_##name(float x, float a) { return bd_act_##name##_f(x, a); } \
    __device__ __forceinline__ double a_##name(double x, double a) { return bd_act_##name##_d(x, a); }
#define OVL3(name)                                                                                 \
    __device__ __forceinline__ float a_##name(float x, float a, float b) { return bd_act_##name##_f(x, a, b); } \
    __device__ __forceinline__ double a_##name(double x, double a, double b) { return bd_act_##name##_d(x, a, b); }
OVL1(relu) OVL1(sigmoid) OVL1(hswish) OVL1(gelu) OVL1(gelu_tanh) OVL1(softplus) OVL1(mish) OVL1(softsign)
OVL2(leaky) OVL2(elu) OVL2(celu) OVL2(thresh) OVL2(swish)
OVL3(hsig) OVL3(selu) OVL3(shrink)
#undef OVL1
#undef OVL2
#undef OVL3

/* The attributes, by value in every functor. */
struct act_args {
    float alpha, beta, gamma, lambd, bias;
};

#define ACT_OP(NAME, EXPR)                                                                         \
    struct NAME {                                                                                  \
        act_args c;                                                                                \
        template <class C> __device__ __forceinline__ C operator()(C v) const { return EXPR; }     \
    };
ACT_OP(o_leaky, a_leaky(v, (C)c.alpha))
ACT_OP(o_sigmoid, a_sigmoid(v))
ACT_OP(o_hsig, a_hsig(v, (C)c.alpha, (C)c.beta))
ACT_OP(o_hswish, a_hswish(v))
ACT_OP(o_elu, a_elu(v, (C)c.alpha))
ACT_OP(o_selu, a_selu(v, (C)c.alpha, (C)c.gamma))
ACT_OP(o_celu, a_celu(v, (C)c.alpha))
ACT_OP(o_thresh, a_thresh(v, (C)c.alpha))
ACT_OP(o_gelu, a_gelu(v))
ACT_OP(o_gelu_tanh, a_gelu_tanh(v))
ACT_OP(o_softplus, a_softplus(v))
ACT_OP(o_mish, a_mish(v))
ACT_OP(o_softsign, a_softsign(v))
ACT_OP(o_swish, a_swish(v, (C)c.alpha))
#undef ACT_OP

/* Relu of integers as is; Shrink of integers in double, truncated (the CPU's rule). */
struct o_relu {
    act_args c;
    template <class C> __device__ __forceinline__ C operator()(C v) const
    {
        if constexpr (std::is_integral<C>::value) return v < 0 ? (C)0 : v;
        else return a_relu(v);
    }
};
struct o_shrink {
    act_args c;
    template <class C> __device__ __forceinline__ C operator()(C v) const
    {
        if constexpr (std::is_integral<C>::value) {
            double r = bd_act_shrink_d((double)v, (double)c.lambd, (double)c.bias);
            return std::is_signed<C>::value ? (C)bd_cast_f2i(r) : (C)bd_cast_f2u(r);
        } else {
            return a_shrink(v, (C)c.lambd, (C)c.bias);
        }
    }
};

/* Two inputs. */
struct o_bias_gelu {
    template <class C> __device__ __forceinline__ C operator()(C x, C y) const { return a_gelu(x + y); }
};
struct o_bias_gelu_tanh {
    template <class C> __device__ __forceinline__ C operator()(C x, C y) const { return a_gelu_tanh(x + y); }
};
struct o_swiglu {
    float alpha;
    template <class C> __device__ __forceinline__ C operator()(C x, C y) const { return a_swish(x, (C)alpha) * y; }
};

/* ---- launchers ----------------------------------------------------------- */

template <class Op> static bool map_float(const bd_cuda_kernel *k, Op op, braid_status *st)
{
    return bd_ew_dispatch_float(k->in[0].dtype, [&](auto tag) {
        typedef decltype(tag) S;
        *st = bd_ew_map<S, S>(k, op, "an activation kernel");
    });
}

template <class Op> static bool map2_float(const bd_cuda_kernel *k, Op op, braid_status *st)
{
    return bd_ew_dispatch_float(k->in[0].dtype, [&](auto tag) {
        typedef decltype(tag) S;
        *st = bd_ew_bcast<S, S, S>(k, &k->in[0], &k->in[1], &k->out[0], op);
    });
}

extern "C" braid_status bd_cuda_activation(const bd_cuda_kernel *k)
{
    const bd_node *n = k->node;
    const bd_activation_params *p = (const bd_activation_params *)n->params;
    int dt = k->in[0].dtype;
    act_args c = {p ? p->alpha : 1.0f, p ? p->beta : 0.5f, p ? p->gamma : 1.0f, p ? p->lambd : 0.5f,
                  p ? p->bias : 0.0f};
    braid_status st = BRAID_OK;
    bool ok = false;
    int two = k->n_in > 1 && k->in[1].dtype != BRAID_DTYPE_UNDEFINED;
    switch (n->op) {
    case BD_OP_Relu:
        ok = map_float(k, o_relu{c}, &st) || bd_cu_dispatch_sint(dt, [&](auto tag) {
                 typedef decltype(tag) S;
                 st = bd_ew_map<S, S>(k, o_relu{c}, "the Relu kernel");
             });
        break;
    case BD_OP_Shrink:
        ok = bd_ew_dispatch_num(dt, [&](auto tag) {
            typedef decltype(tag) S;
            st = bd_ew_map<S, S>(k, o_shrink{c}, "the Shrink kernel");
        });
        break;
    case BD_OP_LeakyRelu: ok = map_float(k, o_leaky{c}, &st); break;
    case BD_OP_Sigmoid: ok = map_float(k, o_sigmoid{c}, &st); break;
    case BD_OP_HardSigmoid: ok = map_float(k, o_hsig{c}, &st); break;
    case BD_OP_HardSwish: ok = map_float(k, o_hswish{c}, &st); break;
    case BD_OP_Elu: ok = map_float(k, o_elu{c}, &st); break;
    case BD_OP_Selu: ok = map_float(k, o_selu{c}, &st); break;
    case BD_OP_Celu: ok = map_float(k, o_celu{c}, &st); break;
    case BD_OP_ThresholdedRelu: ok = map_float(k, o_thresh{c}, &st); break;
    case BD_OP_Gelu:
        ok = p && p->approx ? map_float(k, o_gelu_tanh{c}, &st) : map_float(k, o_gelu{c}, &st);
        break;
    case BD_OP_MS_Gelu: ok = map_float(k, o_gelu{c}, &st); break;
    case BD_OP_Mish: ok = map_float(k, o_mish{c}, &st); break;
    case BD_OP_Softplus: ok = map_float(k, o_softplus{c}, &st); break;
    case BD_OP_Softsign: ok = map_float(k, o_softsign{c}, &st); break;
    case BD_OP_Swish: case BD_OP_MS_QuickGelu: ok = map_float(k, o_swish{c}, &st); break;
    case BD_OP_MS_FastGelu:
        ok = two ? map2_float(k, o_bias_gelu_tanh(), &st) : map_float(k, o_gelu_tanh{c}, &st);
        break;
    case BD_OP_MS_BiasGelu: ok = map2_float(k, o_bias_gelu(), &st); break;
    case BD_OP_SwiGLU: ok = map2_float(k, o_swiglu{c.alpha}, &st); break;
    default: return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the activation family", n->op_type);
    }
    if (!ok)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op %s with dtype %s is not implemented on CUDA", n->op_type,
                       bd_dtype_name(dt));
    return st;
}

extern "C" void bd_cuda_activation_free(const bd_node *n, void *cache)
{
    (void)n;
    (void)cache;
}
