/* unary.c: CPU kernels of the unary op family: one flat loop per op and
 * dtype, generated from type lists over the formulas of src/ops/unary.h;
 * float16, bfloat16 and float8 run the float loop a block at a time
 * (elementwise.h). The float loops are built for x86-64-v3 and the baseline. */
/* O3 vectorizes the flat loops (GCC 12 at -O2 vectorizes only loops whose
 * trip count is known); no FP traps/errno for the selects. Multiply-adds
 * fuse where the target has FMA (the x86-64-v3 clone): the vector body and
 * the scalar tail of a loop are the same statements and fuse alike, so an
 * element's bits do not depend on where a thread's chunk starts
 * (test_unary and test_activation check it element by element). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math", "no-math-errno", "fp-contract=fast")
#endif

#include <math.h>

#include "elementwise.h"
#include "ops/unary.h"

/* The constants of a run: Clip's bounds (in X's kind), IsInf's flags. */
typedef union un_bound {
    double f;
    int64_t i;
    uint64_t u;
} un_bound;

typedef struct un_ctx {
    un_bound lo, hi;
    int neg, pos;
} un_ctx;

#define NDT 29

/* Type lists: X(C type, dtype suffix, formula suffix, op); f float, d double,
 * i signed, u unsigned. */
#define FLOAT_TYPES(X, op) X(float, FLOAT, f, op) X(double, DOUBLE, d, op)
#define SINT_TYPES(X, op) X(int8_t, INT8, i, op) X(int16_t, INT16, i, op)                          \
    X(int32_t, INT32, i, op) X(int64_t, INT64, i, op)
#define UINT_TYPES(X, op) X(uint8_t, UINT8, u, op) X(uint16_t, UINT16, u, op)                      \
    X(uint32_t, UINT32, u, op) X(uint64_t, UINT64, u, op)
#define INT_TYPES(X, op) SINT_TYPES(X, op) UINT_TYPES(X, op)

/* Element expressions over v (type T); S is the formula suffix. */
#define ABS_f(T, S) fabs##S(v)
#define ABS_d ABS_f
#define fabsd fabs
#define ABS_i(T, S) (T)(v < 0 ? (T)(0 - (uint64_t)v) : v) /* wraps at the most negative value */
#define ABS_u(T, S) v
#define NEG_f(T, S) -v
#define NEG_d NEG_f
#define NEG_i(T, S) (T)(0 - (uint64_t)v)
#define RECIP_f(T, S) ((T)1 / v)
#define RECIP_d RECIP_f
#define FLOOR_f(T, S) floor##S(v)
#define FLOOR_d FLOOR_f
#define floord floor
#define CEIL_f(T, S) ceil##S(v)
#define CEIL_d CEIL_f
#define ceild ceil
#define ROUND_f(T, S) bd_un_round_##S(v)
#define ROUND_d ROUND_f
#define SIGN_f(T, S) bd_un_sign_##S(v)
#define SIGN_d SIGN_f
#define SIGN_i(T, S) (T)((v > 0) - (v < 0))
#define SIGN_u(T, S) (T)(v > 0)
#define EXP_f(T, S) bd_un_exp_##S(v)
#define EXP_d EXP_f
#define LOG_f(T, S) bd_un_log_##S(v)
#define LOG_d LOG_f
#define SQRT_f(T, S) sqrt##S(v)
#define SQRT_d SQRT_f
#define sqrtd sqrt
#define TANH_f(T, S) bd_un_tanh_##S(v)
#define TANH_d TANH_f
#define ERF_f(T, S) bd_un_erf_##S(v)
#define ERF_d ERF_f
/* integers: erf in double rounded to float, truncated (as onnx's reference) */
#define ERF_i(T, S) (T)(float)erf((double)v)
#define ERF_u ERF_i
#define BNOT_i(T, S) (T)~v
#define BNOT_u BNOT_i
/* libm's trigonometric and hyperbolic functions: f gives sinf, d gives sin. */
#define LIBM(fn)                                                                                   \
    static inline float fn##_f(float v) { return fn##f(v); }                                       \
    static inline double fn##_d(double v) { return fn(v); }
LIBM(sin) LIBM(cos) LIBM(tan) LIBM(asin) LIBM(acos) LIBM(atan)
LIBM(sinh) LIBM(cosh) LIBM(asinh) LIBM(acosh) LIBM(atanh)
#define TRIG(fn) fn##_f
#define CLIP_f(T, S) bd_un_clip_##S(v, (T)c->lo.f, (T)c->hi.f)
#define CLIP_d CLIP_f
/* max first, then min: lo > hi gives hi, as ONNX says */
#define CLIP_i(T, S) ((v < (T)c->lo.i ? (T)c->lo.i : v) > (T)c->hi.i ? (T)c->hi.i : (v < (T)c->lo.i ? (T)c->lo.i : v))
#define CLIP_u(T, S) ((v < (T)c->lo.u ? (T)c->lo.u : v) > (T)c->hi.u ? (T)c->hi.u : (v < (T)c->lo.u ? (T)c->lo.u : v))
#define ISNAN_f(T, S) (uint8_t)(v != v)
#define ISNAN_d ISNAN_f
#define ISINF_f(T, S) bd_un_isinf_##S(v, c->neg, c->pos)
#define ISINF_d ISINF_f

/* un_OP_DTYPE: o[i] = OP(x[i]) with an output of type TO. */
#define DEF_UN_TO(T, N, S, op, TO)                                                                 \
    static BD_CLONES void un_##op##_##N(const void *vx, void *vo, int64_t n, const void *vc)     \
    {                                                                                              \
        const T *x = vx;                                                                           \
        TO *o = vo;                                                                                \
        const un_ctx *c = vc;                                                                      \
        (void)c;                                                                                   \
        for (int64_t i = 0; i < n; i++) {                                                          \
            T v = x[i];                                                                            \
            o[i] = (TO)(op##_##S(T, S));                                                           \
        }                                                                                          \
    }
#define DEF_UN(T, N, S, op) DEF_UN_TO(T, N, S, op, T)
#define DEF_UNB(T, N, S, op) DEF_UN_TO(T, N, S, op, uint8_t)
#define ENT(T, N, S, op) [BRAID_DTYPE_##N] = un_##op##_##N,

/* An op over the float types, and over every numeric type. */
#define FLOAT_OP(op)                                                                               \
    FLOAT_TYPES(DEF_UN, op)                                                                        \
    static const bd_ew_fn tab_##op[NDT] = {FLOAT_TYPES(ENT, op)};
#define NUM_OP(op)                                                                                 \
    FLOAT_TYPES(DEF_UN, op)                                                                        \
    INT_TYPES(DEF_UN, op)                                                                          \
    static const bd_ew_fn tab_##op[NDT] = {FLOAT_TYPES(ENT, op) INT_TYPES(ENT, op)};

NUM_OP(ABS)
NUM_OP(SIGN)
NUM_OP(ERF)
NUM_OP(CLIP)
FLOAT_TYPES(DEF_UN, NEG)
SINT_TYPES(DEF_UN, NEG)
static const bd_ew_fn tab_NEG[NDT] = {FLOAT_TYPES(ENT, NEG) SINT_TYPES(ENT, NEG)};
INT_TYPES(DEF_UN, BNOT)
static const bd_ew_fn tab_BNOT[NDT] = {INT_TYPES(ENT, BNOT)};
FLOAT_OP(RECIP)
FLOAT_OP(FLOOR)
FLOAT_OP(CEIL)
FLOAT_OP(ROUND)
FLOAT_OP(EXP)
FLOAT_OP(LOG)
FLOAT_OP(SQRT)
FLOAT_OP(TANH)
FLOAT_TYPES(DEF_UNB, ISNAN)
static const bd_ew_fn tab_ISNAN[NDT] = {FLOAT_TYPES(ENT, ISNAN)};
FLOAT_TYPES(DEF_UNB, ISINF)
static const bd_ew_fn tab_ISINF[NDT] = {FLOAT_TYPES(ENT, ISINF)};

/* The libm functions: scalar calls, one table row each. */
#define DEF_LIBM(T, N, S, fn)                                                                      \
    static void un_##fn##_##N(const void *vx, void *vo, int64_t n, const void *vc)                 \
    {                                                                                              \
        const T *x = vx;                                                                           \
        T *o = vo;                                                                                 \
        (void)vc;                                                                                  \
        for (int64_t i = 0; i < n; i++) o[i] = fn##_##S(x[i]);                                     \
    }
#define LIBM_OP(fn)                                                                                \
    FLOAT_TYPES(DEF_LIBM, fn)                                                                      \
    static const bd_ew_fn tab_##fn[NDT] = {FLOAT_TYPES(ENT, fn)};
LIBM_OP(sin) LIBM_OP(cos) LIBM_OP(tan) LIBM_OP(asin) LIBM_OP(acos) LIBM_OP(atan)
LIBM_OP(sinh) LIBM_OP(cosh) LIBM_OP(asinh) LIBM_OP(acosh) LIBM_OP(atanh)

static BD_CLONES void un_not(const void *vx, void *vo, int64_t n, const void *c)
{
    (void)c;
    const uint8_t *x = vx;
    uint8_t *o = vo;
    for (int64_t i = 0; i < n; i++) o[i] = x[i] == 0;
}

/* ---- dispatch ------------------------------------------------------------ */

/* Element 0 of an integer tensor, exactly. */
static int64_t int_at(const bd_tensor *t)
{
    switch (t->dtype) {
    case BRAID_DTYPE_INT8: return *(const int8_t *)t->data;
    case BRAID_DTYPE_INT16: return *(const int16_t *)t->data;
    case BRAID_DTYPE_INT32: return *(const int32_t *)t->data;
    case BRAID_DTYPE_INT64: return *(const int64_t *)t->data;
    case BRAID_DTYPE_UINT8: return *(const uint8_t *)t->data;
    case BRAID_DTYPE_UINT16: return *(const uint16_t *)t->data;
    case BRAID_DTYPE_UINT32: return *(const uint32_t *)t->data;
    case BRAID_DTYPE_UINT64: return (int64_t)*(const uint64_t *)t->data;
    default: return 0;
    }
}

/* Clip's bound i (1 = min, 2 = max) for X's dtype dt into *b: the input
 * (opset >= 11; omitted: no bound), or the attribute (before opset 11). */
static void clip_bound(const bd_kernel *k, int i, double attr, int dt, un_bound *b)
{
    int hi = i == 2;
    const bd_tensor *t = i < k->n_in ? &k->in[i] : NULL;
    int given = k->node->opset >= 11 && t && t->dtype != BRAID_DTYPE_UNDEFINED && t->data;
    if (dt == BRAID_DTYPE_FLOAT || dt == BRAID_DTYPE_DOUBLE) { /* every float kind reads exactly as double */
        b->f = k->node->opset < 11 ? attr : given ? bd_get_f64(t, 0) : hi ? INFINITY : -INFINITY;
    } else if (dt == BRAID_DTYPE_UINT8 || dt == BRAID_DTYPE_UINT16 || dt == BRAID_DTYPE_UINT32 ||
               dt == BRAID_DTYPE_UINT64) {
        uint64_t lim = dt == BRAID_DTYPE_UINT64 ? UINT64_MAX : ((uint64_t)1 << (8 * bd_dtype_size(dt))) - 1;
        b->u = given ? (uint64_t)int_at(t) : hi ? lim : 0;
    } else {
        int bits = 8 * (int)bd_dtype_size(dt);
        int64_t lim = bits >= 64 ? INT64_MAX : (int64_t)(((uint64_t)1 << (bits - 1)) - 1);
        b->i = given ? int_at(t) : hi ? lim : -lim - 1;
    }
}

static const bd_ew_fn *table(int op)
{
    switch (op) {
    case BD_OP_Abs: return tab_ABS;
    case BD_OP_Neg: return tab_NEG;
    case BD_OP_Reciprocal: return tab_RECIP;
    case BD_OP_Floor: return tab_FLOOR;
    case BD_OP_Ceil: return tab_CEIL;
    case BD_OP_Round: return tab_ROUND;
    case BD_OP_Sign: return tab_SIGN;
    case BD_OP_Exp: return tab_EXP;
    case BD_OP_Log: return tab_LOG;
    case BD_OP_Sqrt: return tab_SQRT;
    case BD_OP_Erf: return tab_ERF;
    case BD_OP_Tanh: return tab_TANH;
    case BD_OP_Sin: return tab_sin;
    case BD_OP_Cos: return tab_cos;
    case BD_OP_Tan: return tab_tan;
    case BD_OP_Asin: return tab_asin;
    case BD_OP_Acos: return tab_acos;
    case BD_OP_Atan: return tab_atan;
    case BD_OP_Sinh: return tab_sinh;
    case BD_OP_Cosh: return tab_cosh;
    case BD_OP_Asinh: return tab_asinh;
    case BD_OP_Acosh: return tab_acosh;
    case BD_OP_Atanh: return tab_atanh;
    case BD_OP_IsNaN: return tab_ISNAN;
    case BD_OP_IsInf: return tab_ISINF;
    case BD_OP_BitwiseNot: return tab_BNOT;
    case BD_OP_Clip: return tab_CLIP;
    default: return NULL;
    }
}

braid_status bd_cpu_unary(const bd_kernel *k)
{
    const bd_node *n = k->node;
    const bd_unary_params *p = n->params;
    int dt = k->in[0].dtype;
    /* narrow floats run the float kernel on converted blocks */
    int kdt = bd_ew_narrow(dt) ? BRAID_DTYPE_FLOAT : dt;
    un_ctx c = {.neg = p ? p->detect_neg : 1, .pos = p ? p->detect_pos : 1};
    bd_ew_fn fn = NULL;
    const bd_ew_fn *tab = table(n->op);
    if (tab && kdt > 0 && kdt < NDT) fn = tab[kdt];
    if (n->op == BD_OP_Not && dt == BRAID_DTYPE_BOOL) fn = un_not;
    if (n->op == BD_OP_Clip) {
        clip_bound(k, 1, p ? p->min : -INFINITY, kdt, &c.lo);
        clip_bound(k, 2, p ? p->max : INFINITY, kdt, &c.hi);
    }
    if (!fn)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "%s has no CPU kernel for dtype %s", n->op_type,
                       bd_dtype_name(dt));
    bd_ew_map m = {fn, &c, dt, k->out[0].dtype, k->in[0].data, k->out[0].data};
    bd_ew_map_run(&m, bd_numel(&k->in[0]), k->threads);
    return BRAID_OK;
}
