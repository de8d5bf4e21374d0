/* index.c: CPU kernels of the index op family (GatherElements, GatherND,
 * OneHot, Trilu, EyeLike, ReverseSequence). They move whole elements by
 * their size; indices are checked before anything is written (an index out of
 * range fails with INVALID_ARGUMENT naming it), then large tensors are split
 * over the threads so that each output element is written by one thread. */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/parallel.h"

#include <math.h>
#include <string.h>

#include "ops/index.h"

#define MIN_CHUNK (1 << 14)

/* Copies one element of es bytes (the fixed sizes as plain loads). */
static inline void copy1(char *dst, const char *src, size_t es)
{
    switch (es) {
    case 1: *dst = *src; break;
    case 2: memcpy(dst, src, 2); break;
    case 4: memcpy(dst, src, 4); break;
    case 8: memcpy(dst, src, 8); break;
    default: memcpy(dst, src, es); break;
    }
}

/* Fails naming the first index of idx (n values) outside [-dim, dim). */
static braid_status check_indices(const bd_kernel *k, const bd_tensor *idx, int64_t dim, int axis)
{
    int is64 = idx->dtype == BRAID_DTYPE_INT64;
    int64_t n = bd_numel(idx);
    for (int64_t i = 0; i < n; i++) {
        int64_t v = bd_index_at(idx->data, is64, i);
        if (bd_index_wrap(v, dim) < 0)
            return BD_FAIL(k->err, BRAID_ERR_INVALID_ARGUMENT,
                           "index %lld (element %lld of 'indices') is out of range for axis %d of size %lld",
                           (long long)v, (long long)i, axis, (long long)dim);
    }
    return BRAID_OK;
}

/* ---- GatherElements ------------------------------------------------------- */

typedef struct ge_job {
    bd_gather_elems g;
    const char *x;
    const void *idx;
    int is64;
    char *y;
    size_t es;
    int64_t row; /* elements per row: the last dim of the indices */
} ge_job;

/* A row of GatherElements for element type T and index type TI: the data
 * offsets step by one along the row unless the axis is the last dim. */
#define GE_ROW(T, TI)                                                                              \
    {                                                                                              \
        const TI *ix_ = (const TI *)j->idx + i0;                                                   \
        const T *x_ = (const T *)j->x + base;                                                      \
        T *y_ = (T *)j->y + i0;                                                                    \
        if (last)                                                                                  \
            for (int64_t c = 0; c < j->row; c++) y_[c] = x_[ix_[c] < 0 ? ix_[c] + dim : ix_[c]];    \
        else                                                                                       \
            for (int64_t c = 0; c < j->row; c++) y_[c] = x_[c + (ix_[c] < 0 ? ix_[c] + dim : ix_[c]) * da]; \
    }                                                                                              \
    break;
#define GE_TYPES(TI)                                                                               \
    switch (j->es) {                                                                               \
    case 1: GE_ROW(uint8_t, TI)                                                                    \
    case 2: GE_ROW(uint16_t, TI)                                                                   \
    case 4: GE_ROW(uint32_t, TI)                                                                   \
    default: GE_ROW(uint64_t, TI)                                                                  \
    }

/* Rows of the last dim (indices checked before) */
static void ge_rows(void *vj, int64_t begin, int64_t end)
{
    const ge_job *j = vj;
    const bd_gather_elems *g = &j->g;
    int last = g->axis == g->rank - 1;
    int64_t dim = g->dim, da = g->dst[g->axis];
    for (int64_t r = begin; r < end; r++) {
        int64_t i0 = r * j->row, base = bd_gather_elems_base(g, i0);
        if (j->is64) GE_TYPES(int64_t)
        else GE_TYPES(int32_t)
    }
}
#undef GE_TYPES
#undef GE_ROW

static braid_status run_gather_elements(const bd_kernel *k)
{
    const bd_index_params *p = k->node->params;
    const bd_tensor *x = &k->in[0], *ix = &k->in[1];
    int a;
    braid_status st = bd_axis(p->axis, x->rank, &a, k->err);
    if (st || (st = check_indices(k, ix, x->dims[a], a))) return st;
    int64_t n = bd_numel(ix);
    if (n == 0) return BRAID_OK;
    ge_job j = {.x = x->data, .idx = ix->data, .is64 = ix->dtype == BRAID_DTYPE_INT64, .y = k->out[0].data,
                .es = bd_dtype_size(x->dtype), .row = ix->dims[ix->rank - 1]};
    bd_gather_elems_of(x, ix, a, &j.g);
    bd_parallel_for(k->threads, n / j.row, BD_MAX(1, MIN_CHUNK / j.row), ge_rows, &j);
    return BRAID_OK;
}

/* ---- GatherND ------------------------------------------------------------- */

typedef struct gnd_job {
    bd_nd_geom g;
    const char *x;
    const void *idx;
    int is64;
    char *y;
    size_t es;
} gnd_job;

static void gnd_tuples(void *vj, int64_t begin, int64_t end)
{
    const gnd_job *j = vj;
    size_t bytes = (size_t)j->g.slice * j->es;
    for (int64_t t = begin; t < end; t++) {
        int64_t off = bd_nd_offset(&j->g, j->idx, j->is64, t, NULL);
        memcpy(j->y + t * (int64_t)bytes, j->x + off * (int64_t)j->es, bytes);
    }
}

/* Fails naming the first tuple with an index out of range. */
static braid_status check_tuples(const bd_kernel *k, const bd_nd_geom *g, const bd_tensor *ix, int b)
{
    int is64 = ix->dtype == BRAID_DTYPE_INT64, bad = 0;
    for (int64_t t = 0; t < g->n_tuples; t++)
        if (bd_nd_offset(g, ix->data, is64, t, &bad) < 0)
            return BD_FAIL(k->err, BRAID_ERR_INVALID_ARGUMENT,
                           "index %lld (tuple %lld of 'indices') is out of range for data axis %d of size %lld",
                           (long long)bd_index_at(ix->data, is64, t * g->k + bad), (long long)t, b + bad,
                           (long long)g->dims[bad]);
    return BRAID_OK;
}

static braid_status run_gather_nd(const bd_kernel *k)
{
    const bd_index_params *p = k->node->params;
    const bd_tensor *x = &k->in[0], *ix = &k->in[1];
    gnd_job j = {.x = x->data, .idx = ix->data, .is64 = ix->dtype == BRAID_DTYPE_INT64, .y = k->out[0].data,
                 .es = bd_dtype_size(x->dtype)};
    bd_nd_geom_of(x, ix, (int)p->batch_dims, &j.g);
    braid_status st = check_tuples(k, &j.g, ix, (int)p->batch_dims);
    if (st || bd_numel(&k->out[0]) == 0) return st;
    bd_parallel_for(k->threads, j.g.n_tuples, BD_MAX(1, MIN_CHUNK / BD_MAX(1, j.g.slice)), gnd_tuples, &j);
    return BRAID_OK;
}

/* ---- OneHot --------------------------------------------------------------- */

static braid_status run_one_hot(const bd_kernel *k)
{
    const bd_index_params *p = k->node->params;
    const bd_tensor *ix = &k->in[0], *vals = &k->in[2];
    bd_tensor *y = &k->out[0];
    int a;
    braid_status st = bd_axis(p->axis, ix->rank + 1, &a, k->err);
    if (st) return st;
    int64_t depth = y->dims[a], outer = 1, inner = 1;
    for (int d = 0; d < a; d++) outer *= y->dims[d];
    for (int d = a + 1; d < y->rank; d++) inner *= y->dims[d];
    size_t es = bd_dtype_size(y->dtype);
    const char *off = vals->data, *on = (const char *)vals->data + es;
    char *o = y->data;
    int64_t total = bd_numel(y);
    if (total == 0) return BRAID_OK;
    for (int64_t i = 0; i < total; i++) copy1(o + i * (int64_t)es, off, es);
    for (int64_t b = 0; b < outer; b++)
        for (int64_t i = 0; i < inner; i++) {
            /* Non-integer indices are cast to int64 (truncated) first. */
            double v = bd_get_f64(ix, b * inner + i);
            if (!(v > -9.0e18 && v < 9.0e18)) continue;
            int64_t c = bd_index_wrap((int64_t)v, depth);
            if (c >= 0) copy1(o + ((b * depth + c) * inner + i) * (int64_t)es, on, es);
        }
    return BRAID_OK;
}

/* ---- Trilu ---------------------------------------------------------------- */

typedef struct trilu_job {
    const char *x;
    char *y;
    size_t es;
    int64_t n, m, k;
    int upper;
} trilu_job;

static void trilu_rows(void *vj, int64_t begin, int64_t end)
{
    const trilu_job *j = vj;
    size_t row = (size_t)j->m * j->es;
    for (int64_t r = begin; r < end; r++) {
        int64_t lo, hi;
        bd_trilu_row(r % j->n, j->m, j->k, j->upper, &lo, &hi);
        char *d = j->y + r * (int64_t)row;
        const char *s = j->x + r * (int64_t)row;
        memset(d, 0, (size_t)lo * j->es);
        if (hi > lo) memcpy(d + lo * (int64_t)j->es, s + lo * (int64_t)j->es, (size_t)(hi - lo) * j->es);
        memset(d + hi * (int64_t)j->es, 0, (size_t)(j->m - hi) * j->es);
    }
}

static braid_status run_trilu(const bd_kernel *k)
{
    const bd_index_params *p = k->node->params;
    const bd_tensor *x = &k->in[0];
    trilu_job j = {.x = x->data, .y = k->out[0].data, .es = bd_dtype_size(x->dtype), .n = x->dims[x->rank - 2],
                   .m = x->dims[x->rank - 1], .upper = p->upper != 0};
    if (k->n_in > 1 && k->in[1].dtype && k->in[1].data) j.k = *(const int64_t *)k->in[1].data;
    int64_t rows = j.m ? bd_numel(x) / j.m : 0;
    if (rows == 0) return BRAID_OK;
    bd_parallel_for(k->threads, rows, BD_MAX(1, MIN_CHUNK / j.m), trilu_rows, &j);
    return BRAID_OK;
}

/* ---- EyeLike -------------------------------------------------------------- */

static braid_status run_eye_like(const bd_kernel *k)
{
    const bd_index_params *p = k->node->params;
    bd_tensor *y = &k->out[0];
    unsigned char one[8];
    size_t es = bd_one_bytes(y->dtype, one);
    int64_t n = y->dims[0], m = y->dims[1];
    if (!es) return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "EyeLike of dtype %s is not supported", bd_dtype_name(y->dtype));
    memset(y->data, 0, (size_t)(n * m) * es);
    if (p->k >= m || p->k <= -n) return BRAID_OK; /* the diagonal misses the matrix (k may be any int64) */
    for (int64_t i = BD_MAX(0, -p->k); i < n && i + p->k < m; i++)
        memcpy((char *)y->data + (i * m + i + p->k) * (int64_t)es, one, es);
    return BRAID_OK;
}

/* ---- ReverseSequence ------------------------------------------------------ */

static braid_status run_reverse_sequence(const bd_kernel *k)
{
    const bd_index_params *p = k->node->params;
    const bd_tensor *x = &k->in[0];
    const int64_t *len = k->in[1].data;
    int64_t tdim = x->dims[p->time_axis], bdim = x->dims[p->batch_axis], inner = 1;
    size_t es = bd_dtype_size(x->dtype);
    for (int d = 2; d < x->rank; d++) inner *= x->dims[d];
    for (int64_t b = 0; b < bdim; b++)
        if (len[b] < 0 || len[b] > tdim)
            return BD_FAIL(k->err, BRAID_ERR_INVALID_ARGUMENT,
                           "sequence_lens[%lld] = %lld is outside [0, %lld] (the time axis)", (long long)b,
                           (long long)len[b], (long long)tdim);
    size_t blk = (size_t)inner * es;
    /* (t, b) -> element block at (t * bdim + b) or (b * tdim + t) */
    for (int64_t b = 0; b < bdim; b++)
        for (int64_t t = 0; t < tdim; t++) {
            int64_t src = bd_reverse_time(t, len[b]);
            int64_t di = p->time_axis == 0 ? t * bdim + b : b * tdim + t;
            int64_t si = p->time_axis == 0 ? src * bdim + b : b * tdim + src;
            memcpy((char *)k->out[0].data + di * (int64_t)blk, (const char *)x->data + si * (int64_t)blk, blk);
        }
    return BRAID_OK;
}

braid_status bd_cpu_index(const bd_kernel *k)
{
    switch (k->node->op) {
    case BD_OP_GatherElements: return run_gather_elements(k);
    case BD_OP_GatherND: return run_gather_nd(k);
    case BD_OP_OneHot: return run_one_hot(k);
    case BD_OP_Trilu: return run_trilu(k);
    case BD_OP_EyeLike: return run_eye_like(k);
    case BD_OP_ReverseSequence: return run_reverse_sequence(k);
    default:
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the index family", k->node->op_type);
    }
}
