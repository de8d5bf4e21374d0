/* softmax.c: CPU kernels of the softmax op family (Softmax, LogSoftmax,
 * Hardmax). The input is read as (outer, n, inner) with the normalized
 * elements along n (ops/softmax.c: one axis from opset 13, the trailing block
 * from `axis` before); each of the outer * inner lines is normalized after
 * subtracting its maximum. Rows (inner == 1) take three passes: the max (8
 * lanes, vrow.h), exp and its sum in one, then the scale. float16 and
 * bfloat16 Softmax is widened to float32 and rounded to its type after each
 * of the reference's steps (x - max, exp, the sum, the quotient), as numpy
 * computes them in onnx's reference: rounding once instead differs from it
 * by an ulp in about one value in ten, which an expanded Attention then
 * carries past the tolerance. LogSoftmax and Hardmax of these types are
 * computed in float32 and rounded once (the reference's log of a rounded
 * probability would turn small ones into -inf). Outer blocks are split
 * over threads; every line is done by one thread in a fixed order. */
/* Vectorize the flat loops even in -O2 builds (GCC 12 at -O2 vectorizes only
 * loops whose trip count is known); selects and sqrt need no FP traps/errno. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math", "no-math-errno")
#endif

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/parallel.h"

#include <math.h>

#include "ops/softmax.h"
#include "util/dtype.h"
#include "elementwise.h"
#include "vmath.h"
#include "vrow.h"

enum { SM_SOFTMAX, SM_LOG, SM_HARD };

#define VEXP_f bd_vexpf
#define VEXP_ exp
#define ROWMAX_f(x, n) bd_row_extf(x, n, -INFINITY, 0)
#define ROWMAX_(x, n) bd_row_extd(x, n, -INFINITY, 0)

/* One row: exp into o (the output is scratch for LogSoftmax), then its sum in
 * 8 lanes: two flat loops keep the exp's registers free of the sum. Built
 * for x86-64-v3 too (the exp vectorizes 8 wide there; one build computes
 * every row with the same statements). */
#define DEF_ROW(T, M, ATTR)                                                                        \
    static ATTR void row_##M(const T *x, T *o, int64_t n, int mode)                                \
    {                                                                                              \
        T mx = ROWMAX_##M(x, n), s[8] = {0}, sum = 0;                                              \
        int64_t j = 0;                                                                             \
        for (int64_t t = 0; t < n; t++) o[t] = VEXP_##M(x[t] - mx);                                \
        for (; j + 8 <= n; j += 8)                                                                 \
            for (int l = 0; l < 8; l++) s[l] += o[j + l];                                          \
        for (; j < n; j++) sum += o[j];                                                            \
        for (int l = 0; l < 8; l++) sum += s[l];                                                   \
        if (mode == SM_LOG) {                                                                      \
            T lse = mx + log##M(sum);                                                              \
            for (j = 0; j < n; j++) o[j] = x[j] - lse;                                             \
        } else {                                                                                   \
            T r = (T)1 / sum;                                                                      \
            for (j = 0; j < n; j++) o[j] *= r;                                                     \
        }                                                                                          \
    }
DEF_ROW(float, f, BD_CLONES)
DEF_ROW(double, , )
#define ROW_f row_f
#define ROW_ row_

/* One (n, inner) block per outer index. Rows (inner == 1) run row by row;
 * otherwise the max and sum of every line are kept in tmp (2 * inner) so that
 * memory is walked contiguously. Hardmax writes 1 at each line's first
 * maximum (a NaN counts as the maximum, as numpy's argmax) and 0 elsewhere. */
#define DEF_SOFTMAX(T, N, M)                                                                       \
    static void softmax_##N(const T *x, T *o, int64_t outer, int64_t n, int64_t inner, int mode,   \
                            T *tmp)                                                                \
    {                                                                                              \
        for (int64_t b = 0; b < outer; b++, x += n * inner, o += n * inner) {                      \
            if (mode == SM_HARD) {                                                                 \
                for (int64_t i = 0; i < inner; i++) {                                              \
                    int64_t best = 0;                                                              \
                    for (int64_t j = 1; j < n; j++)                                                \
                        if (BD_ARG_TAKES(x[j * inner + i], x[best * inner + i], 0, 0)) best = j;   \
                    for (int64_t j = 0; j < n; j++) o[j * inner + i] = (T)(j == best);             \
                }                                                                                  \
                continue;                                                                          \
            }                                                                                      \
            if (inner == 1) {                                                                      \
                ROW_##M(x, o, n, mode);                                                            \
                continue;                                                                          \
            }                                                                                      \
            T *mx = tmp, *sum = tmp + inner;                                                       \
            for (int64_t i = 0; i < inner; i++) {                                                  \
                mx[i] = -INFINITY;                                                                 \
                sum[i] = 0;                                                                        \
            }                                                                                      \
            for (int64_t j = 0; j < n; j++)                                                        \
                for (int64_t i = 0; i < inner; i++) mx[i] = BD_RED_MAX2(mx[i], x[j * inner + i]); \
            for (int64_t j = 0; j < n; j++)                                                        \
                for (int64_t i = 0; i < inner; i++)                                                \
                    sum[i] += (o[j * inner + i] = VEXP_##M(x[j * inner + i] - mx[i]));             \
            if (mode == SM_LOG) {                                                                  \
                for (int64_t i = 0; i < inner; i++) sum[i] = mx[i] + log##M(sum[i]);               \
                for (int64_t j = 0; j < n; j++)                                                    \
                    for (int64_t i = 0; i < inner; i++) o[j * inner + i] = x[j * inner + i] - sum[i]; \
            } else {                                                                               \
                for (int64_t i = 0; i < inner; i++) sum[i] = (T)1 / sum[i];                        \
                for (int64_t j = 0; j < n; j++)                                                    \
                    for (int64_t i = 0; i < inner; i++) o[j * inner + i] *= sum[i];                \
            }                                                                                      \
        }                                                                                          \
    }
DEF_SOFTMAX(float, FLOAT, f)
DEF_SOFTMAX(double, DOUBLE, )

/* v rounded to the 16-bit float type dt and widened back. */
static inline float rnd16(int dt, float v)
{
    return dt == BRAID_DTYPE_FLOAT16 ? bd_half_to_float_hd(bd_float_to_half(v)) : bd_bf16_to_float(bd_float_to_bf16(v));
}

/* Softmax of widened float16/bfloat16 lines in the reference's steps, each
 * rounded to dt: t = x - max, e = exp(t), s = sum(e) (accumulated in float32,
 * as numpy sums 16-bit floats), y = e / s. */
static void softmax_steps16(int dt, const float *x, float *o, int64_t outer, int64_t n, int64_t inner)
{
    for (int64_t b = 0; b < outer; b++, x += n * inner, o += n * inner)
        for (int64_t i = 0; i < inner; i++) {
            float mx = -INFINITY, sum = 0;
            for (int64_t j = 0; j < n; j++) mx = BD_RED_MAX2(mx, x[j * inner + i]);
            for (int64_t j = 0; j < n; j++) sum += o[j * inner + i] = rnd16(dt, expf(rnd16(dt, x[j * inner + i] - mx)));
            sum = rnd16(dt, sum);
            for (int64_t j = 0; j < n; j++) o[j * inner + i] = rnd16(dt, o[j * inner + i] / sum);
        }
}

typedef struct sm_job {
    int dtype, mode; /* dtype: FLOAT or DOUBLE (the 16-bit types were widened) */
    int dt16;        /* the 16-bit type that was widened, or 0 */
    const char *x;
    char *o;
    int64_t n, inner;
    _Atomic int failed; /* a chunk could not allocate its scratch */
} sm_job;

/* Outer blocks [begin, end), with scratch of 2 * inner values when inner > 1. */
static void sm_range(void *vj, int64_t begin, int64_t end)
{
    sm_job *j = vj;
    size_t esz = bd_dtype_size(j->dtype), off = (size_t)(begin * j->n * j->inner) * esz;
    void *tmp = NULL;
    if (j->inner > 1 && j->mode != SM_HARD && !(tmp = bd_malloc(2 * (size_t)j->inner * esz))) {
        j->failed = 1;
        return;
    }
    if (j->dt16 && j->mode == SM_SOFTMAX)
        softmax_steps16(j->dt16, (const float *)(j->x + off), (float *)(j->o + off), end - begin, j->n, j->inner);
    else if (j->dtype == BRAID_DTYPE_FLOAT)
        softmax_FLOAT((const float *)(j->x + off), (float *)(j->o + off), end - begin, j->n, j->inner, j->mode,
                      tmp);
    else
        softmax_DOUBLE((const double *)(j->x + off), (double *)(j->o + off), end - begin, j->n, j->inner,
                       j->mode, tmp);
    bd_free(tmp);
}

braid_status bd_cpu_softmax(const bd_kernel *k)
{
    braid_status st = BRAID_OK;
    const bd_tensor *x = &k->in[0];
    int dt = x->dtype, half = dt == BRAID_DTYPE_FLOAT16 || dt == BRAID_DTYPE_BFLOAT16;
    float *wide = NULL;
    if (dt != BRAID_DTYPE_FLOAT && dt != BRAID_DTYPE_DOUBLE && !half)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "%s has no CPU kernel for dtype %s",
                       k->node->op_type, bd_dtype_name(dt));
    int64_t outer, n, inner;
    if ((st = bd_softmax_geometry(k->node, x, &outer, &n, &inner, k->err))) return st;
    int64_t total = outer * n * inner;
    if (total == 0) return BRAID_OK;
    int mode = k->node->op == BD_OP_LogSoftmax ? SM_LOG : k->node->op == BD_OP_Hardmax ? SM_HARD : SM_SOFTMAX;
    sm_job j = {half ? BRAID_DTYPE_FLOAT : dt, mode, half ? dt : 0, x->data, k->out[0].data, n, inner, 0};
    if (half) { /* x widened into the first half of wide, the result in the second */
        const uint16_t *h = x->data;
        wide = bd_malloc(2 * (size_t)total * sizeof *wide);
        BD_CHECK_ALLOC(k->err, wide);
        for (int64_t i = 0; i < total; i++)
            wide[i] = dt == BRAID_DTYPE_FLOAT16 ? bd_half_to_float_hd(h[i]) : bd_bf16_to_float(h[i]);
        j.x = (const char *)wide;
        j.o = (char *)(wide + total);
    }
    bd_parallel_for(k->threads, outer, BD_MAX((int64_t)1, (1 << 15) / (n * inner)), sm_range, &j);
    if (j.failed) {
        st = BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        goto fail;
    }
    if (half) {
        uint16_t *h = k->out[0].data;
        const float *r = wide + total;
        for (int64_t i = 0; i < total; i++)
            h[i] = dt == BRAID_DTYPE_FLOAT16 ? bd_float_to_half(r[i]) : bd_float_to_bf16(r[i]);
    }
fail:
    bd_free(wide);
    return st;
}
