/* reduce.c: CPU kernels of the reduce op family. The input's dims are merged
 * into alternating kept and reduced groups; the innermost group is either
 * folded into one output element or accumulated into a row of outputs. */
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

/* The input seen as groups of merged dims, outermost first. */
typedef struct red_geom {
    int ng;
    int64_t size[BD_MAX_RANK];
    int64_t ostride[BD_MAX_RANK]; /* 0 for a reduced group */
    int inner_reduced;            /* the innermost group is reduced */
    int64_t n_in, n_out;
} red_geom;

typedef void (*red_fn)(const void *x, void *o, const red_geom *g);

/* Combining two values; max and min keep the first NaN-free answer. */
#define SUM_C(a, b) ((a) + (b))
#define PROD_C(a, b) ((a) * (b))
#define MAX_C(a, b) ((b) > (a) ? (b) : (a))
#define MIN_C(a, b) ((b) < (a) ? (b) : (a))

/* X(C type, dtype suffix, accumulator type, lowest, highest, op) */
#define RED_TYPES(X, op)                                                                           \
    X(float, FLOAT, double, -INFINITY, INFINITY, op)                                               \
    X(double, DOUBLE, double, -INFINITY, INFINITY, op)                                             \
    X(int32_t, INT32, int64_t, INT32_MIN, INT32_MAX, op)                                           \
    X(int64_t, INT64, int64_t, INT64_MIN, INT64_MAX, op)                                           \
    X(int8_t, INT8, int64_t, INT8_MIN, INT8_MAX, op)                                               \
    X(uint8_t, UINT8, int64_t, 0, UINT8_MAX, op)                                                   \
    X(uint8_t, BOOL, int64_t, 0, 1, op)
#define SUM_INIT(LO, HI) 0
#define PROD_INIT(LO, HI) 1
#define MAX_INIT(LO, HI) LO
#define MIN_INIT(LO, HI) HI

#define DEF_RED(T, N, ACC, LO, HI, op)                                                             \
    static void red_##op##_##N(const void *vx, void *vo, const red_geom *g)                        \
    {                                                                                              \
        const T *x = vx;                                                                           \
        T *o = vo;                                                                                 \
        for (int64_t i = 0; i < g->n_out; i++) o[i] = (T)(op##_INIT(LO, HI));                      \
        int last = g->ng - 1;                                                                      \
        int64_t len = g->size[last], idx[BD_MAX_RANK] = {0}, oo = 0;                               \
        if (len == 0) return;                                                                      \
        for (int64_t r = 0, rows = g->n_in / len; r < rows; r++, x += len) {                       \
            if (g->inner_reduced) { /* 8 lanes: vectorizable, and the same on any thread count */ \
                ACC a = (ACC)o[oo], l[8];                                                          \
                int64_t i = 0;                                                                     \
                for (int q = 0; q < 8; q++) l[q] = (ACC)(op##_INIT(LO, HI));                       \
                for (; i + 8 <= len; i += 8)                                                       \
                    for (int q = 0; q < 8; q++) l[q] = op##_C(l[q], (ACC)x[i + q]);                \
                for (; i < len; i++) a = op##_C(a, (ACC)x[i]);                                     \
                for (int q = 0; q < 8; q++) a = op##_C(a, l[q]);                                   \
                o[oo] = (T)a;                                                                      \
            } else {                                                                               \
                T *oi = o + oo;                                                                    \
                for (int64_t i = 0; i < len; i++) oi[i] = (T)op##_C(oi[i], x[i]);                  \
            }                                                                                      \
            for (int d = last - 1; d >= 0; d--) {                                                  \
                oo += g->ostride[d];                                                               \
                if (++idx[d] < g->size[d]) break;                                                  \
                oo -= g->ostride[d] * g->size[d];                                                  \
                idx[d] = 0;                                                                        \
            }                                                                                      \
        }                                                                                          \
    }
#define RED_ENT(T, N, ACC, LO, HI, op) [BRAID_DTYPE_##N] = red_##op##_##N,
#define NDT 17
RED_TYPES(DEF_RED, SUM)
RED_TYPES(DEF_RED, PROD)
RED_TYPES(DEF_RED, MAX)
RED_TYPES(DEF_RED, MIN)
static const red_fn tab_SUM[NDT] = {RED_TYPES(RED_ENT, SUM)};
static const red_fn tab_PROD[NDT] = {RED_TYPES(RED_ENT, PROD)};
static const red_fn tab_MAX[NDT] = {RED_TYPES(RED_ENT, MAX)};
static const red_fn tab_MIN[NDT] = {RED_TYPES(RED_ENT, MIN)};

/* Mean = sum / count; integer means truncate and divide by the count itself
 * (a count cast to an 8-bit T could wrap to 0 and trap). A count of 0 gives
 * NaN for floats and 0 for integers; for floats, sum / count converts the
 * count to T. */
#define DEF_SCALE(T, N, ACC, LO, HI, op)                                                           \
    static void scale_##N(void *vo, int64_t n, int64_t count)                                      \
    {                                                                                              \
        T *o = vo;                                                                                 \
        if (count == 0 && (T)0.5 == 0) { memset(o, 0, (size_t)n * sizeof *o); return; }            \
        for (int64_t i = 0; i < n; i++) o[i] = (T)(o[i] / count);                                  \
    }
RED_TYPES(DEF_SCALE, _)
#define SCALE_ENT(T, N, ACC, LO, HI, op) [BRAID_DTYPE_##N] = scale_##N,
static void (*const tab_SCALE[NDT])(void *, int64_t, int64_t) = {RED_TYPES(SCALE_ENT, _)};

/* ArgMax over the middle dim of (outer, n, inner); ties go to the first index,
 * or to the last with select_last_index. */
#define DEF_ARGMAX(T, N, ACC, LO, HI, op)                                                          \
    static void argmax_##N(const void *vx, int64_t *o, int64_t outer, int64_t n, int64_t inner,    \
                           int last)                                                               \
    {                                                                                              \
        for (int64_t b = 0; b < outer; b++, o += inner) {                                          \
            const T *x = (const T *)vx + b * n * inner;                                            \
            for (int64_t i = 0; i < inner; i++) o[i] = 0;                                          \
            for (int64_t j = 1; j < n; j++)                                                        \
                for (int64_t i = 0; i < inner; i++) {                                              \
                    T v = x[j * inner + i], best = x[o[i] * inner + i];                            \
                    if (last ? v >= best : v > best) o[i] = j;                                     \
                }                                                                                  \
        }                                                                                          \
    }
RED_TYPES(DEF_ARGMAX, _)
#define ARGMAX_ENT(T, N, ACC, LO, HI, op) [BRAID_DTYPE_##N] = argmax_##N,
static void (*const tab_ARGMAX[NDT])(const void *, int64_t *, int64_t, int64_t, int64_t, int) = {
    RED_TYPES(ARGMAX_ENT, _)};

static braid_status run_argmax(const bd_kernel *k, const bd_reduce_params *p)
{
    const bd_tensor *x = &k->in[0];
    int axis, dt = x->dtype;
    braid_status st = bd_axis(p->axes[0], x->rank, &axis, k->err);
    if (st) return st;
    int64_t outer, n = x->dims[axis], inner;
    bd_axis_split(x, axis, &outer, &inner);
    if (dt < 0 || dt >= NDT || !tab_ARGMAX[dt])
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "ArgMax has no CPU kernel for dtype %s",
                       bd_dtype_name(dt));
    if (n > 0) tab_ARGMAX[dt](x->data, k->out[0].data, outer, n, inner, p->select_last_index);
    return BRAID_OK;
}

typedef struct red_job {
    red_fn fn;
    const char *x;
    char *o;
    size_t esz;
    red_geom g; /* groups (kept, reduced): output i is the reduction of input row i */
} red_job;

static void red_range(void *vj, int64_t begin, int64_t end)
{
    const red_job *j = vj;
    red_geom g = j->g;
    int64_t len = g.size[g.ng - 1];
    g.size[0] = end - begin;
    g.n_out = end - begin;
    g.n_in = (end - begin) * len;
    j->fn(j->x + (size_t)(begin * len) * j->esz, j->o + (size_t)begin * j->esz, &g);
}

braid_status bd_cpu_reduce(const bd_kernel *k)
{
    const bd_node *nd = k->node;
    const bd_reduce_params *p = nd->params;
    const bd_tensor *x = &k->in[0];
    bd_tensor *out = &k->out[0];
    int dt = x->dtype, identity;
    unsigned mask;
    braid_status st;
    if (!p) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "reduce parameters were not parsed");
    if (nd->op == BD_OP_ArgMax) return run_argmax(k, p);
    if ((st = bd_reduce_axes(nd, k->in, k->n_in, &mask, &identity, k->err))) return st;
    red_geom g = {0};
    g.n_in = bd_numel(x);
    g.n_out = bd_numel(out);
    if (identity) {
        if (g.n_in > 0) memcpy(out->data, x->data, (size_t)g.n_in * bd_dtype_size(dt));
        return BRAID_OK;
    }
    /* Groups: skip dims of 1 (reducing them changes nothing), merge neighbours
     * of the same kind. */
    int red[BD_MAX_RANK] = {0};
    for (int d = 0; d < x->rank; d++) {
        if (x->dims[d] == 1) continue;
        int r = (mask >> d) & 1;
        if (g.ng > 0 && red[g.ng - 1] == r) {
            g.size[g.ng - 1] *= x->dims[d];
        } else {
            red[g.ng] = r;
            g.size[g.ng++] = x->dims[d];
        }
    }
    if (g.ng == 0) { /* a single element */
        red[0] = 0;
        g.size[0] = 1;
        g.ng = 1;
    }
    int64_t s = 1;
    for (int i = g.ng - 1; i >= 0; i--) {
        g.ostride[i] = red[i] ? 0 : s;
        if (!red[i]) s *= g.size[i];
    }
    g.inner_reduced = red[g.ng - 1];
    const red_fn *tab = NULL;
    switch (nd->op) {
    case BD_OP_ReduceSum: case BD_OP_ReduceMean: tab = tab_SUM; break;
    case BD_OP_ReduceProd: tab = tab_PROD; break;
    case BD_OP_ReduceMax: tab = tab_MAX; break;
    case BD_OP_ReduceMin: tab = tab_MIN; break;
    default: break;
    }
    if (!tab || dt < 0 || dt >= NDT || !tab[dt])
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "%s has no CPU kernel for dtype %s",
                       nd->op_type, bd_dtype_name(dt));
    if (g.ng == 2 && g.inner_reduced && g.size[1] > 0) { /* rows to outputs, one to one */
        red_job j = {tab[dt], x->data, out->data, bd_dtype_size(dt), g};
        bd_parallel_for(k->threads, g.size[0], BD_MAX((int64_t)1, (1 << 15) / g.size[1]),
                        red_range, &j);
    } else {
        tab[dt](x->data, out->data, &g);
    }
    if (nd->op == BD_OP_ReduceMean && g.n_out > 0)
        tab_SCALE[dt](out->data, g.n_out, g.n_in / g.n_out);
    return BRAID_OK;
}
