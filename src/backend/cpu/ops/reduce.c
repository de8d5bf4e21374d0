/* reduce.c: CPU kernels of the reduce op family. The input's dims are merged
 * into alternating kept and reduced groups; every output has an 8-byte
 * accumulator (double for floats, 64-bit integers for integers) that the rows
 * of the innermost group are folded into, in 8 lanes when that group is
 * reduced, then the accumulators become the outputs (ops/reduce.h). float16
 * and bfloat16 are widened to float32 first and rounded once at the end.
 * Work is split over a kept group, or over fixed blocks of a whole-tensor
 * reduction, so that every output has the same bits on any thread count. */
/* Vectorize the flat loops even in -O2 builds (GCC 12 at -O2 vectorizes only
 * loops whose trip count is known); selects and sqrt need no FP traps/errno. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math", "no-math-errno")
#endif

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/parallel.h"

#include <math.h>
#include <string.h>

#include "ops/reduce.h"
#include "util/dtype.h"
#include "vmath.h"
#include "vrow.h"

/* The input seen as groups of merged dims, outermost first: sizes, input
 * strides (the innermost is 1) and output strides (0 for a reduced group). */
typedef struct red_geom {
    int ng;
    int64_t size[BD_MAX_RANK], istride[BD_MAX_RANK], ostride[BD_MAX_RANK];
    int inner_reduced;
} red_geom;

/* Folds x into the accumulators acc (indexed by output offset); shift, when
 * not NULL, is LogSumExp's per-output shift. */
typedef void (*fold_fn)(const void *x, void *acc, const double *shift, const red_geom *g);
typedef void (*init_fn)(void *acc, int64_t n);
typedef void (*comb_fn)(void *acc, const void *parts, int64_t n); /* acc[0] folds parts[0..n) */

/* Rows folded by vrow.h (ROW argument of DEF_FOLD; NO: the generic lanes). */
#define NO 0
#define NO_ROW(x, n, a) (a)
#define MAX_FLOAT_ROW(x, n, a) BD_RED_MAX2(a, bd_row_extf(x, n, -INFINITY, 0))
#define MIN_FLOAT_ROW(x, n, a) BD_RED_MIN2(a, bd_row_extf(x, n, INFINITY, 1))
#define MAX_DOUBLE_ROW(x, n, a) BD_RED_MAX2(a, bd_row_extd(x, n, -INFINITY, 0))
#define MIN_DOUBLE_ROW(x, n, a) BD_RED_MIN2(a, bd_row_extd(x, n, INFINITY, 1))
#define MAX_FLOAT 1
#define MIN_FLOAT 1
#define MAX_DOUBLE 1
#define MIN_DOUBLE 1

#define C_ADD(a, b) ((a) + (b))
#define C_MUL(a, b) ((a) * (b))
#define C_MAX(a, b) BD_RED_MAX2(a, b)
#define C_MIN(a, b) BD_RED_MIN2(a, b)

#define DEF_FOLD(NAME, T, A, L, IDENT, MAP, COMB, ROW)                                                \
    static void fold_##NAME(const void *vx, void *vacc, const double *shift, const red_geom *g)    \
    {                                                                                              \
        const T *x = vx;                                                                           \
        A *acc = vacc;                                                                             \
        int last = g->ng - 1;                                                                      \
        int64_t len = g->size[last], rows = 1, idx[BD_MAX_RANK] = {0}, io = 0, oo = 0;             \
        for (int d = 0; d < last; d++) rows *= g->size[d];                                         \
        if (len == 0) return;                                                                      \
        for (int64_t r = 0; r < rows; r++) {                                                       \
            const T *xr = x + io;                                                                  \
            if (g->inner_reduced) { /* 8 lanes: vectorizable, the same on any thread count */      \
                double sh = shift ? shift[oo] : 0.0;                                               \
                (void)sh;                                                                          \
                A a = acc[oo];                                                                     \
                if (ROW) { /* a vector-extension row (vrow.h) */                                   \
                    a = (A)ROW##_ROW(xr, len, a);                                                 \
                } else {                                                                           \
                    L l[8];                                                                        \
                    int64_t i = 0;                                                                 \
                    for (int q = 0; q < 8; q++) l[q] = (L)(IDENT);                                 \
                    for (; i + 8 <= len; i += 8)                                                   \
                        for (int q = 0; q < 8; q++) l[q] = COMB(l[q], (L)MAP(xr[i + q], sh));      \
                    for (; i < len; i++) a = COMB(a, (A)MAP(xr[i], sh));                           \
                    for (int q = 0; q < 8; q++) a = COMB(a, (A)l[q]);                              \
                }                                                                                  \
                acc[oo] = a;                                                                       \
            } else {                                                                               \
                A *ar = acc + oo;                                                                  \
                const double *sr = shift ? shift + oo : NULL;                                      \
                if (sr)                                                                            \
                    for (int64_t i = 0; i < len; i++) ar[i] = COMB(ar[i], (A)MAP(xr[i], sr[i]));   \
                else                                                                               \
                    for (int64_t i = 0; i < len; i++) ar[i] = COMB(ar[i], (A)MAP(xr[i], 0.0));     \
            }                                                                                      \
            for (int d = last - 1; d >= 0; d--) { /* odometer over the outer groups */             \
                io += g->istride[d];                                                               \
                oo += g->ostride[d];                                                               \
                if (++idx[d] < g->size[d]) break;                                                  \
                io -= g->istride[d] * g->size[d];                                                  \
                oo -= g->ostride[d] * g->size[d];                                                  \
                idx[d] = 0;                                                                        \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    static void init_##NAME(void *vacc, int64_t n)                                                 \
    {                                                                                              \
        A *a = vacc;                                                                               \
        for (int64_t i = 0; i < n; i++) a[i] = (A)(IDENT);                                         \
    }                                                                                              \
    static void comb_##NAME(void *vacc, const void *vp, int64_t n)                                 \
    {                                                                                              \
        A *a = vacc;                                                                               \
        const A *p = vp;                                                                           \
        for (int64_t i = 0; i < n; i++) a[0] = COMB(a[0], p[i]);                                   \
    }

/* Maps from an element v (and LogSumExp's shift sh) to what is folded. */
#define M_D(v, sh) ((double)(v))
#define M_ID(v, sh) (v)
#define M_ABS_D(v, sh) fabs((double)(v))
#define M_SQ_D(v, sh) ((double)(v) * (double)(v))
#define M_EXP_D(v, sh) exp((double)(v) - (sh))
#define M_EXP_F(v, sh) ((double)bd_vexpf((float)((double)(v) - (sh))))
#define M_U(v, sh) ((uint64_t)(int64_t)(v))
#define M_ABS_S(v, sh) ((v) < 0 ? (uint64_t)0 - (uint64_t)(int64_t)(v) : (uint64_t)(int64_t)(v))
#define M_SQ_U(v, sh) ((uint64_t)(int64_t)(v) * (uint64_t)(int64_t)(v))

/* Floats: every accumulator a double (max and min fold in T's lanes). */
#define FLOAT_FOLDS(T, N, MEXP)                                                                    \
    DEF_FOLD(SUM_##N, T, double, double, 0, M_D, C_ADD, NO)                                        \
    DEF_FOLD(PROD_##N, T, double, double, 1, M_D, C_MUL, NO)                                       \
    DEF_FOLD(MAX_##N, T, double, T, -INFINITY, M_ID, C_MAX, MAX_##N)                               \
    DEF_FOLD(MIN_##N, T, double, T, INFINITY, M_ID, C_MIN, MIN_##N)                                \
    DEF_FOLD(ABS_##N, T, double, double, 0, M_ABS_D, C_ADD, NO)                                    \
    DEF_FOLD(SQ_##N, T, double, double, 0, M_SQ_D, C_ADD, NO)                                      \
    DEF_FOLD(EXP_##N, T, double, double, 0, MEXP, C_ADD, NO)
/* Integers: sums and products wrap in uint64 (as in T: the low bits agree),
 * max and min in int64 or uint64, LogSumExp's exponentials in double. */
#define INT_FOLDS(T, N, MAXA, LO, HI, MABS)                                                        \
    DEF_FOLD(SUM_##N, T, uint64_t, uint64_t, 0, M_U, C_ADD, NO)                                    \
    DEF_FOLD(PROD_##N, T, uint64_t, uint64_t, 1, M_U, C_MUL, NO)                                   \
    DEF_FOLD(MAX_##N, T, MAXA, T, LO, M_ID, C_MAX, NO)                                             \
    DEF_FOLD(MIN_##N, T, MAXA, T, HI, M_ID, C_MIN, NO)                                             \
    DEF_FOLD(ABS_##N, T, uint64_t, uint64_t, 0, MABS, C_ADD, NO)                                   \
    DEF_FOLD(SQ_##N, T, uint64_t, uint64_t, 0, M_SQ_U, C_ADD, NO)                                  \
    DEF_FOLD(EXP_##N, T, double, double, 0, M_EXP_D, C_ADD, NO)

FLOAT_FOLDS(float, FLOAT, M_EXP_F)
FLOAT_FOLDS(double, DOUBLE, M_EXP_D)
INT_FOLDS(int8_t, INT8, int64_t, INT8_MIN, INT8_MAX, M_ABS_S)
INT_FOLDS(int16_t, INT16, int64_t, INT16_MIN, INT16_MAX, M_ABS_S)
INT_FOLDS(int32_t, INT32, int64_t, INT32_MIN, INT32_MAX, M_ABS_S)
INT_FOLDS(int64_t, INT64, int64_t, INT64_MIN, INT64_MAX, M_ABS_S)
INT_FOLDS(uint8_t, UINT8, uint64_t, 0, UINT8_MAX, M_U)
INT_FOLDS(uint16_t, UINT16, uint64_t, 0, UINT16_MAX, M_U)
INT_FOLDS(uint32_t, UINT32, uint64_t, 0, UINT32_MAX, M_U)
INT_FOLDS(uint64_t, UINT64, uint64_t, 0, UINT64_MAX, M_U)
INT_FOLDS(uint8_t, BOOL, uint64_t, 0, 1, M_U)

#define NDT 17
#define FOLD_ROW(N, P) {P##_SUM_##N, P##_PROD_##N, P##_MAX_##N, P##_MIN_##N, P##_ABS_##N, P##_SQ_##N, P##_EXP_##N}
#define ALL_ROWS(P)                                                                                \
    [BRAID_DTYPE_FLOAT] = FOLD_ROW(FLOAT, P), [BRAID_DTYPE_DOUBLE] = FOLD_ROW(DOUBLE, P),           \
    [BRAID_DTYPE_INT8] = FOLD_ROW(INT8, P), [BRAID_DTYPE_INT16] = FOLD_ROW(INT16, P),               \
    [BRAID_DTYPE_INT32] = FOLD_ROW(INT32, P), [BRAID_DTYPE_INT64] = FOLD_ROW(INT64, P),             \
    [BRAID_DTYPE_UINT8] = FOLD_ROW(UINT8, P), [BRAID_DTYPE_UINT16] = FOLD_ROW(UINT16, P),           \
    [BRAID_DTYPE_UINT32] = FOLD_ROW(UINT32, P), [BRAID_DTYPE_UINT64] = FOLD_ROW(UINT64, P),         \
    [BRAID_DTYPE_BOOL] = FOLD_ROW(BOOL, P)
static const fold_fn tab_fold[NDT][BD_RF_COUNT] = {ALL_ROWS(fold)};
static const init_fn tab_init[NDT][BD_RF_COUNT] = {ALL_ROWS(init)};
static const comb_fn tab_comb[NDT][BD_RF_COUNT] = {ALL_ROWS(comb)};

/* ---- accumulators to outputs ------------------------------------------------ */

typedef void (*finish_fn)(int kind, const void *acc, const double *shift, void *out, int64_t n,
                          int64_t count);

#define ST_PLAIN(T, v) ((T)(v))
#define ST_HALF(T, v) bd_float_to_half((float)(v))
#define ST_BF16(T, v) bd_float_to_bf16((float)(v))
#define DEF_FINISH_FLOAT(T, N, STORE)                                                              \
    static void finish_##N(int kind, const void *vacc, const double *shift, void *vo, int64_t n,    \
                           int64_t count)                                                          \
    {                                                                                              \
        const double *acc = vacc;                                                                  \
        T *o = vo;                                                                                 \
        for (int64_t i = 0; i < n; i++)                                                            \
            o[i] = STORE(T, bd_red_finish(kind, acc[i], shift ? shift[i] : 0.0, count));           \
    }
DEF_FINISH_FLOAT(float, FLOAT, ST_PLAIN)
DEF_FINISH_FLOAT(double, DOUBLE, ST_PLAIN)
DEF_FINISH_FLOAT(uint16_t, FLOAT16, ST_HALF)
DEF_FINISH_FLOAT(uint16_t, BFLOAT16, ST_BF16)

/* Integers: S is int64_t or uint64_t (the accumulator read with T's
 * signedness); a mean is the wrapped sum in T divided by the count (0 for no
 * values); L2, LogSum and LogSumExp are computed in double and clamped. */
#define DEF_FINISH_INT(T, N, S, LO, HI)                                                            \
    static void finish_##N(int kind, const void *vacc, const double *shift, void *vo, int64_t n,    \
                           int64_t count)                                                          \
    {                                                                                              \
        const S *acc = vacc;                                                                       \
        const double *dacc = vacc;                                                                 \
        T *o = vo;                                                                                 \
        for (int64_t i = 0; i < n; i++) {                                                          \
            double d;                                                                              \
            switch (kind) {                                                                        \
            case BD_RED_MEAN: {                                                                    \
                T s = (T)acc[i];                                                                   \
                o[i] = count ? (T)(s / count) : (T)0;                                              \
                continue;                                                                          \
            }                                                                                      \
            case BD_RED_L2: d = sqrt((double)acc[i]); break;                                       \
            case BD_RED_LOGSUM: d = log((double)acc[i]); break;                                    \
            case BD_RED_LOGSUMEXP: d = bd_red_finish(kind, dacc[i], shift[i], count); break;       \
            default: o[i] = (T)acc[i]; continue;                                                   \
            }                                                                                      \
            o[i] = (T)bd_red_clamp_int(d, (double)(LO), (double)(HI));                             \
        }                                                                                          \
    }
DEF_FINISH_INT(int8_t, INT8, int64_t, INT8_MIN, INT8_MAX)
DEF_FINISH_INT(int16_t, INT16, int64_t, INT16_MIN, INT16_MAX)
DEF_FINISH_INT(int32_t, INT32, int64_t, INT32_MIN, INT32_MAX)
DEF_FINISH_INT(int64_t, INT64, int64_t, INT64_MIN, INT64_MAX)
DEF_FINISH_INT(uint8_t, UINT8, uint64_t, 0, UINT8_MAX)
DEF_FINISH_INT(uint16_t, UINT16, uint64_t, 0, UINT16_MAX)
DEF_FINISH_INT(uint32_t, UINT32, uint64_t, 0, UINT32_MAX)
DEF_FINISH_INT(uint64_t, UINT64, uint64_t, 0, UINT64_MAX)
DEF_FINISH_INT(uint8_t, BOOL, uint64_t, 0, 1)

static const finish_fn tab_finish[NDT] = {
    [BRAID_DTYPE_FLOAT] = finish_FLOAT,   [BRAID_DTYPE_DOUBLE] = finish_DOUBLE,
    [BRAID_DTYPE_FLOAT16] = finish_FLOAT16, [BRAID_DTYPE_BFLOAT16] = finish_BFLOAT16,
    [BRAID_DTYPE_INT8] = finish_INT8,     [BRAID_DTYPE_INT16] = finish_INT16,
    [BRAID_DTYPE_INT32] = finish_INT32,   [BRAID_DTYPE_INT64] = finish_INT64,
    [BRAID_DTYPE_UINT8] = finish_UINT8,   [BRAID_DTYPE_UINT16] = finish_UINT16,
    [BRAID_DTYPE_UINT32] = finish_UINT32, [BRAID_DTYPE_UINT64] = finish_UINT64,
    [BRAID_DTYPE_BOOL] = finish_BOOL};

/* float16 and bfloat16 to a float32 copy (bd_malloc'ed; NULL when out of
 * memory), for the float kernels. */
static float *widen(const bd_tensor *x, int64_t n)
{
    float *f = bd_malloc((size_t)(n ? n : 1) * sizeof *f);
    const uint16_t *h = x->data;
    if (!f) return NULL;
    if (x->dtype == BRAID_DTYPE_FLOAT16)
        for (int64_t i = 0; i < n; i++) f[i] = bd_half_to_float_hd(h[i]);
    else
        for (int64_t i = 0; i < n; i++) f[i] = bd_bf16_to_float(h[i]);
    return f;
}

/* ---- ArgMax / ArgMin ---------------------------------------------------------- */

/* Over the middle dim of (outer, n, inner), for the lines [i0, i1) of inner. */
#define DEF_ARG(T, N)                                                                              \
    static void arg_##N(const void *vx, int64_t *o, int64_t outer, int64_t n, int64_t inner,       \
                        int64_t i0, int64_t i1, int is_min, int last)                              \
    {                                                                                              \
        for (int64_t b = 0; b < outer; b++) {                                                      \
            const T *x = (const T *)vx + b * n * inner;                                            \
            int64_t *ob = o + b * inner;                                                           \
            for (int64_t i = i0; i < i1; i++) ob[i] = 0;                                           \
            for (int64_t j = 1; j < n; j++)                                                        \
                for (int64_t i = i0; i < i1; i++) {                                                \
                    T v = x[j * inner + i], best = x[ob[i] * inner + i];                           \
                    if (BD_ARG_TAKES(v, best, is_min, last)) ob[i] = j;                            \
                }                                                                                  \
        }                                                                                          \
    }
typedef void (*arg_fn)(const void *, int64_t *, int64_t, int64_t, int64_t, int64_t, int64_t, int, int);
DEF_ARG(float, FLOAT)
DEF_ARG(double, DOUBLE)
DEF_ARG(int8_t, INT8)
DEF_ARG(int16_t, INT16)
DEF_ARG(int32_t, INT32)
DEF_ARG(int64_t, INT64)
DEF_ARG(uint8_t, UINT8)
DEF_ARG(uint16_t, UINT16)
DEF_ARG(uint32_t, UINT32)
DEF_ARG(uint64_t, UINT64)
static const arg_fn tab_arg[NDT] = {
    [BRAID_DTYPE_FLOAT] = arg_FLOAT, [BRAID_DTYPE_DOUBLE] = arg_DOUBLE, [BRAID_DTYPE_INT8] = arg_INT8,
    [BRAID_DTYPE_INT16] = arg_INT16, [BRAID_DTYPE_INT32] = arg_INT32,   [BRAID_DTYPE_INT64] = arg_INT64,
    [BRAID_DTYPE_UINT8] = arg_UINT8, [BRAID_DTYPE_UINT16] = arg_UINT16, [BRAID_DTYPE_UINT32] = arg_UINT32,
    [BRAID_DTYPE_UINT64] = arg_UINT64};

typedef struct arg_job {
    arg_fn fn;
    const char *x;
    int64_t *o;
    size_t esz;
    int64_t outer, n, inner;
    int is_min, last, by_outer;
} arg_job;

static void arg_range(void *vj, int64_t b, int64_t e)
{
    const arg_job *j = vj;
    if (j->by_outer)
        j->fn(j->x + (size_t)(b * j->n * j->inner) * j->esz, j->o + b * j->inner, e - b, j->n, j->inner,
              0, j->inner, j->is_min, j->last);
    else
        j->fn(j->x, j->o, j->outer, j->n, j->inner, b, e, j->is_min, j->last);
}

static braid_status run_arg(const bd_kernel *k, const bd_reduce_params *p)
{
    const bd_tensor *x = &k->in[0];
    int axis, dt = x->dtype;
    braid_status st = bd_axis(p->axes[0], x->rank, &axis, k->err);
    if (st) return st;
    int64_t outer, n = x->dims[axis], inner;
    bd_axis_split(x, axis, &outer, &inner);
    float *wide = NULL;
    const void *data = x->data;
    if (dt == BRAID_DTYPE_FLOAT16 || dt == BRAID_DTYPE_BFLOAT16) {
        if (!(wide = widen(x, bd_numel(x)))) return BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        data = wide;
        dt = BRAID_DTYPE_FLOAT;
    }
    if (dt < 0 || dt >= NDT || !tab_arg[dt]) {
        bd_free(wide);
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "%s has no CPU kernel for dtype %s",
                       k->node->op_type, bd_dtype_name(x->dtype));
    }
    if (n > 0 && outer * inner > 0) {
        arg_job j = {tab_arg[dt], data, k->out[0].data, bd_dtype_size(dt), outer, n, inner,
                     p->kind == BD_RED_ARGMIN, p->select_last_index, outer >= k->threads || inner == 1};
        int64_t per = j.by_outer ? n * inner : n * outer;
        bd_parallel_for(k->threads, j.by_outer ? outer : inner, BD_MAX((int64_t)1, (1 << 15) / per), arg_range, &j);
    }
    bd_free(wide);
    return BRAID_OK;
}

/* ---- the reductions ------------------------------------------------------------- */

typedef struct red_job {
    fold_fn fn;
    const char *x;
    char *acc;
    const double *shift;
    size_t esz;
    red_geom g;
    int split; /* the kept group cut into chunks; -1: blocks of the one reduced group */
} red_job;

enum { BLOCK = 1 << 16 }; /* a whole-tensor reduction's block of values */

static void red_range(void *vj, int64_t b, int64_t e)
{
    const red_job *j = vj;
    red_geom g = j->g;
    if (j->split < 0) { /* blocks [b, e) of the single reduced group, each into its own partial */
        for (int64_t blk = b; blk < e; blk++) {
            int64_t lo = blk * BLOCK, len = BD_MIN((int64_t)BLOCK, j->g.size[0] - lo);
            g.size[0] = len;
            j->fn(j->x + (size_t)lo * j->esz, j->acc + (size_t)blk * 8, j->shift, &g);
        }
        return;
    }
    int p = j->split;
    g.size[p] = e - b;
    j->fn(j->x + (size_t)(b * g.istride[p]) * j->esz, j->acc + (size_t)(b * g.ostride[p]) * 8,
          j->shift ? j->shift + b * g.ostride[p] : NULL, &g);
}

/* Folds x (element size esz) into acc with fold f of dtype dt, in parallel. */
static braid_status fold_all(const bd_kernel *k, int dt, int f, const void *x, size_t esz, void *acc,
                             const double *shift, const red_geom *g, int64_t n_in)
{
    if (n_in == 0) return BRAID_OK;
    red_job j = {tab_fold[dt][f], x, acc, shift, esz, *g, -1};
    if (g->ng == 1 && g->inner_reduced && n_in > 2 * (int64_t)BLOCK) {
        int64_t nb = BD_CEIL_DIV(n_in, (int64_t)BLOCK);
        void *parts = bd_malloc((size_t)nb * 8);
        if (!parts) return BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        tab_init[dt][f](parts, nb);
        j.acc = parts;
        bd_parallel_for(k->threads, nb, 1, red_range, &j);
        tab_comb[dt][f](acc, parts, nb);
        bd_free(parts);
        return BRAID_OK;
    }
    int best = -1;
    for (int i = 0; i < g->ng; i++) /* the largest kept group */
        if (g->ostride[i] && (best < 0 || g->size[i] > g->size[best])) best = i;
    if (best < 0 || k->threads <= 1 || n_in < (1 << 15)) {
        j.fn(x, acc, shift, g);
        return BRAID_OK;
    }
    j.split = best;
    int64_t per = n_in / g->size[best];
    bd_parallel_for(k->threads, g->size[best], BD_MAX((int64_t)1, (1 << 15) / BD_MAX(per, (int64_t)1)), red_range, &j);
    return BRAID_OK;
}

/* Groups of x's dims under mask: dims of 1 skipped (reducing them changes
 * nothing), neighbours of the same kind merged. */
static void make_geom(const bd_tensor *x, unsigned mask, red_geom *g)
{
    int red[BD_MAX_RANK] = {0};
    memset(g, 0, sizeof *g);
    for (int d = 0; d < x->rank; d++) {
        if (x->dims[d] == 1) continue;
        int r = (mask >> d) & 1;
        if (g->ng > 0 && red[g->ng - 1] == r) {
            g->size[g->ng - 1] *= x->dims[d];
        } else {
            red[g->ng] = r;
            g->size[g->ng++] = x->dims[d];
        }
    }
    if (g->ng == 0) { /* a single element */
        g->size[0] = 1;
        g->ng = 1;
    }
    int64_t is = 1, os = 1;
    for (int i = g->ng - 1; i >= 0; i--) {
        g->istride[i] = is;
        is *= g->size[i];
        g->ostride[i] = red[i] ? 0 : os;
        if (!red[i]) os *= g->size[i];
    }
    g->inner_reduced = red[g->ng - 1];
}

braid_status bd_cpu_reduce(const bd_kernel *k)
{
    braid_status st = BRAID_OK;
    const bd_node *nd = k->node;
    const bd_reduce_params *p = nd->params;
    const bd_tensor *x = &k->in[0];
    bd_tensor *out = &k->out[0];
    int dt = x->dtype, fdt = dt, identity;
    unsigned mask;
    float *wide = NULL;
    void *acc = NULL;
    double *shift = NULL;
    if (!p) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "reduce parameters were not parsed");
    if (p->kind == BD_RED_ARGMAX || p->kind == BD_RED_ARGMIN) return run_arg(k, p);
    BD_TRY(bd_reduce_axes(nd, k->in, k->n_in, &mask, &identity, k->err));
    int64_t n_in = bd_numel(x), n_out = bd_numel(out);
    if (identity) {
        if (n_in > 0) memcpy(out->data, x->data, (size_t)n_in * bd_dtype_size(dt));
        return BRAID_OK;
    }
    if (n_out == 0) return BRAID_OK;
    if (dt == BRAID_DTYPE_FLOAT16 || dt == BRAID_DTYPE_BFLOAT16) fdt = BRAID_DTYPE_FLOAT;
    if (dt < 0 || dt >= NDT || !tab_finish[dt] || !tab_fold[fdt][0]) {
        st = BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "%s has no CPU kernel for dtype %s", nd->op_type,
                     bd_dtype_name(dt));
        goto fail;
    }
    const void *data = x->data;
    if (fdt != dt && n_in > 0) {
        wide = widen(x, n_in);
        BD_CHECK_ALLOC(k->err, wide);
        data = wide;
    }
    red_geom g;
    make_geom(x, mask, &g);
    size_t esz = bd_dtype_size(fdt);
    acc = bd_malloc((size_t)n_out * 8);
    BD_CHECK_ALLOC(k->err, acc);
    int f = bd_red_fold_of(p->kind);
    if (f == BD_RF_EXP) { /* the maximum of each output first: the shift */
        shift = bd_malloc((size_t)n_out * sizeof *shift);
        BD_CHECK_ALLOC(k->err, shift);
        int is_int = fdt != BRAID_DTYPE_FLOAT && fdt != BRAID_DTYPE_DOUBLE;
        int is_unsigned = fdt == BRAID_DTYPE_UINT8 || fdt == BRAID_DTYPE_UINT16 || fdt == BRAID_DTYPE_UINT32 ||
                          fdt == BRAID_DTYPE_UINT64 || fdt == BRAID_DTYPE_BOOL;
        tab_init[fdt][BD_RF_MAX](acc, n_out);
        BD_TRY(fold_all(k, fdt, BD_RF_MAX, data, esz, acc, NULL, &g, n_in));
        for (int64_t i = 0; i < n_out; i++) {
            double m = !is_int ? ((double *)acc)[i]
                     : is_unsigned ? (double)((uint64_t *)acc)[i] : (double)((int64_t *)acc)[i];
            shift[i] = n_in ? bd_red_lse_shift(m) : 0.0;
        }
    }
    tab_init[fdt][f](acc, n_out);
    BD_TRY(fold_all(k, fdt, f, data, esz, acc, shift, &g, n_in));
    tab_finish[dt](p->kind, acc, shift, out->data, n_out, n_in / n_out);
fail:
    bd_free(wide);
    bd_free(acc);
    bd_free(shift);
    return st;
}
