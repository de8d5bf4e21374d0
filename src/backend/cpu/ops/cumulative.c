/* cumulative.c: CPU kernels of the cumulative op family (CumSum, CumProd).
 * The input is read as (outer, n, inner) around the axis; each of the
 * outer * inner lines is scanned in order (or from its end with reverse),
 * the running value kept in double for floats (float16/bfloat16 rounded once
 * per output) and in 64-bit integers that wrap as T's do. Lines are split
 * over threads; each is scanned by one thread, so the bits never depend on
 * the thread count. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math", "no-math-errno")
#endif

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/parallel.h"

#include "ops/cumulative.h"
#include "util/dtype.h"

#define LD_PLAIN(v) (v)
#define LD_HALF(v) ((double)bd_half_to_float_hd(v))
#define LD_BF16(v) ((double)bd_bf16_to_float(v))
#define LD_INT(v) ((uint64_t)(int64_t)(v))
#define ST_PLAIN(T, a) ((T)(a))
#define ST_HALF(T, a) bd_float_to_half((float)(a))
#define ST_BF16(T, a) bd_float_to_bf16((float)(a))

/* Lines [i0, i1) of inner, for every outer block; acc holds i1 - i0 values. */
#define DEF_CUM(N, T, A, LD, ST)                                                                   \
    static void cum_##N(const void *vx, void *vo, int64_t outer, int64_t n, int64_t inner,         \
                        int64_t i0, int64_t i1, const bd_cum_params *p, void *vacc)                \
    {                                                                                              \
        A *acc = vacc;                                                                             \
        int64_t w = i1 - i0;                                                                       \
        for (int64_t b = 0; b < outer; b++) {                                                      \
            const T *x = (const T *)vx + b * n * inner + i0;                                       \
            T *o = (T *)vo + b * n * inner + i0;                                                   \
            for (int64_t i = 0; i < w; i++) acc[i] = p->prod ? (A)1 : (A)0;                        \
            for (int64_t s = 0; s < n; s++) {                                                      \
                int64_t j = bd_cum_pos(s, n, p->reverse) * inner;                                  \
                if (p->prod && p->exclusive)                                                       \
                    for (int64_t i = 0; i < w; i++) o[j + i] = ST(T, acc[i]), acc[i] *= (A)LD(x[j + i]); \
                else if (p->prod)                                                                  \
                    for (int64_t i = 0; i < w; i++) acc[i] *= (A)LD(x[j + i]), o[j + i] = ST(T, acc[i]); \
                else if (p->exclusive)                                                             \
                    for (int64_t i = 0; i < w; i++) o[j + i] = ST(T, acc[i]), acc[i] += (A)LD(x[j + i]); \
                else                                                                               \
                    for (int64_t i = 0; i < w; i++) acc[i] += (A)LD(x[j + i]), o[j + i] = ST(T, acc[i]); \
            }                                                                                      \
        }                                                                                          \
    }
DEF_CUM(FLOAT, float, double, LD_PLAIN, ST_PLAIN)
DEF_CUM(DOUBLE, double, double, LD_PLAIN, ST_PLAIN)
DEF_CUM(FLOAT16, uint16_t, double, LD_HALF, ST_HALF)
DEF_CUM(BFLOAT16, uint16_t, double, LD_BF16, ST_BF16)
DEF_CUM(INT32, int32_t, uint64_t, LD_INT, ST_PLAIN)
DEF_CUM(INT64, int64_t, uint64_t, LD_INT, ST_PLAIN)
DEF_CUM(UINT32, uint32_t, uint64_t, LD_INT, ST_PLAIN)
DEF_CUM(UINT64, uint64_t, uint64_t, LD_INT, ST_PLAIN)

typedef void (*cum_fn)(const void *, void *, int64_t, int64_t, int64_t, int64_t, int64_t, const bd_cum_params *,
                       void *);
static const cum_fn tab_cum[17] = {
    [BRAID_DTYPE_FLOAT] = cum_FLOAT, [BRAID_DTYPE_DOUBLE] = cum_DOUBLE,   [BRAID_DTYPE_FLOAT16] = cum_FLOAT16,
    [BRAID_DTYPE_BFLOAT16] = cum_BFLOAT16, [BRAID_DTYPE_INT32] = cum_INT32, [BRAID_DTYPE_INT64] = cum_INT64,
    [BRAID_DTYPE_UINT32] = cum_UINT32, [BRAID_DTYPE_UINT64] = cum_UINT64};

typedef struct cum_job {
    cum_fn fn;
    const char *x;
    char *o;
    size_t esz;
    int64_t outer, n, inner;
    int by_outer;
    const bd_cum_params *p;
    _Atomic int failed;
} cum_job;

static void cum_range(void *vj, int64_t b, int64_t e)
{
    cum_job *j = vj;
    int64_t w = j->by_outer ? j->inner : e - b;
    void *acc = bd_malloc((size_t)w * 8);
    if (!acc) {
        j->failed = 1;
        return;
    }
    if (j->by_outer) {
        size_t off = (size_t)(b * j->n * j->inner) * j->esz;
        j->fn(j->x + off, j->o + off, e - b, j->n, j->inner, 0, j->inner, j->p, acc);
    } else {
        j->fn(j->x, j->o, j->outer, j->n, j->inner, b, e, j->p, acc);
    }
    bd_free(acc);
}

braid_status bd_cpu_cumulative(const bd_kernel *k)
{
    const bd_cum_params *p = k->node->params;
    const bd_tensor *x = &k->in[0];
    int axis, dt = x->dtype;
    braid_status st;
    if (!p) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "cumulative parameters were not parsed");
    if ((st = bd_cum_axis(&k->in[1], x->rank, &axis, k->err))) return st;
    if (dt < 0 || dt >= 17 || !tab_cum[dt])
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "%s has no CPU kernel for dtype %s", k->node->op_type,
                       bd_dtype_name(dt));
    int64_t outer, inner, n = x->dims[axis];
    bd_axis_split(x, axis, &outer, &inner);
    if (outer * n * inner == 0) return BRAID_OK;
    cum_job j = {tab_cum[dt], x->data, k->out[0].data, bd_dtype_size(dt), outer, n, inner,
                 outer >= k->threads || inner < 64, p, 0};
    int64_t per = j.by_outer ? n * inner : n * outer;
    bd_parallel_for(k->threads, j.by_outer ? outer : inner, BD_MAX((int64_t)1, (1 << 15) / per), cum_range, &j);
    if (j.failed) return BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    return BRAID_OK;
}
