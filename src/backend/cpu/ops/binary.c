/* binary.c: CPU kernels of the binary op family. Inputs are broadcast into
 * the output by elementwise.h's engine (shapes collapsed into as few dims as
 * possible, a row function over the innermost one), with one row function
 * per op and dtype generated here; float16, bfloat16 run the float row on
 * converted blocks. The variadic ops (Max, Min, Sum, Mean, BiasAdd) fold
 * their inputs into the output one at a time, left to right. */
/* O3 vectorizes the rows; no FP traps/errno for the selects; no fused
 * multiply-adds, so that every build computes the same bits. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math", "no-math-errno", "fp-contract=off")
#endif

#include <math.h>

#include <string.h>

#include "elementwise.h"
#include "ops/binary.h"
#include "ops/cast.h"

/* The constants of a run. */
typedef struct bin_ctx {
    int fmod, left; /* Mod, BitShift */
    float n;        /* Mean: the input count */
    int ta, tb;     /* Pow of mixed types: the base's and exponent's dtypes */
} bin_ctx;

#define NDT 14 /* the native dtypes are all below this */

/* A two-input row of element expression EXPR over x (T) and y (T) into TO.
 * The stride cases get their own loops so that the compiler vectorizes each. */
#define ROW2(name, T, TO, EXPR)                                                                    \
    static BD_CLONES void name(const void *const *p, const int64_t *s, void *vo, int64_t n,       \
                               const void *vc)                                                     \
    {                                                                                              \
        const bin_ctx *c = vc;                                                                     \
        (void)c;                                                                                   \
        const T *a = p[0], *b = p[1];                                                              \
        TO *o = vo;                                                                                \
        if (s[0] && s[1]) {                                                                        \
            for (int64_t i = 0; i < n; i++) { T x = a[i], y = b[i]; o[i] = (TO)(EXPR); }           \
        } else if (s[0]) {                                                                         \
            T y = b[0];                                                                            \
            for (int64_t i = 0; i < n; i++) { T x = a[i]; o[i] = (TO)(EXPR); }                     \
        } else if (s[1]) {                                                                         \
            T x = a[0];                                                                            \
            for (int64_t i = 0; i < n; i++) { T y = b[i]; o[i] = (TO)(EXPR); }                     \
        } else {                                                                                   \
            T x = a[0], y = b[0];                                                                  \
            TO v = (TO)(EXPR);                                                                     \
            for (int64_t i = 0; i < n; i++) o[i] = v;                                              \
        }                                                                                          \
    }

/* Type lists: X(C type, dtype suffix, kind: F float, S signed, U unsigned, formula suffix, op). */
#define FLOAT_TYPES(X, op) X(float, FLOAT, F, f, op) X(double, DOUBLE, F, d, op)
#define SINT_TYPES(X, op) X(int8_t, INT8, S, i, op) X(int16_t, INT16, S, i, op)                    \
    X(int32_t, INT32, S, i, op) X(int64_t, INT64, S, i, op)
#define UINT_TYPES(X, op) X(uint8_t, UINT8, U, u, op) X(uint16_t, UINT16, U, u, op)                \
    X(uint32_t, UINT32, U, u, op) X(uint64_t, UINT64, U, u, op)
#define INT_TYPES(X, op) SINT_TYPES(X, op) UINT_TYPES(X, op)
#define NUM_TYPES(X, op) FLOAT_TYPES(X, op) INT_TYPES(X, op)
#define BOOL_TYPE(X, op) X(uint8_t, BOOL, U, u, op)

/* Element expressions by kind. Integer arithmetic wraps (done in uint64_t, as
 * numpy and onnxruntime wrap); integer division truncates toward zero and
 * gives 0 for a zero divisor instead of trapping. */
#define ADD_F(T, M) x + y
#define SUB_F(T, M) x - y
#define MUL_F(T, M) x * y
#define DIV_F(T, M) x / y
#define ADD_S(T, M) (T)((uint64_t)x + (uint64_t)y)
#define SUB_S(T, M) (T)((uint64_t)x - (uint64_t)y)
#define MUL_S(T, M) (T)((uint64_t)x * (uint64_t)y)
#define DIV_S(T, M) (y == 0 ? (T)0 : y == -1 ? (T)(0 - (uint64_t)x) : (T)(x / y))
#define ADD_U ADD_S
#define SUB_U SUB_S
#define MUL_U MUL_S
#define DIV_U(T, M) (y == 0 ? (T)0 : (T)(x / y))
#define MOD_F(T, M) bd_bin_mod_##M(x, y, c->fmod)
#define MOD_S(T, M) (T)bd_bin_mod_i(x, y, c->fmod)
#define MOD_U(T, M) (T)bd_bin_mod_u(x, y)
/* x > 0 ? x : x * slope, as onnx's reference: 0 * inf and NaN give NaN */
#define PRELU_F(T, M) (x > 0 ? x : x * y)
#define PRELU_S(T, M) (x > 0 ? x : (T)((uint64_t)x * (uint64_t)y))
#define PRELU_U PRELU_S
#define MAX_F(T, M) bd_bin_max_##M(x, y)
#define MIN_F(T, M) bd_bin_min_##M(x, y)
#define MAX_S(T, M) (x > y ? x : y)
#define MIN_S(T, M) (x < y ? x : y)
#define MAX_U MAX_S
#define MIN_U MIN_S
#define MEAN_F(T, M) ((x + y) / (T)c->n)
#define EQ_F(T, M) x == y
#define LT_F(T, M) x < y
#define GT_F(T, M) x > y
#define LE_F(T, M) x <= y
#define GE_F(T, M) x >= y
#define EQ_S EQ_F
#define LT_S LT_F
#define GT_S GT_F
#define LE_S LE_F
#define GE_S GE_F
#define EQ_U EQ_F
#define LT_U LT_F
#define GT_U GT_F
#define LE_U LE_F
#define GE_U GE_F
#define AND_U(T, M) (x != 0) & (y != 0)
#define OR_U(T, M) (x != 0) | (y != 0)
#define XOR_U(T, M) (x != 0) ^ (y != 0)
#define BAND_S(T, M) x & y
#define BOR_S(T, M) x | y
#define BXOR_S(T, M) x ^ y
#define BAND_U BAND_S
#define BOR_U BOR_S
#define BXOR_U BXOR_S
#define SHIFT_S(T, M) (T)bd_bin_shift(x, y, (int)(8 * sizeof(T)), c->left, 1)
#define SHIFT_U(T, M) (T)bd_bin_shift((int64_t)x, (int64_t)y, (int)(8 * sizeof(T)), c->left, 0)
/* Pow of equal float types; squaring (the common case) is exact as x * x. */
#define POW_F(T, M) (y == 2 ? x * x : (T)pow((double)x, (double)y))

/* row_OP_DTYPE with an output of the inputs' type, or bool. */
#define DEF_SAME(T, N, K, M, op) ROW2(row_##op##_##N, T, T, op##_##K(T, M))
#define DEF_BOOL(T, N, K, M, op) ROW2(row_##op##_##N, T, uint8_t, op##_##K(T, M))
#define ENT(T, N, K, M, op) [BRAID_DTYPE_##N] = row_##op##_##N,
#define TAB(op, TYPES) static const bd_row_fn tab_##op[NDT] = {TYPES(ENT, op)};

#define NUM_OP(op) NUM_TYPES(DEF_SAME, op) TAB(op, NUM_TYPES)
#define CMP_OP(op) NUM_TYPES(DEF_BOOL, op) TAB(op, NUM_TYPES)
#define INT_OP(op) INT_TYPES(DEF_SAME, op) TAB(op, INT_TYPES)
#define FLOAT_OP(op) FLOAT_TYPES(DEF_SAME, op) TAB(op, FLOAT_TYPES)
#define LOGIC_OP(op) BOOL_TYPE(DEF_BOOL, op) TAB(op, BOOL_TYPE)

NUM_OP(ADD)
NUM_OP(SUB)
NUM_OP(MUL)
NUM_OP(DIV)
NUM_OP(MOD)
NUM_OP(PRELU)
NUM_OP(MAX)
NUM_OP(MIN)
FLOAT_OP(MEAN)
FLOAT_OP(POW)
CMP_OP(LT)
CMP_OP(GT)
CMP_OP(LE)
CMP_OP(GE)
NUM_TYPES(DEF_BOOL, EQ)
BOOL_TYPE(DEF_BOOL, EQ)
static const bd_row_fn tab_EQ[NDT] = {NUM_TYPES(ENT, EQ) BOOL_TYPE(ENT, EQ)};
LOGIC_OP(AND)
LOGIC_OP(OR)
LOGIC_OP(XOR)
INT_OP(BAND)
INT_OP(BOR)
INT_OP(BXOR)
INT_OP(SHIFT)

/* Pow of any other base and exponent types (the output has the base's type):
 * float bases in double, rounded once to the base's type; integer bases by
 * bd_bin_ipow (exact for whole exponents). */
static void row_pow_any(const void *const *p, const int64_t *s, void *o, int64_t n, const void *vc)
{
    const bin_ctx *c = vc;
    for (int64_t i = 0; i < n; i++) {
        bd_cast_val b = bd_cast_load(c->ta, p[0], i * s[0]), e = bd_cast_load(c->tb, p[1], i * s[1]);
        double ed = bd_cast_as_f64(e);
        if (b.kind == 0) b.d = pow(b.d, ed);
        else b.i = bd_bin_ipow(b.i, ed);
        bd_cast_store(c->ta, o, i, b, 0, 0);
    }
}

/* Where moves elements by size: one row function per element width. */
#define WHERE_ROW(name, T)                                                                         \
    static BD_CLONES void name(const void *const *p, const int64_t *s, void *vo, int64_t n, const void *ctx) \
    {                                                                                              \
        (void)ctx;                                                                                 \
        const uint8_t *c = p[0];                                                                   \
        const T *x = p[1], *y = p[2];                                                              \
        T *o = vo;                                                                                 \
        if (s[0] && s[1] && s[2])                                                                  \
            for (int64_t i = 0; i < n; i++) o[i] = c[i] ? x[i] : y[i];                             \
        else if (s[0] && !s[1] && s[2]) { /* Where(IsNaN(v), 0, v): 2.7x faster than by strides */ \
            T xv = x[0];                                                                           \
            for (int64_t i = 0; i < n; i++) o[i] = c[i] ? xv : y[i];                               \
        } else if (s[0] && s[1] && !s[2]) {                                                        \
            T yv = y[0];                                                                           \
            for (int64_t i = 0; i < n; i++) o[i] = c[i] ? x[i] : yv;                               \
        } else if (s[0] && !s[1] && !s[2]) {                                                       \
            T xv = x[0], yv = y[0];                                                                \
            for (int64_t i = 0; i < n; i++) o[i] = c[i] ? xv : yv;                                 \
        } else                                                                                     \
            for (int64_t i = 0; i < n; i++) o[i] = c[i * s[0]] ? x[i * s[1]] : y[i * s[2]];        \
    }
WHERE_ROW(row_where_1, uint8_t)
WHERE_ROW(row_where_2, uint16_t)
WHERE_ROW(row_where_4, uint32_t)
WHERE_ROW(row_where_8, uint64_t)

/* Equal on strings: the element is a `const char *` (braid.h). */
static void row_eq_str(const void *const *p, const int64_t *s, void *vo, int64_t n, const void *ctx)
{
    (void)ctx;
    const char *const *x = p[0], *const *y = p[1];
    uint8_t *o = vo;
    for (int64_t i = 0; i < n; i++) o[i] = strcmp(x[i * s[0]], y[i * s[1]]) == 0;
}

/* ---- dispatch ------------------------------------------------------------ */

static const bd_row_fn *table(int op)
{
    switch (op) {
    case BD_OP_Add: case BD_OP_Sum: case BD_OP_MS_BiasAdd: return tab_ADD;
    case BD_OP_Sub: return tab_SUB;
    case BD_OP_Mul: return tab_MUL;
    case BD_OP_Div: return tab_DIV;
    case BD_OP_Mod: return tab_MOD;
    case BD_OP_PRelu: return tab_PRELU;
    case BD_OP_Max: return tab_MAX;
    case BD_OP_Min: return tab_MIN;
    case BD_OP_Mean: return tab_ADD; /* the last step divides: tab_MEAN */
    case BD_OP_Pow: return tab_POW;
    case BD_OP_Equal: return tab_EQ;
    case BD_OP_Less: return tab_LT;
    case BD_OP_Greater: return tab_GT;
    case BD_OP_LessOrEqual: return tab_LE;
    case BD_OP_GreaterOrEqual: return tab_GE;
    case BD_OP_And: return tab_AND;
    case BD_OP_Or: return tab_OR;
    case BD_OP_Xor: return tab_XOR;
    case BD_OP_BitwiseAnd: return tab_BAND;
    case BD_OP_BitwiseOr: return tab_BOR;
    case BD_OP_BitwiseXor: return tab_BXOR;
    case BD_OP_BitShift: return tab_SHIFT;
    default: return NULL;
    }
}

/* One broadcast step out = fn(a, b): the row for the inputs' dtype, through
 * the narrow wrapper for float16 and bfloat16. NULL when there is none. */
typedef struct bin_step {
    bd_row_fn fn;
    const void *ctx;
    bd_row_narrow nc;
} bin_step;

static int pick(bin_step *st, const bd_row_fn *tab, int dt, int out_dt, const bin_ctx *c)
{
    int kdt = bd_ew_narrow(dt) ? BRAID_DTYPE_FLOAT : dt;
    bd_row_fn fn = tab && kdt > 0 && kdt < NDT ? tab[kdt] : NULL;
    if (!fn) return 0;
    st->fn = fn;
    st->ctx = c;
    if (kdt != dt) {
        st->nc = (bd_row_narrow){fn, c, 2, {dt, dt}, out_dt};
        st->fn = bd_row_narrow_fn;
        st->ctx = &st->nc;
    }
    return 1;
}

braid_status bd_cpu_binary(const bd_kernel *k)
{
    const bd_node *n = k->node;
    const bd_binary_params *p = n->params;
    bd_tensor *out = &k->out[0];
    int dt = k->in[0].dtype;
    bin_ctx c = {p ? p->fmod : 0, p ? p->shift_left : 0, (float)k->n_in, 0, 0};
    bin_step st = {0};
    if (n->op == BD_OP_Where) {
        static const bd_row_fn where[9] = {[1] = row_where_1, [2] = row_where_2, [4] = row_where_4, [8] = row_where_8};
        size_t es = bd_dtype_size(k->in[1].dtype);
        if (k->n_in < 3 || es > 8 || !where[es])
            return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "Where has no CPU kernel for dtype %s",
                           bd_dtype_name(k->in[1].dtype));
        const bd_tensor *in[3] = {&k->in[0], &k->in[1], &k->in[2]};
        bd_bcast_run(where[es], NULL, 3, in, out, k->threads);
        return BRAID_OK;
    }
    if (n->op == BD_OP_Pow && (k->in[1].dtype != dt || (dt != BRAID_DTYPE_FLOAT && dt != BRAID_DTYPE_DOUBLE &&
                                                       !bd_ew_narrow(dt)))) {
        c.ta = dt;
        c.tb = k->in[1].dtype;
        st.fn = row_pow_any;
        st.ctx = &c;
    } else if (n->op == BD_OP_Equal && dt == BRAID_DTYPE_STRING) {
        st.fn = row_eq_str;
    } else if (!pick(&st, table(n->op), dt, out->dtype, &c)) {
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "%s has no CPU kernel for dtype %s", n->op_type,
                       bd_dtype_name(dt));
    }
    if (k->n_in == 1) { /* Max, Min, Sum, Mean of one input: itself */
        if (bd_numel(out) > 0) memcpy(out->data, k->in[0].data, (size_t)bd_numel(out) * bd_dtype_size(dt));
        return BRAID_OK;
    }
    /* The second input under the old forms' view (opset < 7 axis, PRelu's channel). */
    bd_tensor b_view;
    const bd_tensor *in[2] = {&k->in[0], bd_binary_view(n, &k->in[0], &k->in[1], &b_view) ? &b_view : &k->in[1]};
    for (int i = 1; i < k->n_in; i++) {
        if (i > 1) in[0] = out, in[1] = &k->in[i];
        if (n->op == BD_OP_Mean && i == k->n_in - 1 && !pick(&st, tab_MEAN, dt, out->dtype, &c))
            return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "Mean has no CPU kernel for dtype %s", bd_dtype_name(dt));
        bd_bcast_run(st.fn, st.ctx, 2, in, out, k->threads);
    }
    return BRAID_OK;
}
