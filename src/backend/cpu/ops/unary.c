/* unary.c: CPU kernels of the unary op family: one flat loop per op and dtype,
 * generated from type lists, plus Clip's bounds and Cast's dtype matrix. */
/* Vectorize the flat loops even in -O2 builds (GCC 12 at -O2 vectorizes only
 * loops whose trip count is known); selects and sqrt need no FP traps/errno. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math", "no-math-errno")
#endif

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/parallel.h"

#include <math.h>
#include <string.h>

#include "ops/unary.h"
#include "util/dtype.h"
#include "vmath.h"

typedef struct un_ctx {
    float alpha, beta;
    const void *lo, *hi; /* Clip: bounds in X's dtype; NULL = the type's limit */
} un_ctx;

typedef void (*un_fn)(const void *x, void *o, int64_t n, const un_ctx *c);

#define NDT 17
/* Elements per thread below which splitting does not pay for a thread. */
#define MIN_CHUNK (1 << 16)

/* Type lists: X(C type, dtype suffix, kind F/S/U, math suffix, op). */
#define FLOAT_TYPES(X, op) X(float, FLOAT, F, f, op) X(double, DOUBLE, F, , op)
#define SINT_TYPES(X, op) X(int8_t, INT8, S, , op) X(int16_t, INT16, S, , op)                     \
    X(int32_t, INT32, S, , op) X(int64_t, INT64, S, , op)

/* exp, tanh and erf: the vectorizable float versions of vmath.h, libm for double. */
#define VEXP_f bd_vexpf
#define VEXP_ exp
#define VTANH_f bd_vtanhf
#define VTANH_ tanh
#define VERF_f bd_verff
#define VERF_ erf

/* Element expressions over v (type T); M is the math-function suffix. */
#define RELU_F(T, M) (v > 0 ? v : (T)0)
#define RELU_S RELU_F
#define NEG_F(T, M) -v
#define NEG_S(T, M) (T)(0 - (uint64_t)v) /* wraps at the most negative value */
#define ABS_F(T, M) fabs##M(v)
#define ABS_S(T, M) (v < 0 ? (T)(0 - (uint64_t)v) : v)
#define LRELU_F(T, M) (v >= 0 ? v : v * alpha)
#define SIGMOID_F(T, M) ((T)1 / ((T)1 + VEXP_##M(-v)))
/* clamp to [0, 1] with selects (fmin/fmax calls do not vectorize); NaN stays */
#define UNIT(T, y) ((y) < (T)0 ? (T)0 : (y) > (T)1 ? (T)1 : (y))
#define HSIG_F(T, M) UNIT(T, alpha * v + beta)
#define HSWISH_F(T, M) (v * UNIT(T, v * (T)(1.0 / 6.0) + (T)0.5))
#define TANH_F(T, M) VTANH_##M(v)
#define EXP_F(T, M) VEXP_##M(v)
#define LOG_F(T, M) log##M(v)
#define SQRT_F(T, M) sqrt##M(v)
#define ERF_F(T, M) VERF_##M(v)
#define RECIP_F(T, M) ((T)1 / v)
#define FLOOR_F(T, M) floor##M(v)
#define CEIL_F(T, M) ceil##M(v)

#define DEF_UN(T, N, K, M, op)                                                                     \
    static void un_##op##_##N(const void *vx, void *vo, int64_t n, const un_ctx *c)                \
    {                                                                                              \
        const T *x = vx;                                                                           \
        T *o = vo;                                                                                 \
        const T alpha = (T)c->alpha, beta = (T)c->beta;                                            \
        (void)alpha, (void)beta;                                                                   \
        for (int64_t i = 0; i < n; i++) {                                                          \
            T v = x[i];                                                                            \
            o[i] = (T)(op##_##K(T, M));                                                            \
        }                                                                                          \
    }
#define ENT(T, N, K, M, op) [BRAID_DTYPE_##N] = un_##op##_##N,
/* An op over float types only: its functions and its table. */
#define FLOAT_OP(op)                                                                               \
    FLOAT_TYPES(DEF_UN, op)                                                                        \
    static const un_fn tab_##op[NDT] = {FLOAT_TYPES(ENT, op)};
/* An op over float and signed integer types. */
#define SIGNED_OP(op)                                                                              \
    FLOAT_TYPES(DEF_UN, op)                                                                        \
    SINT_TYPES(DEF_UN, op)                                                                         \
    static const un_fn tab_##op[NDT] = {FLOAT_TYPES(ENT, op) SINT_TYPES(ENT, op)};

SIGNED_OP(RELU)
SIGNED_OP(NEG)
SIGNED_OP(ABS)
FLOAT_OP(LRELU)
FLOAT_OP(SIGMOID)
FLOAT_OP(HSIG)
FLOAT_OP(HSWISH)
FLOAT_OP(TANH)
FLOAT_OP(EXP)
FLOAT_OP(LOG)
FLOAT_OP(SQRT)
FLOAT_OP(ERF)
FLOAT_OP(RECIP)
FLOAT_OP(FLOOR)
FLOAT_OP(CEIL)

static void un_not(const void *vx, void *vo, int64_t n, const un_ctx *c)
{
    (void)c;
    const uint8_t *x = vx;
    uint8_t *o = vo;
    for (int64_t i = 0; i < n; i++) o[i] = x[i] == 0;
}

/* ---- Clip ---------------------------------------------------------------- */

/* X(C type, dtype suffix, lowest, highest) */
#define CLIP_TYPES(X)                                                                              \
    X(float, FLOAT, -INFINITY, INFINITY) X(double, DOUBLE, -INFINITY, INFINITY)                    \
    X(int8_t, INT8, INT8_MIN, INT8_MAX) X(int16_t, INT16, INT16_MIN, INT16_MAX)                    \
    X(int32_t, INT32, INT32_MIN, INT32_MAX) X(int64_t, INT64, INT64_MIN, INT64_MAX)                \
    X(uint8_t, UINT8, 0, UINT8_MAX) X(uint16_t, UINT16, 0, UINT16_MAX)                             \
    X(uint32_t, UINT32, 0, UINT32_MAX) X(uint64_t, UINT64, 0, UINT64_MAX)

/* min(max(v, lo), hi): when lo > hi every element becomes hi, as ONNX says. */
#define DEF_CLIP(T, N, LO, HI)                                                                     \
    static void clip_##N(const void *vx, void *vo, int64_t n, const un_ctx *c)                     \
    {                                                                                              \
        const T *x = vx;                                                                           \
        T *o = vo;                                                                                 \
        T lo = c->lo ? *(const T *)c->lo : (T)(LO), hi = c->hi ? *(const T *)c->hi : (T)(HI);      \
        for (int64_t i = 0; i < n; i++) {                                                          \
            T v = x[i] < lo ? lo : x[i];                                                           \
            o[i] = v > hi ? hi : v;                                                                \
        }                                                                                          \
    }
#define CLIP_ENT(T, N, LO, HI) [BRAID_DTYPE_##N] = clip_##N,
CLIP_TYPES(DEF_CLIP)
static const un_fn tab_CLIP[NDT] = {CLIP_TYPES(CLIP_ENT)};

/* ---- Cast ---------------------------------------------------------------- */

typedef void (*cast_fn)(const void *s, void *d, int64_t n);

/* X(C type, dtype suffix, ...): the types Cast converts between directly. Two
 * copies so that one can expand inside the other. */
#define CAST_A(X, ...)                                                                             \
    X(float, FLOAT, __VA_ARGS__) X(double, DOUBLE, __VA_ARGS__) X(int8_t, INT8, __VA_ARGS__)       \
    X(int16_t, INT16, __VA_ARGS__) X(int32_t, INT32, __VA_ARGS__) X(int64_t, INT64, __VA_ARGS__)   \
    X(uint8_t, UINT8, __VA_ARGS__) X(uint16_t, UINT16, __VA_ARGS__)                                \
    X(uint32_t, UINT32, __VA_ARGS__) X(uint64_t, UINT64, __VA_ARGS__) X(uint8_t, BOOL, __VA_ARGS__)
#define CAST_B(X, ...)                                                                             \
    X(float, FLOAT, __VA_ARGS__) X(double, DOUBLE, __VA_ARGS__) X(int8_t, INT8, __VA_ARGS__)       \
    X(int16_t, INT16, __VA_ARGS__) X(int32_t, INT32, __VA_ARGS__) X(int64_t, INT64, __VA_ARGS__)   \
    X(uint8_t, UINT8, __VA_ARGS__) X(uint16_t, UINT16, __VA_ARGS__)                                \
    X(uint32_t, UINT32, __VA_ARGS__) X(uint64_t, UINT64, __VA_ARGS__) X(uint8_t, BOOL, __VA_ARGS__)

/* C conversions truncate floats toward zero, as numpy's astype does; bool is v != 0. */
#define CONV(DT, DN, v) (BRAID_DTYPE_##DN == BRAID_DTYPE_BOOL ? (DT)((v) != 0) : (DT)(v))
#define DEF_CAST(DT, DN, ST, SN)                                                                   \
    static void cast_##SN##_##DN(const void *vs, void *vd, int64_t n)                              \
    {                                                                                              \
        const ST *s = vs;                                                                          \
        DT *d = vd;                                                                                \
        for (int64_t i = 0; i < n; i++) d[i] = CONV(DT, DN, s[i]);                                 \
    }
#define DEF_CAST_ROW(ST, SN, ...) CAST_B(DEF_CAST, ST, SN)
CAST_A(DEF_CAST_ROW, _)
#define CAST_ENT(DT, DN, ST, SN) [BRAID_DTYPE_##DN] = cast_##SN##_##DN,
#define CAST_TAB_ROW(ST, SN, ...) [BRAID_DTYPE_##SN] = {CAST_B(CAST_ENT, ST, SN)},
static const cast_fn cast_tab[NDT][NDT] = {CAST_A(CAST_TAB_ROW, _)};

typedef struct cast_job {
    int sd, dd;
    size_t ss, ds;
    const char *src;
    char *dst;
} cast_job;

/* Elements [begin, end); float16 goes through float, a block at a time. */
static void cast_range(void *vj, int64_t begin, int64_t end)
{
    const cast_job *j = vj;
    const char *src = j->src + (size_t)begin * j->ss;
    char *dst = j->dst + (size_t)begin * j->ds;
    int64_t n = end - begin;
    if (j->sd == j->dd) {
        memcpy(dst, src, (size_t)n * j->ss);
        return;
    }
    if (j->sd != BRAID_DTYPE_FLOAT16 && j->dd != BRAID_DTYPE_FLOAT16) {
        cast_tab[j->sd][j->dd](src, dst, n);
        return;
    }
    float buf[1024];
    for (int64_t off = 0; off < n; off += 1024) {
        int64_t c = BD_MIN(n - off, (int64_t)1024);
        if (j->sd == BRAID_DTYPE_FLOAT16) {
            const uint16_t *h = (const uint16_t *)src + off;
            for (int64_t i = 0; i < c; i++) buf[i] = bd_half_to_float(h[i]);
            cast_tab[BRAID_DTYPE_FLOAT][j->dd](buf, dst + (size_t)off * j->ds, c);
        } else {
            uint16_t *h = (uint16_t *)dst + off;
            cast_tab[j->sd][BRAID_DTYPE_FLOAT](src + (size_t)off * j->ss, buf, c);
            for (int64_t i = 0; i < c; i++) h[i] = bd_float_to_half(buf[i]);
        }
    }
}

static braid_status run_cast(const bd_kernel *k)
{
    cast_job j = {k->in[0].dtype, k->out[0].dtype, 0, 0, k->in[0].data, k->out[0].data};
    j.ss = bd_dtype_size(j.sd);
    j.ds = bd_dtype_size(j.dd);
    if (j.sd < 0 || j.sd >= NDT || j.dd < 0 || j.dd >= NDT || !j.ss || !j.ds)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "cast from %s to %s is not supported",
                       bd_dtype_name(j.sd), bd_dtype_name(j.dd));
    bd_parallel_for(k->threads, bd_numel(&k->in[0]), MIN_CHUNK, cast_range, &j);
    return BRAID_OK;
}

typedef struct un_job {
    un_fn fn;
    const char *x;
    char *o;
    size_t esz;
    const un_ctx *c;
} un_job;

static void un_range(void *vj, int64_t begin, int64_t end)
{
    const un_job *j = vj;
    j->fn(j->x + (size_t)begin * j->esz, j->o + (size_t)begin * j->esz, end - begin, j->c);
}

/* ---- dispatch ------------------------------------------------------------ */

/* Clip's bound i (1 = min, 2 = max) in X's dtype: from the inputs (opset >= 11,
 * NULL when omitted) or from the attributes, converted into *buf. */
static const void *clip_bound(const bd_kernel *k, int i, double attr, uint64_t *buf)
{
    if (k->node->opset >= 11) {
        if (i < k->n_in && k->in[i].dtype != BRAID_DTYPE_UNDEFINED && k->in[i].data)
            return k->in[i].data;
        return NULL;
    }
    bd_tensor t = {.dtype = k->in[0].dtype, .data = buf};
    bd_set_f64(&t, 0, attr);
    return buf;
}

braid_status bd_cpu_unary(const bd_kernel *k)
{
    const bd_node *n = k->node;
    const bd_unary_params *p = n->params;
    int dt = k->in[0].dtype;
    if (n->op == BD_OP_Cast) return run_cast(k);
    un_ctx c = {p ? p->alpha : 0, p ? p->beta : 0, NULL, NULL};
    uint64_t lo_buf = 0, hi_buf = 0;
    const un_fn *tab = NULL;
    un_fn fn = NULL;
    switch (n->op) {
    case BD_OP_Relu: tab = tab_RELU; break;
    case BD_OP_Neg: tab = tab_NEG; break;
    case BD_OP_Abs: tab = tab_ABS; break;
    case BD_OP_LeakyRelu: tab = tab_LRELU; break;
    case BD_OP_Sigmoid: tab = tab_SIGMOID; break;
    case BD_OP_HardSigmoid: tab = tab_HSIG; break;
    case BD_OP_HardSwish: tab = tab_HSWISH; break;
    case BD_OP_Tanh: tab = tab_TANH; break;
    case BD_OP_Exp: tab = tab_EXP; break;
    case BD_OP_Log: tab = tab_LOG; break;
    case BD_OP_Sqrt: tab = tab_SQRT; break;
    case BD_OP_Erf: tab = tab_ERF; break;
    case BD_OP_Reciprocal: tab = tab_RECIP; break;
    case BD_OP_Floor: tab = tab_FLOOR; break;
    case BD_OP_Ceil: tab = tab_CEIL; break;
    case BD_OP_Clip:
        tab = tab_CLIP;
        c.lo = clip_bound(k, 1, p ? p->min : -INFINITY, &lo_buf);
        c.hi = clip_bound(k, 2, p ? p->max : INFINITY, &hi_buf);
        break;
    case BD_OP_Not:
        if (dt == BRAID_DTYPE_BOOL) fn = un_not;
        break;
    default: break;
    }
    if (tab && dt >= 0 && dt < NDT) fn = tab[dt];
    if (!fn)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "%s has no CPU kernel for dtype %s",
                       n->op_type, bd_dtype_name(dt));
    un_job j = {fn, k->in[0].data, k->out[0].data, bd_dtype_size(dt), &c};
    bd_parallel_for(k->threads, bd_numel(&k->in[0]), MIN_CHUNK, un_range, &j);
    return BRAID_OK;
}
