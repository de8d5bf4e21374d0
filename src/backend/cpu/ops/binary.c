/* binary.c: CPU kernels of the binary op family. Inputs are broadcast into the
 * output by collapsing the shapes into as few dims as possible and running a
 * flat row function (generated per op and dtype) over the innermost dim. */
/* Vectorize the flat loops even in -O2 builds (GCC 12 at -O2 vectorizes only
 * loops whose trip count is known); selects and sqrt need no FP traps/errno. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math", "no-math-errno")
#endif

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/parallel.h"

#include <math.h>
#include <string.h>

/* A row: o[0..n) = f(p[0][i * s[0]], p[1][i * s[1]], ...) with each s in {0, 1}. */
typedef void (*row_fn)(const void *const *p, const int64_t *s, void *o, int64_t n, const void *ctx);

#define MAX_IN 3
/* Elements per thread below which splitting does not pay for a thread. */
#define MIN_CHUNK (1 << 16)

/* The broadcast seen as collapsed dims: out[...] = fn(in0[...], in1[...], ...). */
typedef struct bcast {
    row_fn fn;
    const void *ctx;
    int n_in, r;
    int64_t dims[BD_MAX_RANK], st[MAX_IN][BD_MAX_RANK]; /* st: element strides per input */
    int64_t inner[MAX_IN];                               /* strides of the innermost dim: 0 or 1 */
    size_t esz[MAX_IN], osz;
    const char *in[MAX_IN];
    char *out;
} bcast;

/* Output elements [begin, end): a partial first row, whole rows, a partial last row. */
static void bcast_range(void *vb, int64_t begin, int64_t end)
{
    const bcast *b = vb;
    int64_t n = b->dims[b->r - 1], row = begin / n, col = begin % n, idx[BD_MAX_RANK] = {0};
    const char *p[MAX_IN];
    for (int i = 0; i < b->n_in; i++) p[i] = b->in[i] + (size_t)(col * b->inner[i]) * b->esz[i];
    for (int d = b->r - 2; d >= 0; d--) { /* row -> the outer dims' indices */
        idx[d] = row % b->dims[d];
        row /= b->dims[d];
        for (int i = 0; i < b->n_in; i++) p[i] += (ptrdiff_t)(idx[d] * b->st[i][d]) * (ptrdiff_t)b->esz[i];
    }
    char *o = b->out + (size_t)begin * b->osz;
    for (int64_t pos = begin; pos < end;) {
        int64_t len = BD_MIN(n - col, end - pos);
        const void *pv[MAX_IN];
        for (int i = 0; i < b->n_in; i++) pv[i] = p[i];
        b->fn(pv, b->inner, o, len, b->ctx);
        o += (size_t)len * b->osz;
        pos += len;
        for (int i = 0; i < b->n_in; i++) p[i] -= (ptrdiff_t)(col * b->inner[i]) * (ptrdiff_t)b->esz[i];
        col = 0;
        /* Odometer over the outer dims. */
        for (int d = b->r - 2; d >= 0; d--) {
            for (int i = 0; i < b->n_in; i++) p[i] += (ptrdiff_t)(b->st[i][d] * (int64_t)b->esz[i]);
            if (++idx[d] < b->dims[d]) break;
            for (int i = 0; i < b->n_in; i++)
                p[i] -= (ptrdiff_t)(b->st[i][d] * b->dims[d] * (int64_t)b->esz[i]);
            idx[d] = 0;
        }
    }
}

/* Runs fn over every element of out, n_in inputs broadcast into it, on up to
 * `threads` threads (each element is computed the same way on any count). */
static void bcast_run(row_fn fn, const void *ctx, int n_in, const bd_tensor *const *in,
                      bd_tensor *out, int threads)
{
    int64_t total = bd_numel(out);
    if (total <= 0) return;
    bcast b = {.fn = fn, .ctx = ctx, .n_in = n_in, .osz = bd_dtype_size(out->dtype), .out = out->data};
    int64_t full[MAX_IN][BD_MAX_RANK];
    for (int i = 0; i < n_in; i++) {
        bd_broadcast_strides(in[i], out, full[i]);
        b.esz[i] = bd_dtype_size(in[i]->dtype);
        b.in[i] = in[i]->data;
    }
    /* Collapse: drop dims of size 1, merge a dim into its outer neighbour when
     * every input walks both as one (contiguous, or broadcast in both). */
    for (int d = 0; d < out->rank; d++) {
        if (out->dims[d] == 1) continue;
        int merge = b.r > 0;
        for (int i = 0; merge && i < n_in; i++)
            if (b.st[i][b.r - 1] != full[i][d] * out->dims[d]) merge = 0;
        if (merge) {
            b.dims[b.r - 1] *= out->dims[d];
            for (int i = 0; i < n_in; i++) b.st[i][b.r - 1] = full[i][d];
        } else {
            b.dims[b.r] = out->dims[d];
            for (int i = 0; i < n_in; i++) b.st[i][b.r] = full[i][d];
            b.r++;
        }
    }
    if (b.r == 0) { /* every dim is 1: one element */
        b.dims[0] = 1;
        for (int i = 0; i < n_in; i++) b.st[i][0] = 1;
        b.r = 1;
    }
    for (int i = 0; i < n_in; i++) b.inner[i] = b.st[i][b.r - 1];
    bd_parallel_for(threads, total, MIN_CHUNK, bcast_range, &b);
}

/* ---- row functions ------------------------------------------------------- */

/* A two-input row of element expression EXPR over x (TA) and y (TB). The
 * four stride cases get their own loops so that the compiler vectorizes each. */
#define ROW2(name, TA, TB, TO, EXPR)                                                               \
    static void name(const void *const *p, const int64_t *s, void *vo, int64_t n, const void *ctx) \
    {                                                                                              \
        (void)ctx;                                                                                 \
        const TA *a = p[0];                                                                        \
        const TB *b = p[1];                                                                        \
        TO *o = vo;                                                                                \
        if (s[0] && s[1]) {                                                                        \
            for (int64_t i = 0; i < n; i++) { TA x = a[i]; TB y = b[i]; o[i] = (TO)(EXPR); }        \
        } else if (s[0]) {                                                                         \
            TB y = b[0];                                                                           \
            for (int64_t i = 0; i < n; i++) { TA x = a[i]; o[i] = (TO)(EXPR); }                    \
        } else if (s[1]) {                                                                         \
            TA x = a[0];                                                                           \
            for (int64_t i = 0; i < n; i++) { TB y = b[i]; o[i] = (TO)(EXPR); }                    \
        } else {                                                                                   \
            TA x = a[0]; TB y = b[0];                                                              \
            TO v = (TO)(EXPR);                                                                     \
            for (int64_t i = 0; i < n; i++) o[i] = v;                                              \
        }                                                                                          \
    }

/* Type lists: X(C type, braid dtype suffix, kind: F float, S signed, U unsigned, extra). */
#define FLOAT_TYPES(X, op) X(float, FLOAT, F, op) X(double, DOUBLE, F, op)
#define SINT_TYPES(X, op) X(int8_t, INT8, S, op) X(int16_t, INT16, S, op) X(int32_t, INT32, S, op) \
    X(int64_t, INT64, S, op)
#define UINT_TYPES(X, op) X(uint8_t, UINT8, U, op) X(uint16_t, UINT16, U, op)                      \
    X(uint32_t, UINT32, U, op) X(uint64_t, UINT64, U, op)
#define NUM_TYPES(X, op) FLOAT_TYPES(X, op) SINT_TYPES(X, op) UINT_TYPES(X, op)
#define BOOL_TYPE(X, op) X(uint8_t, BOOL, U, op)

/* Element expressions by kind. Integer arithmetic wraps (done in uint64_t, as
 * numpy and onnxruntime wrap); integer division truncates toward zero and
 * gives 0 for a zero divisor instead of trapping. */
#define ADD_F(T) x + y
#define SUB_F(T) x - y
#define MUL_F(T) x * y
#define DIV_F(T) x / y
#define ADD_S(T) (T)((uint64_t)x + (uint64_t)y)
#define SUB_S(T) (T)((uint64_t)x - (uint64_t)y)
#define MUL_S(T) (T)((uint64_t)x * (uint64_t)y)
#define DIV_S(T) (y == 0 ? (T)0 : y == -1 ? (T)(0 - (uint64_t)x) : (T)(x / y))
#define ADD_U ADD_S
#define SUB_U SUB_S
#define MUL_U MUL_S
#define DIV_U(T) (y == 0 ? (T)0 : (T)(x / y))
#define EQ_F(T) x == y
#define EQ_S EQ_F
#define EQ_U EQ_F
#define LT_F(T) x < y
#define LT_S LT_F
#define LT_U LT_F
#define GT_F(T) x > y
#define GT_S GT_F
#define GT_U GT_F
#define PRELU_F(T) (x < 0 ? x * y : x)
#define PRELU_S PRELU_F
#define AND_U(T) (x != 0) & (y != 0)
#define OR_U(T) (x != 0) | (y != 0)

/* row_OP_DTYPE: same-typed inputs, output of the inputs' type. */
#define DEF_SAME(T, N, K, op) ROW2(row_##op##_##N, T, T, T, op##_##K(T))
/* row_OP_DTYPE: same-typed inputs, bool output. */
#define DEF_BOOL(T, N, K, op) ROW2(row_##op##_##N, T, T, uint8_t, op##_##K(T))
#define ENT(T, N, K, op) [BRAID_DTYPE_##N] = row_##op##_##N,
#define NDT 17

NUM_TYPES(DEF_SAME, ADD)
NUM_TYPES(DEF_SAME, SUB)
NUM_TYPES(DEF_SAME, MUL)
NUM_TYPES(DEF_SAME, DIV)
NUM_TYPES(DEF_BOOL, EQ)
BOOL_TYPE(DEF_BOOL, EQ)
NUM_TYPES(DEF_BOOL, LT)
NUM_TYPES(DEF_BOOL, GT)
FLOAT_TYPES(DEF_SAME, PRELU)
DEF_SAME(int32_t, INT32, S, PRELU)
DEF_SAME(int64_t, INT64, S, PRELU)
BOOL_TYPE(DEF_BOOL, AND)
BOOL_TYPE(DEF_BOOL, OR)

/* Pow of equal float types; squaring (the common case) is exact as x * x. */
#define POW_F(T) (y == 2 ? x * x : (T)pow((double)x, (double)y))
FLOAT_TYPES(DEF_SAME, POW)

static const row_fn tab_ADD[NDT] = {NUM_TYPES(ENT, ADD)};
static const row_fn tab_SUB[NDT] = {NUM_TYPES(ENT, SUB)};
static const row_fn tab_MUL[NDT] = {NUM_TYPES(ENT, MUL)};
static const row_fn tab_DIV[NDT] = {NUM_TYPES(ENT, DIV)};
static const row_fn tab_EQ[NDT] = {NUM_TYPES(ENT, EQ) BOOL_TYPE(ENT, EQ)};
static const row_fn tab_LT[NDT] = {NUM_TYPES(ENT, LT)};
static const row_fn tab_GT[NDT] = {NUM_TYPES(ENT, GT)};
static const row_fn tab_PRELU[NDT] = {FLOAT_TYPES(ENT, PRELU)[BRAID_DTYPE_INT32] = row_PRELU_INT32,
                                      [BRAID_DTYPE_INT64] = row_PRELU_INT64};
static const row_fn tab_AND[NDT] = {BOOL_TYPE(ENT, AND)};
static const row_fn tab_OR[NDT] = {BOOL_TYPE(ENT, OR)};
static const row_fn tab_POW[NDT] = {FLOAT_TYPES(ENT, POW)};

/* Pow of any other base and exponent types (ONNX lets them differ; the output
 * has the base's type): computed in double. */
typedef struct pow_ctx {
    int ta, tb, to;
} pow_ctx;

static void row_pow_any(const void *const *p, const int64_t *s, void *o, int64_t n, const void *ctx)
{
    const pow_ctx *c = ctx;
    bd_tensor a = {.dtype = c->ta, .data = (void *)p[0]}, b = {.dtype = c->tb, .data = (void *)p[1]};
    bd_tensor t = {.dtype = c->to, .data = o};
    for (int64_t i = 0; i < n; i++)
        bd_set_f64(&t, i, pow(bd_get_f64(&a, i * s[0]), bd_get_f64(&b, i * s[1])));
}

/* Where moves elements by size: one row function per element width. */
#define WHERE_ROW(name, T)                                                                         \
    static void name(const void *const *p, const int64_t *s, void *vo, int64_t n, const void *ctx) \
    {                                                                                              \
        (void)ctx;                                                                                 \
        const uint8_t *c = p[0];                                                                   \
        const T *x = p[1], *y = p[2];                                                              \
        T *o = vo;                                                                                 \
        if (s[0] && s[1] && s[2])                                                                  \
            for (int64_t i = 0; i < n; i++) o[i] = c[i] ? x[i] : y[i];                             \
        else                                                                                       \
            for (int64_t i = 0; i < n; i++) o[i] = c[i * s[0]] ? x[i * s[1]] : y[i * s[2]];        \
    }
WHERE_ROW(row_where_1, uint8_t)
WHERE_ROW(row_where_2, uint16_t)
WHERE_ROW(row_where_4, uint32_t)
WHERE_ROW(row_where_8, uint64_t)

static row_fn pick(const row_fn *tab, int dt) { return dt >= 0 && dt < NDT ? tab[dt] : NULL; }

braid_status bd_cpu_binary(const bd_kernel *k)
{
    const bd_node *n = k->node;
    const bd_tensor *in[MAX_IN] = {&k->in[0], &k->in[1], k->n_in > 2 ? &k->in[2] : NULL};
    int dt = k->in[0].dtype, n_in = 2;
    row_fn fn = NULL;
    const void *ctx = NULL;
    pow_ctx pc;
    switch (n->op) {
    case BD_OP_Add: fn = pick(tab_ADD, dt); break;
    case BD_OP_Sub: fn = pick(tab_SUB, dt); break;
    case BD_OP_Mul: fn = pick(tab_MUL, dt); break;
    case BD_OP_Div: fn = pick(tab_DIV, dt); break;
    case BD_OP_Equal: fn = pick(tab_EQ, dt); break;
    case BD_OP_Less: fn = pick(tab_LT, dt); break;
    case BD_OP_Greater: fn = pick(tab_GT, dt); break;
    case BD_OP_PRelu: fn = pick(tab_PRELU, dt); break;
    case BD_OP_And: fn = pick(tab_AND, dt); break;
    case BD_OP_Or: fn = pick(tab_OR, dt); break;
    case BD_OP_Pow:
        if (k->in[1].dtype == dt) fn = pick(tab_POW, dt);
        if (!fn && bd_dtype_size(dt) && bd_dtype_size(k->in[1].dtype)) {
            pc = (pow_ctx){dt, k->in[1].dtype, k->out[0].dtype};
            fn = row_pow_any;
            ctx = &pc;
        }
        break;
    case BD_OP_Where:
        if (k->n_in < 3) break;
        n_in = 3;
        dt = k->in[1].dtype;
        switch (bd_dtype_size(dt)) {
        case 1: fn = row_where_1; break;
        case 2: fn = row_where_2; break;
        case 4: fn = row_where_4; break;
        case 8: fn = row_where_8; break;
        default: break;
        }
        break;
    default: break;
    }
    if (!fn)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "%s has no CPU kernel for dtype %s",
                       n->op_type, bd_dtype_name(dt));
    bcast_run(fn, ctx, n_in, in, &k->out[0], k->threads);
    return BRAID_OK;
}
