/* softmax.c: CPU kernels of the softmax op family. The input is read as
 * (outer, n, inner) with the normalized axis in the middle; each of the
 * outer * inner lines is normalized after subtracting its maximum. */
/* Vectorize the flat loops even in -O2 builds (GCC 12 at -O2 vectorizes only
 * loops whose trip count is known); selects and sqrt need no FP traps/errno. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math", "no-math-errno")
#endif

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/parallel.h"

#include <math.h>

#include "ops/softmax.h"
#include "vmath.h"

#define VEXP_f bd_vexpf
#define VEXP_ exp

/* Max and sum of a row in 8 lanes, so that the compiler vectorizes them
 * without reassociating (no -ffast-math). */
#define DEF_ROW_REDUCE(T, N)                                                                       \
    static T row_max_##N(const T *x, int64_t n)                                                    \
    {                                                                                              \
        T m[8], r = -INFINITY;                                                                     \
        int64_t j = 0;                                                                             \
        for (int l = 0; l < 8; l++) m[l] = -INFINITY;                                              \
        for (; j + 8 <= n; j += 8)                                                                 \
            for (int l = 0; l < 8; l++) m[l] = x[j + l] > m[l] ? x[j + l] : m[l];                  \
        for (; j < n; j++) r = x[j] > r ? x[j] : r;                                                \
        for (int l = 0; l < 8; l++) r = m[l] > r ? m[l] : r;                                       \
        return r;                                                                                  \
    }                                                                                              \
    static T row_sum_##N(const T *x, int64_t n)                                                    \
    {                                                                                              \
        T s[8] = {0}, r = 0;                                                                       \
        int64_t j = 0;                                                                             \
        for (; j + 8 <= n; j += 8)                                                                 \
            for (int l = 0; l < 8; l++) s[l] += x[j + l];                                          \
        for (; j < n; j++) r += x[j];                                                              \
        for (int l = 0; l < 8; l++) r += s[l];                                                     \
        return r;                                                                                  \
    }
DEF_ROW_REDUCE(float, FLOAT)
DEF_ROW_REDUCE(double, DOUBLE)

/* One (n, inner) block per outer index. inner == 1 runs row by row; else the
 * max and sum of every line are kept in tmp (2 * inner) so that memory is
 * walked contiguously. */
#define DEF_SOFTMAX(T, N, M)                                                                       \
    static void softmax_##N(const T *x, T *o, int64_t outer, int64_t n, int64_t inner, int log_,  \
                            T *tmp)                                                                \
    {                                                                                              \
        for (int64_t b = 0; b < outer; b++, x += n * inner, o += n * inner) {                      \
            if (inner == 1) {                                                                      \
                T mx = row_max_##N(x, n);                                                          \
                for (int64_t j = 0; j < n; j++) o[j] = VEXP_##M(x[j] - mx);                        \
                T sum = row_sum_##N(o, n);                                                         \
                if (log_) {                                                                        \
                    T l = mx + log##M(sum);                                                        \
                    for (int64_t j = 0; j < n; j++) o[j] = x[j] - l;                               \
                } else {                                                                           \
                    T r = (T)1 / sum;                                                              \
                    for (int64_t j = 0; j < n; j++) o[j] *= r;                                     \
                }                                                                                  \
                continue;                                                                          \
            }                                                                                      \
            T *mx = tmp, *sum = tmp + inner;                                                       \
            for (int64_t i = 0; i < inner; i++) { mx[i] = -INFINITY; sum[i] = 0; }                 \
            for (int64_t j = 0; j < n; j++)                                                        \
                for (int64_t i = 0; i < inner; i++) {                                              \
                    T v = x[j * inner + i];                                                        \
                    mx[i] = v > mx[i] ? v : mx[i];                                                 \
                }                                                                                  \
            for (int64_t j = 0; j < n; j++)                                                        \
                for (int64_t i = 0; i < inner; i++)                                                \
                    sum[i] += (o[j * inner + i] = VEXP_##M(x[j * inner + i] - mx[i]));             \
            if (log_) {                                                                            \
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

typedef struct sm_job {
    int dtype, log_;
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
    if (j->inner > 1 && !(tmp = bd_malloc(2 * (size_t)j->inner * esz))) {
        j->failed = 1;
        return;
    }
    if (j->dtype == BRAID_DTYPE_FLOAT)
        softmax_FLOAT((const float *)(j->x + off), (float *)(j->o + off), end - begin, j->n,
                      j->inner, j->log_, tmp);
    else
        softmax_DOUBLE((const double *)(j->x + off), (double *)(j->o + off), end - begin, j->n,
                       j->inner, j->log_, tmp);
    bd_free(tmp);
}

braid_status bd_cpu_softmax(const bd_kernel *k)
{
    const bd_tensor *x = &k->in[0];
    if (x->dtype != BRAID_DTYPE_FLOAT && x->dtype != BRAID_DTYPE_DOUBLE)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "%s has no CPU kernel for dtype %s",
                       k->node->op_type, bd_dtype_name(x->dtype));
    int64_t outer, n, inner;
    braid_status st = bd_softmax_geometry(k->node, x, &outer, &n, &inner, k->err);
    if (st) return st;
    if (outer * n * inner == 0) return BRAID_OK;
    sm_job j = {x->dtype, k->node->op == BD_OP_LogSoftmax, x->data, k->out[0].data, n, inner, 0};
    bd_parallel_for(k->threads, outer, BD_MAX((int64_t)1, (1 << 15) / (n * inner)), sm_range, &j);
    if (j.failed) return BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    return BRAID_OK;
}
