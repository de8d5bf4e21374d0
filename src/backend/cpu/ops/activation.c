/* activation.c: CPU kernels of the activation op family: one flat loop per op
 * and dtype over the formulas of src/ops/activation.h (float16 and bfloat16
 * through the float loop, elementwise.h), and for the two-input ops (SwiGLU,
 * FastGelu's bias, BiasGelu) a row function under numpy broadcasting. The
 * float loops are built for x86-64-v3 and the baseline. */
/* O3 vectorizes the flat loops (GCC 12 at -O2 vectorizes only loops whose
 * trip count is known); no FP traps/errno for the selects. Multiply-adds
 * fuse where the target has FMA (the x86-64-v3 clone): the vector body and
 * the scalar tail of a loop are the same statements and fuse alike, so an
 * element's bits do not depend on where a thread's chunk starts
 * (test_unary and test_activation check it element by element). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math", "no-math-errno", "fp-contract=fast")
#endif

#include "elementwise.h"
#include "ops/activation.h"
#include "ops/cast.h"

/* The attributes as the formulas take them. */
typedef struct act_ctx {
    float alpha, beta, gamma, lambd, bias;
} act_ctx;

#define NDT 29

/* Element expressions over v (type T); S is the formula suffix. */
#define RELU(T, S) bd_act_relu_##S(v)
#define LEAKY(T, S) bd_act_leaky_##S(v, (T)c->alpha)
#define SIGMOID(T, S) bd_act_sigmoid_##S(v)
#define HSIG(T, S) bd_act_hsig_##S(v, (T)c->alpha, (T)c->beta)
#define HSWISH(T, S) bd_act_hswish_##S(v)
#define ELU(T, S) bd_act_elu_##S(v, (T)c->alpha)
#define SELU(T, S) bd_act_selu_##S(v, (T)c->alpha, (T)c->gamma)
#define CELU(T, S) bd_act_celu_##S(v, (T)c->alpha)
#define THRESH(T, S) bd_act_thresh_##S(v, (T)c->alpha)
#define GELU(T, S) bd_act_gelu_##S(v)
#define GELU_TANH(T, S) bd_act_gelu_tanh_##S(v)
#define SOFTPLUS(T, S) bd_act_softplus_##S(v)
#define MISH(T, S) bd_act_mish_##S(v)
#define SOFTSIGN(T, S) bd_act_softsign_##S(v)
#define SWISH(T, S) bd_act_swish_##S(v, (T)c->alpha)
#define SHRINK(T, S) bd_act_shrink_##S(v, (T)c->lambd, (T)c->bias)
/* integers: Relu as is; Shrink in double, truncated (as onnx's reference) */
#define RELU_INT(T, S) (v < 0 ? (T)0 : v)
#define SHRINK_INT(T, S) (T)bd_cast_f2i(bd_act_shrink_d((double)v, (double)c->lambd, (double)c->bias))
#define SHRINK_UINT(T, S) (T)bd_cast_f2u(bd_act_shrink_d((double)v, (double)c->lambd, (double)c->bias))

/* act_OP_N: o[i] = OP(x[i]). */
#define DEF_ACT(T, N, S, op)                                                                       \
    static BD_CLONES void act_##op##_##N(const void *vx, void *vo, int64_t n, const void *vc)    \
    {                                                                                              \
        const T *x = vx;                                                                           \
        T *o = vo;                                                                                 \
        const act_ctx *c = vc;                                                                     \
        (void)c;                                                                                   \
        for (int64_t i = 0; i < n; i++) {                                                          \
            T v = x[i];                                                                            \
            o[i] = (T)(op(T, S));                                                                  \
        }                                                                                          \
    }
#define FLOAT_TYPES(X, op) X(float, FLOAT, f, op) X(double, DOUBLE, d, op)
#define SINT_TYPES(X, op) X(int8_t, INT8, d, op) X(int16_t, INT16, d, op) X(int32_t, INT32, d, op) \
    X(int64_t, INT64, d, op)
#define UINT_TYPES(X, op) X(uint8_t, UINT8, d, op) X(uint16_t, UINT16, d, op)                      \
    X(uint32_t, UINT32, d, op) X(uint64_t, UINT64, d, op)
#define ENT(T, N, S, op) [BRAID_DTYPE_##N] = act_##op##_##N,
#define FLOAT_OP(op)                                                                               \
    FLOAT_TYPES(DEF_ACT, op)                                                                       \
    static const bd_ew_fn tab_##op[NDT] = {FLOAT_TYPES(ENT, op)};

FLOAT_OP(LEAKY)
FLOAT_OP(SIGMOID)
FLOAT_OP(HSIG)
FLOAT_OP(HSWISH)
FLOAT_OP(ELU)
FLOAT_OP(SELU)
FLOAT_OP(CELU)
FLOAT_OP(THRESH)
FLOAT_OP(GELU)
FLOAT_OP(GELU_TANH)
FLOAT_OP(SOFTPLUS)
FLOAT_OP(MISH)
FLOAT_OP(SOFTSIGN)
FLOAT_OP(SWISH)
FLOAT_TYPES(DEF_ACT, RELU)
SINT_TYPES(DEF_ACT, RELU_INT)
static const bd_ew_fn tab_RELU[NDT] = {FLOAT_TYPES(ENT, RELU) SINT_TYPES(ENT, RELU_INT)};
FLOAT_TYPES(DEF_ACT, SHRINK)
SINT_TYPES(DEF_ACT, SHRINK_INT)
UINT_TYPES(DEF_ACT, SHRINK_UINT)
static const bd_ew_fn tab_SHRINK[NDT] = {FLOAT_TYPES(ENT, SHRINK) SINT_TYPES(ENT, SHRINK_INT)
                                             UINT_TYPES(ENT, SHRINK_UINT)};

/* ---- two inputs under broadcasting: o = f(a, b) ------------------------------ */

#define BIAS_GELU(T, S) bd_act_gelu_##S(x + y)
#define BIAS_GELU_TANH(T, S) bd_act_gelu_tanh_##S(x + y)
#define SWIGLU(T, S) (bd_act_swish_##S(x, (T)c->alpha) * y)

#define DEF_ROW(T, N, S, op)                                                                       \
    static BD_CLONES void row_##op##_##N(const void *const *p, const int64_t *s, void *vo, int64_t n, \
                                         const void *vc)                                           \
    {                                                                                              \
        const T *a = p[0], *b = p[1];                                                              \
        T *o = vo;                                                                                 \
        const act_ctx *c = vc;                                                                     \
        (void)c;                                                                                   \
        if (s[0] && s[1]) {                                                                        \
            for (int64_t i = 0; i < n; i++) { T x = a[i], y = b[i]; o[i] = op(T, S); }             \
        } else if (s[0]) {                                                                         \
            T y = b[0];                                                                            \
            for (int64_t i = 0; i < n; i++) { T x = a[i]; o[i] = op(T, S); }                       \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++) { T x = a[0], y = b[i * s[1]]; o[i] = op(T, S); }      \
        }                                                                                          \
    }
#define ROW_ENT(T, N, S, op) [BRAID_DTYPE_##N] = row_##op##_##N,
#define FLOAT_ROW(op)                                                                              \
    FLOAT_TYPES(DEF_ROW, op)                                                                       \
    static const bd_row_fn rtab_##op[NDT] = {FLOAT_TYPES(ROW_ENT, op)};
FLOAT_ROW(BIAS_GELU)
FLOAT_ROW(BIAS_GELU_TANH)
FLOAT_ROW(SWIGLU)

/* ---- dispatch ------------------------------------------------------------ */

static const bd_ew_fn *table(int op, const bd_activation_params *p)
{
    switch (op) {
    case BD_OP_Relu: return tab_RELU;
    case BD_OP_LeakyRelu: return tab_LEAKY;
    case BD_OP_Sigmoid: return tab_SIGMOID;
    case BD_OP_HardSigmoid: return tab_HSIG;
    case BD_OP_HardSwish: return tab_HSWISH;
    case BD_OP_Elu: return tab_ELU;
    case BD_OP_Selu: return tab_SELU;
    case BD_OP_Celu: return tab_CELU;
    case BD_OP_ThresholdedRelu: return tab_THRESH;
    case BD_OP_Gelu: return p && p->approx ? tab_GELU_TANH : tab_GELU;
    case BD_OP_MS_Gelu: return tab_GELU;
    case BD_OP_MS_FastGelu: return tab_GELU_TANH;
    case BD_OP_Mish: return tab_MISH;
    case BD_OP_Softplus: return tab_SOFTPLUS;
    case BD_OP_Softsign: return tab_SOFTSIGN;
    case BD_OP_Swish: case BD_OP_MS_QuickGelu: return tab_SWISH;
    case BD_OP_Shrink: return tab_SHRINK;
    default: return NULL;
    }
}

static const bd_row_fn *row_table(int op)
{
    switch (op) {
    case BD_OP_SwiGLU: return rtab_SWIGLU;
    case BD_OP_MS_BiasGelu: return rtab_BIAS_GELU;
    case BD_OP_MS_FastGelu: return rtab_BIAS_GELU_TANH;
    default: return NULL;
    }
}

braid_status bd_cpu_activation(const bd_kernel *k)
{
    const bd_node *n = k->node;
    const bd_activation_params *p = n->params;
    int dt = k->in[0].dtype, kdt = bd_ew_narrow(dt) ? BRAID_DTYPE_FLOAT : dt;
    act_ctx c = {p ? p->alpha : 1, p ? p->beta : 0.5f, p ? p->gamma : 1, p ? p->lambd : 0.5f, p ? p->bias : 0};
    int two = k->n_in > 1 && k->in[1].dtype != BRAID_DTYPE_UNDEFINED;
    if (two) {
        const bd_row_fn *rt = row_table(n->op);
        bd_row_fn fn = rt && kdt > 0 && kdt < NDT ? rt[kdt] : NULL;
        if (!fn)
            return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "%s has no CPU kernel for dtype %s", n->op_type,
                           bd_dtype_name(dt));
        const bd_tensor *in[2] = {&k->in[0], &k->in[1]};
        bd_row_narrow nc = {fn, &c, 2, {dt, dt}, dt};
        if (kdt != dt) bd_bcast_run(bd_row_narrow_fn, &nc, 2, in, &k->out[0], k->threads);
        else bd_bcast_run(fn, &c, 2, in, &k->out[0], k->threads);
        return BRAID_OK;
    }
    const bd_ew_fn *tab = table(n->op, p);
    bd_ew_fn fn = tab && kdt > 0 && kdt < NDT ? tab[kdt] : NULL;
    if (!fn)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "%s has no CPU kernel for dtype %s", n->op_type,
                       bd_dtype_name(dt));
    bd_ew_map m = {fn, &c, dt, dt, k->in[0].data, k->out[0].data};
    bd_ew_map_run(&m, bd_numel(&k->in[0]), k->threads);
    return BRAID_OK;
}
