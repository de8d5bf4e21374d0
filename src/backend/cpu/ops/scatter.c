/* scatter.c: CPU kernels of the scatter op family (Scatter, ScatterElements,
 * ScatterND, TensorScatter). The output starts as a copy of the data; every
 * index is checked before anything is written; then the updates go in the
 * reference's order wherever two of them can meet: ScatterElements splits its
 * lines along the axis over the threads, ScatterND the positions within its
 * slices, TensorScatter (whose writes never meet) everything. */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/parallel.h"

#include <string.h>

#include "ops/scatter.h"

#define MIN_CHUNK (1 << 14)

typedef struct copy_job {
    char *dst;
    const char *src;
} copy_job;

static void copy_range(void *vj, int64_t begin, int64_t end)
{
    const copy_job *j = vj;
    memcpy(j->dst + begin, j->src + begin, (size_t)(end - begin));
}

/* out = data, split over the threads when large. */
static void copy_data(const bd_kernel *k)
{
    size_t nb = (size_t)bd_numel(&k->out[0]) * bd_dtype_size(k->out[0].dtype);
    if (!nb || k->out[0].data == k->in[0].data) return;
    copy_job j = {k->out[0].data, k->in[0].data};
    bd_parallel_for(k->threads, (int64_t)nb, 1 << 20, copy_range, &j);
}

/* ---- Scatter, ScatterElements --------------------------------------------- */

typedef struct lines_job {
    bd_scatter_lines g;
    const void *idx;
    int is64, dt, red;
    const char *upd;
    char *out;
    size_t es;
} lines_job;

static void scatter_lines(void *vj, int64_t begin, int64_t end)
{
    const lines_job *j = vj;
    const bd_scatter_lines *g = &j->g;
    int64_t ia = g->ist[g->axis], da = g->dst[g->axis];
    for (int64_t l = begin; l < end; l++) {
        int64_t ub, ob;
        bd_scatter_line(g, l, &ub, &ob);
        for (int64_t t = 0; t < g->len; t++) {
            int64_t ui = ub + t * ia, oi = ob + bd_index_wrap(bd_index_at(j->idx, j->is64, ui), g->dim) * da;
            if (j->red == BD_SCATTER_NONE) memcpy(j->out + oi * (int64_t)j->es, j->upd + ui * (int64_t)j->es, j->es);
            else bd_scatter_apply(j->dt, j->red, j->out, oi, j->upd, ui);
        }
    }
}

static braid_status run_elements(const bd_kernel *k)
{
    const bd_scatter_params *p = k->node->params;
    const bd_tensor *x = &k->in[0], *ix = &k->in[1];
    int a, is64 = ix->dtype == BRAID_DTYPE_INT64;
    braid_status st = bd_axis(p->axis, x->rank, &a, k->err);
    if (st) return st;
    int64_t n = bd_numel(ix), dim = x->dims[a];
    for (int64_t i = 0; i < n; i++) {
        int64_t v = bd_index_at(ix->data, is64, i);
        if (bd_index_wrap(v, dim) < 0)
            return BD_FAIL(k->err, BRAID_ERR_INVALID_ARGUMENT,
                           "index %lld (element %lld of 'indices') is out of range for axis %d of size %lld",
                           (long long)v, (long long)i, a, (long long)dim);
    }
    copy_data(k);
    if (n == 0) return BRAID_OK;
    lines_job j = {.idx = ix->data, .is64 = is64, .dt = x->dtype, .red = p->red, .upd = k->in[2].data,
                   .out = k->out[0].data, .es = bd_dtype_size(x->dtype)};
    bd_scatter_lines_of(x, ix, a, &j.g);
    bd_parallel_for(k->threads, j.g.n_lines, BD_MAX(1, MIN_CHUNK / BD_MAX(1, j.g.len)), scatter_lines, &j);
    return BRAID_OK;
}

/* ---- ScatterND ------------------------------------------------------------ */

typedef struct nd_job {
    bd_nd_geom g;
    const void *idx;
    int is64, dt, red;
    const char *upd;
    char *out;
    size_t es;
} nd_job;

/* Positions [begin, end) of every slice, tuple after tuple. */
static void scatter_nd_part(void *vj, int64_t begin, int64_t end)
{
    const nd_job *j = vj;
    int64_t es = (int64_t)j->es;
    for (int64_t t = 0; t < j->g.n_tuples; t++) {
        int64_t off = bd_nd_offset(&j->g, j->idx, j->is64, t, NULL), u = t * j->g.slice;
        if (j->red == BD_SCATTER_NONE)
            memcpy(j->out + (off + begin) * es, j->upd + (u + begin) * es, (size_t)((end - begin) * es));
        else
            for (int64_t s = begin; s < end; s++) bd_scatter_apply(j->dt, j->red, j->out, off + s, j->upd, u + s);
    }
}

static braid_status run_nd(const bd_kernel *k)
{
    const bd_scatter_params *p = k->node->params;
    const bd_tensor *x = &k->in[0], *ix = &k->in[1];
    nd_job j = {.idx = ix->data, .is64 = ix->dtype == BRAID_DTYPE_INT64, .dt = x->dtype, .red = p->red,
                .upd = k->in[2].data, .out = k->out[0].data, .es = bd_dtype_size(x->dtype)};
    bd_nd_geom_of(x, ix, 0, &j.g);
    int bad = 0;
    for (int64_t t = 0; t < j.g.n_tuples; t++)
        if (bd_nd_offset(&j.g, ix->data, j.is64, t, &bad) < 0)
            return BD_FAIL(k->err, BRAID_ERR_INVALID_ARGUMENT,
                           "index %lld (tuple %lld of 'indices') is out of range for data axis %d of size %lld",
                           (long long)bd_index_at(ix->data, j.is64, t * j.g.k + bad), (long long)t, bad,
                           (long long)j.g.dims[bad]);
    copy_data(k);
    if (j.g.n_tuples == 0 || j.g.slice == 0) return BRAID_OK;
    int64_t per = j.g.n_tuples * (j.red == BD_SCATTER_NONE ? 1 : 8); /* work per slice position, roughly */
    bd_parallel_for(k->threads, j.g.slice, BD_MAX(64, MIN_CHUNK / BD_MAX(1, per)), scatter_nd_part, &j);
    return BRAID_OK;
}

/* ---- TensorScatter -------------------------------------------------------- */

typedef struct ts_job {
    bd_tscatter_geom g;
    const int64_t *wi;
    int circular;
    const char *upd;
    char *out;
    size_t blk; /* bytes of one step: inner elements */
} ts_job;

static void tscatter_rows(void *vj, int64_t begin, int64_t end)
{
    const ts_job *j = vj;
    for (int64_t r = begin; r < end; r++) {
        int64_t pre = r / j->g.seq, s = r - pre * j->g.seq, w = j->wi ? j->wi[pre / j->g.per_batch] : 0;
        int64_t pos = bd_tscatter_pos(w, s, j->g.max_seq, j->circular);
        memcpy(j->out + (pre * j->g.max_seq + pos) * (int64_t)j->blk, j->upd + r * (int64_t)j->blk, j->blk);
    }
}

static braid_status run_tensor_scatter(const bd_kernel *k)
{
    const bd_scatter_params *p = k->node->params;
    ts_job j = {.circular = p->circular, .upd = k->in[1].data, .out = k->out[0].data};
    bd_tscatter_geom_of(k->node, &k->in[0], &k->in[1], &j.g);
    j.blk = (size_t)j.g.inner * bd_dtype_size(k->in[0].dtype);
    if (k->n_in > 2 && k->in[2].dtype) j.wi = k->in[2].data;
    for (int64_t b = 0; j.wi && b < k->in[0].dims[0] && j.g.seq > 0; b++)
        if (bd_tscatter_pos(j.wi[b], 0, j.g.max_seq, j.circular) < 0 ||
            bd_tscatter_pos(j.wi[b], j.g.seq - 1, j.g.max_seq, j.circular) < 0)
            return BD_FAIL(k->err, BRAID_ERR_INVALID_ARGUMENT,
                           "write_indices[%lld] = %lld: %lld steps from there do not fit a cache of %lld (mode linear)",
                           (long long)b, (long long)j.wi[b], (long long)j.g.seq, (long long)j.g.max_seq);
    copy_data(k);
    int64_t rows = j.g.prefix * j.g.seq;
    if (rows == 0 || j.blk == 0) return BRAID_OK;
    bd_parallel_for(k->threads, rows, BD_MAX(1, (int64_t)(MIN_CHUNK / BD_MAX(1, j.blk))), tscatter_rows, &j);
    return BRAID_OK;
}

braid_status bd_cpu_scatter(const bd_kernel *k)
{
    switch (k->node->op) {
    case BD_OP_Scatter:
    case BD_OP_ScatterElements: return run_elements(k);
    case BD_OP_ScatterND: return run_nd(k);
    case BD_OP_TensorScatter: return run_tensor_scatter(k);
    default:
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the scatter family", k->node->op_type);
    }
}
